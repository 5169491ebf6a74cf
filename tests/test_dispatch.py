"""Sync dispatch: combination rules, return checks, failure policies, StopRun (DESIGN §3, §5)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Final, NoReturn

import pytest
from structlog.testing import capture_logs

from hookreg import (
    FinishReason,
    HookPoint,
    HookRegistry,
    HookResult,
    HookReturnError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    RequestPatch,
    StopContext,
    StopRun,
    ToolErrorKind,
    TransformToolResultContext,
    TurnAction,
)

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
INPUT: Final = HookPoint.TRANSFORM_TOOL_INPUT


def call(**args: object) -> PreToolCallDecideContext:
    return PreToolCallDecideContext(tool_name="bash", args=args, call_id="c1")


def counted(result: HookResult, counts: dict[str, int], name: str) -> Callable[[object], HookResult]:
    def hook(ctx: object) -> HookResult:
        counts[name] = counts.get(name, 0) + 1
        return result

    return hook


def boom(ctx: object) -> NoReturn:
    raise RuntimeError("secret detail")


def turn_ctx() -> ModelTurnFinishedContext:
    return ModelTurnFinishedContext(
        turn=1, text="t", tool_calls=[], finish_reason=FinishReason.STOP, max_tokens=None, usage={}
    )


def invalid_ctx() -> InvalidToolCallContext:
    return InvalidToolCallContext(tool_name="nope", args={}, call_id="c", available_tools=["ls"], error="unknown")


# --- decide -------------------------------------------------------------------


def test_decide_first_non_allow_wins_and_short_circuits() -> None:
    """The first non-allow result is returned with decided_by; later deciders are not called."""
    registry = HookRegistry()
    counts: dict[str, int] = {}
    registry.register(GATE, counted(HookResult.allow(), counts, "a"), name="a")
    registry.register(GATE, counted(HookResult.deny("no"), counts, "b"), name="b")
    registry.register(GATE, counted(HookResult.deny("never"), counts, "c"), name="c")
    with capture_logs() as logs:
        result = registry.decide(GATE, call())
    assert (result.reason, result.decided_by) == ("no", "b")
    assert counts == {"a": 1, "b": 1}
    assert logs == [
        {"event": "hook_denied", "point": "pre_tool_call_decide", "hook": "b", "reason": "no", "log_level": "info"}
    ]


def test_ask_is_returned_like_a_deny() -> None:
    """An ask stops the chain and is returned for the harness to resolve."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.ask("sure?"), name="asker")
    result = registry.decide(GATE, call())
    assert (result.decision, result.decided_by, result.allowed) == ("ask", "asker", False)


def test_decide_all_allow_returns_last_allow_with_a_message() -> None:
    """When all pass, the last allow carrying a message is returned, else the shared allow."""
    registry = HookRegistry()
    assert registry.decide(GATE, call()) is HookResult.allow()
    registry.register(GATE, lambda ctx: HookResult.allow("first"), name="a")
    registry.register(GATE, lambda ctx: HookResult.allow("second"), name="b")
    registry.register(GATE, lambda ctx: HookResult.allow(), name="c")
    result = registry.decide(GATE, call())
    assert (result.message, result.decided_by, result.allowed) == ("second", "b", True)
    plain = HookRegistry()
    plain.register(GATE, lambda ctx: HookResult.allow())
    assert plain.decide(GATE, call()) is HookResult.allow()


@pytest.mark.parametrize("bad", [None, True, "deny", 0, TurnAction.repeat()], ids=repr)
def test_decider_wrong_return_fails_closed(bad: object) -> None:
    """A decider returning anything but HookResult is a failure that denies, never an allow."""
    registry = HookRegistry()
    counts: dict[str, int] = {}
    registry.register(GATE, lambda ctx: bad, name="sloppy")  # type: ignore[arg-type, return-value]  # on purpose
    registry.register(GATE, counted(HookResult.allow(), counts, "later"))
    with capture_logs() as logs:
        result = registry.decide(GATE, call())
    assert (result.decision, result.decided_by) == ("deny", "sloppy")
    assert counts == {}
    assert logs == [
        {
            "event": "hook_failed",
            "point": "pre_tool_call_decide",
            "hook": "sloppy",
            "exc_type": "HookReturnError",
            "error": f"returned {type(bad).__name__}; expected HookResult",
            "log_level": "error",
        }
    ]


