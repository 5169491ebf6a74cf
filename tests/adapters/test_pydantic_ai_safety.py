"""pydantic-ai's own safety machinery keeps working with hookreg attached: validation, retry budgets, messages."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic_ai import Agent, Tool, UnexpectedModelBehavior, models
from pydantic_ai import RunContext as PaiRunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_core import ValidationError

from hookreg import (
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    InvalidToolCallContext,
    OnToolErrorContext,
    PostToolCallFailureContext,
    PreToolCallDecideContext,
    TextDeltaContext,
)
from hookreg.adapters.pydantic_ai import hookreg_capability


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    """Forbid every real model request for the duration of a test."""
    with models.override_allow_model_requests(False):
        yield


@dataclass
class StubbornModel:
    """A model that calls ``echo`` with the same arguments on every request, and what it read back."""

    args: str | dict[str, Any]
    requests: int = 0
    read: list[str] = field(default_factory=list)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest):
            self.read += [p.model_response() for p in last.parts if isinstance(p, RetryPromptPart)]
        self.requests += 1
        return ModelResponse(parts=[ToolCallPart("echo", self.args, tool_call_id=f"call-{self.requests}")])


def echo(text: str) -> str:
    """Echo the text."""
    return text


def run_stubborn(
    args: str | dict[str, Any], capabilities: Sequence[AbstractCapability[Any]], *, budget: str
) -> tuple[BaseException, StubbornModel]:
    """Run an agent whose model never sends valid arguments; return what the run raised, and the model."""
    model = StubbornModel(args)
    if budget == "tool":
        agent = Agent(FunctionModel(model.respond), tools=[Tool(echo, max_retries=2)], capabilities=[*capabilities])
    else:
        agent = Agent(FunctionModel(model.respond), tools=[echo], retries=2, capabilities=[*capabilities])
    with pytest.raises(Exception) as raised:  # noqa: PT011 -- the very exception pydantic-ai raises is compared
        asyncio.run(agent.run("go"))
    return raised.value, model


BAD_ARGS = pytest.mark.parametrize(
    "args",
    [{"prefix": "no text"}, {"text": 5}, '["hi"]', '{"text": "hi'],
    ids=["missing-field", "wrong-type", "not-an-object", "malformed-json"],
)
BUDGETS = pytest.mark.parametrize("budget", ["tool", "agent"], ids=["Tool(max_retries=2)", "Agent(retries=2)"])


def _listening() -> HookRegistry:
    """A registry whose invalid_tool_call and on_tool_error hooks listen and pass."""
    registry = HookRegistry()
    registry.invalid_tool_call(lambda ctx: None)
    return registry


@BAD_ARGS
@BUDGETS
@pytest.mark.parametrize("registry", [HookRegistry, _listening], ids=["empty-registry", "passing-listener"])
def test_bad_arguments_spend_the_retry_budget_as_without_hookreg(
    args: str | dict[str, Any], budget: str, registry: Callable[[], HookRegistry]
) -> None:
    """A model repeating bad arguments ends the run with pydantic-ai's own error, as late, reading the same texts."""
    expected, alone = run_stubborn(args, [], budget=budget)
    raised, hooked = run_stubborn(args, [hookreg_capability(registry())], budget=budget)
    assert isinstance(expected, UnexpectedModelBehavior)
    assert (type(raised), str(raised)) == (type(expected), str(expected))
    assert hooked.requests == alone.requests == 3  # the first try and two retries
    assert hooked.read == alone.read


