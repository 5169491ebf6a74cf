"""The async surface: adecide, atransform, anotify and aresolve_tool_call keep every sync rule."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import math
import subprocess
import sys
import threading
from collections.abc import Callable, Coroutine, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog

from hookreg import (
    AsyncHookError,
    DeciderOnError,
    FinishReason,
    HookPoint,
    HookRegError,
    HookRegistry,
    HookResult,
    HookReturnError,
    HookStyle,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    OnInteractionContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    RequestPatch,
    StopContext,
    StopRun,
    TextDeltaContext,
    ToolCallResolution,
    ToolErrorKind,
    TransformToolResultContext,
    TurnAction,
)

ROOT = Path(__file__).resolve().parent.parent

Does = Callable[[Any], object]
"""What a scenario hook does with its context."""

TOOL = PreToolCallDecideContext(tool_name="bash", args={"command": "ls"}, call_id="c1")
TURN = ModelTurnFinishedContext(
    turn=1, text="done", tool_calls=(), finish_reason=FinishReason.STOP, max_tokens=None, usage={}
)
INVALID = InvalidToolCallContext(
    tool_name="bsh", args={}, call_id="c2", available_tools=("bash",), error="unknown tool"
)
STOPPING = StopContext(response_text="done", continuation_count=0)
QUESTION = OnInteractionContext(question="run rm?", options=("yes", "no"), tool_name="bash")
SELECT = ModelSelectContext(default_model="small", selected_model="small", patch=RequestPatch())
TOOL_ERROR = OnToolErrorContext(
    tool_name="bash", args={}, call_id="c3", error=OSError("disk"), kind=ToolErrorKind.EXCEPTION, message="failed"
)
RESULT = TransformToolResultContext(tool_name="bash", args={}, call_id="c4", raw_result=[1, 2], presentation="[1, 2]")
MODEL_CALL = PreModelCallContext(prompt="hi", history=(), turn=1, patch=RequestPatch(extra_context=("base",)))
POST = PostToolCallContext(
    tool_name="bash", args={}, call_id="c5", result="ok", raw_result=0, duration_ms=1.0, metadata={}
)
DELTA = TextDeltaContext(delta="he", aggregated="he")

ASYNC_METHOD = {HookStyle.DECIDE: "adecide", HookStyle.TRANSFORM: "atransform", HookStyle.OBSERVE: "anotify"}
SYNC_METHOD = {HookStyle.DECIDE: "decide", HookStyle.TRANSFORM: "transform", HookStyle.OBSERVE: "notify"}
POLICIES = {
    HookStyle.DECIDE: ("deny", "raise", "ignore"),
    HookStyle.TRANSFORM: ("raise", "ignore"),
    HookStyle.OBSERVE: ("ignore", "raise"),
}


class Raise:
    """A hook behaviour that raises a fresh exception and remembers it, to check it propagates as itself."""

    def __init__(self, make: Callable[[], BaseException]) -> None:
        self.make = make
        self.raised: list[BaseException] = []

    def __call__(self, ctx: object) -> object:
        exc = self.make()
        self.raised.append(exc)
        raise exc


def returns(value: object) -> Does:
    """A hook behaviour returning `value`."""
    return lambda ctx: value


@dataclasses.dataclass(frozen=True)
class Hook:
    """One hook of a scenario."""

    point: HookPoint
    name: str
    does: Does
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Scenario:
    """Hooks, and the dispatch to run over them: one point, or a whole tool-call resolution."""

    id: str
    point: HookPoint
    ctx: Any
    hooks: tuple[Hook, ...]
    resolve: bool = False
    policy: str | None = None
    failure: str | None = None


@dataclasses.dataclass(frozen=True)
class Kit:
    """What a scenario needs to know about one point: a context, a pass, an action and a wrong return."""

    point: HookPoint
    ctx: Any
    passes: Does
    acts: Callable[[str], Does]
    wrong: object


def _rewrite(tag: str) -> Does:
    return lambda ctx: {**ctx.args, "trail": f"{ctx.args.get('trail', '')}{tag}"}


def _patch(tag: str) -> Does:
    # max_tokens differs per hook, so chained patches also log patch_conflict.
    return lambda ctx: RequestPatch(extra_context=(tag,), max_tokens=100 + len(ctx.patch.extra_context))


KITS = (
    Kit(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL, returns(HookResult.allow()), lambda t: returns(HookResult.deny(t)), True),
    Kit(
        HookPoint.MODEL_TURN_FINISHED,
        TURN,
        returns(TurnAction.continue_run()),
        lambda t: returns(TurnAction.retry_with_feedback(t)),
        None,
    ),
    Kit(HookPoint.INVALID_TOOL_CALL, INVALID, returns(None), lambda t: returns(InvalidToolCallAction.repair(t)), "x"),
    Kit(HookPoint.STOP, STOPPING, returns(HookResult.allow()), lambda t: returns(HookResult.deny(t)), None),
    Kit(HookPoint.ON_INTERACTION, QUESTION, returns(HookResult.allow()), lambda t: returns(HookResult.ask(t)), "yes"),
    Kit(HookPoint.TRANSFORM_TOOL_INPUT, TOOL, returns(None), _rewrite, ["not", "a", "mapping"]),
    Kit(HookPoint.MODEL_SELECT, SELECT, returns(None), lambda t: lambda ctx: f"{ctx.selected_model}>{t}", 3),
    Kit(HookPoint.ON_TOOL_ERROR, TOOL_ERROR, returns(None), lambda t: lambda ctx: f"{ctx.message}+{t}", b"bytes"),
    Kit(HookPoint.TRANSFORM_TOOL_RESULT, RESULT, returns(None), lambda t: lambda ctx: f"{ctx.presentation}+{t}", 1.5),
    Kit(HookPoint.PRE_MODEL_CALL, MODEL_CALL, returns(None), _patch, {"temperature": 0}),
    Kit(HookPoint.POST_TOOL_CALL, POST, returns(None), lambda t: returns(None), "done"),
    Kit(HookPoint.TEXT_DELTA, DELTA, returns(None), lambda t: returns(None), False),
)

FAILURES: dict[str, Callable[[Kit], Does]] = {
    "raises": lambda kit: Raise(lambda: ValueError("boom")),
    "wrong-return": lambda kit: returns(kit.wrong),
    "stops": lambda kit: Raise(lambda: StopRun("enough")),
    "interrupted": lambda kit: Raise(KeyboardInterrupt),
    "cancelled": lambda kit: Raise(asyncio.CancelledError),
}


def _point_scenarios(kit: Kit) -> list[Scenario]:
    point, style = kit.point, kit.point.style
    first = kit.passes if style is HookStyle.DECIDE else kit.acts("a")

    def scenario(name: str, *hooks: Hook, policy: str | None = None, failure: str | None = None) -> Scenario:
        return Scenario(f"{point.value}-{name}", point, kit.ctx, hooks, policy=policy, failure=failure)

    found = [
        scenario("no-hooks"),
        scenario("all-pass", Hook(point, "a", kit.passes), Hook(point, "b", kit.passes)),
        scenario(
            "order",
            Hook(point, "a", kit.passes),
            Hook(point, "b", kit.acts("b")),
            Hook(point, "c", kit.acts("c"), {"priority": 5}),
            Hook(point, "d", kit.acts("d")),
        ),
    ]
    for policy in (None, *POLICIES[style]):
        options = {} if policy is None else {"on_error": policy}
        for failure, make in FAILURES.items():
            hooks = (
                Hook(point, "a", first),
                Hook(point, "b", make(kit), options),
                Hook(point, "c", kit.acts("c")),
                Hook(point, "d", kit.acts("d")),
            )
            name = f"{failure}-on_error={policy or 'default'}"
            found.append(scenario(name, *hooks, policy=policy or POLICIES[style][0], failure=failure))
    if point.is_tool_scoped:
        found.append(
            scenario(
                "tools",
                Hook(point, "a", kit.acts("a"), {"tools": "python"}),
                Hook(point, "b", kit.acts("b"), {"tools": ["ba*"]}),
            )
        )
    if point in {HookPoint.PRE_TOOL_CALL_DECIDE, HookPoint.STOP, HookPoint.ON_INTERACTION}:
        found.append(
            scenario(
                "allow-message", Hook(point, "a", returns(HookResult.allow("noted"))), Hook(point, "b", kit.passes)
            )
        )
    return found


def _resolve_scenarios() -> list[Scenario]:
    rewrite = Hook(HookPoint.TRANSFORM_TOOL_INPUT, "rewrite", _rewrite("r"))
    observe = Hook(HookPoint.PERMISSION_DENIED, "audit", returns(None))

    def gate(does: Does, **options: Any) -> Hook:
        return Hook(HookPoint.PRE_TOOL_CALL_DECIDE, "gate", does, options)

    cases = {
        "none": (),
        "rewrite-allow": (rewrite, gate(returns(HookResult.allow())), observe),
        "rewrite-deny": (rewrite, gate(returns(HookResult.deny("no"))), observe),
        "rewrite-ask": (rewrite, gate(returns(HookResult.ask("sure?"))), observe),
        "rewrite-gate-fails": (rewrite, gate(Raise(lambda: ValueError("boom"))), observe),
        "rewrite-gate-stops": (rewrite, gate(Raise(lambda: StopRun("halt"))), observe),
        "rewrite-transform-stops": (
            rewrite,
            Hook(HookPoint.TRANSFORM_TOOL_INPUT, "stopper", Raise(lambda: StopRun("halt"))),
            observe,
        ),
        "rewrite-observer-stops": (
            rewrite,
            gate(returns(HookResult.deny("no"))),
            Hook(HookPoint.PERMISSION_DENIED, "audit", Raise(lambda: StopRun("halt"))),
        ),
    }
    return [
        Scenario(f"resolve-{name}", HookPoint.TRANSFORM_TOOL_INPUT, TOOL, hooks, True) for name, hooks in cases.items()
    ]


SCENARIOS = [scenario for kit in KITS for scenario in _point_scenarios(kit)] + _resolve_scenarios()
ASYNC_MODES = ("async-hooks", "mixed-hooks", "sync-hooks-awaited")


def _callable(hook: Hook, calls: list[str], is_async: bool) -> Callable[[Any], object]:
    def sync_hook(ctx: Any) -> object:
        calls.append(hook.name)
        return hook.does(ctx)

    async def async_hook(ctx: Any) -> object:
        calls.append(hook.name)
        await asyncio.sleep(0)  # a real suspension point
        return hook.does(ctx)

    return async_hook if is_async else sync_hook


def _describe(scenario: Scenario, value: object, raised: BaseException | None) -> dict[str, object]:
    """Everything a caller can observe about a dispatch's outcome."""
    if raised is not None:
        own = [exc for hook in scenario.hooks if isinstance(hook.does, Raise) for exc in hook.does.raised]
        return {
            "raised": type(raised),
            "message": str(raised),
            "notes": getattr(raised, "__notes__", None),
            "is_the_hooks_own": any(raised is exc for exc in own),
            "hook": getattr(raised, "hook", None),
            "effective_args": getattr(raised, "effective_args", None),
            "cause": type(raised.__cause__),
        }
    shared = (HookResult.allow(), TurnAction.continue_run(), InvalidToolCallAction.fail())
    fields = ("args", "selected_model", "message", "presentation", "patch")
    originals = [getattr(scenario.ctx, name) for name in fields if hasattr(scenario.ctx, name)]
    if isinstance(value, ToolCallResolution):
        return {
            "args": dict(value.args),
            "args_are_the_callers": value.args is scenario.ctx.args,
            "result": repr(value.result),
            "rewritten": value.rewritten,
        }
    return {
        "returned": repr(value),
        "type": type(value),
        "is_shared_pass": any(value is known for known in shared),
        "is_the_contexts_field": any(value is known for known in originals),
    }


