"""hookreg.otel: one live span per dispatch, with names, outcomes and nesting, and never a value."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import NoOpTracerProvider, SpanKind, StatusCode

import hookreg.otel
from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    PreToolCallDecideContext,
    PreTurnContext,
    StopRun,
    TransformToolResultContext,
    TurnAction,
)
from hookreg.testing import make_context

if TYPE_CHECKING:
    from otel.conftest import Spans  # how mypy names tests/otel/conftest.py

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
SECRET: Final = "hunter2-SECRET"


def tool_call(tool: str = "bash", call_id: str = "call-1", **args: object) -> PreToolCallDecideContext:
    return PreToolCallDecideContext(tool_name=tool, args=args or {"cmd": "ls"}, call_id=call_id)


def about(span: ReadableSpan) -> object:
    """The tool the span's dispatch was about."""
    return dict(span.attributes or {}).get("gen_ai.tool.name")


def events(span: ReadableSpan) -> list[dict[str, object]]:
    """The span's hookreg.hook events' attributes, in order."""
    return [dict(event.attributes or {}) for event in span.events if event.name == "hookreg.hook"]


def test_a_deny_is_one_span_named_for_its_point_with_who_decided_and_why(spans: Spans) -> None:
    """A denied tool call's span names the point, the tool, the call, the hooks run, the decider and the reason."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.allow(), name="first")
    registry.register(GATE, lambda ctx: HookResult.deny("no shell"), name="guard")
    registry.register(GATE, lambda ctx: HookResult.allow(), name="never")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        registry.decide(GATE, tool_call())
    span = spans.one("hookreg pre_tool_call_decide")
    assert span.kind is SpanKind.INTERNAL
    assert span.instrumentation_scope is not None
    assert span.instrumentation_scope.name == "hookreg"
    assert dict(span.attributes or {}) == {
        "hookreg.point": "pre_tool_call_decide",
        "hookreg.style": "decide",
        "gen_ai.tool.name": "bash",
        "gen_ai.tool.call.id": "call-1",
        "hookreg.hooks": ("first", "guard"),
        "hookreg.decision": "deny",
        "hookreg.decided_by": "guard",
        "hookreg.reason": "no shell",
    }
    assert span.status.status_code is StatusCode.UNSET


def test_each_hook_call_is_an_event_with_its_name_outcome_and_duration(spans: Spans) -> None:
    """One hookreg.hook event per call, in order, timed within the span."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.allow(), name="first")
    registry.register(GATE, lambda ctx: HookResult.ask("sure?"), name="asker")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        registry.decide(GATE, tool_call())
    span = spans.one("hookreg pre_tool_call_decide")
    found = events(span)
    assert [(event["hookreg.hook.name"], event["hookreg.hook.outcome"]) for event in found] == [
        ("first", "allow"),
        ("asker", "ask"),
    ]
    assert all(isinstance(event["hookreg.hook.duration_ms"], float) for event in found)
    assert span.start_time is not None
    assert span.end_time is not None
    assert all(span.start_time <= event.timestamp <= span.end_time for event in span.events)
    assert dict(span.attributes or {})["hookreg.decision"] == "ask"


def test_a_dispatch_span_is_a_child_of_the_current_span_and_restores_it(spans: Spans) -> None:
    """Under an outer span the dispatch's span is its child, and the outer span is current again afterwards."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.allow(), name="gate")
    with (
        hookreg.otel.instrument(registry, tracer_provider=spans.provider),
        spans.tracer.start_as_current_span("agent") as agent,
    ):
        registry.decide(GATE, tool_call())
        assert trace.get_current_span() is agent
    dispatch, outer = spans.one("hookreg pre_tool_call_decide"), spans.one("agent")
    assert dispatch.parent is not None
    assert dispatch.parent.span_id == outer.context.span_id
    assert dispatch.context.trace_id == outer.context.trace_id


def test_spans_are_live_so_work_inside_a_hook_nests_under_the_dispatch(spans: Spans) -> None:
    """A dispatch made by a hook, and a span a hook opens, are children of the running dispatch's span."""
    registry = HookRegistry()

    def outer(ctx: PreToolCallDecideContext) -> HookResult:
        if ctx.tool_name == "outer":
            with spans.tracer.start_as_current_span("inside the hook"):
                registry.decide(GATE, tool_call("inner", call_id="call-2"))
        return HookResult.allow()

    registry.register(GATE, outer, name="outer")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        registry.decide(GATE, tool_call("outer"))
    first, second = spans.named("hookreg pre_tool_call_decide")  # the inner one ends first
    inner, outer_span = (
        (first, second) if dict(first.attributes or {})["gen_ai.tool.name"] == "inner" else (second, first)
    )
    opened = spans.one("inside the hook")
    assert opened.parent is not None
    assert opened.parent.span_id == outer_span.context.span_id
    assert inner.parent is not None
    assert inner.parent.span_id == opened.context.span_id
    assert outer_span.parent is None


