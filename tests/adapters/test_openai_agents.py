"""Tests for hookreg.adapters.openai_agents: a real OpenAI Agents SDK run, offline, driven by a HookRegistry."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import importlib.metadata
import inspect
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pytest
from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelBehaviorError,
    ModelProvider,
    ModelResponse,
    ModelRetryAdvice,
    ModelRetrySettings,
    ModelSettings,
    RunConfig,
    RunContextWrapper,
    Runner,
    ToolErrorFormatterArgs,
    ToolTimeoutError,
    WebSearchTool,
    function_tool,
    retry_policies,
    set_tracing_disabled,
)
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from openai.types.responses import ResponseCompletedEvent, ResponseIncompleteEvent, ResponseReasoningItem
from openai.types.responses.response import IncompleteDetails
from openai.types.responses.response_reasoning_item import Summary

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
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    RequestPatch,
    Scratchpad,
    StopContext,
    StopRun,
    TextDeltaContext,
    ToolCallDeltaContext,
    TransformToolResultContext,
    TurnAction,
)
from hookreg.adapters.openai_agents import HookregRunHooks, _raising_copy, guard_tool, guard_tools, hookreg_run_hooks
from hookreg.testing.conformance import (
    RUN_SCENARIOS,
    TOOL_NAME,
    Answer,
    Call,
    RecordingTool,
    RunReport,
    RunScenario,
    echo,
    is_limit,
    run_contract_cases,
)

_T = TypeVar("_T")


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
    """Run one agent whose scripted model calls echo with `args`; return the tool output it saw and the answer."""
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


def run_flow(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> str:
    """Run an OpenAI Agents SDK agent once with the adapter and report what the model saw."""
    seen, answer = run_agent(registry, echo_tool(tool), args)
    assert answer == "done"
    return seen


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

    assert run_flow(registry, tool, {"text": "quiet"}) == "QUIET"
    assert run_flow(registry, tool, {"text": "loud"}) == "no shouting"
    assert tool.calls == [{"text": "QUIET"}]


def test_result_rewrite_reaches_model() -> None:
    """transform_tool_result changes what the model sees; raw_result keeps the tool's own value."""
    registry = HookRegistry()
    raws: list[object] = []

    @registry.transform_tool_result
    def redact(ctx: TransformToolResultContext) -> str:
        raws.append(ctx.raw_result)
        return ctx.presentation.replace("secret", "[redacted]")

    assert run_flow(registry, RecordingTool(), {"text": "my secret"}) == "my [redacted]"
    assert raws == ["my secret"]


def test_unhooked_error_keeps_the_sdk_formatting() -> None:
    """Without on_tool_error hooks the model sees the SDK's own error text for a failing tool."""
    seen = run_flow(HookRegistry(), RecordingTool(), {"text": "fail"})
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
    run_flow(registry, RecordingTool(), {"text": "hi"})
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


def test_text_deltas_aggregate_over_their_model_call() -> None:
    """A streamed call's text deltas aggregate over the whole call (every message it streams), afresh in each call."""
    registry = HookRegistry()
    texts: list[tuple[str, str]] = []
    registry.text_delta(lambda ctx: texts.append((ctx.delta, ctx.aggregated)))
    model = ScriptedModel(
        [
            [assistant_message("one "), function_call(TOOL_NAME, {"text": "hi"}, call_id="c1")],
            [assistant_message("two "), assistant_message("three")],
        ]
    )
    agent = Agent(name="tester", model=model, tools=guard_tools([echo_tool(RecordingTool())], registry))
    hooks = hookreg_run_hooks(registry)

    async def consume() -> None:
        async for _ in hooks.stream_events(hooks.run_streamed(agent, "go")):
            pass

    asyncio.run(consume())
    assert texts == [("one ", "one "), ("two ", "two "), ("three", "two three")]


# --- the run contract (DESIGN §8) ---------------------------------------------------------------


async def run_through(
    hooks: HookregRunHooks, agent: Agent[Any], prompt: str, *, streamed: bool, run_config: RunConfig | None = None
) -> object:
    """Run `agent` through the hooks' entry points, blocking or streamed; return the final output."""
    if streamed:
        result = hooks.run_streamed(agent, prompt, run_config=run_config)
        async for _ in hooks.stream_events(result):
            pass
        return result.final_output
    return (await hooks.run(agent, prompt, run_config=run_config)).final_output


def tool_then_answer(call_id: str = "c1", text: str = "hi") -> ScriptedModel:
    """A scripted model that calls echo once, then answers "done"."""
    return ScriptedModel([[function_call(TOOL_NAME, {"text": text}, call_id=call_id)], [assistant_message("done")]])


def record_ends(registry: HookRegistry) -> list[tuple[str, str]]:
    """Record each on_session_end as (status, reason)."""
    ends: list[tuple[str, str]] = []
    registry.on_session_end(lambda ctx: ends.append((ctx.outcome.status, ctx.outcome.reason)))
    return ends


class HangingModel(Model):
    """A model whose every call waits forever, after setting `started`."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """Wait forever."""
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError  # pragma: no cover - never reached

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """Wait forever before the first event."""
        self.started.set()
        await asyncio.Event().wait()
        yield  # pragma: no cover - never reached


def forced_none_reason() -> HookResult:
    """A deny whose reason is None, forced past the constructor's check, as a hostile hook might build."""
    result = HookResult.deny("x")
    object.__setattr__(result, "reason", None)
    return result


@pytest.mark.parametrize("answer", ["gate", "interaction", "forced-none"])
def test_a_deny_without_reason_never_runs_the_tool(answer: str) -> None:
    """A deny with an empty reason, from a gate or an on_interaction answer, keeps the tool from running."""
    registry = HookRegistry()
    denied: list[object] = []
    registry.permission_denied(denied.append)
    if answer == "gate":
        registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny(""), name="quiet-gate")
    elif answer == "forced-none":
        registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: forced_none_reason(), name="quiet-gate")
    else:
        registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
        registry.register(HookPoint.ON_INTERACTION, lambda ctx: HookResult.deny(""), name="quiet-gate")
    tool = RecordingTool()
    seen, answer_text = run_agent(registry, echo_tool(tool), {"text": "hi"})
    assert tool.calls == []
    assert "quiet-gate" in seen, seen
    assert len(denied) == 1
    assert answer_text == "done"


