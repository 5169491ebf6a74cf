"""hookreg's dispatch spans inside real agent runs: the harness and each adapter, offline, with tracing on.

pydantic-ai and Strands trace with OpenTelemetry, so their own spans are
pointed at the in-memory provider and hookreg's spans must nest under them.
The OpenAI Agents SDK traces with its own span system, and LangChain through
LangSmith callbacks exported after the fact: neither makes an OpenTelemetry
span current while tools run, so there hookreg's spans nest under a span the
test opens around the run (and, for OpenAI Agents, the SDK's own function
span is shown to be current while hookreg's span is).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

import hookreg.otel
from hookreg import HookPoint, HookRegistry, HookResult, PreToolCallDecideContext

if TYPE_CHECKING:
    from otel.conftest import Spans  # how mypy names tests/otel/conftest.py

GATE_SPAN = "hookreg pre_tool_call_decide"


def parent_name(spans: Spans, span: ReadableSpan) -> str | None:
    """The name of `span`'s parent among the finished spans, else ``None``."""
    if span.parent is None:
        return None
    return next((each.name for each in spans.finished if each.context.span_id == span.parent.span_id), None)


def ancestors(spans: Spans, span: ReadableSpan) -> list[str]:
    """The names of `span`'s ancestors, nearest first."""
    names: list[str] = []
    by_id = {each.context.span_id: each for each in spans.finished}
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


def gated(seen: list[int] | None = None) -> HookRegistry:
    """A registry whose gate allows everything, noting the current span's id when given a list."""
    registry = HookRegistry()

    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        if seen is not None:
            seen.append(trace.get_current_span().get_span_context().span_id)
        return HookResult.allow()

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, name="gate")
    return registry


@pytest.fixture
def no_real_models() -> Iterator[None]:
    """pydantic-ai refuses real model requests for the test."""
    from pydantic_ai import models

    allowed = models.ALLOW_MODEL_REQUESTS
    models.ALLOW_MODEL_REQUESTS = False
    yield
    models.ALLOW_MODEL_REQUESTS = allowed


@pytest.mark.usefixtures("no_real_models")
def test_pydantic_ai_tool_span_is_the_parent_of_the_gate_span(spans: Spans) -> None:
    """With pydantic-ai's Instrumentation capability on the test provider, execute_tool is the gate span's parent."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    from hookreg.adapters.pydantic_ai import hookreg_capability

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest) and any(isinstance(part, ToolReturnPart) for part in last.parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("shell", {"command": "ls"}, tool_call_id="call-1")])

    registry = gated()
    settings = InstrumentationSettings(tracer_provider=spans.provider)
    agent = Agent(
        FunctionModel(respond), capabilities=[Instrumentation(settings=settings), hookreg_capability(registry)]
    )

    @agent.tool_plain
    def shell(command: str) -> str:
        return f"ran {command}"

    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        assert asyncio.run(agent.run("list files")).output == "done"  # run_sync would leave its event loop open
    gate = spans.one(GATE_SPAN)
    assert parent_name(spans, gate) == "execute_tool shell"
    assert ancestors(spans, gate)[-1] == "invoke_agent agent"
    assert dict(gate.attributes or {})["gen_ai.tool.call.id"] == "call-1"
    turns = spans.named("hookreg pre_turn")
    assert turns
    assert all(parent_name(spans, turn) is not None for turn in turns)


def test_strands_cycle_span_is_the_parent_of_the_gate_span(monkeypatch: pytest.MonkeyPatch, spans: Spans) -> None:
    """With Strands' tracer on the test provider, the gate's span nests in its event-loop cycle and agent spans."""
    from strands import Agent, tool
    from strands.models import Model
    from strands.telemetry import tracer as strands_tracer
    from strands.types.content import Messages
    from strands.types.streaming import StreamEvent

    from hookreg.adapters.strands import HookregProvider

    # Strands builds its tracer once, from the global provider: give it one on the test provider instead.
    ours = strands_tracer.Tracer()
    ours.tracer_provider = spans.provider
    ours.tracer = spans.provider.get_tracer(ours.service_name)
    monkeypatch.setattr(strands_tracer, "_tracer_instance", ours)

    @tool
    def bash(command: str) -> str:
        """Run a shell command (pretend).

        Args:
            command: The command line.
        """
        return command

    class Scripted(Model):
        """Calls bash once, then answers."""

        def update_config(self, **model_config: Any) -> None:
            pass

        def get_config(self) -> Any:
            return {}

        def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
            answered = any("toolResult" in block for block in messages[-1]["content"])
            yield {"messageStart": {"role": "assistant"}}
            if answered:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": "done"}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
                return
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "call-1", "name": "bash"}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"command": "ls"})}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}

    registry = gated()
    agent = Agent(model=Scripted(), tools=[bash], hooks=[HookregProvider(registry)], callback_handler=None)
    with hookreg.otel.instrument(registry, tracer_provider=spans.provider):
        agent("list files")
    gate = spans.one(GATE_SPAN)
    assert parent_name(spans, gate) == "execute_event_loop_cycle"  # Strands gates before its tool span starts
    assert ancestors(spans, gate)[-1].startswith("invoke_agent")
    assert dict(gate.attributes or {})["gen_ai.tool.call.id"] == "call-1"


def test_openai_agents_gate_span_runs_inside_the_sdk_function_span(
    monkeypatch: pytest.MonkeyPatch, spans: Spans
) -> None:
    """OpenAI Agents traces with its own spans: its function span is current while hookreg's gate span is."""
    from agents import Agent, Runner, function_tool
    from agents.testing import ScriptedModel, assistant_message, function_call
    from agents.tracing import Span, Trace, TracingProcessor, get_current_span, setup
    from agents.tracing.provider import DefaultTraceProvider

    from hookreg.adapters.openai_agents import guard_tools, hookreg_run_hooks

    class Memory(TracingProcessor):
        """Keeps the SDK's finished spans; exports nothing."""

        def __init__(self) -> None:
            self.ended: list[Span[Any]] = []

        def on_trace_start(self, trace: Trace) -> None:
            pass

        def on_trace_end(self, trace: Trace) -> None:
            pass

        def on_span_start(self, span: Span[Any]) -> None:
            pass

        def on_span_end(self, span: Span[Any]) -> None:
            self.ended.append(span)

        def shutdown(self) -> None:
            pass

        def force_flush(self) -> None:
            pass

    memory = Memory()
    provider = DefaultTraceProvider()
    provider.set_processors([memory])
    provider.set_disabled(False)
    monkeypatch.setattr(setup, "GLOBAL_TRACE_PROVIDER", provider)  # the SDK's tracing, for this test only

    sdk_spans: list[str | None] = []
    otel_spans: list[int] = []
    registry = gated(otel_spans)
    registry.register(
        HookPoint.PRE_TOOL_CALL_DECIDE,
        lambda ctx: sdk_spans.append(getattr(get_current_span(), "span_id", None)) or HookResult.allow(),  # type: ignore[func-returns-value]  # append returns None
        name="sdk_span",
    )

    @function_tool
    def shell(command: str) -> str:
        """Run a shell command (pretend)."""
        return f"ran {command}"

    model = ScriptedModel([[function_call("shell", {"command": "ls"}, call_id="call-1")], [assistant_message("ok")]])
    agent = Agent(name="ops", model=model, tools=guard_tools([shell], registry))
    hooks = hookreg_run_hooks(registry)
    with (
        hookreg.otel.instrument(registry, tracer_provider=spans.provider),
        spans.tracer.start_as_current_span("agent run"),
    ):
        asyncio.run(Runner.run(agent, "list files", hooks=hooks, run_config=hooks.run_config()))
    gate = spans.one(GATE_SPAN)
    assert parent_name(spans, gate) == "agent run"
    assert otel_spans == [gate.context.span_id]
    (function_span,) = (span for span in memory.ended if getattr(span.span_data, "name", None) == "shell")
    assert sdk_spans == [function_span.span_id]


