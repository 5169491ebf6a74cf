"""Tests for hookreg.adapters.pydantic_ai: a real pydantic-ai agent loop, offline, driven by a HookRegistry."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic_ai import (
    Agent,
    ModelRetry,
    ToolFailed,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UsageLimits,
    capture_run_messages,
    models,
)
from pydantic_ai import (
    RunContext as PaiRunContext,
)
from pydantic_ai.messages import (
    AgentStreamEvent,
    BinaryContent,
    FilePart,
    FinalResultEvent,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    PartDeltaEvent,
    PartStartEvent,
    RetryPromptPart,
    SpeechPartDelta,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.messages import (
    FinishReason as FinishReasonLiteral,
)
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingCalls,
    DeltaThinkingPart,
    DeltaToolCall,
    DeltaToolCalls,
    FunctionModel,
)
from pydantic_ai.settings import ModelSettings

from hookreg import (
    FinishReason,
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    Message,
    ModelSelectContext,
    ModelTurnFinishedContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    RequestPatch,
    StopContext,
    StopRun,
    ToolCallDeltaContext,
    ToolErrorKind,
    TransformToolResultContext,
    TurnAction,
)
from hookreg._lifecycle import STOPPED_NOTICE
from hookreg.adapters.pydantic_ai import HookregCapability, hookreg_capability
from hookreg.testing.conformance import (
    OTHER_TOOL,
    TOOL_NAME,
    Answer,
    Call,
    RecordingTool,
    ReportedError,
    RunReport,
    RunScenario,
    run_contract_cases,
)


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


def run_flow(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> str:
    """Run a pydantic-ai agent once with the adapter and report what the model saw."""
    seen: list[str] = []
    result = asyncio.run(make_agent(registry, tool, scripted_model(args, seen)).run("please echo"))
    assert result.output == "done"
    assert len(seen) == 1, seen
    return seen[0]


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

    seen = run_flow(registry, RecordingTool(), {"text": "my secret"})
    assert seen == "my [redacted]"
    assert raws == ["my secret"]


def test_unhooked_tool_error_propagates() -> None:
    """Without on_tool_error hooks a tool exception fails the run, as pydantic-ai would without hookreg."""
    with pytest.raises(RuntimeError, match="echo failed"):
        run_flow(HookRegistry(), RecordingTool(), {"text": "fail"})


def test_session_and_turn_points() -> None:
    """A run fires on_session_start with the prompt, post_turn per model response, on_session_end completed."""
    registry = HookRegistry()
    events: list[object] = []
    registry.on_session_start(events.append)
    registry.post_turn(events.append)
    registry.on_session_end(events.append)
    run_flow(registry, RecordingTool(), {"text": "hi"})
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
    """A run that raises fires on_session_end with a failed outcome describing the exception."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)
    with pytest.raises(RuntimeError, match="echo failed"):
        run_flow(registry, RecordingTool(), {"text": "fail"})
    assert [e.outcome.status for e in ends] == ["failed"]
    assert ends[0].outcome.reason == "RuntimeError: echo failed"


def test_each_run_gets_its_own_run_context() -> None:
    """Two runs of one agent see different run ids and scratchpads."""
    registry = HookRegistry()
    starts: list[OnSessionStartContext] = []
    registry.on_session_start(starts.append)
    run_flow(registry, RecordingTool(), {"text": "a"})
    run_flow(registry, RecordingTool(), {"text": "b"})
    assert starts[0].run.run_id != starts[1].run.run_id
    assert starts[0].run.scratchpad is not starts[1].run.scratchpad
    assert isinstance(hookreg_capability(registry), HookregCapability)


