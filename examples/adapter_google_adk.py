"""Gate, rewrite and audit the tool calls of a Google ADK app with one hookreg registry (offline model)."""

import asyncio
import logging
from collections.abc import Mapping

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.cli.agent_test_runner import MockModel
from google.adk.runners import InMemoryRunner
from google.genai import types

from hookreg import (
    HookRegistry,
    HookResult,
    OnSessionEndContext,
    PostToolCallContext,
    PreToolCallDecideContext,
)
from hookreg.adapters.google_adk import HookregPlugin

logging.getLogger("google_adk").setLevel(logging.ERROR)  # the offline model reports no token usage
registry = HookRegistry()


@registry.transform_tool_input(tools="shell")
def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
    return {**ctx.args, "timeout": 30}


@registry.pre_tool_call_decide(tools="shell")
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm -rf" in str(ctx.args["command"]):
        return HookResult.deny("rm -rf is not allowed; delete files one by one")
    return HookResult.allow()


@registry.post_tool_call
def audit(ctx: PostToolCallContext) -> None:
    print(f"audit: {ctx.tool_name}({dict(ctx.args)}) -> {ctx.result}")


@registry.on_session_end
def report(ctx: OnSessionEndContext) -> None:
    print(f"session ended: {ctx.outcome.status}")


def shell(command: str, timeout: int = 5) -> str:
    """Run a shell command (pretend)."""
    return f"ran {command!r} with timeout {timeout}"


def script(command: str) -> MockModel:
    """ADK's offline test model: call the shell tool once with `command`, then answer."""
    call = types.FunctionCall(name="shell", args={"command": command}, id="call-1")
    return MockModel.create(
        [
            types.Content(role="model", parts=[types.Part(function_call=call)]),
            types.Content(role="model", parts=[types.Part(text="done")]),
        ]
    )


async def main() -> None:
    for command in ("ls -la", "rm -rf /"):
        agent = LlmAgent(name="assistant", model=script(command), tools=[shell])
        runner = InMemoryRunner(app=App(name="demo", root_agent=agent, plugins=[HookregPlugin(registry)]))
        session = await runner.session_service.create_session(app_name="demo", user_id="me")
        message = types.Content(role="user", parts=[types.Part(text=f"run {command}")])
        async for event in runner.run_async(user_id="me", session_id=session.id, new_message=message):
            for response in event.get_function_responses():
                print(f"the model reads: {response.response}")


asyncio.run(main())
