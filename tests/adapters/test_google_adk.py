"""Tests for hookreg.adapters.google_adk: a real ADK app, offline (ADK's MockModel, InMemoryRunner), driven by hooks."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import (  # type: ignore[attr-defined]  # ADK documents this import
    RunConfig,
    StreamingMode,
)
from google.adk.apps import App
from google.adk.cli.agent_test_runner import MockModel
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import ValidationError

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelSelectContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnToolErrorContext,
    PostToolCallContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    RequestPatch,
    StopRun,
    TextDeltaContext,
    TurnAction,
)
from hookreg._lifecycle import STOPPED_NOTICE, present
from hookreg.adapters.google_adk import HookregPlugin
from hookreg.testing.conformance import Answer, ReportedError, RunReport

ROOT = Path(__file__).resolve().parents[2]


def _part(name: str, args: dict[str, Any], call_id: str = "call-1") -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args, id=call_id))


def _call(name: str, args: dict[str, Any], call_id: str = "call-1") -> types.Content:
    return types.Content(role="model", parts=[_part(name, args, call_id)])


def _say(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


class Tools:
    """Two tools recording what they really received."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def shell(self, command: str) -> str:
        """Run a shell command (pretend)."""
        self.calls.append(("shell", {"command": command}))
        if command == "fail":
            msg = "shell broke"
            raise RuntimeError(msg)
        return f"ran {command}"

    def save(self, items: list[str]) -> str:
        """Save items (pretend)."""
        self.calls.append(("save", {"items": items}))
        return f"saved {len(items)}"

    def listed(self) -> list[Any]:
        return [self.shell, self.save]


def _agent(model: BaseLlm, tools: Tools, **kwargs: Any) -> LlmAgent:
    return LlmAgent(name="agent", model=model, tools=tools.listed(), **kwargs)


async def _run(agent: LlmAgent, plugins: list[Any], *, prompt: str = "go", streamed: bool = False) -> list[Any]:
    """Run `agent` once in an in-memory ADK app with `plugins`; return the events."""
    runner = InMemoryRunner(app=App(name="app", root_agent=agent, plugins=plugins))
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text=prompt)])
    config = RunConfig(streaming_mode=StreamingMode.SSE if streamed else StreamingMode.NONE)
    return [
        event
        async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message, run_config=config)
    ]


def _responses(model: MockModel, index: int) -> dict[str, Any]:
    """The tool results the model read in its request number `index`, by call id."""
    return {
        part.function_response.id or "": part.function_response.response
        for content in model.requests[index].contents
        for part in content.parts or ()
        if part.function_response
    }


def _ends(registry: HookRegistry) -> list[OnSessionEndContext]:
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)
    return ends


