"""hookreg.testing: contexts with defaults, one hook or one point in isolation, recording, assertions, the plugin."""

from __future__ import annotations

import asyncio
import dataclasses
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

import pytest

from hookreg import (
    AsyncHookError,
    HookPoint,
    HookRegistry,
    HookResult,
    HookReturnError,
    HookSignatureError,
    HookTypeError,
    HookValueError,
    NotificationContext,
    PostToolCallContext,
    PreToolCallDecideContext,
    RunContext,
)
from hookreg.testing import (
    RecordingObserver,
    acall_hook,
    acall_point,
    assert_allowed,
    assert_asks,
    assert_denied,
    assert_hooks_called,
    call_hook,
    call_point,
    make_context,
)

ROOT = Path(__file__).resolve().parent.parent
GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE


def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm" in str(ctx.args.get("command", "")):
        return HookResult.deny("no rm")
    return HookResult.allow()


@pytest.mark.parametrize("point", list(HookPoint))
def test_make_context_builds_every_point_with_defaults(point: HookPoint) -> None:
    """Every point's context builds with no fields, and each dispatch style accepts it."""
    ctx = make_context(point)
    assert type(ctx) is point.context
    assert isinstance(ctx.run, RunContext)  # type: ignore[attr-defined]  # every context has run
    registry = HookRegistry()
    call_point(registry, point, ctx=ctx)


def test_make_context_uses_the_fields_given() -> None:
    """Given fields are used as they are; the rest take defaults; a shared run is kept."""
    run = RunContext(turn=3)
    ctx = make_context(GATE, tool_name="bash", args={"command": "ls"}, run=run)
    assert (ctx.tool_name, dict(ctx.args), ctx.call_id, ctx.run) == ("bash", {"command": "ls"}, "call-1", run)
    assert make_context(HookPoint.INVALID_TOOL_CALL).error == "unknown tool"
    assert isinstance(make_context(HookPoint.ON_TOOL_ERROR).error, RuntimeError)
    assert make_context("notification", message="hi").message == "hi"  # type: ignore[attr-defined]  # str point


def test_make_context_refuses_unknown_fields_and_points() -> None:
    """A field the context lacks and an unknown point raise errors naming them."""
    with pytest.raises(HookTypeError, match=r"PreToolCallDecideContext .* no field\(s\) \['tol_name'\]") as raised:
        make_context(GATE, tol_name="bash")
    assert raised.value.point is GATE
    with pytest.raises(HookValueError, match="'pre_tool' is not a hook point"):
        make_context("pre_tool")