def test_sync_hook_returning_a_coroutine_is_a_wrong_return() -> None:
    """A sync callable that returns an awaitable fails; the coroutine is closed, not leaked."""

    async def inner() -> HookResult:
        return HookResult.allow()

    coroutine = inner()
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: coroutine, name="lambda-async", on_error="raise")
    with pytest.raises(HookReturnError, match="awaitable") as info:
        registry.decide(GATE, call())
    assert info.value.returned_type.__name__ == "coroutine"
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED


def test_decider_exception_policies() -> None:
    """deny fails closed naming the hook; ignore passes; raise re-raises with a note."""
    deny = HookRegistry()
    deny.register(GATE, boom, name="b")
    with capture_logs() as logs:
        result = deny.decide(GATE, call())
    assert (result.decision, result.decided_by) == ("deny", "b")
    assert "secret detail" not in result.reason
    assert [e["event"] for e in logs] == ["hook_failed"]
    assert logs[0]["exc_type"] == "RuntimeError"

    ignore = HookRegistry()
    ignore.register(GATE, boom, name="b", on_error="ignore")
    assert ignore.decide(GATE, call()).allowed

    raising = HookRegistry()
    raising.register(GATE, boom, name="b", on_error="raise")
    with pytest.raises(RuntimeError, match="secret detail") as info:
        raising.decide(GATE, call())
    assert info.value.__notes__ == ["hookreg: raised by hook 'b' at pre_tool_call_decide"]


def test_stop_failure_allows_the_stop() -> None:
    """A failing stop hook lets the run stop rather than loop."""
    registry = HookRegistry()
    registry.register(HookPoint.STOP, boom, name="b")
    registry.register(HookPoint.STOP, lambda ctx: HookResult.deny("keep going"))
    result = registry.decide(HookPoint.STOP, StopContext(response_text="done", continuation_count=0))
    assert (result.allowed, result.decided_by) == (True, "b")


def test_turn_finished_failure_raises_stop_run() -> None:
    """A failing model_turn_finished hook raises StopRun naming it, logged once as hook_failed."""
    registry = HookRegistry()
    registry.register(HookPoint.MODEL_TURN_FINISHED, boom, name="b")
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        registry.decide(HookPoint.MODEL_TURN_FINISHED, turn_ctx())
    assert info.value.hook == "b"
    assert [e["event"] for e in logs] == ["hook_failed"]


def test_turn_finished_first_non_continue_wins() -> None:
    """continue passes; the first other action wins with decided_by; none → continue_run."""
    registry = HookRegistry()
    point: Final = HookPoint.MODEL_TURN_FINISHED
    assert registry.decide(point, turn_ctx()) is TurnAction.continue_run()
    registry.register(point, lambda ctx: TurnAction(kind="continue"), name="a")
    registry.register(point, lambda ctx: TurnAction.retry_with_feedback("shorter"), name="b")
    registry.register(point, lambda ctx: TurnAction.repeat(), name="c")
    action = registry.decide(point, turn_ctx())
    assert (action.kind, action.feedback, action.decided_by) == ("feedback", "shorter", "b")


def test_invalid_tool_call_first_action_wins() -> None:
    """None passes; the first action wins; no decision means fail(); a failure fails."""
    registry = HookRegistry()
    point: Final = HookPoint.INVALID_TOOL_CALL
    assert registry.decide(point, invalid_ctx()) is InvalidToolCallAction.fail()
    registry.register(point, lambda ctx: None)
    assert registry.decide(point, invalid_ctx()) == InvalidToolCallAction.fail()
    registry.register(point, lambda ctx: InvalidToolCallAction.repair("ls"), name="fixer")
    action = registry.decide(point, invalid_ctx())
    assert (action.kind, action.tool_name, action.decided_by) == ("repair", "ls", "fixer")
    failing = HookRegistry()
    failing.register(point, boom, name="b")
    assert (failing.decide(point, invalid_ctx()).kind, failing.decide(point, invalid_ctx()).decided_by) == (
        "fail",
        "b",
    )


