"""The cancellation table (DESIGN §5): a cancelled dispatch never ends in a late pass.

Each row cancels (or outlasts) an async dispatch in one way — during a sync
hook, during an async hook, in a hook that swallows the cancellation, in a
hook that blocks the event loop past its deadline — at a gate, a transform and
an observer. The dispatch must end with `CancelledError` or a timed-out
failure; the hook registered after the faulty one never runs and nothing it
or the faulty hook returned reaches the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import pytest
from structlog.testing import capture_logs

from hookreg import HookPoint, HookRegistry, HookResult, HookStyle

from ._support import make_context

TIMEOUT: Final = 0.01
POINTS = [HookPoint.PRE_TOOL_CALL_DECIDE, HookPoint.TRANSFORM_TOOL_INPUT, HookPoint.POST_TOOL_CALL]
METHOD = {HookStyle.DECIDE: "adecide", HookStyle.TRANSFORM: "atransform", HookStyle.OBSERVE: "anotify"}


def late_value(point: HookPoint) -> object:
    """What a faulty hook returns after its cancellation or deadline: a pass, or for a transform a rewrite."""
    if point.style is HookStyle.DECIDE:
        return HookResult.allow("late")
    return {"late": True} if point.style is HookStyle.TRANSFORM else None


class Row:
    """One way to cancel or outlast a dispatch, and what it must end with."""

    def __init__(self, name: str, *, cancels_from_outside: bool, timeout: float | None, ends: str) -> None:
        self.name, self.cancels_from_outside, self.timeout, self.ends = name, cancels_from_outside, timeout, ends

    def __repr__(self) -> str:
        return self.name

    def hook(self, point: HookPoint, started: asyncio.Event) -> Callable[[Any], Any]:
        """The faulty hook of this row."""
        late = late_value(point)

        def cancel_itself(ctx: object) -> object:
            # While a sync hook runs the loop is busy: only code it calls can ask for the cancellation.
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
            return late

        async def wait_for_cancel(ctx: object) -> object:
            started.set()
            await asyncio.Event().wait()  # never set: only a cancellation ends it
            return late

        async def swallow_cancel(ctx: object) -> object:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                return late  # swallowed
            return None  # pragma: no cover -- the event is never set

        async def block_the_loop(ctx: object) -> object:
            time.sleep(TIMEOUT * 5)  # blocks the event loop, so the deadline cannot fire on time
            return late

        bodies: dict[str, Callable[[Any], Any]] = {
            "sync-hook": cancel_itself,
            "async-hook": wait_for_cancel,
            "swallowing-hook": swallow_cancel,
            "swallowing-hook-with-timeout": swallow_cancel,
            "blocked-loop": block_the_loop,
        }
        return bodies[self.name]


ROWS = [
    Row("sync-hook", cancels_from_outside=False, timeout=None, ends="cancelled"),
    Row("async-hook", cancels_from_outside=True, timeout=None, ends="cancelled"),
    Row("swallowing-hook", cancels_from_outside=True, timeout=None, ends="cancelled"),
    Row("swallowing-hook-with-timeout", cancels_from_outside=True, timeout=60.0, ends="cancelled"),
    Row("blocked-loop", cancels_from_outside=False, timeout=TIMEOUT, ends="timed out"),
]


@pytest.mark.parametrize("point", POINTS, ids=str)
@pytest.mark.parametrize("row", ROWS, ids=repr)
@pytest.mark.parametrize("last", [False, True], ids=["hook-after", "last-hook"])
def test_cancellation_row(row: Row, point: HookPoint, *, last: bool) -> None:
    """The dispatch ends cancelled or timed out: never with the late value, never running the next hook."""
    after_ran: list[object] = []
    registry = HookRegistry()

    async def after(ctx: object) -> Any:
        after_ran.append(ctx)
        return late_value(point) if point.style is not HookStyle.DECIDE else HookResult.allow()

    async def run() -> object:
        started = asyncio.Event()
        registry.register(point, row.hook(point, started), name="faulty", timeout=row.timeout)
        if not last:
            registry.register(point, after, name="after")
        dispatching = getattr(registry, METHOD[point.style])(point, make_context(point, tool_name="bash"))
        task: asyncio.Task[object] = asyncio.ensure_future(cast_awaitable(dispatching))
        if row.cancels_from_outside:
            await started.wait()
            task.cancel()
        return await task

    with capture_logs() as logs:
        if row.ends == "cancelled":
            with pytest.raises(asyncio.CancelledError):
                asyncio.run(run())
            assert logs == []
        else:
            try:
                outcome: object = asyncio.run(run())
            except TimeoutError as exc:  # a transform's default policy is "raise"
                outcome = exc
            assert [(e["event"], e["hook"]) for e in logs] == [("hook_timed_out", "faulty")]
            assert outcome != late_value(point) or outcome is None  # an observer returns None either way
            if point.style is HookStyle.DECIDE:
                assert isinstance(outcome, HookResult)
                assert (outcome.allowed, outcome.decided_by) == (False, "faulty")
            elif point.style is HookStyle.TRANSFORM:
                assert isinstance(outcome, TimeoutError)
    assert after_ran == [] or (row.ends == "timed out" and point.style is HookStyle.OBSERVE)


def cast_awaitable(value: object) -> Awaitable[object]:
    """The dispatch coroutine, typed for ensure_future."""
    assert asyncio.iscoroutine(value)
    return value


def test_a_dispatch_made_while_handling_a_cancellation_runs_every_hook() -> None:
    """Cleanup code that dispatches while its task is being cancelled is not itself cancelled by hookreg."""
    seen: list[str] = []

    async def observer(ctx: object) -> None:
        seen.append("async")

    registry = HookRegistry()
    registry.register(HookPoint.ON_SESSION_END, observer)
    registry.register(HookPoint.ON_SESSION_END, lambda ctx: seen.append("sync"))

    async def run() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await registry.anotify(HookPoint.ON_SESSION_END, make_context(HookPoint.ON_SESSION_END))
            raise

    async def main() -> None:
        task = asyncio.ensure_future(run())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert seen == ["async", "sync"]


def test_a_hook_whose_task_group_failed_does_not_read_as_a_cancellation() -> None:
    """A hook letting a TaskGroup's failure out (which on Python 3.11 leaves a cancel count) is a failure, no more."""
    after: list[object] = []

    async def bad() -> None:
        raise ValueError("a check broke")

    async def fan_out(ctx: object) -> HookResult:
        async with asyncio.TaskGroup() as group:
            group.create_task(asyncio.sleep(0))
            group.create_task(bad())
        return HookResult.allow()  # pragma: no cover -- the group raises

    async def later(ctx: object) -> HookResult:
        after.append(ctx)
        return HookResult.allow("later")

    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, fan_out, on_error="ignore")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, later, name="later")
    ctx = make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="bash")
    with capture_logs() as logs:
        result = asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx))
    assert (result.allowed, result.decided_by, len(after)) == (True, "later", 1)
    assert [(e["event"], e["exc_type"]) for e in logs] == [("hook_failed", "ExceptionGroup")]


def test_an_async_dispatch_driven_outside_asyncio_still_runs() -> None:
    """A coroutine runner other than asyncio (no current task) drives an async dispatch as before."""

    async def gate(ctx: object) -> HookResult:
        return HookResult.deny("no")

    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate)
    coroutine = registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, make_context(HookPoint.PRE_TOOL_CALL_DECIDE))
    with pytest.raises(StopIteration) as done:
        coroutine.send(None)
    assert done.value.value.reason == "no"