@pytest.mark.parametrize(
    ("arguments", "raw"),
    [('{"text": ', '{"text": '), ("[1, 2]", [1, 2]), ('"hi"', "hi")],
    ids=["malformed", "list", "string"],
)
def test_arguments_that_are_not_an_object_reach_invalid_tool_call(arguments: str, raw: object) -> None:
    """Malformed or non-object JSON arguments never reach the tool: invalid_tool_call sees them, the model reads why."""
    tool = RecordingTool()
    seen, answer = run_agent(HookRegistry(), echo_tool(tool), arguments)
    assert (tool.calls, answer) == ([], "done")
    assert "expected a JSON object" in seen, seen
    registry = HookRegistry()
    invalid: list[InvalidToolCallContext] = []
    registry.invalid_tool_call(invalid.append)
    seen, answer = run_agent(registry, echo_tool(tool), arguments)
    assert (tool.calls, answer) == ([], "done")
    assert [(ctx.tool_name, dict(ctx.args), ctx.raw_args) for ctx in invalid] == [(TOOL_NAME, {}, raw)]


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_a_patch_applies_to_the_call_it_was_computed_for(streamed: bool) -> None:
    """pre_model_call settings and model_select reach the very model call they were computed for."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(temperature=ctx.turn / 10, preamble=f"turn {ctx.turn}"))
    registry.model_select(lambda ctx: "small" if ctx.run.turn == 2 else ctx.default_model)
    big, small = tool_then_answer(), ScriptedModel([[assistant_message("small done")]])
    big_tail = ScriptedModel()  # big must not be asked a second time
    agent = Agent(name="tester", model=big, tools=guard_tools([echo_tool(RecordingTool())], registry))
    hooks = hookreg_run_hooks(registry, models={"small": small, "unused": big_tail})

    async def go() -> object:
        if streamed:
            result = Runner.run_streamed(agent, "go", hooks=hooks, run_config=hooks.run_config())
            async for _ in result.stream_events():
                pass
            return result.final_output
        return (await Runner.run(agent, "go", hooks=hooks, run_config=hooks.run_config())).final_output

    assert asyncio.run(go()) == "small done"
    assert [(c.model_settings.temperature, c.system_instructions) for c in big.calls] == [(0.1, "turn 1")]
    assert [(c.model_settings.temperature, c.system_instructions) for c in small.calls] == [(0.2, "turn 2")]


def test_a_patch_without_the_run_config_is_refused() -> None:
    """A patch on a run started without the hooks' run config is an error, not silently dropped."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(temperature=0.5))
    agent = Agent(name="tester", model=answering())
    with pytest.raises(ValueError, match=r"Cannot apply RequestPatch\(.*the run has no hookreg RunConfig"):
        asyncio.run(Runner.run(agent, "hi", hooks=hookreg_run_hooks(registry)))


def test_reused_hooks_gate_and_start_every_run() -> None:
    """One hooks object reused for a second run fires on_session_start and user_prompt_submit again, with a new run."""
    registry = HookRegistry()
    starts: list[OnSessionStartContext] = []
    registry.on_session_start(starts.append)
    registry.user_prompt_submit(
        lambda ctx: HookResult.deny("no secrets") if "secret" in ctx.content else HookResult.allow()
    )
    hooks = hookreg_run_hooks(registry)
    first = asyncio.run(
        Runner.run(Agent(name="a", model=answering()), "hello", hooks=hooks, run_config=hooks.run_config())
    )
    assert first.final_output == "ok"
    model = answering()
    with pytest.raises(StopRun, match="no secrets"):
        asyncio.run(Runner.run(Agent(name="a", model=model), "a secret", hooks=hooks, run_config=hooks.run_config()))
    assert model.calls == ()
    assert [ctx.goal for ctx in starts] == ["hello", "a secret"]
    assert starts[0].run.run_id != starts[1].run.run_id


def test_concurrent_runs_on_one_hooks_object_keep_apart() -> None:
    """Two runs gathered on one hooks object each get their own run, turns and tool contexts."""
    registry = HookRegistry()
    turns: list[tuple[str, str, int]] = []
    tools: list[tuple[str, str]] = []

    @registry.pre_turn
    def record(ctx: PreTurnContext) -> HookResult:
        turns.append((ctx.run.run_id, ctx.prompt, ctx.turn))
        return HookResult.allow()

    registry.post_tool_call(lambda ctx: tools.append((ctx.run.run_id, str(ctx.args["text"]))))
    ends = record_ends(registry)
    hooks = hookreg_run_hooks(registry)

    async def both() -> list[object]:
        agents_ = [
            Agent(
                name=name, model=tool_then_answer(text=name), tools=guard_tools([echo_tool(RecordingTool())], registry)
            )
            for name in ("one", "two")
        ]
        return list(await asyncio.gather(*(run_through(hooks, a, a.name, streamed=False) for a in agents_)))

    assert asyncio.run(both()) == ["done", "done"]
    runs = {prompt: run_id for run_id, prompt, _ in turns}
    assert len(set(runs.values())) == 2
    assert sorted((prompt, turn) for _, prompt, turn in turns) == [("one", 1), ("one", 2), ("two", 1), ("two", 2)]
    assert all(runs[prompt] == run_id for run_id, prompt, _ in turns)
    assert sorted(tools) == sorted([(runs["one"], "one"), (runs["two"], "two")])
    assert ends == [("completed", ""), ("completed", "")]


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_stop_run_from_a_tool_hook_reaches_the_caller(streamed: bool) -> None:
    """A StopRun raised by a tool hook reaches the caller as the same object; the session ends once, stopped."""
    registry = HookRegistry()
    stop = StopRun("enough for today")

    @registry.pre_tool_call_decide
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise stop

    ends = record_ends(registry)
    tool = RecordingTool()
    agent = Agent(name="tester", model=tool_then_answer(), tools=guard_tools([echo_tool(tool)], registry))
    with pytest.raises(StopRun) as caught:
        asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=streamed))
    assert caught.value is stop
    assert tool.calls == []
    assert ends == [("stopped", "enough for today")]


