"""With no invalid_tool_call hook, LangChain's own tool checks, messages and invalid-call handling apply unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, ToolCallRequest
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.types import Command
from pydantic import BaseModel, Field

from hookreg import (
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    InvalidToolCallContext,
    OnToolErrorContext,
    PreToolCallDecideContext,
    RequestPatch,
)
from hookreg.adapters.langchain import HookregMiddleware


class Scripted(GenericFakeChatModel):
    """LangChain's fake chat model, answering from its script whatever tools it is offered."""

    def bind_tools(self, tools: Sequence[object], **kwargs: object) -> Scripted:
        """Return the model itself: its answers are scripted."""
        return self


def registries() -> dict[str, HookRegistry]:
    """Hookreg attached with nothing, with a tool gate, and with a gate plus an invalid_tool_call observer."""
    gated, observed = HookRegistry(), HookRegistry()
    for registry in (gated, observed):
        registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    observed.invalid_tool_call(lambda ctx: None)
    return {"empty": HookRegistry(), "gated": gated, "observed": observed}


def calling(name: str, args: dict[str, object]) -> Scripted:
    """A model that calls `name` with `args` once, then answers ``done``."""
    call = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "call-1"}])
    return Scripted(messages=iter([call, AIMessage(content="done")]))


def seen(messages: Sequence[BaseMessage]) -> list[tuple[str, str, str]]:
    """What the conversation shows: each message's type, text and (for a tool message) status."""
    return [(m.type, m.text, m.status if isinstance(m, ToolMessage) else "") for m in messages]


def conversation(
    model: Callable[[], Scripted],
    tools: Sequence[BaseTool],
    registry: HookRegistry | None,
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = (),
    *,
    asynchronous: bool = False,
) -> list[tuple[str, str, str]]:
    """The conversation an agent ends with, with hookreg around `middleware` (or, for ``None``, without hookreg)."""
    listing = list(middleware) if registry is None else HookregMiddleware(registry).around(middleware)
    agent: Any = create_agent(model(), tools=list(tools), middleware=listing)
    state = {"messages": [HumanMessage(content="go")]}
    final = asyncio.run(agent.ainvoke(state)) if asynchronous else agent.invoke(state)
    return seen(final["messages"])


def echo() -> BaseTool:
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    return StructuredTool.from_function(echo)


# --- LangChain's own messages for an unknown tool and for bad arguments ----------------------------


@pytest.mark.parametrize("registry", ["empty", "gated", "observed"])
@pytest.mark.parametrize(
    "call", [("nope", {"text": "hi"}), ("echo", {"txt": "hi"})], ids=["unknown tool", "bad arguments"]
)
def test_langchain_answers_an_invalid_call_its_own_way(call: tuple[str, dict[str, object]], registry: str) -> None:
    """With no invalid_tool_call hook, or one that passes, the model reads LangChain's message for a call it refuses."""
    name, args = call
    plain = conversation(lambda: calling(name, args), [echo()], None)
    assert plain[2][2] == "error"  # LangChain refused the call itself
    assert conversation(lambda: calling(name, args), [echo()], registries()[registry]) == plain