def _run(scenario: Scenario, mode: str) -> tuple[dict[str, object], list[str], list[MutableMapping[str, Any]]]:
    """Dispatch `scenario` on the sync surface (mode "sync") or the async one; return what a caller sees."""
    registry = HookRegistry()
    calls: list[str] = []
    for index, hook in enumerate(scenario.hooks):
        is_async = mode == "async-hooks" or (mode == "mixed-hooks" and index % 2 == 0)
        registry.register(hook.point, _callable(hook, calls, is_async), name=hook.name, **hook.options)
    value: object = None
    raised: BaseException | None = None
    with structlog.testing.capture_logs() as logs:
        if mode == "sync":
            try:
                if scenario.resolve:
                    value = registry.resolve_tool_call(scenario.ctx)
                else:
                    value = getattr(registry, SYNC_METHOD[scenario.point.style])(scenario.point, scenario.ctx)
            except BaseException as exc:  # noqa: BLE001 -- KeyboardInterrupt and CancelledError are outcomes here
                raised = exc
        else:

            async def dispatch() -> tuple[object, BaseException | None]:
                try:
                    if scenario.resolve:
                        return await registry.aresolve_tool_call(scenario.ctx), None
                    method = getattr(registry, ASYNC_METHOD[scenario.point.style])
                    return await method(scenario.point, scenario.ctx), None
                except BaseException as exc:  # noqa: BLE001 -- caught inside the task, so nothing crosses asyncio.run
                    return None, exc

            value, raised = asyncio.run(dispatch())
    return _describe(scenario, value, raised), calls, logs