# --- transform ------------------------------------------------------------------


def test_transforms_chain_in_order_and_none_keeps_value() -> None:
    """Each transform sees the previous result; None keeps it; the final value is returned."""
    registry = HookRegistry()
    seen: list[dict[str, object]] = []

    def add(key: str) -> Callable[[PreToolCallDecideContext], Mapping[str, object] | None]:
        def hook(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
            seen.append(dict(ctx.args))
            return {**ctx.args, key: len(ctx.args)}

        return hook

    registry.register(INPUT, add("a"))
    registry.register(INPUT, lambda ctx: None)
    registry.register(INPUT, add("b"))
    result = registry.transform(INPUT, call(x=1))
    assert dict(result) == {"x": 1, "a": 1, "b": 2}
    assert seen == [{"x": 1}, {"x": 1, "a": 1}]


def test_transform_unchanged_returns_the_original_object() -> None:
    """When every transform returns None, the context's own field object comes back."""
    registry = HookRegistry()
    ctx = call(x=1)
    assert registry.transform(INPUT, ctx) is ctx.args
    registry.register(INPUT, lambda c: None)
    assert registry.transform(INPUT, ctx) is ctx.args


def test_transformed_args_are_a_read_only_snapshot() -> None:
    """The args a transform returned are copied, so the hook cannot change them afterwards."""
    registry = HookRegistry()
    mine: dict[str, object] = {"x": 2}
    registry.register(INPUT, lambda ctx: mine)
    result = registry.transform(INPUT, call(x=1))
    mine["x"] = 3
    assert result == {"x": 2}
    with pytest.raises(TypeError):
        result["x"] = 4  # type: ignore[index]


def test_string_transforms_chain() -> None:
    """model_select, on_tool_error and transform_tool_result chain over their subject."""
    registry = HookRegistry()
    registry.register(HookPoint.MODEL_SELECT, lambda ctx: ctx.selected_model + "-big")
    registry.register(HookPoint.MODEL_SELECT, lambda ctx: ctx.selected_model + "-fast")
    pick = ModelSelectContext(default_model="m", selected_model="m", patch=RequestPatch())
    assert registry.transform(HookPoint.MODEL_SELECT, pick) == "m-big-fast"

    registry.register(HookPoint.ON_TOOL_ERROR, lambda ctx: f"[{ctx.message}]")
    error = OnToolErrorContext(
        tool_name="t", args={}, call_id="c", error=ValueError("x"), kind=ToolErrorKind.EXCEPTION, message="failed"
    )
    assert registry.transform(HookPoint.ON_TOOL_ERROR, error) == "[failed]"

    raw = object()
    registry.register(HookPoint.TRANSFORM_TOOL_RESULT, lambda ctx: ctx.presentation.upper())
    registry.register(HookPoint.TRANSFORM_TOOL_RESULT, lambda ctx: None if ctx.raw_result is raw else "changed")
    shown = TransformToolResultContext(tool_name="t", args={}, call_id="c", raw_result=raw, presentation="ok")
    assert registry.transform(HookPoint.TRANSFORM_TOOL_RESULT, shown) == "OK"


def test_pre_model_call_merges_patches_onto_the_base() -> None:
    """Patches merge in order over the harness's initial patch; each hook sees the merge so far."""
    registry = HookRegistry()
    seen: list[RequestPatch] = []

    def first(ctx: PreModelCallContext) -> RequestPatch:
        seen.append(ctx.patch)
        return RequestPatch(extra_context=("a",), active_tools=frozenset({"ls", "cat"}))

    def second(ctx: PreModelCallContext) -> RequestPatch:
        seen.append(ctx.patch)
        return RequestPatch(extra_context=("b",), active_tools=frozenset({"cat"}), temperature=0.2)

    registry.register(HookPoint.PRE_MODEL_CALL, first)
    registry.register(HookPoint.PRE_MODEL_CALL, second)
    base = RequestPatch(max_tokens=100)
    ctx = PreModelCallContext(prompt="p", history=[], turn=1, patch=base)
    merged = registry.transform(HookPoint.PRE_MODEL_CALL, ctx)
    assert merged == RequestPatch(
        extra_context=("a", "b"), active_tools=frozenset({"cat"}), temperature=0.2, max_tokens=100
    )
    assert seen[0] is base
    assert seen[1].extra_context == ("a",)


@pytest.mark.parametrize("bad", [42, b"bytes", ["list"]], ids=repr)
def test_transform_wrong_return_raises_by_default(bad: object) -> None:
    """A transform returning the wrong type raises HookReturnError under the default policy."""
    registry = HookRegistry()
    registry.register(INPUT, lambda ctx: bad, name="t")  # type: ignore[arg-type, return-value]  # on purpose
    with pytest.raises(HookReturnError, match=r"Cannot use what hook 't' returned at transform_tool_input") as info:
        registry.transform(INPUT, call())
    assert isinstance(info.value, TypeError)
    assert (info.value.point, info.value.returned_type) == (INPUT, type(bad))


def test_transform_ignore_keeps_value_so_far() -> None:
    """Under ignore, a failing transform is logged and the chain goes on with the value so far."""
    registry = HookRegistry()
    registry.register(INPUT, lambda ctx: {"a": 1})
    registry.register(INPUT, boom, name="b", on_error="ignore")
    registry.register(INPUT, lambda ctx: 7, name="wrong", on_error="ignore")  # type: ignore[arg-type, return-value]
    registry.register(INPUT, lambda ctx: {**ctx.args, "c": 2})
    with capture_logs() as logs:
        assert dict(registry.transform(INPUT, call())) == {"a": 1, "c": 2}
    assert [(e["event"], e["hook"], e["log_level"]) for e in logs] == [
        ("hook_failed", "b", "warning"),
        ("hook_failed", "wrong", "warning"),
    ]


# --- observe ---------------------------------------------------------------------


def test_observers_all_run_in_order_and_failures_are_contained() -> None:
    """Every observer runs; a failing one is logged under ignore and the rest still run."""
    registry = HookRegistry()
    log: list[str] = []
    registry.register(HookPoint.POST_TURN, lambda ctx: log.append("a"), name="a")
    registry.register(HookPoint.POST_TURN, boom, name="b")
    registry.register(HookPoint.POST_TURN, lambda ctx: log.append("c"), name="c")
    with capture_logs() as logs:
        registry.notify(HookPoint.POST_TURN, PostTurnContext(turn=1, response_text="r"))
    assert log == ["a", "c"]
    assert [(e["event"], e["hook"]) for e in logs] == [("hook_failed", "b")]


def test_observer_raise_stops_remaining_observers() -> None:
    """Under raise, a failing observer propagates and later observers do not run."""
    registry = HookRegistry()
    log: list[str] = []
    registry.register(HookPoint.POST_TURN, boom, name="b", on_error="raise")
    registry.register(HookPoint.POST_TURN, lambda ctx: log.append("c"))
    with pytest.raises(RuntimeError, match="secret detail"):
        registry.notify(HookPoint.POST_TURN, PostTurnContext(turn=1, response_text="r"))
    assert log == []


def test_observer_returning_a_value_is_a_wrong_return() -> None:
    """An observer must return None; a value is logged as a failure."""
    registry = HookRegistry()
    registry.register(HookPoint.POST_TURN, lambda ctx: "oops", name="chatty")
    with capture_logs() as logs:
        registry.notify(HookPoint.POST_TURN, PostTurnContext(turn=1, response_text="r"))
    assert logs[0]["exc_type"] == "HookReturnError"


# --- StopRun and BaseException -------------------------------------------------------


def test_stop_run_propagates_untouched_and_marks_the_hook() -> None:
    """StopRun is re-raised as the same object with .hook set, logged once, no later hooks run."""
    registry = HookRegistry()
    stop = StopRun("budget exhausted")
    counts: dict[str, int] = {}

    def stopper(ctx: object) -> HookResult:
        raise stop

    registry.register(GATE, stopper, name="budget", on_error="ignore")
    registry.register(GATE, counted(HookResult.allow(), counts, "later"))
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        registry.decide(GATE, call())
    assert info.value is stop
    assert (stop.hook, stop.effective_args, getattr(stop, "__notes__", None)) == ("budget", None, None)
    assert counts == {}
    assert logs == [
        {
            "event": "run_stopped",
            "point": "pre_tool_call_decide",
            "hook": "budget",
            "reason": "budget exhausted",
            "log_level": "info",
        }
    ]


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit, GeneratorExit])
@pytest.mark.parametrize("policy", ["deny", "ignore", "raise"])
def test_base_exceptions_propagate_whatever_the_policy(kind: type[BaseException], policy: str) -> None:
    """KeyboardInterrupt, SystemExit and GeneratorExit pass through as the same object, without a note."""
    error = kind()

    def hook(ctx: object) -> HookResult:
        raise error

    registry = HookRegistry()
    registry.register(GATE, hook, on_error=policy)
    with pytest.raises(kind) as info:
        registry.decide(GATE, call())
    assert info.value is error
    assert not hasattr(error, "__notes__")


