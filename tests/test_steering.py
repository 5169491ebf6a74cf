"""Run-level steering on both surfaces: RunContext, turn actions, invalid calls, request patches, models, rewrites."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import pytest
import structlog

from hookreg import (
    FinishReason,
    HookPoint,
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    PermissionDeniedContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    ReasoningDeltaContext,
    RequestPatch,
    RunContext,
    Scratchpad,
    StopRun,
    TextDeltaContext,
    ToolCallDeltaContext,
    TransformToolResultContext,
    TurnAction,
)

_C = TypeVar("_C")
_R = TypeVar("_R")


class Surface:
    """Dispatch through the sync surface, or through the async one with every hook made async."""

    def __init__(self, is_async: bool) -> None:
        self.is_async = is_async

    def hook(self, fn: Callable[[_C], _R]) -> Callable[[_C], _R | Awaitable[_R]]:
        """Return `fn` itself on the sync surface, an async hook calling it on the async one."""
        if not self.is_async:
            return fn

        async def async_hook(ctx: _C) -> _R:
            await asyncio.sleep(0)  # a real suspension point
            return fn(ctx)

        return async_hook

    def _call(self, registry: HookRegistry, method: str, *args: object) -> Any:
        if self.is_async:
            return asyncio.run(getattr(registry, f"a{method}")(*args))
        return getattr(registry, method)(*args)

    def decide(self, registry: HookRegistry, point: HookPoint, ctx: object) -> Any:
        """`decide` or `adecide`."""
        return self._call(registry, "decide", point, ctx)

    def transform(self, registry: HookRegistry, point: HookPoint, ctx: object) -> Any:
        """`transform` or `atransform`."""
        return self._call(registry, "transform", point, ctx)

    def notify(self, registry: HookRegistry, point: HookPoint, ctx: object) -> None:
        """`notify` or `anotify`."""
        self._call(registry, "notify", point, ctx)

    def resolve(self, registry: HookRegistry, ctx: PreToolCallDecideContext) -> Any:
        """`resolve_tool_call` or `aresolve_tool_call`."""
        return self._call(registry, "resolve_tool_call", ctx)


@pytest.fixture(params=["sync", "async"])
def surface(request: pytest.FixtureRequest) -> Surface:
    """Each steering test runs on both surfaces."""
    return Surface(request.param == "async")


def finished(text: str, run: RunContext | None = None) -> ModelTurnFinishedContext:
    """A finished model turn with `text`."""
    return ModelTurnFinishedContext(
        turn=1,
        text=text,
        tool_calls=(),
        finish_reason=FinishReason.STOP,
        max_tokens=None,
        usage={},
        run=run or RunContext(),
    )


def tool_call(**args: object) -> PreToolCallDecideContext:
    """A `bash` call with `args`."""
    return PreToolCallDecideContext(tool_name="bash", args=args, call_id="call-1")


def model_call(patch: RequestPatch | None = None) -> PreModelCallContext:
    """A model request about to be sent, with the harness's own `patch`."""
    return PreModelCallContext(prompt="hi", history=(), turn=1, patch=patch or RequestPatch())


def record(calls: list[str], name: str, value: _R) -> Callable[[object], _R]:
    """A hook body that records `name` and returns `value`."""

    def body(ctx: object) -> _R:
        calls.append(name)
        return value

    return body


def stopper(calls: list[str], name: str) -> Callable[[object], Any]:
    """A hook body that records `name` and stops the run."""

    def body(ctx: object) -> Any:
        calls.append(name)
        raise StopRun(f"{name} stops")

    return body


def test_the_async_surface_runs_async_hooks(surface: Surface) -> None:
    """On the async surface every hook is async (the sync dispatch refuses it); on the sync one none is."""
    registry = HookRegistry()
    registry.register(HookPoint.MODEL_SELECT, surface.hook(lambda ctx: "large"))
    assert [reg.is_async for reg in registry.callbacks(HookPoint.MODEL_SELECT)] == [surface.is_async]
    assert surface.transform(registry, HookPoint.MODEL_SELECT, _select_ctx()) == "large"


# --- RunContext and Scratchpad ------------------------------------------------------


class Budget(int):
    """A scratchpad value: tokens left."""


class Count(int):
    """A scratchpad value: a counter."""


class Notes(tuple[str, ...]):
    """A scratchpad value: notes so far."""


def test_scratchpad_insert_get_remove_and_contains() -> None:
    """Values are stored under their exact class: get, `in`, insert over, remove."""
    pad = Scratchpad()
    assert pad.get(Budget) is None
    assert Budget not in pad
    pad.insert(Budget(100))
    pad.insert(Budget(80))  # replaces
    assert pad.get(Budget) == 80
    assert Budget in pad
    assert pad.get(int) is None  # keyed by exact class, not by base class
    assert pad.remove(Budget) == 80
    assert pad.remove(Budget) is None
    assert Budget not in pad


