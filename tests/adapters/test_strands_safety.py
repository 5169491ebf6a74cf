"""Strands' own tool path keeps working with hookreg attached: its unknown-tool handling, its schema rules, its
structured output, its duck-typed models, and streamed events free of hookreg's state."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, cast

import pytest
from pydantic import BaseModel
from strands import Agent
from strands.hooks import AfterInvocationEvent, BeforeInvocationEvent, BeforeToolCallEvent
from strands.hooks import HookRegistry as StrandsHookRegistry
from strands.middleware import ExecuteToolContext, ExecuteToolStage, MiddlewareNext
from strands.multiagent import GraphBuilder, Status
from strands.types.content import Messages
from strands.types.events import ToolResultEvent, TypedEvent
from strands.types.streaming import StreamEvent
from test_strands import ScriptedModel, echo_tool

from hookreg import (
    HookRegistry,
    HookResult,
    ModelTurnFinishedContext,
    OnSessionEndContext,
    PreToolCallDecideContext,
    RequestPatch,
    TurnAction,
)
from hookreg.adapters.strands import HookregProvider
from hookreg.testing.conformance import TOOL_NAME, RecordingTool


def _allow_echo_only(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow() if ctx.tool_name == TOOL_NAME else HookResult.deny(f"{ctx.tool_name} is not allowed")


async def _stream(agent: Agent, prompt: str) -> list[dict[str, Any]]:
    return [event async for event in agent.stream_async(prompt)]


def test_streamed_events_carry_no_hookreg_state() -> None:
    """The run's state lives where the caller never sees it: no streamed event has a ``hookreg`` key."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    model = ScriptedModel([{"text": "hi"}, "done"])
    agent = Agent(model=model, tools=[echo_tool(RecordingTool())], hooks=[HookregProvider(registry)])
    events = asyncio.run(_stream(agent, "hi"))
    assert model.tool_outputs == ["hi"]
    assert [event for event in events if "hookreg" in event] == []


async def _serve_unknown(
    context: ExecuteToolContext, next_fn: MiddlewareNext[ExecuteToolContext, TypedEvent]
) -> AsyncGenerator[TypedEvent, None]:
    """A Strands tool middleware serving calls to ``weather``, a tool the agent does not have."""
    if context.tool is None and context.tool_use["name"] == "weather":
        use = context.tool_use
        yield ToolResultEvent({"toolUseId": use["toolUseId"], "status": "success", "content": [{"text": "sunny"}]})
        return
    async for event in next_fn(context):
        yield event


def test_a_tool_a_middleware_serves_is_not_refused_as_unknown() -> None:
    """With no invalid_tool_call hook, a call to a tool only a Strands middleware serves reaches that middleware."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    model = ScriptedModel([("weather", {"city": "Oslo"}), "done"])
    agent = Agent(model=model, tools=[echo_tool(RecordingTool())], hooks=[HookregProvider(registry)])
    agent.add_middleware(ExecuteToolStage, _serve_unknown)
    agent("weather?")
    assert model.tool_outputs == ["sunny"]


def test_an_unknown_tool_gets_strands_own_error_without_an_invalid_tool_call_hook() -> None:
    """An unknown tool's error result is Strands' own text when nobody listens at invalid_tool_call."""

    def run(provider: list[Any]) -> str:
        model = ScriptedModel([("ecko", {"text": "hi"}), "done"])
        Agent(model=model, tools=[echo_tool(RecordingTool())], hooks=provider, callback_handler=None)("hi")
        [seen] = model.tool_outputs
        return seen

    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    assert run([HookregProvider(registry)]) == run([])


def test_arguments_strands_accepts_are_not_refused_by_the_schema() -> None:
    """With no invalid_tool_call hook, hookreg's schema check never refuses what Strands runs (a missing field)."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    model = ScriptedModel([{"prefix": ">"}, "done"])  # echo's schema requires "text"; Strands does not check
    Agent(model=model, tools=[echo_tool(lambda **kw: str(sorted(kw)))], hooks=[HookregProvider(registry)])("hi")
    assert model.tool_outputs == ["['prefix']"]


class DuckModel:
    """A model Strands calls through ``stream`` alone: no ``get_config``, not a ``strands.models.Model``."""

    stateful = False

    def __init__(self) -> None:
        self.scripted = ScriptedModel(["hello"])

    def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        return self.scripted.stream(messages, *args, **kwargs)


def test_a_duck_typed_model_runs() -> None:
    """Strands runs a model that has no get_config; so does an agent with hookreg attached."""
    registry, names = HookRegistry(), list[str | None]()
    registry.post_turn(lambda ctx: None)
    agent = Agent(model=DuckModel(), hooks=[HookregProvider(registry)], callback_handler=None)  # type: ignore[arg-type]
    assert str(agent("hi")).strip() == "hello"

    @registry.model_turn_finished  # a hook that needs the model's name
    def judge(ctx: ModelTurnFinishedContext) -> TurnAction:
        names.append(ctx.model)
        return TurnAction.continue_run()

    agent.model = DuckModel()  # type: ignore[assignment]
    assert str(agent("hi")).strip() == "hello"
    assert names == ["DuckModel"]


class Weather(BaseModel):
    city: str


