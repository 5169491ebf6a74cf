"""The run-contract conformance kit against hookreg.adapters.claude_agent_sdk and the real Claude Code CLI, offline."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("claude_agent_sdk")

from external.claude_code.cli import find_cli
from test_claude_agent_sdk import ClaudeAgentSdk

from hookreg.testing.conformance import RUN_SCENARIOS, RunScenario, run_contract_cases


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
