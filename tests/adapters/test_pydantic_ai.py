"""Tests for hookreg.adapters.pydantic_ai: a real pydantic-ai agent loop, offline, driven by a HookRegistry."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
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
    UserPromptPart,
)
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingCalls,
    DeltaThinkingPart,
    DeltaToolCall,
    DeltaToolCalls,
    FunctionModel,
)

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    RequestPatch,
    StopContext,
    StopRun,
    ToolCallDeltaContext,
    TransformToolResultContext,
    TurnAction,
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


def test_example_runs() -> None:
    """examples/adapter_pydantic_ai.py runs offline: a rewritten call is audited; rm -rf and a prompt are denied."""
    example = Path(__file__).resolve().parents[2] / "examples" / "adapter_pydantic_ai.py"
    done = subprocess.run(
        [sys.executable, "-W", "error", str(example)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "audit: shell({'command': 'ls -la', 'timeout': 30}) -> ran 'ls -la' with timeout 30",
        "the tool said: ran 'ls -la' with timeout 30",
        'the tool said: {"error":"rm -rf is not allowed; delete files one by one"}',
        "stopped: prompts must not contain passwords",
    ]


def answer(text: str, calls: list[AgentInfo] | None = None) -> FunctionModel:
    """A model that always answers `text`, recording the AgentInfo of each call in `calls`."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if calls is not None:
            calls.append(info)
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(respond)


def plain_agent(
    registry: HookRegistry, model: FunctionModel, models: Mapping[str, FunctionModel] | None = None
) -> Agent[None, str]:
    """An agent with the adapter and one echo tool, over `model`."""
    agent = Agent(model, capabilities=[hookreg_capability(registry, models=models)])

    @agent.tool_plain(name=TOOL_NAME)
    def echo(text: str) -> str:
        """Echo text."""
        return text

    return agent


def test_registry_is_checked() -> None:
    """hookreg_capability and HookregCapability refuse anything but a HookRegistry."""
    with pytest.raises(HookTypeError, match="Cannot build a pydantic-ai capability from 'hooks'"):
        hookreg_capability("hooks")  # type: ignore[arg-type]
    with pytest.raises(HookTypeError, match="Cannot build a HookregCapability from None"):
        HookregCapability(None)  # type: ignore[arg-type]


def test_user_prompt_denied_stops_before_any_model_call() -> None:
    """A user_prompt_submit deny raises StopRun with the reason; the model is never called; the session ends stopped."""
    registry = HookRegistry()
    calls: list[AgentInfo] = []
    ends: list[OnSessionEndContext] = []
    registry.user_prompt_submit(
        lambda ctx: HookResult.deny("no secrets") if "secret" in ctx.content else HookResult.allow()
    )
    registry.on_session_end(ends.append)
    agent = plain_agent(registry, answer("ok", calls))
    with pytest.raises(StopRun, match="no secrets"):
        asyncio.run(agent.run("tell me the secret"))
    assert calls == []
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "no secrets")]
    assert asyncio.run(agent.run("hello")).output == "ok"


def test_user_prompt_ask_goes_to_on_interaction() -> None:
    """A user_prompt_submit ask is answered by on_interaction: an allow lets the run proceed."""
    registry = HookRegistry()
    registry.user_prompt_submit(lambda ctx: HookResult.ask("send this prompt?"))
    questions: list[str] = []

    @registry.on_interaction
    async def approve(ctx: OnInteractionContext) -> HookResult:
        questions.append(ctx.question)
        return HookResult.allow()

    assert asyncio.run(plain_agent(registry, answer("ok")).run("hi")).output == "ok"
    assert questions == ["send this prompt?"]


