"""registry.trace(): dispatch records, their scope, their display, and that tracing changes no result."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Mapping
from typing import Final

import pytest

from hookreg import (
    HookPoint,
    HookRegError,
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    NotificationContext,
    OnInteractionContext,
    PreToolCallDecideContext,
    PreTurnContext,
    StopRun,
    ToolCallDeltaContext,
    TurnAction,
)
from hookreg.testing import make_context

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE


def call(tool: str = "bash", **args: object) -> PreToolCallDecideContext:
    return PreToolCallDecideContext(tool_name=tool, args=args, call_id="call-1")


def returning(result: HookResult) -> Callable[[PreToolCallDecideContext], HookResult]:
    return lambda ctx: result


def gates(registry: HookRegistry, *results: HookResult) -> None:
    """Register one gate per result, named g0, g1, …"""
    for i, result in enumerate(results):
        registry.register(GATE, returning(result), name=f"g{i}")


def test_a_deny_lists_the_hooks_called_in_order_and_names_the_decider() -> None:
    """A traced deny records each hook called, in order, stops at the decider and marks it."""
    registry = HookRegistry()
    gates(registry, HookResult.allow(), HookResult.deny("no bash"), HookResult.allow())
    with registry.trace() as trace:
        result = registry.decide(GATE, call())
    (record,) = trace
    assert record.point is GATE
    assert record.hooks == ("g0", "g1")
    assert [c.outcome for c in record.calls] == ["allow", "deny"]
    assert record.calls[1].reason == "no bash"
    assert record.decided_by == "g1"
    assert record.decider is record.calls[1]
    assert [c.decided for c in record.calls] == [False, True]
    assert record.result is result
    assert record.error is None
    assert record.duration_ms >= 0
    assert all(c.duration_ms >= 0 for c in record.calls)


def test_tracing_changes_no_result() -> None:
    """The shared allow, an unchanged transform's own args object and a deny come back as without a trace."""
    registry = HookRegistry()
    gates(registry, HookResult.allow())
    registry.transform_tool_input(lambda ctx: None)
    ctx = call()
    with registry.trace():
        assert registry.decide(GATE, ctx) is HookResult.allow()
        assert registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, ctx) is ctx.args
        gates(registry, HookResult.deny("late"))
        assert registry.decide(GATE, ctx).reason == "late"


def test_the_inline_plan_is_back_when_the_last_trace_closes() -> None:
    """While a trace is open the registry's plans leave the inline loop; after it closes they are inline again."""
    registry = HookRegistry()
    gates(registry, HookResult.allow())
    inline = registry._decide[GATE]
    with registry.trace():
        with registry.trace():
            assert registry._decide[GATE].ctx_type is not PreToolCallDecideContext
        assert registry._decide[GATE].ctx_type is not PreToolCallDecideContext
    assert registry._decide[GATE].ctx_type is PreToolCallDecideContext
    assert (registry._decide[GATE].first, registry._decide[GATE].rest) == (inline.first, inline.rest)
    assert not registry._wrappers


def test_outcomes_name_what_each_kind_of_hook_did() -> None:
    """Ask with its reason, changed/unchanged transforms, observers, raises, bad returns and stops are named."""
    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: None, name="keep")
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {"x": 1}, name="rewrite")
    registry.register(HookPoint.PRE_TURN, lambda ctx: 1 / 0, name="broken", on_error="ignore")  # type: ignore[arg-type, return-value]
    registry.register(HookPoint.PRE_TURN, lambda ctx: None, name="none", on_error="ignore")
    registry.register(HookPoint.PRE_TURN, lambda ctx: HookResult.ask("sure?"), name="asker")
    registry.register(HookPoint.NOTIFICATION, lambda ctx: None, name="seen")
    with registry.trace() as trace:
        registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, call())
        registry.decide(HookPoint.PRE_TURN, PreTurnContext(prompt="p", turn=1))
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="m"))
    transform, decide, notify = trace
    assert [(c.hook, c.outcome) for c in transform.calls] == [("keep", "unchanged"), ("rewrite", "changed")]
    assert transform.summary == "changed"
    assert transform.decider is None
    assert transform.result == {"x": 1}
    broken, none, asker = decide.calls
    assert (broken.outcome, broken.exc_type, broken.detail) == ("raised", "ZeroDivisionError", "ZeroDivisionError")
    assert isinstance(broken.error, ZeroDivisionError)
    assert (none.outcome, none.detail) == ("bad return", "returned NoneType")
    assert (asker.outcome, asker.reason, asker.decided) == ("ask", "sure?", True)
    assert decide.summary == "ask"
    assert [(c.hook, c.outcome) for c in notify.calls] == [("seen", "ran")]
    assert (notify.result, notify.summary) == (None, "done")


