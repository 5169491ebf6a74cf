"""Tests for hookreg.adapters.strands: a real Strands agent loop, offline, driven by a HookRegistry."""

from __future__ import annotations

import asyncio
import copy
import json
import runpy
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from strands import Agent
from strands.models import Model
from strands.tools.tools import PythonAgentTool
from strands.types.content import Messages
from strands.types.exceptions import EventLoopException
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolResult, ToolSpec, ToolUse
from structlog.testing import capture_logs

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelSelectContext,
    OnSessionEndContext,
    OnSessionStartContext,
    PostToolCallContext,
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
from hookreg.adapters.strands import HookregProvider
from hookreg.testing.conformance import SCENARIOS, TOOL_NAME, AgentRun, RecordingTool, Scenario

ROOT = Path(__file__).resolve().parents[2]

Turn = str | Mapping[str, object] | tuple[str, object]
"""A scripted model answer: final text, the arguments of one echo call, or a (tool name, arguments) call."""


class ScriptedModel(Model):
    """A Strands model that plays back scripted answers and records the tool results it is sent."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)
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
        turn = self.turns.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        if isinstance(turn, str):
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": turn}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:
            name, tool_args = turn if isinstance(turn, tuple) else (TOOL_NAME, turn)
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "call-1", "name": name}}}}
            tool_input = dict(tool_args) if isinstance(tool_args, Mapping) else tool_args  # a non-object: hostile
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(tool_input)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}


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


def echo_tool(tool: Callable[..., str]) -> PythonAgentTool:
    """The echo tool for Strands: calls `tool` with exactly the input the model sent."""

    def run(tool_use: ToolUse, **invocation_state: Any) -> ToolResult:
        text = tool(**tool_use["input"])
        return {"toolUseId": tool_use["toolUseId"], "status": "success", "content": [{"text": text}]}

    return PythonAgentTool(TOOL_NAME, ECHO_SPEC, run)


def run_agent(
    registry: HookRegistry, tool: Callable[..., str], turns: Sequence[Turn], *, prompt: str = "echo something"
) -> tuple[ScriptedModel, str]:
    """Run a Strands agent once with the adapter; return the model and the final answer."""
    model = ScriptedModel(turns)
    agent = Agent(model=model, tools=[echo_tool(tool)], hooks=[HookregProvider(registry)], callback_handler=None)
    return model, str(agent(prompt)).strip()


def drive(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> AgentRun:
    """Run a Strands agent once and report the tool output the model saw."""
    model, _ = run_agent(registry, tool, [args, "done"])
    [seen] = model.tool_outputs
    return AgentRun(tool_output_seen_by_model=seen)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_conformance(scenario: Scenario) -> None:
    """The Strands adapter passes every conformance scenario."""
    scenario.check(drive)


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

    assert drive(registry, RecordingTool(), {"text": "hi"}).tool_output_seen_by_model == "HI"
    assert gated == ["call-1"]


def test_result_rewrite_and_observed_result() -> None:
    """transform_tool_result rewrites what the model sees; post_tool_call gets it, the raw text and the turn."""
    registry, seen = HookRegistry(), list[object]()
    registry.transform_tool_result(lambda ctx: f"<{ctx.presentation}>")
    registry.post_tool_call(seen.append)
    assert drive(registry, RecordingTool(), {"text": "hi"}).tool_output_seen_by_model == "<hi>"
    [post] = seen
    assert isinstance(post, PostToolCallContext)
    assert (post.result, post.raw_result, post.call_id, post.run.turn) == ("<hi>", "hi", "call-1", 1)


def test_tool_error_without_on_tool_error_keeps_strands_text() -> None:
    """Without on_tool_error hooks the model reads Strands' own error text, and the failure is observed."""
    registry, failures = HookRegistry(), list[object]()
    registry.post_tool_call_failure(failures.append)
    assert drive(registry, RecordingTool(), {"text": "fail"}).tool_output_seen_by_model == "Error: echo failed"
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


def test_prompt_deny_cancels_the_invocation() -> None:
    """A user_prompt_submit deny answers with its reason, calls no model and ends the session as stopped."""
    registry, ends = HookRegistry(), list[OnSessionEndContext]()
    registry.user_prompt_submit(lambda ctx: HookResult.deny("prompts about echo are closed"))
    registry.on_session_end(ends.append)
    model, answer = run_agent(registry, RecordingTool(), ["never"])
    assert answer == "prompts about echo are closed"
    assert model.turns == ["never"]
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "prompts about echo are closed")]


def test_pre_turn_deny_ends_the_run() -> None:
    """A pre_turn deny on the second turn answers with its reason instead of calling the model."""
    registry, tool, ends = HookRegistry(), RecordingTool(), list[OnSessionEndContext]()
    registry.pre_turn(lambda ctx: HookResult.deny("turn budget spent") if ctx.turn > 1 else HookResult.allow())
    registry.on_session_end(ends.append)
    model, answer = run_agent(registry, tool, [{"text": "hi"}, "never"])
    assert tool.calls == [{"text": "hi"}]
    assert answer == "turn budget spent"
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


def test_stop_run_from_a_gate_ends_the_run() -> None:
    """A StopRun raised by a gate ends the agent call as Strands' EventLoopException caused by it."""
    registry, tool = HookRegistry(), RecordingTool()

    @registry.pre_tool_call_decide(name="halt")
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise StopRun("enough")

    with pytest.raises(EventLoopException, match="enough") as raised:
        drive(registry, tool, {"text": "hi"})
    assert isinstance(raised.value.__cause__, StopRun)
    assert (raised.value.__cause__.hook, tool.calls) == ("halt", [])


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
    assert (ctx.tool_name, ctx.available_tools, ctx.error) == ("ecko", (TOOL_NAME,), "Unknown tool: ecko")


@pytest.mark.parametrize(
    ("action", "shown"),
    [
        (InvalidToolCallAction.retry("Call echo instead."), "Call echo instead."),
        (InvalidToolCallAction.skip("skipped"), "skipped"),
        (InvalidToolCallAction.fail(), "Unknown tool: ecko"),
    ],
    ids=["retry", "skip", "fail"],
)
def test_invalid_tool_call_answers_without_running_a_tool(action: InvalidToolCallAction, shown: str) -> None:
    """retry, skip and fail answer an unknown tool's call with their text (fail: Strands' own), no tool runs."""
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
    seen = drive(registry, tool, {"text": "hi"}).tool_output_seen_by_model
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
    def note(ctx: InvalidToolCallContext) -> None:
        invalid.append(ctx)

    model, _ = run_agent(registry, tool, [(TOOL_NAME, raw), "done"])
    assert tool.calls == []
    assert gated == []
    assert [(dict(ctx.args), ctx.raw_args) for ctx in invalid] == [({}, raw)]
    assert "expected a JSON object" in model.tool_outputs[0]