def test_pre_turn_deny_stops_the_run_between_requests() -> None:
    """A pre_turn deny on the second request raises StopRun after the first model call and its tool call."""
    registry = HookRegistry()
    seen: list[str] = []
    turns: list[int] = []

    @registry.pre_turn
    async def one_turn(ctx: PreTurnContext) -> HookResult:
        turns.append(ctx.turn)
        return HookResult.deny("one turn only") if len(turns) > 1 else HookResult.allow()

    tool = RecordingTool()
    agent = make_agent(registry, tool, scripted_model({"text": "hi"}, seen))
    with pytest.raises(StopRun, match="one turn only"):
        asyncio.run(agent.run("go"))
    assert tool.calls == [{"text": "hi"}]
    assert seen == []
    assert turns[0] < turns[1]


def test_pre_model_call_patch_reaches_the_request() -> None:
    """A RequestPatch sets instructions, temperature, max_tokens, tool_choice, extra_body and the tools offered."""
    registry = HookRegistry()
    histories: list[list[str]] = []

    @registry.pre_model_call
    def first(ctx: PreModelCallContext) -> RequestPatch:
        histories.append([m.content for m in ctx.history])
        assert ctx.patch.active_tools == frozenset({TOOL_NAME})
        return RequestPatch(preamble="Be brief.", extra_context=("Today is Monday.",), temperature=0.2)

    @registry.pre_model_call
    async def second(ctx: PreModelCallContext) -> RequestPatch:
        return RequestPatch(max_tokens=99, tool_choice="none", additional_params={"seed": 7}, active_tools=frozenset())

    calls: list[AgentInfo] = []
    asyncio.run(plain_agent(registry, answer("ok", calls)).run("hello"))
    (info,) = calls
    assert info.instructions == "Be brief.\n\nToday is Monday."
    assert info.model_settings is not None
    assert info.model_settings.get("temperature") == 0.2
    assert info.model_settings.get("max_tokens") == 99
    assert info.model_settings.get("tool_choice") == "none"
    assert info.model_settings.get("extra_body") == {"seed": 7}
    assert info.function_tools == []
    assert histories == [["hello"]]


def test_tool_choice_naming_a_tool_becomes_a_list() -> None:
    """A tool_choice that names a tool reaches pydantic-ai as a one-name list."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(tool_choice=TOOL_NAME))
    calls: list[AgentInfo] = []
    asyncio.run(plain_agent(registry, answer("ok", calls)).run("hello"))
    assert calls[0].model_settings is not None
    assert calls[0].model_settings.get("tool_choice") == [TOOL_NAME]
    assert [tool.name for tool in calls[0].function_tools] == [TOOL_NAME]


def test_model_select_swaps_the_model() -> None:
    """A model_select pick found in models serves the request; the default model is never called."""
    registry = HookRegistry()
    defaults: list[str] = []

    @registry.model_select
    def small(ctx: ModelSelectContext) -> str:
        defaults.append(ctx.default_model)
        return "small"

    default_calls: list[AgentInfo] = []
    agent = plain_agent(registry, answer("big", default_calls), models={"small": answer("small")})
    assert asyncio.run(agent.run("hello")).output == "small"
    assert default_calls == []
    assert defaults == [answer("big").model_name]


def test_model_select_keeping_the_default_changes_nothing() -> None:
    """A model_select hook that returns None keeps the agent's model."""
    registry = HookRegistry()
    registry.model_select(lambda ctx: None)
    assert asyncio.run(plain_agent(registry, answer("big")).run("hello")).output == "big"