def test_stop_run_from_a_tool_hook_ends_the_session_without_the_entry_point() -> None:
    """Run straight through Runner.run, a tool hook's StopRun still ends the session once, as stopped."""
    registry = HookRegistry()
    registry.post_tool_call(lambda ctx: (_ for _ in ()).throw(StopRun("seen enough")))
    ends = record_ends(registry)
    hooks = hookreg_run_hooks(registry)
    agent = Agent(name="tester", model=tool_then_answer(), tools=guard_tools([echo_tool(RecordingTool())], registry))
    with pytest.raises(Exception, match="seen enough"):
        asyncio.run(Runner.run(agent, "go", hooks=hooks, run_config=hooks.run_config()))
    assert ends == [("stopped", "seen enough")]


def failing_tool() -> FunctionTool:
    """An echo tool that always raises and asks the SDK to let the error propagate."""
    return echo_tool(lambda **kwargs: echo("fail"), raise_errors=True)


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize("path", ["completed", "model-error", "tool-error", "stop", "cancelled"])
def test_the_session_ends_exactly_once_on_every_path(path: str, streamed: bool) -> None:
    """on_session_end fires once, with the status of how the run ended, whatever ended it."""
    registry = HookRegistry()
    ends = record_ends(registry)
    hooks = hookreg_run_hooks(registry)
    model: Model = answering()
    tools: list[FunctionTool] = []
    if path == "model-error":
        model = ScriptedModel([RuntimeError("model down")])
    elif path == "tool-error":
        model, tools = tool_then_answer(text="fail"), [failing_tool()]
    elif path == "stop":
        registry.pre_turn(lambda ctx: (_ for _ in ()).throw(StopRun("halt")))
    elif path == "cancelled":
        model = HangingModel()
    agent = Agent(name="tester", model=model, tools=guard_tools(tools, registry))

    async def go() -> None:
        task = asyncio.create_task(run_through(hooks, agent, "go", streamed=streamed))
        if isinstance(model, HangingModel):  # cancel once the model is called (or the run failed before)
            started = asyncio.create_task(model.started.wait())
            await asyncio.wait([task, started], return_when=asyncio.FIRST_COMPLETED)
            started.cancel()
            task.cancel()
        await task

    expected = {"completed": None, "model-error": RuntimeError, "tool-error": Exception, "stop": StopRun}
    if path == "completed":
        asyncio.run(go())
    else:
        with pytest.raises(expected.get(path) or asyncio.CancelledError):
            asyncio.run(go())
    status = {"model-error": "failed", "tool-error": "failed", "stop": "stopped"}.get(path, path)
    assert [end[0] for end in ends] == [status]


@pytest.mark.parametrize("point", ["user_prompt_submit", "pre_turn", "pre_tool_call_decide"])
def test_an_ask_notifies_then_goes_to_on_interaction(point: str) -> None:
    """A run-level or tool ask fires notification, then on_interaction; the approved run goes on."""
    registry = HookRegistry()
    events: list[str] = []
    registry.register(HookPoint(point), lambda ctx: HookResult.ask("may I?"))
    registry.notification(lambda ctx: events.append(f"notification: {ctx.message}"))

    @registry.on_interaction
    def approve(ctx: OnInteractionContext) -> HookResult:
        events.append(f"on_interaction: {ctx.question}")
        return HookResult.allow()

    tool = RecordingTool()
    agent = Agent(name="tester", model=tool_then_answer(), tools=guard_tools([echo_tool(tool)], registry))
    assert asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=False)) == "done"
    assert tool.calls == [{"text": "hi"}]
    asks = 1 if point == "user_prompt_submit" else 2 if point == "pre_turn" else 1
    assert len(events) == 2 * asks
    assert events[0].startswith("notification:")
    assert "may I?" in events[0]
    assert events[1] == "on_interaction: may I?"


def test_turns_count_from_one_in_every_run_with_a_fresh_turn_scratchpad() -> None:
    """Every run counts turns from 1; each turn gets a fresh turn scratchpad over the run's scratchpad."""
    registry = HookRegistry()
    seen: list[tuple[int, Scratchpad, Scratchpad]] = []

    @registry.pre_turn
    def record(ctx: PreTurnContext) -> HookResult:
        seen.append((ctx.turn, ctx.run.turn_scratchpad, ctx.run.scratchpad))
        return HookResult.allow()

    tool_turns: list[int] = []
    registry.post_tool_call(lambda ctx: tool_turns.append(ctx.run.turn))
    hooks = hookreg_run_hooks(registry)
    for _ in range(2):
        agent = Agent(
            name="tester", model=tool_then_answer(), tools=guard_tools([echo_tool(RecordingTool())], registry)
        )
        assert asyncio.run(run_through(hooks, agent, "go", streamed=False)) == "done"
    assert [turn for turn, _, _ in seen] == [1, 2, 1, 2]
    assert len({id(pad) for _, pad, _ in seen}) == 4  # the list keeps every pad alive: ids are distinct objects
    assert seen[0][2] is seen[1][2]
    assert seen[2][2] is seen[3][2]
    assert seen[1][2] is not seen[2][2]
    assert tool_turns == [1, 1]


