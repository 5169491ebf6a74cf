"""Tests for hookreg.adapters.openai_agents: the SDK's own extensions and entry points keep working with hookreg."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Iterator
from typing import Any, get_type_hints

import pytest
from agents import (
    Agent,
    RunConfig,
    RunHooks,
    Runner,
    RunResultStreaming,
    UserError,
    function_tool,
    set_tracing_disabled,
)
from agents.models.multi_provider import MultiProvider
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext

from hookreg import (
    HookRegistry,
    HookResult,
    OnSessionEndContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    RequestPatch,
)
from hookreg.adapters.openai_agents import _model_arguments, guard_tool, guard_tools, hookreg_run_hooks


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    """Disable the SDK's tracing (which would export to the network) for the duration of a test."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@function_tool
def lookup(key: str) -> str:
    """Look a key up (pretend)."""
    return f"value of {key}"


def calling_lookup() -> ScriptedModel:
    """A scripted model that calls lookup once, then answers."""
    return ScriptedModel([[function_call("lookup", {"key": "k"}, call_id="c1")], [assistant_message("done")]])


def gate_log(registry: HookRegistry) -> list[str]:
    """Record each call the gate judges, by its arguments' key."""
    judged: list[str] = []

    @registry.pre_tool_call_decide
    def record(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(str(ctx.args["key"]))
        return HookResult.allow()

    return judged


def session_ends(registry: HookRegistry) -> list[str]:
    """Record the status of each session end."""
    ends: list[str] = []

    @registry.on_session_end
    def end(ctx: OnSessionEndContext) -> None:
        ends.append(ctx.outcome.status)

    return ends


def test_guarding_a_guarded_tool_again_returns_it() -> None:
    """A tool guarded twice by one registry (an agent cloned with its guarded tools) is gated once per call."""
    registry = HookRegistry()
    judged = gate_log(registry)
    guarded = guard_tool(lookup, registry)
    assert guard_tool(guarded, registry) is guarded
    agent = Agent(name="a", model=calling_lookup(), tools=guard_tools([guarded], registry))
    asyncio.run(hookreg_run_hooks(registry).run(agent, "look"))
    assert judged == ["k"]


def test_a_tool_guarded_by_another_registry_is_guarded_again() -> None:
    """Guarding with a second registry layers it: both registries judge the call."""
    first, second = HookRegistry(), HookRegistry()
    judged_first, judged_second = gate_log(first), gate_log(second)
    tool = guard_tool(guard_tool(lookup, first), second)
    asyncio.run(Runner.run(Agent(name="a", model=calling_lookup(), tools=[tool]), "look"))
    assert (judged_first, judged_second) == (["k"], ["k"])


class AppHooks(RunHooks[Any]):
    """An app's own run hooks, recording what they see."""

    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    async def on_agent_start(self, context: Any, agent: Agent[Any]) -> None:
        self.seen.append("app agent start")

    async def on_llm_start(self, context: Any, agent: Agent[Any], system_prompt: str | None, items: Any) -> None:
        self.seen.append("app llm start")

    async def on_tool_start(self, context: Any, agent: Agent[Any], tool: Any) -> None:
        self.seen.append(f"app tool {tool.name}")

    async def on_agent_end(self, context: Any, agent: Agent[Any], output: Any) -> None:
        self.seen.append("app agent end")


@pytest.mark.parametrize("streamed", [False, True])
def test_the_apps_run_hooks_run_beside_hookregs(streamed: bool) -> None:
    """hooks.run(..., hooks=app_hooks) runs the app's hooks too: hookreg's turn gate first, its session end last."""
    registry = HookRegistry()
    seen: list[str] = []

    @registry.pre_turn
    def turn(ctx: PreTurnContext) -> HookResult:
        seen.append(f"pre_turn {ctx.turn}")
        return HookResult.allow()

    registry.on_session_end(lambda ctx: seen.append(f"end {ctx.outcome.status}"))
    hooks = hookreg_run_hooks(registry)
    agent = Agent(name="a", model=calling_lookup(), tools=guard_tools([lookup], registry))

    async def main() -> None:
        if not streamed:
            await hooks.run(agent, "look", hooks=AppHooks(seen))
            return
        async for _event in hooks.stream_events(hooks.run_streamed(agent, "look", hooks=AppHooks(seen))):
            pass

    asyncio.run(main())
    assert seen == [
        "app agent start",
        "pre_turn 1",
        "app llm start",
        "app tool lookup",
        "pre_turn 2",
        "app llm start",
        "app agent end",
        "end completed",
    ]


def test_hooks_that_are_not_run_hooks_get_the_sdks_own_error() -> None:
    """Anything else passed as hooks= reaches the SDK, whose own TypeError names the mistake."""
    hooks = hookreg_run_hooks(HookRegistry())
    agent = Agent(name="a", model=calling_lookup())
    with pytest.raises(TypeError, match="Run hooks must be instances of RunHooks"):
        asyncio.run(hooks.run(agent, "look", hooks=object()))  # type: ignore[arg-type]  # the mistake under test


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_apps_model_input_filter_decides_what_is_sent(asynchronous: bool) -> None:
    """The app's call_model_input_filter still shapes each call; a pre_model_call patch applies over it."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(preamble="Be brief."))

    def shout(data: CallModelData[Any]) -> ModelInputData:
        return ModelInputData(input=data.model_data.input, instructions=f"{data.model_data.instructions} LOUDLY")

    async def ashout(data: CallModelData[Any]) -> ModelInputData:
        return shout(data)

    model = ScriptedModel([[assistant_message("ok")]])
    hooks = hookreg_run_hooks(registry)
    config = RunConfig(call_model_input_filter=ashout if asynchronous else shout)
    asyncio.run(hooks.run(Agent(name="a", model=model, instructions="Answer."), "hi", run_config=config))
    assert model.calls[0].system_instructions == "Be brief.\n\nAnswer. LOUDLY"


def test_run_sync_takes_the_hookreg_path() -> None:
    """Runner.run_sync with the hooks and their run_config gates the tool and ends the session."""
    registry = HookRegistry()
    judged, ends = gate_log(registry), session_ends(registry)
    hooks = hookreg_run_hooks(registry)
    agent = Agent(name="a", model=calling_lookup(), tools=guard_tools([lookup], registry))
    try:
        result = Runner.run_sync(agent, "look", hooks=hooks, run_config=hooks.run_config())
    finally:  # run_sync leaves the thread's default loop open for the next call; this test has none
        asyncio.get_event_loop_policy().get_event_loop().close()
        asyncio.set_event_loop(None)
    assert (result.final_output, judged, ends) == ("done", ["k"], ["completed"])


def test_a_dict_run_config_takes_the_hookreg_path() -> None:
    """A dict run_config, as Runner.run takes, keeps its settings and gets hookreg's model-call points."""
    registry = HookRegistry()
    names: list[str] = []

    @registry.pre_model_call
    def note(ctx: PreModelCallContext) -> None:
        names.append(ctx.run.agent_name or "")

    hooks = hookreg_run_hooks(registry)
    agent = Agent(name="a", model=calling_lookup(), tools=guard_tools([lookup], registry))
    result = asyncio.run(hooks.run(agent, "look", run_config={"workflow_name": "mine"}))
    assert (result.final_output, names) == ("done", ["a", "a"])


def test_tools_assigned_after_the_agent_was_built_are_guarded_when_wrapped() -> None:
    """Tools set on an agent after it was built are judged when the app guards them as it assigns them."""
    registry = HookRegistry()
    judged = gate_log(registry)
    agent = Agent(name="a", model=calling_lookup())
    agent.tools = guard_tools([lookup], registry)
    asyncio.run(hookreg_run_hooks(registry).run(agent, "look"))
    assert judged == ["k"]


def test_with_nobody_listening_the_run_config_is_the_apps_own() -> None:
    """An empty registry hands the SDK the app's RunConfig itself: its model, filter and formatter as they are."""
    base = RunConfig(workflow_name="mine")
    assert hookreg_run_hooks(HookRegistry()).run_config(base) is base


def test_a_config_hookreg_built_is_not_wrapped_twice() -> None:
    """An agent-as-tool run gets its parent's RunConfig: built again, one filter opens each call and patches apply."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(preamble="Be brief."))
    hooks = hookreg_run_hooks(registry)
    model = ScriptedModel([[assistant_message("ok")]])
    config = hooks.run_config(hooks.run_config(RunConfig()))
    asyncio.run(Runner.run(Agent(name="a", model=model, instructions="Answer."), "hi", hooks=hooks, run_config=config))
    assert model.calls[0].system_instructions == "Be brief.\n\nAnswer."


@function_tool
def status() -> dict[str, object]:
    """Report a status (pretend)."""
    return {"status": "ok"}


class ToolEnds(RunHooks[Any]):
    """Run hooks keeping what each tool returned, as the SDK hands it over."""

    def __init__(self) -> None:
        self.results: list[object] = []

    async def on_tool_end(self, context: Any, agent: Agent[Any], tool: Any, result: object) -> None:
        self.results.append(result)


def test_a_result_transform_returning_none_leaves_the_sdk_the_tools_own_value() -> None:
    """A transform_tool_result hook that returns None hands the SDK the tool's value, not hookreg's text of it."""
    registry = HookRegistry()
    registry.transform_tool_result(lambda ctx: None)
    ends = ToolEnds()
    model = ScriptedModel([[function_call("status", {}, call_id="c1")], [assistant_message("done")]])
    agent = Agent(name="a", model=model, tools=guard_tools([status], registry))
    asyncio.run(Runner.run(agent, "status?", hooks=ends))
    assert ends.results == [{"status": "ok"}]


def patching() -> HookRegistry:
    """A registry whose pre_model_call hook puts hookreg's per-call model in the run's place."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(preamble="Be brief."))
    return registry


def test_the_entry_point_closes_the_model_provider_the_run_owns(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no run_config the SDK would close the provider it made; hooks.run closes the one its config holds."""
    closed: list[MultiProvider] = []

    async def record(provider: MultiProvider) -> None:
        closed.append(provider)

    monkeypatch.setattr(MultiProvider, "aclose", record)
    hooks = hookreg_run_hooks(patching())
    asyncio.run(hooks.run(Agent(name="a", model=ScriptedModel([[assistant_message("ok")]])), "hi"))
    asyncio.run(hooks.run(Agent(name="a", model=ScriptedModel([[assistant_message("ok")]])), "hi", run_config={}))
    asyncio.run(
        hooks.run(Agent(name="a", model=ScriptedModel([[assistant_message("ok")]])), "hi", run_config=RunConfig())
    )
    assert len(closed) == 2  # the app's own RunConfig keeps its provider open, as the SDK leaves it


class CleanedModel(ScriptedModel):
    """A scripted model counting the SDK's end-of-run notices."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cleanups = 0

    async def _cleanup_on_run_end(self, owner: object) -> None:
        self.cleanups += 1


def test_the_served_model_hears_that_its_run_ended() -> None:
    """The SDK's end-of-run notice reaches the model hookreg's per-call model served."""
    model = CleanedModel([[assistant_message("ok")]])
    asyncio.run(hookreg_run_hooks(patching()).run(Agent(name="a", model=model), "hi"))
    assert model.cleanups == 1


class BrokenStream(ScriptedModel):
    """A scripted model whose stream fails before its first event."""

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async def fail() -> AsyncIterator[Any]:
            msg = "stream broke"
            raise RuntimeError(msg)
            yield  # an async generator

        return fail()


def test_the_sdks_own_stream_error_does_not_cancel_the_run() -> None:
    """An error of the SDK's own stream reaches the caller as it is; hookreg leaves the run's cancel state alone."""
    hooks = hookreg_run_hooks(patching())

    async def consume() -> RunResultStreaming:
        result = hooks.run_streamed(Agent(name="a", model=BrokenStream([])), "hi")
        with pytest.raises(RuntimeError, match="stream broke"):
            async for _event in hooks.stream_events(result):
                pass
        return result

    result = asyncio.run(consume())
    assert result._cancel_mode == "none"  # the SDK keeps whether someone cancelled the run only here


def broken(key: str) -> str:
    """Fail (pretend)."""
    msg = f"no {key}"
    raise KeyError(msg)


def test_an_error_the_tool_lets_propagate_still_does_when_no_hook_words_it() -> None:
    """A tool with failure_error_function=None raises when every on_tool_error hook returns None."""
    registry = HookRegistry()
    failures: list[str] = []
    registry.post_tool_call_failure(lambda ctx: failures.append(ctx.tool_name))
    registry.on_tool_error(lambda ctx: None)
    tool = function_tool(broken, name_override="lookup", failure_error_function=None)
    agent = Agent(name="a", model=calling_lookup(), tools=guard_tools([tool], registry))
    with pytest.raises(UserError, match="no k"):
        asyncio.run(Runner.run(agent, "look"))
    assert failures == ["lookup"]


def test_a_call_without_arguments_reads_as_no_arguments() -> None:
    """A tool call whose arguments are missing (None, which the SDK itself then refuses) reads as {}, not a crash."""
    assert _model_arguments(None) == {}


def test_the_guarded_invoker_describes_itself_once() -> None:
    """The SDK reads a tool invoker's signature and type hints on every call: the guarded one has them ready."""
    invoker = guard_tool(lookup, HookRegistry()).on_invoke_tool
    assert inspect.signature(invoker) is inspect.signature(invoker)
    assert not [hint for hint in invoker.__annotations__.values() if isinstance(hint, str)]
    assert get_type_hints(invoker)["ctx"] == ToolContext[Any]


def test_hooks_registered_during_a_run_fire_at_the_next_event() -> None:
    """Whether a point has listeners is read at each SDK event: hooks a tool registers mid-run fire in that run."""
    registry = HookRegistry()
    seen: list[str] = []

    def listen(key: str) -> str:
        registry.post_tool_call(lambda ctx: seen.append(f"post_tool_call {ctx.result}"))
        registry.pre_model_call(lambda ctx: seen.append(f"pre_model_call {ctx.turn}"))
        registry.post_turn(lambda ctx: seen.append(f"post_turn {ctx.response_text}"))
        return f"listening {key}"

    tool = function_tool(listen, name_override="lookup")
    agent = Agent(name="a", model=calling_lookup(), tools=guard_tools([tool], registry))
    result = asyncio.run(hookreg_run_hooks(registry).run(agent, "look"))
    assert result.final_output == "done"
    assert seen == ["post_tool_call listening k", "pre_model_call 2", "post_turn done"]
