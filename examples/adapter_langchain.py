"""LangChain adapter: one hookreg registry gates and rewrites the tool calls of a LangChain v1 agent, offline."""

from collections.abc import Sequence

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from hookreg import HookRegistry, HookResult, PermissionDeniedContext, PreToolCallDecideContext
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


@tool
def bash(command: str) -> str:
    """Run a shell command (this one only pretends)."""
    return command


class ScriptedModel(GenericFakeChatModel):
    """A chat model that plays back scripted answers: no network, no API key."""

    def bind_tools(self, tools: Sequence[object], **kwargs: object) -> "ScriptedModel":
        return self


def call_bash(command: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "bash", "args": {"command": command}, "id": "call-1"}])


for command in ("ls -la", "rm -rf /"):
    model = ScriptedModel(messages=iter([call_bash(command), AIMessage(content="done")]))
    agent = create_agent(model, tools=[bash], middleware=[HookregMiddleware(registry)])
    state = agent.invoke({"messages": [HumanMessage(content=f"run {command}")]})
    seen = next(m.text for m in state["messages"] if isinstance(m, ToolMessage))
    print(f"tool output seen by the model: {seen}")