def test_too_old_an_sdk_names_the_version_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """An openai-agents older than the floor makes the import raise ImportError naming the floor; the floor imports."""
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.22.3")
    monkeypatch.delitem(sys.modules, "hookreg.adapters.openai_agents")
    with pytest.raises(ImportError, match=r"openai-agents 0\.22\.3 is installed.*needs openai-agents>=0\.23\.1"):
        importlib.import_module("hookreg.adapters.openai_agents")
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.23.1")
    assert importlib.import_module("hookreg.adapters.openai_agents").hookreg_run_hooks is not None


async def settle(awaitable: Awaitable[_T]) -> _T:
    """Await `awaitable` (so asyncio.run can take any awaitable)."""
    return await awaitable


def test_private_sdk_seam_still_holds() -> None:
    """The one use of SDK internals: the copy raises, the formatter gives the SDK's text, approval is the SDK's rule."""
    function = echo_tool(RecordingTool())
    raising, formatter, approval = _raising_copy(function)
    context = ToolContext(context=None, tool_name=TOOL_NAME, tool_call_id="c1", tool_arguments='{"text": "fail"}')
    with pytest.raises(RuntimeError, match="echo failed"):
        asyncio.run(settle(raising.on_invoke_tool(context, '{"text": "fail"}')))
    text = asyncio.run(settle(formatter(context, RuntimeError("echo failed"))))
    assert text is not None
    assert text.startswith("An error occurred while running the tool.")
    assert asyncio.run(settle(function.on_invoke_tool(context, '{"text": "fail"}'))) == text
    _, silent_formatter, _ = _raising_copy(failing_tool())
    assert asyncio.run(settle(silent_formatter(context, RuntimeError("x")))) is None
    assert asyncio.run(settle(approval(context, '{"text": "hi"}', "c1"))) is False  # needs_approval=False
    function.needs_approval = lambda _ctx, params, _call_id: params["text"] == "rm"
    complete = '{"text": "hi", "prefix": "", "suffix": ""}'  # as validation leaves them: the predicate decides
    assert asyncio.run(settle(approval(context, complete, "c1"))) is False
    assert asyncio.run(settle(approval(context, complete.replace("hi", "rm"), "c1"))) is True
    assert asyncio.run(settle(approval(context, '{"text": "hi"}', "c1"))) is True  # defaults filled in: held


class OneModelProvider(ModelProvider):
    """A provider serving every model name from one scripted model."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def get_model(self, model_name: str | None) -> Model:
        """Return the scripted model, whatever the name."""
        return self.model


def test_a_named_model_keeps_the_sdk_default_settings() -> None:
    """Under hookreg's run config a model named by string gets the same default settings as in a plain SDK run."""
    plain, hooked = answering(), answering()
    asyncio.run(
        Runner.run(Agent(name="a", model="gpt-5"), "hi", run_config=RunConfig(model_provider=OneModelProvider(plain)))
    )
    hooks = hookreg_run_hooks(HookRegistry())
    asyncio.run(
        hooks.run(Agent(name="a", model="gpt-5"), "hi", run_config=RunConfig(model_provider=OneModelProvider(hooked)))
    )
    (plain_call,), (hooked_call,) = plain.calls, hooked.calls
    assert plain_call.model_settings.reasoning is not None
    assert hooked_call.model_settings == plain_call.model_settings


def record_turns(registry: HookRegistry, action: TurnAction | None = None) -> list[ModelTurnFinishedContext]:
    """Record each model_turn_finished context; answer `action` once, then continue."""
    seen: list[ModelTurnFinishedContext] = []

    @registry.model_turn_finished
    def record(ctx: ModelTurnFinishedContext) -> TurnAction:
        seen.append(ctx)
        return action if action is not None and len(seen) == 1 else TurnAction.continue_run()

    return seen


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_model_turn_finished_sees_each_answer(streamed: bool) -> None:
    """model_turn_finished sees every answer with its tool calls, finish reason (raw kept), message id and model."""
    registry = HookRegistry()
    seen = record_turns(registry)
    agent = Agent(name="tester", model=tool_then_answer(), tools=guard_tools([echo_tool(RecordingTool())], registry))
    assert asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=streamed)) == "done"
    assert [(ctx.turn, ctx.text, [c.tool_name for c in ctx.tool_calls]) for ctx in seen] == [
        (1, "", [TOOL_NAME]),
        (2, "done", []),
    ]
    assert dict(seen[0].tool_calls[0].args) == {"text": "hi"}
    if streamed:  # the Responses stream says how each answer ended, which response it was and which model
        assert [(ctx.finish_reason, ctx.raw_finish_reason) for ctx in seen] == [
            (FinishReason.TOOL_CALLS, "completed"),
            (FinishReason.STOP, "completed"),
        ]
        assert all(ctx.message_id and ctx.model == "scripted-model" for ctx in seen)
    else:  # a blocking ModelResponse carries no finish reason; the model is the one hookreg called
        assert [(ctx.finish_reason, ctx.raw_finish_reason, ctx.model) for ctx in seen] == [
            (None, None, "ScriptedModel"),
            (None, None, "ScriptedModel"),
        ]


class FilteredModel(ScriptedModel):
    """A scripted model whose streamed answers end incomplete, cut by a content filter."""

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """Stream the scripted answer, its terminal response marked incomplete (content_filter)."""
        async for event in super().stream_response(*args, **kwargs):
            if isinstance(event, ResponseCompletedEvent):
                cut = event.response.model_copy(
                    update={"status": "incomplete", "incomplete_details": IncompleteDetails(reason="content_filter")}
                )
                event = event.model_copy(update={"response": cut})  # noqa: PLW2901 -- the altered event
            yield event


def test_an_incomplete_streamed_answer_maps_its_reason() -> None:
    """An answer cut by the provider's filter maps to CONTENT_FILTER and keeps the API's spelling."""
    registry = HookRegistry()
    seen = record_turns(registry)
    agent = Agent(name="tester", model=FilteredModel([[assistant_message("partial")]]))
    asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=True))
    assert [(ctx.finish_reason, ctx.raw_finish_reason) for ctx in seen] == [
        (FinishReason.CONTENT_FILTER, "content_filter")
    ]


