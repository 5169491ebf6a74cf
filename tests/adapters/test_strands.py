"""Tests for hookreg.adapters.strands: a real Strands agent loop, offline, driven by a HookRegistry."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import importlib
import importlib.metadata
import inspect
import json
import runpy
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic import BaseModel
from strands import Agent, tool
from strands.hooks import MessageAddedEvent
from strands.models import Model
from strands.tools.executors import SequentialToolExecutor
from strands.tools.tools import PythonAgentTool
from strands.types.content import Messages
from strands.types.event_loop import StopReason
from strands.types.exceptions import MaxTokensReachedException
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolResult, ToolSpec, ToolUse
from structlog.testing import capture_logs

from hookreg import (
    FinishReason,
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    NotificationContext,
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
    TextDeltaContext,
    TransformToolResultContext,
    TurnAction,
    UserPromptSubmitContext,
)
from hookreg._lifecycle import STOPPED_NOTICE
from hookreg.adapters.strands import _ROUTING_FLAG, HookregProvider, ToolErrorResult
from hookreg.testing.conformance import (
    TOOL_NAME,
    Answer,
    Call,
    RecordingTool,
    ReportedError,
    RunReport,
    RunScenario,
    run_contract_cases,
)

ROOT = Path(__file__).resolve().parents[2]

Turn = str | Mapping[str, object] | tuple[str, object] | Answer
"""A scripted model answer: final text, the arguments of one echo call, a (tool name, arguments) call, or a kit
`Answer` (parallel calls, raw argument text, truncation, an error, a hang)."""


def _answer(turn: Turn) -> Answer:
    """`turn` as a kit `Answer`: a (name, args) call sends non-mapping args as their JSON text."""
    if isinstance(turn, Answer):
        return turn
    if isinstance(turn, str):
        return Answer(text=turn)
    name, args = turn if isinstance(turn, tuple) else (TOOL_NAME, turn)
    return Answer(calls=(Call(dict(args) if isinstance(args, Mapping) else json.dumps(args), tool_name=name),))


class ScriptedModel(Model):
    """A Strands model that plays back scripted answers and records the tool results it is sent."""

    def __init__(self, turns: Sequence[Turn], *, final_reason: str = "end_turn") -> None:
        self.turns = list(turns)
        self.final_reason = final_reason
        self.tool_outputs: list[str] = []
        self.requests: list[dict[str, Any]] = []

    def update_config(self, **model_config: Any) -> None:
        """Accept and ignore configuration."""

    def get_config(self) -> Any:
        """An empty configuration."""
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        """Not scripted."""
        raise NotImplementedError

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """Yield the next scripted answer as Strands stream events."""
        tool_specs, system_prompt = [*args, None, None][:2]
        texts = [(m["role"], "".join(str(b.get("text", "")) for b in m["content"])) for m in messages]
        self.requests.append({"messages": texts, "tool_specs": tool_specs, "system_prompt": system_prompt, **kwargs})
        for block in messages[-1]["content"]:
            if "toolResult" in block:
                self.tool_outputs.append("".join(c.get("text", "") for c in block["toolResult"]["content"]))
        answer = _answer(self.turns.pop(0))
        if answer.hang:
            await asyncio.Event().wait()
        if answer.error is not None:
            raise answer.error
        yield {"messageStart": {"role": "assistant"}}
        if answer.text:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": answer.text}}}
            yield {"contentBlockStop": {}}
        for call in answer.calls:
            raw = call.args if isinstance(call.args, str) else json.dumps(dict(call.args))  # raw text: sent as is
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": call.call_id, "name": call.tool_name}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": raw}}}}
            yield {"contentBlockStop": {}}
        reason = "max_tokens" if answer.truncated else ("tool_use" if answer.calls else self.final_reason)
        yield {"messageStop": {"stopReason": cast("StopReason", reason)}}


ECHO_SPEC: ToolSpec = {
    "name": TOOL_NAME,
    "description": "Echo text between a prefix and a suffix.",
    "inputSchema": {
        "json": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "prefix": {"type": "string"}, "suffix": {"type": "string"}},
            "required": ["text"],
        }
    },
}


def echo_tool(tool: Callable[..., str], name: str = TOOL_NAME) -> PythonAgentTool:
    """A tool with echo's spec named `name`: calls `tool` with exactly the input the model sent.

    A `ReportedError` from `tool` becomes a Strands error result (``status: "error"``), not an exception.
    """

    def run(tool_use: ToolUse, **invocation_state: Any) -> ToolResult:
        try:
            text = tool(**tool_use["input"])
        except ReportedError as error:
            return {"toolUseId": tool_use["toolUseId"], "status": "error", "content": [{"text": str(error)}]}
        return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": text}]}

    return PythonAgentTool(name, {**ECHO_SPEC, "name": name}, run)


def decorated_echo_tool(recorded: Callable[..., str], name: str = TOOL_NAME) -> Any:
    """Echo as a Strands ``@tool`` named `name`, calling `recorded` with the arguments the model sent.

    Strands validates a decorated tool's input itself (a call that fails its
    schema gets Strands' own error result and never runs), as it does for
    the tools its users write. A `ReportedError` becomes an error result.
    """

    def run(text: str, prefix: str = "", suffix: str = "") -> Any:
        """Echo text between a prefix and a suffix.

        Args:
            text: The text to echo.
            prefix: Prepended to the text.
            suffix: Appended to the text.
        """
        try:
            return recorded(text=text, prefix=prefix, suffix=suffix)
        except ReportedError as error:
            return {"status": "error", "content": [{"text": str(error)}]}

    return tool(name=name)(run)


def run_agent(
    registry: HookRegistry, tool: Callable[..., str], turns: Sequence[Turn], *, prompt: str = "echo something"
) -> tuple[ScriptedModel, str]:
    """Run a Strands agent once with the adapter; return the model and the final answer."""
    model = ScriptedModel(turns)
    agent = Agent(model=model, tools=[echo_tool(tool)], hooks=[HookregProvider(registry)], callback_handler=None)
    return model, str(agent(prompt)).strip()


def run_flow(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> str:
    """Run a Strands agent once and report the tool output the model saw."""
    model, _ = run_agent(registry, tool, [args, "done"])
    [seen] = model.tool_outputs
    return seen


def test_async_hooks_run() -> None:
    """Async gate and result hooks run inside the Strands loop: the model sees the async rewrite."""
    registry, gated = HookRegistry(), list[str]()

    @registry.pre_tool_call_decide
    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        await asyncio.sleep(0)
        gated.append(ctx.call_id)
        return HookResult.allow()

    @registry.transform_tool_result
    async def shout(ctx: TransformToolResultContext) -> str:
        return ctx.presentation.upper()

    assert run_flow(registry, RecordingTool(), {"text": "hi"}) == "HI"
    assert gated == ["call-1"]


def test_result_rewrite_and_observed_result() -> None:
    """transform_tool_result rewrites what the model sees; post_tool_call gets it, the raw text and the turn."""
    registry, seen = HookRegistry(), list[object]()
    registry.transform_tool_result(lambda ctx: f"<{ctx.presentation}>")
    registry.post_tool_call(seen.append)
    assert run_flow(registry, RecordingTool(), {"text": "hi"}) == "<hi>"
    [post] = seen
    assert isinstance(post, PostToolCallContext)
    assert (post.result, post.raw_result, post.call_id, post.run.turn) == ("<hi>", "hi", "call-1", 1)


def test_tool_error_without_on_tool_error_keeps_strands_text() -> None:
    """Without on_tool_error hooks the model reads Strands' own error text, and the failure is observed."""
    registry, failures = HookRegistry(), list[object]()
    registry.post_tool_call_failure(failures.append)
    assert run_flow(registry, RecordingTool(), {"text": "fail"}) == "Error: echo failed"
    assert len(failures) == 1