def test_example_runs() -> None:
    """examples/adapter_pydantic_ai.py runs offline: a call rewritten and audited, rm -rf denied, a failure hinted."""
    example = Path(__file__).resolve().parents[2] / "examples" / "adapter_pydantic_ai.py"
    done = subprocess.run(
        [sys.executable, "-W", "error", str(example)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "audit: shell({'command': 'ls -la', 'timeout': 30}) -> ran 'ls -la' with timeout 30",
        "the tool said: ran 'ls -la' with timeout 30",
        'the tool said: {"error":"rm -rf is not allowed; delete files one by one"}',
        'the tool said: {"error":"no such file: missing.txt (hint: list the directory first)"}',
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


def test_patch_messages_replace_what_one_request_sends() -> None:
    """RequestPatch.messages is what the model receives for that request; the run's history keeps the real one."""
    registry = HookRegistry()
    sent = (
        Message("system", "You are terse."),
        Message("user", "summary of earlier turns"),
        Message("assistant", "ok"),
        Message("user", "go on"),
    )
    registry.pre_model_call(lambda ctx: RequestPatch(messages=sent))
    seen: list[list[ModelMessage]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("done")])

    result = asyncio.run(plain_agent(registry, FunctionModel(respond)).run("hello"))
    (messages,) = seen
    kinds = [(type(part).__name__, getattr(part, "content", None)) for message in messages for part in message.parts]
    assert kinds == [
        ("SystemPromptPart", "You are terse."),
        ("UserPromptPart", "summary of earlier turns"),
        ("TextPart", "ok"),
        ("UserPromptPart", "go on"),
    ]
    assert any(
        isinstance(part, UserPromptPart) and part.content == "hello"
        for message in result.all_messages()
        for part in message.parts
    )


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

    run_flow(registry, RecordingTool(), {"text": "hi"})
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
        ("ekko", (TOOL_NAME,), "unknown tool 'ekko'; the tools offered are: echo")
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
    """Invalid arguments reach invalid_tool_call: retry and skip send their text; fail reports the schema error."""
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
        run_flow(registry, RecordingTool(), {"text": "hi"})
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "enough")]


def test_delta_points_fire_for_a_streamed_answer() -> None:
    """In a streamed run, text, thinking and tool-call deltas reach their hooks in order."""
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

    async def run_streamed() -> str:
        async with agent.run_stream("go") as result:
            return await result.get_output()

    tool = RecordingTool()
    agent = make_agent(registry, tool, FunctionModel(stream_function=stream))
    assert asyncio.run(run_streamed()) == "done"
    assert tool.calls == [{"text": "hi"}]
    assert thoughts == [("let me ", "let me "), ("think", "let me think")]
    assert tool_deltas == [("c1", TOOL_NAME, '{"text": '), ("c1", TOOL_NAME, '"hi"}')]
    assert texts == [("do", "do"), ("ne", "done")]


def test_delta_points_aggregate_over_the_whole_answer() -> None:
    """Deltas aggregate over one model call, across its parts, as in every loop; other events carry none."""
    registry = HookRegistry()
    texts: list[tuple[str, str, bool]] = []
    thoughts: list[tuple[str, str]] = []
    tool_deltas: list[tuple[str, str | None, str]] = []
    registry.text_delta(lambda ctx: texts.append((ctx.delta, ctx.aggregated, ctx.run.is_streaming)))
    registry.reasoning_delta(lambda ctx: thoughts.append((ctx.delta, ctx.aggregated)))
    registry.tool_call_delta(lambda ctx: tool_deltas.append((ctx.call_id, ctx.tool_name, ctx.delta)))
    # a provider's answer of several parts (pydantic-ai's FunctionModel streams one text part only)
    events: list[AgentStreamEvent] = [
        PartStartEvent(index=0, part=ThinkingPart(content="hm")),
        PartDeltaEvent(index=0, delta=ThinkingPartDelta(content_delta=None)),
        PartStartEvent(index=1, part=TextPart(content="Hel")),
        PartDeltaEvent(index=1, delta=TextPartDelta(content_delta="lo")),
        PartStartEvent(index=2, part=ToolCallPart(TOOL_NAME, None, tool_call_id="c1")),
        PartDeltaEvent(index=2, delta=ToolCallPartDelta(args_delta={"text": "hi"})),
        PartStartEvent(index=3, part=FilePart(content=BinaryContent(data=b"x", media_type="image/png"))),
        PartDeltaEvent(index=4, delta=SpeechPartDelta(transcript_delta="spoken")),
        PartStartEvent(index=5, part=TextPart(content=" world")),
        FinalResultEvent(tool_name=None, tool_call_id=None),
    ]
    points = hookreg_capability(registry).capabilities[0]

    async def stream() -> None:
        for event in events:
            if points.listens_to(event):
                await points.on_event(cast("PaiRunContext[Any]", None), event=event)

    asyncio.run(stream())
    assert texts == [("Hel", "Hel", True), ("lo", "Hello", True), (" world", "Hello world", True)]
    assert thoughts == [("hm", "hm")]
    assert tool_deltas == [("c1", TOOL_NAME, '{"text": "hi"}')]
    asyncio.run(points.on_event(cast("PaiRunContext[Any]", None), event=events[-1]))  # reaches it anyway: ignored
    assert len(texts) == 3


def test_a_multimodal_prompt_shows_its_text_pieces_as_the_goal() -> None:
    """The goal of a prompt of several pieces is its text pieces, one a line; the media stay out of it."""
    registry = HookRegistry()
    goals: list[str] = []
    registry.on_session_start(lambda ctx: goals.append(ctx.goal))
    model = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("ok")]))
    prompt: list[str | BinaryContent] = ["look at", BinaryContent(data=b"x", media_type="image/png"), "this"]
    assert asyncio.run(make_agent(registry, RecordingTool(), model).run(prompt)).output == "ok"
    assert goals == ["look at\nthis"]