def test_the_gate_judges_the_transformed_args_and_the_tool_gets_a_copy_of_them() -> None:
    """The gate sees the transformed args; a hook changing them in place after the gate does not reach the tool."""
    registry, tools = HookRegistry(), Tools()
    judged: list[PreToolCallDecideContext] = []

    @registry.transform_tool_input(tools="save")
    def checked(ctx: PreToolCallDecideContext) -> dict[str, object]:
        return {"items": [*ctx.args["items"], "checked"]}  # type: ignore[misc]  # the model sends a list

    @registry.pre_tool_call_decide
    def ask_first(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(ctx)
        return HookResult.ask("save these?")

    @registry.on_interaction
    def approve_then_tamper(ctx: OnInteractionContext) -> HookResult:
        judged[0].args["items"].append("tampered")  # type: ignore[attr-defined]  # the judged list, in place
        return HookResult.allow()

    model = MockModel.create([_call("save", {"items": ["a"]}), _say("done")])
    asyncio.run(_run(_agent(model, tools), [HookregPlugin(registry)]))
    assert judged[0].args["items"] == ["a", "checked", "tampered"]
    assert tools.calls == [("save", {"items": ["a", "checked"]})]
    assert _responses(model, 1) == {"call-1": {"result": "saved 2"}}


def test_a_deny_is_the_result_the_model_reads_and_no_agent_callback_sees_it() -> None:
    """A denied call never runs and the model reads why; the agent's before_tool_callback sees allowed calls only."""
    registry, tools = HookRegistry(), Tools()
    registry.pre_tool_call_decide(
        lambda ctx: HookResult.deny("no rm") if "rm" in str(ctx.args["command"]) else HookResult.allow()
    )
    seen: list[dict[str, Any]] = []

    def agent_callback(tool: Any, args: dict[str, Any], tool_context: Any) -> None:
        seen.append(dict(args))

    answer = types.Content(
        role="model",
        parts=[_part("shell", {"command": "rm -rf /"}, "call-a"), _part("shell", {"command": "ls"}, "call-b")],
    )
    model = MockModel.create([answer, _say("done")])
    asyncio.run(_run(_agent(model, tools, before_tool_callback=agent_callback), [HookregPlugin(registry)]))
    assert tools.calls == [("shell", {"command": "ls"})]
    assert _responses(model, 1) == {"call-a": {"error": "no rm"}, "call-b": {"result": "ran ls"}}
    assert seen == [{"command": "ls"}]


def test_stop_run_reaches_the_caller_as_the_cause_of_adks_runtime_error_and_the_session_ends_once() -> None:
    """ADK wraps what a plugin raises: the caller's RuntimeError has the very StopRun as its cause."""
    registry, tools = HookRegistry(), Tools()
    ends = _ends(registry)
    stop = StopRun("enough")

    @registry.pre_tool_call_decide
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise stop

    model = MockModel.create([_call("shell", {"command": "ls"}), _say("done")])
    with pytest.raises(RuntimeError, match="enough") as info:
        asyncio.run(_run(_agent(model, tools), [HookregPlugin(registry)]))
    assert info.value.__cause__ is stop
    assert tools.calls == []
    assert [(end.outcome.status, end.outcome.reason) for end in ends] == [("stopped", "enough")]


def test_a_prompt_deny_stops_the_run_before_any_model_call() -> None:
    """A user_prompt_submit deny raises StopRun (wrapped by ADK) with its reason; the model is never called."""
    registry, tools = HookRegistry(), Tools()
    ends = _ends(registry)
    registry.user_prompt_submit(lambda ctx: HookResult.deny("not that prompt"))
    model = MockModel.create([_say("done")])
    with pytest.raises(RuntimeError) as info:
        asyncio.run(_run(_agent(model, tools), [HookregPlugin(registry)]))
    assert isinstance(info.value.__cause__, StopRun)
    assert info.value.__cause__.reason == "not that prompt"
    assert model.requests == []
    assert [(end.outcome.status, end.outcome.reason) for end in ends] == [("stopped", "not that prompt")]


class HangingModel(BaseLlm):
    """A model that never answers (until cancelled), or raises `error`."""

    model: str = "hanging"
    error: str = ""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if self.error:
            raise ValueError(self.error)
        await asyncio.Event().wait()
        yield LlmResponse()  # pragma: no cover - never reached


@pytest.mark.parametrize("async_hook", [False, True], ids=["sync-hook", "async-hook"])
def test_the_session_ends_once_on_every_path(async_hook: bool) -> None:
    """completed, failed (a model error, a tool error nobody handled) and cancelled: each run ends once."""
    registry, tools = HookRegistry(), Tools()
    ends: list[str] = []
    if async_hook:

        @registry.on_session_end
        async def record(ctx: OnSessionEndContext) -> None:
            ends.append(ctx.outcome.status)

    else:
        registry.on_session_end(lambda ctx: ends.append(ctx.outcome.status))
    plugin = HookregPlugin(registry)
    asyncio.run(_run(_agent(MockModel.create([_say("done")]), tools), [plugin]))
    with pytest.raises(ValueError, match="model is down"):
        asyncio.run(_run(_agent(HangingModel(error="model is down"), tools), [plugin]))
    with pytest.raises(RuntimeError, match="shell broke"):
        asyncio.run(_run(_agent(MockModel.create([_call("shell", {"command": "fail"})]), tools), [plugin]))

    async def cancelled() -> None:
        task = asyncio.ensure_future(_run(_agent(HangingModel(), tools), [plugin]))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)  # an async hook's own task

    asyncio.run(cancelled())
    assert ends == ["completed", "failed", "failed", "cancelled"]
    assert plugin._runs == {}  # no run's state is left behind