def test_an_answer_cut_at_the_output_cap_finishes_length() -> None:
    """A response.incomplete for max_output_tokens maps to LENGTH (raw kept); the SDK's error then ends the run."""
    registry = HookRegistry()
    seen = record_turns(registry)
    ends = record_ends(registry)
    agent = Agent(name="tester")
    config = RunConfig(model=KitModel((Answer(text="cut sh", truncated=True),)))
    with pytest.raises(ModelBehaviorError, match=r"response\.incomplete"):
        asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=True, run_config=config))
    assert [(ctx.finish_reason, ctx.raw_finish_reason, ctx.truncated) for ctx in seen] == [
        (FinishReason.LENGTH, "max_output_tokens", True)
    ]
    assert [status for status, _ in ends] == ["failed"]


def test_feedback_asks_the_model_again_in_a_blocking_run() -> None:
    """retry_with_feedback keeps the rejected answer, appends the feedback, and asks the model again."""
    registry = HookRegistry()
    seen = record_turns(registry, TurnAction.retry_with_feedback("say please"))
    model = ScriptedModel([[assistant_message("no")], [assistant_message("please")]])
    assert asyncio.run(
        run_through(hookreg_run_hooks(registry), Agent(name="a", model=model), "go", streamed=False)
    ) == ("please")
    assert [ctx.text for ctx in seen] == ["no", "please"]
    second = model.calls[1].input
    assert isinstance(second, list)
    assert second[-1] == {"role": "user", "content": "say please"}
    assert any(item.get("role") == "assistant" for item in second if isinstance(item, dict))


def test_a_retry_that_cannot_be_honoured_is_refused() -> None:
    """A retry of a streamed answer, or of an answer carrying tool calls, raises instead of dropping anything."""
    registry = HookRegistry()
    record_turns(registry, TurnAction.repeat())
    model = ScriptedModel([[assistant_message("no")]])
    with pytest.raises(ValueError, match="Cannot repeat turn 1 of a streamed OpenAI Agents run"):
        asyncio.run(run_through(hookreg_run_hooks(registry), Agent(name="a", model=model), "go", streamed=True))
    registry = HookRegistry()
    record_turns(registry, TurnAction.repeat())
    agent = Agent(name="tester", model=tool_then_answer(), tools=guard_tools([echo_tool(RecordingTool())], registry))
    with pytest.raises(ValueError, match=r"Cannot retry turn 1.*carries tool calls"):
        asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=False))


def test_a_stop_hook_keeps_a_blocking_run_going() -> None:
    """A stop hook denying the final answer sends its reason as feedback; the model answers again."""
    registry = HookRegistry()
    stops: list[tuple[str, int]] = []

    @registry.stop
    def not_yet(ctx: StopContext) -> HookResult:
        stops.append((ctx.response_text, ctx.continuation_count))
        return HookResult.deny("check your work") if ctx.continuation_count == 0 else HookResult.allow()

    model = ScriptedModel([[assistant_message("draft")], [assistant_message("final")]])
    agent = Agent(name="a", model=model)
    assert asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=False)) == "final"
    assert stops == [("draft", 0), ("final", 1)]
    assert model.calls[1].input[-1] == {"role": "user", "content": "check your work"}


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_active_tools_cut_the_offer_and_the_calls(streamed: bool) -> None:
    """active_tools cuts the tools one call offers; a tool the model calls anyway never runs and fails as invalid."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset() if ctx.turn == 1 else None))
    invalid: list[InvalidToolCallContext] = []
    registry.invalid_tool_call(invalid.append)
    tool, model = RecordingTool(), tool_then_answer()
    agent = Agent(name="tester", model=model, tools=guard_tools([echo_tool(tool)], registry))
    assert asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=streamed)) == "done"
    assert [[t.name for t in call.tools] for call in model.calls] == [[], [TOOL_NAME]]
    assert tool.calls == []
    assert [list(ctx.available_tools) for ctx in invalid] == [[]]
    (output,) = [
        i["output"] for i in model.calls[1].input if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert "not offered" in str(output)


def test_patch_messages_replace_what_one_call_sends() -> None:
    """RequestPatch.messages are the input items of that call only; the next call sends the real history."""
    registry = HookRegistry()
    only = (Message("user", "only this"),)
    registry.pre_model_call(lambda ctx: RequestPatch(messages=only) if ctx.turn == 1 else RequestPatch())
    model = tool_then_answer()
    agent = Agent(name="tester", model=model, tools=guard_tools([echo_tool(RecordingTool())], registry))
    assert asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=False)) == "done"
    assert model.calls[0].input == [{"role": "user", "content": "only this"}]
    assert isinstance(model.calls[1].input, list)
    assert model.calls[1].input[0] == {"role": "user", "content": "go"}


def test_stop_run_from_a_delta_hook_stops_a_streamed_run() -> None:
    """A StopRun from a text_delta observer reaches the stream's consumer; the session ends once, stopped."""
    registry = HookRegistry()
    ends = record_ends(registry)

    @registry.text_delta
    def hush(ctx: TextDeltaContext) -> None:
        raise StopRun("quiet please")

    agent = Agent(name="tester", model=answering("chatter"))
    with pytest.raises(StopRun, match="quiet please"):
        asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=True))
    assert ends == [("stopped", "quiet please")]