def test_a_failing_decider_is_the_decider() -> None:
    """Under on_error="deny" the failing hook decides, and the trace says so."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: 1 / 0, name="broken")  # type: ignore[arg-type, return-value]
    gates(registry, HookResult.allow())
    with registry.trace() as trace:
        registry.decide(GATE, call())
    assert trace[0].hooks == ("broken",)
    assert trace[0].decided_by == "broken"
    assert trace[0].summary == "deny"


def test_all_passed_with_a_message_marks_the_last_allow_that_carried_one() -> None:
    """When every gate allows, the decider is the last allow with a message, not the last hook called."""
    registry = HookRegistry()
    gates(registry, HookResult.allow("first"), HookResult.allow("noted"), HookResult.allow())
    with registry.trace() as trace:
        result = registry.decide(GATE, call())
    assert result.decided_by == "g1"
    assert [c.decided for c in trace[0].calls] == [False, True, False]


def test_turn_actions_and_invalid_tool_call_actions_are_named_by_kind() -> None:
    """A TurnAction and an InvalidToolCallAction show their kind and feedback."""
    registry = HookRegistry()
    registry.register(HookPoint.MODEL_TURN_FINISHED, lambda ctx: TurnAction.retry_with_feedback("again"), name="judge")
    registry.register(HookPoint.INVALID_TOOL_CALL, lambda ctx: None, name="skip-me")
    registry.register(HookPoint.INVALID_TOOL_CALL, lambda ctx: InvalidToolCallAction.repair("bash"), name="fixer")
    with registry.trace() as trace:
        registry.decide(HookPoint.MODEL_TURN_FINISHED, make_context(HookPoint.MODEL_TURN_FINISHED))
        registry.decide(HookPoint.INVALID_TOOL_CALL, make_context(HookPoint.INVALID_TOOL_CALL))
    turn, invalid = trace
    assert (turn.calls[0].outcome, turn.calls[0].reason, turn.decided_by) == ("feedback", "again", "judge")
    assert [(c.outcome, c.decided) for c in invalid.calls] == [("pass", False), ("repair", True)]


def test_a_stop_is_recorded_and_re_raised() -> None:
    """A hook raising StopRun shows as stopped with its reason; the record holds the error and no result."""
    registry = HookRegistry()

    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise StopRun("budget spent")

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, halt, name="halt")
    with registry.trace() as trace, pytest.raises(StopRun, match="budget spent"):
        registry.decide(GATE, call())
    (record,) = trace
    assert (record.calls[0].outcome, record.calls[0].reason) == ("stopped", "budget spent")
    assert isinstance(record.error, StopRun)
    assert record.result is None
    assert record.summary == "raised StopRun"
    assert record.decider is None


def test_a_wrong_context_is_recorded_and_raised() -> None:
    """A dispatch refused before any hook runs leaves a record holding the error."""
    registry = HookRegistry()
    gates(registry, HookResult.allow())
    with registry.trace() as trace, pytest.raises(TypeError, match="PreToolCallDecideContext"):
        registry.decide(GATE, NotificationContext(message="m"))  # type: ignore[call-overload]
    assert trace[0].calls == ()
    assert isinstance(trace[0].error, TypeError)
    assert "raised HookTypeError" in str(trace)


def test_a_dispatch_with_no_hooks_is_recorded_with_its_result() -> None:
    """Dispatches nobody listens to are recorded too: on_interaction without a hook denies."""
    registry = HookRegistry()
    with registry.trace() as trace:
        result = registry.decide(
            HookPoint.ON_INTERACTION, OnInteractionContext(question="q", options=(), tool_name=None)
        )
    assert result.reason == "no interaction hook"
    assert trace[0].calls == ()
    assert trace[0].summary == "deny"
    assert "no hook ran; deny" in str(trace)


def test_resolve_tool_call_gives_one_record_per_dispatch() -> None:
    """A deny through resolve_tool_call records the transform, the gate and the permission_denied observers."""
    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {**ctx.args, "timeout": 30}, name="timeout")
    gates(registry, HookResult.deny("no"))
    registry.register(HookPoint.PERMISSION_DENIED, lambda ctx: None, name="audit")
    with registry.trace() as trace:
        registry.resolve_tool_call(call())
    assert [r.point for r in trace] == [GATE.TRANSFORM_TOOL_INPUT, GATE, HookPoint.PERMISSION_DENIED]
    assert [call.hook for call in trace.calls] == ["timeout", "g0", "audit"]


def test_records_are_in_the_order_dispatches_started() -> None:
    """A hook that dispatches again: its outer dispatch comes first in the trace."""
    registry = HookRegistry()

    @registry.pre_turn
    def outer(ctx: PreTurnContext) -> HookResult:
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="inner"))
        return HookResult.allow()

    with registry.trace() as trace:
        registry.decide(HookPoint.PRE_TURN, PreTurnContext(prompt="p", turn=1))
    assert [r.point for r in trace] == [HookPoint.PRE_TURN, HookPoint.NOTIFICATION]


def test_only_dispatches_inside_the_block_are_recorded() -> None:
    """Dispatches before and after the block are not recorded; the records stay readable after it."""
    registry = HookRegistry()
    gates(registry, HookResult.allow())
    trace = registry.trace()
    registry.decide(GATE, call("before"))
    with trace:
        registry.decide(GATE, call("inside"))
    registry.decide(GATE, call("after"))
    assert len(trace) == 1
    assert "closed" in repr(trace)


def test_another_thread_is_not_recorded() -> None:
    """A dispatch made by another thread while the trace is open does not show in it, and still works."""
    registry = HookRegistry()
    gates(registry, HookResult.deny("no"))
    seen: list[str] = []
    with registry.trace() as trace:
        worker = threading.Thread(target=lambda: seen.append(registry.decide(GATE, call()).reason))
        worker.start()
        worker.join()
    assert seen == ["no"]
    assert len(trace) == 0


def test_tasks_started_inside_the_block_are_recorded_and_others_are_not() -> None:
    """asyncio tasks inherit the trace when started inside the block; a task started before does not."""
    registry = HookRegistry()
    gates(registry, HookResult.allow())

    async def also_async(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    registry.register(GATE, also_async, name="async-gate")

    async def main() -> int:
        go = asyncio.Event()

        async def dispatch_when_told() -> None:
            await go.wait()
            await registry.adecide(GATE, call("outside"))

        early = asyncio.create_task(dispatch_when_told())
        with registry.trace() as trace:
            await asyncio.gather(registry.adecide(GATE, call("a")), registry.adecide(GATE, call("b")))
            go.set()
            await early
        return len(trace)

    assert asyncio.run(main()) == 2


def test_an_async_dispatch_is_traced() -> None:
    """Async hooks are awaited and recorded, timeouts included, mixed with sync ones."""
    registry = HookRegistry()

    async def slow(ctx: PreToolCallDecideContext) -> HookResult:
        await asyncio.sleep(10)
        return HookResult.allow()

    async def refuse(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("async no")

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, slow, name="slow", timeout=0.01, on_error="ignore")
    gates(registry, HookResult.allow())
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, refuse, name="refuse")

    async def main() -> None:
        with registry.trace() as trace:
            result = await registry.adecide(GATE, call())
        assert result.reason == "async no"
        outcomes = [(c.hook, c.outcome) for c in trace[0].calls]
        assert outcomes == [("slow", "timed out"), ("g0", "allow"), ("refuse", "deny")]
        assert trace[0].decided_by == "refuse"
        assert trace[0].calls[0].exc_type == "TimeoutError"

    asyncio.run(main())


def test_an_async_dispatch_refused_for_a_wrong_context_is_recorded() -> None:
    """The async runner records a wrong context's error too."""
    registry = HookRegistry()

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    registry.pre_tool_call_decide(gate)

    async def main() -> None:
        with registry.trace() as trace, pytest.raises(TypeError, match="PreToolCallDecideContext"):
            await registry.adecide(GATE, NotificationContext(message="m"))  # type: ignore[call-overload]
        assert isinstance(trace[0].error, TypeError)

    asyncio.run(main())