def test_scratchpad_update_starts_from_a_fresh_instance_and_stores_the_result() -> None:
    """update() hands fn T() when nothing is stored, stores what fn returns and returns it."""
    pad = Scratchpad()
    seen: list[object] = []

    def add_note(notes: Notes) -> Notes:
        seen.append(notes)
        return Notes((*notes, "checked"))

    assert pad.update(Notes, add_note) == ("checked",)
    assert pad.update(Notes, add_note) == ("checked", "checked")
    assert seen == [(), ("checked",)]
    assert pad.get(Notes) == ("checked", "checked")


def test_scratchpad_update_is_atomic_under_threads() -> None:
    """Concurrent update() calls never lose an increment, even when fn yields the GIL between read and write."""
    pad = Scratchpad()
    threads, per_thread = 8, 200
    start = threading.Barrier(threads)

    def bump(count: Count) -> Count:
        time.sleep(0)  # yield to other threads mid-update: a non-atomic update would lose increments
        return Count(count + 1)

    def work() -> None:
        start.wait()
        for _ in range(per_thread):
            pad.update(Count, bump)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert pad.get(Count) == threads * per_thread


def test_scratchpad_update_is_reentrant() -> None:
    """fn may itself read and update the scratchpad without deadlocking."""
    pad = Scratchpad()
    pad.insert(Budget(10))

    def spend(count: Count) -> Count:
        pad.update(Budget, lambda budget: Budget(budget - 1))
        return Count(count + (pad.get(Budget) or 0))

    assert pad.update(Count, spend) == 9
    assert pad.get(Budget) == 9


def test_a_detached_run_is_fresh_and_replace_keeps_its_scratchpad() -> None:
    """RunContext() is a new run with its own scratchpad; replace(run, turn=n) keeps the scratchpad."""
    first, second = RunContext(), RunContext()
    assert first.run_id != second.run_id
    assert (first.session_id, first.turn, first.depth) == (first.run_id, 0, 0)
    assert first.scratchpad is not second.scratchpad
    later = dataclasses.replace(first, turn=3)
    assert (later.turn, later.run_id, later.scratchpad) == (3, first.run_id, first.scratchpad)


def test_scratchpad_values_are_isolated_per_run(surface: Surface) -> None:
    """A hook counting in ctx.run.scratchpad counts per run, across turns of the same run."""
    registry = HookRegistry()

    def count_turns(ctx: ModelTurnFinishedContext) -> TurnAction:
        ctx.run.scratchpad.update(Count, lambda count: Count(count + 1))
        return TurnAction.continue_run()

    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(count_turns))
    run_a, run_b = RunContext(), RunContext()
    surface.decide(registry, HookPoint.MODEL_TURN_FINISHED, finished("a", run_a))
    surface.decide(registry, HookPoint.MODEL_TURN_FINISHED, finished("a", dataclasses.replace(run_a, turn=2)))
    surface.decide(registry, HookPoint.MODEL_TURN_FINISHED, finished("b", run_b))
    assert (run_a.scratchpad.get(Count), run_b.scratchpad.get(Count)) == (2, 1)


# --- the "retry on marker" hook, translated from rig ---------------------------------


class Retries(dict[int, int]):
    """Retries spent so far in one run, per hook instance (keyed by the instance's id)."""


class RetryOnMarker:
    """Retry a turn whose text holds `marker`, at most `limit` times per run; then stop the run."""

    def __init__(self, marker: str, limit: int) -> None:
        self.marker = marker
        self.limit = limit

    def __call__(self, ctx: ModelTurnFinishedContext) -> TurnAction:
        if self.marker not in ctx.text:
            return TurnAction.continue_run()
        me = id(self)
        spent = ctx.run.scratchpad.update(Retries, lambda retries: Retries({**retries, me: retries.get(me, 0) + 1}))
        if spent[me] > self.limit:
            msg = f"{self.marker!r} still in the answer; retry limit {self.limit} reached"
            raise StopRun(msg)
        return TurnAction.retry_with_feedback(f"Remove {self.marker!r} and answer again.")


def _drive(surface: Surface, registry: HookRegistry, run: RunContext, texts: list[str]) -> list[object]:
    """Feed finished turns to the registry as a harness would; a StopRun ends the run."""
    outcomes: list[object] = []
    for turn, text in enumerate(texts, start=1):
        ctx = finished(text, dataclasses.replace(run, turn=turn))
        try:
            outcomes.append(surface.decide(registry, HookPoint.MODEL_TURN_FINISHED, ctx))
        except StopRun as stop:
            outcomes.append(("stopped", stop.hook, stop.reason))
            break
    return outcomes