def test_an_invalid_call_hook_still_gets_hookregs_check() -> None:
    """With an invalid_tool_call hook listening, hookreg checks the call and the hook's answer applies."""
    registry, errors = HookRegistry(), list[str]()

    @registry.invalid_tool_call
    def skip(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        errors.append(ctx.error)
        return InvalidToolCallAction.skip("no such tool here")

    final = conversation(lambda: calling("nope", {"text": "hi"}), [echo()], registry)
    assert final[2] == ("tool", "no such tool here", "error")
    assert errors == ["unknown tool 'nope'; the tools offered are: echo"]


# --- invalid_tool_calls are LangChain's to handle ---------------------------------------------------


@pytest.mark.parametrize("registry", ["empty", "gated", "observed"])
def test_invalid_tool_calls_are_not_rewritten(registry: str) -> None:
    """An answer's invalid_tool_calls no hook answered stay as LangChain made them: the conversation is LangChain's."""

    def model() -> Scripted:
        broken = AIMessage(
            content="",
            invalid_tool_calls=[{"name": "echo", "args": '{"text": "hi', "id": "call-1", "error": "bad JSON"}],
        )
        return Scripted(messages=iter([broken, AIMessage(content="done")]))

    plain = conversation(model, [echo()], None)
    assert conversation(model, [echo()], registries()[registry]) == plain


# --- tools a middleware adds and serves --------------------------------------------------------------


def weather() -> BaseTool:
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    return StructuredTool.from_function(weather)


class ServesWeather(AgentMiddleware[Any, Any, Any]):
    """A middleware that offers the model a weather tool the agent does not have, and answers its calls itself."""

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        return handler(request.override(tools=[*request.tools, weather()]))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResponse[Any]:
        return await handler(request.override(tools=[*request.tools, weather()]))

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        return self.served(request) or handler(request)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        return self.served(request) or await handler(request)

    @staticmethod
    def served(request: ToolCallRequest) -> ToolMessage | None:
        """The middleware's own answer to a weather call (``None`` for the agent's tools)."""
        if request.tool_call["name"] != "weather":
            return None
        return ToolMessage(content="served: sunny", tool_call_id=request.tool_call["id"] or "")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
@pytest.mark.parametrize("registry", ["empty", "gated"])
def test_a_tool_a_middleware_adds_and_serves_runs(registry: str, asynchronous: bool) -> None:
    """A tool another middleware offers and serves is answered by it, as without hookreg, and still gated."""
    hooks, gated = registries()[registry], list[str]()
    if registry == "gated":

        @hooks.pre_tool_call_decide
        def record(ctx: PreToolCallDecideContext) -> HookResult:
            gated.append(ctx.tool_name)
            return HookResult.allow()

    final = conversation(
        lambda: calling("weather", {"city": "Oslo"}), [echo()], hooks, [ServesWeather()], asynchronous=asynchronous
    )
    assert final[2] == ("tool", "served: sunny", "success")
    assert gated == (["weather"] if registry == "gated" else [])


def _gate_records(seen_args: list[dict[str, object]]) -> HookRegistry:
    registry = registries()["observed"]

    @registry.pre_tool_call_decide
    def record(ctx: PreToolCallDecideContext) -> HookResult:
        seen_args.append(dict(ctx.args))
        return HookResult.allow()

    return registry


# --- arguments LangChain injects by name ------------------------------------------------------------


class Injected(BaseModel):
    """A schema naming the runtime as a plain field: only the function's annotation marks it as injected."""

    text: str
    runtime: Any


def injected_echo() -> BaseTool:
    def echo(text: str, runtime: ToolRuntime) -> str:
        """Echo the text, with the count of messages so far and the call's id."""
        return f"{text} {len(runtime.state['messages'])} {runtime.tool_call_id}"

    return StructuredTool.from_function(echo, args_schema=Injected)


@pytest.mark.parametrize("registry", ["empty", "gated", "observed"])
def test_arguments_langchain_injects_pass_hookregs_check(registry: str) -> None:
    """The runtime LangChain injects is never a missing argument to hookreg's schema check."""
    model = lambda: calling("echo", {"text": "hi"})  # noqa: E731 -- the same script for both agents
    plain = conversation(model, [injected_echo()], None)
    assert plain[2] == ("tool", "hi 2 call-1", "success")
    assert conversation(model, [injected_echo()], registries()[registry]) == plain


def test_the_gate_sees_the_models_arguments_only() -> None:
    """Injected values never reach the gate: it judges what the model asked for."""
    seen_args: list[dict[str, object]] = []
    final = conversation(lambda: calling("echo", {"text": "hi"}), [injected_echo()], _gate_records(seen_args))
    assert final[2] == ("tool", "hi 2 call-1", "success")
    assert seen_args == [{"text": "hi"}]


def test_a_user_tool_a_patch_took_away_never_runs_without_an_invalid_call_hook() -> None:
    """active_tools still holds with nobody at invalid_tool_call: the model reads that the tool was not offered."""
    registry, ran = HookRegistry(), list[str]()
    registry.pre_model_call(lambda ctx: RequestPatch(active_tools=frozenset({"weather"})))

    def echo(text: str) -> str:
        """Echo the text."""
        ran.append(text)
        return text

    final = conversation(lambda: calling("echo", {"text": "hi"}), [StructuredTool.from_function(echo)], registry)
    assert ran == []
    assert final[2][1:] == (
        "Error: LookupError: tool 'echo' was not offered for this turn; the tools offered are: none",
        "error",
    )


# --- the chat model the user passed is the one called ------------------------------------------------


class Counting(Scripted):
    """A scripted model that counts its calls on itself, as a model keeping a script position does."""

    calls: int = 0

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super()._generate(*args, **kwargs)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["stream", "astream"])
def test_a_streamed_call_observed_by_delta_hooks_runs_on_the_users_model(asynchronous: bool) -> None:
    """With a text_delta hook listening, the model object the user passed is the one called, and deltas fire."""
    registry, deltas = HookRegistry(), list[str]()
    registry.text_delta(lambda ctx: deltas.append(ctx.delta))
    model = Counting(messages=iter([AIMessage(content="all done")]))
    agent: Any = create_agent(model, tools=[echo()], middleware=HookregMiddleware(registry).around([]))
    state = {"messages": [HumanMessage(content="go")]}

    async def astream() -> None:
        async for _ in agent.astream(state, stream_mode="messages"):
            pass

    if asynchronous:
        asyncio.run(astream())
    else:
        for _ in agent.stream(state, stream_mode="messages"):
            pass
    assert model.calls == 1
    assert "".join(deltas) == "all done"