def test_the_patch_applies_to_that_very_request() -> None:
    """pre_model_call's patch and model_select's pick reach the LlmRequest of the call they were computed for."""
    registry, tools = HookRegistry(), Tools()
    patches: list[RequestPatch] = []

    @registry.pre_model_call
    def patch(ctx: PreModelCallContext) -> RequestPatch:
        patches.append(ctx.patch)
        if ctx.turn > 1:
            return RequestPatch()
        return RequestPatch(preamble="Be brief.", temperature=0.1, max_tokens=50, active_tools=frozenset({"save"}))

    registry.model_select(lambda ctx: "gemini-picked" if ctx.run.turn == 1 else None)
    invalid: list[InvalidToolCallContext] = []
    registry.invalid_tool_call(invalid.append)
    model = MockModel.create([_call("shell", {"command": "ls"}), _say("done")])
    asyncio.run(_run(_agent(model, tools), [HookregPlugin(registry)]))
    first, second = model.requests
    assert patches[0].active_tools == frozenset({"shell", "save"})
    assert "Be brief." in str(first.config.system_instruction)
    assert (first.config.temperature, first.config.max_output_tokens, first.model) == (0.1, 50, "gemini-picked")
    assert set(first.tools_dict) == {"save"}
    assert [d.name for t in first.config.tools or () for d in getattr(t, "function_declarations", None) or ()] == [
        "save"
    ]
    assert (second.config.temperature, second.model, set(second.tools_dict)) == (None, "mock", {"shell", "save"})
    assert tools.calls == []  # a tool the patch did not offer never runs
    assert [ctx.tool_name for ctx in invalid] == ["shell"]
    assert "not offered" in str(_responses(model, 1)["call-1"]["error"])


def test_tool_choice_and_messages_reach_the_request() -> None:
    """tool_choice becomes the function-calling config; messages replace the contents sent for that call."""
    registry, tools = HookRegistry(), Tools()
    registry.pre_model_call(
        lambda ctx: RequestPatch(tool_choice="save", messages=(ctx.history[0],)) if ctx.turn == 1 else None
    )
    model = MockModel.create([_say("done")])
    asyncio.run(_run(_agent(model, tools), [HookregPlugin(registry)], prompt="only this"))
    calling = model.requests[0].config.tool_config.function_calling_config  # type: ignore[union-attr]  # set
    assert (calling.mode, calling.allowed_function_names) == (types.FunctionCallingConfigMode.ANY, ["save"])  # type: ignore[union-attr]
    assert [(c.role, c.parts[0].text) for c in model.requests[0].contents] == [("user", "only this")]  # type: ignore[index]


def test_an_unknown_tool_keeps_adks_own_answer_unless_on_tool_error_gives_one() -> None:
    """Without hooks ADK answers a call to an unknown tool itself; an on_tool_error text replaces that answer."""
    answers = [_call("nope", {"command": "ls"}), _say("done")]
    bare = MockModel.create(answers)
    asyncio.run(_run(_agent(bare, Tools()), []))
    plain = MockModel.create(answers)
    asyncio.run(_run(_agent(plain, Tools()), [HookregPlugin(HookRegistry())]))
    assert _responses(plain, 1) == _responses(bare, 1)
    registry = HookRegistry()
    errors: list[OnToolErrorContext] = []

    @registry.on_tool_error
    def hint(ctx: OnToolErrorContext) -> str:
        errors.append(ctx)
        return "use shell"

    hinted = MockModel.create(answers)
    asyncio.run(_run(_agent(hinted, Tools()), [HookregPlugin(registry)]))
    assert _responses(hinted, 1) == {"call-1": {"error": "use shell"}}
    assert [str(ctx.kind) for ctx in errors] == ["not_found"]


def test_an_invalid_call_hook_repairs_a_call_to_an_unknown_tool() -> None:
    """A repair renames the call; ADK still answers an unknown name itself, so the model reads the repair's verdict."""
    registry, tools = HookRegistry(), Tools()
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.skip("no such tool here"))
    model = MockModel.create([_call("nope", {"command": "ls"}), _say("done")])
    asyncio.run(_run(_agent(model, tools), [HookregPlugin(registry)]))
    assert _responses(model, 1) == {"call-1": {"result": "no such tool here"}}
    assert tools.calls == []


def test_an_empty_registry_changes_nothing_adk_does() -> None:
    """With no hooks the model gets the same requests and the caller the same events as without the plugin."""

    def run(plugins: list[Any]) -> tuple[list[Any], list[Any], list[tuple[str, dict[str, Any]]]]:
        tools = Tools()
        model = MockModel.create([_call("shell", {"command": "ls"}), _call("save", {}), _say("done")])
        events = asyncio.run(_run(_agent(model, tools), plugins))
        contents = [event.content.model_dump() if event.content else None for event in events]
        return contents, [r.model_dump(exclude={"config"}) for r in model.requests], tools.calls

    assert run([HookregPlugin(HookRegistry())]) == run([])