def test_retry_on_marker_retries_at_most_n_times_then_stops(surface: Surface) -> None:
    """The hook retries a turn with the marker twice, then stops the run, naming itself."""
    registry = HookRegistry()
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(RetryOnMarker("TODO", 2)), name="todo-retry")
    retry = TurnAction.retry_with_feedback("Remove 'TODO' and answer again.")
    outcomes = _drive(surface, registry, RunContext(), ["x TODO", "y TODO", "z TODO", "never seen"])
    assert outcomes == [retry, retry, ("stopped", "todo-retry", "'TODO' still in the answer; retry limit 2 reached")]
    assert [getattr(action, "decided_by", None) for action in outcomes[:2]] == ["todo-retry", "todo-retry"]
    assert _drive(surface, registry, RunContext(), ["clean answer"]) == [TurnAction.continue_run()]


def test_retry_counters_are_isolated_by_run(surface: Surface) -> None:
    """A run that spent its retries does not use up another run's."""
    registry = HookRegistry()
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(RetryOnMarker("TODO", 1)), name="todo-retry")
    spent, fresh = RunContext(), RunContext()
    assert _drive(surface, registry, spent, ["TODO", "TODO"])[-1] == (
        "stopped",
        "todo-retry",
        "'TODO' still in the answer; retry limit 1 reached",
    )
    assert _drive(surface, registry, fresh, ["TODO"]) == [
        TurnAction.retry_with_feedback("Remove 'TODO' and answer again.")
    ]


def test_retry_counters_are_isolated_by_hook_instance(surface: Surface) -> None:
    """Two instances of the hook in one run each count their own retries in the shared scratchpad."""
    registry = HookRegistry()
    todo, fixme = RetryOnMarker("TODO", 1), RetryOnMarker("FIXME", 1)
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(todo), name="todo")
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(fixme), name="fixme")
    run = RunContext()
    outcomes = _drive(surface, registry, run, ["TODO", "FIXME", "TODO"])
    assert [getattr(outcome, "decided_by", outcome) for outcome in outcomes] == [
        "todo",
        "fixme",
        ("stopped", "todo", "'TODO' still in the answer; retry limit 1 reached"),
    ]
    assert run.scratchpad.get(Retries) == {id(todo): 2, id(fixme): 1}


# --- MODEL_TURN_FINISHED ---------------------------------------------------------------


def test_turn_hooks_that_all_continue_continue_the_run(surface: Surface) -> None:
    """When every hook continues, the result is the shared continue_run()."""
    registry = HookRegistry()
    calls: list[str] = []
    for name in ("a", "b"):
        registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(record(calls, name, TurnAction.continue_run())))
    result = surface.decide(registry, HookPoint.MODEL_TURN_FINISHED, finished("ok"))
    assert result is TurnAction.continue_run()
    assert (result.kind, result.decided_by, calls) == ("continue", None, ["a", "b"])


@pytest.mark.parametrize(
    "action", [TurnAction.repeat(), TurnAction.retry_with_feedback("cite a source")], ids=["repeat", "feedback"]
)
def test_the_first_non_continue_turn_action_wins(surface: Surface, action: TurnAction) -> None:
    """The first action that is not continue decides, with decided_by set; later hooks do not run."""
    registry = HookRegistry()
    calls: list[str] = []
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(record(calls, "a", TurnAction.continue_run())))
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(record(calls, "b", action)), name="b")
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(record(calls, "c", TurnAction.repeat())), name="c")
    result = surface.decide(registry, HookPoint.MODEL_TURN_FINISHED, finished("answer"))
    assert result == action
    assert (result.kind, result.feedback, result.decided_by) == (action.kind, action.feedback, "b")
    assert calls == ["a", "b"]


def _raises_value_error(ctx: object) -> TurnAction:
    raise ValueError("judge crashed")


@pytest.mark.parametrize(
    ("body", "cause"),
    [(_raises_value_error, ValueError), (lambda ctx: None, TypeError)],
    ids=["raises", "wrong-return"],
)
def test_a_failing_turn_hook_fails_closed_by_stopping_the_run(
    surface: Surface, body: Callable[[object], Any], cause: type[BaseException]
) -> None:
    """A turn hook that raises or returns the wrong type raises StopRun naming it; only hook_failed is logged."""
    registry = HookRegistry()
    calls: list[str] = []
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(body), name="judge")
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(record(calls, "later", TurnAction.repeat())))
    with structlog.testing.capture_logs() as logs, pytest.raises(StopRun, match="judge") as info:
        surface.decide(registry, HookPoint.MODEL_TURN_FINISHED, finished("answer"))
    assert info.value.hook == "judge"
    assert isinstance(info.value.__cause__, cause)
    assert calls == []
    assert [(log["event"], log["log_level"], log["hook"]) for log in logs] == [("hook_failed", "error", "judge")]


