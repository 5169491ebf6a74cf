"""Tests for hookreg.adapters.langchain: a real LangChain v1 agent loop, offline, driven by a HookRegistry."""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import json
import re
import runpy
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.chat_models import generate_from_stream
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from hookreg import (
    AsyncHookError,
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
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PostToolCallContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    ReasoningDeltaContext,
    RequestPatch,
    StopContext,
    StopRun,
    TransformToolResultContext,
    TurnAction,
    UserPromptSubmitContext,
)
from hookreg._lifecycle import STOPPED_NOTICE
from hookreg.adapters.langchain import HookregMiddleware
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

# The echo tool's arguments as JSON schema: LangChain then passes the tool exactly what the model sent.
ECHO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "prefix": {"type": "string"}, "suffix": {"type": "string"}},
    "required": ["text"],
}


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, usable by create_agent (which binds tools)."""

    def bind_tools(self, tools: Sequence[object], **kwargs: object) -> ScriptedChatModel:
        """Return the model itself: its answers are scripted."""
        return self


def tool_call(args: Mapping[str, object]) -> AIMessage:
    """A model answer that calls echo once with `args`."""
    return AIMessage(content="", tool_calls=[{"name": TOOL_NAME, "args": dict(args), "id": "call-1"}])


def make_agent(registry: HookRegistry, tool: Callable[..., str], answers: Sequence[AIMessage]) -> Any:
    """An agent with one echo tool whose body calls `tool`, a scripted model, and the hookreg middleware."""

    def run_echo(**kwargs: object) -> str:
        return tool(**kwargs)

    echo = StructuredTool.from_function(
        func=run_echo,
        name=TOOL_NAME,
        description="Echo text between a prefix and a suffix.",
        args_schema=ECHO_SCHEMA,
    )
    model = ScriptedChatModel(messages=iter(answers))
    return create_agent(model, tools=[echo], middleware=[HookregMiddleware(registry)])


def run_agent(
    registry: HookRegistry,
    tool: Callable[..., str],
    answers: Sequence[AIMessage],
    *,
    asynchronous: bool = False,
    prompt: str = "echo something",
) -> list[BaseMessage]:
    """Run the agent once (invoke or ainvoke) and return its final messages."""
    agent = make_agent(registry, tool, answers)
    state = {"messages": [HumanMessage(content=prompt)]}
    out = asyncio.run(agent.ainvoke(state)) if asynchronous else agent.invoke(state)
    return list(out["messages"])


def tool_output(messages: Sequence[BaseMessage]) -> str:
    """The text of the one echo ToolMessage the model received."""
    outputs = [m.text for m in messages if isinstance(m, ToolMessage)]
    assert len(outputs) == 1, messages
    return outputs[0]


def run_flow(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> str:
    """Run a LangChain agent once with invoke() and report what the model saw."""
    messages = run_agent(registry, tool, [tool_call(args), AIMessage(content="done")])
    return tool_output(messages)


def arun_flow(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> str:
    """Run a LangChain agent once with ainvoke() and report what the model saw."""
    messages = run_agent(registry, tool, [tool_call(args), AIMessage(content="done")], asynchronous=True)
    return tool_output(messages)


def test_async_hooks_run_under_ainvoke() -> None:
    """Async gate and result hooks run in ainvoke(): the gate sees the call and the model sees the rewrite."""
    registry, tool, gated = HookRegistry(), RecordingTool(), []

    @registry.pre_tool_call_decide
    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx.call_id)
        return HookResult.allow()

    @registry.transform_tool_result
    async def shout(ctx: TransformToolResultContext) -> str:
        return ctx.presentation.upper()

    assert arun_flow(registry, tool, {"text": "hi"}) == "HI"
    assert gated == ["call-1"]


def test_async_hook_under_invoke_is_refused() -> None:
    """An async hook reached from the sync invoke() path raises AsyncHookError naming the a-method."""
    registry = HookRegistry()

    @registry.pre_tool_call_decide
    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    with pytest.raises(AsyncHookError, match="aresolve_tool_call"):
        run_flow(registry, RecordingTool(), {"text": "hi"})


def test_result_rewrite_and_observed_result() -> None:
    """transform_tool_result rewrites what the model sees; post_tool_call gets it and the raw result."""
    registry, seen = HookRegistry(), list[object]()
    registry.transform_tool_result(lambda ctx: f"<{ctx.presentation}>")
    registry.post_tool_call(seen.append)
    assert run_flow(registry, RecordingTool(), {"text": "hi"}) == "<hi>"
    [post] = seen
    assert isinstance(post, PostToolCallContext)
    assert (post.result, post.raw_result, post.metadata["status"], post.run.turn) == ("<hi>", "hi", "success", 1)


def test_tool_error_without_on_tool_error_propagates() -> None:
    """Without on_tool_error hooks a failing tool raises out of invoke(), as LangChain does, and is observed."""
    registry, failures = HookRegistry(), list[object]()
    registry.post_tool_call_failure(failures.append)
    with pytest.raises(RuntimeError, match="echo failed"):
        run_flow(registry, RecordingTool(), {"text": "fail"})
    assert len(failures) == 1


def test_session_and_turn_points_fire_in_order() -> None:
    """A run fires session start, prompt gate, turns and session end, each once per model call, in order."""
    registry, events = HookRegistry(), list[tuple[object, ...]]()

    def note(*event: object) -> None:
        events.append(event)

    def allow(*event: object) -> HookResult:
        events.append(event)
        return HookResult.allow()

    registry.on_session_start(lambda ctx: note("start", ctx.goal))
    registry.user_prompt_submit(lambda ctx: allow("prompt", ctx.content))
    registry.pre_turn(lambda ctx: allow("pre_turn", ctx.turn))
    registry.post_turn(lambda ctx: note("post_turn", ctx.response_text))
    registry.stop(lambda ctx: allow("stop", ctx.response_text))
    registry.on_session_end(lambda ctx: note("end", ctx.outcome.status, ctx.outcome.turns))
    run_agent(registry, RecordingTool(), [tool_call({"text": "hi"}), AIMessage(content="done")], prompt="say hi")
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


def test_context_types_reach_hooks() -> None:
    """Run hooks receive hookreg's own context classes, sharing one run (and scratchpad) across points."""
    registry, contexts = HookRegistry(), list[Any]()

    def allow(ctx: object) -> HookResult:
        contexts.append(ctx)
        return HookResult.allow()

    def carry_on(ctx: ModelTurnFinishedContext) -> TurnAction:
        contexts.append(ctx)
        return TurnAction.continue_run()

    for point in ("on_session_start", "on_session_end", "post_turn"):
        registry.register(point, contexts.append)
    for point in ("user_prompt_submit", "pre_turn", "stop"):
        registry.register(point, allow)
    registry.model_turn_finished(carry_on)
    run_agent(registry, RecordingTool(), [AIMessage(content="done")])
    assert {type(ctx) for ctx in contexts} == {
        OnSessionStartContext,
        OnSessionEndContext,
        PostTurnContext,
        UserPromptSubmitContext,
        PreTurnContext,
        StopContext,
        ModelTurnFinishedContext,
    }
    assert len({id(ctx.run.scratchpad) for ctx in contexts}) == 1


