"""The `StopRun` rules of DESIGN §2 and the raising rules of §5, on both surfaces.

A stop inside an exception group is a stop; a reused instance is marked and
logged afresh by each dispatch that raises it, while one coming out of a
dispatch nested inside a hook call keeps that dispatch's marks; a
`StopIteration` under ``on_error="raise"`` comes out as itself; the note naming
the hook is added once however often the same exception is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import pickle
from collections.abc import Mapping, Sequence
from typing import Any, Final

import pytest
from structlog.testing import capture_logs

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    ModelTurnFinishedContext,
    PreToolCallDecideContext,
    StopRun,
    TurnAction,
)

from ._support import as_hook, dispatch, make_context, resolve

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
INPUT: Final = HookPoint.TRANSFORM_TOOL_INPUT
TURN: Final = HookPoint.MODEL_TURN_FINISHED
SURFACES = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
# A module-level constant, as a user might keep one: every dispatch that raises it marks it afresh.
STOP = StopRun("the constant stop")


def call(**args: object) -> PreToolCallDecideContext:
    """A `bash` tool call with `args`."""
    return PreToolCallDecideContext(tool_name="bash", args=args, call_id="c1")


def raise_(exc: BaseException) -> Any:
    """A hook body that raises `exc`."""

    def body(ctx: object) -> Any:
        raise exc

    return body


def rewrite(**args: object) -> Any:
    """A transform body that replaces the args with `args`."""

    def body(ctx: object) -> Mapping[str, object]:
        return args

    return body


def events(logs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The captured events as ``(event, hook)`` pairs."""
    return [(e["event"], e.get("hook", "")) for e in logs]


# --- a StopRun inside an exception group ---------------------------------------------


@pytest.mark.parametrize("policy", ["deny", "raise", "ignore"])
def test_a_stop_raised_inside_a_task_group_stops_the_run(policy: str) -> None:
    """A gate fanning out with asyncio.TaskGroup, whose task raises StopRun, stops the run: no policy applies."""
    stop = StopRun("budget spent")
    later: list[object] = []

    async def check(ctx: object) -> None:
        raise stop

    async def fan_out(ctx: object) -> HookResult:
        async with asyncio.TaskGroup() as group:
            group.create_task(asyncio.sleep(0))
            group.create_task(check(ctx))
        return HookResult.allow()

    registry = HookRegistry()
    registry.register(GATE, fan_out, name="fan-out", on_error=policy)
    registry.register(GATE, later.append, name="later")
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        dispatch(registry, GATE, call(), is_async=True)
    assert info.value is stop
    assert (stop.hook, later, getattr(stop, "__notes__", None)) == ("fan-out", [], None)
    assert events(logs) == [("run_stopped", "fan-out")]


@SURFACES
@pytest.mark.parametrize("point", [GATE, INPUT, HookPoint.POST_TOOL_CALL], ids=str)
def test_the_first_stop_of_nested_groups_is_raised(point: HookPoint, *, is_async: bool) -> None:
    """The first StopRun, depth first through nested groups, is the one raised, at every style of point."""
    first, second = StopRun("first"), StopRun("second")
    group = ExceptionGroup("outer", [ValueError("x"), ExceptionGroup("inner", [KeyError("k"), first]), second])
    registry = HookRegistry()
    registry.register(point, as_hook(raise_(group), is_async=is_async), name="grouped")
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        dispatch(registry, point, make_context(point, tool_name="bash"), is_async=is_async)
    assert info.value is first
    assert (first.hook, second.hook) == ("grouped", None)
    assert events(logs) == [("run_stopped", "grouped")]


@SURFACES
def test_a_group_without_a_stop_is_an_ordinary_failure(*, is_async: bool) -> None:
    """An exception group holding no StopRun is a failure like any other: the gate denies."""
    registry = HookRegistry()
    registry.register(GATE, as_hook(raise_(ExceptionGroup("g", [ValueError("x")])), is_async=is_async), name="g")
    with capture_logs() as logs:
        result = dispatch(registry, GATE, call(), is_async=is_async)
    assert (result.allowed, result.decided_by) == (False, "g")
    assert [(e["event"], e["exc_type"]) for e in logs] == [("hook_failed", "ExceptionGroup")]


@SURFACES
def test_a_group_holding_a_keyboard_interrupt_propagates_as_itself(*, is_async: bool) -> None:
    """A BaseExceptionGroup (a KeyboardInterrupt beside a StopRun) is not a stop: it propagates untouched, unlogged."""
    stop = StopRun("beside")
    group = BaseExceptionGroup("ctrl-c", [KeyboardInterrupt(), stop])
    registry = HookRegistry()
    registry.register(GATE, as_hook(raise_(group), is_async=is_async), name="interrupted")
    with capture_logs() as logs, pytest.raises(BaseExceptionGroup) as info:
        dispatch(registry, GATE, call(), is_async=is_async)
    assert info.value is group
    assert (stop.hook, getattr(group, "__notes__", None), logs) == (None, None, [])