# --- resolve_tool_call ----------------------------------------------------------------


def test_resolve_transforms_then_gates_the_rewritten_args() -> None:
    """resolve_tool_call gates the transformed args and reports them with rewritten=True."""
    registry = HookRegistry()
    gate_saw: list[dict[str, object]] = []
    registry.register(INPUT, lambda ctx: {**ctx.args, "timeout": 30})

    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gate_saw.append(dict(ctx.args))
        return HookResult.allow()

    registry.register(GATE, gate)
    resolution = registry.resolve_tool_call(call(cmd="ls"))
    assert gate_saw == [{"cmd": "ls", "timeout": 30}]
    assert (dict(resolution.args), resolution.result.allowed, resolution.rewritten) == (
        {"cmd": "ls", "timeout": 30},
        True,
        True,
    )
    untouched = HookRegistry().resolve_tool_call(ctx := call(cmd="ls"))
    assert untouched.args is ctx.args
    assert not untouched.rewritten


def test_resolve_deny_notifies_permission_denied_with_effective_args() -> None:
    """A deny fires permission_denied with the rewritten args; an ask does not."""
    registry = HookRegistry()
    denied: list[PermissionDeniedContext] = []
    registry.register(INPUT, lambda ctx: {"cmd": "rm -rf /", "safe": False})
    registry.register(GATE, lambda ctx: HookResult.deny("dangerous"), name="guard")
    registry.register(HookPoint.PERMISSION_DENIED, denied.append)
    ctx = call(cmd="rm")
    resolution = registry.resolve_tool_call(ctx)
    assert (resolution.result.reason, dict(resolution.args)) == ("dangerous", {"cmd": "rm -rf /", "safe": False})
    (seen,) = denied
    assert (seen.reason, seen.decided_by, dict(seen.args), seen.run) == (
        "dangerous",
        "guard",
        {"cmd": "rm -rf /", "safe": False},
        ctx.run,
    )
    asking = HookRegistry()
    asking.register(GATE, lambda ctx: HookResult.ask("sure?"))
    asking.register(HookPoint.PERMISSION_DENIED, denied.append)
    assert asking.resolve_tool_call(ctx).result.decision == "ask"
    assert len(denied) == 1


