"""The trace slot's watcher interface: begin, call and end for every dispatch a watcher sees, whatever happens."""

from __future__ import annotations

import asyncio
from typing import Final

import pytest

from hookreg import (
    HookPoint,
    HookRegError,
    HookRegistry,
    HookResult,
    PreToolCallDecideContext,
    PreTurnContext,
    StopRun,
)
from hookreg._trace import DispatchRecord, HookCall, Watcher, unwatch, watch
from hookreg.testing import make_context

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE


def tool_call(tool: str = "bash") -> PreToolCallDecideContext:
    return PreToolCallDecideContext(tool_name=tool, args={"cmd": "ls"}, call_id="call-1")


class Log(Watcher):
    """A watcher writing down what the slot told it, tokens included."""

    def __init__(self, name: str = "w") -> None:
        super().__init__()
        self.name = name
        self.events: list[tuple[object, ...]] = []
        self.records: list[DispatchRecord] = []
        self._count = 0

    def begin(self, point: HookPoint, tool_name: str | None, call_id: str | None) -> object:
        self._count += 1
        token = f"{self.name}{self._count}"
        self.events.append(("begin", token, point, tool_name, call_id))
        return token

    def call(self, token: object, call: HookCall) -> None:
        self.events.append(("call", token, call.hook, call.outcome, call.decided))

    def end(self, token: object, record: DispatchRecord) -> None:
        self.events.append(("end", token, record.point, record.hooks, record.decided_by))
        self.records.append(record)


@pytest.fixture
def log() -> Log:
    return Log()


def test_begin_call_and_end_come_in_order_with_the_token_and_what_the_dispatch_is_about(log: Log) -> None:
    """A watched decide begins with the tool and call id, reports each call, and ends with the decided record."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.allow(), name="first")
    registry.register(GATE, lambda ctx: HookResult.deny("no"), name="second")
    watch(log, registry)
    try:
        result = registry.decide(GATE, tool_call())
    finally:
        unwatch(log)
    assert log.events == [
        ("begin", "w1", GATE, "bash", "call-1"),
        ("call", "w1", "first", "allow", False),
        ("call", "w1", "second", "deny", False),
        ("end", "w1", GATE, ("first", "second"), "second"),
    ]
    assert log.records[0].result is result
    assert log.records[0].calls[1].decided


def test_a_dispatch_made_by_a_hook_begins_and_ends_inside_the_outer_one(log: Log) -> None:
    """A nested dispatch's begin and end fall between the enclosing dispatch's begin and end."""
    registry = HookRegistry()

    def outer(ctx: PreToolCallDecideContext) -> HookResult:
        return registry.decide(GATE, tool_call("inner")) if ctx.tool_name == "outer" else HookResult.allow()

    registry.register(GATE, outer, name="outer")
    watch(log, registry)
    try:
        registry.decide(GATE, tool_call("outer"))
    finally:
        unwatch(log)
    assert [event[:2] for event in log.events] == [
        ("begin", "w1"),
        ("begin", "w2"),
        ("call", "w2"),
        ("end", "w2"),
        ("call", "w1"),
        ("end", "w1"),
    ]


def test_end_follows_begin_when_the_dispatch_raises(log: Log) -> None:
    """A StopRun, a wrong context and an async hook on the sync surface all still end the dispatch."""
    registry = HookRegistry()

    def stop(ctx: PreTurnContext) -> HookResult:
        raise StopRun("halt")

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    registry.register(HookPoint.PRE_TURN, stop, name="stop")
    registry.register(GATE, gate, name="gate")
    watch(log, registry)
    try:
        with pytest.raises(StopRun):
            registry.decide(HookPoint.PRE_TURN, make_context(HookPoint.PRE_TURN))
        with pytest.raises(TypeError):
            registry.decide(GATE, make_context(HookPoint.PRE_TURN))  # type: ignore[call-overload]  # wrong on purpose
        with pytest.raises(TypeError):
            registry.decide(GATE, tool_call())
    finally:
        unwatch(log)
    kinds = [event[0] for event in log.events]
    assert kinds == ["begin", "call", "end", "begin", "end", "begin", "end"]
    assert [type(record.error).__name__ for record in log.records] == ["StopRun", "HookTypeError", "AsyncHookError"]
    assert log.events[3][3:] == (None, None)  # a wrong context is about nothing


def test_a_dispatch_running_when_the_watcher_stops_still_ends(log: Log) -> None:
    """unwatch inside a hook: the dispatch under way still gets its end, and the next one is not seen."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: unwatch(log) or HookResult.allow(), name="stopper")  # type: ignore[func-returns-value]  # unwatch returns None
    watch(log, registry)
    registry.decide(GATE, tool_call())
    registry.decide(GATE, tool_call())
    assert [event[0] for event in log.events] == ["begin", "call", "end"]


