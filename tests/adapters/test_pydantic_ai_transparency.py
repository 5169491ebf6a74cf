"""hookreg hooks that change nothing leave pydantic-ai's own behaviour as it is: its errors, its cancellations."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from pydantic_ai import Agent, models
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from hookreg import HookRegistry, HookResult, OnSessionEndContext
from hookreg.adapters.pydantic_ai import hookreg_capability

# Generous: the run ends as soon as the failing tool raises; this only turns a hang into a failure.
BOUND = 30.0


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    """Forbid every real model request for the duration of a test."""
    with models.override_allow_model_requests(False):
        yield


def passing_registry(ended: list[OnSessionEndContext]) -> HookRegistry:
    """Hooks at the tool points and the session's end that change nothing; `ended` gets each session end."""
    registry = HookRegistry()
    registry.transform_tool_input(lambda ctx: None)
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    registry.post_tool_call(lambda ctx: None)
    registry.post_tool_call_failure(lambda ctx: None)
    registry.on_tool_error(lambda ctx: None)
    registry.on_session_end(ended.append)
    return registry


@pytest.mark.parametrize("hooked", [False, True], ids=["empty-registry", "passing-hooks"])
def test_a_failing_tool_in_a_parallel_batch_cancels_its_sibling_and_ends_the_run(*, hooked: bool) -> None:
    """One tool of a parallel batch raises: the run ends with its error, the slow sibling is cancelled, no hang."""
    ended: list[OnSessionEndContext] = []
    registry = passing_registry(ended) if hooked else HookRegistry()
    cancelled = asyncio.Event()

    def call_both(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("failing", tool_call_id="a"), ToolCallPart("slow", tool_call_id="b")])

    agent = Agent(FunctionModel(call_both), capabilities=[hookreg_capability(registry)])

    @agent.tool_plain
    async def failing() -> str:
        """Fail once the sibling started."""
        await asyncio.sleep(0)
        msg = "boom"
        raise RuntimeError(msg)

    @agent.tool_plain
    async def slow() -> str:
        """Wait far longer than the run lasts."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "done"  # pragma: no cover - cancelled first

    async def main() -> None:
        with pytest.raises(RuntimeError, match="boom"):
            await asyncio.wait_for(agent.run("go"), timeout=BOUND)

    asyncio.run(main())
    assert cancelled.is_set()
    if hooked:
        assert [end.outcome.status for end in ended] == ["failed"]