def test_resolve_stop_keeps_the_rewrite() -> None:
    """A StopRun from the gate after a rewrite carries the rewritten args."""
    registry = HookRegistry()
    registry.register(INPUT, lambda ctx: {"cmd": "ls -la"})

    def stopper(ctx: object) -> HookResult:
        raise StopRun("enough")

    registry.register(GATE, stopper)
    with pytest.raises(StopRun) as info:
        registry.resolve_tool_call(call(cmd="ls"))
    assert info.value.effective_args == {"cmd": "ls -la"}


def test_transform_stop_mid_chain_keeps_the_rewrite_so_far() -> None:
    """A StopRun raised by a later input transform carries the args rewritten before it."""
    registry = HookRegistry()
    registry.register(INPUT, lambda ctx: {"cmd": "safe"})

    def stopper(ctx: object) -> None:
        raise StopRun("halt")

    registry.register(INPUT, stopper)
    with pytest.raises(StopRun) as info:
        registry.resolve_tool_call(call(cmd="ls"))
    assert info.value.effective_args == {"cmd": "safe"}


def test_a_stop_from_a_nested_dispatch_keeps_the_innermost_hook() -> None:
    """A StopRun raised inside a nested dispatch names the hook that raised it, logged once."""
    inner = HookRegistry()

    def budget(ctx: object) -> HookResult:
        raise StopRun("over budget")

    inner.register(GATE, budget, name="budget")
    outer = HookRegistry()
    outer.register(GATE, lambda ctx: inner.decide(GATE, ctx), name="delegate")
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        outer.decide(GATE, call())
    assert info.value.hook == "budget"
    assert [(e["event"], e["hook"]) for e in logs] == [("run_stopped", "budget")]