def test_a_pre_model_call_hook_that_passes_leaves_the_request_as_pydantic_ai_made_it() -> None:
    """A pre_model_call hook returning None changes nothing: the model gets the request an empty registry gives."""
    seen: list[tuple[ModelSettings | None, list[str]]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((info.model_settings, [tool.name for tool in info.function_tools]))
        return ModelResponse(parts=[TextPart("ok")])

    passing = HookRegistry()
    passing.pre_model_call(lambda ctx: None)
    for registry in (HookRegistry(), passing):
        asyncio.run(make_agent(registry, RecordingTool(), FunctionModel(respond)).run("go"))
    assert seen[0] == seen[1] == (None, [TOOL_NAME])


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
    seen = run_flow(registry, tool, {"text": "hi"})
    assert tool.calls == []
    assert "careless" in seen


# --- the run contract -----------------------------------------------------------------


class KitModel(FunctionModel):
    """A FunctionModel playing the kit's answers, reporting finish reasons, response ids and a model name."""

    def __init__(self, answers: tuple[Answer, ...]) -> None:
        self.answers = answers
        super().__init__(self._respond, stream_function=self._stream, model_name="kit-model")

    @staticmethod
    def _index(messages: list[ModelMessage]) -> int:
        """Which answer is due: one per model response already in the run's history."""
        return sum(isinstance(m, ModelResponse) for m in messages)

    async def _play(self, messages: list[ModelMessage]) -> Answer:
        answer = self.answers[self._index(messages)]
        if answer.hang:
            await asyncio.Event().wait()
        if answer.error is not None:
            raise answer.error
        return answer

    def _details(self, messages: list[ModelMessage]) -> tuple[FinishReasonLiteral, dict[str, Any], str]:
        """pydantic-ai's finish reason, the provider's own spelling, and the response id of the due answer."""
        answer = self.answers[self._index(messages)]
        finish: FinishReasonLiteral = "tool_call" if answer.calls else "stop"
        raw = "tool_use" if answer.calls else "end_turn"
        if answer.truncated:
            finish, raw = "length", "max_tokens"
        return finish, {"finish_reason": raw}, f"resp-{self._index(messages) + 1}"

    async def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answer = await self._play(messages)
        parts: list[ModelResponsePart] = [TextPart(answer.text)] if answer.text else []
        parts += [
            ToolCallPart(c.tool_name, c.args if isinstance(c.args, str) else dict(c.args), tool_call_id=c.call_id)
            for c in answer.calls
        ]
        finish, details, response_id = self._details(messages)
        return ModelResponse(
            parts=parts, finish_reason=finish, provider_details=details, provider_response_id=response_id
        )

    async def _stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        answer = await self._play(messages)
        for index, c in enumerate(answer.calls):
            args = c.args if isinstance(c.args, str) else json.dumps(dict(c.args))
            yield {index: DeltaToolCall(name=c.tool_name, json_args=args, tool_call_id=c.call_id)}
        if not answer.calls:
            yield answer.text

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: PaiRunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Stream the due answer, then report its finish reason and id as a provider's stream does."""
        async with super().request_stream(messages, model_settings, model_request_parameters, run_context) as stream:
            stream.finish_reason, stream.provider_details, stream.provider_response_id = self._details(messages)
            yield stream


def _read(messages: list[ModelMessage]) -> dict[str, str]:
    """Call id → the text the model read for that call, from a run's message history."""
    read: dict[str, str] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolReturnPart):
                read[part.tool_call_id] = part.model_response_str()
            elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                read[part.tool_call_id] = part.model_response()
    return read


