"""The same scenarios through hookreg: the reference harness and two adapters, each with recording tools.

Every side loads the project's ``.claude/settings.json`` (and the plugin's
``hooks/hooks.json``) with `hookreg.external.load_hooks_config`, offers a
``Bash`` tool that records the command instead of running it (and answers the
text `record_bash.output` gives the CLI too) and a ``Write`` tool that writes
inside the scratch project and answers what the CLI's Write tool answers, and
plays the scenario's script with the framework's own offline model. What each
model call was sent is kept as plain text, for `compare.Observation`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookreg import HookRegistry, StopRun, ToolCallRequest
from hookreg.external import load_hooks_config
from hookreg.harness import Harness, ModelRequest, ScriptedModel, ScriptedTurn, Tool

from .cli import Project
from .fake_api import OVER, ModelTurn
from .record_bash import output
from .scenarios import Scenario, bind

__all__ = ["SIDES", "HookregRun", "run_side"]

_WRITE_NOTE = "(file state is current in your context — no need to Read it back)"


@dataclass
class HookregRun:
    """What one hookreg run showed: per model call the text it was sent, the tool results, the end."""

    requests: list[str] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)
    final: str = ""
    stopped: str | None = None  # the StopRun reason (a blocked prompt), else None


def _tools(project: Project) -> list[Callable[..., str]]:
    """Bash (recorded, never run) and Write (inside the scratch project), as the CLI's tools answer."""

    def Bash(command: str, description: str = "", timeout: int | None = None) -> str:  # noqa: N802 -- the CLI's name
        """Run a shell command (recorded only)."""
        with project.bash_log.open("a", encoding="utf-8") as log:
            log.write(json.dumps({"command": command}) + "\n")
        return output(command)

    def Write(file_path: str, content: str) -> str:  # noqa: N802 -- the CLI's name
        """Write a file."""
        Path(file_path).write_text(content, encoding="utf-8")
        # The CLI's Write tool's answer, word for word, so that results compare as they are.
        return f"File created successfully at: {file_path} {_WRITE_NOTE}"

    return [Bash, Write]


def _registry(scenario: Scenario, project: Project) -> HookRegistry:
    registry = HookRegistry()
    # A settings file without hooks (permissions only) has nothing to load; hookreg refuses it as not a hook config.
    if "hooks" in json.loads(project.settings.read_text()):
        load_hooks_config(registry, project.settings, project_dir=project.dir)
    if scenario.plugin is not None:
        load_hooks_config(registry, project.plugin(scenario.plugin) / "hooks" / "hooks.json", project_dir=project.dir)
    return registry


def _turn(script: Sequence[ModelTurn], answered: int) -> ModelTurn:
    """The answer due after `answered` model answers, as the fake API chooses it."""
    return script[answered] if answered < len(script) else ModelTurn(text=OVER)


# --- the reference harness (sync surface) ---------------------------------------------------


def _harness(scenario: Scenario, project: Project) -> HookregRun:
    script = bind(scenario.script, project.dir)
    sent: list[ModelRequest] = []

    def answer(request: ModelRequest) -> ScriptedTurn:
        sent.append(request)
        turn = _turn(script, len(sent) - 1)
        calls = [ToolCallRequest(c.call_id, c.tool_name, dict(c.args)) for c in turn.calls]
        return ScriptedTurn(text=turn.text, tool_calls=calls)

    model = ScriptedModel([answer] * (len(script) + 3))
    tools = [Tool(fn) for fn in _tools(project)]
    result = Harness(model, tools, _registry(scenario, project), max_turns=len(script) + 3).run(scenario.prompt)
    run = HookregRun(final=result.output)
    run.requests = ["\n".join([*r.system, *(m.content for m in r.messages)]) for r in sent]
    run.results = {m.tool_call_id: m.content for m in result.history if m.role == "tool" and m.tool_call_id}
    if result.outcome.status == "stopped":
        run.stopped = result.outcome.reason
    return run


