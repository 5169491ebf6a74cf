"""Strands' own handling stays when hookreg's hooks only pass: an invalid_tool_call hook that answers nothing
leaves a call to a tool the agent lacks, or arguments hookreg's schema check refuses, to Strands (its own result or
error, or the middleware that serves the call)."""

from __future__ import annotations

from typing import Any

from strands import Agent, tool
from strands.middleware import ExecuteToolStage
from test_strands import ScriptedModel, echo_tool
from test_strands_safety import _serve_unknown

from hookreg import (
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    InvalidToolCallContext,
    OnToolErrorContext,
    PreToolCallDecideContext,
    ToolErrorKind,
)
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


def _outputs(
    registry: HookRegistry | None, turns: list[Any], *, serve: bool = False, tools: list[Any] | None = None
) -> list[str]:
    """The tool outputs the model read in one run, with `registry` attached (``None``: without hookreg).

    The agent's tools are `tools`, by default echo with no input validation of its own.
    """
    model = ScriptedModel([*turns, "done"])
    hooks: list[Any] = [HookregProvider(registry)] if registry is not None else []
    tools = [echo_tool(RecordingTool())] if tools is None else tools
    agent = Agent(model=model, tools=tools, hooks=hooks, callback_handler=None)
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


def test_arguments_failing_the_schema_run_as_strands_runs_them_when_every_invalid_tool_call_hook_passes() -> None:
    """Arguments Strands accepts though they fail the tool's schema run, when the invalid_tool_call hook passes."""
    seen, judged, calls = list[InvalidToolCallContext](), list[str](), list[dict[str, object]]()

    def lenient(**kwargs: object) -> str:  # a tool with echo's spec that takes whatever it is sent
        calls.append(kwargs)
        return f"got {sorted(kwargs.items())}"

    turns: list[Any] = [{"text": 7}]  # the schema says text is a string; Strands runs the tool anyway
    hooked = _outputs(_passing(seen, judged), turns, tools=[echo_tool(lenient)])
    assert hooked == _outputs(None, turns, tools=[echo_tool(lenient)]) == ["got [('text', 7)]"]
    assert calls == [{"text": 7}, {"text": 7}]  # with hookreg, then without
    assert len(seen) == 1
    assert judged == ["echo"]  # the gate still judges the call


@tool(name="shout")
def _shout(text: str) -> str:
    """Shout the text (Strands validates its input itself).

    Args:
        text: What to shout.
    """
    return text.upper()


def test_arguments_strands_refuses_get_its_own_error_with_kind_invalid_args_when_every_hook_passes() -> None:
    """Arguments Strands' own validation refuses get Strands' error; on_tool_error sees it with kind INVALID_ARGS."""
    seen, judged, errors = list[InvalidToolCallContext](), list[str](), list[OnToolErrorContext]()
    registry = _passing(seen, judged)

    @registry.on_tool_error
    def note(ctx: OnToolErrorContext) -> str:
        errors.append(ctx)
        return ctx.message

    turns: list[Any] = [("shout", {"loud": True})]
    hooked = _outputs(registry, turns, tools=[_shout])
    assert hooked == _outputs(None, turns, tools=[_shout])
    assert "validation error" in hooked[0].lower()
    assert [ctx.kind for ctx in errors] == [ToolErrorKind.INVALID_ARGS]
    assert len(seen) == 1


def test_a_hook_that_answers_an_invalid_call_still_replaces_strands_handling() -> None:
    """An invalid_tool_call hook that returns an action (here fail) gets hookreg's handling, not Strands'."""
    registry, errors = HookRegistry(), list[OnToolErrorContext]()
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.fail())

    @registry.on_tool_error
    def note(ctx: OnToolErrorContext) -> str:
        errors.append(ctx)
        return ctx.message

    [shown] = _outputs(registry, [{"text": 7}])
    assert "bad arguments for 'echo'" in shown
    assert [ctx.kind for ctx in errors] == [ToolErrorKind.INVALID_ARGS]
