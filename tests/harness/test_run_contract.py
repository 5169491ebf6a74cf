"""The harness against the run-contract conformance kit: every row, blocking and streamed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field

import pytest

from hookreg import HookRegistry, ToolCallRequest
from hookreg.harness import Harness, ModelChunk, ModelRequest, ModelResponse, RunFinished, TextDelta
from hookreg.testing.conformance import RUN_SCENARIOS, Answer, RunReport, RunScenario, run_contract_cases


@dataclass
class KitModel:
    """A harness model playing the kit's scripted answers."""

    answers: tuple[Answer, ...]
    name: str = "kit-model"
    seen: list[ModelRequest] = field(default_factory=list)

    def _respond(self, request: ModelRequest) -> ModelResponse:
        self.seen.append(request)
        answer = self.answers[len(self.seen) - 1]
        if answer.error is not None:
            raise answer.error
        calls = tuple(
            ToolCallRequest(c.call_id, c.tool_name, {} if isinstance(c.args, str) else c.args) for c in answer.calls
        )
        raw = {c.call_id: c.args for c in answer.calls if isinstance(c.args, str)}
        finish = "MAX_TOKENS" if answer.truncated else ("tool_calls" if calls else "stop")
        return ModelResponse(text=answer.text, tool_calls=calls, finish_reason=finish, raw_arguments=raw)

    def stream(self, request: ModelRequest, /) -> Iterator[ModelChunk]:
        response = self._respond(request)
        if response.text:
            yield TextDelta(response.text)
        yield response

    async def astream(self, request: ModelRequest, /) -> AsyncIterator[ModelChunk]:
        if self.answers[len(self.seen)].hang:
            await asyncio.Event().wait()
        for chunk in self.stream(request):
            yield chunk


@dataclass
class HarnessWiring:
    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        tools = [_named(name, fn) for name, fn in self.tools.items()]
        harness = Harness(KitModel(answers), tools, self.registry)
        if streamed:
            result = None
            async for item in harness.astream(prompt):
                if isinstance(item, RunFinished):
                    result = item.result
            assert result is not None
        else:
            result = await harness.arun(prompt)
        messages = {m.tool_call_id: m.content for m in result.history if m.role == "tool" and m.tool_call_id}
        return RunReport(tool_messages=messages, output=result.output)


def _named(name: str, fn: Callable[..., str]) -> Callable[..., str]:
    def tool(text: str, prefix: str = "", suffix: str = "") -> str:
        return fn(text=text, prefix=prefix, suffix=suffix)

    tool.__name__ = name
    return tool


class HarnessFramework:
    name = "hookreg.harness"
    streams = True
    stop_raises = False
    limits: Mapping[str, str] = {}

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> HarnessWiring:
        return HarnessWiring(registry, tools)


FRAMEWORK = HarnessFramework()


@pytest.mark.parametrize(
    ("scenario", "streamed"),
    run_contract_cases(FRAMEWORK),
    ids=lambda v: v.name if isinstance(v, RunScenario) else ("streamed" if v else "blocking"),
)
def test_run_contract(scenario: RunScenario, streamed: bool) -> None:
    """The harness honours every row of the run contract."""
    scenario.check(FRAMEWORK, streamed=streamed)


def test_the_harness_has_no_limits() -> None:
    """Every row of the run contract runs against the harness, blocking and streamed: none is excused."""
    assert FRAMEWORK.limits == {}
    assert len(run_contract_cases(FRAMEWORK)) == 2 * len(RUN_SCENARIOS)
