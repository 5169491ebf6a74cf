"""Gate, rewrite and audit the tool calls of a pydantic-ai agent with one hookreg registry (offline model)."""

from collections.abc import Mapping

from pydantic_ai import Agent, ToolFailed, models
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from hookreg import (
    HookRegistry,
    HookResult,
    OnToolErrorContext,
    PostToolCallContext,
    PreToolCallDecideContext,
    StopRun,
    UserPromptSubmitContext,
)
from hookreg.adapters.pydantic_ai import hookreg_capability

models.ALLOW_MODEL_REQUESTS = False  # this example never calls a real model

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


@registry.on_tool_error(tools="shell")
def hint(ctx: OnToolErrorContext) -> str:
    return f"{ctx.message} (hint: list the directory first)"


@registry.user_prompt_submit
def no_passwords(ctx: UserPromptSubmitContext) -> HookResult:
    if "password" in ctx.content:
        return HookResult.deny("prompts must not contain passwords")
    return HookResult.allow()


def script(command: str) -> FunctionModel:
    """A stand-in model: call the shell tool once with `command`, then report what the tool said."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        for part in last.parts if isinstance(last, ModelRequest) else ():
            if isinstance(part, ToolReturnPart):
                return ModelResponse(parts=[TextPart(f"the tool said: {part.model_response_str()}")])
        return ModelResponse(parts=[ToolCallPart("shell", {"command": command})])

    return FunctionModel(respond)


for command in ("ls -la", "rm -rf /", "cat missing.txt"):
    agent = Agent(script(command), capabilities=[hookreg_capability(registry)])

    @agent.tool_plain
    def shell(command: str, timeout: int = 5) -> str:
        """Run a shell command (pretend)."""
        if command.startswith("cat "):
            raise ToolFailed(f"no such file: {command[4:]}")  # a failure the model should adapt to
        return f"ran {command!r} with timeout {timeout}"

    print(agent.run_sync(f"run {command}").output)

try:  # a denied prompt ends the run before any model call
    agent.run_sync("the root password is hunter2")
except StopRun as stop:
    print(f"stopped: {stop.reason}")
