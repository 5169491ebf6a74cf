"""Tests for hookreg.adapters.strands: where no hook listens, the provider adds no layer (DESIGN §8, §9).

Each middleware layer is added to an agent the first time a hook needs it, so
a hook registered between runs, or mid-run before the next Strands event,
still runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from strands import Agent
from strands.middleware import ExecuteToolStage, InvokeModelStage
from strands.middleware._agent_stream import AgentStreamStage
from strands.middleware.types import MiddlewareStage
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from test_strands import ScriptedModel, Turn, echo_tool

from hookreg import (
    HookRegistry,
    HookResult,
    OnSessionEndContext,
    PostToolCallContext,
    PreToolCallDecideContext,
    RequestPatch,
    StopRun,
    TextDeltaContext,
)
from hookreg.adapters.strands import HookregProvider
from hookreg.testing.conformance import RecordingTool

STAGES: dict[str, MiddlewareStage[Any, Any, Any]] = {
    "invocation": AgentStreamStage,
    "model": InvokeModelStage,
    "tool": ExecuteToolStage,
}


def _layered(agent: Agent) -> set[str]:
    """The stages of `agent` with more middleware than the same agent without hookreg has.

    Private API: Strands lists no agent's middleware; its registry keeps the
    handlers of each stage in ``_handlers``.
    """
    plain = Agent(model=agent.model, tools=[], callback_handler=None)

    def count(agent: Agent, stage: MiddlewareStage[Any, Any, Any]) -> int:
        return len(agent._middleware_registry._handlers.get(stage, []))

    return {name for name, stage in STAGES.items() if count(agent, stage) > count(plain, stage)}


class HookingModel(ScriptedModel):
    """A scripted model that calls `hook` with its turn number before each answer (a hook registered mid-run)."""

    def __init__(self, turns: list[Turn], hook: Callable[[int], None]) -> None:
        super().__init__(turns)
        self.hook, self.calls = hook, 0

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """Call the hook, then play the next answer."""
        self.calls += 1
        self.hook(self.calls)
        async for event in super().stream(messages, *args, **kwargs):
            yield event


def _agent(registry: HookRegistry, model: ScriptedModel, tool: RecordingTool) -> Agent:
    return Agent(model=model, tools=[echo_tool(tool)], hooks=[HookregProvider(registry)], callback_handler=None)


def test_an_agent_nobody_hooks_gets_no_layer() -> None:
    """With an empty registry, a run with a tool call leaves every Strands stage without a layer of hookreg's."""
    tool = RecordingTool()
    agent = _agent(HookRegistry(), ScriptedModel([{"text": "hi"}, "done"]), tool)
    assert str(agent("go")).strip() == "done"
    assert [call["text"] for call in tool.calls] == ["hi"]
    assert _layered(agent) == set()


def test_each_layer_is_added_when_a_hook_first_needs_it() -> None:
    """A gate adds the invocation and tool layers; a delta hook, registered between runs, adds the model layer."""
    registry, tool = HookRegistry(), RecordingTool()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    agent = _agent(registry, ScriptedModel([{"text": "hi"}, "done", "again"]), tool)
    agent("go")
    assert _layered(agent) == {"tool"}
    deltas: list[str] = []
    registry.text_delta(lambda ctx: deltas.append(ctx.delta))
    agent("more")
    assert _layered(agent) == {"model", "tool"}
    assert deltas == ["again"]


def test_hooks_registered_mid_run_run_at_the_next_event() -> None:
    """Hooks registered during the first model call of a run that started with none: each runs at its next event."""
    registry, tool = HookRegistry(), RecordingTool()
    gated: list[dict[str, object]] = []
    deltas: list[str] = []
    outcomes: list[str] = []

    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(dict(ctx.args))
        return HookResult.deny("not now")

    def hook(turn: int) -> None:
        if turn == 1:
            registry.pre_tool_call_decide(gate)
            registry.text_delta(lambda ctx: deltas.append(ctx.delta))
            registry.on_session_end(lambda ctx: outcomes.append(ctx.outcome.status))

    model = HookingModel([{"text": "hi"}, "done"], hook)
    agent = _agent(registry, model, tool)
    assert str(agent("go")).strip() == "done"
    assert gated == [{"text": "hi"}]
    assert tool.calls == []
    assert model.tool_outputs == ["not now"]
    assert deltas == ["done"]
    assert outcomes == ["completed"]


