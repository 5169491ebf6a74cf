"""Logging the library way (DESIGN §7): no handler, plain stdlib records, structlog only when the app configured it."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any, Final, NoReturn

import pytest
import structlog
from structlog.testing import capture_logs

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    NotificationContext,
    PreToolCallDecideContext,
    RequestPatch,
)
from hookreg._log import HookFailure, collecting, debug_enabled, log, render

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
SECRET = "sk-live-0123456789"
# The record attributes every LogRecord has: what a JSON formatter leaves out when it adds the `extra` fields.
STANDARD: Final = {*vars(logging.makeLogRecord({})), "message", "asctime"}


def call(**args: object) -> PreToolCallDecideContext:
    return PreToolCallDecideContext(tool_name="t", args=args, call_id="c")


def run(code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter, as a script using hookreg would run."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """The records the "hookreg" logger emits at DEBUG and above, caught by a handler the test adds."""
    caught: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record)

    logger = logging.getLogger("hookreg")
    handler, level = Catch(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield caught
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_hookreg_adds_no_handler() -> None:
    """The "hookreg" logger has no handler of its own, not even a NullHandler: the application decides."""
    assert logging.getLogger("hookreg").handlers == []


def test_a_failure_prints_one_line_to_stderr_when_nothing_is_configured() -> None:
    """With no logging configured, a failing gate and a failing observer each print one plain line on stderr.

    A deny (INFO) prints nothing, nothing goes to stdout, and structlog is never imported.
    """
    code = (
        "import sys\n"
        "from hookreg import *\n"
        "r = HookRegistry()\n"
        "r.register('pre_tool_call_decide', lambda c: HookResult.deny('no'), name='deny')\n"
        "r.register('pre_tool_call_decide', lambda c: True, name='bad_gate', priority=1)\n"
        "r.register('post_turn', lambda c: 1 / 0, name='broken')\n"
        "r.decide(HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(tool_name='t', args={}, call_id='c'))\n"
        "r.notify(HookPoint.POST_TURN, PostTurnContext(turn=1, response_text=''))\n"
        "print('structlog' in sys.modules)\n"
    )
    done = run(code)
    assert done.stdout == "False\n"
    assert done.stderr.splitlines() == [
        'hook_failed point=pre_tool_call_decide hook=bad_gate exc_type=HookReturnError error="returned bool; '
        'expected HookResult"',
        'hook_failed point=post_turn hook=broken exc_type=ZeroDivisionError error="raised ZeroDivisionError"',
    ]


def test_logging_is_imported_only_when_something_is_to_be_emitted() -> None:
    """``import hookreg``, registering and a deny import neither logging nor threading; a failure imports logging."""
    code = (
        "import sys\n"
        "from hookreg import *\n"
        "r = HookRegistry()\n"
        "r.register('pre_tool_call_decide', lambda c: HookResult.deny('no'))\n"
        "r.register('post_turn', lambda c: 1 / 0, name='broken')\n"
        "r.decide(HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(tool_name='t', args={}, call_id='c'))\n"
        "print(sorted({'logging', 'threading'} & set(sys.modules)))\n"
        "r.notify(HookPoint.POST_TURN, PostTurnContext(turn=1, response_text=''))\n"
        "print(sorted({'logging', 'threading'} & set(sys.modules)))\n"
    )
    done = run(code)
    assert done.stdout.splitlines() == ["[]", "['logging', 'threading']"]
    assert done.stderr.startswith("hook_failed point=post_turn hook=broken")


def test_below_warning_nothing_is_imported_while_logging_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the application imports logging, DEBUG is off and an INFO event is dropped without importing it."""
    monkeypatch.delitem(sys.modules, "logging")
    assert not debug_enabled()
    log("info", "hook_denied", point="pre_tool_call_decide")
    assert "logging" not in sys.modules


