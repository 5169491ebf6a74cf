"""The two test runs: ``pytest`` leaves the slow tests out; ``pytest --slow --cov`` (.ci/run calls it) runs all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FULL = "pip install -e '.[dev]' && pytest --slow --cov"


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A suite under this project's conftest.py, with one fast and one slow test."""
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nmarkers = slow: a slow test\n")
    pytester.makepyfile(
        """
        import pytest


        def test_fast():
            pass


        @pytest.mark.slow
        def test_slow():
            pass
        """
    )
    return pytester


def _ran(result: pytest.RunResult) -> list[str]:
    return sorted(re.findall(r"::(test_\w+) PASSED", result.stdout.str()))


def test_a_plain_run_leaves_the_slow_tests_out_and_says_so(suite: pytest.Pytester) -> None:
    """``pytest`` deselects what is marked slow and tells how to run it."""
    result = suite.runpytest("-p", "no:hookreg", "-p", "no:cacheprovider", "-v")
    assert _ran(result) == ["test_fast"]
    result.stdout.fnmatch_lines(["1 slow tests left out: pytest --slow runs them too"])
    result.assert_outcomes(passed=1, deselected=1)


@pytest.mark.parametrize(
    ("options", "ran"),
    [(("--slow",), ["test_fast", "test_slow"]), (("-m", "slow"), ["test_slow"]), (("-m", "not slow"), ["test_fast"])],
)
def test_slow_or_a_marker_expression_chooses_for_itself(
    suite: pytest.Pytester, options: tuple[str, ...], ran: list[str]
) -> None:
    """``--slow`` runs everything; a ``-m`` expression selects by itself, so ``-m slow`` runs the slow tests."""
    result = suite.runpytest("-p", "no:hookreg", "-p", "no:cacheprovider", "-v", *options)
    assert _ran(result) == ran
    assert "left out" not in result.stdout.str()


def test_ci_runs_the_readme_full_command() -> None:
    """The README gives both runs; .ci/run calls its full one, so that CI runs every test and checks coverage."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.partition("## Install and test")[2].partition("\n## ")[0]
    commands = re.findall(
        r"^(pip install .*?)\s*(?:#.*)?$", section.partition("```bash\n")[2].partition("```")[0], re.M
    )
    assert commands[1:] == ["pip install -e '.[dev]' && pytest", FULL]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert FULL in ci