@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_async_surface_matches_sync_surface(scenario: Scenario, mode: str) -> None:
    """Awaiting a dispatch returns, raises, calls and logs exactly what the sync dispatch does."""
    assert _run(scenario, mode) == _run(scenario, "sync")


def test_parity_scenarios_cover_every_point_style_policy_and_failure() -> None:
    """The parity suite holds, for every kit's point, a scenario per failure policy and kind of failure."""
    covered = {(s.point, s.policy, s.failure) for s in SCENARIOS if s.failure is not None}
    expected = {
        (kit.point, policy, failure) for kit in KITS for policy in POLICIES[kit.point.style] for failure in FAILURES
    }
    assert covered == expected
    assert {kit.point.style for kit in KITS} == set(HookStyle)


def test_parity_scenarios_see_real_outcomes() -> None:
    """The parity scenarios end in denials, rewrites, failures, stops and interrupts, not only in passes."""
    outcomes = [_run(scenario, "sync")[0] for scenario in SCENARIOS]
    raised = {outcome.get("raised") for outcome in outcomes}
    assert {ValueError, StopRun, KeyboardInterrupt, asyncio.CancelledError, TimeoutError} - raised == {TimeoutError}
    assert any(issubclass(kind, TypeError) for kind in raised if isinstance(kind, type))
    assert any("DENY" in str(outcome.get("returned")) for outcome in outcomes)
    assert any("ASK" in str(outcome.get("returned")) for outcome in outcomes)
    assert any(outcome.get("rewritten") is True for outcome in outcomes)
    assert any(outcome.get("effective_args") for outcome in outcomes)