def test_a_failing_turn_hook_under_ignore_counts_as_continue(surface: Surface) -> None:
    """on_error="ignore" makes a failing turn hook a pass: the next hook decides."""
    registry = HookRegistry()
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(_raises_value_error), on_error="ignore")
    registry.register(HookPoint.MODEL_TURN_FINISHED, surface.hook(lambda ctx: TurnAction.repeat()), name="next")
    result = surface.decide(registry, HookPoint.MODEL_TURN_FINISHED, finished("answer"))
    assert (result, result.decided_by) == (TurnAction.repeat(), "next")


# --- INVALID_TOOL_CALL -----------------------------------------------------------------


def _invalid_call() -> InvalidToolCallContext:
    return InvalidToolCallContext(
        tool_name="bsh", args={"command": "ls"}, call_id="call-9", available_tools=("bash", "read"), error="unknown"
    )


def test_an_invalid_tool_call_nobody_decides_fails(surface: Surface) -> None:
    """With no hooks, or only hooks returning None, the action is fail()."""
    registry = HookRegistry()
    assert surface.decide(registry, HookPoint.INVALID_TOOL_CALL, _invalid_call()) is InvalidToolCallAction.fail()
    calls: list[str] = []
    registry.register(HookPoint.INVALID_TOOL_CALL, surface.hook(record(calls, "a", None)))
    registry.register(HookPoint.INVALID_TOOL_CALL, surface.hook(record(calls, "b", None)))
    result = surface.decide(registry, HookPoint.INVALID_TOOL_CALL, _invalid_call())
    assert (result, result.kind, result.decided_by, calls) == (InvalidToolCallAction.fail(), "fail", None, ["a", "b"])


@pytest.mark.parametrize(
    ("action", "attributes"),
    [
        (InvalidToolCallAction.retry("use one of: bash, read"), ("retry", "use one of: bash, read", None, "")),
        (InvalidToolCallAction.repair("bash"), ("repair", None, "bash", "")),
        (InvalidToolCallAction.skip("not needed"), ("skip", None, None, "not needed")),
    ],
    ids=["retry", "repair", "skip"],
)
def test_the_first_invalid_tool_call_action_wins(
    surface: Surface, action: InvalidToolCallAction, attributes: tuple[object, ...]
) -> None:
    """The first hook returning an action decides it; later hooks do not run."""
    registry = HookRegistry()
    calls: list[str] = []
    registry.register(HookPoint.INVALID_TOOL_CALL, surface.hook(record(calls, "a", None)))
    registry.register(HookPoint.INVALID_TOOL_CALL, surface.hook(record(calls, "b", action)), name="b")
    registry.register(HookPoint.INVALID_TOOL_CALL, surface.hook(record(calls, "c", InvalidToolCallAction.fail("x"))))
    result = surface.decide(registry, HookPoint.INVALID_TOOL_CALL, _invalid_call())
    assert result == action
    assert (result.kind, result.feedback, result.tool_name, result.reason) == attributes
    assert (result.decided_by, calls) == ("b", ["a", "b"])


def test_a_failing_invalid_tool_call_hook_fails_the_call(surface: Surface) -> None:
    """A failing hook decides fail(), naming itself; later hooks do not run."""
    registry = HookRegistry()
    calls: list[str] = []
    registry.register(HookPoint.INVALID_TOOL_CALL, surface.hook(_raises_value_error), name="fixer")
    registry.register(HookPoint.INVALID_TOOL_CALL, surface.hook(record(calls, "b", InvalidToolCallAction.repair("x"))))
    with structlog.testing.capture_logs():
        result = surface.decide(registry, HookPoint.INVALID_TOOL_CALL, _invalid_call())
    assert (result.kind, result.decided_by, calls) == ("fail", "fixer", [])


# --- PRE_MODEL_CALL: request patches -------------------------------------------------


def _patcher(
    surface: Surface,
    registry: HookRegistry,
    patch: RequestPatch,
    seen: list[RequestPatch] | None = None,
    **options: Any,
) -> None:
    def body(ctx: PreModelCallContext) -> RequestPatch:
        if seen is not None:
            seen.append(ctx.patch)
        return patch

    registry.register(HookPoint.PRE_MODEL_CALL, surface.hook(body), **options)