class PydanticAIWiring:
    """One agent with the adapter's capability, reused by every run."""

    def __init__(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> None:
        self.agent: Agent[None, str] = Agent(
            KitModel((Answer(text="unused"),)), capabilities=[hookreg_capability(registry)], name="kit", retries=3
        )
        for name in tools:
            self.agent.tool_plain(name=name)(_kit_tool(tools, name))

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        model = KitModel(answers)
        if streamed:
            async with self.agent.run_stream(prompt, model=model) as result:
                output = await result.get_output()
                messages = result.all_messages()
        else:
            done = await self.agent.run(prompt, model=model)
            output, messages = done.output, done.all_messages()
        return RunReport(tool_messages=_read(messages), output=output)


def _kit_tool(tools: Mapping[str, Callable[..., str]], name: str) -> Callable[..., str]:
    def tool(text: str, prefix: str = "", suffix: str = "") -> str:
        """Echo text between a prefix and a suffix."""
        try:
            return tools[name](text=text, prefix=prefix, suffix=suffix)
        except ReportedError as exc:
            raise ModelRetry(str(exc)) from exc

    tool.__name__ = name
    return tool


class PydanticAIFramework:
    """pydantic-ai for the run-contract kit."""

    name = "pydantic-ai"
    streams = True
    stop_raises = True
    limits: Mapping[str, str] = {}

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> PydanticAIWiring:
        return PydanticAIWiring(registry, tools)


FRAMEWORK = PydanticAIFramework()
DONE = Answer(text="done")


@pytest.mark.parametrize(
    ("scenario", "streamed"),
    run_contract_cases(FRAMEWORK),
    ids=lambda v: v.name if isinstance(v, RunScenario) else ("streamed" if v else "blocking"),
)
def test_run_contract(scenario: RunScenario, streamed: bool) -> None:
    """The pydantic-ai adapter honours every row of the run contract, blocking and streamed."""
    with models.override_allow_model_requests(False):
        scenario.check(FRAMEWORK, streamed=streamed)


# --- the issue-12 defects, each pinned ------------------------------------------------------


def kit_wiring(registry: HookRegistry, echo_body: Callable[..., str] | None = None) -> PydanticAIWiring:
    """The kit's agent (tools echo and other) over `registry`; echo runs `echo_body` when given."""
    tools: dict[str, Callable[..., str]] = {TOOL_NAME: echo_body or RecordingTool(), OTHER_TOOL: RecordingTool()}
    return PydanticAIWiring(registry, tools)


def echo_call(args: Mapping[str, object] | str = "", call_id: str = "call-1") -> Answer:
    """One answer calling echo with `args` (default ``{"text": "hi"}``)."""
    return Answer(calls=(Call(args or {"text": "hi"}, call_id=call_id),))


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize("where", ["gate", "interaction"])
def test_a_deny_with_an_empty_reason_never_runs_the_tool(where: str, streamed: bool) -> None:
    """A gate's deny("") and an on_interaction answer deny("") both refuse the call: only .allowed decides."""
    registry, tool = HookRegistry(), RecordingTool()
    denied: list[object] = []
    registry.permission_denied(denied.append)
    if where == "gate":
        registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny(""), name="silent")
    else:
        registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
        registry.register(HookPoint.ON_INTERACTION, lambda ctx: HookResult.deny(""), name="silent")
    report = asyncio.run(kit_wiring(registry, tool).run((echo_call(), DONE), prompt="go", streamed=streamed))
    assert tool.calls == []
    assert len(denied) == 1
    assert "silent" in report.tool_messages["call-1"]


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize("signal", [ModelRetry, ToolFailed])
def test_model_retry_and_tool_failed_are_failures(signal: type[Exception], streamed: bool) -> None:
    """A tool's ModelRetry or ToolFailed fires post_tool_call_failure then on_tool_error, whose text the model reads."""
    registry = HookRegistry()
    fired: list[str] = []
    errors: list[BaseException] = []
    registry.post_tool_call(lambda ctx: fired.append("post_tool_call"))
    registry.transform_tool_result(lambda ctx: fired.append("transform_tool_result"))
    registry.post_tool_call_failure(lambda ctx: fired.append("post_tool_call_failure"))

    @registry.on_tool_error
    def explain(ctx: OnToolErrorContext) -> str:
        fired.append("on_tool_error")
        errors.append(ctx.error)
        return f"hook says: {ctx.message} / try other text"

    def refuse(**kwargs: object) -> str:
        raise signal("echo needs other text")

    report = asyncio.run(kit_wiring(registry, refuse).run((echo_call(), DONE), prompt="go", streamed=streamed))
    assert fired == ["post_tool_call_failure", "on_tool_error"]
    assert isinstance(errors[0], signal)
    assert str(errors[0]) == "echo needs other text"
    read = report.tool_messages["call-1"]
    assert "hook says: echo needs other text / try other text" in read


def test_model_retry_without_on_tool_error_keeps_pydantic_ais_text() -> None:
    """Without on_tool_error hooks a ModelRetry still fires post_tool_call_failure; the model reads its own text."""
    registry = HookRegistry()
    failures: list[PostToolCallFailureContext] = []
    registry.post_tool_call_failure(failures.append)

    def refuse(**kwargs: object) -> str:
        raise ModelRetry("echo needs other text")

    report = asyncio.run(kit_wiring(registry, refuse).run((echo_call(), DONE), prompt="go", streamed=False))
    assert [f.call_id for f in failures] == ["call-1"]
    assert "echo needs other text" in report.tool_messages["call-1"]