# --- registration --------------------------------------------------------------


class AsyncGate:
    """An object whose __call__ is async."""

    async def __call__(self, ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("object")


async def _deny(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.deny(f"no {ctx.tool_name}")


def test_async_callables_register_through_the_same_decorators() -> None:
    """An async def, an object with an async __call__ and a partial of either register as async hooks."""
    registry = HookRegistry()

    @registry.pre_tool_call_decide(tools="bash", timeout=5)
    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    assert registry.pre_tool_call_decide(_deny) is _deny
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, AsyncGate(), name="object")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, functools.partial(_deny), name="partial")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, functools.partial(AsyncGate()), name="partial-object")
    hooks = registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE)
    assert [reg.is_async for reg in hooks] == [True] * 5
    assert hooks[0].callback is gate
    assert hooks[0].timeout == 5.0


class Checker:
    """Holds an async method, registered bound."""

    async def check(self, ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("method")


def test_bound_async_methods_are_async_hooks() -> None:
    """A bound async method, bare or in a partial, is an async hook and is awaited."""
    registry = HookRegistry()
    checker = Checker()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, checker.check, timeout=1)
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, functools.partial(checker.check), name="partial")
    assert [reg.is_async for reg in registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE)] == [True, True]
    result = asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
    assert (result.reason, result.decided_by) == ("method", "Checker.check")


def test_sync_callables_are_not_async() -> None:
    """A plain function, a lambda and a sync callable object register as sync hooks."""
    registry = HookRegistry()
    registry.register(HookPoint.POST_TURN, lambda ctx: None)
    registry.register(HookPoint.POST_TURN, functools.partial(print, end=""))
    assert [reg.is_async for reg in registry.callbacks(HookPoint.POST_TURN)] == [False, False]


@pytest.mark.parametrize(
    "fn",
    [lambda ctx: None, functools.partial(lambda ctx: None), print],
    ids=["lambda", "partial", "builtin"],
)
def test_timeout_on_a_sync_callable_is_refused(fn: Callable[[object], object]) -> None:
    """timeout= on a sync callable is a ValueError at registration, naming the callable."""
    registry = HookRegistry()
    with pytest.raises(ValueError, match="timeout= applies only to async callables") as info:
        registry.register(HookPoint.POST_TURN, fn, timeout=1.0)
    assert isinstance(info.value, HookRegError)
    assert info.value.callback is fn
    assert not registry.has_hooks(HookPoint.POST_TURN)


def test_timeout_on_a_sync_function_is_refused_when_the_decorator_is_applied() -> None:
    """The decorator refuses timeout= on a sync function as soon as it is applied, naming the function."""
    registry = HookRegistry()
    decorator = registry.pre_tool_call_decide(timeout=1.0)

    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    with pytest.raises(ValueError, match=r"Cannot register .*gate.*: timeout= applies only to async"):
        decorator(gate)
    assert not registry.has_hooks(HookPoint.PRE_TOOL_CALL_DECIDE)


