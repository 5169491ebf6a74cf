"""A forgotten ``await`` cannot pass a check: the a-methods return a coroutine whose truth value raises (DESIGN §6)."""

from __future__ import annotations

import asyncio
import gc
import inspect
import threading
import warnings
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookReturnError,
    HookTypeError,
    PreToolCallDecideContext,
    TextDeltaContext,
    ToolCallResolution,
)

TOOL = PreToolCallDecideContext(tool_name="bash", args={"command": "ls"}, call_id="c1")
DELTA = TextDeltaContext(delta="a", aggregated="a")

MakeCall = Callable[[HookRegistry], Coroutine[Any, Any, object]]

CALLS: dict[str, MakeCall] = {
    "adecide": lambda registry: registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL),
    "atransform": lambda registry: registry.atransform(HookPoint.TRANSFORM_TOOL_INPUT, TOOL),
    "anotify": lambda registry: registry.anotify(HookPoint.TEXT_DELTA, DELTA),
    "aresolve_tool_call": lambda registry: registry.aresolve_tool_call(TOOL),
}


def deny_all(calls: list[str]) -> HookRegistry:
    """A registry whose gate denies every call, and whose every hook records that it ran in `calls`."""
    registry = HookRegistry()

    @registry.pre_tool_call_decide
    def deny(ctx: PreToolCallDecideContext) -> HookResult:
        calls.append("deny")
        return HookResult.deny("no")

    @registry.transform_tool_input
    def keep(ctx: PreToolCallDecideContext) -> None:
        calls.append("keep")

    @registry.text_delta
    def seen(ctx: TextDeltaContext) -> None:
        calls.append("seen")

    return registry


def test_testing_a_forgotten_await_on_a_deny_all_registry_raises_instead_of_allowing() -> None:
    """``if registry.adecide(...):`` on a deny-all registry raises a HookTypeError naming the await, never allows."""
    calls: list[str] = []
    registry = deny_all(calls)
    pending = registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
    not_awaited = r"registry\.adecide\(\.\.\.\): it was not awaited.*`await registry\.adecide\(\.\.\.\)`"
    with pytest.raises(HookTypeError, match=not_awaited):
        allowed = "allowed" if pending else "denied"  # the bug: a coroutine is truthy, so this took the allow branch
    assert "allowed" not in locals()
    assert calls == []
    # Testing it did not consume it: awaited, it still runs and denies.
    result = asyncio.run(pending)
    assert isinstance(result, HookResult)
    assert result.decision == "deny"
    assert calls == ["deny"]


@pytest.mark.parametrize("method", CALLS)
def test_every_a_method_refuses_a_truth_test_and_still_runs_when_awaited(method: str) -> None:
    """Each a-method's truth value raises, naming that method; awaiting it afterwards runs its dispatch."""
    calls: list[str] = []
    pending = CALLS[method](deny_all(calls))
    with pytest.raises(HookTypeError, match=rf"Cannot take the truth value of registry\.{method}\(\.\.\.\)"):
        bool(pending)
    assert calls == []
    asyncio.run(pending)
    assert calls


@pytest.mark.parametrize("method", CALLS)
def test_the_a_methods_return_what_asyncio_and_inspect_accept_as_a_coroutine(method: str) -> None:
    """await, gather, create_task, TaskGroup, ensure_future, wait_for, shield and a threadsafe run all take it."""
    make = CALLS[method]
    registry = deny_all([])
    pending = make(registry)
    assert asyncio.iscoroutine(pending)
    assert inspect.isawaitable(pending)
    assert isinstance(pending, Coroutine)
    pending.close()

    async def main() -> list[object]:
        results = [await make(registry)]
        results += await asyncio.gather(make(registry), make(registry))
        results.append(await asyncio.create_task(make(registry)))
        results.append(await asyncio.ensure_future(make(registry)))
        results.append(await asyncio.wait_for(make(registry), timeout=60))
        results.append(await asyncio.shield(make(registry)))
        async with asyncio.TaskGroup() as group:
            task = group.create_task(make(registry))
        results.append(task.result())
        return results

    results = asyncio.run(main())
    assert len(results) == 8
    assert all(result == results[0] for result in results)


def test_a_method_runs_in_another_thread_s_loop_through_run_coroutine_threadsafe() -> None:
    """``asyncio.run_coroutine_threadsafe`` accepts an a-method's coroutine and hands back its result."""
    registry = deny_all([])
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever)
    thread.start()
    try:
        future = asyncio.run_coroutine_threadsafe(registry.aresolve_tool_call(TOOL), loop)
        resolution = future.result(timeout=60)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
    assert isinstance(resolution, ToolCallResolution)
    assert resolution.result.decision == "deny"


@pytest.mark.parametrize("method", CALLS)
def test_an_a_method_dropped_unawaited_runs_no_hook_and_warns_once(method: str) -> None:
    """Never started, it runs no hook and Python warns once that the coroutine was never awaited; no more."""
    calls: list[str] = []
    registry = deny_all(calls)
    gc.disable()  # nothing left over from before is collected (and counted) meanwhile
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dropped = CALLS[method](registry)
            del dropped  # freed at once: the coroutine is in no reference cycle
    finally:
        gc.enable()
    assert calls == []
    assert [str(w.message) for w in caught] == [f"coroutine 'HookRegistry.{method}' was never awaited"]
    assert [w.category for w in caught] == [RuntimeWarning]


def test_an_a_method_s_coroutine_delegates_send_throw_and_close() -> None:
    """send drives the dispatch, throw raises inside it, close ends it: a closed one warns of nothing."""
    calls: list[str] = []
    registry = deny_all(calls)
    driven = registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
    with pytest.raises(StopIteration) as done:
        driven.send(None)
    assert done.value.value.decision == "deny"
    thrown = registry.anotify(HookPoint.TEXT_DELTA, DELTA)
    with pytest.raises(LookupError, match="thrown in"):
        thrown.throw(LookupError("thrown in"))
    thrown_again = registry.anotify(HookPoint.TEXT_DELTA, DELTA)
    with pytest.raises(LookupError, match="the old form"):
        thrown_again.throw(LookupError, LookupError("the old form"), None)
    shown = registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
    assert repr(shown).startswith("<coroutine object HookRegistry.adecide at ")
    shown.close()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry.atransform(HookPoint.TRANSFORM_TOOL_INPUT, TOOL).close()
        gc.collect()
    assert caught == []
    assert calls == ["deny"]


def test_a_sync_hook_returning_another_registry_s_a_method_is_a_wrong_return_and_is_closed() -> None:
    """The returned coroutine fails as a wrong return and is closed: no never-awaited warning follows."""
    inner = deny_all([])
    outer = HookRegistry()
    outer.register(
        HookPoint.PRE_TOOL_CALL_DECIDE,
        lambda ctx: inner.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx),  # the mistake under test
        on_error="raise",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(HookReturnError, match=r"returned DispatchCoroutine; expected HookResult\..*async def"):
            outer.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
        gc.collect()
    assert caught == []