def test_prompt_deny_ends_the_run_with_its_reason() -> None:
    """A user_prompt_submit deny stops the run before any model call: StopRun with its reason, session stopped."""
    registry, turns, ends = HookRegistry(), list[object](), list[OnSessionEndContext]()
    registry.user_prompt_submit(lambda ctx: HookResult.deny("prompts about echo are closed"))
    registry.post_turn(turns.append)
    registry.on_session_end(ends.append)
    with pytest.raises(StopRun, match="prompts about echo are closed"):
        run_agent(registry, RecordingTool(), [AIMessage(content="never")])
    assert turns == []
    assert [(e.outcome.status, e.outcome.turns) for e in ends] == [("stopped", 0)]


def test_pre_turn_deny_ends_the_run() -> None:
    """A pre_turn deny on the second turn stops the run (StopRun) before the model is called again."""
    registry, tool, ends = HookRegistry(), RecordingTool(), list[OnSessionEndContext]()
    registry.pre_turn(lambda ctx: HookResult.deny("turn budget spent") if ctx.turn > 1 else HookResult.allow())
    registry.on_session_end(ends.append)
    with pytest.raises(StopRun, match="turn budget spent"):
        run_agent(registry, tool, [tool_call({"text": "hi"}), AIMessage(content="never")])
    assert tool.calls == [{"text": "hi"}]
    assert [(e.outcome.status, e.outcome.reason, e.outcome.turns) for e in ends] == [
        ("stopped", "turn budget spent", 1)
    ]


def test_stop_deny_keeps_the_agent_going() -> None:
    """A stop deny feeds its reason back as a user message and the model answers again."""
    registry, counts = HookRegistry(), []

    @registry.stop
    def once_more(ctx: StopContext) -> HookResult:
        counts.append(ctx.continuation_count)
        return HookResult.deny("check your answer") if ctx.continuation_count == 0 else HookResult.allow()

    messages = run_agent(registry, RecordingTool(), [AIMessage(content="first"), AIMessage(content="second")])
    assert [m.text for m in messages] == ["echo something", "first", "check your answer", "second"]
    assert counts == [0, 1]


def test_pre_model_call_shows_the_latest_user_message_as_the_prompt() -> None:
    """After a stop deny, pre_model_call's prompt is the feedback the model answers, as pre_turn's is."""
    registry, prompts = HookRegistry(), []
    registry.stop(lambda ctx: HookResult.deny("check it") if not ctx.continuation_count else HookResult.allow())

    @registry.pre_turn
    def turn(ctx: PreTurnContext) -> HookResult:
        prompts.append(("pre_turn", ctx.prompt))
        return HookResult.allow()

    @registry.pre_model_call
    def call(ctx: PreModelCallContext) -> None:
        prompts.append(("pre_model_call", ctx.prompt))

    run_agent(registry, RecordingTool(), [AIMessage(content="first"), AIMessage(content="second")])
    assert prompts == [
        ("pre_turn", "echo something"),
        ("pre_model_call", "echo something"),
        ("pre_turn", "check it"),
        ("pre_model_call", "check it"),
    ]


def test_model_turn_finished_repeat_and_feedback() -> None:
    """repeat() drops the answer and asks again; retry_with_feedback keeps it and adds the feedback."""
    actions = iter([TurnAction.repeat(), TurnAction.retry_with_feedback("be brief")])
    registry = HookRegistry()
    registry.model_turn_finished(lambda ctx: next(actions, TurnAction.continue_run()))
    answers = [AIMessage(content="dropped"), AIMessage(content="kept"), AIMessage(content="final")]
    messages = run_agent(registry, RecordingTool(), answers, asynchronous=True)
    assert [m.text for m in messages] == ["echo something", "kept", "be brief", "final"]


