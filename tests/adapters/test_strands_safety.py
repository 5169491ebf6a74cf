"""Strands' own tool path keeps working with hookreg attached: its unknown-tool handling, its schema rules, its
structured output, its duck-typed models, and streamed events free of hookreg's state."""

from __future__ import annotations

import asyncio
from typing import Any

from strands import Agent

from hookreg import HookRegistry, HookResult
from hookreg.adapters.strands import HookregProvider
from hookreg.testing.conformance import RecordingTool
from tests.adapters.test_strands import ScriptedModel, echo_tool


async def _stream(agent: Agent, prompt: str) -> list[dict[str, Any]]:
    return [event async for event in agent.stream_async(prompt)]


def test_streamed_events_carry_no_hookreg_state() -> None:
    """The run's state lives where the caller never sees it: no streamed event has a ``hookreg`` key."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    model = ScriptedModel([{"text": "hi"}, "done"])
    agent = Agent(model=model, tools=[echo_tool(RecordingTool())], hooks=[HookregProvider(registry)])
    events = asyncio.run(_stream(agent, "hi"))
    assert model.tool_outputs == ["hi"]
    assert [event for event in events if "hookreg" in event] == []