def test_patches_accumulate_onto_the_harness_patch_and_each_hook_sees_the_merge_so_far(surface: Surface) -> None:
    """Each patch merges onto the harness's ctx.patch in order; a hook sees the merge of those before it."""
    registry = HookRegistry()
    seen: list[RequestPatch] = []
    _patcher(surface, registry, RequestPatch(extra_context=("a",)), seen)
    registry.register(HookPoint.PRE_MODEL_CALL, surface.hook(lambda ctx: None))
    _patcher(surface, registry, RequestPatch(extra_context=("b",), temperature=0.2), seen)
    merged = surface.transform(registry, HookPoint.PRE_MODEL_CALL, model_call(RequestPatch(extra_context=("base",))))
    assert merged == RequestPatch(extra_context=("base", "a", "b"), temperature=0.2)
    assert seen == [RequestPatch(extra_context=("base",)), RequestPatch(extra_context=("base", "a"))]


def test_a_stop_discards_the_gathered_patches(surface: Surface) -> None:
    """Patches gathered before a StopRun are never returned; the hooks after it do not run."""
    registry = HookRegistry()
    calls: list[str] = []
    seen: list[RequestPatch] = []
    _patcher(surface, registry, RequestPatch(extra_context=("a",)))
    _patcher(surface, registry, RequestPatch(extra_context=("b",)), seen)
    registry.register(HookPoint.PRE_MODEL_CALL, surface.hook(stopper(calls, "guard")), name="guard")
    registry.register(HookPoint.PRE_MODEL_CALL, surface.hook(record(calls, "after", RequestPatch(preamble="x"))))
    with pytest.raises(StopRun, match="guard stops") as info:
        surface.transform(registry, HookPoint.PRE_MODEL_CALL, model_call())
    assert seen == [RequestPatch(extra_context=("a",))]  # the patches had accumulated...
    assert (info.value.hook, info.value.effective_args, calls) == ("guard", None, ["guard"])  # ...and are gone


def test_extra_context_is_appended_in_order(surface: Surface) -> None:
    """extra_context blocks are concatenated in hook order after the harness's own."""
    registry = HookRegistry()
    _patcher(surface, registry, RequestPatch(extra_context=("one", "two")))
    _patcher(surface, registry, RequestPatch(extra_context=("three",)))
    merged = surface.transform(registry, HookPoint.PRE_MODEL_CALL, model_call(RequestPatch(extra_context=("zero",))))
    assert merged.extra_context == ("zero", "one", "two", "three")


def test_additional_params_merge_shallowly_and_the_later_key_wins(surface: Surface) -> None:
    """additional_params merge key by key; a later key replaces the whole earlier value."""
    registry = HookRegistry()
    _patcher(surface, registry, RequestPatch(additional_params={"seed": 1, "reasoning": {"effort": "low"}}))
    _patcher(surface, registry, RequestPatch(additional_params={"reasoning": {"summary": "auto"}, "user": "u1"}))
    merged = surface.transform(
        registry, HookPoint.PRE_MODEL_CALL, model_call(RequestPatch(additional_params={"seed": 0}))
    )
    assert dict(merged.additional_params) == {"seed": 1, "reasoning": {"summary": "auto"}, "user": "u1"}


@pytest.mark.parametrize(
    ("field", "first", "second"),
    [
        ("preamble", "be brief", "be thorough"),
        ("temperature", 0.0, 0.7),
        ("max_tokens", 100, 200),
        ("tool_choice", "auto", "none"),
    ],
)
def test_a_scalar_takes_the_last_writers_value_and_logs_the_conflict(
    surface: Surface, field: str, first: Any, second: Any
) -> None:
    """Two patches setting a scalar differently: the last one wins and patch_conflict names only the field."""
    registry = HookRegistry()
    _patcher(surface, registry, RequestPatch(**{field: first}))
    _patcher(surface, registry, RequestPatch(extra_context=("unrelated",)))  # unset: never overwrites
    _patcher(surface, registry, RequestPatch(**{field: second}))
    with structlog.testing.capture_logs() as logs:
        merged = surface.transform(registry, HookPoint.PRE_MODEL_CALL, model_call())
    assert getattr(merged, field) == second
    assert logs == [{"event": "patch_conflict", "log_level": "warning", "field": field}]


def test_setting_a_scalar_to_the_same_value_is_no_conflict(surface: Surface) -> None:
    """Agreeing patches log nothing; a patch leaving a scalar unset keeps the earlier value."""
    registry = HookRegistry()
    _patcher(surface, registry, RequestPatch(temperature=0.3))
    _patcher(surface, registry, RequestPatch(temperature=0.3, preamble="p"))
    _patcher(surface, registry, RequestPatch(max_tokens=50))
    with structlog.testing.capture_logs() as logs:
        merged = surface.transform(registry, HookPoint.PRE_MODEL_CALL, model_call())
    assert (merged.temperature, merged.preamble, merged.max_tokens) == (0.3, "p", 50)
    assert logs == []