def test_session_and_turn_points_fire_in_order() -> None:
    """A run fires session start, prompt gate, turns, stop and session end, in order, sharing one run."""
    registry, events, contexts = HookRegistry(), list[tuple[object, ...]](), list[Any]()

    def note(ctx: Any, *event: object) -> None:
        contexts.append(ctx)
        events.append(event)

    def allow(ctx: Any, *event: object) -> HookResult:
        note(ctx, *event)
        return HookResult.allow()

    registry.on_session_start(lambda ctx: note(ctx, "start", ctx.goal))
    registry.user_prompt_submit(lambda ctx: allow(ctx, "prompt", ctx.content))
    registry.pre_turn(lambda ctx: allow(ctx, "pre_turn", ctx.turn))
    registry.post_turn(lambda ctx: note(ctx, "post_turn", ctx.response_text))
    registry.stop(lambda ctx: allow(ctx, "stop", ctx.response_text))
    registry.on_session_end(lambda ctx: note(ctx, "end", ctx.outcome.status, ctx.outcome.turns))
    run_agent(registry, RecordingTool(), [{"text": "hi"}, "done"], prompt="say hi")
    assert events == [
        ("start", "say hi"),
        ("prompt", "say hi"),
        ("pre_turn", 1),
        ("post_turn", ""),
        ("pre_turn", 2),
        ("post_turn", "done"),
        ("stop", "done"),
        ("end", "completed", 2),
    ]
    assert {type(ctx) for ctx in contexts} == {
        OnSessionStartContext,
        UserPromptSubmitContext,
        PreTurnContext,
        PostTurnContext,
        StopContext,
        OnSessionEndContext,
    }
    assert len({id(ctx.run.scratchpad) for ctx in contexts}) == 1


def test_prompt_deny_stops_the_run() -> None:
    """A user_prompt_submit deny raises StopRun with its reason, calls no model and ends the session as stopped."""
    registry, ends = HookRegistry(), list[OnSessionEndContext]()
    registry.user_prompt_submit(lambda ctx: HookResult.deny("prompts about echo are closed"))
    registry.on_session_end(ends.append)
    model = ScriptedModel(["never"])
    with pytest.raises(StopRun, match="prompts about echo are closed"):
        agent_for(registry, model, RecordingTool())("echo something")
    assert model.turns == ["never"]
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "prompts about echo are closed")]


