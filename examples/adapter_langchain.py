"""LangChain adapter: one hookreg registry gates, repairs and rewrites a LangChain v1 agent's tool calls, offline."""

from collections.abc import Sequence

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from hookreg import (
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    InvalidToolCallContext,
    PermissionDeniedContext,
    PreToolCallDecideContext,
)
from hookreg import TransformToolResultContext as ResultContext
from hookreg.adapters.langchain import HookregMiddleware

registry = HookRegistry()


@registry.pre_tool_call_decide(tools="bash")
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm -rf" in str(ctx.args.get("command", "")):
        return HookResult.deny("rm -rf is not allowed; delete files one by one")
    return HookResult.allow()


@registry.transform_tool_result(tools="bash")
def with_exit_code(ctx: ResultContext) -> str:
    return f"{ctx.presentation} (exit 0)"


@registry.permission_denied
def report(ctx: PermissionDeniedContext) -> None:
    print(f"denied: {ctx.reason}")


@registry.invalid_tool_call
def sh_is_bash(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
    if ctx.tool_name == "sh":
        return InvalidToolCallAction.repair("bash")
    return InvalidToolCallAction.retry(f"There is no tool {ctx.tool_name!r}; use one of {list(ctx.available_tools)}.")


@tool
def bash(command: str) -> str:
    """Run a shell command (this one only pretends)."""
    return command


class ScriptedModel(GenericFakeChatModel):
    """A chat model that plays back scripted answers: no network, no API key."""

    def bind_tools(self, tools: Sequence[object], **kwargs: object) -> "ScriptedModel":
        return self


def call(tool_name: str, command: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": tool_name, "args": {"command": command}, "id": "call-1"}])


runs = (("bash", "ls -la"), ("bash", "rm -rf /"), ("sh", "pwd"))
answers = [answer for tool_name, command in runs for answer in (call(tool_name, command), AIMessage(content="done"))]
# One agent serves every run; HookregMiddleware goes first in middleware= (the outermost layer).
agent = create_agent(ScriptedModel(messages=iter(answers)), tools=[bash], middleware=[HookregMiddleware(registry)])
for _, command in runs:
    state = agent.invoke({"messages": [HumanMessage(content=f"run {command}")]})
    seen = next(m.text for m in state["messages"] if isinstance(m, ToolMessage))
    print(f"tool output seen by the model: {seen}")