def counting_model(texts: list[str], seen: list[list[str]]) -> FunctionModel:
    """A model answering `texts` in turn, recording the text of every prior part it was sent."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        parts: list[str] = []
        for message in messages:
            for part in message.parts:
                if isinstance(part, RetryPromptPart):
                    parts.append(f"feedback: {part.model_response()}")
                elif isinstance(part, UserPromptPart) and part.content != "hello":
                    parts.append(f"feedback: {part.content}")
                elif isinstance(part, TextPart):
                    parts.append(f"said: {part.content}")
        seen.append(parts)
        return ModelResponse(parts=[TextPart(texts[len(seen) - 1])])

    return FunctionModel(respond)


def test_model_turn_finished_feedback_and_repeat() -> None:
    """retry_with_feedback keeps the answer and sends the feedback; repeat drops the answer and asks again."""
    registry = HookRegistry()
    actions = [TurnAction.retry_with_feedback("longer please"), TurnAction.repeat()]
    finished: list[ModelTurnFinishedContext] = []

    @registry.model_turn_finished
    async def judge(ctx: ModelTurnFinishedContext) -> TurnAction:
        finished.append(ctx)
        return actions.pop(0) if actions else TurnAction.continue_run()

    seen: list[list[str]] = []
    agent = Agent(counting_model(["a", "b", "c"], seen), capabilities=[hookreg_capability(registry)], retries=3)
    assert asyncio.run(agent.run("hello")).output == "c"
    assert seen[0] == []
    assert seen[1][0] == "said: a"
    assert "longer please" in seen[1][1]
    assert seen[2] == seen[1]
    assert [ctx.text for ctx in finished] == ["a", "b", "c"]
    assert finished[0].usage["output_tokens"] >= 0


def test_model_turn_finished_refuses_to_drop_tool_calls() -> None:
    """Asking to retry an answer that calls tools raises HookValueError naming the hook."""
    registry = HookRegistry()
    registry.model_turn_finished(lambda ctx: TurnAction.repeat())
    agent = make_agent(registry, RecordingTool(), scripted_model({"text": "hi"}, []))
    with pytest.raises(HookValueError, match=r"Cannot retry turn 1 as hook '.*<lambda>' asked"):
        asyncio.run(agent.run("go"))


def test_stop_deny_continues_with_feedback() -> None:
    """A stop deny sends its reason to the model and the run continues; continuation_count counts them."""
    registry = HookRegistry()
    counts: list[int] = []

    @registry.stop
    def check(ctx: StopContext) -> HookResult:
        counts.append(ctx.continuation_count)
        return HookResult.deny("add a summary") if ctx.response_text == "a" else HookResult.allow()

    seen: list[list[str]] = []
    agent = Agent(counting_model(["a", "b"], seen), capabilities=[hookreg_capability(registry)])
    assert asyncio.run(agent.run("hello")).output == "b"
    assert seen[1][0] == "said: a"
    assert "add a summary" in seen[1][1]
    assert counts == [0, 1]


def test_stop_does_not_fire_for_tool_calls() -> None:
    """stop fires only for an answer calling no tool."""
    registry = HookRegistry()
    texts: list[str] = []

    @registry.stop
    def record(ctx: StopContext) -> HookResult:
        texts.append(ctx.response_text)
        return HookResult.allow()

    drive(registry, RecordingTool(), {"text": "hi"})
    assert texts == ["done"]


def test_unknown_tool_is_repaired() -> None:
    """invalid_tool_call sees a call to an unknown tool; repair renames it and the real tool runs."""
    registry = HookRegistry()
    invalid: list[InvalidToolCallContext] = []

    @registry.invalid_tool_call
    def repair(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        invalid.append(ctx)
        return InvalidToolCallAction.repair(TOOL_NAME)

    tool = RecordingTool()
    seen: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("ekko", {"text": "hi"}, tool_call_id="c1")])
        seen.extend(p.model_response_str() for p in messages[-1].parts if isinstance(p, ToolReturnPart))
        return ModelResponse(parts=[TextPart("done")])

    asyncio.run(make_agent(registry, tool, FunctionModel(respond)).run("go"))
    assert tool.calls == [{"text": "hi"}]
    assert seen == ["hi"]
    assert [(c.tool_name, c.available_tools, c.error) for c in invalid] == [
        ("ekko", (TOOL_NAME,), "unknown tool 'ekko'")
    ]


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (InvalidToolCallAction.retry("text must be a string"), "text must be a string"),
        (InvalidToolCallAction.skip("skipped: bad args"), "skipped: bad args"),
        (InvalidToolCallAction.fail(), "Input should be a valid string"),
    ],
    ids=["retry", "skip", "fail"],
)
def test_invalid_arguments_go_to_invalid_tool_call(action: InvalidToolCallAction, expected: str) -> None:
    """Invalid arguments reach invalid_tool_call: retry and skip send their text; fail keeps pydantic-ai's."""
    registry = HookRegistry()
    errors: list[str] = []

    @registry.invalid_tool_call
    def answer_invalid(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        errors.append(ctx.error)
        return action

    tool = RecordingTool()
    seen: list[str] = []
    asyncio.run(make_agent(registry, tool, scripted_model({"text": 5}, seen)).run("go"))
    assert tool.calls == []
    assert expected in seen[0]
    assert "text" in errors[0]


def test_stop_run_from_a_hook_ends_the_session_stopped() -> None:
    """StopRun raised by a tool hook propagates and on_session_end reports stopped with its reason."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)

    @registry.pre_tool_call_decide
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise StopRun("enough")

    with pytest.raises(StopRun, match="enough"):
        drive(registry, RecordingTool(), {"text": "hi"})
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "enough")]


def test_delta_points_fire_for_a_streamed_answer() -> None:
    """With delta hooks the run streams: text, thinking and tool-call deltas reach their hooks in order."""
    registry = HookRegistry()
    texts: list[tuple[str, str]] = []
    thoughts: list[tuple[str, str]] = []
    tool_deltas: list[tuple[str, str | None, str]] = []
    registry.text_delta(lambda ctx: texts.append((ctx.delta, ctx.aggregated)))
    registry.reasoning_delta(lambda ctx: thoughts.append((ctx.delta, ctx.aggregated)))

    @registry.tool_call_delta
    async def on_tool_delta(ctx: ToolCallDeltaContext) -> None:
        assert ctx.run.is_streaming
        tool_deltas.append((ctx.call_id, ctx.tool_name, ctx.delta))

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls | DeltaThinkingCalls]:
        if len(messages) == 1:
            yield {0: DeltaThinkingPart(content="let me ")}
            yield {0: DeltaThinkingPart(content="think")}
            yield {1: DeltaToolCall(name=TOOL_NAME, json_args='{"text": ', tool_call_id="c1")}
            yield {1: DeltaToolCall(json_args='"hi"}')}
        else:
            yield "do"
            yield "ne"

    tool = RecordingTool()
    agent = make_agent(registry, tool, FunctionModel(stream_function=stream))
    assert asyncio.run(agent.run("go")).output == "done"
    assert tool.calls == [{"text": "hi"}]
    assert thoughts == [("let me ", "let me "), ("think", "let me think")]
    assert tool_deltas == [("c1", TOOL_NAME, '{"text": '), ("c1", TOOL_NAME, '"hi"}')]
    assert texts == [("do", "do"), ("ne", "done")]


def test_a_tool_left_out_by_active_tools_never_runs() -> None:
    """A call to a function tool that active_tools left out fails without running, naming the tools offered."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset()))
    tool = RecordingTool()
    seen: list[str] = []
    asyncio.run(make_agent(registry, tool, scripted_model({"text": "hi"}, seen)).run("go"))
    assert tool.calls == []
    assert "tool 'echo' was not offered for this turn" in seen[0]


def test_a_deny_without_a_reason_never_runs_the_tool() -> None:
    """A gate's deny whose reason is None (built around the constructor) is still a deny: the tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()
    hostile = copy.copy(HookResult.deny("x"))
    object.__setattr__(hostile, "reason", None)  # what a careless gate could hand back before reasons were checked
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: hostile, name="careless")
    seen = drive(registry, tool, {"text": "hi"}).tool_output_seen_by_model
    assert tool.calls == []
    assert "careless" in seen