def test_pre_turn_deny_stops_the_run() -> None:
    """A pre_turn deny on the second turn raises StopRun with its reason instead of calling the model."""
    registry, tool, ends = HookRegistry(), RecordingTool(), list[OnSessionEndContext]()
    registry.pre_turn(lambda ctx: HookResult.deny("turn budget spent") if ctx.turn > 1 else HookResult.allow())
    registry.on_session_end(ends.append)
    model = ScriptedModel([{"text": "hi"}, "never"])
    with pytest.raises(StopRun, match="turn budget spent"):
        agent_for(registry, model, tool)("echo hi")
    assert tool.calls == [{"text": "hi"}]
    assert model.turns == ["never"]
    assert [(e.outcome.status, e.outcome.reason, e.outcome.turns) for e in ends] == [
        ("stopped", "turn budget spent", 1)
    ]


def test_stop_deny_resumes_the_agent() -> None:
    """A stop deny resumes the agent with its reason; the session starts and ends once."""
    registry, counts, starts = HookRegistry(), list[int](), list[object]()
    registry.on_session_start(starts.append)

    @registry.stop
    def once_more(ctx: StopContext) -> HookResult:
        counts.append(ctx.continuation_count)
        return HookResult.deny("check your answer") if ctx.continuation_count == 0 else HookResult.allow()

    model, answer = run_agent(registry, RecordingTool(), ["first", "second"])
    assert (answer, model.turns) == ("second", [])
    assert counts == [0, 1]
    assert len(starts) == 1


def test_stop_run_from_a_gate_reaches_the_caller_as_itself() -> None:
    """A StopRun raised by a gate inside Strands' event loop reaches the caller as the same object, not wrapped."""
    registry, tool, ends = HookRegistry(), RecordingTool(), list[OnSessionEndContext]()
    stop = StopRun("enough")

    @registry.pre_tool_call_decide(name="halt")
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise stop

    registry.on_session_end(ends.append)
    with pytest.raises(StopRun) as raised:
        run_flow(registry, tool, {"text": "hi"})
    assert raised.value is stop
    assert (stop.hook, tool.calls) == ("halt", [])
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "enough")]


def test_provider_refuses_a_non_registry() -> None:
    """Building the provider from something else than a HookRegistry names the mistake."""
    with pytest.raises(TypeError, match="Cannot build HookregProvider from 'hooks': it is not a HookRegistry"):
        HookregProvider("hooks")  # type: ignore[arg-type]  # the mistake under test


def test_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/adapter_strands.py runs offline: the patched system prompt, the denial, the rewrite, the stream."""
    runpy.run_path(str(ROOT / "examples" / "adapter_strands.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "system prompt: [{'text': 'Prefer read-only commands.'}]" in out
    assert "denied: rm -rf is not allowed" in out
    assert "tool output seen by the model: ls -la (exit 0)" in out
    assert "streamed: done" in out


# --- model request points, deltas, turn judgement, invalid tool calls --------------


def agent_for(registry: HookRegistry, model: Model, tool: Callable[..., str], **provider: Any) -> Agent:
    """A Strands agent with the echo tool, `model` and the provider (given `provider` keyword arguments)."""
    hooks = HookregProvider(registry, **provider)
    return Agent(model=model, tools=[echo_tool(tool)], hooks=[hooks], callback_handler=None, system_prompt="Base.")


def test_pre_model_call_patch_reaches_the_model() -> None:
    """The merged patch adds context to the system prompt, narrows the tools and sets the tool choice."""
    registry, seen = HookRegistry(), list[PreModelCallContext]()

    @registry.pre_model_call
    async def context(ctx: PreModelCallContext) -> RequestPatch:
        seen.append(ctx)
        return RequestPatch(extra_context=("Be terse.",), tool_choice="any")

    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset()))
    model = ScriptedModel(["done"])
    assert str(agent_for(registry, model, RecordingTool())("hi")).strip() == "done"
    [request] = model.requests
    assert request["system_prompt_content"] == [{"text": "Base."}, {"text": "Be terse."}]
    assert (request["tool_specs"], request["tool_choice"]) == (None, {"any": {}})
    [ctx] = seen
    assert (ctx.turn, ctx.prompt, ctx.patch.active_tools) == (1, "hi", frozenset({TOOL_NAME}))
    assert [(m.role, m.content) for m in ctx.history] == [("user", "hi")]


def test_pre_model_call_shows_the_runs_prompt_after_a_tool_call_as_pre_turn_does() -> None:
    """After a tool call (a user message of tool results, no text), pre_model_call still shows the run's prompt."""
    registry, prompts = HookRegistry(), list[tuple[str, int, str]]()

    @registry.pre_turn
    def turn(ctx: PreTurnContext) -> HookResult:
        prompts.append(("pre_turn", ctx.turn, ctx.prompt))
        return HookResult.allow()

    @registry.pre_model_call
    def note(ctx: PreModelCallContext) -> RequestPatch:
        prompts.append(("pre_model_call", ctx.turn, ctx.prompt))
        return ctx.patch

    agent_for(registry, ScriptedModel([{"text": "x"}, "done"]), RecordingTool())("echo x")
    assert prompts == [(point, turn, "echo x") for turn in (1, 2) for point in ("pre_turn", "pre_model_call")]