def test_a_sync_hook_returning_another_awaitable_is_a_wrong_return() -> None:
    """Any awaitable from a sync hook (not only a coroutine) is refused with a hint."""

    class Later:
        def __await__(self) -> object:
            return iter(())

    registry = HookRegistry()
    registry.register(GATE, lambda ctx: Later(), name="later", on_error="raise")  # type: ignore[arg-type, return-value]
    with pytest.raises(HookReturnError, match="awaitable from a sync callable"):
        registry.decide(GATE, call())


def test_a_built_allow_without_message_passes() -> None:
    """An allow built directly (not the shared instance) passes like the shared one."""
    from hookreg import Decision

    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult(decision=Decision.ALLOW))
    registry.register(GATE, lambda ctx: HookResult.deny("second"), name="second")
    assert registry.decide(GATE, call()).decided_by == "second"


def test_merging_an_empty_patch_returns_the_same_patch() -> None:
    """A patch that sets nothing leaves the merge as it was."""
    patch = RequestPatch(preamble="p")
    assert patch.merge(RequestPatch()) is patch


def test_async_transform_hands_a_sync_failure_to_its_policy() -> None:
    """On the async surface, a sync transform that raises is handled by its policy like on the sync one."""
    import asyncio

    registry = HookRegistry()
    registry.register(INPUT, boom, name="b", on_error="ignore")
    registry.register(INPUT, lambda ctx: {"after": True})
    ctx = call(x=1)
    with capture_logs() as logs:
        assert asyncio.run(registry.atransform(INPUT, ctx)) == {"after": True}
    assert [e["hook"] for e in logs] == ["b"]


def test_dispatch_with_no_hooks_allocates_nothing() -> None:
    """With no hooks, decide, transform, notify and has_hooks allocate no memory at all, not even briefly."""
    import itertools
    import sys
    import tracemalloc

    registry = HookRegistry()
    ctx = call()
    turn = PostTurnContext(turn=1, response_text="")
    post_turn: Final = HookPoint.POST_TURN

    def dispatch(times: itertools.repeat[None]) -> None:
        for _ in times:
            registry.decide(GATE, ctx)
            registry.transform(INPUT, ctx)
            registry.notify(post_turn, turn)
            registry.has_hooks(post_turn)

    dispatch(itertools.repeat(None, 10))  # warm up: specialized bytecode, cached lookups
    times = itertools.repeat(None, 1000)
    tracer = sys.gettrace()  # a coverage tracer allocates as it records lines: pause it
    sys.settrace(None)
    tracemalloc.start()
    try:
        dispatch(itertools.repeat(None, 0))  # what calling `dispatch` itself allocates is not dispatch
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        dispatch(times)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        sys.settrace(tracer)
    assert (after, peak) == (before, before)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_resolve_hands_back_the_args_as_they_were_before_the_first_gate(asynchronous: bool) -> None:
    """A gate changing a nested value of the transformed args in place does not change `args` (DESIGN §3)."""
    registry = HookRegistry()
    registry.register(INPUT, lambda ctx: {**ctx.args, "argv": ["ls", "-l"]})

    def tamper(ctx: PreToolCallDecideContext) -> HookResult:
        ctx.args["argv"][:] = ["rm", "-rf", "/"]  # type: ignore[index]  # the point: a nested list is mutable
        return HookResult.allow()

    registry.register(GATE, tamper)
    ctx = call(cmd="ls")
    resolution = asyncio.run(registry.aresolve_tool_call(ctx)) if asynchronous else registry.resolve_tool_call(ctx)
    assert dict(resolution.args) == {"cmd": "ls", "argv": ["ls", "-l"]}
    assert resolution.rewritten