def test_structured_output_is_not_a_user_tool_call_and_completes() -> None:
    """Strands' structured-output tool reaches no tool point (an allowlist gate cannot deny it); the run completes."""
    registry, gated, ends = HookRegistry(), list[str](), list[OnSessionEndContext]()

    @registry.pre_tool_call_decide
    def allowlist(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx.tool_name)
        return _allow_echo_only(ctx)

    registry.on_session_end(ends.append)
    model = ScriptedModel([("Weather", {"city": "Oslo"}), "unexpected"])
    agent = Agent(model=model, hooks=[HookregProvider(registry)], callback_handler=None)
    result = agent("weather?", structured_output_model=Weather)
    assert result.structured_output == Weather(city="Oslo")
    assert gated == []
    assert [ctx.outcome.status for ctx in ends] == ["completed"]


def test_active_tools_restricts_user_tools_only() -> None:
    """An active_tools patch leaves Strands' structured-output tool offered (it restricts user tools only)."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset()))
    model = ScriptedModel([("Weather", {"city": "Oslo"})])
    agent = Agent(
        model=model, tools=[echo_tool(RecordingTool())], hooks=[HookregProvider(registry)], callback_handler=None
    )
    result = agent("weather?", structured_output_model=Weather)
    assert result.structured_output == Weather(city="Oslo")
    assert [spec["name"] for spec in model.requests[0]["tool_specs"]] == ["Weather"]


class RefusesPass:
    """A Strands hook provider whose `event` callback raises the `refuse`-th time it runs."""

    def __init__(self, event: type[BeforeInvocationEvent | AfterInvocationEvent], refuse: int) -> None:
        self.event: type[Any] = event
        self.refuse, self.seen = refuse, 0

    def register_hooks(self, registry: StrandsHookRegistry, **kwargs: Any) -> None:
        registry.add_callback(self.event, self.note)

    def note(self, event: object) -> None:
        self.seen += 1
        if self.seen == self.refuse:
            raise RuntimeError("pass refused")


@pytest.mark.parametrize(
    "other",
    [
        lambda: RefusesPass(BeforeInvocationEvent, 2),  # the resumed pass's BeforeInvocationEvent raises
        lambda: RefusesPass(AfterInvocationEvent, 1),  # a callback after hookreg's raises once it asked to resume
    ],
    ids=["before_resumed_pass", "after_the_resume_was_asked"],
)
def test_a_resume_that_never_runs_ends_the_session(other: Callable[[], RefusesPass]) -> None:
    """A stop deny resumes the agent; when the resumed pass never runs, on_session_end still fires, once."""
    registry, ends = HookRegistry(), list[OnSessionEndContext]()
    registry.on_session_end(ends.append)
    registry.stop(lambda ctx: HookResult.deny("again") if ctx.continuation_count == 0 else HookResult.allow())
    model = ScriptedModel(["first", "second"])
    # Strands runs After callbacks in reverse: listed first, the other provider's runs after hookreg's
    agent = Agent(model=model, hooks=[other(), HookregProvider(registry)], callback_handler=None)
    with pytest.raises(RuntimeError, match="pass refused"):
        agent("hi")
    assert [(ctx.outcome.status, ctx.outcome.reason) for ctx in ends] == [("failed", "RuntimeError: pass refused")]


class PausingModel(ScriptedModel):
    """A scripted model that yields to the event loop before answering, so concurrent agents interleave."""

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(0)
        async for event in super().stream(messages, *args, **kwargs):
            yield event


def test_graph_nodes_running_together_are_sessions_of_their_own() -> None:
    """A Graph hands one invocation_state to nodes that run concurrently: each node's agent is its own session."""
    registry, starts, ends = HookRegistry(), list[str](), list[tuple[str, str]]()
    registry.on_session_start(lambda ctx: starts.append(str(ctx.run.agent_name)))
    registry.on_session_end(lambda ctx: ends.append((str(ctx.run.agent_name), ctx.outcome.status)))
    provider, builder = HookregProvider(registry), GraphBuilder()
    for name in ("a", "b"):
        agent = Agent(name=name, model=PausingModel([name]), hooks=[provider], callback_handler=None)
        builder.add_node(agent, name)
        builder.set_entry_point(name)
    assert builder.set_max_node_executions(2).build()("hi").status == Status.COMPLETED
    assert (sorted(starts), sorted(ends)) == (["a", "b"], [("a", "completed"), ("b", "completed")])


class MutatesCaptured:
    """A Strands hook provider whose ``BeforeToolCallEvent`` callback, after hookreg's, edits a captured list."""

    def __init__(self, captured: list[list[str]]) -> None:
        self.captured = captured

    def register_hooks(self, registry: StrandsHookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.edit)

    def edit(self, event: BeforeToolCallEvent) -> None:
        for items in self.captured:
            items.append("rm -rf /")


def test_the_tool_gets_a_copy_of_the_approved_arguments() -> None:
    """What the gate approved is what runs: a nested value edited in place after the gate does not reach the tool."""
    registry, captured, received = HookRegistry(), list[list[str]](), list[object]()

    @registry.pre_tool_call_decide
    def approve(ctx: PreToolCallDecideContext) -> HookResult:
        captured.append(cast("list[str]", ctx.args["items"]))
        return HookResult.allow()

    def tool(**kwargs: object) -> str:
        received.append(kwargs["items"])
        return "ok"

    model = ScriptedModel([{"text": "x", "items": ["ls"]}, "done"])
    provider = HookregProvider(registry)
    Agent(model=model, tools=[echo_tool(tool)], hooks=[provider, MutatesCaptured(captured)], callback_handler=None)(
        "hi"
    )
    assert received == [["ls"]]