def test_langchain_gate_span_nests_under_the_span_around_the_run(spans: Spans) -> None:
    """LangChain makes no OpenTelemetry span current: the gate's span nests under the one around the agent run."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from hookreg.adapters.langchain import HookregMiddleware

    @tool
    def bash(command: str) -> str:
        """Run a shell command (pretend)."""
        return command

    class Scripted(GenericFakeChatModel):
        """Plays back scripted answers."""

        def bind_tools(self, tools: Sequence[object], **kwargs: object) -> Scripted:
            return self

    call = AIMessage(content="", tool_calls=[{"name": "bash", "args": {"command": "ls"}, "id": "call-1"}])
    model = Scripted(messages=iter([call, AIMessage(content="done")]))
    registry = gated()
    agent = create_agent(model, tools=[bash], middleware=[HookregMiddleware(registry)])
    with (
        hookreg.otel.instrument(registry, tracer_provider=spans.provider),
        spans.tracer.start_as_current_span("agent run"),
    ):
        agent.invoke({"messages": [HumanMessage(content="list files")]})
    gate = spans.one(GATE_SPAN)
    assert parent_name(spans, gate) == "agent run"
    assert dict(gate.attributes or {})["gen_ai.tool.call.id"] == "call-1"
    assert all(ancestors(spans, span) == ["agent run"] for span in spans.finished if span.name.startswith("hookreg "))


def test_the_harness_run_is_a_tree_of_dispatch_spans(spans: Spans) -> None:
    """A harness run under an outer span: every point it dispatches is a span under it, the gate naming the tool."""
    from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

    def shell(command: str) -> str:
        return f"ran {command}"

    registry = gated()
    registry.register(HookPoint.ON_SESSION_END, lambda ctx: None, name="ended")
    model = ScriptedModel([ScriptedTurn.calling("shell", {"command": "ls"}), ScriptedTurn(text="done")])
    with (
        hookreg.otel.instrument(registry, tracer_provider=spans.provider),
        spans.tracer.start_as_current_span("agent run"),
    ):
        assert Harness(model, [shell], registry).run("list files").outcome.status == "completed"
    dispatches = [span for span in spans.finished if span.name.startswith("hookreg ")]
    assert {GATE_SPAN, "hookreg on_session_end"} <= {span.name for span in dispatches}
    assert all(parent_name(spans, span) == "agent run" for span in dispatches)
    assert dict(spans.one(GATE_SPAN).attributes or {})["gen_ai.tool.name"] == "shell"