# --- a reused StopRun, and one from a nested dispatch ---------------------------------------


@SURFACES
def test_a_reused_stop_is_marked_and_logged_by_each_dispatch_that_raises_it(*, is_async: bool) -> None:
    """A module-level StopRun raised by two dispatches names the second hook, and its args, the second time."""
    first = HookRegistry()
    first.register(INPUT, as_hook(rewrite(cmd="rewritten"), is_async=is_async), name="rewrite")
    first.register(GATE, as_hook(raise_(STOP), is_async=is_async), name="first-gate")
    second = HookRegistry()
    second.register(GATE, as_hook(raise_(STOP), is_async=is_async), name="second-gate")
    with capture_logs() as logs:
        with pytest.raises(StopRun):
            resolve(first, call(cmd="ls"), is_async=is_async)
        assert (STOP.hook, STOP.effective_args) == ("first-gate", {"cmd": "rewritten"})
        with pytest.raises(StopRun) as info:
            dispatch(second, GATE, call(cmd="ls"), is_async=is_async)
    assert info.value is STOP
    assert (STOP.hook, STOP.effective_args) == ("second-gate", None)
    assert events(logs) == [("run_stopped", "first-gate"), ("run_stopped", "second-gate")]


@SURFACES
@pytest.mark.parametrize("inner_rewrites", [True, False], ids=["inner-rewrites", "inner-keeps-args"])
def test_a_stop_from_a_nested_resolution_keeps_the_inner_marks(*, is_async: bool, inner_rewrites: bool) -> None:
    """A gate that resolves another call, whose gate stops, lets the stop out with the inner hook and args."""
    inner = HookRegistry()
    if inner_rewrites:
        inner.register(INPUT, as_hook(rewrite(cmd="inner"), is_async=is_async), name="inner-rewrite")
    inner.register(GATE, as_hook(raise_(StopRun("inner stop")), is_async=is_async), name="inner-gate")

    async def adelegate(ctx: PreToolCallDecideContext) -> HookResult:
        return (await inner.aresolve_tool_call(call(cmd="probe"))).result

    def delegate(ctx: PreToolCallDecideContext) -> HookResult:
        return inner.resolve_tool_call(call(cmd="probe")).result

    outer = HookRegistry()
    outer.register(INPUT, rewrite(cmd="outer"), name="outer-rewrite")
    if is_async:
        outer.register(GATE, adelegate, name="delegate")
    else:
        outer.register(GATE, delegate, name="delegate")
    with capture_logs() as logs, pytest.raises(StopRun, match="inner stop") as info:
        resolve(outer, call(cmd="ls"), is_async=is_async)
    expected_args = {"cmd": "inner"} if inner_rewrites else None
    assert (info.value.hook, info.value.effective_args) == ("inner-gate", expected_args)
    assert events(logs) == [("run_stopped", "inner-gate")]


@SURFACES
def test_a_stop_a_gate_swallowed_from_a_nested_resolution_is_marked_afresh_when_raised_again(*, is_async: bool) -> None:
    """A gate probing another call swallows its constant stop; a later gate raising it names itself, outer args."""
    inner = HookRegistry()
    inner.register(INPUT, rewrite(cmd="inner"), name="inner-rewrite")
    inner.register(GATE, raise_(STOP), name="inner-gate")

    def probe(ctx: PreToolCallDecideContext) -> HookResult:
        with contextlib.suppress(StopRun):  # the probe's verdict is noted, the gate lets the call through
            inner.resolve_tool_call(call(cmd="probe"))
        return HookResult.allow()

    outer = HookRegistry()
    outer.register(INPUT, as_hook(rewrite(cmd="outer"), is_async=is_async), name="outer-rewrite")
    outer.register(GATE, as_hook(probe, is_async=is_async), name="probe")
    outer.register(GATE, as_hook(raise_(STOP), is_async=is_async), name="outer-gate")
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        resolve(outer, call(cmd="ls"), is_async=is_async)
    assert info.value is STOP
    assert (STOP.hook, STOP.effective_args) == ("outer-gate", {"cmd": "outer"})
    assert events(logs) == [("run_stopped", "inner-gate"), ("run_stopped", "outer-gate")]


def test_a_gate_that_catches_a_nested_stop_and_raises_it_keeps_the_inner_marks() -> None:
    """A stop caught and raised again within the hook call whose dispatch made it is still that dispatch's stop."""
    inner = HookRegistry()
    inner.register(GATE, raise_(StopRun("inner stop")), name="inner-gate")
    seen: list[str | None] = []

    def relay(ctx: PreToolCallDecideContext) -> HookResult:
        try:
            return inner.decide(GATE, ctx)
        except StopRun as stop:
            seen.append(stop.hook)
            raise

    outer = HookRegistry()
    outer.register(GATE, relay, name="relay")
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        outer.decide(GATE, call())
    assert (seen, info.value.hook) == (["inner-gate"], "inner-gate")
    assert events(logs) == [("run_stopped", "inner-gate")]