def test_a_failing_gate_sets_error_with_its_type_and_never_its_message(spans: Spans) -> None:
    """A raising gate makes the span ERROR with error.type, a description of hookreg's own, and no exception event."""
    registry = HookRegistry()

    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        raise ValueError(SECRET)

    registry.register(GATE, gate, name="gate")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        result = registry.decide(GATE, tool_call())
    assert not result.allowed
    span = spans.one("hookreg pre_tool_call_decide")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "hook 'gate' raised ValueError"
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == "ValueError"
    assert attributes["hookreg.decided_by"] == "gate"
    assert [event.name for event in span.events] == ["hookreg.hook"]
    assert events(span)[0]["hookreg.hook.outcome"] == "raised"
    assert events(span)[0]["error.type"] == "ValueError"
    assert SECRET not in span.to_json()


def test_an_ignored_failure_still_marks_the_span_as_failed(spans: Spans) -> None:
    """A gate whose on_error lets the dispatch go on still sets ERROR: the hook failed."""
    registry = HookRegistry()

    def broken(ctx: PreToolCallDecideContext) -> HookResult:
        raise KeyError(SECRET)

    registry.register(GATE, broken, name="broken", on_error="ignore")
    registry.register(GATE, lambda ctx: HookResult.allow(), name="fine")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        assert registry.decide(GATE, tool_call()).allowed
    span = spans.one("hookreg pre_tool_call_decide")
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["hookreg.decision"] == "allow"
    assert dict(span.attributes or {})["error.type"] == "KeyError"


def test_a_raised_failure_a_wrong_return_and_a_wrong_context_are_errors(spans: Spans) -> None:
    """on_error="raise", a wrong return and a wrong context each end their span as ERROR, described by type."""
    registry = HookRegistry()

    def raising(ctx: PreTurnContext) -> HookResult:
        raise RuntimeError(SECRET)

    registry.register(HookPoint.PRE_TURN, raising, name="raising", on_error="raise")
    registry.register(GATE, lambda ctx: SECRET, name="wrong")  # a wrong return, on purpose
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        with pytest.raises(RuntimeError):
            registry.decide(HookPoint.PRE_TURN, make_context(HookPoint.PRE_TURN))
        registry.decide(GATE, tool_call())
        with pytest.raises(HookTypeError):
            registry.decide(HookPoint.STOP, make_context(HookPoint.PRE_TURN))  # type: ignore[call-overload]  # on purpose
    raised, wrong, misdirected = spans.finished
    assert raised.status.description == "hook 'raising' raised RuntimeError"
    assert wrong.status.description == "hook 'wrong' returned str"
    assert dict(wrong.attributes or {})["error.type"] == "HookReturnError"
    assert misdirected.status.description == "dispatch raised HookTypeError"
    assert all(span.status.status_code is StatusCode.ERROR for span in spans.finished)
    assert all(SECRET not in span.to_json() for span in spans.finished)


def test_a_timed_out_hook_is_an_error(spans: Spans) -> None:
    """An async gate past its timeout makes the span ERROR, described as timed out."""
    registry = HookRegistry()

    async def slow(ctx: PreToolCallDecideContext) -> HookResult:
        await asyncio.sleep(1)
        return HookResult.allow()

    registry.register(GATE, slow, name="slow", timeout=0.01)
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        asyncio.run(registry.adecide(GATE, tool_call()))
    span = spans.one("hookreg pre_tool_call_decide")
    assert span.status.description == "hook 'slow' timed out"
    assert dict(span.attributes or {})["error.type"] == "TimeoutError"
    assert events(span)[0]["hookreg.hook.outcome"] == "timed out"