def test_logging_configured_after_the_import_gets_every_event() -> None:
    """An application that imports hookreg first and configures DEBUG logging after gets the DEBUG events."""
    code = (
        "from hookreg import *\n"
        "import logging, sys\n"
        "logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format='%(name)s %(levelname)s %(message)s')\n"
        "r = HookRegistry()\n"
        "r.register('post_turn', lambda c: None, name='audit')\n"
    )
    assert run(code).stdout.startswith("hookreg DEBUG hook_registered point=post_turn hook=audit")


def test_ordinary_logging_configuration_silences_it() -> None:
    """Raising the "hookreg" logger's level, the ordinary way, silences the last-resort line."""
    code = (
        "import logging\n"
        "logging.getLogger('hookreg').setLevel(logging.CRITICAL)\n"
        "from hookreg import *\n"
        "r = HookRegistry()\n"
        "r.register('post_turn', lambda c: 1 / 0)\n"
        "r.notify(HookPoint.POST_TURN, PostTurnContext(turn=1, response_text=''))\n"
    )
    assert run(code).stderr == ""


def test_with_stdlib_logging_a_json_formatter_gets_the_fields() -> None:
    """Under logging.basicConfig and a JSON formatter, a record is plain text with the event's fields in `extra`.

    No colour codes, no timestamp of hookreg's own, and structlog stays unimported, DEBUG events included.
    """
    code = (
        "import json, logging, sys\n"
        f"STANDARD = {sorted(STANDARD)!r}\n"
        "class Json(logging.Formatter):\n"
        "    def format(self, record):\n"
        "        extra = {k: v for k, v in vars(record).items() if k not in STANDARD}\n"
        "        return json.dumps({'level': record.levelname, 'logger': record.name,\n"
        "                           'message': record.getMessage(), **extra})\n"
        "logging.basicConfig(level=logging.DEBUG, stream=sys.stdout)\n"
        "logging.getLogger().handlers[0].setFormatter(Json())\n"
        "from hookreg import *\n"
        "r = HookRegistry()\n"
        "r.register('pre_tool_call_decide', lambda c: HookResult.deny('no \"rm -rf\"'), name='gate')\n"
        "r.decide(HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(tool_name='t', args={}, call_id='c'))\n"
        "print(json.dumps({'structlog': 'structlog' in sys.modules}))\n"
    )
    lines = [json.loads(line) for line in run(code).stdout.splitlines()]
    assert lines == [
        {
            "level": "DEBUG",
            "logger": "hookreg",
            "message": "hook_registered point=pre_tool_call_decide hook=gate",
            "event": "hook_registered",
            "point": "pre_tool_call_decide",
            "hook": "gate",
        },
        {
            "level": "INFO",
            "logger": "hookreg",
            "message": 'hook_denied point=pre_tool_call_decide hook=gate reason="no \\"rm -rf\\""',
            "event": "hook_denied",
            "point": "pre_tool_call_decide",
            "hook": "gate",
            "reason": 'no "rm -rf"',
        },
        {"structlog": False},
    ]


def test_a_record_is_plain_text_with_fields_in_extra(records: list[logging.LogRecord]) -> None:
    """In process, with structlog unconfigured, the record's message is `event key=value` and its fields attributes."""
    registry = HookRegistry()
    registry.register(GATE, _broken, name="broken")
    registry.decide(GATE, call())
    (registered, failed) = records
    assert registered.getMessage() == "hook_registered point=pre_tool_call_decide hook=broken"
    assert failed.levelno == logging.ERROR  # a failing decider is an error
    assert failed.getMessage() == (
        'hook_failed point=pre_tool_call_decide hook=broken exc_type=ZeroDivisionError error="raised ZeroDivisionError"'
    )
    assert {key: getattr(failed, key) for key in ("event", "point", "hook", "exc_type", "error")} == {
        "event": "hook_failed",
        "point": "pre_tool_call_decide",
        "hook": "broken",
        "exc_type": "ZeroDivisionError",
        "error": "raised ZeroDivisionError",
    }
    assert failed.args == ()
    assert failed.module == "_rules"  # where hookreg logged the failure, not the logging helper
    assert "\x1b" not in failed.getMessage()