def test_active_tools_are_intersected(surface: Surface) -> None:
    """Each patch's active_tools narrows the set offered; an unset one leaves it alone."""
    registry = HookRegistry()
    _patcher(surface, registry, RequestPatch(active_tools=frozenset({"bash", "read", "write"})))
    _patcher(surface, registry, RequestPatch(preamble="p"))
    _patcher(surface, registry, RequestPatch(active_tools=frozenset({"read", "write", "web"})))
    merged = surface.transform(registry, HookPoint.PRE_MODEL_CALL, model_call())
    assert merged.active_tools == frozenset({"read", "write"})


def test_an_empty_intersection_of_active_tools_means_no_tools(surface: Surface) -> None:
    """Disjoint active_tools merge to frozenset(): no tools at all, not "every tool"."""
    registry = HookRegistry()
    _patcher(surface, registry, RequestPatch(active_tools=frozenset({"read"})))
    merged = surface.transform(
        registry, HookPoint.PRE_MODEL_CALL, model_call(RequestPatch(active_tools=frozenset({"bash"})))
    )
    assert merged.active_tools == frozenset()
    assert merged.active_tools is not None


def test_patches_of_nested_registries_compose_in_order(surface: Surface) -> None:
    """Included registries, two levels deep, add their patches at their own position and priority."""
    root, child, grandchild = HookRegistry(), HookRegistry(), HookRegistry()
    _patcher(surface, root, RequestPatch(extra_context=("root-1",), temperature=0.1))
    root.include(child)
    _patcher(surface, child, RequestPatch(extra_context=("child",)))
    child.include(grandchild)
    _patcher(surface, grandchild, RequestPatch(extra_context=("grandchild",), temperature=0.5))
    _patcher(surface, root, RequestPatch(extra_context=("root-2",)))
    _patcher(surface, root, RequestPatch(extra_context=("root-first",)), priority=10)
    with structlog.testing.capture_logs() as logs:
        merged = surface.transform(root, HookPoint.PRE_MODEL_CALL, model_call())
    assert merged.extra_context == ("root-first", "root-1", "child", "grandchild", "root-2")
    assert merged.temperature == 0.5
    assert [log["field"] for log in logs] == ["temperature"]


def test_a_registry_without_patch_hooks_returns_the_harness_patch(surface: Surface) -> None:
    """With no hook, or hooks returning None, the result is the harness's own patch object."""
    registry = HookRegistry()
    ctx = model_call(RequestPatch(preamble="harness"))
    assert surface.transform(registry, HookPoint.PRE_MODEL_CALL, ctx) is ctx.patch
    registry.register(HookPoint.PRE_MODEL_CALL, surface.hook(lambda ctx: None))
    assert surface.transform(registry, HookPoint.PRE_MODEL_CALL, ctx) is ctx.patch


# --- MODEL_SELECT ---------------------------------------------------------------------


def _select_ctx() -> ModelSelectContext:
    return ModelSelectContext(default_model="small", selected_model="small", patch=RequestPatch())


def test_model_selections_chain_and_the_last_pick_wins(surface: Surface) -> None:
    """Each selector sees the previous pick in selected_model (default_model unchanged); None keeps it."""
    registry = HookRegistry()
    seen: list[tuple[str, str]] = []

    def picks(model: str | None) -> Callable[[ModelSelectContext], str | None]:
        def body(ctx: ModelSelectContext) -> str | None:
            seen.append((ctx.default_model, ctx.selected_model))
            return model

        return body

    for model in ("medium", None, "large"):
        registry.register(HookPoint.MODEL_SELECT, surface.hook(picks(model)))
    assert surface.transform(registry, HookPoint.MODEL_SELECT, _select_ctx()) == "large"
    assert seen == [("small", "small"), ("small", "medium"), ("small", "medium")]


def test_no_model_pick_keeps_the_selected_model(surface: Surface) -> None:
    """With no selector, or selectors returning None, the context's selected_model is returned."""
    registry = HookRegistry()
    ctx = _select_ctx()
    assert surface.transform(registry, HookPoint.MODEL_SELECT, ctx) is ctx.selected_model
    registry.register(HookPoint.MODEL_SELECT, surface.hook(lambda ctx: None))
    assert surface.transform(registry, HookPoint.MODEL_SELECT, ctx) is ctx.selected_model


def test_a_stop_short_circuits_model_selection(surface: Surface) -> None:
    """A StopRun from a selector ends the selection: later selectors do not run and no pick is returned."""
    registry = HookRegistry()
    calls: list[str] = []
    registry.register(HookPoint.MODEL_SELECT, surface.hook(record(calls, "first", "medium")))
    registry.register(HookPoint.MODEL_SELECT, surface.hook(stopper(calls, "budget")), name="budget")
    registry.register(HookPoint.MODEL_SELECT, surface.hook(record(calls, "last", "large")))
    with structlog.testing.capture_logs() as logs, pytest.raises(StopRun, match="budget stops") as info:
        surface.transform(registry, HookPoint.MODEL_SELECT, _select_ctx())
    assert (info.value.hook, calls) == ("budget", ["first", "budget"])
    assert [(log["event"], log["hook"]) for log in logs] == [("run_stopped", "budget")]