def test_a_stop_names_who_stopped_and_why_and_is_not_an_error(spans: Spans) -> None:
    """StopRun from a hook gives hookreg.stopped_by and hookreg.reason, status unset, and still ends the span."""
    registry = HookRegistry()

    def halt(ctx: PreTurnContext) -> HookResult:
        raise StopRun("budget spent")

    def odd(ctx: PreTurnContext) -> HookResult:
        raise StopRun(("not", "text"))  # type: ignore[arg-type]  # a reason that is not a str, on purpose

    registry.register(HookPoint.PRE_TURN, halt, name="budget", priority=1)
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider), pytest.raises(StopRun):
        registry.decide(HookPoint.PRE_TURN, make_context(HookPoint.PRE_TURN))
    registry.unregister("budget")
    registry.register(HookPoint.PRE_TURN, odd, name="odd")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider), pytest.raises(StopRun):
        registry.decide(HookPoint.PRE_TURN, make_context(HookPoint.PRE_TURN))
    span, oddly = spans.named("hookreg pre_turn")
    assert "hookreg.reason" not in dict(oddly.attributes or {})  # only text reaches a span
    attributes = dict(span.attributes or {})
    assert (attributes["hookreg.stopped_by"], attributes["hookreg.reason"]) == ("budget", "budget spent")
    assert "hookreg.decision" not in attributes
    assert span.status.status_code is StatusCode.UNSET
    assert events(span)[0]["hookreg.hook.outcome"] == "stopped"


def test_actions_are_named_by_kind_and_transforms_say_whether_they_rewrote(spans: Spans) -> None:
    """hookreg.decision is the action's kind; hookreg.rewritten tells a changed subject from an unchanged one."""
    registry = HookRegistry()
    registry.register(HookPoint.MODEL_TURN_FINISHED, lambda ctx: TurnAction.repeat(), name="again")
    registry.register(HookPoint.INVALID_TOOL_CALL, lambda ctx: InvalidToolCallAction.skip("no"), name="skipper")
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {"cmd": "pwd"} if ctx.tool_name == "a" else None)
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        registry.decide(HookPoint.MODEL_TURN_FINISHED, make_context(HookPoint.MODEL_TURN_FINISHED))
        registry.decide(HookPoint.INVALID_TOOL_CALL, make_context(HookPoint.INVALID_TOOL_CALL))
        for tool in ("a", "b"):
            registry.transform(
                HookPoint.TRANSFORM_TOOL_INPUT, PreToolCallDecideContext(tool_name=tool, args={}, call_id="c")
            )
    turn, invalid, changed, unchanged = (dict(span.attributes or {}) for span in spans.finished)
    assert (turn["hookreg.decision"], turn["hookreg.decided_by"]) == ("repeat", "again")
    assert invalid["hookreg.decision"] == "skip"
    assert (changed["hookreg.rewritten"], unchanged["hookreg.rewritten"]) == (True, False)
    assert "hookreg.decision" not in changed


def test_a_dispatch_nobody_hooks_and_an_observer_are_spans_too(spans: Spans) -> None:
    """Every dispatch is a span: one no hook ran in lists no hooks; an observer's has no decision."""
    registry = HookRegistry()
    registry.register(HookPoint.POST_TURN, lambda ctx: None, name="watcher")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        registry.decide(GATE, tool_call())
        registry.notify(HookPoint.POST_TURN, make_context(HookPoint.POST_TURN))
    gate, observed = spans.finished
    assert dict(gate.attributes or {})["hookreg.hooks"] == ()
    assert dict(gate.attributes or {})["hookreg.decision"] == "allow"
    assert dict(observed.attributes or {}) == {
        "hookreg.point": "post_turn",
        "hookreg.style": "observe",
        "hookreg.hooks": ("watcher",),
    }


def test_resolve_tool_call_is_one_span_per_dispatch(spans: Spans) -> None:
    """resolve_tool_call makes its transform and its gate two sibling spans, about the same call."""
    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {"cmd": "pwd"}, name="rewrite")
    registry.register(GATE, lambda ctx: HookResult.allow(), name="gate")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        registry.resolve_tool_call(tool_call(call_id="c9"))
    names = [span.name for span in spans.finished]
    assert names == ["hookreg transform_tool_input", "hookreg pre_tool_call_decide"]
    assert all(dict(span.attributes or {})["gen_ai.tool.call.id"] == "c9" for span in spans.finished)