def test_nobody_listening_builds_no_run_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no hooks the plugin leaves every ADK callback at once: no run's lifecycle is built, blocking or streamed."""

    def refused(*args: object, **kwargs: object) -> None:
        msg = "Cannot build a RunState here: nobody listens."
        raise AssertionError(msg)

    monkeypatch.setattr("hookreg.adapters.google_adk.RunState", refused)
    plugin, tools = HookregPlugin(HookRegistry()), Tools()
    for streamed in (False, True):
        model = MockModel.create([_call("shell", {"command": "ls"}), _call("nope", {}, "call-2"), _say("done")])
        asyncio.run(_run(_agent(model, tools), [plugin], streamed=streamed))
        asyncio.run(_run(_agent(StreamingModel(), tools), [plugin], streamed=streamed))
    assert tools.calls == [("shell", {"command": "ls"})] * 2
    assert plugin._runs == {}


def test_hooks_registered_mid_run_run_from_the_next_adk_callback() -> None:
    """Hooks a tool registers run in the same run: at its own outcome, the next call's gate, the session's end.

    The run's context, built at the first hook that listens, has the turn the run is in and keeps one scratchpad
    for the rest of the run.
    """
    registry = HookRegistry()
    seen: list[tuple[int, str, object]] = []
    ends: list[tuple[str, int, object]] = []

    def observed(ctx: PostToolCallContext) -> None:
        seen.append((ctx.run.turn, ctx.tool_name, ctx.run.scratchpad))

    class Registering(Tools):
        def shell(self, command: str) -> str:
            """Run a shell command (pretend); the first call wires the hooks."""
            if not self.calls:
                registry.post_tool_call(observed)
                registry.pre_tool_call_decide(
                    lambda ctx: HookResult.deny("no rm") if "rm" in str(ctx.args["command"]) else HookResult.allow()
                )
                registry.on_session_end(lambda ctx: ends.append((ctx.outcome.status, ctx.run.turn, ctx.run.scratchpad)))
            return super().shell(command)

    tools = Registering()
    model = MockModel.create(
        [_call("shell", {"command": "ls"}), _call("shell", {"command": "rm -rf /"}, "call-2"), _say("done")]
    )
    asyncio.run(_run(_agent(model, tools), [HookregPlugin(registry)]))
    assert tools.calls == [("shell", {"command": "ls"})]
    assert _responses(model, 2) == {"call-1": {"result": "ran ls"}, "call-2": {"error": "no rm"}}
    assert [(turn, name) for turn, name, _ in seen] == [(1, "shell")]
    assert ends == [("completed", 3, seen[0][2])]
    assert ends[0][2] is seen[0][2]


def test_a_tool_restriction_lasts_for_the_model_call_it_was_made_for() -> None:
    """active_tools from one turn's patch does not refuse a tool ADK offers again on a later turn."""
    registry, tools = HookRegistry(), Tools()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset({"save"})) if ctx.turn == 1 else None)
    model = MockModel.create(
        [_call("save", {"items": ["a"]}), _call("shell", {"command": "ls"}, "call-2"), _say("done")]
    )
    asyncio.run(_run(_agent(model, tools), [HookregPlugin(registry)]))
    assert set(model.requests[1].tools_dict) == {"shell", "save"}
    assert tools.calls == [("save", {"items": ["a"]}), ("shell", {"command": "ls"})]


class StreamingModel(BaseLlm):
    """A model that streams its one answer in two partial pieces, then the whole."""

    model: str = "streaming"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        for piece in ("hel", "lo"):
            yield LlmResponse(content=_say(piece), partial=True)
        yield LlmResponse(content=_say("hello"), finish_reason=types.FinishReason.STOP)


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
def test_a_streamed_run_fires_the_delta_points(streamed: bool) -> None:
    """The partial responses of a streamed run fire text_delta with the text so far; the final one does not."""
    registry = HookRegistry()
    deltas: list[TextDeltaContext] = []
    registry.text_delta(deltas.append)
    asyncio.run(_run(_agent(StreamingModel(), Tools()), [HookregPlugin(registry)], streamed=streamed))
    assert [(d.delta, d.aggregated) for d in deltas] == [("hel", "hel"), ("lo", "hello")]


def test_a_delta_hook_registered_mid_call_aggregates_from_its_registration() -> None:
    """The docs' limit: a model call nobody listened to the deltas of keeps no text, so aggregation starts later."""
    registry = HookRegistry()
    deltas: list[TextDeltaContext] = []

    class Registering(StreamingModel):
        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            async for response in super().generate_content_async(llm_request, stream):
                yield response
                if response.partial and not deltas and not registry.has_hooks(HookPoint.TEXT_DELTA):
                    registry.text_delta(deltas.append)

    asyncio.run(_run(_agent(Registering(), Tools()), [HookregPlugin(registry)], streamed=True))
    assert [(d.delta, d.aggregated) for d in deltas] == [("lo", "lo")]