def test_preamble_replaces_the_prompt_and_model_settings_are_reported_unsupported() -> None:
    """A preamble replaces the system prompt; temperature cannot apply and is logged, not silently lost."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(preamble="You are careful.", temperature=0.1))
    model = ScriptedModel(["done"])
    with capture_logs() as logs:
        agent_for(registry, model, RecordingTool())("hi")
    assert model.requests[0]["system_prompt"] == "You are careful."
    [event] = [e for e in logs if e["event"] == "patch_field_unsupported"]
    assert event["fields"] == ["temperature"]


def test_model_select_swaps_the_model() -> None:
    """model_select picks a model by name from models=; the agent's model is the default by its key."""
    registry, defaults = HookRegistry(), list[str]()

    @registry.model_select
    def fast(ctx: ModelSelectContext) -> str:
        defaults.append(ctx.default_model)
        return "fast"

    main, quick = ScriptedModel(["slow answer"]), ScriptedModel(["fast answer"])
    agent = agent_for(registry, main, RecordingTool(), models={"main": main, "fast": quick})
    assert str(agent("hi")).strip() == "fast answer"
    assert (defaults, main.requests, len(quick.requests)) == (["main"], [], 1)


def test_model_select_of_an_unknown_name_is_refused() -> None:
    """A pick naming no model in models= raises HookValueError naming the fix."""
    registry = HookRegistry()
    registry.model_select(lambda ctx: "huge")
    with pytest.raises(HookValueError, match=r"Cannot call model 'huge'.*models=\{'huge': model\}"):
        agent_for(registry, ScriptedModel(["x"]), RecordingTool())("hi")


def test_models_must_be_strands_models() -> None:
    """models= with something other than a Strands model is refused where the provider is built."""
    with pytest.raises(HookTypeError, match="Cannot build HookregProvider with model 'fast'"):
        HookregProvider(HookRegistry(), models={"fast": "claude"})  # type: ignore[dict-item]


class ReasoningModel(ScriptedModel):
    """A scripted model that streams some reasoning before each answer."""

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        """Stream two reasoning chunks, then the scripted answer."""
        yield {"contentBlockStart": {"start": {}}}
        for chunk in ("think", "ing"):
            yield {"contentBlockDelta": {"delta": {"reasoningContent": {"text": chunk}}}}
        yield {"contentBlockStop": {}}
        async for event in super().stream(messages, *args, **kwargs):
            yield event


def test_delta_points_observe_the_stream() -> None:
    """text_delta, reasoning_delta and tool_call_delta fire for the model's stream events."""
    registry, seen = HookRegistry(), list[tuple[str, str, str | None]]()

    @registry.text_delta
    async def text(ctx: TextDeltaContext) -> None:
        seen.append(("text", ctx.delta, ctx.aggregated))

    registry.reasoning_delta(lambda ctx: seen.append(("reasoning", ctx.delta, ctx.aggregated)))
    registry.tool_call_delta(lambda ctx: seen.append(("tool", ctx.delta, ctx.tool_name)))
    agent_for(registry, ReasoningModel([{"text": "hi"}, "done"]), RecordingTool())("hi")
    assert seen == [
        ("reasoning", "think", "think"),
        ("reasoning", "ing", "thinking"),
        ("tool", '{"text": "hi"}', TOOL_NAME),
        ("reasoning", "think", "think"),
        ("reasoning", "ing", "thinking"),
        ("text", "done", "done"),
    ]


def test_model_turn_finished_repeat_and_feedback() -> None:
    """repeat() discards the answer; retry_with_feedback keeps it and adds the feedback before the new call."""
    actions = iter([TurnAction.repeat(), TurnAction.retry_with_feedback("be brief")])
    registry, kept = HookRegistry(), list[str]()
    registry.model_turn_finished(lambda ctx: next(actions, TurnAction.continue_run()))
    registry.post_turn(lambda ctx: kept.append(f"{ctx.turn}: {ctx.response_text}"))

    @registry.pre_turn
    def turn(ctx: PreTurnContext) -> HookResult:
        kept.append(f"pre_turn {ctx.turn}")
        return HookResult.allow()

    model = ScriptedModel(["dropped", "kept", "final"])
    agent = agent_for(registry, model, RecordingTool())
    assert str(agent("hi")).strip() == "final"
    assert model.requests[-1]["messages"] == [("user", "hi"), ("assistant", "kept"), ("user", "be brief")]
    assert kept == ["pre_turn 1", "1: final"]  # the retries stay in turn 1


def test_model_turn_finished_retry_of_a_tool_call_is_refused() -> None:
    """Retrying an answer that calls tools raises HookValueError: its calls would be dropped unrun."""
    registry = HookRegistry()
    registry.model_turn_finished(lambda ctx: TurnAction.repeat())
    with pytest.raises(HookValueError, match=r"Cannot retry turn 1 .* would be dropped unrun"):
        agent_for(registry, ScriptedModel([{"text": "hi"}]), RecordingTool())("hi")