def test_a_spent_retry_budget_is_reported_and_still_ends_the_run() -> None:
    """A tool that keeps raising ModelRetry past its budget fires its failures, and pydantic-ai still ends the run."""
    registry = HookRegistry()
    failures: list[PostToolCallFailureContext] = []
    ends: list[OnSessionEndContext] = []
    registry.post_tool_call_failure(failures.append)
    registry.on_session_end(ends.append)
    registry.on_tool_error(lambda ctx: "swallowed?")

    def refuse(**kwargs: object) -> str:
        raise ModelRetry("again")

    answers = (*(echo_call(call_id=f"call-{n}") for n in range(6)), DONE)
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries"):
        asyncio.run(kit_wiring(registry, refuse).run(answers, prompt="go", streamed=False))
    assert len(failures) == 4  # three retries allowed (retries=3), the fourth spends the budget
    assert [e.outcome.status for e in ends] == ["failed"]


async def _hanging_run(registry: HookRegistry, streamed: bool) -> None:
    wiring = kit_wiring(registry)
    await wiring.run((Answer(hang=True),), prompt="go", streamed=streamed)


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_a_cancelled_run_ends_cancelled_once(streamed: bool) -> None:
    """Cancelling a run's task ends its session cancelled, exactly once, even with an async observer that awaits."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    started = asyncio.Event()
    registry.on_session_start(lambda ctx: started.set())

    @registry.on_session_end
    async def record(ctx: OnSessionEndContext) -> None:
        await asyncio.sleep(0)
        ends.append(ctx)

    async def main() -> None:
        task = asyncio.ensure_future(_hanging_run(registry, streamed))
        await started.wait()
        for _ in range(5):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("cancelled", "CancelledError")]


def test_leaving_an_iter_loop_early_ends_cancelled_once() -> None:
    """Breaking out of agent.iter after the first node ends the session cancelled, exactly once."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)
    wiring = kit_wiring(registry)

    async def main() -> None:
        async with wiring.agent.iter("go", model=KitModel((echo_call(), DONE))) as run:
            async for _node in run:
                break

    asyncio.run(main())
    assert [e.outcome.status for e in ends] == ["cancelled"]


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_a_model_error_ends_failed_and_a_stop_ends_stopped(streamed: bool) -> None:
    """A model error ends the session failed; a StopRun reaches the caller as the same object and ends it stopped."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)
    with pytest.raises(RuntimeError, match="model is down"):
        asyncio.run(
            kit_wiring(registry).run((Answer(error=RuntimeError("model is down")),), prompt="go", streamed=streamed)
        )
    stop = StopRun("enough")

    @registry.post_tool_call
    def halt(ctx: PostToolCallContext) -> None:
        raise stop

    with pytest.raises(StopRun) as raised:
        asyncio.run(kit_wiring(registry).run((echo_call(), DONE), prompt="go", streamed=streamed))
    assert raised.value is stop
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [
        ("failed", "RuntimeError: model is down"),
        ("stopped", "enough"),
    ]


@pytest.mark.parametrize("point", [HookPoint.USER_PROMPT_SUBMIT, HookPoint.PRE_TURN])
def test_a_run_level_ask_notifies_then_asks(point: HookPoint) -> None:
    """An ask at user_prompt_submit or pre_turn fires notification, then on_interaction; approval lets the run go on."""
    registry = HookRegistry()
    order: list[str] = []
    registry.register(point, lambda ctx: HookResult.ask("start?"), name="asker")
    registry.notification(lambda ctx: order.append(f"notification: {ctx.message}"))

    @registry.on_interaction
    def approve(ctx: OnInteractionContext) -> HookResult:
        order.append(f"on_interaction: {ctx.question}")
        return HookResult.allow()

    report = asyncio.run(kit_wiring(registry).run((Answer(text="done"),), prompt="go", streamed=False))
    assert report.output == "done"
    assert order[:2] == ["notification: approval needed: start?", "on_interaction: start?"]


def test_an_unanswered_run_level_ask_stops_the_run() -> None:
    """A pre_turn ask nobody approves raises StopRun before the model is called; the session ends stopped."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)
    registry.pre_turn(lambda ctx: HookResult.ask("start?"))
    with pytest.raises(StopRun):
        asyncio.run(kit_wiring(registry).run((Answer(hang=True),), prompt="go", streamed=False))
    assert [e.outcome.status for e in ends] == ["stopped"]