def test_a_trace_on_an_included_registry_sees_the_including_dispatch() -> None:
    """Tracing a registry records dispatches of registries including it; tracing the parent does not see the child."""
    parent, child = HookRegistry(), HookRegistry()
    gates(child, HookResult.deny("child says no"))
    parent.register(GATE, lambda ctx: HookResult.allow(), name="parent-gate", priority=1)
    parent.include(child)
    with child.trace() as trace:
        parent.decide(GATE, call())
    assert trace[0].hooks == ("parent-gate", "g0")
    with parent.trace() as parent_trace:
        child.decide(GATE, call())
    assert len(parent_trace) == 0


def test_nested_traces_each_see_what_they_watch() -> None:
    """Two open traces on different registries record only their own registry's dispatches."""
    first, second = HookRegistry(), HookRegistry()
    with first.trace() as first_trace, second.trace() as second_trace:
        first.notify(HookPoint.NOTIFICATION, NotificationContext(message="1"))
        second.notify(HookPoint.NOTIFICATION, NotificationContext(message="2"))
        second.notify(HookPoint.NOTIFICATION, NotificationContext(message="3"))
    assert (len(first_trace), len(second_trace)) == (1, 2)


def test_an_open_trace_cannot_be_entered_again() -> None:
    """Entering a trace that is already open raises a clear error."""
    registry = HookRegistry()
    with registry.trace() as trace, pytest.raises(HookRegError, match="already open"):
        trace.__enter__()