def test_invalid_tool_call_repairs_an_unknown_tool() -> None:
    """A call to an unknown tool reaches invalid_tool_call; repair() runs the named tool through the gate."""
    registry, tool, seen, gated = HookRegistry(), RecordingTool(), list[InvalidToolCallContext](), list[str]()

    @registry.invalid_tool_call
    async def fix_typo(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        seen.append(ctx)
        return InvalidToolCallAction.repair(TOOL_NAME)

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx.tool_name)
        return HookResult.allow()

    model = ScriptedModel([("ecko", {"text": "hi"}), "done"])
    agent_for(registry, model, tool)("hi")
    assert (model.tool_outputs, tool.calls, gated) == (["hi"], [{"text": "hi"}], [TOOL_NAME])
    [ctx] = seen
    assert (ctx.tool_name, ctx.available_tools) == ("ecko", (TOOL_NAME,))
    assert ctx.error == "unknown tool 'ecko'; the tools offered are: echo"


@pytest.mark.parametrize(
    ("action", "shown"),
    [
        (InvalidToolCallAction.retry("Call echo instead."), "Call echo instead."),
        (InvalidToolCallAction.skip("skipped"), "skipped"),
        (InvalidToolCallAction.fail(), "Error: LookupError: unknown tool 'ecko'; the tools offered are: echo"),
    ],
    ids=["retry", "skip", "fail"],
)
def test_invalid_tool_call_answers_without_running_a_tool(action: InvalidToolCallAction, shown: str) -> None:
    """retry, skip and fail answer an unknown tool's call with their text (fail: the lookup error), no tool runs."""
    registry, tool = HookRegistry(), RecordingTool()
    registry.invalid_tool_call(lambda ctx: action)
    model = ScriptedModel([("ecko", {"text": "hi"}), "done"])
    agent_for(registry, model, tool)("hi")
    assert (model.tool_outputs, tool.calls) == ([shown], [])


def test_a_deny_without_a_reason_never_runs_the_tool() -> None:
    """A gate's deny whose reason is None (built around the constructor) is still a deny: the tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()
    hostile = copy.copy(HookResult.deny("x"))
    object.__setattr__(hostile, "reason", None)  # what a careless gate could hand back before reasons were checked
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: hostile, name="careless")
    seen = run_flow(registry, tool, {"text": "hi"})
    assert tool.calls == []
    assert "careless" in seen


@pytest.mark.parametrize("raw", ["hi", ["hi"]], ids=["string", "list"])
def test_non_object_tool_input_is_an_invalid_call_not_a_gated_empty_one(raw: object) -> None:
    """Tool input that is not a JSON object never runs the tool: invalid_tool_call sees it as raw_args, not {}."""
    registry, tool = HookRegistry(), RecordingTool()
    gated: list[PreToolCallDecideContext] = []
    invalid: list[InvalidToolCallContext] = []

    @registry.pre_tool_call_decide
    def allow_all(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx)
        return HookResult.allow()

    @registry.invalid_tool_call
    def note(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        invalid.append(ctx)
        return InvalidToolCallAction.fail()  # an answer: hookreg's handling replaces Strands'

    model, _ = run_agent(registry, tool, [(TOOL_NAME, raw), "done"])
    assert tool.calls == []
    assert gated == []
    assert [(dict(ctx.args), ctx.raw_args) for ctx in invalid] == [({}, raw)]
    assert "expected a JSON object" in model.tool_outputs[0]


# --- the run contract ------------------------------------------------------------------


def _tool_messages(messages: Messages) -> dict[str, str]:
    """Call id → the text of its tool result, from a Strands conversation."""
    return {
        str(block["toolResult"]["toolUseId"]): "".join(c.get("text", "") for c in block["toolResult"]["content"])
        for message in messages
        for block in message["content"]
        if "toolResult" in block
    }


async def play(agent: Agent, prompt: str, *, streamed: bool) -> str:
    """Run `agent` once, through ``invoke_async`` or ``stream_async``; return its final text."""
    if not streamed:
        return str(await agent.invoke_async(prompt)).strip()
    result: object = None
    async for event in agent.stream_async(prompt):
        result = event.get("result", result)
    return str(result).strip()


@dataclass
class StrandsWiring:
    """One provider serving every run; each run is a Strands agent (one conversation) using it."""

    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]
    provider: HookregProvider = field(init=False)

    def __post_init__(self) -> None:
        self.provider = HookregProvider(self.registry)

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        """Run a fresh agent sharing the provider, the scripted model playing `answers`."""
        # Strands' usual tools, which validate their input: when every invalid_tool_call hook passes, bad
        # arguments are Strands' own to refuse (DESIGN §8), so the kit's "never run" holds through Strands
        tools: list[Any] = [decorated_echo_tool(recorded, name) for name, recorded in self.tools.items()]
        agent = Agent(model=ScriptedModel(answers), tools=tools, hooks=[self.provider], callback_handler=None)
        try:
            output = await play(agent, prompt, streamed=streamed)
        except MaxTokensReachedException:  # Strands' own end of a run whose answer hit the output cap
            output = ""
        return RunReport(tool_messages=_tool_messages(agent.messages), output=output)


class StrandsFramework:
    """Strands for the run-contract kit: every row, blocking (``invoke_async``) and streamed (``stream_async``).

    The wiring object is the `HookregProvider`: a Strands ``Agent`` holds one
    conversation and refuses concurrent invocations, so each run is its own
    agent sharing the one provider (`test_one_agent_invoked_twice_starts_two_sessions`
    covers one agent invoked twice).
    """

    name = "strands"
    streams = True
    stop_raises = True
    limits: Mapping[str, str] = {}

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> StrandsWiring:
        """A provider for `registry` and the tools as Strands tools with echo's spec."""
        return StrandsWiring(registry, tools)


