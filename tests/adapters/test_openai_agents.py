"""Tests for hookreg.adapters.openai_agents: a real OpenAI Agents SDK run, offline, driven by a HookRegistry."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, WebSearchTool, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    InvalidToolCallContext,
    ModelSelectContext,
    OnSessionEndContext,
    OnSessionStartContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    RequestPatch,
    StopRun,
    ToolCallDeltaContext,
    TransformToolResultContext,
)
from hookreg.adapters.openai_agents import HookregRunHooks, guard_tool, guard_tools, hookreg_run_hooks
from hookreg.testing.conformance import SCENARIOS, TOOL_NAME, AgentRun, RecordingTool, Scenario


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    """Disable the SDK's tracing (which would export to the network) for the duration of a test."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


def echo_tool(tool: Callable[..., str], *, raise_errors: bool = False) -> FunctionTool:
    """A function tool named echo whose body calls `tool` with the arguments it received."""

    def echo(text: str, prefix: str = "", suffix: str = "") -> str:
        """Echo text between a prefix and a suffix."""
        received: dict[str, object] = {"text": text}
        if prefix:
            received["prefix"] = prefix
        if suffix:
            received["suffix"] = suffix
        return tool(**received)

    if raise_errors:
        return function_tool(echo, name_override=TOOL_NAME, failure_error_function=None)
    return function_tool(echo, name_override=TOOL_NAME)


def run_agent(registry: HookRegistry, function: FunctionTool, args: Mapping[str, object] | str) -> tuple[str, str]:
    """Run one agent whose scripted model calls echo with `args` (a string: raw JSON); return what it saw and said."""
    arguments = args if isinstance(args, str) else dict(args)
    model = ScriptedModel([[function_call(TOOL_NAME, arguments, call_id="call-1")], [assistant_message("done")]])
    agent = Agent(name="tester", model=model, tools=[guard_tool(function, registry)])
    result = asyncio.run(Runner.run(agent, "please echo", hooks=hookreg_run_hooks(registry)))
    outputs = [
        item["output"]
        for item in model.calls[1].input
        if isinstance(item, dict) and item.get("type") == "function_call_output" and item.get("call_id") == "call-1"
    ]
    assert len(outputs) == 1, outputs
    return str(outputs[0]), str(result.final_output)