def test_clear_forgets_the_records() -> None:
    """clear() drops the records so far and later dispatches are still recorded."""
    registry = HookRegistry()
    with registry.trace() as trace:
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="1"))
        trace.clear()
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="2"))
    assert len(trace) == 1
    assert trace[:1] == trace.records


def test_str_is_a_table_with_one_row_per_call_and_the_decider_marked() -> None:
    """str(trace) has a header, one row per hook call, a * on the decider's row and a legend."""
    registry = HookRegistry()
    gates(registry, HookResult.allow(), HookResult.deny("no bash"))
    with registry.trace() as trace:
        registry.decide(GATE, call())
    lines = str(trace).splitlines()
    assert lines[0].startswith("<Trace of HookRegistry(pre_tool_call_decide=2): 1 dispatch(es), closed>")
    assert lines[1].split() == ["#", "point", "about", "hook", "outcome", "detail", "ms"]
    assert lines[2].split()[:6] == ["1", "pre_tool_call_decide", "bash", "(call-1)", "g0", "allow"]
    assert lines[3].startswith("*")
    assert lines[3].split()[1:5] == ["g1", "deny", "no", "bash"]
    assert lines[4] == "* decided the dispatch"


def test_an_empty_trace_says_so() -> None:
    """A trace that recorded nothing prints one line saying so."""
    with HookRegistry().trace() as trace:
        pass
    assert str(trace).endswith("closed>: no dispatches")