FRAMEWORK = StrandsFramework()


@pytest.mark.parametrize(
    ("scenario", "streamed"),
    run_contract_cases(FRAMEWORK),
    ids=lambda v: v.name if isinstance(v, RunScenario) else ("streamed" if v else "blocking"),
)
def test_run_contract(scenario: RunScenario, streamed: bool) -> None:
    """The Strands adapter honours every row of the run contract."""
    scenario.check(FRAMEWORK, streamed=streamed)


# --- issue 12: each defect pinned ------------------------------------------------------


def test_an_interaction_answer_denying_without_a_reason_never_runs_the_tool() -> None:
    """An ask answered by an on_interaction deny with an empty reason is a deny: the tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()
    registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
    registry.on_interaction(lambda ctx: HookResult.deny(""))
    seen = run_flow(registry, tool, {"text": "hi"})
    assert tool.calls == []
    assert seen.strip() != ""


def test_malformed_tool_input_is_an_invalid_call_with_the_raw_text() -> None:
    """Malformed JSON input (Strands would hand the tool {}) reaches invalid_tool_call as raw text; no tool runs."""
    registry, tool, invalid = HookRegistry(), RecordingTool(), list[InvalidToolCallContext]()

    @registry.invalid_tool_call
    def note(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        invalid.append(ctx)
        return InvalidToolCallAction.fail()  # an answer: hookreg's handling replaces Strands'

    model = ScriptedModel([Answer(calls=(Call('{"text": "hi'),)), "done"])
    agent_for(registry, model, tool)("hi")
    assert tool.calls == []
    assert [(dict(ctx.args), ctx.raw_args) for ctx in invalid] == [({}, '{"text": "hi')]
    assert "expected a JSON object" in model.tool_outputs[0]


def test_a_tool_not_offered_this_turn_never_runs() -> None:
    """A call to a tool that active_tools filtered out of this model call is invalid (not found) and never runs."""
    registry, tool, errors = HookRegistry(), RecordingTool(), list[OnToolErrorContext]()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset()))

    @registry.on_tool_error
    def note(ctx: OnToolErrorContext) -> str:
        errors.append(ctx)
        return ctx.message

    model = ScriptedModel([{"text": "hi"}, "done"])
    agent_for(registry, model, tool)("hi")
    assert tool.calls == []
    assert [ctx.kind.value for ctx in errors] == ["not_found"]
    assert "was not offered for this turn" in model.tool_outputs[0]


def test_an_empty_error_text_still_cancels_the_call() -> None:
    """An on_tool_error hook answering "" for an invalid call does not let Strands run it (an empty cancel would)."""
    registry, tool = HookRegistry(), RecordingTool()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset()))
    registry.on_tool_error(lambda ctx: "")
    model = ScriptedModel([{"text": "hi"}, "done"])
    agent_for(registry, model, tool)("hi")
    assert tool.calls == []
    assert model.tool_outputs[0] != ""


def test_an_error_result_is_a_failure() -> None:
    """A tool result with status "error" fires post_tool_call_failure and on_tool_error, never post_tool_call."""
    registry, seen = HookRegistry(), list[object]()
    registry.post_tool_call(seen.append)
    registry.post_tool_call_failure(seen.append)

    @registry.on_tool_error
    def explain(ctx: OnToolErrorContext) -> str:
        seen.append(ctx)
        return f"explained: {ctx.message}"

    def reports(**kwargs: object) -> str:
        raise ReportedError("disk full")

    model = ScriptedModel([{"text": "hi"}, "done"])
    agent_for(registry, model, reports)("hi")
    assert model.tool_outputs == ["explained: disk full"]
    assert [type(ctx) for ctx in seen] == [PostToolCallFailureContext, OnToolErrorContext]
    failure = seen[0]
    assert isinstance(failure, PostToolCallFailureContext)
    assert isinstance(failure.error, ToolErrorResult)
    assert str(failure.error) == "disk full"


def test_feedback_retries_are_added_through_strands_so_sessions_persist_them() -> None:
    """retry_with_feedback adds the kept answer and the feedback with MessageAddedEvent, which session managers use."""
    actions = iter([TurnAction.retry_with_feedback("be brief")])
    registry = HookRegistry()
    registry.model_turn_finished(lambda ctx: next(actions, TurnAction.continue_run()))
    model = ScriptedModel(["long answer", "short"])
    agent = agent_for(registry, model, RecordingTool())
    added: list[tuple[str, str]] = []
    agent.add_hook(lambda event: added.append((event.message["role"], _text_of(event.message))), MessageAddedEvent)
    agent("hi")
    assert added == [("user", "hi"), ("assistant", "long answer"), ("user", "be brief"), ("assistant", "short")]
    assert [(m["role"], _text_of(m)) for m in agent.messages] == added


def _text_of(message: Any) -> str:
    return "".join(str(block.get("text", "")) for block in message["content"])


def test_strands_private_seams_are_what_the_adapter_expects() -> None:
    """The private Strands APIs the adapter isolates still exist with the shape it relies on.

    If this fails, Strands changed ``Agent._append_messages``, its
    continuation inputs or its background-task routing flag: update
    ``_append`` / ``_resume`` / ``_ROUTING_FLAG`` in hookreg/adapters/strands.py.
    """
    from strands.agent import _continuation

    assert list(inspect.signature(_continuation.add_input).parameters) == ["event", "input_"]
    assert {"args", "on_abandoned"} <= set(_continuation._ContinuationInput.__dataclass_fields__)

    assert inspect.iscoroutinefunction(Agent._append_messages)
    assert list(inspect.signature(Agent._append_messages).parameters) == ["self", "messages"]

    from strands.background_tasks import _background_tasks

    assert _background_tasks._BACKGROUND_PROPERTY == _ROUTING_FLAG


def _mark(order: list[str], point: str, ctx: NotificationContext) -> None:
    order.append(point)


def _approve(order: list[str], ctx: OnInteractionContext) -> HookResult:
    order.append("on_interaction")
    return HookResult.allow()


@pytest.mark.parametrize(("point", "asks"), [("user_prompt_submit", 1), ("pre_turn", 2)])
def test_a_run_level_ask_goes_to_notification_then_on_interaction(point: str, asks: int) -> None:
    """A run-level ask fires notification then on_interaction; approved, the run goes on; unanswered, it stops."""
    for approve in (True, False):
        registry, tool, order = HookRegistry(), RecordingTool(), list[str]()
        ends = list[OnSessionEndContext]()
        registry.register(HookPoint(point), lambda ctx: HookResult.ask("go on?"), name="asker")
        registry.notification(functools.partial(_mark, order, "notification"))
        registry.on_session_end(ends.append)
        if approve:
            registry.on_interaction(functools.partial(_approve, order))
        model = ScriptedModel([{"text": "hi"}, "done"])
        if approve:
            assert str(agent_for(registry, model, tool)("hi")).strip() == "done"
            assert (order, tool.calls) == (["notification", "on_interaction"] * asks, [{"text": "hi"}])
            assert [e.outcome.status for e in ends] == ["completed"]
        else:
            with pytest.raises(StopRun):
                agent_for(registry, model, tool)("hi")
            assert (order, tool.calls) == (["notification"], [])
            assert [e.outcome.status for e in ends] == ["stopped"]


def test_a_stop_leaves_no_dangling_tool_call() -> None:
    """After a StopRun mid-batch every call of the answer has a result: the one that ran, a notice for the rest."""
    registry, tool, ends = HookRegistry(), RecordingTool(), list[OnSessionEndContext]()
    stop = StopRun("no b")

    @registry.pre_tool_call_decide
    def halt_on_b(ctx: PreToolCallDecideContext) -> HookResult:
        if ctx.args.get("text") == "b":
            raise stop
        return HookResult.allow()

    registry.on_session_end(ends.append)
    calls = (Call({"text": "a"}, call_id="call-a"), Call({"text": "b"}, call_id="call-b"))
    model = ScriptedModel([Answer(calls=calls), "never"])
    agent = Agent(model=model, tools=[echo_tool(tool)], hooks=[HookregProvider(registry)], callback_handler=None)
    agent.tool_executor = SequentialToolExecutor()  # a runs before b's gate stops the run
    with pytest.raises(StopRun) as raised:
        agent("echo a and b")
    assert raised.value is stop
    assert tool.calls == [{"text": "a"}]
    assert _tool_messages(agent.messages) == {"call-a": "a", "call-b": STOPPED_NOTICE}
    assert [m["role"] for m in agent.messages[-3:]] == ["assistant", "user", "assistant"]
    assert _text_of(agent.messages[-1]) == "Run stopped: no b"
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "no b")]


def test_a_model_error_and_a_cancellation_end_the_session_once() -> None:
    """on_session_end fires once: failed when the model raises, cancelled when the invocation's task is cancelled."""
    registry, ends = HookRegistry(), list[OnSessionEndContext]()
    started = asyncio.Event()
    registry.on_session_start(lambda ctx: started.set())
    registry.on_session_end(ends.append)
    with pytest.raises(RuntimeError, match="model is down"):
        agent_for(registry, ScriptedModel([Answer(error=RuntimeError("model is down"))]), RecordingTool())("hi")

    async def cancel_a_hanging_run() -> None:
        agent = agent_for(registry, ScriptedModel([Answer(hang=True)]), RecordingTool())
        task = asyncio.ensure_future(agent.invoke_async("hi"))
        await started.wait()
        for _ in range(20):  # let the run reach the hanging model call
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_a_hanging_run())
    assert [e.outcome.status for e in ends] == ["failed", "cancelled"]
    assert ends[0].outcome.reason == "RuntimeError: model is down"