def test_no_argument_result_or_exception_message_reaches_a_span(spans: Spans) -> None:
    """A secret planted in args, a tool result, a transform's output, an observer's and a gate's exception: nowhere."""
    registry = HookRegistry()

    def leaky_gate(ctx: PreToolCallDecideContext) -> HookResult:
        raise PermissionError(f"{SECRET} in {ctx.args}")

    def leaky_observer(ctx: object) -> None:
        raise OSError(SECRET)

    def rewrite(ctx: TransformToolResultContext) -> str:
        return f"{ctx.presentation} and {SECRET}"

    def rewrite_args(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        return {**ctx.args, "token": SECRET}

    registry.register(GATE, leaky_gate, name="gate")
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, rewrite_args, name="rewrite_args")
    registry.register(HookPoint.TRANSFORM_TOOL_RESULT, rewrite, name="rewrite")
    registry.register(HookPoint.POST_TOOL_CALL, leaky_observer, name="observer")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        registry.resolve_tool_call(tool_call(password=SECRET))
        registry.transform(
            HookPoint.TRANSFORM_TOOL_RESULT,
            make_context(HookPoint.TRANSFORM_TOOL_RESULT, raw_result=SECRET, presentation=SECRET),
        )
        registry.notify(
            HookPoint.POST_TOOL_CALL,
            make_context(HookPoint.POST_TOOL_CALL, result=SECRET, raw_result=SECRET, args={"k": SECRET}),
        )
    assert len(spans.finished) == 5
    for span in spans.finished:
        values = [*(span.attributes or {}).values(), span.name, span.status.description]
        values += [value for event in span.events for value in (event.name, *(event.attributes or {}).values())]
        assert not [value for value in values if SECRET in str(value)], span.name
        assert SECRET not in span.to_json()


def test_uninstrument_stops_the_spans_and_the_context_manager_does_it_on_exit(spans: Spans) -> None:
    """After uninstrument() (or the with block) dispatches make no span; uninstrumenting twice does nothing."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.allow(), name="gate")
    inline = registry._decide[GATE].ctx_type
    instrumentation = hookreg.otel.instrument(registry, tracer_provider=spans.provider)
    assert instrumentation.is_instrumented
    assert repr(instrumentation) == f"<Instrumentation of {registry!r}: instrumented>"
    registry.decide(GATE, tool_call())
    instrumentation.uninstrument()
    instrumentation.uninstrument()
    registry.decide(GATE, tool_call())
    assert len(spans.finished) == 1
    assert not instrumentation.is_instrumented
    assert repr(instrumentation).endswith(": uninstrumented>")
    assert registry._decide[GATE].ctx_type is inline  # the inline loop is back: nothing is paid any more
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider) as again:
        registry.decide(GATE, tool_call())
    registry.decide(GATE, tool_call())
    assert len(spans.finished) == 2
    assert not again.is_instrumented


def test_a_dispatch_running_when_uninstrumented_still_ends_its_span(spans: Spans) -> None:
    """A hook that uninstruments: its own dispatch's span ends, and the context is restored."""
    registry = HookRegistry()
    instrumentation = hookreg.otel.instrument(registry, tracer_provider=spans.provider)

    def stopper(ctx: PreToolCallDecideContext) -> HookResult:
        instrumentation.uninstrument()
        return HookResult.allow()

    registry.register(GATE, stopper, name="stopper")
    registry.decide(GATE, tool_call())
    registry.decide(GATE, tool_call())
    assert len(spans.finished) == 1
    assert spans.finished[0].end_time is not None
    assert not trace.get_current_span().get_span_context().is_valid


def test_a_registry_is_instrumented_once(spans: Spans) -> None:
    """Instrumenting an instrumented registry is refused, naming the live instrumentation; another one is fine."""
    registry = HookRegistry()
    with (
        hookreg.otel.instrument(HookRegistry(), tracer_provider=spans.provider),
        hookreg.otel.instrument(registry, tracer_provider=spans.provider) as live,
    ):
        with pytest.raises(HookValueError, match="is instrumented already") as info:
            hookreg.otel.instrument(registry, tracer_provider=spans.provider)
        assert repr(live) in str(info.value)
        assert isinstance(info.value, ValueError)


def test_bad_arguments_are_refused() -> None:
    """Only a HookRegistry can be instrumented, and only with something that gives tracers."""
    with pytest.raises(HookTypeError, match="only a HookRegistry can be instrumented"):
        hookreg.otel.instrument("registry")  # type: ignore[arg-type]  # on purpose
    with pytest.raises(HookTypeError, match="Pass an OpenTelemetry TracerProvider"):
        hookreg.otel.instrument(HookRegistry(), tracer_provider=object())  # type: ignore[arg-type]  # on purpose