# --- pydantic-ai (async surface) --------------------------------------------------------------


def _pydantic_ai(scenario: Scenario, project: Project) -> HookregRun:
    from pydantic_ai import Agent, models
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        ModelResponsePart,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from hookreg.adapters.pydantic_ai import hookreg_capability

    script = bind(scenario.script, project.dir)
    run = HookregRun()

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        run.requests.append("\n".join([info.instructions or "", *(str(m) for m in messages)]))
        turn = _turn(script, sum(isinstance(m, ModelResponse) for m in messages))
        parts: list[ModelResponsePart] = [TextPart(turn.text)] if turn.text else []
        parts += [ToolCallPart(c.tool_name, dict(c.args), tool_call_id=c.call_id) for c in turn.calls]
        return ModelResponse(parts=parts)

    agent: Agent[None, str] = Agent(
        FunctionModel(respond), capabilities=[hookreg_capability(_registry(scenario, project))]
    )
    for tool in _tools(project):
        agent.tool_plain(tool)
    try:
        with models.override_allow_model_requests(False):
            done = asyncio.run(agent.run(scenario.prompt))
    except StopRun as stop:
        run.stopped = stop.reason
        return run
    run.final = done.output
    for message in done.all_messages():
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                run.results[part.tool_call_id] = part.model_response_str()
            elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                run.results[part.tool_call_id] = part.model_response()
    return run


# --- LangChain (sync surface: invoke) ---------------------------------------------------------


def _langchain(scenario: Scenario, project: Project) -> HookregRun:
    from langchain.agents import create_agent
    from langchain_core.callbacks import CallbackManagerForLLMRun
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool

    from hookreg.adapters.langchain import HookregMiddleware

    script = bind(scenario.script, project.dir)
    run = HookregRun()

    class Scripted(GenericFakeChatModel):
        """LangChain's fake chat model, answering by how many answers the conversation already holds."""

        def bind_tools(self, tools: Sequence[object], **kwargs: object) -> Scripted:
            return self

        def _generate(
            self,
            messages: list[BaseMessage],
            stop: list[str] | None = None,
            run_manager: CallbackManagerForLLMRun | None = None,
            **kwargs: Any,
        ) -> ChatResult:
            run.requests.append("\n".join(m.text for m in messages))
            turn = _turn(script, sum(isinstance(m, AIMessage) for m in messages))
            calls = [{"name": c.tool_name, "args": dict(c.args), "id": c.call_id} for c in turn.calls]
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=turn.text, tool_calls=calls))])

    tools = [StructuredTool.from_function(fn) for fn in _tools(project)]
    agent = create_agent(
        Scripted(messages=iter(())), tools=tools, middleware=[HookregMiddleware(_registry(scenario, project))]
    )
    try:
        final = agent.invoke({"messages": [HumanMessage(content=scenario.prompt)]})
    except StopRun as stop:
        run.stopped = stop.reason
        return run
    messages: list[BaseMessage] = final["messages"]
    run.results = {m.tool_call_id: m.text for m in messages if isinstance(m, ToolMessage)}
    answers = [m.text for m in messages if isinstance(m, AIMessage)]
    run.final = answers[-1] if answers else ""
    return run


SIDES: dict[str, Callable[[Scenario, Project], HookregRun]] = {
    "harness": _harness,
    "pydantic-ai": _pydantic_ai,
    "langchain": _langchain,
}
"""Each hookreg loop the corpus runs through: the reference harness (sync), pydantic-ai (async), LangChain (sync)."""


def run_side(side: str, scenario: Scenario, root: Path) -> tuple[Project, HookregRun]:
    """Run `scenario` through one hookreg loop in a fresh project under `root` (the caller sets cwd and HOOK_LOG)."""
    project = Project.create(root, scenario)
    return project, SIDES[side](scenario, project)