def test_retrying_an_answer_or_keeping_a_run_going_is_refused_with_a_clear_error() -> None:
    """ADK cannot send an answer back from a plugin: a repeat or a stop deny is refused, never ignored."""
    for point, hook in (
        (HookPoint.MODEL_TURN_FINISHED, lambda ctx: TurnAction.repeat()),
        (HookPoint.STOP, lambda ctx: HookResult.deny("keep going")),
    ):
        registry = HookRegistry()
        registry.register(point, hook, name="insist")
        with pytest.raises(RuntimeError) as info:
            asyncio.run(_run(_agent(MockModel.create([_say("done")]), Tools()), [HookregPlugin(registry)]))
        assert isinstance(info.value.__cause__, HookValueError)
        assert str(info.value.__cause__).startswith("Cannot ")


def test_model_select_without_a_pick_keeps_the_agents_model() -> None:
    """A model_select hook that returns None leaves the request's model as the agent set it."""
    registry = HookRegistry()
    picks: list[ModelSelectContext] = []
    registry.model_select(picks.append)
    model = MockModel.create([_say("done")])
    asyncio.run(_run(_agent(model, Tools()), [HookregPlugin(registry)]))
    assert model.requests[0].model == "mock"
    assert picks[0].default_model == "mock"


def test_the_plugin_needs_a_registry() -> None:
    """Anything but a HookRegistry is refused, naming what was being built."""
    with pytest.raises(HookTypeError, match="Cannot build a HookregPlugin from 'hooks'"):
        HookregPlugin("hooks")  # type: ignore[arg-type]  # the mistake under test


def test_the_example_runs_offline() -> None:
    """examples/adapter_google_adk.py runs offline: a call rewritten, rm -rf denied, the session ended."""
    example = ROOT / "examples" / "adapter_google_adk.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "rm -rf is not allowed" in done.stdout


@pytest.mark.parametrize("point", [HookPoint.PRE_TOOL_CALL_DECIDE, HookPoint.POST_TOOL_CALL])
def test_after_a_stop_every_call_of_the_batch_has_a_response_in_the_session(point: HookPoint) -> None:
    """A call whose tool ran shows its result; a call that never ran shows the "not run" notice."""
    registry, tools = HookRegistry(), Tools()

    def halt(ctx: Any) -> HookResult | None:
        if ctx.args["command"] == "b":
            raise StopRun("enough")
        return HookResult.allow() if point is HookPoint.PRE_TOOL_CALL_DECIDE else None

    registry.register(point, halt, name="halt")
    runner = InMemoryRunner(
        app=App(
            name="app",
            root_agent=_agent(
                MockModel.create(
                    [types.Content(role="model", parts=[_part("shell", {"command": c}, c) for c in "ab"])]
                ),
                tools,
            ),
            plugins=[HookregPlugin(registry)],
        )
    )

    async def run() -> dict[str, Any]:
        session = await runner.session_service.create_session(app_name="app", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="go")])
        with pytest.raises(RuntimeError, match="enough"):
            async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
                pass
        stored = await runner.session_service.get_session(app_name="app", user_id="u", session_id=session.id)
        assert stored is not None
        return {r.id or "": r.response for event in stored.events for r in event.get_function_responses()}

    responses = asyncio.run(run())
    if point is HookPoint.POST_TOOL_CALL:
        assert responses == {"a": {"result": "ran a"}, "b": {"result": "ran b"}}
    else:
        assert responses == {"a": {"result": "ran a"}, "b": {"error": STOPPED_NOTICE}}


def test_adks_own_tools_reach_no_tool_point() -> None:
    """transfer_to_agent is ADK's own tool: a gate denying every call does not stop the hand-off to a sub-agent."""
    registry = HookRegistry()
    gated: list[str] = []

    @registry.pre_tool_call_decide
    def deny_all(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx.tool_name)
        return HookResult.deny("nothing runs")

    offered: list[frozenset[str] | None] = []
    registry.pre_model_call(lambda ctx: offered.append(ctx.patch.active_tools))
    helper_model = MockModel.create([_say("helper here")])
    helper = LlmAgent(name="helper", model=helper_model, description="helps")
    root = LlmAgent(
        name="root",
        model=MockModel.create([_call("transfer_to_agent", {"agent_name": "helper"})]),
        sub_agents=[helper],
    )
    events = asyncio.run(_run(root, [HookregPlugin(registry)]))
    assert any(event.author == "helper" and event.content and "helper here" in str(event.content) for event in events)
    assert gated == []
    assert offered[0] == frozenset()