def test_a_tool_ask_notifies_before_on_interaction() -> None:
    """A gate's ask fires notification naming the tool before on_interaction is asked."""
    registry, tool = HookRegistry(), RecordingTool()
    order: list[str] = []
    registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
    registry.notification(lambda ctx: order.append("notification"))

    @registry.on_interaction
    def approve(ctx: OnInteractionContext) -> HookResult:
        order.append(f"on_interaction({ctx.tool_name})")
        return HookResult.allow()

    asyncio.run(kit_wiring(registry, tool).run((echo_call(), DONE), prompt="go", streamed=False))
    assert order == ["notification", "on_interaction(echo)"]
    assert tool.calls == [{"text": "hi"}]


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize(
    ("args", "offered", "raw"),
    [
        ('["hi"]', None, ["hi"]),
        ('{"text": "hi', None, '{"text": "hi'),
        ({"prefix": "no text"}, None, {"prefix": "no text"}),
        ({"text": "hi"}, frozenset({OTHER_TOOL}), {"text": "hi"}),
    ],
    ids=["not-an-object", "malformed-json", "fails-the-schema", "not-offered"],
)
def test_invalid_calls_reach_invalid_tool_call_and_never_run(
    args: Mapping[str, object] | str, offered: frozenset[str] | None, raw: object, streamed: bool
) -> None:
    """Arguments that are no object or no JSON, fail the schema, or name a tool not offered reach invalid_tool_call."""
    registry, tool = HookRegistry(), RecordingTool()
    invalid: list[InvalidToolCallContext] = []
    kinds: list[ToolErrorKind] = []
    registry.invalid_tool_call(invalid.append)  # returns None: the default, fail
    registry.on_tool_error(lambda ctx: kinds.append(ctx.kind))
    if offered is not None:
        registry.pre_model_call(lambda ctx: RequestPatch(active_tools=offered))
    report = asyncio.run(kit_wiring(registry, tool).run((echo_call(args), DONE), prompt="go", streamed=streamed))
    assert tool.calls == []
    assert len(invalid) == 1
    assert invalid[0].raw_args == raw
    assert invalid[0].args == (raw if isinstance(raw, Mapping) else {})
    assert kinds == [ToolErrorKind.NOT_FOUND if offered else ToolErrorKind.INVALID_ARGS]
    assert "Error: " in report.tool_messages["call-1"]


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_finished_turns_carry_mapped_reasons_ids_and_model(streamed: bool) -> None:
    """model_turn_finished maps the finish reason, keeps the provider's spelling, and fills message_id and model."""
    registry = HookRegistry()
    finished: list[ModelTurnFinishedContext] = []

    @registry.model_turn_finished
    def judge(ctx: ModelTurnFinishedContext) -> TurnAction:
        finished.append(ctx)
        return TurnAction.continue_run()

    asyncio.run(kit_wiring(registry).run((echo_call(), DONE), prompt="go", streamed=streamed))
    assert [(c.finish_reason, c.raw_finish_reason) for c in finished] == [
        (FinishReason.TOOL_CALLS, "tool_use"),
        (FinishReason.STOP, "end_turn"),
    ]
    assert [c.message_id for c in finished] == ["resp-1", "resp-2"]
    assert {c.model for c in finished} == {"kit-model"}
    assert [c.turn for c in finished] == [1, 2]


def test_pydantic_ais_own_finish_reason_is_mapped_when_the_provider_gives_none() -> None:
    """Without provider details, pydantic-ai's normalised 'tool_call' maps to TOOL_CALLS and stays the raw reason."""
    registry = HookRegistry()
    reasons: list[tuple[FinishReason | None, str | None]] = []

    @registry.model_turn_finished
    def judge(ctx: ModelTurnFinishedContext) -> TurnAction:
        reasons.append((ctx.finish_reason, ctx.raw_finish_reason))
        return TurnAction.continue_run()

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(TOOL_NAME, {"text": "hi"})], finish_reason="tool_call")
        return ModelResponse(parts=[TextPart("done")])

    asyncio.run(make_agent(registry, RecordingTool(), FunctionModel(respond)).run("go"))
    assert reasons == [(FinishReason.TOOL_CALLS, "tool_call"), (None, None)]


