"""The corpus through the real Claude Code CLI and through hookreg's loops: each aspect of each run must agree.

A case is (scenario, hookreg loop, aspect). Its failure message lists what
differed, in the words of ``compare.py``. Where hookreg disagrees today the
case is a strict xfail whose reason names the disagreement: it turns red the
day hookreg starts agreeing, and the xfail comes off. ``.ci/run`` runs the
scenarios marked ``ci``; ``nox -s claude_code`` (``HOOKREG_CLAUDE_CODE=full``)
runs the whole corpus.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from .compare import ASPECTS, COMPARE, Observation
from .hookreg_side import SIDES
from .scenarios import SCENARIOS, Scenario

pytestmark = pytest.mark.slow  # each scenario is a CLI process; the suite needs Claude Code installed

FULL = os.environ.get("HOOKREG_CLAUDE_CODE") == "full"


def _cases() -> list[object]:
    cases: list[object] = []
    for scenario in SCENARIOS:
        if not (scenario.ci or FULL):
            continue
        for side in SIDES:
            for aspect in ASPECTS:
                gap = scenario.gaps.get(f"{aspect}/{side}") or scenario.gaps.get(aspect)
                marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
                cases.append(pytest.param(scenario, side, aspect, marks=marks, id=f"{scenario.name}-{side}-{aspect}"))
    return cases


@pytest.mark.parametrize(("scenario", "side", "aspect"), _cases())
def test_hookreg_runs_the_hooks_as_claude_code_does(
    scenario: Scenario,
    side: str,
    aspect: str,
    claude_code: Callable[[Scenario], Observation],
    hookreg_side: Callable[[Scenario, str], Observation],
) -> None:
    """hookreg's loop shows the same as the real CLI, on one aspect of one scenario."""
    cli = claude_code(scenario)
    ours = hookreg_side(scenario, side)
    assert ours.error is None, f"{side} raised instead of finishing {scenario.name!r}: {ours.error}"
    differences = COMPARE[aspect](cli, ours)
    assert not differences, f"{scenario.name} on {side}, {aspect}:\n  " + "\n  ".join(differences)