def test_a_disabled_level_renders_nothing(records: list[logging.LogRecord]) -> None:
    """Below the logger's level no record is made at all."""
    logging.getLogger("hookreg").setLevel(logging.WARNING)
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.deny("no"))
    registry.decide(GATE, call())
    assert records == []


def test_values_are_quoted_only_when_they_need_it() -> None:
    """A value with a space, a quote, a backslash, an "=", a newline, or nothing at all is quoted and escaped."""
    fields = {"a": "plain", "b": "two words", "c": 'say "hi"', "d": "a=b", "e": "", "f": "x\ny\\z", "g": 2.5}
    assert render("e", fields) == ('e a=plain b="two words" c="say \\"hi\\"" d="a=b" e="" f="x\\ny\\\\z" g=2.5')
    assert render("e", {"fields": ["top_k", "seed"]}) == "e fields=\"['top_k', 'seed']\""
    assert render("alone", {}) == "alone"


def test_a_configured_structlog_receives_the_events_bound_to_the_hookreg_logger() -> None:
    """Once the application configures structlog, events go through its processors, bound to stdlib "hookreg"."""
    seen: list[tuple[str, str, dict[str, Any]]] = []

    def keep(logger: logging.Logger, method: str, event_dict: MutableMapping[str, Any]) -> str:
        seen.append((logger.name, method, dict(event_dict)))
        raise structlog.DropEvent

    structlog.configure(processors=[keep])
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.deny("no"), name="gate")
    registry.decide(GATE, call())
    assert seen == [
        ("hookreg", "info", {"event": "hook_denied", "point": "pre_tool_call_decide", "hook": "gate", "reason": "no"})
    ]


def test_capture_logs_sees_the_events() -> None:
    """structlog.testing.capture_logs() configures structlog, so it captures hookreg's events."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.deny("blocked"), name="guard")
    with capture_logs() as logs:
        registry.decide(GATE, call())
    assert logs == [
        {
            "event": "hook_denied",
            "point": "pre_tool_call_decide",
            "hook": "guard",
            "reason": "blocked",
            "log_level": "info",
        }
    ]


def test_events_carry_names_never_values() -> None:
    """Failures log the exception type and hookreg's description only; no argument, result or message value leaks."""
    registry = HookRegistry()

    def leaky(ctx: PreToolCallDecideContext) -> HookResult:
        raise ValueError(f"bad token {ctx.args['token']}")

    registry.register(GATE, leaky, name="leaky")
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: SECRET, name="wrong", on_error="ignore")
    with capture_logs() as logs:
        registry.resolve_tool_call(call(token=SECRET))
    assert SECRET not in repr(logs)
    assert [(e["event"], e["hook"], e["exc_type"], e["error"]) for e in logs] == [
        ("hook_failed", "wrong", "HookReturnError", "returned str; expected Mapping[str, object] | None"),
        ("hook_failed", "leaky", "ValueError", "raised ValueError"),
    ]


def test_a_hook_raising_another_dispatchs_return_error_is_described_as_raising() -> None:
    """A HookReturnError that a hook lets out of an inner dispatch is "raised", not the outer hook's wrong return."""
    inner, outer = HookRegistry(), HookRegistry()
    inner.register(HookPoint.NOTIFICATION, lambda ctx: "oops", name="inner_bad", on_error="raise")

    def relay(ctx: PreToolCallDecideContext) -> HookResult:
        inner.notify(HookPoint.NOTIFICATION, NotificationContext(message="m"))
        return HookResult.allow()

    outer.register(GATE, relay, name="relay")
    with capture_logs() as logs:
        outer.decide(GATE, call())
    assert [(e["hook"], e["error"]) for e in logs] == [
        ("inner_bad", "returned str; expected None"),
        ("relay", "raised HookReturnError"),
    ]