def test_turns_and_turn_scratchpads_are_per_run_on_a_shared_capability() -> None:
    """One capability shared by two concurrent runs: each counts turns from 1 with a fresh turn scratchpad per turn."""
    registry = HookRegistry()
    seen: list[tuple[str, int, bool]] = []

    @registry.pre_turn
    async def mark(ctx: PreTurnContext) -> HookResult:
        seen.append((ctx.run.run_id, ctx.turn, _Mark in ctx.run.turn_scratchpad))
        ctx.run.turn_scratchpad.insert(_Mark())
        await asyncio.sleep(0)
        return HookResult.allow()

    wiring = kit_wiring(registry)

    async def both() -> None:
        await asyncio.gather(*(wiring.run((echo_call(), DONE), prompt="go", streamed=False) for _ in range(2)))

    asyncio.run(both())
    by_run: dict[str, list[tuple[int, bool]]] = {}
    for run_id, turn, marked in seen:
        by_run.setdefault(run_id, []).append((turn, marked))
    assert sorted(by_run.values()) == [[(1, False), (2, False)], [(1, False), (2, False)]]


class _Mark:
    """Put in a turn's scratchpad."""


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_no_dangling_tool_call_after_a_stop(streamed: bool) -> None:
    """After a gate stops the run on the second of two parallel calls, every call has a result in the history."""
    registry = HookRegistry()

    @registry.pre_tool_call_decide
    def halt_on_b(ctx: PreToolCallDecideContext) -> HookResult:
        if ctx.args.get("text") == "b":
            raise StopRun("no b")
        return HookResult.allow()

    calls = (Call({"text": "a"}, call_id="call-a"), Call({"text": "b"}, call_id="call-b"))
    with capture_run_messages() as messages, pytest.raises(StopRun, match="no b"):
        asyncio.run(kit_wiring(registry).run((Answer(calls=calls), DONE), prompt="go", streamed=streamed))
    called = [p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart)]
    answered = {
        p.tool_call_id: p.model_response_str() for m in messages for p in m.parts if isinstance(p, ToolReturnPart)
    }
    assert called == ["call-a", "call-b"]
    assert set(answered) == {"call-a", "call-b"}
    assert STOPPED_NOTICE in answered["call-b"]


def _import_adapter_with(monkeypatch: pytest.MonkeyPatch, installed: str) -> None:
    """Execute the adapter module afresh (under another name) while pydantic-ai-slim reports `installed`."""
    import importlib.metadata
    import importlib.util

    import hookreg.adapters.pydantic_ai as adapter

    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: installed if name == "pydantic-ai-slim" else real(name)
    )
    spec = importlib.util.spec_from_file_location("hookreg_pydantic_ai_probe", adapter.__file__)
    assert spec is not None
    assert spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, probe)  # dataclasses look their module up while it executes
    spec.loader.exec_module(probe)


def test_a_too_old_pydantic_ai_is_refused_naming_the_version_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the adapter over pydantic-ai-slim 2.63 raises ImportError naming 2.64, not "not installed"."""
    with pytest.raises(ImportError, match=r"pydantic-ai-slim 2\.63\.0 is installed, but .*>=2\.64"):
        _import_adapter_with(monkeypatch, "2.63.0")


@pytest.mark.parametrize("installed", ["2.64.0", "2.68.1", "3.0.0.dev1", "unknown"])
def test_a_recent_or_unreadable_version_imports(monkeypatch: pytest.MonkeyPatch, installed: str) -> None:
    """The floor release, newer ones and versions that are not numbers import without complaint."""
    _import_adapter_with(monkeypatch, installed)


@pytest.mark.parametrize("signal", [ModelRetry, ToolFailed])
def test_a_tool_args_validator_refusal_is_an_invalid_args_failure(signal: type[Exception]) -> None:
    """A tool's args_validator refusing the gated args fires the failure points (INVALID_ARGS); the tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()
    errors: list[OnToolErrorContext] = []
    registry.post_tool_call(lambda ctx: pytest.fail("post_tool_call fired for refused arguments"))

    @registry.on_tool_error
    def explain(ctx: OnToolErrorContext) -> str:
        errors.append(ctx)
        return f"hook says: {ctx.message}"

    def no_shouting(ctx: object, text: str) -> None:
        if text.isupper():
            raise signal("no shouting")

    agent = Agent(KitModel((echo_call({"text": "HI"}), DONE)), capabilities=[hookreg_capability(registry)])

    @agent.tool_plain(name=TOOL_NAME, args_validator=no_shouting)
    def echo(text: str) -> str:
        """Echo text."""
        return tool(text=text)

    result = asyncio.run(agent.run("go"))
    assert tool.calls == []
    assert [(e.kind, str(e.error)) for e in errors] == [(ToolErrorKind.INVALID_ARGS, "no shouting")]
    assert "hook says: no shouting" in _read(result.all_messages())["call-1"]


