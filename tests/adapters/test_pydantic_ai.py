"""Tests for hookreg.adapters.pydantic_ai: a real pydantic-ai agent loop, offline, driven by a HookRegistry."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from pydantic_ai import Agent, models
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from hookreg import (
    HookRegistry,
    HookResult,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    PostTurnContext,
    PreToolCallDecideContext,
    TransformToolResultContext,
)
from hookreg.adapters.pydantic_ai import HookregCapability, hookreg_capability
from hookreg.testing.conformance import SCENARIOS, TOOL_NAME, AgentRun, RecordingTool, Scenario


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    """Forbid every real model request for the duration of a test."""
    with models.override_allow_model_requests(False):
        yield


def scripted_model(args: Mapping[str, object], seen: list[str]) -> FunctionModel:
    """A model that calls echo once with `args`, records the tool output it gets back, then answers."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                seen.append(part.model_response_str())
                return ModelResponse(parts=[TextPart("done")])
            if isinstance(part, RetryPromptPart):
                seen.append(part.model_response())
                return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(TOOL_NAME, dict(args), tool_call_id="call-1")])

    return FunctionModel(respond)


def make_agent(registry: HookRegistry, tool: Callable[..., str], model: FunctionModel) -> Agent[None, str]:
    """An agent with one echo tool whose body calls `tool`, hooked to `registry`."""
    agent = Agent(model, capabilities=[hookreg_capability(registry)], name="tester")

    @agent.tool_plain(name=TOOL_NAME)
    def echo(text: str, prefix: str = "", suffix: str = "") -> str:
        """Echo text between a prefix and a suffix."""
        received: dict[str, object] = {"text": text}
        if prefix:
            received["prefix"] = prefix
        if suffix:
            received["suffix"] = suffix
        return tool(**received)

    return agent


def drive(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> AgentRun:
    """Run a pydantic-ai agent once with the adapter and report what the model saw."""
    seen: list[str] = []
    result = asyncio.run(make_agent(registry, tool, scripted_model(args, seen)).run("please echo"))
    assert result.output == "done"
    assert len(seen) == 1, seen
    return AgentRun(tool_output_seen_by_model=seen[0])


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_conformance(scenario: Scenario) -> None:
    """The pydantic-ai adapter passes every conformance scenario in a real agent loop."""
    scenario.check(drive)


def test_async_hooks_and_async_run() -> None:
    """Async hooks run inside an async agent run: an async gate denies and an async transform rewrites."""
    registry = HookRegistry()
    tool = RecordingTool()

    @registry.transform_tool_input
    async def shout(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        return {**ctx.args, "text": str(ctx.args["text"]).upper()}

    @registry.pre_tool_call_decide
    async def only_quiet(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("no shouting") if ctx.args["text"] == "LOUD" else HookResult.allow()

    seen: list[str] = []
    asyncio.run(make_agent(registry, tool, scripted_model({"text": "quiet"}, seen)).run("go"))
    assert tool.calls == [{"text": "QUIET"}]
    asyncio.run(make_agent(registry, tool, scripted_model({"text": "loud"}, seen)).run("go"))
    assert tool.calls == [{"text": "QUIET"}]
    assert "no shouting" in seen[1]


def test_result_rewrite_reaches_model_and_observers() -> None:
    """transform_tool_result changes what the model sees; raw_result keeps the tool's own value."""
    registry = HookRegistry()
    raws: list[object] = []

    @registry.transform_tool_result
    def redact(ctx: TransformToolResultContext) -> str:
        raws.append(ctx.raw_result)
        return ctx.presentation.replace("secret", "[redacted]")

    run = drive(registry, RecordingTool(), {"text": "my secret"})
    assert run.tool_output_seen_by_model == "my [redacted]"
    assert raws == ["my secret"]


def test_ask_is_answered_by_on_interaction() -> None:
    """A gate's ask runs on_interaction: an allow runs the tool, no interaction hook denies it."""
    registry = HookRegistry()
    tool = RecordingTool()
    registry.pre_tool_call_decide(lambda ctx: HookResult.ask("echo this?"))
    run = drive(registry, tool, {"text": "hi"})
    assert tool.calls == []
    assert "no interaction hook" in run.tool_output_seen_by_model
    questions: list[str] = []

    @registry.on_interaction
    def approve(ctx: OnInteractionContext) -> HookResult:
        questions.append(ctx.question)
        return HookResult.allow()

    assert drive(registry, tool, {"text": "hi"}).tool_output_seen_by_model == "hi"
    assert questions == ["echo this?"]


def test_unhooked_tool_error_propagates() -> None:
    """Without on_tool_error hooks a tool exception fails the run, as pydantic-ai would without hookreg."""
    with pytest.raises(RuntimeError, match="echo failed"):
        drive(HookRegistry(), RecordingTool(), {"text": "fail"})


def test_session_and_turn_points() -> None:
    """A run fires on_session_start with the prompt, post_turn per model response, on_session_end completed."""
    registry = HookRegistry()
    events: list[object] = []
    registry.on_session_start(events.append)
    registry.post_turn(events.append)
    registry.on_session_end(events.append)
    drive(registry, RecordingTool(), {"text": "hi"})
    start, first, second, end = events
    assert isinstance(start, OnSessionStartContext)
    assert start.goal == "please echo"
    assert start.run.agent_name == "tester"
    assert isinstance(first, PostTurnContext)
    assert isinstance(second, PostTurnContext)
    assert (first.response_text, second.response_text) == ("", "done")
    assert first.turn < second.turn
    assert isinstance(end, OnSessionEndContext)
    assert end.outcome.status == "completed"
    assert end.session_id == start.session_id
    assert end.run.scratchpad is start.run.scratchpad


def test_failed_run_ends_session_failed() -> None:
    """A run that raises fires on_session_end with a failed outcome naming the exception type."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)
    with pytest.raises(RuntimeError, match="echo failed"):
        drive(registry, RecordingTool(), {"text": "fail"})
    assert [e.outcome.status for e in ends] == ["failed"]
    assert ends[0].outcome.reason == "RuntimeError"


def test_each_run_gets_its_own_run_context() -> None:
    """Two runs of one agent see different run ids and scratchpads."""
    registry = HookRegistry()
    starts: list[OnSessionStartContext] = []
    registry.on_session_start(starts.append)
    drive(registry, RecordingTool(), {"text": "a"})
    drive(registry, RecordingTool(), {"text": "b"})
    assert starts[0].run.run_id != starts[1].run.run_id
    assert starts[0].run.scratchpad is not starts[1].run.scratchpad
    assert isinstance(hookreg_capability(registry), HookregCapability)


def test_import_without_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the adapter without pydantic-ai raises ImportError naming the extra to install."""
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "hookreg.adapters.pydantic_ai")
    with pytest.raises(ImportError, match=r"pip install 'hookreg\[pydantic-ai\]'") as info:
        importlib.import_module("hookreg.adapters.pydantic_ai")
    assert info.value.name == "pydantic_ai"


def test_example_runs() -> None:
    """examples/adapter_pydantic_ai.py runs offline: the rewritten call runs and is audited, rm -rf is denied."""
    example = Path(__file__).resolve().parents[2] / "examples" / "adapter_pydantic_ai.py"
    done = subprocess.run(
        [sys.executable, "-W", "error", str(example)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "audit: shell({'command': 'ls -la', 'timeout': 30}) -> ran 'ls -la' with timeout 30",
        "the tool said: ran 'ls -la' with timeout 30",
        'the tool said: {"error":"rm -rf is not allowed; delete files one by one"}',
    ]