@pytest.mark.parametrize("timeout", [0, -1, 0.0, math.nan, math.inf, -math.inf])
def test_a_timeout_that_is_not_positive_and_finite_is_refused(timeout: float) -> None:
    """timeout= must be a positive, finite number of seconds."""
    registry = HookRegistry()
    with pytest.raises(ValueError, match="must be a positive, finite number of seconds"):
        registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, _deny, timeout=timeout)
    assert not registry.has_hooks(HookPoint.PRE_TOOL_CALL_DECIDE)


@pytest.mark.parametrize("timeout", ["1", True, [1]])
def test_a_timeout_that_is_not_a_number_is_a_type_error(timeout: object) -> None:
    """timeout= of the wrong type is a TypeError."""
    registry = HookRegistry()
    with pytest.raises(TypeError, match="timeout= must be a number of seconds"):
        registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, _deny, timeout=timeout)  # type: ignore[call-overload]


# --- sync dispatch of async hooks ---------------------------------------------------


def _calls_of(calls: list[str], name: str) -> Callable[[object], None]:
    return lambda ctx: calls.append(name)


@pytest.mark.parametrize(
    ("point", "ctx", "method"),
    [
        (HookPoint.PRE_TOOL_CALL_DECIDE, TOOL, "adecide"),
        (HookPoint.TRANSFORM_TOOL_INPUT, TOOL, "atransform"),
        (HookPoint.POST_TOOL_CALL, POST, "anotify"),
    ],
)
def test_sync_dispatch_of_an_async_hook_raises_before_running_anything(
    point: HookPoint, ctx: object, method: str
) -> None:
    """AsyncHookError names the async hook and the a-method to call; no hook has run."""
    registry = HookRegistry()
    calls: list[str] = []
    registry.register(point, _calls_of(calls, "sync"), priority=1)

    async def slow_audit(ctx: object) -> None:
        calls.append("async")

    registry.register(point, slow_audit, tools="python")  # filtered out for bash: still refused
    with pytest.raises(
        AsyncHookError, match=rf"hook '.*slow_audit' is async\. Call `await registry\.{method}\("
    ) as info:
        getattr(registry, SYNC_METHOD[point.style])(point, ctx)
    assert isinstance(info.value, TypeError)
    assert info.value.point == point
    assert info.value.callback is slow_audit
    assert calls == []


@pytest.mark.parametrize(
    "point", [HookPoint.TRANSFORM_TOOL_INPUT, HookPoint.PRE_TOOL_CALL_DECIDE, HookPoint.PERMISSION_DENIED]
)
def test_resolve_tool_call_checks_its_three_points_first(point: HookPoint) -> None:
    """An async hook at any of its three points makes resolve_tool_call refuse, naming aresolve_tool_call, at once."""
    registry = HookRegistry()
    calls: list[str] = []
    registry.transform_tool_input(_calls_of(calls, "transform"))

    async def late(ctx: object) -> None:
        calls.append("late")

    registry.register(point, late, name="late")
    with pytest.raises(AsyncHookError, match=r"hook 'late' is async\. Call `await registry\.aresolve_tool_call\("):
        registry.resolve_tool_call(TOOL)
    assert calls == []


@pytest.mark.parametrize("surface", ["sync", "async"])
def test_a_sync_hook_returning_a_coroutine_is_a_wrong_return_on_both_surfaces(surface: str) -> None:
    """A sync callable handing back a coroutine fails as a wrong return, and the coroutine is closed, never awaited."""
    registry = HookRegistry()
    made: list[Coroutine[Any, Any, HookResult]] = []

    def forgot_async(ctx: PreToolCallDecideContext) -> Any:
        made.append(_deny(ctx))
        return made[-1]

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, forgot_async, name="forgot", on_error="raise")

    def dispatch() -> object:
        if surface == "async":
            return asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
        return registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)

    with pytest.raises(HookReturnError, match=r"returned coroutine; expected HookResult.*make it an async def"):
        dispatch()
    assert inspect.getcoroutinestate(made[0]) == inspect.CORO_CLOSED


def test_an_async_hook_in_an_included_registry_makes_the_parent_refuse_sync_dispatch() -> None:
    """Inclusion is live: an async hook added to an included registry makes the parent's sync dispatch refuse."""
    parent, plugin = HookRegistry(), HookRegistry()
    parent.include(plugin)
    assert parent.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL) is HookResult.allow()
    plugin.register(HookPoint.PRE_TOOL_CALL_DECIDE, _deny, name="plugin-gate")
    with pytest.raises(AsyncHookError, match=r"hook 'plugin-gate' is async\. Call `await registry\.adecide"):
        parent.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
    assert asyncio.run(parent.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)).decided_by == "plugin-gate"