def test_a_stop_from_a_nested_dispatch_after_a_rewrite_keeps_the_innermost_hook() -> None:
    """Past a rewrite the chain goes on without the step generator: a nested StopRun still names its own hook
    and keeps what its own dispatch set (no rewritten args: it stopped a gate), logged once."""
    inner = HookRegistry()

    def budget(ctx: object) -> HookResult:
        raise StopRun("over budget")

    inner.register(GATE, budget, name="budget")
    outer = HookRegistry()
    outer.register(INPUT, lambda ctx: {"cmd": "safe"}, name="rewrite", priority=1)

    def delegate(ctx: PreToolCallDecideContext) -> None:
        inner.decide(GATE, ctx)

    outer.register(INPUT, delegate, name="delegate")
    with capture_logs() as logs, pytest.raises(StopRun) as info:
        outer.resolve_tool_call(call(cmd="ls"))
    assert (info.value.hook, info.value.effective_args) == ("budget", None)
    assert [(e["event"], e["hook"]) for e in logs] == [("run_stopped", "budget")]


def test_every_step_of_a_rewriting_chain_is_a_context_of_its_own() -> None:
    """Each hook of a chain of rewrites sees a frozen context holding the args so far; one a hook kept
    still holds what that hook saw when the chain has gone on (contexts are never changed after a hook saw them)."""
    kept: list[PreToolCallDecideContext] = []
    registry = HookRegistry()
    for step in range(4):

        def rewrite(ctx: PreToolCallDecideContext, step: int = step) -> dict[str, object]:
            if step % 2:
                kept.append(ctx)  # the odd steps keep their context; the even ones let it go
            return {**ctx.args, "step": step}

        registry.register(INPUT, rewrite, name=f"rewrite{step}", priority=-step)
    seen: list[object] = []
    registry.register(INPUT, lambda ctx: seen.append(dict(ctx.args)), name="last", priority=-9)
    assert dict(registry.transform(INPUT, call(cmd="ls"))) == {"cmd": "ls", "step": 3}
    assert [dict(ctx.args) for ctx in kept] == [{"cmd": "ls", "step": 0}, {"cmd": "ls", "step": 2}]
    assert seen == [{"cmd": "ls", "step": 3}]
    assert len({id(ctx) for ctx in kept}) == 2


def test_a_stop_after_a_rewrite_carries_the_rewritten_args() -> None:
    """A hook raising StopRun after two rewrites: the stop carries the args the chain had reached."""
    registry = HookRegistry()
    registry.register(INPUT, lambda ctx: {"cmd": "one"}, name="first", priority=2)
    registry.register(INPUT, lambda ctx: {**ctx.args, "two": True}, name="second", priority=1)

    def halt(ctx: PreToolCallDecideContext) -> None:
        raise StopRun("halt")

    registry.register(INPUT, halt, name="halt")
    with pytest.raises(StopRun) as info:
        registry.resolve_tool_call(call(cmd="ls"))
    assert (info.value.hook, info.value.effective_args) == ("halt", {"cmd": "one", "two": True})