def test_parallel_calls_with_one_denied() -> None:
    """Two calls in one answer are gated one by one: the allowed one runs, the denied one never does."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(
        lambda ctx: HookResult.deny("not that one") if ctx.args["text"] == "bad" else HookResult.allow()
    )
    tool = RecordingTool()
    both = [
        function_call(TOOL_NAME, {"text": "ok"}, call_id="c1"),
        function_call(TOOL_NAME, {"text": "bad"}, call_id="c2"),
    ]
    model = ScriptedModel([both, [assistant_message("done")]])
    agent = Agent(name="tester", model=model, tools=guard_tools([echo_tool(tool)], registry))
    assert asyncio.run(run_through(hookreg_run_hooks(registry), agent, "go", streamed=False)) == "done"
    assert tool.calls == [{"text": "ok"}]
    outputs = {
        item["call_id"]: item["output"]
        for item in model.calls[1].input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }
    assert outputs == {"c1": "ok", "c2": "not that one"}


def sleepy_tool(**timeout: Any) -> FunctionTool:
    """An echo tool that sleeps for a minute, built with the given timeout options."""

    async def echo(text: str) -> str:
        """Echo text, slowly."""
        await asyncio.sleep(60)
        return text  # pragma: no cover - always timed out

    return function_tool(echo, name_override=TOOL_NAME, timeout=0.01, **timeout)


def test_a_tool_timeout_is_a_failure_the_hooks_see() -> None:
    """A tool outliving its timeout fires post_tool_call_failure and on_tool_error (kind TIMEOUT) over the SDK text."""
    registry = HookRegistry()
    failures: list[BaseException] = []
    registry.post_tool_call_failure(lambda ctx: failures.append(ctx.error))
    registry.on_tool_error(lambda ctx: f"{ctx.kind.value}: {ctx.message}")
    seen, answer = run_agent(registry, sleepy_tool(), {"text": "hi"})
    assert answer == "done"
    assert seen == "timeout: Tool 'echo' timed out after 0.01 seconds."
    assert [type(error).__name__ for error in failures] == ["ToolTimeoutError"]
    custom, _ = run_agent(
        HookRegistry(), sleepy_tool(timeout_error_function=lambda ctx, err: "too slow"), {"text": "x"}
    )
    assert custom == "too slow"
    with pytest.raises(ToolTimeoutError):
        run_agent(HookRegistry(), sleepy_tool(timeout_behavior="raise_exception"), {"text": "hi"})


def test_arguments_failing_the_schema_fail_like_the_tool() -> None:
    """An object the tool's schema refuses never reaches the tool; the failure points fire with the SDK's text."""
    registry = HookRegistry()
    failures: list[str] = []
    registry.post_tool_call_failure(lambda ctx: failures.append(type(ctx.error).__name__))
    tool = RecordingTool()
    seen, answer = run_agent(registry, echo_tool(tool), {"wrong": "field"})
    assert (tool.calls, answer) == ([], "done")
    assert failures == ["ModelBehaviorError"]
    assert seen.startswith("An error occurred while running the tool.")


def test_the_served_model_gives_its_retry_advice() -> None:
    """The SDK asks hookreg's per-call model for retry advice; the model that served the call answers."""
    busy = ModelStep(error=RuntimeError("busy"), retry_advice=ModelRetryAdvice(suggested=True, retry_after=0))
    model = ScriptedModel([busy, [assistant_message("ok")]])
    retry = ModelRetrySettings(max_retries=1, backoff={"initial_delay": 0}, policy=retry_policies.provider_suggested())
    agent = Agent(name="tester", model=model, model_settings=ModelSettings(retry=retry))
    assert asyncio.run(run_through(hookreg_run_hooks(HookRegistry()), agent, "go", streamed=False)) == "ok"
    assert len(model.calls) == 2


# --- the run-contract kit --------------------------------------------------------------------


class KitModel(ScriptedModel):
    """A scripted SDK model playing the kit's answers, one per model call.

    Tool calls of one answer are one response (parallel calls); a raw argument
    string is sent as is. A truncated answer ends the way the SDK's Responses
    model ends it: streamed, a ``response.incomplete`` event whose reason is
    ``max_output_tokens``; blocking, the `ModelBehaviorError` the SDK's model
    raises for an incomplete response (a `ModelResponse` has no status).
    """

    def __init__(self, answers: tuple[Answer, ...]) -> None:
        self.answers = answers
        super().__init__([kit_step(answer) for answer in answers])

    async def _next_answer(self) -> Answer:
        """The answer this call plays; a hanging one waits here forever."""
        answer = self.answers[min(len(self.calls), len(self.answers) - 1)]
        if answer.hang:
            await asyncio.Event().wait()
        return answer

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """Answer blocking, as the SDK's Responses model would."""
        answer = await self._next_answer()
        response = await super().get_response(*args, **kwargs)
        if answer.truncated:
            msg = "Responses stream ended with terminal event `response.incomplete`. status=incomplete."
            raise ModelBehaviorError(msg)
        return response

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """Stream the answer; a truncated one ends on ``response.incomplete`` (``max_output_tokens``)."""
        answer = await self._next_answer()
        async for event in super().stream_response(*args, **kwargs):
            if answer.truncated and isinstance(event, ResponseCompletedEvent):
                cut = event.response.model_copy(
                    update={"status": "incomplete", "incomplete_details": IncompleteDetails(reason="max_output_tokens")}
                )
                yield ResponseIncompleteEvent(
                    response=cut, sequence_number=event.sequence_number, type="response.incomplete"
                )
                return
            yield event


def kit_step(answer: Answer) -> ModelStep:
    """One answer as a scripted model step (a hanging answer never reaches its step)."""
    if answer.error is not None:
        return ModelStep(error=answer.error)
    output: list[Any] = [
        function_call(
            call.tool_name, call.args if isinstance(call.args, str) else dict(call.args), call_id=call.call_id
        )
        for call in answer.calls
    ]
    if answer.text or not output:
        output.append(assistant_message(answer.text))
    return ModelStep(output=output)


def raw_or_dict(args: Mapping[str, object] | str) -> str | dict[str, object]:
    """A call's arguments as `function_call` takes them: raw text as is, a mapping as a dict."""
    return args if isinstance(args, str) else dict(args)