# --- TRANSFORM_TOOL_RESULT ------------------------------------------------------------


def test_result_rewrites_chain_without_touching_the_raw_result(surface: Surface) -> None:
    """Presentations chain; every hook sees the same raw_result object and the original args."""
    registry = HookRegistry()
    raw = {"rows": [1, 2, 3]}
    ctx = TransformToolResultContext(
        tool_name="query", args={"sql": "select"}, call_id="c1", raw_result=raw, presentation="3 rows"
    )
    seen: list[tuple[object, Mapping[str, object], str]] = []

    def presents(suffix: str | None) -> Callable[[TransformToolResultContext], str | None]:
        def body(ctx: TransformToolResultContext) -> str | None:
            seen.append((ctx.raw_result, ctx.args, ctx.presentation))
            return None if suffix is None else f"{ctx.presentation} {suffix}"

        return body

    for suffix in ("(truncated)", None, "[redacted]"):
        registry.register(HookPoint.TRANSFORM_TOOL_RESULT, surface.hook(presents(suffix)))
    result = surface.transform(registry, HookPoint.TRANSFORM_TOOL_RESULT, ctx)
    assert result == "3 rows (truncated) [redacted]"
    assert [presentation for _, _, presentation in seen] == ["3 rows", "3 rows (truncated)", "3 rows (truncated)"]
    assert all(seen_raw is raw and seen_args == {"sql": "select"} for seen_raw, seen_args, _ in seen)
    assert (ctx.raw_result, ctx.presentation, raw) == (raw, "3 rows", {"rows": [1, 2, 3]})


# --- delta points -------------------------------------------------------------------------

DELTAS = [
    (HookPoint.TEXT_DELTA, lambda chunk: TextDeltaContext(delta=chunk, aggregated=chunk)),
    (HookPoint.REASONING_DELTA, lambda chunk: ReasoningDeltaContext(delta=chunk, aggregated=chunk)),
    (HookPoint.TOOL_CALL_DELTA, lambda chunk: ToolCallDeltaContext(call_id="c1", tool_name="bash", delta=chunk)),
]


@pytest.mark.parametrize(("point", "make"), DELTAS, ids=[point.value for point, _ in DELTAS])
def test_delta_observers_all_run_for_every_chunk(
    surface: Surface, point: HookPoint, make: Callable[[str], object]
) -> None:
    """Every delta observer sees every chunk, in order."""
    registry = HookRegistry()
    seen: list[tuple[str, str]] = []

    def observer(name: str) -> Callable[[Any], None]:
        return lambda ctx: seen.append((name, ctx.delta))

    for name in ("first", "second"):
        registry.register(point, surface.hook(observer(name)))
    for chunk in ("he", "llo"):
        surface.notify(registry, point, make(chunk))
    assert seen == [("first", "he"), ("second", "he"), ("first", "llo"), ("second", "llo")]


@pytest.mark.parametrize(("point", "make"), DELTAS, ids=[point.value for point, _ in DELTAS])
def test_has_hooks_is_the_per_delta_gate(surface: Surface, point: HookPoint, make: Callable[[str], object]) -> None:
    """A streaming loop asks has_hooks(point) per delta: nothing is built or dispatched until a hook exists."""
    root, plugin = HookRegistry(), HookRegistry()
    seen: list[str] = []
    built: list[str] = []

    def stream(chunks: str) -> None:
        for chunk in chunks:
            if root.has_hooks(point):
                built.append(chunk)
                surface.notify(root, point, make(chunk))

    stream("ab")
    assert (built, seen) == ([], [])

    def observer(ctx: Any) -> None:
        seen.append(ctx.delta)

    plugin.register(point, surface.hook(observer))
    inclusion = root.include(plugin)  # has_hooks reflects included registries, live
    stream("cd")
    inclusion.remove()
    stream("ef")
    assert (built, seen) == (["c", "d"], ["c", "d"])


def test_a_tool_scoped_delta_hook_skips_deltas_of_unknown_tools(surface: Surface) -> None:
    """A tools= filter on tool_call_delta skips deltas whose tool_name is not known yet."""
    registry = HookRegistry()
    seen: list[str | None] = []

    def observer(ctx: ToolCallDeltaContext) -> None:
        seen.append(ctx.tool_name)

    registry.register(HookPoint.TOOL_CALL_DELTA, surface.hook(observer), tools="bash")
    for tool_name in (None, "bash", "read"):
        ctx = ToolCallDeltaContext(call_id="c1", tool_name=tool_name, delta="{")
        surface.notify(registry, HookPoint.TOOL_CALL_DELTA, ctx)
    assert seen == ["bash"]