def test_the_html_highlights_the_decider_and_escapes_text() -> None:
    """_repr_html_ is one table row per call, the decider's row highlighted, reasons escaped."""
    registry = HookRegistry()
    gates(registry, HookResult.allow(), HookResult.deny("<b>no</b>"))
    with registry.trace() as trace:
        registry.decide(GATE, call())
    page = trace._repr_html_()
    assert page.count("<tr") == 3  # header and two calls
    assert page.count('<tr style="background-color') == 1
    highlighted = page.split('<tr style="')[1]
    assert "g1" in highlighted.split("</tr>")[0]
    assert ";color:" in highlighted.split('"')[0]  # the text colour is set too: legible in a dark theme
    assert "&lt;b&gt;no&lt;/b&gt;" in page
    assert "<b>" not in page


def test_a_transform_record_holds_the_final_subject() -> None:
    """The record of a transform holds what the dispatch returned."""
    registry = HookRegistry()

    @registry.transform_tool_input
    def add(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        return {**ctx.args, "n": 1}

    with registry.trace() as trace:
        registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, call())
    assert trace[0].result == {"n": 1}
    assert trace[0].calls[0].returned == {"n": 1}


def test_a_trace_closed_in_another_context_still_closes() -> None:
    """Closing a trace from another context than the one it opened in (a fixture, a task) restores the registry."""
    registry = HookRegistry()
    gates(registry, HookResult.allow())
    trace = registry.trace()
    contextvars.copy_context().run(trace.__enter__)
    trace.__exit__(None, None, None)
    assert not registry._wrappers
    assert registry._decide[GATE].ctx_type is PreToolCallDecideContext
    assert "closed" in repr(trace)


def test_clear_inside_a_dispatch_drops_that_dispatch() -> None:
    """A dispatch still running when clear() is called is not recorded; those that start later are."""
    registry = HookRegistry()
    trace = registry.trace()

    @registry.pre_turn
    def clearing(ctx: PreTurnContext) -> HookResult:
        trace.clear()
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="after clear"))
        return HookResult.allow()

    with trace:
        registry.decide(HookPoint.PRE_TURN, PreTurnContext(prompt="p", turn=1))
    assert [r.point for r in trace] == [HookPoint.NOTIFICATION]


def test_a_task_started_inside_a_closed_trace_is_not_recorded_later() -> None:
    """A task started inside the block that dispatches after the block closed adds nothing to the closed trace."""
    registry = HookRegistry()
    gates(registry, HookResult.allow())

    async def main() -> tuple[int, int]:
        go = asyncio.Event()

        async def dispatch_when_told() -> None:
            await go.wait()
            await registry.adecide(GATE, call("late"))

        with registry.trace() as closed:
            task = asyncio.create_task(dispatch_when_told())
        with registry.trace() as still_open:  # keeps the registry traced while the late dispatch runs
            go.set()
            await task
        return len(closed), len(still_open)

    assert asyncio.run(main()) == (0, 0)


def test_a_dispatch_running_when_the_trace_closes_is_not_recorded() -> None:
    """A dispatch still awaiting a hook when the trace closes is not filed in it: the closed trace does not grow."""
    registry = HookRegistry()
    release = asyncio.Event()

    async def waiting(ctx: PreToolCallDecideContext) -> HookResult:
        await release.wait()
        return HookResult.allow()

    registry.register(GATE, waiting, name="waiting")

    async def main() -> int:
        trace = registry.trace()
        with trace:
            pending = asyncio.create_task(registry.adecide(GATE, call()))
            await asyncio.sleep(0)
        release.set()
        assert (await pending).allowed
        return len(trace)

    assert asyncio.run(main()) == 0


def test_start_and_stop_span_contexts_like_notebook_cells() -> None:
    """A started trace records dispatches made in other contexts and threads until stopped, then nothing more."""
    registry = HookRegistry()
    gates(registry, HookResult.deny("no"))
    trace = contextvars.Context().run(registry.trace().start)  # one cell
    assert trace.is_open
    assert "open>" in repr(trace)
    contextvars.Context().run(registry.decide, GATE, call("next-cell"))  # another cell, another context
    worker = threading.Thread(target=lambda: registry.decide(GATE, call("thread")))
    worker.start()
    worker.join()
    contextvars.Context().run(trace.stop)
    registry.decide(GATE, call("after"))
    assert [record.tool_name for record in trace] == ["next-cell", "thread"]
    assert not trace.is_open
    assert not registry._wrappers
    assert registry._decide[GATE].ctx_type is PreToolCallDecideContext


