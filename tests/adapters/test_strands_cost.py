"""Tests for hookreg.adapters.strands: what a run costs where no hook listens (DESIGN §9 "In a real framework").

A run no hook reads builds no `RunState` (no run id, no context, no prompt
text); a hook registered mid-run builds it then, with the turns counted so far.
"""

from __future__ import annotations

from typing import Any

import pytest
from strands import Agent
from test_strands import ScriptedModel, echo_tool
from test_strands_layers import HookingModel

from hookreg import (
    HookRegistry,
    HookResult,
    OnSessionEndContext,
    OnSessionStartContext,
    PostToolCallContext,
    PreTurnContext,
    RequestPatch,
    RunContext,
)
from hookreg.adapters import strands as adapter
from hookreg.adapters.strands import HookregProvider
from hookreg.testing.conformance import RecordingTool


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[RunContext]:
    """Every `RunContext` the adapter builds."""
    made: list[RunContext] = []

    def counted(**fields: Any) -> RunContext:
        made.append(RunContext(**fields))
        return made[-1]

    monkeypatch.setattr(adapter, "RunContext", counted)
    return made


def _seen(into: list[PreTurnContext]) -> Any:
    """A ``pre_turn`` hook that notes its context and allows the turn."""

    def gate(ctx: PreTurnContext) -> HookResult:
        into.append(ctx)
        return HookResult.allow()

    return gate


def _agent(registry: HookRegistry, model: ScriptedModel, tool: RecordingTool, name: str = "ops") -> Agent:
    provider = HookregProvider(registry)
    return Agent(model=model, tools=[echo_tool(tool)], hooks=[provider], callback_handler=None, name=name)


def test_a_run_nobody_hooks_builds_no_run_context(built: list[RunContext]) -> None:
    """With an empty registry a run with a tool call builds no run context: nothing reads one."""
    tool = RecordingTool()
    agent = _agent(HookRegistry(), ScriptedModel([{"text": "hi"}, "done"]), tool)
    assert str(agent("go")).strip() == "done"
    assert tool.calls == [{"text": "hi"}]
    assert built == []


def test_hooks_registered_mid_run_see_the_run_as_if_it_had_been_built_at_its_start(built: list[RunContext]) -> None:
    """The run a hook registered in turn 1 builds counts that turn; later hooks share it; no late session start."""
    registry, tool = HookRegistry(), RecordingTool()
    outputs: list[PostToolCallContext] = []
    turns: list[PreTurnContext] = []
    ends: list[OnSessionEndContext] = []
    starts: list[OnSessionStartContext] = []

    def hook(turn: int) -> None:
        if turn == 1:
            registry.post_tool_call(outputs.append)
            registry.pre_turn(_seen(turns))
            registry.on_session_end(ends.append)
            registry.on_session_start(starts.append)

    agent = _agent(registry, HookingModel([{"text": "hi"}, "done"], hook), tool)
    assert str(agent("go and echo")).strip() == "done"
    [output], [turn], [end] = outputs, turns, ends
    assert (output.run.turn, output.run.agent_name) == (1, "ops")
    assert (turn.turn, turn.run.turn, turn.prompt) == (2, 2, "go and echo")
    assert (end.outcome.status, end.outcome.turns) == ("completed", 2)
    assert output.run.run_id == turn.run.run_id == end.run.run_id
    assert output.run.scratchpad is turn.run.scratchpad is end.run.scratchpad
    assert starts == []
    assert len(built) == 1


def test_a_new_run_after_a_quiet_one_is_built_anew(built: list[RunContext]) -> None:
    """A run nobody read leaves nothing behind: the next run, hooked, gets its own context and counts from 1."""
    registry, tool = HookRegistry(), RecordingTool()
    agent = _agent(registry, ScriptedModel(["quiet", "done"]), tool)
    agent("first")
    turns: list[PreTurnContext] = []
    registry.pre_turn(_seen(turns))
    agent("second")
    assert [(ctx.turn, ctx.prompt) for ctx in turns] == [(1, "second")]
    assert len(built) == 1


def test_a_tool_a_patch_took_away_stays_refused_when_the_patch_hook_is_gone() -> None:
    """A call to a tool a patch took away is refused even when no hook is left by the time the call comes."""
    registry, tool = HookRegistry(), RecordingTool()

    def patch(ctx: object) -> RequestPatch:
        registry.unregister(patch)
        return RequestPatch(active_tools=frozenset({"echo"}))

    registry.pre_model_call(patch)
    model = ScriptedModel([("other", {"text": "hi"}), "done"])
    tools: list[Any] = [echo_tool(tool), echo_tool(tool, name="other")]
    Agent(model=model, tools=tools, hooks=[HookregProvider(registry)], callback_handler=None)("go")
    assert len(registry) == 0
    assert tool.calls == []
    assert "tool 'other' was not offered for this turn" in model.tool_outputs[0]


def test_a_call_arriving_as_the_gate_handed_it_runs_with_no_layer_of_hookregs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The innermost gate adds no layer around a call that arrives unchanged: the callback's gate judged it."""
    layered: list[object] = []
    judged = HookregProvider._execute_judged

    def counted(self: HookregProvider, *args: Any) -> Any:
        layered.append(args[0])
        return judged(self, *args)

    monkeypatch.setattr(HookregProvider, "_execute_judged", counted)
    registry, tool = HookRegistry(), RecordingTool()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    _agent(registry, ScriptedModel([{"text": "hi"}, "done"]), tool)("go")
    assert tool.calls == [{"text": "hi"}]
    assert layered == []