def test_retrying_an_answer_that_calls_tools_is_refused_before_any_tool_runs() -> None:
    """A repeat asked of an answer with tool calls raises HookValueError and the tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()
    registry.register(HookPoint.MODEL_TURN_FINISHED, lambda ctx: TurnAction.repeat(), name="again")
    with pytest.raises(HookValueError, match=r"Cannot retry turn 1 as hook 'again' asked: .*\['echo'\]"):
        run_agent(registry, tool, [tool_call({"text": "hi"}), AIMessage(content="done")])
    assert tool.calls == []


def test_stop_run_from_a_gate_leaves_invoke() -> None:
    """A StopRun raised by a gate propagates out of invoke() as the same object, and the tool never runs."""
    registry, tool = HookRegistry(), RecordingTool()

    @registry.pre_tool_call_decide(name="halt")
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise StopRun("enough")

    with pytest.raises(StopRun, match="enough") as raised:
        run_flow(registry, tool, {"text": "hi"})
    assert (raised.value.hook, tool.calls) == ("halt", [])


def test_middleware_refuses_a_non_registry() -> None:
    """Building the middleware from something else than a HookRegistry names the mistake."""
    with pytest.raises(TypeError, match="Cannot build HookregMiddleware from 'hooks': it is not a HookRegistry"):
        HookregMiddleware("hooks")  # type: ignore[arg-type]  # the mistake under test


def test_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/adapter_langchain.py runs offline and shows the denial, the rewritten result and the repair."""
    runpy.run_path(str(ROOT / "examples" / "adapter_langchain.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "denied: rm -rf is not allowed" in out
    assert "tool output seen by the model: ls -la (exit 0)" in out
    assert "tool output seen by the model: pwd (exit 0)" in out


# --- model request points and invalid tool calls -----------------------------------


class RecordingChatModel(GenericFakeChatModel):
    """A scripted chat model recording each call's messages and bound settings (tool names included)."""

    calls: list[tuple[list[BaseMessage], dict[str, Any]]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[object], **kwargs: Any) -> Runnable[Any, AIMessage]:
        """Bind the offered tools' names with the settings, so the next call records them."""
        return self.bind(tools=[getattr(t, "name", t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append((list(messages), kwargs))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def answering(*texts: str) -> RecordingChatModel:
    """A recording model whose answers are `texts`."""
    return RecordingChatModel(messages=iter([AIMessage(content=t) for t in texts]))


def pydantic_echo(tool: RecordingTool) -> StructuredTool:
    """The echo tool with a schema inferred from its signature (so LangChain validates its args)."""

    def echo(text: str) -> str:
        """Echo the text."""
        return tool(text=text)

    return StructuredTool.from_function(func=echo, name=TOOL_NAME)


def invoke(agent: Any, *, asynchronous: bool = False, config: RunnableConfig | None = None) -> list[BaseMessage]:
    """Run `agent` on one prompt and return its final messages."""
    state = {"messages": [HumanMessage(content="echo something")]}
    out = asyncio.run(agent.ainvoke(state, config)) if asynchronous else agent.invoke(state, config)
    return list(out["messages"])


@pytest.mark.parametrize("asynchronous", [False, True])
def test_hooks_registered_after_the_agent_was_built_run(asynchronous: bool) -> None:
    """An agent built on an empty registry runs the hooks registered later: patch, turn and tool gate alike."""
    registry, tool, seen = HookRegistry(), RecordingTool(), list[str]()
    model = RecordingChatModel(messages=iter([tool_call({"text": "hi"}), AIMessage(content="done")] * 2))
    agent = create_agent(model, tools=[pydantic_echo(tool)], middleware=[HookregMiddleware(registry)])
    invoke(agent, asynchronous=asynchronous)
    assert tool.calls == [{"text": "hi"}]

    registry.pre_model_call(lambda ctx: RequestPatch(temperature=0.5))
    registry.post_turn(lambda ctx: seen.append(ctx.response_text))
    registry.pre_tool_call_decide(lambda ctx: HookResult.deny("not now"))
    messages = invoke(agent, asynchronous=asynchronous)
    assert (tool_output(messages), tool.calls, seen) == ("not now", [{"text": "hi"}], ["", "done"])
    assert all(settings["temperature"] == 0.5 for _, settings in model.calls[2:])


@pytest.mark.parametrize("asynchronous", [False, True])
def test_pre_model_call_patch_reaches_the_request(asynchronous: bool) -> None:
    """The merged patch sets the system prompt, tools offered, tool choice and model settings the model gets."""
    registry, seen = HookRegistry(), list[PreModelCallContext]()

    @registry.pre_model_call
    def context(ctx: PreModelCallContext) -> RequestPatch:
        seen.append(ctx)
        return RequestPatch(extra_context=("Be terse.",), temperature=0.2, additional_params={"top_p": 0.5})

    narrowed = RequestPatch(active_tools=frozenset({"other"}), tool_choice="none", max_tokens=50)
    if asynchronous:

        async def no_tools(ctx: PreModelCallContext) -> RequestPatch:
            return narrowed

        registry.pre_model_call(no_tools)
    else:
        registry.pre_model_call(lambda ctx: narrowed)
    model = answering("done")
    agent = create_agent(
        model, tools=[pydantic_echo(RecordingTool())], system_prompt="Base.", middleware=[HookregMiddleware(registry)]
    )
    assert invoke(agent, asynchronous=asynchronous)[-1].text == "done"
    [(messages, settings)] = model.calls
    assert isinstance(messages[0], SystemMessage)
    assert messages[0].text == "Base.\n\nBe terse."
    assert settings == {"temperature": 0.2, "top_p": 0.5, "max_tokens": 50}  # no tools left: nothing bound
    [ctx] = seen
    assert (ctx.turn, ctx.prompt, ctx.patch.active_tools) == (1, "echo something", frozenset({TOOL_NAME}))
    assert [(m.role, m.content) for m in ctx.history] == [("human", "echo something")]


def test_preamble_replaces_the_system_prompt_and_tool_choice_is_bound() -> None:
    """A patch's preamble replaces the agent's system prompt; tool_choice goes to bind_tools with the tools kept."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(preamble="You are careful.", tool_choice="auto"))
    model = answering("done")
    agent = create_agent(
        model, tools=[pydantic_echo(RecordingTool())], system_prompt="Base.", middleware=[HookregMiddleware(registry)]
    )
    invoke(agent)
    [(messages, settings)] = model.calls
    assert messages[0].text == "You are careful."
    assert settings == {"tools": [TOOL_NAME], "tool_choice": "auto"}


@pytest.mark.parametrize("asynchronous", [False, True])
def test_model_select_swaps_the_chat_model(asynchronous: bool) -> None:
    """model_select picks a chat model by name from models=; the agent's model is the default by its key."""
    registry, defaults = HookRegistry(), list[str]()

    @registry.model_select
    def fast(ctx: ModelSelectContext) -> str:
        defaults.append(ctx.selected_model)
        return "fast"

    main, quick = answering("slow answer"), answering("fast answer")
    middleware = HookregMiddleware(registry, models={"main": main, "fast": quick})
    agent = create_agent(main, tools=[pydantic_echo(RecordingTool())], middleware=[middleware])
    assert invoke(agent, asynchronous=asynchronous)[-1].text == "fast answer"
    assert (defaults, main.calls, len(quick.calls)) == (["main"], [], 1)


def test_model_select_of_an_unknown_name_is_refused() -> None:
    """A model_select pick that names no chat model in models= raises HookValueError naming the fix."""
    registry = HookRegistry()
    registry.model_select(lambda ctx: "huge")
    agent = create_agent(answering("x"), tools=[], middleware=[HookregMiddleware(registry)])
    with pytest.raises(HookValueError, match=r"Cannot call model 'huge'.*models=\{'huge': chat_model\}"):
        invoke(agent)


def test_models_must_be_chat_models() -> None:
    """models= with something other than a chat model is refused where the middleware is built."""
    with pytest.raises(HookTypeError, match="Cannot build HookregMiddleware with model 'fast'"):
        HookregMiddleware(HookRegistry(), models={"fast": "gpt-4o-mini"})  # type: ignore[dict-item]


def calling(name: str, args: Mapping[str, object]) -> RecordingChatModel:
    """A recording model that calls tool `name` with `args` once, then answers "done"."""
    call = AIMessage(content="", tool_calls=[{"name": name, "args": dict(args), "id": "call-1"}])
    return RecordingChatModel(messages=iter([call, AIMessage(content="done")]))


@pytest.mark.parametrize("asynchronous", [False, True])
def test_invalid_tool_call_repairs_an_unknown_tool(asynchronous: bool) -> None:
    """A call to an unknown tool reaches invalid_tool_call; repair() runs the named tool through the gate."""
    registry, tool, seen, gated = HookRegistry(), RecordingTool(), list[InvalidToolCallContext](), list[str]()

    @registry.invalid_tool_call
    def fix_typo(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        seen.append(ctx)
        return InvalidToolCallAction.repair(TOOL_NAME)

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx.tool_name)
        return HookResult.allow()

    agent = create_agent(
        calling("ecko", {"text": "hi"}), tools=[pydantic_echo(tool)], middleware=[HookregMiddleware(registry)]
    )
    messages = invoke(agent, asynchronous=asynchronous)
    assert tool_output(messages) == "hi"
    assert (tool.calls, gated) == ([{"text": "hi"}], [TOOL_NAME])
    [ctx] = seen
    assert (ctx.tool_name, ctx.available_tools) == ("ecko", (TOOL_NAME,))
    assert "unknown tool 'ecko'" in ctx.error


@pytest.mark.parametrize(
    ("action", "shown"),
    [
        (InvalidToolCallAction.retry("Call echo with a text."), "Call echo with a text."),
        (InvalidToolCallAction.skip("skipped"), "skipped"),
        (InvalidToolCallAction.fail(), "bad arguments for 'echo': text: Field required"),
    ],
    ids=["retry", "skip", "fail"],
)
def test_invalid_args_are_answered_without_running_the_tool(action: InvalidToolCallAction, shown: str) -> None:
    """Args failing the tool's schema reach invalid_tool_call; its answer is an error ToolMessage, the tool unrun."""
    registry, tool, errors = HookRegistry(), RecordingTool(), list[str]()

    @registry.invalid_tool_call
    def answer(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        errors.append(ctx.error)
        return action

    agent = create_agent(
        calling(TOOL_NAME, {"txt": "hi"}), tools=[pydantic_echo(tool)], middleware=[HookregMiddleware(registry)]
    )
    [message] = [m for m in invoke(agent) if isinstance(m, ToolMessage)]
    assert shown in message.text
    assert message.status == "error"
    assert tool.calls == []
    [error] = errors
    assert "text: Field required" in error


class StreamingChatModel(BaseChatModel):
    """A chat model that streams scripted chunks (one list per answer), reporting each as a new token."""

    answers: list[list[AIMessageChunk]]

    @property
    def _llm_type(self) -> str:
        return "scripted-stream"

    def bind_tools(self, tools: Sequence[object], **kwargs: Any) -> StreamingChatModel:
        """Return the model itself: its answers are scripted."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return generate_from_stream(self._stream(messages, stop, run_manager, **kwargs))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for message in self.answers.pop(0):
            chunk = ChatGenerationChunk(message=message)
            if run_manager is not None:
                run_manager.on_llm_new_token(message.text, chunk=chunk)
            yield chunk


def streamed_answers() -> list[list[AIMessageChunk]]:
    """An echo call streamed in two pieces, then reasoning and a two-piece answer."""
    return [
        [
            AIMessageChunk(
                content="", tool_call_chunks=[tool_call_chunk(name=TOOL_NAME, args='{"text":', id="c1", index=0)]
            ),
            AIMessageChunk(
                content="", tool_call_chunks=[tool_call_chunk(args=' "hi"}', index=0)], chunk_position="last"
            ),
        ],
        [
            AIMessageChunk(content=[{"type": "reasoning", "reasoning": "think"}]),
            AIMessageChunk(content=[{"type": "text", "text": "do"}]),
            AIMessageChunk(content=[{"type": "text", "text": "ne"}], chunk_position="last"),
        ],
    ]


EXPECTED_DELTAS = [
    ("tool", '{"text":', f"c1 {TOOL_NAME}"),
    ("tool", ' "hi"}', f"c1 {TOOL_NAME}"),
    ("turn", "", ""),
    ("reasoning", "think", "think"),
    ("text", "do", "do"),
    ("text", "ne", "done"),
    ("turn", "", ""),
]


def delta_registry(seen: list[tuple[str, str, str]], *, asynchronous: bool) -> HookRegistry:
    """A registry recording every delta (and each finished turn) in `seen`."""
    registry = HookRegistry()
    registry.text_delta(lambda ctx: seen.append(("text", ctx.delta, ctx.aggregated)))
    registry.tool_call_delta(lambda ctx: seen.append(("tool", ctx.delta, f"{ctx.call_id} {ctx.tool_name}")))
    registry.post_turn(lambda ctx: seen.append(("turn", "", "")))
    if asynchronous:

        @registry.reasoning_delta
        async def reasoning(ctx: ReasoningDeltaContext) -> None:
            seen.append(("reasoning", ctx.delta, ctx.aggregated))

    else:
        registry.reasoning_delta(lambda ctx: seen.append(("reasoning", ctx.delta, ctx.aggregated)))
    return registry


def test_delta_points_fire_while_the_agent_streams() -> None:
    """stream(stream_mode="messages") makes the model stream; each chunk's text, reasoning or args is a delta."""
    seen: list[tuple[str, str, str]] = []
    tool = RecordingTool()
    model = StreamingChatModel(answers=streamed_answers())
    agent = create_agent(
        model, tools=[pydantic_echo(tool)], middleware=[HookregMiddleware(delta_registry(seen, asynchronous=False))]
    )
    list(agent.stream({"messages": [HumanMessage(content="echo hi")]}, stream_mode="messages"))
    assert seen == EXPECTED_DELTAS
    assert tool.calls == [{"text": "hi"}]


def test_async_delta_hooks_fire_under_astream() -> None:
    """Under astream() the delta points dispatch with the a-methods, so async delta hooks run."""
    seen: list[tuple[str, str, str]] = []
    model = StreamingChatModel(answers=streamed_answers())
    registry = delta_registry(seen, asynchronous=True)
    agent = create_agent(model, tools=[pydantic_echo(RecordingTool())], middleware=[HookregMiddleware(registry)])

    async def consume() -> None:
        async for _ in agent.astream({"messages": [HumanMessage(content="echo hi")]}, stream_mode="messages"):
            pass

    asyncio.run(consume())
    assert seen == EXPECTED_DELTAS


# --- the run contract --------------------------------------------------------------


@dataclass
class Script:
    """One run's scripted model answers, played in order."""

    answers: tuple[Answer, ...]
    played: int = 0
    read: dict[str, str] = field(default_factory=dict)  # call id -> the tool message the model was sent

    def next(self, messages: Sequence[BaseMessage] = ()) -> Answer:
        """The next answer (raising its error, if it has one, after the hang check)."""
        self.read.update({m.tool_call_id: m.text for m in messages if isinstance(m, ToolMessage)})
        answer = self.answers[self.played]
        self.played += 1
        return answer


SCRIPT: ContextVar[Script] = ContextVar("SCRIPT")
"""The answers of the run in progress: each run (each asyncio task) sets its own."""


def kit_message(answer: Answer) -> AIMessage:
    """`answer` as LangChain's AIMessage: parsed args as tool_calls, raw argument text as invalid_tool_calls."""
    calls = [c for c in answer.calls if not isinstance(c.args, str)]
    invalid = [c for c in answer.calls if isinstance(c.args, str)]
    return AIMessage(
        content=answer.text,
        tool_calls=[{"name": c.tool_name, "args": dict(c.args), "id": c.call_id} for c in calls],  # type: ignore[arg-type]  # str args are in invalid
        invalid_tool_calls=[
            {"name": c.tool_name, "args": c.args, "id": c.call_id, "error": None, "type": "invalid_tool_call"}
            for c in invalid
        ],
        response_metadata=kit_metadata(answer),
    )


def kit_metadata(answer: Answer) -> dict[str, str]:
    """The provider metadata of `answer`: an OpenAI-style finish reason and the model's name."""
    reason = "length" if answer.truncated else ("tool_calls" if answer.calls else "stop")
    return {"finish_reason": reason, "model_name": "kit-model"}


def kit_chunks(answer: Answer) -> list[ChatGenerationChunk]:
    """`answer` streamed: its text, one chunk per tool call (raw argument text as sent), then the metadata."""
    chunks = [AIMessageChunk(content=answer.text)] if answer.text else []
    for index, call in enumerate(answer.calls):
        args = call.args if isinstance(call.args, str) else json.dumps(dict(call.args))
        piece = tool_call_chunk(name=call.tool_name, args=args, id=call.call_id, index=index)
        chunks.append(AIMessageChunk(content="", tool_call_chunks=[piece]))
    chunks.append(AIMessageChunk(content="", response_metadata=kit_metadata(answer), chunk_position="last"))
    return [ChatGenerationChunk(message=chunk) for chunk in chunks]


class KitChatModel(GenericFakeChatModel):
    """LangChain's fake chat model playing the kit's answers of the run in progress (``SCRIPT``)."""

    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: iter(()))

    def bind_tools(self, tools: Sequence[object], **kwargs: object) -> KitChatModel:
        """Return the model itself: its answers are scripted."""
        return self

    @staticmethod
    async def _next(messages: Sequence[BaseMessage]) -> Answer:
        answer = SCRIPT.get().next(messages)
        if answer.hang:
            await asyncio.Event().wait()
        if answer.error is not None:
            raise answer.error
        return answer

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        answer = SCRIPT.get().next(messages)
        if answer.error is not None:
            raise answer.error
        return ChatResult(generations=[ChatGeneration(message=kit_message(answer))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=kit_message(await self._next(messages)))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in kit_chunks(await self._next(messages)):
            if run_manager is not None:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def kit_tool(name: str, fn: Callable[..., str]) -> StructuredTool:
    """A LangChain tool with echo's signature (so LangChain checks its args) calling `fn`.

    A `ReportedError` becomes a ``ToolException`` under ``handle_tool_error``: LangChain's own error result.
    """

    def run(text: str, prefix: str = "", suffix: str = "") -> str:
        try:
            return fn(text=text, prefix=prefix, suffix=suffix)
        except ReportedError as error:
            raise ToolException(str(error)) from error

    return StructuredTool.from_function(func=run, name=name, description=f"The {name} tool.", handle_tool_error=True)


@dataclass
class LangChainWiring:
    """One compiled agent with the hookreg middleware, run by the kit as often as it likes."""

    agent: Any

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        """Run the agent on `prompt` (ainvoke, or astream with stream_mode="messages"), the model playing `answers`."""
        SCRIPT.set(Script(answers))
        state = {"messages": [HumanMessage(content=prompt)]}
        if streamed:
            final: dict[str, Any] = {}
            async for mode, item in self.agent.astream(state, stream_mode=["messages", "values"]):
                if mode == "values":
                    final = item
        else:
            final = await self.agent.ainvoke(state)
        return report(final["messages"], SCRIPT.get().read)


def report(messages: Sequence[BaseMessage], read: Mapping[str, str] | None = None) -> RunReport:
    """What the model read for each call (as sent to it, else as the state keeps it), and the last answer.

    LangChain answers a malformed call in the request it sends next, not in the state.
    """
    tools = {m.tool_call_id: m.text for m in messages if isinstance(m, ToolMessage)} | dict(read or {})
    answers = [m.text for m in messages if isinstance(m, AIMessage)]
    return RunReport(tool_messages=tools, output=answers[-1] if answers else "")


class LangChainFramework:
    """LangChain v1's create_agent with HookregMiddleware, as the run-contract kit drives it."""

    name = "langchain"
    streams = True
    stop_raises = True
    # DESIGN §8: with every invalid_tool_call hook passing (the kit's recorder), LangChain's own handling applies,
    # and LangChain leaves a malformed call (invalid_tool_calls, or streamed JSON it completed and runs) unanswered
    # until the model's next request; test_langchain_transparency shows the conversation is LangChain's.
    limits: Mapping[str, str] = {
        "non_object_arguments": "LangChain's own handling of a call whose arguments are not an object applies",
        "malformed_arguments": "LangChain's own handling of malformed argument text applies",
    }

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> LangChainWiring:
        """Build the agent once: the kit's tools, a scripted model, the hookreg middleware and its tool gate."""
        agent = create_agent(
            KitChatModel(),
            tools=[kit_tool(name, fn) for name, fn in tools.items()],
            middleware=HookregMiddleware(registry).around([]),
        )
        return LangChainWiring(agent)


FRAMEWORK = LangChainFramework()


@pytest.mark.parametrize(
    ("scenario", "streamed"),
    run_contract_cases(FRAMEWORK),
    ids=lambda v: v.name if isinstance(v, RunScenario) else ("streamed" if v else "blocking"),
)
def test_run_contract(scenario: RunScenario, streamed: bool) -> None:
    """The LangChain adapter honours every row of the run contract, with ainvoke and with astream."""
    scenario.check(FRAMEWORK, streamed=streamed)


# --- issue-12 defects, one test each -------------------------------------------------


_T = TypeVar("_T")


def then(record: Callable[[Any], object], result: _T) -> Callable[[Any], _T]:
    """A hook that passes its context to `record`, then returns `result`."""

    def hook(ctx: Any) -> _T:
        record(ctx)
        return result

    return hook


def failing_echo(error: Exception, *, handled: bool) -> StructuredTool:
    """An echo tool that raises `error` (LangChain turns a ToolException into an error result when `handled`)."""

    def echo(text: str) -> str:
        """Echo the text."""
        raise error

    return StructuredTool.from_function(func=echo, name=TOOL_NAME, handle_tool_error=handled)


def outcome_registry(events: list[str]) -> HookRegistry:
    """A registry recording the tool outcome points; on_tool_error rewrites the error text."""
    registry = HookRegistry()
    registry.transform_tool_result(lambda ctx: events.append("transform_tool_result"))
    registry.post_tool_call(lambda ctx: events.append("post_tool_call"))
    registry.post_tool_call_failure(lambda ctx: events.append(f"post_tool_call_failure {type(ctx.error).__name__}"))

    @registry.on_tool_error
    def explain(ctx: OnToolErrorContext) -> str:
        events.append(f"on_tool_error {ctx.kind.value}")
        return f"hook read: {ctx.message}"

    return registry


@pytest.mark.parametrize("asynchronous", [False, True])
def test_tool_exception_under_handle_tool_error_is_a_failure(asynchronous: bool) -> None:
    """A ToolException LangChain turns into an error result fires the failure points, never the result points."""
    events: list[str] = []
    agent = create_agent(
        calling(TOOL_NAME, {"text": "hi"}),
        tools=[failing_echo(ToolException("disk full"), handled=True)],
        middleware=[HookregMiddleware(outcome_registry(events))],
    )
    [message] = [m for m in invoke(agent, asynchronous=asynchronous) if isinstance(m, ToolMessage)]
    assert events == ["post_tool_call_failure ToolException", "on_tool_error exception"]
    assert (message.text, message.status) == ("hook read: disk full", "error")


def test_arguments_failing_the_schema_fail_before_the_tool_runs() -> None:
    """Args failing the tool's schema go to invalid_tool_call and fail as INVALID_ARGS; no result point fires."""
    events: list[str] = []
    registry = outcome_registry(events)
    registry.invalid_tool_call(lambda ctx: events.append(f"invalid_tool_call {ctx.error}"))
    tool = RecordingTool()
    agent = create_agent(
        calling(TOOL_NAME, {"txt": "hi"}), tools=[pydantic_echo(tool)], middleware=[HookregMiddleware(registry)]
    )
    [message] = [m for m in invoke(agent) if isinstance(m, ToolMessage)]
    assert tool.calls == []
    assert events == [
        "invalid_tool_call bad arguments for 'echo': text: Field required",
        "post_tool_call_failure TypeError",
        "on_tool_error invalid_args",
    ]
    assert message.text.startswith("hook read: ")


def test_tool_not_offered_this_turn_never_runs() -> None:
    """A call to a tool that active_tools took out of this turn's request goes to invalid_tool_call, unrun."""
    registry, tool, invalid = HookRegistry(), RecordingTool(), list[InvalidToolCallContext]()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset({"other"})))
    registry.invalid_tool_call(invalid.append)
    agent = create_agent(
        calling(TOOL_NAME, {"text": "hi"}), tools=[pydantic_echo(tool)], middleware=[HookregMiddleware(registry)]
    )
    [message] = [m for m in invoke(agent) if isinstance(m, ToolMessage)]
    assert tool.calls == []
    [ctx] = invalid
    assert "was not offered for this turn" in ctx.error
    assert message.status == "error"


def model_failing(error: Exception) -> RecordingChatModel:
    """A recording model whose first call raises `error`."""

    class Failing(RecordingChatModel):
        def _generate(self, *args: Any, **kwargs: Any) -> ChatResult:
            raise error

    return Failing(messages=iter([]))


@pytest.mark.parametrize("failure", ["model", "tool"])
def test_a_failed_run_ends_its_session_once(failure: str) -> None:
    """A model error, or a tool error nobody handles, ends the session 'failed' once and reaches the caller."""
    registry, ends = HookRegistry(), list[OnSessionEndContext]()
    registry.on_session_end(ends.append)
    error = RuntimeError("down")
    if failure == "model":
        agent = create_agent(model_failing(error), tools=[], middleware=[HookregMiddleware(registry)])
    else:
        tools = [failing_echo(error, handled=False)]
        agent = create_agent(calling(TOOL_NAME, {"text": "hi"}), tools=tools, middleware=[HookregMiddleware(registry)])
    with pytest.raises(RuntimeError, match="down"):
        invoke(agent)
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("failed", "RuntimeError: down")]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_stop_leaves_no_dangling_tool_call_on_the_thread(asynchronous: bool) -> None:
    """A StopRun from a gate reaches the caller as itself; the thread answers every call of the batch."""
    registry, tool, ends = HookRegistry(), RecordingTool(), list[OnSessionEndContext]()
    stop = StopRun("enough")

    @registry.pre_tool_call_decide
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise stop

    registry.on_session_end(ends.append)
    calls = [{"name": TOOL_NAME, "args": {"text": word}, "id": f"call-{word}"} for word in ("a", "b")]
    model = RecordingChatModel(messages=iter([AIMessage(content="", tool_calls=calls)]))
    agent = create_agent(
        model, tools=[pydantic_echo(tool)], middleware=[HookregMiddleware(registry)], checkpointer=InMemorySaver()
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    with pytest.raises(StopRun) as raised:
        invoke(agent, asynchronous=asynchronous, config=config)
    assert raised.value is stop
    assert tool.calls == []
    messages = agent.get_state(config).values["messages"]
    assert {m.tool_call_id: m.text for m in messages if isinstance(m, ToolMessage)} == {
        "call-a": STOPPED_NOTICE,
        "call-b": STOPPED_NOTICE,
    }
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "enough")]


def test_turns_restart_at_one_on_a_checkpointed_thread() -> None:
    """Each run on a checkpointed thread counts its turns from 1, though the thread keeps earlier messages.

    Both runs belong to the thread's session.
    """
    registry, turns = HookRegistry(), list[tuple[int, int]]()
    registry.pre_turn(then(lambda ctx: turns.append((ctx.turn, ctx.run.turn)), HookResult.allow()))
    sessions = list[str]()
    registry.on_session_start(lambda ctx: sessions.append(ctx.session_id))
    answers = [*calling(TOOL_NAME, {"text": "hi"}).messages, AIMessage(content="again")]
    agent = create_agent(
        RecordingChatModel(messages=iter(answers)),
        tools=[pydantic_echo(RecordingTool())],
        middleware=[HookregMiddleware(registry)],
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    invoke(agent, config=config)
    invoke(agent, config=config)
    assert turns == [(1, 1), (2, 2), (1, 1)]
    assert sessions == ["t", "t"]  # the thread is the session


@pytest.mark.parametrize("asynchronous", [False, True])
def test_concurrent_runs_on_one_agent_keep_their_own_turns(asynchronous: bool) -> None:
    """Two runs at once on one compiled agent (threads, or tasks) each count turns 1, 2 in their own run."""
    registry, turns = HookRegistry(), list[tuple[str, int]]()
    registry.pre_turn(then(lambda ctx: turns.append((ctx.run.run_id, ctx.turn)), HookResult.allow()))
    wiring = FRAMEWORK.wire(registry, {TOOL_NAME: RecordingTool(), "other": RecordingTool()})
    answers = (Answer(calls=(Call({"text": "hi"}),)), Answer(text="done"))

    async def both() -> None:
        runs = (wiring.run(answers, prompt=word, streamed=False) for word in ("left", "right"))
        if asynchronous:
            await asyncio.gather(*runs)
        else:
            await asyncio.gather(*(asyncio.to_thread(asyncio.run, run) for run in runs))

    asyncio.run(both())
    by_run: dict[str, list[int]] = {}
    for run_id, turn in turns:
        by_run.setdefault(run_id, []).append(turn)
    assert sorted(by_run.values()) == [[1, 2], [1, 2]]


@pytest.mark.parametrize("ask_at", ["user_prompt_submit", "pre_turn"])
def test_run_level_ask_goes_to_notification_then_on_interaction(ask_at: str) -> None:
    """An ask at user_prompt_submit or pre_turn fires notification, then on_interaction, whose allow goes on."""
    registry, events = HookRegistry(), list[str]()
    registry.register(ask_at, lambda ctx: HookResult.ask("go on?"))
    registry.notification(lambda ctx: events.append("notification"))
    registry.on_interaction(then(lambda ctx: events.append("on_interaction"), HookResult.allow()))
    messages = run_agent(registry, RecordingTool(), [AIMessage(content="done")])
    assert events == ["notification", "on_interaction"]
    assert messages[-1].text == "done"


def test_tool_ask_notifies_before_on_interaction() -> None:
    """A tool gate's ask fires notification before on_interaction; an approval runs the tool."""
    registry, events, tool = HookRegistry(), list[str](), RecordingTool()
    registry.pre_tool_call_decide(lambda ctx: HookResult.ask("may echo run?"))
    registry.notification(lambda ctx: events.append("notification"))
    registry.on_interaction(then(lambda ctx: events.append("on_interaction"), HookResult.allow()))
    assert run_flow(registry, tool, {"text": "hi"}) == "hi"
    assert events == ["notification", "on_interaction"]


def test_model_turn_finished_reports_finish_reason_id_and_model() -> None:
    """model_turn_finished gets the mapped finish reason with its raw spelling, the message id and model name."""
    registry, seen = HookRegistry(), list[ModelTurnFinishedContext]()
    registry.model_turn_finished(then(seen.append, TurnAction.continue_run()))
    answer = AIMessage(
        content="cut", id="msg-1", response_metadata={"stop_reason": "max_tokens", "model_name": "claude-x"}
    )
    run_agent(registry, RecordingTool(), [answer])
    [ctx] = seen
    assert (ctx.finish_reason, ctx.raw_finish_reason, ctx.truncated) == (FinishReason.LENGTH, "max_tokens", True)
    assert (ctx.message_id, ctx.model, ctx.turn) == ("msg-1", "claude-x", 1)


def test_a_reused_middleware_runs_every_gate_again() -> None:
    """One middleware object serving a second run starts a new session with its own run id and gates again."""
    registry, starts, prompts = HookRegistry(), list[OnSessionStartContext](), list[str]()
    registry.on_session_start(starts.append)
    registry.user_prompt_submit(then(lambda ctx: prompts.append(ctx.content), HookResult.allow()))
    middleware = HookregMiddleware(registry)
    agent = create_agent(answering("one", "two"), tools=[], middleware=[middleware])
    invoke(agent)
    invoke(agent)
    assert len(prompts) == 2
    assert len({s.run.run_id for s in starts}) == 2


def test_the_adapter_uses_no_private_framework_module() -> None:
    """The adapter imports only public LangChain and LangGraph modules (no langgraph.prebuilt.tool_node internals)."""
    source = (ROOT / "hookreg" / "adapters" / "langchain.py").read_text()
    imported = re.findall(r"^\s+from (lang\w*[\w.]*|pydantic) import", source, flags=re.MULTILINE)
    assert imported
    assert not [name for name in imported if "._" in name or name.startswith("_") or "tool_node" in name]


def test_too_old_langchain_is_refused_naming_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the adapter with a langchain older than its floor raises ImportError naming the version needed."""
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "1.4.9")
    monkeypatch.delitem(sys.modules, "hookreg.adapters.langchain")
    with pytest.raises(ImportError, match=r"langchain 1\.4\.9 is installed, but the adapter needs langchain>=1\.4\.10"):
        importlib.import_module("hookreg.adapters.langchain")


@pytest.mark.parametrize("point", ["pre_tool_call_decide", "model_turn_finished", "post_tool_call"])
def test_every_call_of_a_stopped_batch_is_answered(point: str) -> None:
    """A StopRun at a gate, the answer's judge or an observer answers each call: its result if it ran, else a notice."""
    registry, tool, ends = HookRegistry(), RecordingTool(), list[OnSessionEndContext]()
    stop = StopRun(f"stopped at {point}")

    def halt(ctx: object) -> None:
        raise stop

    registry.register(point, halt)
    registry.on_session_end(ends.append)
    calls = [{"name": TOOL_NAME, "args": {"text": word}, "id": f"call-{word}"} for word in ("a", "b")]
    model = RecordingChatModel(messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="never")]))
    middleware = HookregMiddleware(registry)
    agent = create_agent(model, tools=[pydantic_echo(tool)], middleware=[middleware], checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    with pytest.raises(StopRun) as raised:
        invoke(agent, config=config)
    assert raised.value is stop
    answered = {
        m.tool_call_id: m.text for m in agent.get_state(config).values["messages"] if isinstance(m, ToolMessage)
    }
    ran = {str(call["text"]) for call in tool.calls}
    assert answered == {f"call-{w}": (w if w in ran else STOPPED_NOTICE) for w in ("a", "b")}
    assert [e.outcome.status for e in ends] == ["stopped"]
    assert len(model.calls) == 1  # the model is never called after the stop
    assert middleware._runs == {}  # the run's state is gone with the run


def test_no_run_state_is_left_behind() -> None:
    """After completed, stopped and failed runs the middleware holds no run's state."""
    registry = HookRegistry()
    registry.pre_turn(
        lambda ctx: HookResult.deny("no second run") if ctx.run.session_id == "stop" else HookResult.allow()
    )
    middleware = HookregMiddleware(registry)
    answers = [*calling(TOOL_NAME, {"text": "hi"}).messages, AIMessage(content="done")]
    agent = create_agent(
        RecordingChatModel(messages=iter(answers)),
        tools=[failing_echo(RuntimeError("down"), handled=False)],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    with pytest.raises(RuntimeError, match="down"):
        invoke(agent, config={"configurable": {"thread_id": "fail"}})
    with pytest.raises(StopRun, match="no second run"):
        invoke(agent, config={"configurable": {"thread_id": "stop"}})
    assert middleware._runs == {}


def test_patch_messages_replace_the_conversation_sent() -> None:
    """A patch's messages are what the model is sent for that call; the agent's state keeps its own history."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(messages=(Message(role="user", content="summarised"),)))
    model = answering("done")
    agent = create_agent(model, tools=[], middleware=[HookregMiddleware(registry)])
    messages = invoke(agent)
    [(sent, _)] = model.calls
    assert [(type(m).__name__, m.text) for m in sent] == [("HumanMessage", "summarised")]
    assert [m.text for m in messages] == ["echo something", "done"]


def test_the_run_key_stays_out_of_the_agent_output() -> None:
    """The private run key the middleware keeps in the graph state is not part of the agent's output."""
    agent = create_agent(answering("done"), tools=[], middleware=[HookregMiddleware(HookRegistry())])
    out = agent.invoke({"messages": [HumanMessage(content="hi")]})
    assert set(out) == {"messages"}