def test_an_async_dispatch_runs_on_the_snapshot_it_started_with() -> None:
    """A hook registered while an async hook is suspended applies from the next dispatch, not the running one."""
    registry = HookRegistry()
    calls: list[str] = []

    async def registers_another(ctx: PostToolCallContext) -> None:
        calls.append("first")
        registry.register(HookPoint.POST_TOOL_CALL, _calls_of(calls, "added"), name="added")
        await asyncio.sleep(0)

    registry.register(HookPoint.POST_TOOL_CALL, registers_another, name="first")

    async def main() -> None:
        await registry.anotify(HookPoint.POST_TOOL_CALL, POST)
        calls.append("|")
        await registry.anotify(HookPoint.POST_TOOL_CALL, POST)

    asyncio.run(main())
    assert calls == ["first", "|", "first", "added"]


# --- sync hooks inline, running loops -------------------------------------------


def test_sync_hooks_are_called_inline_on_the_awaiting_task() -> None:
    """Sync hooks run in the dispatching task's own thread and task: no worker thread, no new task."""
    registry = HookRegistry()
    seen: list[tuple[int, object]] = []

    def sync_gate(ctx: PreToolCallDecideContext) -> HookResult:
        seen.append((threading.get_ident(), asyncio.current_task()))
        return HookResult.allow()

    async def async_gate(ctx: PreToolCallDecideContext) -> HookResult:
        seen.append((threading.get_ident(), asyncio.current_task()))
        return HookResult.allow()

    registry.pre_tool_call_decide(sync_gate)
    registry.pre_tool_call_decide(async_gate)

    async def main() -> object:
        await registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
        return asyncio.current_task()

    task = asyncio.run(main())
    assert seen == [(threading.get_ident(), task)] * 2


def test_dispatch_through_asyncio_run() -> None:
    """Each a-method can be handed straight to asyncio.run from sync code."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(_deny)

    async def rewrite(ctx: PreToolCallDecideContext) -> dict[str, object]:
        return {**ctx.args, "timeout": 5}

    registry.transform_tool_input(rewrite)
    calls: list[str] = []

    async def audit(ctx: PermissionDeniedContext) -> None:
        calls.append(ctx.reason)

    registry.permission_denied(audit)
    assert asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)) == HookResult.deny("no bash")
    assert asyncio.run(registry.atransform(HookPoint.TRANSFORM_TOOL_INPUT, TOOL)) == {"command": "ls", "timeout": 5}
    denied = PermissionDeniedContext(tool_name="bash", args={}, call_id="c1", reason="why", decided_by=None)
    asyncio.run(registry.anotify(HookPoint.PERMISSION_DENIED, denied))
    resolution = asyncio.run(registry.aresolve_tool_call(TOOL))
    assert (dict(resolution.args), resolution.result.reason, resolution.rewritten) == (
        {"command": "ls", "timeout": 5},
        "no bash",
        True,
    )
    assert calls == ["why", "no bash"]


def test_dispatch_inside_an_already_running_loop() -> None:
    """Inside a running loop (a notebook cell), a-methods await on that loop and sync dispatch still works."""
    registry = HookRegistry()
    loops: list[asyncio.AbstractEventLoop] = []

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        loops.append(asyncio.get_running_loop())
        return HookResult.deny("async")

    def selector(ctx: ModelSelectContext) -> str:
        return "large"

    registry.pre_tool_call_decide(gate)
    registry.model_select(selector)

    async def cell() -> tuple[HookResult, str, str]:
        decided = await registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
        picked = registry.transform(HookPoint.MODEL_SELECT, SELECT)  # sync hooks only: the sync surface works here
        apicked = await registry.atransform(HookPoint.MODEL_SELECT, SELECT)
        return decided, picked, apicked

    loop = asyncio.new_event_loop()
    try:
        decided, picked, apicked = loop.run_until_complete(cell())
    finally:
        loop.close()
    assert (decided.reason, picked, apicked) == ("async", "large", "large")
    assert loops == [loop]


def test_a_method_refuses_a_point_of_another_style() -> None:
    """adecide on an observe point names the a-method that fits, as the sync surface does."""
    registry = HookRegistry()
    with pytest.raises(TypeError, match=r"Call registry\.anotify\(\.\.\.\) instead"):
        asyncio.run(registry.adecide(HookPoint.POST_TOOL_CALL, POST))  # type: ignore[call-overload]


@pytest.mark.parametrize("with_async_hook", [False, True])
def test_a_method_refuses_the_wrong_context(with_async_hook: bool) -> None:
    """A context of another class is a TypeError on the async surface too, whether or not async hooks are held."""
    registry = HookRegistry()
    if with_async_hook:
        registry.pre_tool_call_decide(_deny)
    with pytest.raises(TypeError, match="takes a PreToolCallDecideContext"):
        asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, POST))  # type: ignore[call-overload]


def test_a_method_accepts_the_points_value_string() -> None:
    """The a-methods find a point by its value string, like the sync ones."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(_deny)
    result = asyncio.run(registry.adecide("pre_tool_call_decide", TOOL))  # type: ignore[call-overload]
    assert result == HookResult.deny("no bash")