def test_included_registries_and_including_ones_make_spans(spans: Spans) -> None:
    """Instrumenting a registry covers the registries it includes and those including it, one span per dispatch."""
    top, middle, bottom = HookRegistry(), HookRegistry(), HookRegistry()
    top.include(middle)
    middle.include(bottom)
    bottom.register(GATE, lambda ctx: HookResult.deny("from below"), name="below")
    with hookreg.otel.instrument(middle, tracer_provider=spans.provider):
        for registry in (top, middle, bottom):
            registry.decide(GATE, tool_call())
    assert len(spans.finished) == 3
    assert all(dict(span.attributes or {})["hookreg.decided_by"] == "below" for span in spans.finished)
    other = HookRegistry()
    other.include(HookRegistry())
    other.decide(GATE, tool_call())
    assert len(spans.finished) == 3


def test_tracing_and_instrumenting_together(spans: Spans) -> None:
    """A registry traced and instrumented at once gives both their record and their span."""
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.deny("no"), name="gate")
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider), registry.trace() as traced:
        registry.decide(GATE, tool_call())
    assert traced[0].decided_by == "gate"
    assert dict(spans.one("hookreg pre_tool_call_decide").attributes or {})["hookreg.decided_by"] == "gate"


def test_the_async_surface_nests_each_task_under_its_own_span(spans: Spans) -> None:
    """Concurrent async dispatches each nest under the span of the task that made them, and see their own span."""
    registry = HookRegistry()
    seen: dict[str, int] = {}

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        await asyncio.sleep(0.01)  # let the other task run in between
        seen[ctx.tool_name] = trace.get_current_span().get_span_context().span_id
        return HookResult.deny("no") if ctx.tool_name == "b" else HookResult.allow()

    registry.register(GATE, gate, name="gate")

    async def agent(tool: str) -> None:
        with spans.tracer.start_as_current_span(f"agent {tool}"):
            await registry.adecide(GATE, tool_call(tool))

    async def main() -> None:
        await asyncio.gather(agent("a"), agent("b"))

    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        asyncio.run(main())
    for tool in ("a", "b"):
        (dispatch,) = (
            span
            for span in spans.named("hookreg pre_tool_call_decide")
            if dict(span.attributes or {})["gen_ai.tool.name"] == tool
        )
        assert dispatch.parent is not None
        assert dispatch.parent.span_id == spans.one(f"agent {tool}").context.span_id
        assert seen[tool] == dispatch.context.span_id
        assert dict(dispatch.attributes or {})["hookreg.decision"] == ("deny" if tool == "b" else "allow")


def test_a_sampled_out_or_no_op_provider_costs_no_error() -> None:
    """With sampling off, or the API's no-op provider, dispatches run and no span is exported."""
    exporter = InMemorySpanExporter()
    sampled_out = TracerProvider(sampler=ALWAYS_OFF)
    sampled_out.add_span_processor(SimpleSpanProcessor(exporter))
    registry = HookRegistry()
    registry.register(GATE, lambda ctx: HookResult.deny("no"), name="gate")
    for provider in (sampled_out, NoOpTracerProvider()):
        with hookreg.otel.instrument(registry, tracer_provider=provider):
            assert not registry.decide(GATE, tool_call()).allowed
    assert exporter.get_finished_spans() == ()


def test_without_a_provider_the_global_one_is_used(monkeypatch: pytest.MonkeyPatch, spans: Spans) -> None:
    """tracer_provider=None asks the API for the global provider (here: patched for this test only)."""
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: spans.provider)
    registry = HookRegistry()
    with hookreg.otel.instrument(registry):
        registry.decide(GATE, tool_call())
    assert len(spans.named("hookreg pre_tool_call_decide")) == 1


def test_import_hookreg_does_not_import_opentelemetry() -> None:
    """`import hookreg` leaves OpenTelemetry alone; only `import hookreg.otel` loads it."""
    code = (
        "import sys, hookreg; print(any(m.split('.')[0] == 'opentelemetry' for m in sys.modules)); "
        "import hookreg.otel; print(any(m.split('.')[0] == 'opentelemetry' for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_without_the_api_the_import_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """With opentelemetry hidden, importing hookreg.otel says `pip install 'hookreg[otel]'`."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.delitem(sys.modules, "hookreg.otel")
    with pytest.raises(ImportError, match=r"pip install 'hookreg\[otel\]'") as info:
        importlib.import_module("hookreg.otel")
    assert info.value.name == "opentelemetry"
