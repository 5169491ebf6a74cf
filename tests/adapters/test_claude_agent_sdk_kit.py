"""The run-contract conformance kit against hookreg.adapters.claude_agent_sdk and the real Claude Code CLI, offline."""

from __future__ import annotations

import re
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, create_sdk_mcp_server, tool

from hookreg import HookRegistry
from hookreg.adapters.claude_agent_sdk import HookregHooks
from hookreg.testing.conformance import (
    RUN_SCENARIOS,
    Answer,
    ReportedError,
    RunReport,
    RunScenario,
    run_contract_cases,
)
from tests.external.claude_code.cli import _OFFLINE, find_cli
from tests.external.claude_code.fake_api import FakeMessagesAPI, ModelCall, ModelTurn

SERVER = "kit"
_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "prefix": {"type": "string"}, "suffix": {"type": "string"}},
    "required": ["text"],
}


def cli_name(name: str) -> str:
    """What the CLI calls an SDK MCP tool of the kit's server."""
    return f"mcp__{SERVER}__{name}"


class KitAPI(FakeMessagesAPI):
    """The fake Messages API playing the kit's answers; a hanging answer waits until the run is over."""

    def __init__(self, script: Sequence[ModelTurn], hang_at: int | None) -> None:
        super().__init__(script)
        self.hang_at = hang_at
        self.released = threading.Event()

    def answer(self, body: Mapping[str, Any]) -> ModelTurn:
        turn = super().answer(body)
        answered = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if answered == self.hang_at:
            self.released.wait(timeout=60)
        return turn


def script(answers: tuple[Answer, ...]) -> list[ModelTurn]:
    """The kit's answers as the fake API's turns, the tools named as the CLI names them."""
    return [
        ModelTurn(
            text=answer.text,
            calls=[ModelCall(cli_name(c.tool_name), dict(c.args), c.call_id) for c in answer.calls],  # type: ignore[arg-type]
        )
        for answer in answers
    ]


def mcp_tool(name: str, fn: Callable[..., str]) -> Any:
    """An SDK MCP tool running `fn` (a ReportedError is reported as an error result, other exceptions raise)."""

    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        try:
            text = fn(**args)
        except ReportedError as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "is_error": True}
        return {"content": [{"type": "text", "text": text}]}

    return tool(name, f"The kit's {name} tool.", _SCHEMA)(handler)


def tool_messages(api: FakeMessagesAPI) -> dict[str, str]:
    """What the model read for each call id, in the last request it was sent."""
    results: dict[str, str] = {}
    for request in api.log.agent_requests[-1:]:
        for message in request["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else ():
                if part.get("type") == "tool_result":
                    content = part["content"]
                    text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
                    results[part["tool_use_id"]] = text
    return results


@dataclass
class SdkWiring:
    cli: str
    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        hang_at = next((i for i, a in enumerate(answers) if a.hang), None)
        names = {cli_name(name): name for name in self.tools}
        hooks = HookregHooks(self.registry, tool_names=names)
        server = create_sdk_mcp_server(SERVER, tools=[mcp_tool(n, fn) for n, fn in self.tools.items()])
        api = KitAPI(script(answers), hang_at)
        with tempfile.TemporaryDirectory() as scratch, api:
            home = Path(scratch) / "home"
            home.mkdir()
            env = {"HOME": str(home), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-offline", **_OFFLINE}
            options = ClaudeAgentOptions(
                cli_path=self.cli,
                cwd=scratch,
                env=env,
                permission_mode="bypassPermissions",
                setting_sources=[],
                mcp_servers={SERVER: server},
                include_partial_messages=streamed,
            )
            output = ""
            try:
                async for message in hooks.query(prompt=prompt, options=options):
                    if isinstance(message, ResultMessage):
                        output = message.result or ""
            finally:
                api.released.set()
            return RunReport(tool_messages=tool_messages(api), output=output)


_INVALID = (
    "the CLI checks a call's tool and arguments against its own schema before any hook runs, and answers an "
    "invalid call itself: no hook event reaches hookreg, so invalid_tool_call never fires"
)


@dataclass
class ClaudeAgentSdk:
    """The Claude Agent SDK as a kit `Framework`: the pinned CLI, the kit's tools as an SDK MCP server."""

    cli: str
    name: str = "claude-agent-sdk"
    streams: bool = True
    stop_raises: bool = True
    limits: Mapping[str, str] = field(
        default_factory=lambda: {
            "non_object_arguments": _INVALID,
            "malformed_arguments": _INVALID,
            "arguments_failing_the_schema": _INVALID,
            "unknown_tool": _INVALID,
            "tool_not_offered": "the SDK offers no per-request tool list: pre_model_call never fires",
            "model_error_ends_failed": (
                "the model is called in the CLI's process: the caller gets the SDK's error result, never the "
                "model's own exception (the session still ends failed)"
            ),
            "finish_reasons_mapped": "the SDK shows no event after each model call: model_turn_finished never fires",
            "observers_fire_once": (
                "raw_result is the CLI's tool_response (an MCP tool's content blocks), not the Python value the "
                "tool returned (the rest of the row holds: see test_claude_agent_sdk.py)"
            ),
            "tool_fails_by_exception_and_by_error_result": (
                "the model reads the CLI's own error text; on_tool_error's text reaches it as additionalContext "
                "beside the tool result, not in it"
            ),
        }
    )

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> SdkWiring:
        return SdkWiring(self.cli, registry, tools)


@pytest.fixture(scope="module")
def framework() -> ClaudeAgentSdk:
    cli, why = find_cli()
    if cli is None:
        pytest.skip(why)
    return ClaudeAgentSdk(cli)


_PROBE = ClaudeAgentSdk(cli="")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "streamed"),
    run_contract_cases(_PROBE),
    ids=lambda value: value.name if isinstance(value, RunScenario) else ("streamed" if value else "blocking"),
)
def test_run_contract(framework: ClaudeAgentSdk, scenario: RunScenario, streamed: bool) -> None:
    """Every row of the run contract the SDK can express holds, blocking and streamed."""
    scenario.check(framework, streamed=streamed)


def test_every_limit_names_a_row_of_the_kit() -> None:
    """A limit names a row, so a renamed row cannot leave a stale exemption behind."""
    assert set(_PROBE.limits) <= {scenario.name for scenario in RUN_SCENARIOS}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("row", "why"),
    [
        ("unknown_tool", "invalid_tool_call fired 0 times"),
        ("finish_reasons_mapped", "model_turn_finished fired 0 times"),
        ("observers_fire_once", "raw_result=[{'type': 'text', 'text': 'hello'}]"),
        ("tool_fails_by_exception_and_by_error_result", "not on_tool_error's"),
        ("model_error_ends_failed", "the caller did not get the model's error"),
    ],
)
def test_each_limit_is_real(framework: ClaudeAgentSdk, row: str, why: str) -> None:
    """Each row the SDK cannot express fails on it, for the reason its limit gives."""
    scenario = {s.name: s for s in RUN_SCENARIOS}[row]
    with pytest.raises(AssertionError, match=re.escape(why)):
        scenario.check(framework)