def _missing_key(ctx: PreToolCallDecideContext) -> HookResult:
    """A gate that fails with KeyError on a missing argument."""
    return HookResult.deny(str(ctx.args["absent"]))


def test_at_debug_a_failure_record_carries_the_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """With the "hookreg" logger at DEBUG, the stdlib hook_failed record holds the exception and its traceback."""
    caplog.set_level(logging.DEBUG, logger="hookreg")
    registry = HookRegistry()
    registry.register(GATE, _missing_key, name="lookup")
    registry.decide(GATE, call())
    (failed,) = [record for record in caplog.records if getattr(record, "event", None) == "hook_failed"]
    assert failed.exc_info is not None
    assert failed.exc_info[0] is KeyError
    assert 'ctx.args["absent"]' in caplog.text  # the failing line, shown by the handler's formatter
    assert failed.getMessage() == (
        'hook_failed point=pre_tool_call_decide hook=lookup exc_type=KeyError error="raised KeyError"'
    )


def test_at_info_a_failure_record_stays_names_only(caplog: pytest.LogCaptureFixture) -> None:
    """Above DEBUG the hook_failed record carries no exception: no traceback, so no values."""
    caplog.set_level(logging.INFO, logger="hookreg")
    registry = HookRegistry()
    registry.register(GATE, _missing_key, name="lookup")
    registry.decide(GATE, call())
    (failed,) = caplog.records
    assert failed.exc_info is None
    assert "Traceback" not in caplog.text


def test_at_debug_capture_logs_sees_the_exception_as_exc_info(caplog: pytest.LogCaptureFixture) -> None:
    """Through structlog, hook_failed at DEBUG carries the exception under `exc_info`; at INFO it does not."""
    registry = HookRegistry()
    registry.register(GATE, _missing_key, name="lookup")
    caplog.set_level(logging.DEBUG, logger="hookreg")
    with capture_logs() as logs:
        registry.decide(GATE, call())
    (failed,) = [entry for entry in logs if entry["event"] == "hook_failed"]
    assert isinstance(failed["exc_info"], KeyError)
    assert failed["exc_info"].__traceback__ is not None
    caplog.set_level(logging.INFO, logger="hookreg")
    with capture_logs() as quiet:
        registry.decide(GATE, call())
    assert quiet == [
        {
            "event": "hook_failed",
            "point": "pre_tool_call_decide",
            "hook": "lookup",
            "exc_type": "KeyError",
            "error": "raised KeyError",
            "log_level": "error",
        }
    ]


def test_patch_conflict_names_the_field_only() -> None:
    """Two patches setting different scalar values log patch_conflict with the field name."""
    with capture_logs() as logs:
        merged = RequestPatch(preamble=SECRET).merge(RequestPatch(preamble="other"))
    assert merged.preamble == "other"
    assert logs == [{"event": "patch_conflict", "field": "preamble", "log_level": "warning"}]
    with capture_logs() as same:
        RequestPatch(temperature=0.5).merge(RequestPatch(temperature=0.5))
    assert same == []


def _broken(ctx: object) -> NoReturn:
    """A hook that fails with ZeroDivisionError."""
    raise ZeroDivisionError


def test_collecting_gathers_each_failure_logged_inside_it_and_nothing_after() -> None:
    """hook_failed and hook_timed_out become HookFailures in the innermost collecting; other events do not."""
    outer: list[HookFailure] = []
    inner: list[HookFailure] = []
    with collecting(outer):
        log("warning", "hook_failed", point="post_tool_call", hook="a", exc_type="KeyError", error="raised KeyError")
        with collecting(inner):
            log("warning", "hook_timed_out", point="notification", hook="b", timeout=2.5)
        log("info", "hook_denied", point="pre_tool_call_decide", hook="c", reason="no")
    log("error", "hook_failed", point="stop", hook="d", exc_type="OSError", error="raised OSError")
    assert outer == [HookFailure("post_tool_call", "a", "raised KeyError")]
    assert inner == [HookFailure("notification", "b", "timed out after 2.5 s")]