@BUDGETS
def test_a_retry_answer_counts_against_the_budget(budget: str) -> None:
    """An invalid_tool_call hook answering retry: the model reads its text, and pydantic-ai still counts the retry."""
    registry = HookRegistry()
    seen: list[InvalidToolCallContext] = []

    @registry.invalid_tool_call
    def ask_again(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        seen.append(ctx)
        return InvalidToolCallAction.retry("send text as a string")

    raised, model = run_stubborn({"text": 5}, [hookreg_capability(registry)], budget=budget)
    assert isinstance(raised, UnexpectedModelBehavior)
    assert "exceeded max retries count of 2" in str(raised)
    assert model.requests == 3
    assert len(seen) == 3
    assert all("send text as a string" in text for text in model.read)


def test_bad_arguments_fire_the_failure_points_once_per_try() -> None:
    """With nobody at invalid_tool_call, each refused try still reports post_tool_call_failure once, never the gate."""
    registry = HookRegistry()
    failures: list[PostToolCallFailureContext] = []
    registry.post_tool_call_failure(failures.append)
    registry.pre_tool_call_decide(lambda ctx: pytest.fail(f"the gate judged invalid arguments {ctx.args}"))
    raised, _ = run_stubborn({"text": 5}, [hookreg_capability(registry)], budget="tool")
    assert isinstance(raised, UnexpectedModelBehavior)
    assert [f.call_id for f in failures] == ["call-1", "call-2", "call-3"]
    assert all(isinstance(f.error, ValidationError) for f in failures)


class RepairText(AbstractCapability[Any]):
    """A framework extension that repairs a non-string ``text`` argument after pydantic-ai refused it."""

    async def on_tool_validate_error(
        self,
        ctx: PaiRunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: str | dict[str, Any],
        error: ValidationError | ModelRetry,
    ) -> dict[str, Any]:
        return {"text": str(call.args_as_dict().get("text"))}


@pytest.mark.parametrize("hooks", ["empty", "gate"])
def test_arguments_a_framework_extension_repairs_run_and_are_gated(hooks: str) -> None:
    """Arguments another capability repairs run as they would without hookreg; the gate judges the repaired ones."""
    registry = HookRegistry()
    judged: list[dict[str, object]] = []
    if hooks == "gate":

        @registry.pre_tool_call_decide
        def judge(ctx: PreToolCallDecideContext) -> HookResult:
            judged.append(dict(ctx.args))
            return HookResult.allow()

    ran: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("echo", {"text": 5}, tool_call_id="call-1")])

    def record(text: str) -> str:
        """Echo the text."""
        ran.append(text)
        return text

    agent = Agent(
        FunctionModel(respond),
        tools=[Tool(record, name="echo")],
        capabilities=[hookreg_capability(registry), RepairText()],
    )
    asyncio.run(agent.run("go"))
    assert ran == ["5"]
    assert judged == ([{"text": "5"}] if hooks == "gate" else [])


def test_a_delta_observer_leaves_a_blocking_run_blocking() -> None:
    """With text_delta hooks, agent.run still calls a model that cannot stream, and fires no delta points."""
    registry = HookRegistry()
    deltas: list[TextDeltaContext] = []
    registry.text_delta(deltas.append)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond), capabilities=[hookreg_capability(registry)])
    assert asyncio.run(agent.run("go")).output == "done"
    assert deltas == []


def _contents(registry: HookRegistry | None) -> list[object]:
    """What the tool returns reaches the history as: the content of each tool return, with hookreg or without."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("count", {}, tool_call_id="call-1")])

    def count() -> dict[str, int]:
        """Count."""
        return {"n": 1}

    capabilities = [] if registry is None else [hookreg_capability(registry)]
    result = asyncio.run(Agent(FunctionModel(respond), tools=[count], capabilities=capabilities).run("go"))
    return [p.content for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)]


def test_a_result_transform_returning_none_keeps_the_tools_own_value() -> None:
    """A transform_tool_result hook that returns None leaves the tool's value as pydantic-ai would show it."""
    registry = HookRegistry()
    registry.transform_tool_result(lambda ctx: None)
    assert _contents(registry) == _contents(None) == [{"n": 1}]


def test_an_error_hook_returning_none_lets_the_exception_end_the_run() -> None:
    """An on_tool_error hook returning None leaves a tool's exception to pydantic-ai, which ends the run."""
    registry = HookRegistry()
    errors: list[OnToolErrorContext] = []
    registry.on_tool_error(errors.append)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("explode", {}, tool_call_id="call-1")])

    def explode() -> str:
        """Explode."""
        raise LookupError("boom")

    agent = Agent(FunctionModel(respond), tools=[explode], capabilities=[hookreg_capability(registry)])
    with pytest.raises(LookupError, match="boom"):
        asyncio.run(agent.run("go"))
    assert [str(e.error) for e in errors] == ["boom"]