# --- timeouts -------------------------------------------------------------------------


def _stuck(cleanups: list[str]) -> Callable[[Any], Coroutine[Any, Any, object]]:
    """An async hook that waits on an event nobody sets: only its timeout (or a cancel) ends it."""

    async def stuck(ctx: object) -> object:
        try:
            await asyncio.Event().wait()
        finally:
            cleanups.append("cancelled")
        return None

    return stuck


@dataclasses.dataclass(frozen=True)
class Expiry:
    """A timeout case: the point, the policy, what the next hook returns and what the caller gets."""

    point: HookPoint
    ctx: Any
    on_error: str | None
    then: Does
    expected: object  # an exception type, or what _verdict() makes of the returned value


def _verdict(value: object) -> object:
    if isinstance(value, HookResult):
        return value.decision.value, value.decided_by
    if isinstance(value, InvalidToolCallAction):
        return value.kind, value.decided_by
    return value


EXPIRIES = [
    Expiry(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL, None, returns(HookResult.allow()), ("deny", "stuck")),
    Expiry(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL, "ignore", returns(HookResult.deny("next")), ("deny", "after")),
    Expiry(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL, "raise", returns(HookResult.allow()), TimeoutError),
    Expiry(HookPoint.MODEL_TURN_FINISHED, TURN, None, returns(TurnAction.continue_run()), StopRun),
    Expiry(HookPoint.INVALID_TOOL_CALL, INVALID, None, returns(InvalidToolCallAction.skip("x")), ("fail", "stuck")),
    Expiry(HookPoint.STOP, STOPPING, None, returns(HookResult.deny("keep going")), ("allow", "stuck")),
    Expiry(HookPoint.TRANSFORM_TOOL_INPUT, TOOL, None, _rewrite("n"), TimeoutError),
    Expiry(HookPoint.TRANSFORM_TOOL_INPUT, TOOL, "ignore", _rewrite("n"), {"command": "ls", "trail": "pn"}),
    Expiry(HookPoint.POST_TOOL_CALL, POST, None, returns(None), None),
    Expiry(HookPoint.POST_TOOL_CALL, POST, "raise", returns(None), TimeoutError),
]


@pytest.mark.parametrize("case", EXPIRIES, ids=[f"{c.point.value}-{c.on_error or 'default'}" for c in EXPIRIES])
def test_an_expired_timeout_is_a_failure_handled_by_on_error(case: Expiry) -> None:
    """A hook past its timeout is cancelled and handled by on_error (deciders fail closed); hook_timed_out is logged."""
    registry = HookRegistry()
    calls: list[str] = []
    cleanups: list[str] = []
    if case.point.style is HookStyle.TRANSFORM:
        registry.register(case.point, _rewrite("p"), name="first")
    options: dict[str, Any] = {} if case.on_error is None else {"on_error": case.on_error}
    registry.register(case.point, _stuck(cleanups), name="stuck", timeout=0.01, **options)

    def after(ctx: object) -> object:
        calls.append("after")
        return case.then(ctx)

    registry.register(case.point, after, name="after")
    method = getattr(registry, ASYNC_METHOD[case.point.style])
    with structlog.testing.capture_logs() as logs:
        if case.expected is StopRun:
            with pytest.raises(StopRun, match="stuck") as stopped:
                asyncio.run(method(case.point, case.ctx))
            assert stopped.value.hook == "stuck"
            assert isinstance(stopped.value.__cause__, TimeoutError)
        elif case.expected is TimeoutError:
            with pytest.raises(TimeoutError) as timed_out:
                asyncio.run(method(case.point, case.ctx))
            assert timed_out.value.__notes__ == [f"hookreg: raised by hook 'stuck' at {case.point.value}"]
        else:
            assert _verdict(asyncio.run(method(case.point, case.ctx))) == case.expected
    assert cleanups == ["cancelled"]
    assert [log for log in logs if log["hook"] == "stuck"] == [
        {"event": "hook_timed_out", "log_level": "warning", "point": case.point.value, "hook": "stuck", "timeout": 0.01}
    ]
    runs_on = case.on_error == "ignore" or (case.on_error is None and case.point.style is HookStyle.OBSERVE)
    assert calls == (["after"] if runs_on else [])


