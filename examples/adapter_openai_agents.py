"""Gate, rewrite and audit the tool calls of an OpenAI Agents SDK run with one hookreg registry (offline model)."""

import asyncio
from collections.abc import Mapping

from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from hookreg import (
    HookRegistry,
    HookResult,
    OnToolErrorContext,
    PostToolCallContext,
    PreToolCallDecideContext,
    StopRun,
    UserPromptSubmitContext,
)
from hookreg.adapters.openai_agents import guard_tools, hookreg_run_hooks

set_tracing_disabled(True)  # no trace export: this example never touches the network

registry = HookRegistry()


@registry.transform_tool_input(tools="shell")
def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
    return {**ctx.args, "timeout": 30}


@registry.pre_tool_call_decide(tools="shell")
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm -rf" in str(ctx.args["command"]):
        return HookResult.deny("rm -rf is not allowed; delete files one by one")
    return HookResult.allow()


@registry.on_tool_error
def explain(ctx: OnToolErrorContext) -> str:
    return f"{ctx.tool_name} failed: {ctx.error}"


@registry.post_tool_call
def audit(ctx: PostToolCallContext) -> None:
    print(f"audit: {ctx.tool_name}({dict(ctx.args)}) -> {ctx.result}")


@registry.user_prompt_submit
def no_passwords(ctx: UserPromptSubmitContext) -> HookResult:
    if "password" in ctx.content:
        return HookResult.deny("prompts must not contain passwords")
    return HookResult.allow()


@function_tool
def shell(command: str, timeout: int = 5) -> str:
    """Run a shell command (pretend)."""
    if command == "reboot":
        msg = "permission denied by the host"
        raise PermissionError(msg)
    return f"ran {command!r} with timeout {timeout}"


hooks = hookreg_run_hooks(registry)  # one hooks object serves every run; each run gets its own state
for command in ("ls -la", "rm -rf /", "reboot"):
    model = ScriptedModel([[function_call("shell", {"command": command}, call_id="c1")], [assistant_message("ok")]])
    agent = Agent(name="ops", model=model, tools=guard_tools([shell], registry))
    asyncio.run(hooks.run(agent, f"run {command}"))  # Runner.run with the hooks, ending the session on every path
    seen = next(item["output"] for item in model.calls[1].input if item.get("type") == "function_call_output")
    print(f"the model saw: {seen}")

try:  # a denied prompt ends the run before any model call
    asyncio.run(hooks.run(agent, "the root password is hunter2"))
except StopRun as stop:
    print(f"stopped: {stop.reason}")
