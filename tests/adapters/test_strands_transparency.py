"""Strands' own handling stays when hookreg's hooks only pass: an invalid_tool_call hook that answers nothing
leaves a call to a tool the agent lacks to Strands (its own error, or the middleware that serves it)."""

from __future__ import annotations

from typing import Any

from strands import Agent
from strands.middleware import ExecuteToolStage
from test_strands import ScriptedModel, echo_tool
from test_strands_safety import _serve_unknown

from hookreg import HookRegistry, HookResult, InvalidToolCallContext, PreToolCallDecideContext
from hookreg.adapters.strands import HookregProvider
from hookreg.testing.conformance import RecordingTool


def _passing(seen: list[InvalidToolCallContext], judged: list[str]) -> HookRegistry:
    """A registry whose invalid_tool_call hook records the call and passes, and whose gate records and allows."""
    registry = HookRegistry()

    @registry.invalid_tool_call
    def note(ctx: InvalidToolCallContext) -> None:
        seen.append(ctx)

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(ctx.tool_name)
        return HookResult.deny("no weather") if ctx.tool_name == "weather" else HookResult.allow()

    return registry


def _outputs(registry: HookRegistry | None, turns: list[Any], *, serve: bool = False) -> list[str]:
    """The tool outputs the model read in one run, with `registry` attached (``None``: without hookreg)."""
    model = ScriptedModel([*turns, "done"])
    hooks: list[Any] = [HookregProvider(registry)] if registry is not None else []
    agent = Agent(model=model, tools=[echo_tool(RecordingTool())], hooks=hooks, callback_handler=None)
    if serve:
        agent.add_middleware(ExecuteToolStage, _serve_unknown)
    agent("go")
    return model.tool_outputs


def test_an_unknown_tool_keeps_strands_own_error_when_every_invalid_tool_call_hook_passes() -> None:
    """An unknown tool's error result is Strands' own text when the invalid_tool_call hook passes."""
    seen, judged = list[InvalidToolCallContext](), list[str]()
    assert _outputs(_passing(seen, judged), [("ecko", {"text": "hi"})]) == _outputs(None, [("ecko", {"text": "hi"})])
    assert len(seen) == 1


def test_a_tool_a_middleware_serves_is_still_gated_when_every_invalid_tool_call_hook_passes() -> None:
    """A call only a Strands middleware serves reaches the gate, which may still deny it, when hooks pass."""
    seen, judged = list[InvalidToolCallContext](), list[str]()
    assert _outputs(_passing(seen, judged), [("weather", {"city": "Oslo"})], serve=True) == ["no weather"]
    assert judged == ["weather"]
    assert _outputs(None, [("weather", {"city": "Oslo"})], serve=True) == ["sunny"]