@SURFACES
def test_a_failing_turn_decider_in_a_nested_dispatch_keeps_its_name(*, is_async: bool) -> None:
    """The StopRun a failing MODEL_TURN_FINISHED decider makes names it, through an outer dispatch, logged once."""
    inner = HookRegistry()
    inner.register(TURN, as_hook(raise_(ValueError("broken")), is_async=is_async), name="broken")

    async def adelegate(ctx: ModelTurnFinishedContext) -> TurnAction:
        return await inner.adecide(TURN, ctx)

    def delegate(ctx: ModelTurnFinishedContext) -> TurnAction:
        return inner.decide(TURN, ctx)

    outer = HookRegistry()
    if is_async:
        outer.register(TURN, adelegate, name="delegate")
    else:
        outer.register(TURN, delegate, name="delegate")
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        dispatch(outer, TURN, make_context(TURN), is_async=is_async)
    assert info.value.hook == "broken"
    assert events(logs) == [("hook_failed", "broken")]


def test_a_marked_stop_still_pickles_and_copies() -> None:
    """A StopRun dispatch marked pickles and copies with its reason and hook (its bookkeeping holds frames)."""
    registry = HookRegistry()
    registry.register(GATE, raise_(StopRun("halt")), name="halt")
    with pytest.raises(StopRun) as info:
        registry.decide(GATE, call(cmd="ls"))
    for clone in (pickle.loads(pickle.dumps(info.value)), copy.deepcopy(info.value), copy.copy(info.value)):
        assert (type(clone), clone.reason, clone.hook, clone.effective_args) == (StopRun, "halt", "halt", None)


# --- what "raise" raises ---------------------------------------------------------------------


def test_a_stop_iteration_under_raise_comes_out_as_itself() -> None:
    """A sync hook's StopIteration under on_error="raise" is raised as itself, with the note, never a RuntimeError."""
    done = StopIteration("exhausted")
    registry = HookRegistry()
    registry.register(GATE, raise_(done), name="iterating", on_error="raise")
    for _ in range(2):  # the first dispatch leaves the inline loop, the second runs the same rules
        with capture_logs() as logs, pytest.raises(StopIteration) as info:
            registry.decide(GATE, call())
        assert info.value is done
        assert done.__notes__ == [f"hookreg: raised by hook 'iterating' at {GATE.value}"]
        assert [(e["event"], e["exc_type"]) for e in logs] == [("hook_failed", "StopIteration")]


def test_an_async_hooks_stop_iteration_is_unwrapped() -> None:
    """An async def hook's StopIteration, which Python wraps in RuntimeError, is what the policy sees and raises."""
    done = StopIteration("exhausted")

    async def iterating(ctx: object) -> HookResult:
        raise done

    registry = HookRegistry()
    registry.register(GATE, iterating, name="iterating", on_error="raise")
    with capture_logs() as logs, pytest.raises(RuntimeError) as info:
        asyncio.run(registry.adecide(GATE, call()))
    # An async dispatch cannot raise StopIteration itself (PEP 479 wraps it again): the original is the cause.
    assert info.value.__cause__ is done
    assert done.__notes__ == [f"hookreg: raised by hook 'iterating' at {GATE.value}"]
    assert [(e["event"], e["exc_type"]) for e in logs] == [("hook_failed", "StopIteration")]


def test_a_runtime_error_caused_by_stop_iteration_that_the_hook_raised_stays_itself() -> None:
    """A hook's own RuntimeError with a StopIteration cause is not unwrapped: only Python's wrapping is."""
    own = RuntimeError("mine")
    own.__cause__ = StopIteration()

    async def hook(ctx: object) -> HookResult:
        raise own

    registry = HookRegistry()
    registry.register(GATE, hook, on_error="raise")
    with pytest.raises(RuntimeError) as info:
        asyncio.run(registry.adecide(GATE, call()))
    assert info.value is own


@SURFACES
@pytest.mark.parametrize("point", [GATE, INPUT, HookPoint.POST_TOOL_CALL], ids=str)
def test_the_note_is_added_once_however_often_the_same_exception_is_raised(point: HookPoint, *, is_async: bool) -> None:
    """A hook raising one exception object in 50 dispatches leaves one note on it, not 50."""
    boom = ValueError("same object")
    registry = HookRegistry()
    registry.register(point, as_hook(raise_(boom), is_async=is_async), name="repeat", on_error="raise")
    ctx = make_context(point, tool_name="bash")
    for _ in range(50):
        with pytest.raises(ValueError, match="same object"):
            dispatch(registry, point, ctx, is_async=is_async)
    assert boom.__notes__ == [f"hookreg: raised by hook 'repeat' at {point.value}"]