# --- an on_tool_error hook that passes leaves LangChain's error path as it was -----------------------


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_tool_error_no_hook_rewrites_propagates_as_without_hookreg(asynchronous: bool) -> None:
    """With on_tool_error hooks that all return None, the tool's exception reaches the caller, as in plain LangChain."""
    registry, failures = HookRegistry(), list[str]()
    registry.on_tool_error(lambda ctx: None)
    registry.post_tool_call_failure(lambda ctx: failures.append(ctx.tool_name))

    def broken(text: str) -> str:
        """Always fail."""
        msg = f"broken on {text}"
        raise LookupError(msg)

    tool = StructuredTool.from_function(broken)
    for hooks in (None, registry):
        with pytest.raises(LookupError, match="broken on hi"):
            conversation(lambda: calling("broken", {"text": "hi"}), [tool], hooks, asynchronous=asynchronous)
    assert failures == ["broken"]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_a_gated_tool_that_raises_reaches_the_failure_points(asynchronous: bool) -> None:
    """A tool the tool gate approved and that raised goes through on_tool_error, whose text the model reads."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    registry.on_tool_error(lambda ctx: f"hook read: {ctx.error}")

    def broken(text: str) -> str:
        """Always fail."""
        msg = f"broken on {text}"
        raise LookupError(msg)

    tool = StructuredTool.from_function(broken)
    final = conversation(lambda: calling("broken", {"text": "hi"}), [tool], registry, asynchronous=asynchronous)
    assert final[2] == ("tool", "hook read: broken on hi", "error")


# --- no hookreg key in the state the user sees -------------------------------------------------------


@pytest.mark.parametrize("registry", ["empty", "gated"])
def test_streamed_states_carry_no_hookreg_key(registry: str) -> None:
    """Every state streamed with stream_mode="values" has the keys it has without hookreg."""

    def keys(hooks: HookRegistry | None) -> list[set[str]]:
        listing = [] if hooks is None else HookregMiddleware(hooks).around([])
        agent: Any = create_agent(calling("echo", {"text": "hi"}), tools=[echo()], middleware=listing)
        return [set(state) for state in agent.stream({"messages": [HumanMessage(content="go")]}, stream_mode="values")]

    plain = keys(None)
    assert plain
    assert set().union(*keys(registries()[registry])) == set().union(*plain)


# --- LangChain's answer to a malformed call is the failure the failure points see --------------------


class Reading(Scripted):
    """A scripted model that keeps the tool messages each request sent it."""

    read: list[tuple[str, str]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.read.extend((m.tool_call_id, m.text) for m in messages if isinstance(m, ToolMessage))
        return super()._generate(messages, *args, **kwargs)


@pytest.mark.parametrize("rewrite", [False, True], ids=["passes", "rewrites"])
def test_langchains_answer_to_a_malformed_call_reaches_the_failure_points(rewrite: bool) -> None:
    """A malformed call every invalid_tool_call hook passed: its failure points see LangChain's answer, once."""
    registry, seen = HookRegistry(), list[tuple[str, str]]()
    registry.invalid_tool_call(lambda ctx: None)
    registry.post_tool_call_failure(lambda ctx: seen.append(("failure", ctx.call_id)))

    @registry.on_tool_error
    def note(ctx: OnToolErrorContext) -> str | None:
        seen.append((ctx.kind.value, ctx.message))
        return "hook read it" if rewrite else None

    both = AIMessage(
        content="",
        tool_calls=[{"name": "echo", "args": {"text": "hi"}, "id": "call-ok"}],
        invalid_tool_calls=[{"name": "echo", "args": '{"text": "hi', "id": "call-bad", "error": "bad JSON"}],
    )
    model = Reading(messages=iter([both, AIMessage(content="a"), AIMessage(content="b")]))
    agent: Any = create_agent(model, tools=[echo()], middleware=HookregMiddleware(registry).around([]))
    agent.invoke({"messages": [HumanMessage(content="go")]})
    langchains = "Tool call echo with id call-bad could not be executed - arguments were malformed or truncated."
    assert seen == [("failure", "call-bad"), ("invalid_args", langchains)]
    assert ("call-bad", "hook read it" if rewrite else langchains) in model.read
