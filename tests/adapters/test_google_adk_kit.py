"""The run-contract conformance kit against hookreg.adapters.google_adk: a real ADK app, offline."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import (  # type: ignore[attr-defined]  # ADK documents this import
    RunConfig,
    StreamingMode,
)
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types

from hookreg import HookRegistry, StopRun
from hookreg._lifecycle import present
from hookreg.adapters.google_adk import HookregPlugin
from hookreg.testing.conformance import (
    RUN_SCENARIOS,
    Answer,
    ReportedError,
    RunReport,
    RunScenario,
    is_limit,
    run_contract_cases,
)

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


@dataclass
class AdkFramework:
    """Google ADK for the run-contract kit."""

    name: str = "google-adk"
    streams: bool = True
    stop_raises: bool = True
    limits: Mapping[str, str] = field(
        default_factory=lambda: {
            "non_object_arguments": "google.genai types a function call's args as a JSON object",
            "malformed_arguments": "google.genai parses the model's arguments before ADK sees them",
        }
    )

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> AdkWiring:
        return AdkWiring(registry, tools)


FRAMEWORK = AdkFramework()


@pytest.mark.parametrize(
    ("scenario", "streamed"),
    run_contract_cases(FRAMEWORK),
    ids=lambda value: value.name if isinstance(value, RunScenario) else ("streamed" if value else "blocking"),
)
def test_run_contract(scenario: RunScenario, streamed: bool) -> None:
    """The ADK adapter honours every row of the run contract ADK can express, blocking and streamed."""
    scenario.check(FRAMEWORK, streamed=streamed)


def test_the_limits_are_rows_of_the_kit() -> None:
    """Each limit names a row of the kit, in both modes."""
    names = {scenario.name for scenario in RUN_SCENARIOS}
    assert set(FRAMEWORK.limits) <= names
    assert all(is_limit(FRAMEWORK, name, streamed) for name in FRAMEWORK.limits for streamed in (False, True))
