"""What ADK's own tests found with hookreg attached: pass-through hooks leave ADK's own answers standing.

Each test runs a real ADK app offline (ADK's MockModel) once without the plugin and once with it, and compares
what the model read, what the caller got, or what the agent's own callbacks saw.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.cli.agent_test_runner import MockModel
from google.adk.runners import InMemoryRunner, Runner
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.workflow import START, Workflow
from google.genai import types

from hookreg import (
    HookRegistry,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PostToolCallContext,
    PostToolCallFailureContext,
)
from hookreg.adapters.google_adk import HookregPlugin


def _call(name: str, args: dict[str, Any]) -> types.Content:
    return types.Content(
        role="model", parts=[types.Part(function_call=types.FunctionCall(name=name, args=args, id="call-1"))]
    )


def _say(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


async def _run(agent: Any, plugins: list[Any]) -> list[Any]:
    runner = InMemoryRunner(app=App(name="app", root_agent=agent, plugins=plugins))
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    return [event async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message)]


def _read(model: MockModel) -> list[Any]:
    """The tool results the model read in its second request."""
    return [
        part.function_response.response
        for content in model.requests[1].contents
        for part in content.parts or ()
        if part.function_response
    ]


def _read_both(registry: HookRegistry, call: types.Content, **agent: Any) -> tuple[list[Any], list[Any]]:
    """The tool results the model read after `call`, in a run without hookreg and in one with `registry`'s plugin."""
    read = []
    for plugins in ([], [HookregPlugin(registry)]):
        model = MockModel.create([call, _say("done")])
        asyncio.run(_run(LlmAgent(name="agent", model=model, **agent), plugins))
        read.append(_read(model))
    return read[0], read[1]


def _silent(registry: HookRegistry) -> list[str]:
    """Hooks at every failure point that give no text; what they saw, in order."""
    seen: list[str] = []

    @registry.post_tool_call_failure
    def failure(ctx: PostToolCallFailureContext) -> None:
        seen.append(f"failure {ctx.tool_name}")

    @registry.on_tool_error
    def error(ctx: OnToolErrorContext) -> None:
        seen.append(f"error {ctx.tool_name}")

    @registry.post_tool_call
    def success(ctx: PostToolCallContext) -> None:
        seen.append(f"success {ctx.tool_name}")

    return seen


def broken(command: str) -> str:
    """A tool that always raises."""
    msg = f"cannot run {command}"
    raise RuntimeError(msg)


def erring(command: str) -> dict[str, str]:
    """A tool that fails ADK's way: a result with an "error" key."""
    return {"error": f"cannot run {command}", "hint": "try ls"}


def echo(command: str) -> str:
    """A tool that works."""
    return command


def test_a_silent_on_tool_error_hook_lets_a_tool_exception_reach_the_caller_as_without_hookreg() -> None:
    """No agent or plugin answers a raising tool: ADK re-raises it; an on_tool_error hook giving no text keeps that.

    The plugin answered the call with the default error text instead, so the run went on where ADK's ends.
    """
    registry = HookRegistry()
    seen = _silent(registry)
    for plugins in ([], [HookregPlugin(registry)]):
        model = MockModel.create([_call("broken", {"command": "ls"}), _say("done")])
        with pytest.raises(RuntimeError, match="cannot run ls"):
            asyncio.run(_run(LlmAgent(name="agent", model=model, tools=[broken]), plugins))
    assert seen == ["failure broken", "error broken"]


def test_an_agents_on_tool_error_callback_answers_when_no_hook_gives_a_text() -> None:
    """The agent's own on_tool_error_callback answers after the plugin's; its answer is no second outcome."""
    registry = HookRegistry()
    seen = _silent(registry)

    def rescue(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> dict[str, str]:
        del tool, args, tool_context
        return {"rescued": str(error)}

    alone, hooked = _read_both(
        registry, _call("broken", {"command": "ls"}), tools=[broken], on_tool_error_callback=rescue
    )
    assert hooked == alone == [{"rescued": "cannot run ls"}]
    assert seen == ["failure broken", "error broken"]  # no post_tool_call for the agent's answer


def test_an_error_result_stands_as_the_tool_returned_it_when_no_hook_gives_a_text() -> None:
    """A result dict with an "error" key is a failure; the model reads the tool's own dict, not hookreg's text."""
    registry = HookRegistry()
    seen = _silent(registry)
    alone, hooked = _read_both(registry, _call("erring", {"command": "rm"}), tools=[erring])
    assert hooked == alone == [{"error": "cannot run rm", "hint": "try ls"}]
    assert seen == ["failure erring", "error erring"]


def test_an_agents_before_tool_callback_answers_a_call_missing_arguments_when_no_hook_gives_a_text() -> None:
    """ADK's own handling of bad arguments includes the agent's before_tool_callback answering the call."""
    registry = HookRegistry()
    seen = _silent(registry)
    registry.invalid_tool_call(lambda ctx: None)

    def answer(tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, str]:
        del tool, args, tool_context
        return {"answered": "by the agent"}

    alone, hooked = _read_both(registry, _call("echo", {}), tools=[echo], before_tool_callback=answer)
    assert hooked == alone == [{"answered": "by the agent"}]
    assert seen == ["failure echo", "error echo"]


def test_an_unknown_tool_gets_adks_own_answer_when_no_hook_gives_a_text() -> None:
    """A call to an unknown tool: ADK's not-found answer, not hookreg's default text."""
    registry = HookRegistry()
    seen = _silent(registry)
    alone, hooked = _read_both(registry, _call("nope", {"command": "ls"}), tools=[echo])
    assert hooked == alone
    assert seen == ["failure nope", "error nope"]


@pytest.mark.parametrize("hooked", [False, True])
def test_a_runner_driving_a_workflow_node_runs_with_the_plugin(hooked: bool) -> None:
    """A Runner can drive a workflow node instead of an agent: its invocation has no agent, so the run has no name."""
    registry = HookRegistry()
    starts: list[OnSessionStartContext] = []
    ends: list[OnSessionEndContext] = []
    if hooked:
        registry.on_session_start(starts.append)
        registry.on_session_end(ends.append)

    def upper(node_input: str) -> str:
        return node_input.upper()

    async def run(plugins: list[Any]) -> list[Any]:
        sessions = InMemorySessionService()
        workflow = Workflow(name="wf", edges=[(START, upper)])
        runner = Runner(app=App(name="app", root_agent=workflow, plugins=plugins), session_service=sessions)
        session = await sessions.create_session(app_name="app", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="hi")])
        events = runner.run_async(user_id="u", session_id=session.id, new_message=message)
        return [event.output async for event in events if event.output is not None]

    assert asyncio.run(run([HookregPlugin(registry)])) == asyncio.run(run([])) == ["HI"]
    if hooked:
        assert [(start.run.agent_name, end.outcome.status) for start, end in zip(starts, ends, strict=True)] == [
            (None, "completed")
        ]