def test_a_stopped_trace_stays_closed() -> None:
    """Stopping twice is harmless; starting or entering a closed trace is refused with a clear error."""
    registry = HookRegistry()
    trace = registry.trace().start()
    trace.stop()
    trace.stop()
    with pytest.raises(HookRegError, match=r"Cannot start <Trace .*closed>: it was closed, and a closed trace stays"):
        trace.start()
    with pytest.raises(HookRegError, match=r"Cannot open <Trace .*: it was closed.*Call registry.trace\(\)"):
        trace.__enter__()
    with registry.trace() as block:
        pass
    with pytest.raises(HookRegError, match="it was closed"):
        block.start()


def test_open_traces_cannot_be_started_again_and_new_ones_cannot_be_stopped() -> None:
    """start() on an open trace and stop() on one never started are mistakes named in the error."""
    registry = HookRegistry()
    with registry.trace() as trace, pytest.raises(HookRegError, match=r"Cannot start .*: it is already open"):
        trace.start()
    with pytest.raises(HookRegError, match=r"Cannot stop <Trace .*not started>: it was never started"):
        registry.trace().stop()


def test_stop_inside_the_block_closes_it() -> None:
    """A trace stopped inside its with block records nothing after the stop; leaving the block is then harmless."""
    registry = HookRegistry()
    with registry.trace() as trace:
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="1"))
        trace.stop()
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="2"))
    assert len(trace) == 1
    assert not registry._wrappers


def test_each_record_says_what_the_dispatch_was_about() -> None:
    """Tool points name the tool and call id; a delta names its call; a turn-level point names nothing."""
    registry = HookRegistry()
    with registry.trace() as trace:
        registry.decide(GATE, call("bash"))
        registry.notify(HookPoint.TOOL_CALL_DELTA, ToolCallDeltaContext(call_id="c9", tool_name=None, delta="{"))
        registry.decide(HookPoint.PRE_TURN, PreTurnContext(prompt="p", turn=1))
    tool, delta, turn = trace
    assert (tool.tool_name, tool.call_id, tool.about) == ("bash", "call-1", "bash (call-1)")
    assert (delta.tool_name, delta.about) == (None, "(c9)")
    assert (turn.tool_name, turn.call_id, turn.about) == (None, None, "")


def test_a_wrong_context_is_about_nothing() -> None:
    """A dispatch refused for a wrong context does not read the stray object's fields."""
    registry = HookRegistry()

    class Stray:
        tool_name = "not-a-context"

    with registry.trace() as trace, pytest.raises(TypeError):
        registry.decide(GATE, Stray())  # type: ignore[call-overload]
    assert (trace[0].tool_name, trace[0].about) == (None, "")


def test_hooked_leaves_out_dispatches_no_hook_ran_in() -> None:
    """trace.hooked() is a closed copy holding only the dispatches in which a hook ran, and says so."""
    registry = HookRegistry()
    gates(registry, HookResult.allow())
    with registry.trace() as trace:
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="nobody listens"))
        registry.decide(GATE, call())
        hooked = trace.hooked()
    assert [r.point for r in trace] == [HookPoint.NOTIFICATION, GATE]
    assert [r.point for r in hooked] == [GATE]
    assert repr(hooked).endswith(": 1 dispatch(es) with a hook, closed>")
    assert "no hook ran" not in str(hooked)
    with pytest.raises(HookRegError, match="it was closed"):
        hooked.start()


def make_gate() -> Callable[[PreToolCallDecideContext], HookResult]:
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("no")

    return gate


def test_tables_show_hook_names_without_locals_and_records_keep_the_full_name() -> None:
    """A hook defined in a function shows as its own name in the table; the record keeps the qualified name."""
    registry = HookRegistry()
    registry.register(GATE, make_gate())
    with registry.trace() as trace:
        registry.decide(GATE, call())
    (gate,) = trace[0].calls
    assert gate.hook == "make_gate.<locals>.gate"
    assert gate.label == "gate"
    assert trace[0].decided_by == "make_gate.<locals>.gate"
    assert "<locals>" not in str(trace)
    row = str(trace).splitlines()[2].split()
    assert row[:7] == ["*", "1", "pre_tool_call_decide", "bash", "(call-1)", "gate", "deny"]


