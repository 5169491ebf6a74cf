"""The run-contract conformance kit against hookreg.adapters.google_adk: a real ADK app, offline.

The kit's `Framework` for ADK lives in test_google_adk.py, where the docs' tests read its limits.
"""

from __future__ import annotations

import pytest
from test_google_adk import FRAMEWORK

from hookreg.testing.conformance import RUN_SCENARIOS, RunScenario, is_limit, run_contract_cases


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