def kit_tool(name: str, implementation: Callable[..., str]) -> FunctionTool:
    """A function tool named `name` with echo's signature, calling `implementation` with what it received.

    The SDK reports a function tool's failure one way only: the tool raises
    and its ``failure_error_function`` formats the error. A `ReportedError`
    therefore propagates like any other exception.
    """

    def echo(text: str, prefix: str = "", suffix: str = "") -> str:
        """Echo text between a prefix and a suffix."""
        return implementation(text=text, prefix=prefix, suffix=suffix)

    return function_tool(echo, name_override=name)


def tool_outputs(model: ScriptedModel) -> dict[str, str]:
    """Call id → the tool output the model was sent for it, over every call the model served."""
    return {
        str(item["call_id"]): str(item["output"])
        for call in model.calls
        if isinstance(call.input, list)
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


@dataclasses.dataclass
class OpenAIWiring:
    """One hooks object and one agent with the guarded kit tools, shared by every run; each run brings its model."""

    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]
    hooks: HookregRunHooks = dataclasses.field(init=False)
    agent: Agent[Any] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.hooks = hookreg_run_hooks(self.registry)
        tools = [kit_tool(name, tool) for name, tool in self.tools.items()]
        self.agent = Agent(name="kit", tools=guard_tools(tools, self.registry))

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        """Run the agent once on `prompt` through the hooks' entry points, a `KitModel` playing `answers`."""
        model = KitModel(answers)
        config = RunConfig(model=model)
        try:
            output = await run_through(self.hooks, self.agent, prompt, streamed=streamed, run_config=config)
        except ModelBehaviorError:
            if not any(answer.truncated for answer in answers):
                raise
            output = ""  # the SDK's own end of a run whose answer hit the output cap
        return RunReport(tool_messages=tool_outputs(model), output=str(output or ""))


class OpenAIAgentsFramework:
    """The OpenAI Agents SDK for the run-contract kit: `HookregRunHooks.run` blocking, `run_streamed` streamed."""

    name = "openai-agents"
    streams = True
    stop_raises = True
    limits: Mapping[str, str] = {
        "arguments_failing_the_schema": (
            "the SDK checks a function tool's arguments only inside the tool's invoker (function_tool's private "
            "pydantic model), after the gate, so they fail like the tool (post_tool_call_failure, on_tool_error "
            "kind EXCEPTION); its public params_json_schema is the strict model-facing schema, which requires "
            "parameters that have defaults, so checking it first would refuse valid calls"
        ),
        "finish_reasons_mapped/blocking": (
            "a Model's get_response returns a ModelResponse, which carries no status or finish reason, and the "
            "SDK's models raise ModelBehaviorError for an incomplete response instead of returning it; streamed "
            "runs map the Responses API's ending"
        ),
    }

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> OpenAIWiring:
        """One hooks object and one agent offering the kit's tools, guarded."""
        return OpenAIWiring(registry, tools)


FRAMEWORK = OpenAIAgentsFramework()


@pytest.mark.parametrize(
    ("scenario", "streamed"),
    run_contract_cases(FRAMEWORK),
    ids=lambda v: v.name if isinstance(v, RunScenario) else ("streamed" if v else "blocking"),
)
def test_run_contract(scenario: RunScenario, streamed: bool) -> None:
    """The OpenAI Agents adapter honours every row of the run contract but its documented limits."""
    scenario.check(FRAMEWORK, streamed=streamed)


def test_the_limits_are_real() -> None:
    """Each row listed as a limit really fails on the SDK in its mode, so the list never hides a row that passes."""
    for scenario in RUN_SCENARIOS:
        for streamed in (False, True):
            if is_limit(FRAMEWORK, scenario.name, streamed):
                with pytest.raises(AssertionError, match=scenario.name):
                    scenario.check(FRAMEWORK, streamed=streamed)


def unknown_then_done(arguments: str = '{"text": "hi"}') -> KitModel:
    """A kit model that calls a tool named nope (the agent has none), then answers "done"."""
    return KitModel((Answer(calls=(Call(arguments, tool_name="nope"),)), Answer(text="done")))


def echo_agent(registry: HookRegistry, tool: RecordingTool) -> Agent[Any]:
    """An agent offering the guarded echo tool."""
    return Agent(name="tester", tools=guard_tools([echo_tool(tool)], registry))


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_an_unknown_tool_reaches_invalid_tool_call(streamed: bool) -> None:
    """A call to a tool the agent lacks goes to invalid_tool_call; when every hook passes, the SDK's words apply."""
    registry, tool = HookRegistry(), RecordingTool()
    invalid: list[InvalidToolCallContext] = []
    registry.invalid_tool_call(invalid.append)
    model = unknown_then_done()
    run = run_through(
        hookreg_run_hooks(registry),
        echo_agent(registry, tool),
        "go",
        streamed=streamed,
        run_config=RunConfig(model=model),
    )
    assert asyncio.run(run) == "done"
    assert tool.calls == []
    assert [(c.tool_name, dict(c.args), c.raw_args, list(c.available_tools)) for c in invalid] == [
        ("nope", {"text": "hi"}, {"text": "hi"}, [TOOL_NAME])
    ]
    assert tool_outputs(model) == {"call-1": "Tool 'nope' not found."}


def test_a_repaired_unknown_call_runs_the_named_tool_gated_once() -> None:
    """A repair of an unknown call runs the named guarded tool with the model's arguments, through one gate."""
    registry, tool = HookRegistry(), RecordingTool()
    gated: list[str] = []
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.repair(TOOL_NAME))

    @registry.pre_tool_call_decide
    def allow(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx.call_id)
        return HookResult.allow()

    model = unknown_then_done()
    agent = echo_agent(registry, tool)
    run = run_through(hookreg_run_hooks(registry), agent, "go", streamed=False, run_config=RunConfig(model=model))
    assert asyncio.run(run) == "done"
    assert (tool.calls, gated, tool_outputs(model)) == ([{"text": "hi"}], ["call-1"], {"call-1": "hi"})