def test_by_default_a_watcher_sees_including_registries_and_with_included_the_included_ones(log: Log) -> None:
    """watch() reaches the registries including the watched one; included=True adds those it includes."""
    parent, child, grandchild = HookRegistry(), HookRegistry(), HookRegistry()
    parent.include(child)
    child.include(grandchild)
    other = Log("o")
    watch(log, child)
    watch(other, child, included=True)
    try:
        for registry in (parent, child, grandchild):
            registry.decide(HookPoint.PRE_TURN, make_context(HookPoint.PRE_TURN))
    finally:
        unwatch(log)
        unwatch(other)
    assert len(log.records) == 2  # parent and child
    assert len(other.records) == 3  # and grandchild


def test_several_watchers_see_one_dispatch_and_end_in_reverse_order(log: Log) -> None:
    """Two watchers and an open trace see the same dispatch; the last begun ends first."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.allow(), name="gate")
    other = Log("o")
    order: list[str] = []
    log.end = lambda token, record: order.append("w")  # type: ignore[method-assign]  # spy on the order
    other.end = lambda token, record: order.append("o")  # type: ignore[method-assign]  # spy on the order
    watch(log, registry)
    watch(other, registry)
    try:
        with registry.trace() as trace:
            registry.decide(GATE, tool_call())
    finally:
        unwatch(log)
        unwatch(other)
    assert order == ["o", "w"]
    assert len(trace) == 1


def test_unwatching_brings_the_inline_plan_back_only_when_nobody_watches(log: Log) -> None:
    """A registry leaves the inline loop while watched, and gets it back when the last watcher stops."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.allow(), name="gate")
    inline = registry._decide[GATE].ctx_type
    watch(log, registry)
    with registry.trace():
        unwatch(log)
        assert registry._decide[GATE].ctx_type is not inline
    assert registry._decide[GATE].ctx_type is inline
    unwatch(log)  # a second time does nothing
    assert not registry._wrappers


def test_a_watcher_watches_one_reach_at_a_time(log: Log) -> None:
    """Watching again before unwatch is refused, so that no registry is left off its inline loop."""
    first, second = HookRegistry(), HookRegistry()
    watch(log, first)
    try:
        with pytest.raises(HookRegError, match="it is watching already"):
            watch(log, second)
    finally:
        unwatch(log)
    assert (first._wrappers, second._wrappers) == ({}, {})
    watch(log, second)  # after unwatch, it may watch again
    unwatch(log)


def test_an_async_dispatch_tells_the_watcher_from_its_task(log: Log) -> None:
    """The async surface begins, calls and ends in the task making the dispatch."""
    registry = HookRegistry()
    tasks: list[object] = []

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        tasks.append(asyncio.current_task())
        return HookResult.deny("no")

    registry.register(GATE, gate, name="gate")
    spy = log.begin

    def begin(point: HookPoint, tool_name: str | None, call_id: str | None) -> object:
        tasks.append(asyncio.current_task())
        return spy(point, tool_name, call_id)

    log.begin = begin  # type: ignore[method-assign]  # spy on the task
    watch(log, registry)
    try:
        asyncio.run(registry.adecide(GATE, tool_call()))
    finally:
        unwatch(log)
    assert [event[0] for event in log.events] == ["begin", "call", "end"]
    assert log.records[0].decided_by == "gate"
    assert tasks[0] is tasks[1]