def test_a_call_that_ran_before_the_stop_keeps_its_result_in_the_history() -> None:
    """A post_tool_call observer stopping the run after echo ran: the history shows echo's result, not a notice."""
    registry = HookRegistry()

    @registry.post_tool_call
    def halt(ctx: PostToolCallContext) -> None:
        raise StopRun("seen enough")

    with capture_run_messages() as messages, pytest.raises(StopRun, match="seen enough"):
        asyncio.run(kit_wiring(registry).run((echo_call({"text": "ran"}), DONE), prompt="go", streamed=False))
    answered = {
        p.tool_call_id: p.model_response_str() for m in messages for p in m.parts if isinstance(p, ToolReturnPart)
    }
    assert answered == {"call-1": "ran"}


def test_a_call_id_reused_on_a_later_turn_is_gated_afresh() -> None:
    """A model reusing call id call-1 on the next turn gets the gate's verdict on the new arguments, not a stale one."""
    registry, tool = HookRegistry(), RecordingTool()
    gated: list[str] = []

    @registry.pre_tool_call_decide
    def no_a(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(str(ctx.args["text"]))
        return HookResult.deny("not a") if ctx.args["text"] == "a" else HookResult.allow()

    answers = (echo_call({"text": "a"}), echo_call({"text": "b"}), DONE)
    asyncio.run(kit_wiring(registry, tool).run(answers, prompt="go", streamed=False))
    assert gated == ["a", "b"]
    assert tool.calls == [{"text": "b"}]


def test_an_unknown_call_shows_the_hooks_text_even_when_the_run_ends_before_the_next_request() -> None:
    """A run ended by pydantic-ai's request limit right after a call to an unknown tool keeps the skip reason."""
    registry = HookRegistry()
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.skip("no such tool: nope"))
    answers = (Answer(calls=(Call({"text": "hi"}, tool_name="nope"),)), DONE)
    agent = kit_wiring(registry).agent
    with capture_run_messages() as messages, pytest.raises(UsageLimitExceeded):
        asyncio.run(agent.run("go", model=KitModel(answers), usage_limits=UsageLimits(request_limit=1)))
    assert _read(messages)["call-1"].count("no such tool: nope") == 1


def test_pydantic_ais_normalised_reason_wins_over_an_unfamiliar_provider_spelling() -> None:
    """A provider spelling hookreg does not know keeps pydantic-ai's mapping ('error') and stays the raw reason."""
    registry = HookRegistry()
    reasons: list[tuple[FinishReason | None, str | None]] = []

    @registry.model_turn_finished
    def judge(ctx: ModelTurnFinishedContext) -> TurnAction:
        reasons.append((ctx.finish_reason, ctx.raw_finish_reason))
        return TurnAction.continue_run()

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        details = {"finish_reason": "MALFORMED_FUNCTION_CALL"}
        return ModelResponse(parts=[TextPart("done")], finish_reason="error", provider_details=details)

    asyncio.run(make_agent(registry, RecordingTool(), FunctionModel(respond)).run("go"))
    assert reasons == [(FinishReason.ERROR, "MALFORMED_FUNCTION_CALL")]


def test_a_run_no_hook_listens_to_holds_no_hookreg_capability_and_a_later_hook_joins_the_next_run() -> None:
    """An empty registry leaves hookreg out of the run: pydantic-ai calls every capability of a run on every step.

    A hook registered between runs joins the next run, with both parts.
    """
    registry = HookRegistry()
    held: list[int] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        if any(isinstance(part, ToolReturnPart) for part in messages[-1].parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("look", {})])

    agent = Agent(FunctionModel(respond), capabilities=[hookreg_capability(registry)])

    @agent.tool
    def look(ctx: PaiRunContext[None]) -> str:
        """Count the run's capabilities that run `registry`'s hooks."""
        held.append(sum(getattr(capability, "registry", None) is registry for capability in ctx.capabilities.values()))
        return "seen"

    assert asyncio.run(agent.run("look")).output == "done"
    ran: list[str] = []
    registry.post_tool_call(lambda ctx: ran.append(ctx.tool_name))
    assert asyncio.run(agent.run("look")).output == "done"
    assert held == [0, 2]
    assert ran == ["look"]


def test_model_requests_nobody_listens_around_are_left_untranslated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without model-call or turn hooks, no patch is built and no answer translated (DESIGN §8, transparent)."""

    def untouched(*args: object, **kwargs: object) -> object:
        raise AssertionError((args, kwargs))

    monkeypatch.setattr("hookreg.adapters.pydantic_ai.RequestPatch", untouched)
    monkeypatch.setattr("hookreg.adapters.pydantic_ai._raw_finish_reason", untouched)
    registry = HookRegistry()
    ran: list[str] = []
    registry.on_session_start(lambda ctx: ran.append("start"))
    assert run_flow(registry, RecordingTool(), {"text": "hi"}) == "hi"
    assert ran == ["start"]