def test_a_stop_on_an_unknown_call_stops_the_run() -> None:
    """An invalid_tool_call stop on an unknown tool reaches the caller as StopRun; the model is not asked again."""
    registry = HookRegistry()
    ends = record_ends(registry)
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.stop("no guessing tool names"))
    model = unknown_then_done()
    run = run_through(
        hookreg_run_hooks(registry),
        echo_agent(registry, RecordingTool()),
        "go",
        streamed=False,
        run_config=RunConfig(model=model),
    )
    with pytest.raises(StopRun, match="no guessing tool names"):
        asyncio.run(run)
    assert len(model.calls) == 1
    assert ends == [("stopped", "no guessing tool names")]


def test_the_base_tool_error_formatter_keeps_the_other_kinds() -> None:
    """run_config() answers tool_not_found itself for invalid_tool_call hooks, every other kind with the base's."""
    base = RunConfig(tool_error_formatter=lambda args: f"base: {args.kind}")
    registry = HookRegistry()
    assert hookreg_run_hooks(registry).run_config(base).tool_not_found_behavior == "raise_error"
    registry.invalid_tool_call(lambda ctx: None)
    config = hookreg_run_hooks(registry).run_config(base)
    assert config.tool_not_found_behavior == "return_error_to_model"
    assert config.tool_error_formatter is not None
    wrapper = RunContextWrapper(context=None)
    for kind in ("approval_rejected", "tool_exception"):
        args = ToolErrorFormatterArgs(kind, "function", TOOL_NAME, "c1", "default", wrapper)
        text = config.tool_error_formatter(args)
        assert inspect.isawaitable(text)
        assert asyncio.run(settle(text)) == f"base: {kind}"


def test_a_failing_hook_on_an_unknown_call_fails_the_run() -> None:
    """A hook raising on an unknown call reaches the caller although the SDK swallows its formatter's errors."""
    registry = HookRegistry()
    ends = record_ends(registry)
    registry.invalid_tool_call(lambda ctx: None)  # a listener: the unknown call is hookreg's to report

    @registry.on_tool_error
    def broken(ctx: OnToolErrorContext) -> str:
        raise RuntimeError("error hook broke")

    model = unknown_then_done()
    agent = echo_agent(registry, RecordingTool())
    with pytest.raises(RuntimeError, match="error hook broke"):
        asyncio.run(
            run_through(hookreg_run_hooks(registry), agent, "go", streamed=True, run_config=RunConfig(model=model))
        )
    assert len(model.calls) == 1
    assert [status for status, _ in ends] == ["failed"]


def test_a_repair_to_an_unguarded_tool_runs_it_and_observes_it() -> None:
    """A repair naming a function tool hookreg does not guard runs it once; post_tool_call still sees the result."""
    registry, tool = HookRegistry(), RecordingTool()
    results: list[object] = []
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.repair(TOOL_NAME))
    registry.post_tool_call(lambda ctx: results.append(ctx.result))
    model = unknown_then_done()
    agent = Agent(name="tester", tools=[echo_tool(tool)])
    run = run_through(hookreg_run_hooks(registry), agent, "go", streamed=False, run_config=RunConfig(model=model))
    assert asyncio.run(run) == "done"
    assert (tool.calls, results, tool_outputs(model)) == ([{"text": "hi"}], ["hi"], {"call-1": "hi"})


def test_a_repair_cannot_reach_a_disabled_tool() -> None:
    """A repair naming a tool the agent disabled fails as not found: the disabled tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()
    kinds: list[str] = []
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.repair(TOOL_NAME))

    @registry.on_tool_error
    def note(ctx: OnToolErrorContext) -> str:
        kinds.append(ctx.kind.value)
        return ctx.message

    disabled = dataclasses.replace(echo_tool(tool), is_enabled=False)
    model = unknown_then_done()
    agent = Agent(name="tester", tools=guard_tools([disabled], registry))
    run = run_through(hookreg_run_hooks(registry), agent, "go", streamed=False, run_config=RunConfig(model=model))
    assert asyncio.run(run) == "done"
    assert (tool.calls, kinds) == ([], ["not_found"])


def test_without_the_run_config_model_turn_finished_observes_and_refuses_a_retry() -> None:
    """Run without hookreg's run_config, model_turn_finished still sees each answer; asking again raises, clearly."""
    registry = HookRegistry()
    seen: list[str] = []

    @registry.model_turn_finished
    def judge(ctx: ModelTurnFinishedContext) -> TurnAction:
        seen.append(ctx.text)
        return TurnAction.repeat() if ctx.text == "again" else TurnAction.continue_run()

    hooks = hookreg_run_hooks(registry)
    result = asyncio.run(Runner.run(Agent(name="a", model=answering("fine")), "hi", hooks=hooks))
    assert (result.final_output, seen) == ("fine", ["fine"])
    with pytest.raises(HookValueError, match=r"Cannot repeat turn 1 as hook '.*judge' asked: the run has no hookreg"):
        asyncio.run(Runner.run(Agent(name="a", model=answering("again")), "hi", hooks=hooks))


def test_post_turn_sees_each_accepted_answer_before_stop_judges_it() -> None:
    """As in the run contract: an accepted answer fires post_turn, then stop may keep the run going."""
    registry = HookRegistry()
    events: list[str] = []
    registry.post_turn(lambda ctx: events.append(f"post_turn {ctx.response_text}"))

    @registry.stop
    def not_yet(ctx: StopContext) -> HookResult:
        events.append(f"stop {ctx.response_text}")
        return HookResult.deny("check your work") if ctx.continuation_count == 0 else HookResult.allow()

    model = ScriptedModel([[assistant_message("draft")], [assistant_message("final")]])
    assert asyncio.run(run_through(hookreg_run_hooks(registry), Agent(name="a", model=model), "go", streamed=False))
    assert events == ["post_turn draft", "stop draft", "post_turn final", "stop final"]
