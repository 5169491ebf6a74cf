"""The run-contract conformance kit against hookreg.adapters.antigravity and the SDK's own runtime, offline."""

from __future__ import annotations

import gc
import json
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("google.antigravity")

from google.antigravity import Agent, LocalOpenAIAgentConfig  # type: ignore[import-untyped]  # the SDK ships no py.typed
from google.antigravity.hooks import policy  # type: ignore[import-untyped]  # the SDK ships no py.typed

from hookreg import HookRegistry
from hookreg.adapters.antigravity import with_hookreg
from hookreg.testing.conformance import RUN_SCENARIOS, Answer, RunReport, RunScenario, run_contract_cases
from tests.adapters.antigravity_fake import FakeModel, serve


def scripted(answer: Answer) -> dict[str, Any]:
    """One kit answer as the fake chat-completions server plays it."""
    if answer.error is not None:
        return {"error": True}
    if answer.hang:
        return {"hang": True}
    calls = [
        {
            "id": call.call_id,
            "type": "function",
            "function": {
                "name": call.tool_name,
                "arguments": call.args if isinstance(call.args, str) else json.dumps(dict(call.args)),
            },
        }
        for call in answer.calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if calls:
        message["tool_calls"] = calls
    if answer.truncated:
        message["finish_reason"] = "length"
    return message


def sdk_tool(name: str, fn: Callable[..., str]) -> Callable[..., str]:
    """A kit tool as the SDK reads a custom tool: a named, documented function with echo's signature."""

    def tool(text: str, prefix: str = "", suffix: str = "") -> str:
        return fn(text=text, prefix=prefix, suffix=suffix)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = f"{name}: return prefix + text + suffix."
    return tool


@dataclass
class AgWiring:
    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        with serve(FakeModel([scripted(a) for a in answers])) as model:
            cfg = LocalOpenAIAgentConfig(
                model="fake",
                base_url=model.base_url,
                tools=[sdk_tool(name, fn) for name, fn in self.tools.items()],
                policies=[policy.allow_all()],
            )
            async with Agent(with_hookreg(cfg, self.registry)) as agent:
                response = await agent.chat(prompt)
                output = await response.text()
            return RunReport(tool_messages=model.tool_messages_by_call(), output=output)


TURNS = "the SDK has no public hook per model call: a turn is a prompt (agent.chat), not a model call"


class Antigravity:
    """The Antigravity SDK as a kit `Framework`: its localharness runtime on a fake chat-completions server."""

    name = "antigravity"
    streams = False  # agent.chat is the one entry point
    stop_raises = False  # the SDK's hook runner swallows every hook exception
    limits: Mapping[str, str] = {
        # The runtime checks a call's tool and arguments itself before any hook runs.
        "non_object_arguments": "the runtime refuses arguments that are not an object before any hook runs",
        "malformed_arguments": "the runtime refuses malformed arguments before any hook runs",
        "arguments_failing_the_schema": "the runtime checks arguments against the tool's schema before any hook runs",
        "unknown_tool": "the runtime answers a call to an unknown tool itself: no hook reaches hookreg",
        "tool_not_offered": "the SDK offers no per-request tool list: pre_model_call never fires",
        "finish_reasons_mapped": "the SDK has no hook after each model call: model_turn_finished never fires",
        "wiring_reused_for_a_second_run": TURNS,
        "concurrent_runs_on_one_wiring": TURNS,
        "turn_scratchpad_fresh_each_turn": TURNS,
        "observers_fire_once": "raw_result is the runtime's JSON text of the result, not the value the tool returned",
        "result_rewrite_reaches_model": "PostToolCallHook only inspects: the model reads the tool's own result",
        "tool_fails_by_exception_and_by_error_result": (
            "the SDK hands OnToolErrorHook its error text, never the tool's exception"
        ),
        "stop_run_from_an_observer": "the SDK swallows a hook's exception: an observer cannot stop the run",
        "stop_run_from_a_tool_hook": "the SDK swallows a hook's exception: a tool hook cannot stop the run",
        "run_level_ask": "a refused turn reaches the caller as the SDK's AntigravityExecutionError, not as StopRun",
        "model_error_ends_failed": "the runtime retries a failing model call instead of ending the run",
        "cancellation_ends_cancelled": "the SDK ends a session alike on close and cancel: it ends completed",
    }

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> AgWiring:
        return AgWiring(registry, tools)


FRAMEWORK = Antigravity()


@pytest.fixture(autouse=True)
def _collect_the_runtime_pipes() -> Iterator[None]:
    """The SDK leaves its runtime's pipes to the garbage collector once the loop closes: collect them here."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "streamed"),
    run_contract_cases(FRAMEWORK),
    ids=lambda value: value.name if isinstance(value, RunScenario) else ("streamed" if value else "blocking"),
)
def test_run_contract(scenario: RunScenario, streamed: bool) -> None:
    """Every row of the run contract the SDK can express holds."""
    scenario.check(FRAMEWORK, streamed=streamed)


def test_every_limit_names_a_row_of_the_kit() -> None:
    """A limit names a row, so a renamed row cannot leave a stale exemption behind."""
    assert set(FRAMEWORK.limits) <= {scenario.name for scenario in RUN_SCENARIOS}
