"""The run-contract conformance kit against hookreg.adapters.antigravity and the SDK's own runtime, offline."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest

pytest.importorskip("google.antigravity")


from test_antigravity import Antigravity

from hookreg.testing.conformance import RUN_SCENARIOS, RunScenario, run_contract_cases

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