def test_a_hook_that_finishes_within_its_timeout_is_not_a_failure() -> None:
    """A hook that returns before its deadline decides normally and logs nothing."""
    registry = HookRegistry()

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        await asyncio.sleep(0)
        return HookResult.deny("checked")

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, name="gate", timeout=60)
    with structlog.testing.capture_logs() as logs:
        result = asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
    assert (result.reason, result.decided_by) == ("checked", "gate")
    assert [log["event"] for log in logs] == ["hook_denied"]


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_a_timeout_error_the_hook_raises_itself_is_an_ordinary_failure(timeout: float | None) -> None:
    """A TimeoutError raised by the hook's own code, before any deadline, logs hook_failed, not hook_timed_out."""
    registry = HookRegistry()

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        raise TimeoutError("upstream")

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, name="gate", timeout=timeout)
    with structlog.testing.capture_logs() as logs:
        result = asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
    assert (result.allowed, result.decided_by) == (False, "gate")
    assert logs == [
        {
            "event": "hook_failed",
            "log_level": "error",
            "point": "pre_tool_call_decide",
            "hook": "gate",
            "exc_type": "TimeoutError",
        }
    ]


# --- signals that propagate untouched ------------------------------------------------


@pytest.mark.parametrize("policy", ["deny", "raise", "ignore"])
@pytest.mark.parametrize(
    "make", [asyncio.CancelledError, KeyboardInterrupt, lambda: StopRun("halt")], ids=["cancel", "interrupt", "stop"]
)
@pytest.mark.parametrize("timeout", [None, 60.0])
def test_signals_from_async_hooks_propagate_as_themselves(
    make: Callable[[], BaseException], policy: DeciderOnError, timeout: float | None
) -> None:
    """CancelledError, KeyboardInterrupt and StopRun leave an async hook as themselves, with no note or failure log."""
    registry = HookRegistry()
    signal = make()
    calls: list[str] = []

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        raise signal

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, name="gate", on_error=policy, timeout=timeout)
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, _calls_of(calls, "later"))

    async def main() -> BaseException | None:
        try:
            await registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
        except BaseException as exc:  # noqa: BLE001 -- the signal itself is what is checked
            return exc
        return None

    with structlog.testing.capture_logs() as logs:
        caught = asyncio.run(main())
    assert caught is signal
    assert getattr(caught, "__notes__", None) is None
    assert calls == []
    if isinstance(signal, StopRun):
        assert signal.hook == "gate"
        assert [log["event"] for log in logs] == ["run_stopped"]
    else:
        assert logs == []


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_a_cancelled_dispatch_leaves_the_registry_as_it_was(timeout: float | None) -> None:
    """Cancelling a dispatch mid-hook raises CancelledError, runs no later hook, logs nothing and changes nothing."""
    registry = HookRegistry()
    calls: list[str] = []
    gates: dict[str, asyncio.Event] = {}

    async def waits(ctx: PreToolCallDecideContext) -> HookResult:
        calls.append("waits")
        gates["started"].set()
        await gates["release"].wait()
        return HookResult.allow()

    def first(ctx: PreToolCallDecideContext) -> HookResult:
        calls.append("first")
        return HookResult.allow()

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, first, name="first")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, waits, name="waits", timeout=timeout)
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("last"), name="last")
    before = registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE)

    async def main() -> HookResult:
        gates.update(started=asyncio.Event(), release=asyncio.Event())
        task = asyncio.create_task(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
        await gates["started"].wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert calls == ["first", "waits"]
        gates["release"].set()
        return await registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)

    with structlog.testing.capture_logs() as logs:
        again = asyncio.run(main())
    assert registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE) == before
    assert (again.reason, again.decided_by) == ("last", "last")
    assert calls == ["first", "waits", "first", "waits"]
    assert [log["event"] for log in logs] == ["hook_denied"]


# --- the example ---------------------------------------------------------------------


def test_async_example_runs() -> None:
    """examples/async_hooks.py runs and prints what its comments promise."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "async_hooks.py")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "run http_get {'url': 'https://docs.python.org/3/', 'timeout': 10}",
        "denied by allowlist: evil.example is not on the allowlist",
        "denied by scanner: hook 'scanner' timed out; the action was denied",
        "audit: 2 denied call(s)",
        "sync dispatch refused: Cannot dispatch pre_tool_call_decide synchronously: hook 'allowlist' is async. "
        "Call `await registry.aresolve_tool_call(...)` instead.",
    ]