def drive(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> AgentRun:
    """Run an OpenAI Agents SDK agent once with the adapter and report what the model saw."""
    seen, answer = run_agent(registry, echo_tool(tool), args)
    assert answer == "done"
    return AgentRun(tool_output_seen_by_model=seen)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_conformance(scenario: Scenario) -> None:
    """The OpenAI Agents adapter passes every conformance scenario in a real SDK run."""
    scenario.check(drive)


def test_async_hooks() -> None:
    """Async transforms and gates are awaited inside the SDK's tool invocation."""
    registry = HookRegistry()
    tool = RecordingTool()

    @registry.transform_tool_input
    async def shout(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        return {**ctx.args, "text": str(ctx.args["text"]).upper()}

    @registry.pre_tool_call_decide
    async def only_quiet(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("no shouting") if ctx.args["text"] == "LOUD" else HookResult.allow()

    assert drive(registry, tool, {"text": "quiet"}).tool_output_seen_by_model == "QUIET"
    assert drive(registry, tool, {"text": "loud"}).tool_output_seen_by_model == "no shouting"
    assert tool.calls == [{"text": "QUIET"}]


def test_result_rewrite_reaches_model() -> None:
    """transform_tool_result changes what the model sees; raw_result keeps the tool's own value."""
    registry = HookRegistry()
    raws: list[object] = []

    @registry.transform_tool_result
    def redact(ctx: TransformToolResultContext) -> str:
        raws.append(ctx.raw_result)
        return ctx.presentation.replace("secret", "[redacted]")

    assert drive(registry, RecordingTool(), {"text": "my secret"}).tool_output_seen_by_model == "my [redacted]"
    assert raws == ["my secret"]


def test_unhooked_error_keeps_the_sdk_formatting() -> None:
    """Without on_tool_error hooks the model sees the SDK's own error text for a failing tool."""
    seen = drive(HookRegistry(), RecordingTool(), {"text": "fail"}).tool_output_seen_by_model
    assert seen.startswith("An error occurred while running the tool.")


def test_error_propagates_when_the_tool_asks_for_it() -> None:
    """A tool built with failure_error_function=None still raises when no on_tool_error hook answers."""
    with pytest.raises(Exception, match="echo failed"):
        run_agent(HookRegistry(), echo_tool(RecordingTool(), raise_errors=True), {"text": "fail"})
    registry = HookRegistry()
    registry.on_tool_error(lambda ctx: f"hooked: {ctx.message}")
    seen, _ = run_agent(registry, echo_tool(RecordingTool(), raise_errors=True), {"text": "fail"})
    assert seen == "hooked: echo failed"


def test_session_and_turn_points() -> None:
    """Run hooks fire on_session_start with the prompt, post_turn per model response and on_session_end."""
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
    assert [(first.turn, first.response_text), (second.turn, second.response_text)] == [(1, ""), (2, "done")]
    assert isinstance(end, OnSessionEndContext)
    assert (end.outcome.status, end.outcome.turns) == ("completed", 2)
    assert end.run.scratchpad is start.run.scratchpad
    assert isinstance(hookreg_run_hooks(registry), HookregRunHooks)


def test_guard_tools_leaves_hosted_tools_and_guard_tool_refuses_them() -> None:
    """guard_tools copies function tools and keeps hosted ones; guard_tool refuses a hosted tool."""
    registry = HookRegistry()
    function, hosted = echo_tool(RecordingTool()), WebSearchTool()
    guarded = guard_tools([function, hosted], registry)
    assert guarded[1] is hosted
    assert isinstance(guarded[0], FunctionTool)
    assert guarded[0] is not function
    assert guarded[0].name == TOOL_NAME
    assert guarded[0].params_json_schema == function.params_json_schema
    with pytest.raises(TypeError, match=r"Cannot guard WebSearchTool.*only FunctionTool calls"):
        guard_tool(hosted, registry)  # type: ignore[arg-type]  # the mistake under test


def test_example_runs() -> None:
    """examples/adapter_openai_agents.py runs offline: a rewrite, denial and error reach the model; a prompt stops."""
    example = Path(__file__).resolve().parents[2] / "examples" / "adapter_openai_agents.py"
    done = subprocess.run(
        [sys.executable, "-W", "error", str(example)], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "audit: shell({'command': 'ls -la', 'timeout': 30}) -> ran 'ls -la' with timeout 30",
        "the model saw: ran 'ls -la' with timeout 30",
        "the model saw: rm -rf is not allowed; delete files one by one",
        "the model saw: shell failed: permission denied by the host",
        "stopped: prompts must not contain passwords",
    ]


def answering(text: str = "ok") -> ScriptedModel:
    """A scripted model that answers `text` once."""
    return ScriptedModel([[assistant_message(text)]])


def run_with_config(registry: HookRegistry, model: ScriptedModel, prompt: str = "hello", **kwargs: Any) -> str:
    """Run a tool-less agent over `model` with the run hooks and their run config; return the final output."""
    hooks = hookreg_run_hooks(registry, **kwargs)
    agent = Agent(name="tester", model=model)
    result = asyncio.run(Runner.run(agent, prompt, hooks=hooks, run_config=hooks.run_config()))
    return str(result.final_output)


def test_registry_is_checked() -> None:
    """guard_tool, guard_tools, hookreg_run_hooks and HookregRunHooks refuse anything but a HookRegistry."""
    tool = echo_tool(RecordingTool())
    with pytest.raises(HookTypeError, match=r"Cannot build a guarded tool for .* from 'hooks'"):
        guard_tool(tool, "hooks")  # type: ignore[arg-type]
    with pytest.raises(HookTypeError, match="Cannot build guarded tools from None"):
        guard_tools([tool], None)  # type: ignore[arg-type]
    with pytest.raises(HookTypeError, match="Cannot build OpenAI Agents run hooks from 1"):
        hookreg_run_hooks(1)  # type: ignore[arg-type]
    with pytest.raises(HookTypeError, match="Cannot build HookregRunHooks from"):
        HookregRunHooks(object())  # type: ignore[arg-type]


def test_run_config_refuses_a_second_filter() -> None:
    """run_config() refuses a base RunConfig that already filters model input."""
    base = RunConfig(call_model_input_filter=lambda data: data.model_data)
    with pytest.raises(HookTypeError, match="Cannot install hookreg's model-input filter into this RunConfig"):
        hookreg_run_hooks(HookRegistry()).run_config(base)


def test_user_prompt_denied_stops_before_any_model_call() -> None:
    """A user_prompt_submit deny raises StopRun before the model is called; on_session_end reports stopped."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)
    registry.user_prompt_submit(
        lambda ctx: HookResult.deny("no secrets") if "secret" in ctx.content else HookResult.allow()
    )
    model = answering()
    with pytest.raises(StopRun, match="no secrets"):
        run_with_config(registry, model, "tell me the secret")
    assert model.calls == ()
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "no secrets")]
    assert run_with_config(registry, answering("fine")) == "fine"


def test_pre_turn_ask_goes_to_on_interaction() -> None:
    """A pre_turn ask is answered by on_interaction; a deny there stops the run before the model call."""
    registry = HookRegistry()
    turns: list[int] = []

    @registry.pre_turn
    async def confirm(ctx: PreTurnContext) -> HookResult:
        turns.append(ctx.turn)
        return HookResult.ask("take another turn?")

    registry.on_interaction(lambda ctx: HookResult.deny("not now"))
    model = answering()
    with pytest.raises(StopRun, match="not now"):
        run_with_config(registry, model)
    assert model.calls == ()
    assert turns == [1]


def test_pre_model_call_patch_reaches_the_model_call() -> None:
    """A RequestPatch adds instructions and sets temperature, max_tokens, tool_choice and extra_body for the call."""
    registry = HookRegistry()
    histories: list[list[tuple[str, str]]] = []

    @registry.pre_model_call
    def patch(ctx: PreModelCallContext) -> RequestPatch:
        histories.append([(m.role, m.content) for m in ctx.history])
        return RequestPatch(
            preamble="Be brief.",
            extra_context=("Today is Monday.",),
            temperature=0.2,
            max_tokens=99,
            tool_choice="none",
            additional_params={"seed": 7},
        )

    model = answering()
    assert run_with_config(registry, model) == "ok"
    (call,) = model.calls
    assert call.system_instructions == "Be brief.\n\nToday is Monday."
    settings = call.model_settings
    assert (settings.temperature, settings.max_tokens, settings.tool_choice) == (0.2, 99, "none")
    assert settings.extra_body == {"seed": 7}
    assert histories == [[("user", "hello")]]


def test_model_select_swaps_the_model_per_call() -> None:
    """A model_select pick found in models serves the call; the agent's own model is never called."""
    registry = HookRegistry()
    defaults: list[str] = []

    @registry.model_select
    def small(ctx: ModelSelectContext) -> str:
        defaults.append(ctx.default_model)
        return "small"

    default_model, small_model = answering("big"), answering("small")
    assert run_with_config(registry, default_model, models={"small": small_model}) == "small"
    assert default_model.calls == ()
    assert len(small_model.calls) == 1
    assert defaults == ["ScriptedModel"]


def test_turn_points_fire_per_model_call() -> None:
    """pre_turn and pre_model_call fire before every model call, the history growing with the tool call."""
    registry = HookRegistry()
    seen: list[tuple[int, int]] = []
    registry.pre_model_call(lambda ctx: seen.append((ctx.turn, len(ctx.history))))
    hooks = hookreg_run_hooks(registry)
    model = ScriptedModel([[function_call(TOOL_NAME, {"text": "hi"}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="tester", model=model, tools=guard_tools([echo_tool(RecordingTool())], registry))
    asyncio.run(Runner.run(agent, "go", hooks=hooks, run_config=hooks.run_config()))
    assert seen == [(1, 1), (2, 3)]


def test_delta_points_fire_through_stream_events() -> None:
    """Iterating hooks.stream_events fires tool-call, reasoning and text deltas and yields every event."""
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

    thinking = ResponseReasoningItem(id="r1", summary=[Summary(text="thinking", type="summary_text")], type="reasoning")
    model = ScriptedModel(
        [[function_call(TOOL_NAME, {"text": "hi"}, call_id="c1")], [thinking, assistant_message("done")]]
    )
    tool = RecordingTool()
    agent = Agent(name="tester", model=model, tools=guard_tools([echo_tool(tool)], registry))
    hooks = hookreg_run_hooks(registry)

    async def consume() -> int:
        result = Runner.run_streamed(agent, "go", hooks=hooks)
        return len([event async for event in hooks.stream_events(result)])

    assert asyncio.run(consume()) > 0
    assert tool.calls == [{"text": "hi"}]
    assert tool_deltas == [("c1", TOOL_NAME, '{"text":"hi"}')]
    assert thoughts == [("thinking", "thinking")]
    assert texts == [("done", "done")]


def test_a_deny_without_a_reason_never_runs_the_tool() -> None:
    """A gate's deny whose reason is None (built around the constructor) is still a deny: the tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()
    hostile = copy.copy(HookResult.deny("x"))
    object.__setattr__(hostile, "reason", None)  # what a careless gate could hand back before reasons were checked
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: hostile, name="careless")
    seen = drive(registry, tool, {"text": "hi"}).tool_output_seen_by_model
    assert tool.calls == []
    assert "careless" in seen


def test_non_object_json_arguments_are_an_invalid_call() -> None:
    """Arguments that parse to a JSON list reach invalid_tool_call (args={}, raw_args kept); the tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()
    invalid: list[InvalidToolCallContext] = []
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())

    @registry.invalid_tool_call
    def note(ctx: InvalidToolCallContext) -> None:
        invalid.append(ctx)

    seen, answer = run_agent(registry, echo_tool(tool), '["hi"]')
    assert tool.calls == []
    assert [(dict(ctx.args), ctx.raw_args) for ctx in invalid] == [({}, ["hi"])]
    assert "expected a JSON object" in seen
    assert answer == "done"