# --- tool-call rewrites and their salvage ------------------------------------------------


def _appender(surface: Surface, registry: HookRegistry, tag: str) -> None:
    def body(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        return {**ctx.args, "trail": f"{ctx.args.get('trail', '')}{tag}"}

    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, surface.hook(body), name=f"rewrite-{tag}")


def test_tool_call_rewrites_chain_in_registration_order(surface: Surface) -> None:
    """Input rewrites chain in registration order, included registries at their position."""
    root, plugin = HookRegistry(), HookRegistry()
    _appender(surface, root, "1")
    root.include(plugin)
    _appender(surface, plugin, "2")
    _appender(surface, plugin, "3")
    _appender(surface, root, "4")
    resolution = surface.resolve(root, tool_call(command="ls"))
    assert dict(resolution.args) == {"command": "ls", "trail": "1234"}
    assert (resolution.rewritten, resolution.result) == (True, HookResult.allow())


def test_a_rewrite_survives_a_later_deny(surface: Surface) -> None:
    """When a gate denies (skips) a rewritten call, the resolution and permission_denied carry the rewritten args."""
    registry = HookRegistry()
    denied: list[Mapping[str, object]] = []
    _appender(surface, registry, "r")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, surface.hook(lambda ctx: HookResult.deny("skip")), name="gate")

    def audit(ctx: PermissionDeniedContext) -> None:
        denied.append(ctx.args)

    registry.register(HookPoint.PERMISSION_DENIED, surface.hook(audit))
    resolution = surface.resolve(registry, tool_call(command="ls"))
    assert dict(resolution.args) == {"command": "ls", "trail": "r"}
    assert (resolution.rewritten, resolution.result.reason, resolution.result.decided_by) == (True, "skip", "gate")
    assert denied == [{"command": "ls", "trail": "r"}]


@pytest.mark.parametrize(
    "where", [HookPoint.TRANSFORM_TOOL_INPUT, HookPoint.PRE_TOOL_CALL_DECIDE, HookPoint.PERMISSION_DENIED]
)
def test_a_rewrite_survives_a_later_stop(surface: Surface, where: HookPoint) -> None:
    """A StopRun after a rewrite, from a later transform, a gate or a denial observer, carries the rewritten args."""
    registry = HookRegistry()
    calls: list[str] = []
    _appender(surface, registry, "r")
    if where is HookPoint.PERMISSION_DENIED:
        registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, surface.hook(lambda ctx: HookResult.deny("no")))
    registry.register(where, surface.hook(stopper(calls, "halt")), name="halt")
    with pytest.raises(StopRun, match="halt stops") as info:
        surface.resolve(registry, tool_call(command="ls"))
    assert info.value.hook == "halt"
    assert info.value.effective_args == {"command": "ls", "trail": "r"}


def test_a_stop_without_a_rewrite_carries_no_args(surface: Surface) -> None:
    """When no transform rewrote the call, a StopRun's effective_args is None."""
    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, surface.hook(lambda ctx: None))
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, surface.hook(stopper([], "halt")), name="halt")
    with pytest.raises(StopRun, match="halt stops") as info:
        surface.resolve(registry, tool_call(command="ls"))
    assert info.value.effective_args is None


@pytest.mark.parametrize("outcome", ["skip", "stop"])
def test_a_rewrite_nested_two_levels_deep_survives_a_later_skip_or_stop(surface: Surface, outcome: str) -> None:
    """A rewrite made in a grandchild registry survives a deny or a stop made in the middle and root registries."""
    root, middle, leaf = HookRegistry(), HookRegistry(), HookRegistry()
    root.include(middle)
    middle.include(leaf)
    _appender(surface, leaf, "leaf")
    _appender(surface, middle, "+middle")
    if outcome == "skip":
        root.register(HookPoint.PRE_TOOL_CALL_DECIDE, surface.hook(lambda ctx: HookResult.deny("skipped")), name="root")
        resolution = surface.resolve(root, tool_call(command="ls"))
        assert dict(resolution.args) == {"command": "ls", "trail": "leaf+middle"}
        assert (resolution.result.reason, resolution.result.decided_by) == ("skipped", "root")
    else:
        middle.register(HookPoint.PRE_TOOL_CALL_DECIDE, surface.hook(stopper([], "middle")), name="middle")
        with pytest.raises(StopRun, match="middle stops") as info:
            surface.resolve(root, tool_call(command="ls"))
        assert (info.value.hook, info.value.effective_args) == ("middle", {"command": "ls", "trail": "leaf+middle"})