def test_an_old_strands_is_named_with_the_version_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a Strands lacking strands.middleware (1.61.1), the import error names the release needed."""
    monkeypatch.setitem(sys.modules, "strands.middleware", None)
    monkeypatch.delitem(sys.modules, "hookreg.adapters.strands")
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "1.61.1" if name == "strands-agents" else real(name)
    )
    with pytest.raises(
        ImportError, match=r"strands-agents 1\.61\.1 is installed, but the adapter needs strands-agents>=1\.62"
    ):
        importlib.import_module("hookreg.adapters.strands")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("end_turn", FinishReason.STOP),
        ("content_filtered", FinishReason.CONTENT_FILTER),
        ("guardrail_intervened", FinishReason.CONTENT_FILTER),
    ],
)
def test_strands_stop_reasons_map_to_finish_reasons(raw: str, reason: FinishReason) -> None:
    """Strands' own stop-reason spellings map to FinishReason, the raw one kept, with the message id and model."""
    registry, finished = HookRegistry(), list[ModelTurnFinishedContext]()

    @registry.model_turn_finished
    def judge(ctx: ModelTurnFinishedContext) -> TurnAction:
        finished.append(ctx)
        return TurnAction.continue_run()

    agent = agent_for(registry, ScriptedModel(["done"], final_reason=raw), RecordingTool())
    agent("hi")
    [ctx] = finished
    assert (ctx.finish_reason, ctx.raw_finish_reason, ctx.model) == (reason, raw, "ScriptedModel")
    assert ctx.message_id is not None
    assert ctx.message_id == agent.messages[-1].get("tracking_id")