def test_a_pass_without_a_layer_that_fails_ends_the_session_failed() -> None:
    """A run that started with no hook and whose model raises ends ``failed`` for an end hook registered mid-run."""
    registry, ends = HookRegistry(), list[OnSessionEndContext]()

    def hook(turn: int) -> None:
        registry.on_session_end(ends.append)
        raise RuntimeError("model down")

    agent = _agent(registry, HookingModel(["never"], hook), RecordingTool())
    with pytest.raises(RuntimeError, match="model down"):
        agent("go")
    assert [(end.outcome.status, end.outcome.turns) for end in ends] == [("failed", 1)]
    assert "model down" in (ends[0].outcome.reason or "")


def test_a_stop_from_a_hook_registered_mid_pass_reaches_the_caller_as_itself() -> None:
    """A `StopRun` from a hook registered mid-pass into an empty registry ends the session ``stopped``.

    No layer of hookreg's wraps the pass (nobody listened when it started):
    the provider's last ``AfterInvocationEvent`` callback hands the caller
    the `StopRun` itself, not Strands' ``EventLoopException`` around it, and
    the conversation is left with a result for the call and a closing answer.
    """
    registry, ends = HookRegistry(), list[OnSessionEndContext]()
    stop = StopRun("enough")

    def stopping(ctx: PostToolCallContext) -> None:
        raise stop

    def hook(turn: int) -> None:
        registry.post_tool_call(stopping)
        registry.on_session_end(ends.append)

    agent = _agent(registry, HookingModel([{"text": "hi"}, "done"], hook), RecordingTool())
    with pytest.raises(StopRun) as raised:
        agent("go")
    assert raised.value is stop
    assert [(end.outcome.status, end.outcome.reason) for end in ends] == [("stopped", "enough")]
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[-1]["content"] == [{"text": "Run stopped: enough"}]
    assert _layered(agent) == set()


def test_a_strands_error_that_is_no_stop_reaches_the_caller_unchanged() -> None:
    """The last ``AfterInvocationEvent`` callback unwraps a hook's `StopRun` only: a model error is Strands' own."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())

    def hook(turn: int) -> None:
        raise RuntimeError("model down")

    agent = _agent(registry, HookingModel(["never"], hook), RecordingTool())
    with pytest.raises(RuntimeError, match="model down") as raised:
        agent("go")
    assert not isinstance(raised.value, StopRun)


def test_text_deltas_of_a_call_already_streaming_are_not_observed() -> None:
    """The model layer is chosen per call: a delta hook registered while a call streams observes the next call."""
    registry, deltas = HookRegistry(), list[TextDeltaContext]()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())  # a run with the model layer absent

    def hook(turn: int) -> None:
        if turn == 1:
            registry.text_delta(deltas.append)

    agent = _agent(registry, HookingModel(["first"], hook), RecordingTool())
    agent("go")
    assert deltas == []
    agent.model = HookingModel(["second"], lambda turn: None)
    agent("again")
    assert [ctx.delta for ctx in deltas] == ["second"]


def test_a_call_a_patch_took_away_names_the_tools_still_offered() -> None:
    """The refusal of a tool an ``active_tools`` patch took away lists the agent's tools still offered.

    The gate lists the agent's tools (which Strands builds by validating every
    spec) only where they count: here, for the text the model reads.
    """
    registry, tool = HookRegistry(), RecordingTool()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset({"echo"})))
    model = ScriptedModel([("other", {"text": "hi"}), "done"])
    tools: list[Any] = [echo_tool(tool), echo_tool(tool, name="other")]
    agent = Agent(model=model, tools=tools, hooks=[HookregProvider(registry)], callback_handler=None)
    agent("go")
    assert tool.calls == []
    assert "tool 'other' was not offered for this turn; the tools offered are: echo" in model.tool_outputs[0]