def test_call_hook_returns_what_the_hook_returned() -> None:
    """call_hook calls one hook with a made context and returns its raw, checked return."""
    assert call_hook(GATE, no_rm, tool_name="bash", args={"command": "rm -rf /"}).reason == "no rm"
    assert call_hook(GATE, no_rm) is HookResult.allow()

    def keep(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
        return None

    assert call_hook(HookPoint.TRANSFORM_TOOL_INPUT, keep) is None
    ctx = make_context(GATE, tool_name="ls")
    assert call_hook(GATE, lambda c: HookResult.deny(c.tool_name), ctx=ctx).reason == "ls"


def test_call_hook_lets_errors_through_and_checks_returns() -> None:
    """What the hook raises propagates unchanged; a wrong return, async hooks and mixed arguments raise."""

    def broken(ctx: PreToolCallDecideContext) -> HookResult:
        raise KeyError("command")

    with pytest.raises(KeyError, match="command"):
        call_hook(GATE, broken)
    returned = r"hook 'bool' returned at pre_tool_call_decide: it returned bool"
    with pytest.raises(HookReturnError, match=returned) as raised:
        call_hook(GATE, bool)
    assert raised.value.returned_type is bool

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    with pytest.raises(
        AsyncHookError, match=r"hook '.*gate' at pre_tool_call_decide .* Call `await acall_hook"
    ) as refused:
        call_hook(GATE, gate)  # type: ignore[unused-coroutine]  # refused at run time
    assert (refused.value.point, refused.value.callback) == (GATE, gate)
    with pytest.raises(HookTypeError, match="both ctx= and fields"):
        call_hook(GATE, no_rm, ctx=make_context(GATE), tool_name="x")
    with pytest.raises(HookTypeError, match="takes a PreToolCallDecideContext"):
        call_hook(GATE, no_rm, ctx=NotificationContext(message="m"))  # type: ignore[arg-type]
    with pytest.raises(HookValueError, match="'pre_tool' is not a hook point"):
        call_hook("pre_tool", no_rm)


def test_call_hook_sees_the_hook_as_registering_it_would() -> None:
    """A callable that could not be registered at the point is refused, with registration's own error."""

    def two(ctx: PreToolCallDecideContext, extra: int) -> HookResult:
        return HookResult.allow()

    with pytest.raises(HookSignatureError, match="exactly one positional argument") as raised:
        call_hook(GATE, two)  # type: ignore[arg-type]  # refused at run time too
    assert raised.value.callback is two


def wrong_gate(ctx: PreToolCallDecideContext) -> HookResult:
    return "deny"  # type: ignore[return-value]  # the wrong return under test


def coroutine_gate(ctx: PreToolCallDecideContext) -> HookResult:
    async def later() -> HookResult:
        return HookResult.allow()

    return later()  # type: ignore[return-value]  # the wrong return under test


@pytest.mark.parametrize("fn", [wrong_gate, coroutine_gate, bool])
def test_call_hook_refuses_a_wrong_return_as_dispatch_does(
    fn: Callable[[PreToolCallDecideContext], HookResult],
) -> None:
    """call_hook's HookReturnError for a wrong return says what dispatch's says for the same hook."""
    registry = HookRegistry()
    registry.register(GATE, fn, on_error="raise")
    with pytest.raises(HookReturnError) as dispatched:
        registry.decide(GATE, make_context(GATE))
    with pytest.raises(HookReturnError) as called:
        call_hook(GATE, fn)
    assert str(called.value) == str(dispatched.value)
    assert (called.value.point, called.value.callback, called.value.returned_type) == (
        dispatched.value.point,
        dispatched.value.callback,
        dispatched.value.returned_type,
    )


def test_acall_hook_awaits_the_hook() -> None:
    """acall_hook awaits an async hook and checks its return."""

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.ask(ctx.tool_name)

    async def wrong(ctx: PreToolCallDecideContext) -> HookResult:
        return None  # type: ignore[return-value]

    assert asyncio.run(acall_hook(GATE, gate, tool_name="deploy")).reason == "deploy"
    with pytest.raises(HookReturnError, match="returned NoneType"):
        asyncio.run(acall_hook(GATE, wrong))


def test_call_point_dispatches_one_point_and_returns_its_record() -> None:
    """call_point runs the point's hooks by its style and returns the traced record."""
    registry = HookRegistry()
    registry.register(GATE, no_rm, name="no-rm")
    registry.register(GATE, lambda ctx: HookResult.allow(), name="after")
    record = call_point(registry, GATE, tool_name="bash", args={"command": "rm x"})
    assert_denied(record, "no rm", by="no-rm")
    assert_hooks_called(record, "no-rm")
    assert_allowed(call_point(registry, "pre_tool_call_decide"))
    transform = call_point(registry, HookPoint.TRANSFORM_TOOL_INPUT, args={"a": 1})
    assert transform.result == {"a": 1}


def test_call_point_leaves_the_context_check_to_dispatch() -> None:
    """A context of another class is refused by the dispatch itself, with its own error."""
    registry = HookRegistry()
    registry.register(GATE, no_rm)
    with pytest.raises(HookTypeError, match="Cannot dispatch pre_tool_call_decide with NotificationContext"):
        call_point(registry, GATE, ctx=NotificationContext(message="m"))


def test_the_trace_records_are_hookreg_s() -> None:
    """hookreg.testing's Trace, DispatchRecord and HookCall are the ones hookreg exports and traces build."""
    import hookreg
    import hookreg.testing

    assert (hookreg.testing.Trace, hookreg.testing.DispatchRecord, hookreg.testing.HookCall) == (
        hookreg.Trace,
        hookreg.DispatchRecord,
        hookreg.HookCall,
    )
    registry = HookRegistry()
    registry.register(GATE, no_rm)
    record = call_point(registry, GATE)
    assert isinstance(record, hookreg.DispatchRecord)
    assert isinstance(record.calls[0], hookreg.HookCall)


def test_acall_point_awaits_async_hooks() -> None:
    """acall_point dispatches through the async surface."""
    registry = HookRegistry()

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.ask("sure?")

    registry.register(GATE, gate, name="asker")
    record = asyncio.run(acall_point(registry, GATE))
    assert_asks(record, "sure", by="asker")


def test_recording_observer_records_contexts() -> None:
    """A RecordingObserver keeps each context it is called with, at any observe point."""
    registry = HookRegistry()
    seen: RecordingObserver[PostToolCallContext] = RecordingObserver()
    registry.register(HookPoint.POST_TOOL_CALL, seen)
    anything = RecordingObserver()
    registry.notification(anything)
    registry.post_tool_call(anything)
    seen.assert_not_called()
    registry.notify(HookPoint.POST_TOOL_CALL, make_context(HookPoint.POST_TOOL_CALL, tool_name="bash"))
    registry.notify(HookPoint.NOTIFICATION, make_context(HookPoint.NOTIFICATION))
    seen.assert_called(times=1)
    assert seen.last.tool_name == "bash"
    anything.assert_called(2)
    assert repr(anything) == "<RecordingObserver: 2 call(s)>"
    anything.clear()
    assert anything.count == 0


def test_recording_observer_assertions_say_what_happened() -> None:
    """Its assertions fail with the count seen and, for assert_not_called, the first context."""
    seen = RecordingObserver()
    with pytest.raises(AssertionError, match="never called"):
        _ = seen.last
    with pytest.raises(AssertionError, match=r"called 0 time\(s\); expected at least once"):
        seen.assert_called()
    seen(1)
    with pytest.raises(AssertionError, match=r"called 1 time\(s\); expected 2 time\(s\)"):
        seen.assert_called(times=2)
    with pytest.raises(AssertionError, match=r"called 1 time\(s\), first with 1"):
        seen.assert_not_called()


def test_result_assertions_say_what_the_result_was() -> None:
    """assert_allowed/denied/asks pass on the right result and otherwise say what it was instead."""
    deny = dataclasses.replace(HookResult.deny("no rm"), decided_by="gate")
    assert assert_denied(deny, r"no \w+", by="gate") is deny
    assert_allowed(HookResult.allow())
    with pytest.raises(AssertionError, match="expected allow, got deny from 'gate': no rm"):
        assert_allowed(deny)
    with pytest.raises(AssertionError, match="expected the reason to match 'yes', got 'no rm'"):
        assert_denied(deny, "yes")
    with pytest.raises(AssertionError, match="expected the deny to come from 'other', got 'gate'"):
        assert_denied(deny, by="other")
    with pytest.raises(AssertionError, match="expected a HookResult"):
        assert_asks(None)


def test_assert_hooks_called_compares_names_in_order() -> None:
    """assert_hooks_called checks the exact hooks of a whole trace, in order."""
    registry = HookRegistry()
    registry.register(GATE, no_rm, name="a")
    registry.register(HookPoint.NOTIFICATION, lambda ctx: None, name="b")
    with registry.trace() as trace:
        registry.decide(GATE, make_context(GATE))
        registry.notify(HookPoint.NOTIFICATION, make_context(HookPoint.NOTIFICATION))
    assert_hooks_called(trace, "a", "b")
    with pytest.raises(
        AssertionError, match=r"expected the hooks \['b', 'a'\] to be called in order, got \['a', 'b'\]"
    ):
        assert_hooks_called(trace, "b", "a")


def test_the_plugin_is_declared_as_a_pytest11_entry_point() -> None:
    """pyproject.toml declares hookreg.testing.plugin under the pytest11 entry-point group."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"hookreg": "hookreg.testing.plugin"}


def test_the_plugin_fixtures_work_in_a_test_suite(pytester: pytest.Pytester) -> None:
    """A test suite gets hook_registry and hook_trace from the installed plugin, fresh per test."""
    pytester.makepyfile(
        """
        from hookreg import HookPoint, HookResult, PreToolCallDecideContext
        from hookreg.testing import assert_denied, assert_hooks_called


        def test_registry_is_fresh(hook_registry):
            assert len(hook_registry) == 0
            hook_registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("no"), name="gate")


        def test_registry_is_fresh_again(hook_registry):
            assert len(hook_registry) == 0


        def test_trace_records_the_test(hook_registry, hook_trace):
            hook_registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("no"), name="gate")
            ctx = PreToolCallDecideContext(tool_name="bash", args={}, call_id="1")
            assert_denied(hook_registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx), by="gate")
            assert_hooks_called(hook_trace, "gate")
            assert hook_trace[0].decided_by == "gate"
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