def test_one_agent_invoked_twice_starts_two_sessions() -> None:
    """One agent invoked twice: two sessions with their own run ids, and turns from 1 in each."""
    registry, turns, starts = HookRegistry(), list[tuple[str, int]](), list[OnSessionStartContext]()
    registry.on_session_start(starts.append)

    @registry.pre_turn
    def note(ctx: PreTurnContext) -> HookResult:
        turns.append((ctx.run.run_id, ctx.turn))
        return HookResult.allow()

    model = ScriptedModel([{"text": "a"}, "done", {"text": "b"}, "done"])
    agent = agent_for(registry, model, RecordingTool())
    agent("first")
    agent("second")
    first, second = (ctx.run.run_id for ctx in starts)
    assert first != second
    assert turns == [(first, 1), (first, 2), (second, 1), (second, 2)]


def test_deprecated_structured_output_is_not_a_run() -> None:
    """Strands' deprecated structured_output_async fires no session point (it could never end the session)."""
    registry, seen = HookRegistry(), list[object]()
    registry.on_session_start(seen.append)
    registry.on_session_end(seen.append)

    class Reply(BaseModel):
        text: str

    class StructuredModel(ScriptedModel):
        async def structured_output(self, output_model: Any, *args: Any, **kwargs: Any) -> Any:
            """Answer with a fixed instance of `output_model`."""
            yield {"output": output_model(text="hi")}

    agent = agent_for(registry, StructuredModel([]), RecordingTool())
    with pytest.warns(DeprecationWarning, match="structured_output"):
        reply = agent.structured_output(Reply, "hi")
    assert (reply, seen) == (Reply(text="hi"), [])


@pytest.mark.parametrize("point", [HookPoint.ON_SESSION_START, HookPoint.STOP, HookPoint.POST_TURN])
def test_a_stop_outside_the_tool_loop_reaches_the_caller_and_ends_the_session_once(point: HookPoint) -> None:
    """A StopRun from a session, stop or turn hook reaches the caller as itself; the session ends once, stopped."""
    registry, ends = HookRegistry(), list[OnSessionEndContext]()
    stop = StopRun(f"halt at {point.value}")

    async def halt(ctx: object) -> None:
        raise stop

    registry.register(point, halt, name="halt")
    registry.on_session_end(ends.append)
    with pytest.raises(StopRun) as raised:
        agent_for(registry, ScriptedModel(["done"]), RecordingTool())("hi")
    assert raised.value is stop
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", stop.reason)]


@pytest.mark.parametrize("read", [1, 6], ids=["before-the-model", "mid-answer"])
def test_a_stream_closed_early_ends_the_session_cancelled(read: int) -> None:
    """A caller that stops reading stream_async and closes it ends the session once, cancelled."""
    registry, ends = HookRegistry(), list[OnSessionEndContext]()
    registry.on_session_end(ends.append)
    agent = agent_for(registry, ScriptedModel([{"text": "hi"}, "done"]), RecordingTool())

    async def read_some_events() -> None:
        async with contextlib.aclosing(cast("AsyncGenerator[Any, None]", agent.stream_async("hi"))) as events:
            count = 0
            async for _ in events:
                count += 1
                if count == read:
                    break

    asyncio.run(read_some_events())
    assert [e.outcome.status for e in ends] == ["cancelled"]


def test_a_stop_after_the_tool_results_closes_the_conversation() -> None:
    """A stop at pre_turn after tool results leaves an assistant message last: the next prompt alternates roles."""
    registry = HookRegistry()
    registry.pre_turn(lambda ctx: HookResult.deny("one turn only") if ctx.turn > 1 else HookResult.allow())
    agent = agent_for(registry, ScriptedModel([{"text": "hi"}]), RecordingTool())
    with pytest.raises(StopRun, match="one turn only"):
        agent("hi")
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert _text_of(agent.messages[-1]) == "Run stopped: one turn only"