def test_a_record_and_a_call_have_readable_reprs() -> None:
    """repr() of a record says point, subject, result, decider, hooks and time; a call's says what it did."""
    registry = HookRegistry()
    gates(registry, HookResult.allow(), HookResult.deny("no bash"))
    with registry.trace() as trace:
        registry.decide(GATE, call())
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="m"))
    gate, note = trace
    assert repr(gate).startswith("<DispatchRecord pre_tool_call_decide bash (call-1): deny by g1; hooks: g0, g1; ")
    assert repr(gate).endswith(" ms>")
    assert repr(note).startswith("<DispatchRecord notification: done; hooks: none ran; ")
    assert repr(gate.calls[0]).startswith("<HookCall g0: allow, ")
    assert repr(gate.calls[1]).startswith("<HookCall g1: deny (no bash), decided, ")
    assert "Registration" not in repr(gate)


def test_an_empty_trace_in_a_notebook_says_so() -> None:
    """The HTML of a trace with no records is the same one line as the text."""
    trace = HookRegistry().trace()
    assert trace._repr_html_() == "<p>&lt;Trace of HookRegistry(): 0 dispatch(es), not started&gt;: no dispatches</p>"


def test_a_harness_trace_shows_one_rule_for_points_nobody_hooks() -> None:
    """Whichever way a point without hooks was passed (skipped by the loop, or dispatched inside resolve_tool_call),
    the table shows no row for it; the records keep every dispatch made, and the table says how many it left out."""
    from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

    def shell(command: str) -> str:
        return "ok"

    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.deny("no"), name="gate")
    model = ScriptedModel([ScriptedTurn.calling("shell", {"command": "ls"}), ScriptedTurn(text="done")])
    with registry.trace() as trace:
        Harness(model, [shell], registry).run("go")
    assert [r.point for r in trace] == [HookPoint.TRANSFORM_TOOL_INPUT, GATE, HookPoint.PERMISSION_DENIED]
    shown = str(trace)
    assert "no hook ran;" not in shown
    assert "transform_tool_input" not in shown
    assert "permission_denied" not in shown
    assert "* 2  pre_tool_call_decide  shell (call-1)  gate  deny" in shown
    assert shown.endswith("* decided the dispatch\n2 dispatches in which no hook ran not shown (see trace.records)")
    assert "transform_tool_input" not in trace._repr_html_()


def test_the_table_still_shows_a_dispatch_nobody_answered_and_one_that_raised() -> None:
    """An on_interaction nobody answers denies, and a dispatch refused before any hook ran raised: both are shown."""
    registry = HookRegistry()
    with registry.trace() as trace:
        registry.decide(HookPoint.ON_INTERACTION, OnInteractionContext(question="q", options=(), tool_name=None))
        with pytest.raises(TypeError):
            registry.decide(GATE, NotificationContext(message="m"))  # type: ignore[call-overload]  # the mistake under test
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="nobody listens"))
    shown = str(trace)
    assert "1  on_interaction" in shown
    assert "no hook ran; deny" in shown
    assert "2  pre_tool_call_decide" in shown
    assert "notification" not in shown
    assert shown.endswith("\n1 dispatch in which no hook ran not shown (see trace.records)")


def test_a_trace_whose_dispatches_no_hook_ran_in_says_so() -> None:
    """Only dispatches nobody hooks: the table is the header and the count left out."""
    registry = HookRegistry()
    with registry.trace() as trace:
        registry.notify(HookPoint.NOTIFICATION, NotificationContext(message="nobody listens"))
    assert str(trace).splitlines()[1:] == [
        "  #  point  about  hook  outcome  detail  ms",
        "1 dispatch in which no hook ran not shown (see trace.records)",
    ]
