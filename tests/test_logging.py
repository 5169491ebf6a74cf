"""Logging: one lazily imported structlog logger over stdlib "hookreg", names not payloads (DESIGN §7)."""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Final

import pytest
from structlog.testing import capture_logs

from hookreg import HookPoint, HookRegistry, HookResult, PreToolCallDecideContext, RequestPatch

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
SECRET = "sk-live-0123456789"


def test_stdlib_logger_has_a_null_handler() -> None:
    """The "hookreg" stdlib logger carries a NullHandler, so nothing prints unconfigured."""
    handlers = logging.getLogger("hookreg").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


def test_silent_when_the_app_configured_nothing() -> None:
    """A denial and a failing hook print nothing when the application configured no logging."""
    code = (
        "from hookreg import *\n"
        "r = HookRegistry()\n"
        "r.register('pre_tool_call_decide', lambda c: HookResult.deny('no'))\n"
        "r.register('post_turn', lambda c: 1 / 0)\n"
        "r.decide(HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(tool_name='t', args={}, call_id='c'))\n"
        "r.notify(HookPoint.POST_TURN, PostTurnContext(turn=1, response_text=''))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert (result.stdout, result.stderr) == ("", "")


def test_events_reach_stdlib_handlers_when_configured(caplog: pytest.LogCaptureFixture) -> None:
    """Once the application configures logging, hookreg's events reach its stdlib handlers."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.deny("blocked"), name="guard")
    with caplog.at_level(logging.INFO, logger="hookreg"):
        registry.decide(GATE, PreToolCallDecideContext(tool_name="t", args={}, call_id="c"))
    assert [r.name for r in caplog.records] == ["hookreg"]
    assert "hook_denied" in caplog.records[0].getMessage()


def test_events_carry_names_never_values() -> None:
    """Failures log the exception type only; no argument, result or message value leaks."""
    registry = HookRegistry()

    def leaky(ctx: PreToolCallDecideContext) -> HookResult:
        raise ValueError(f"bad token {ctx.args['token']}")

    registry.register(GATE, leaky, name="leaky")
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: SECRET, name="wrong", on_error="ignore")
    ctx = PreToolCallDecideContext(tool_name="t", args={"token": SECRET}, call_id="c")
    with capture_logs() as logs:
        registry.resolve_tool_call(ctx)
    assert [e["event"] for e in logs] == ["hook_failed", "hook_failed"]
    assert SECRET not in repr(logs)
    assert {e["exc_type"] for e in logs} == {"ValueError", "HookReturnError"}


def test_patch_conflict_names_the_field_only() -> None:
    """Two patches setting different scalar values log patch_conflict with the field name."""
    with capture_logs() as logs:
        merged = RequestPatch(preamble=SECRET).merge(RequestPatch(preamble="other"))
    assert merged.preamble == "other"
    assert logs == [{"event": "patch_conflict", "field": "preamble", "log_level": "warning"}]
    with capture_logs() as same:
        RequestPatch(temperature=0.5).merge(RequestPatch(temperature=0.5))
    assert same == []


def test_structlog_is_imported_on_the_first_event() -> None:
    """structlog is not imported by `import hookreg`, only when the first event is logged."""
    code = (
        "import sys\n"
        "from hookreg import *\n"
        "r = HookRegistry()\n"
        "r.register('pre_tool_call_decide', lambda c: HookResult.allow())\n"
        "ctx = PreToolCallDecideContext(tool_name='t', args={}, call_id='c')\n"
        "r.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx)\n"
        "print('structlog' in sys.modules)\n"
        "r.register('pre_tool_call_decide', lambda c: HookResult.deny('x'))\n"
        "r.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx)\n"
        "print('structlog' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