@pytest.mark.parametrize("raw", ['["hi"]', '{"text": "hi'], ids=["not-an-object", "malformed"])
def test_arguments_that_are_not_an_object_never_reach_adk(raw: str) -> None:
    """The kit's limits: google.genai refuses a function call whose args are not an object, before ADK sees it."""
    with pytest.raises(ValidationError, match="args"):
        types.FunctionCall(name="echo", args=raw)  # type: ignore[arg-type]  # what a model might send


# --- the run-contract kit (run in test_google_adk_kit.py) ------------------------------------

_IDS = itertools.count()


class KitModel(BaseLlm):
    """An ADK model playing the kit's scripted answers: each run's by its prompt, one per model answer so far."""

    model: str = "kit-model"
    scripts: dict[str, tuple[Answer, ...]] = {}  # noqa: RUF012 -- a pydantic field, copied per instance

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        contents = llm_request.contents
        prompt = next(p.text for c in contents if c.role == "user" for p in c.parts or () if p.text)
        answer = self.scripts[prompt or ""][sum(c.role == "model" for c in contents)]
        if answer.hang:
            await asyncio.Event().wait()  # until the kit cancels the run
        if answer.error is not None:
            raise answer.error
        parts = [
            types.Part(function_call=types.FunctionCall(name=c.tool_name, args=dict(c.args), id=c.call_id))
            for c in answer.calls
            if not isinstance(c.args, str)
        ]
        if stream and answer.text:
            for piece in (answer.text[:2], answer.text[2:]):
                yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=piece)]), partial=True)
        if answer.text:
            parts.insert(0, types.Part(text=answer.text))
        finish = types.FinishReason.MAX_TOKENS if answer.truncated else types.FinishReason.STOP
        yield LlmResponse(content=types.Content(role="model", parts=parts), finish_reason=finish)


def _tool(name: str, fn: Callable[..., str]) -> Callable[..., Any]:
    def tool(text: str, prefix: str = "", suffix: str = "") -> Any:
        """Echo the text between prefix and suffix."""
        try:
            return fn(text=text, prefix=prefix, suffix=suffix)
        except ReportedError as exc:  # ADK's own way to report a failed call: a result with an error
            return {"error": str(exc)}

    tool.__name__ = name
    return tool


@dataclass
class AdkWiring:
    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]
    model: KitModel = field(default_factory=KitModel)

    def __post_init__(self) -> None:
        agent = LlmAgent(name="kit", model=self.model, tools=[_tool(n, fn) for n, fn in self.tools.items()])
        self.runner = InMemoryRunner(app=App(name="kit", root_agent=agent, plugins=[HookregPlugin(self.registry)]))

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        prompt = f"{prompt} #{next(_IDS)}"  # each run's own script
        self.model.scripts[prompt] = answers
        session = await self.runner.session_service.create_session(app_name="kit", user_id="u")
        config = RunConfig(streaming_mode=StreamingMode.SSE if streamed else StreamingMode.NONE)
        messages: dict[str, str] = {}
        output = ""
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        try:
            async for event in self.runner.run_async(
                user_id="u", session_id=session.id, new_message=message, run_config=config
            ):
                for part in event.content.parts or () if event.content else ():
                    if part.function_response:
                        response = part.function_response.response or {}
                        shown = response["result"] if set(response) == {"result"} else response
                        messages[part.function_response.id or ""] = present(shown)
                    elif part.text and not event.partial:
                        output = part.text
        except RuntimeError as exc:  # ADK wraps what a plugin raises; a StopRun is its cause
            if isinstance(exc.__cause__, StopRun):
                raise exc.__cause__ from None
            raise
        return RunReport(tool_messages=messages, output=output)


class AdkFramework:
    """Google ADK for the run-contract kit."""

    name = "google-adk"
    streams = True
    stop_raises = True
    limits: Mapping[str, str] = {
        "non_object_arguments": "google.genai types a function call's args as a JSON object",
        "malformed_arguments": "google.genai parses the model's arguments before ADK sees them",
    }

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> AdkWiring:
        return AdkWiring(registry, tools)


FRAMEWORK = AdkFramework()
