"""Fixtures of the Claude Code conformance suite: the pinned CLI, its runs (concurrent, once each), hookreg's runs."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .cli import CliRun, Project, find_cli, run_cli
from .compare import Observation, from_cli, from_hookreg
from .hookreg_side import run_side
from .scenarios import Scenario

# Each CLI run is a process of its own (~1 s): a few at a time keep 2 cores busy without starving the rest.
_PARALLEL_RUNS = 3


@pytest.fixture(scope="session")
def claude_cli() -> str:
    """The pinned ``claude`` executable (installed into ``.cache/claude-code`` if need be); skipped without node/npm."""
    cli, why = find_cli()
    if cli is None:
        pytest.skip(why)
    return cli


def _scenarios_selected(session: pytest.Session) -> list[Scenario]:
    found: dict[str, Scenario] = {}
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        scenario = callspec.params.get("scenario") if callspec is not None else None
        if isinstance(scenario, Scenario):
            found.setdefault(scenario.name, scenario)
    return list(found.values())


@pytest.fixture(scope="session")
def claude_code(
    request: pytest.FixtureRequest, claude_cli: str, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[Scenario], Observation]:
    """What the CLI showed for a scenario; every selected scenario is run once, concurrently, on first use."""
    runs: dict[str, CliRun] = {}

    def start(scenario: Scenario) -> CliRun:
        return run_cli(claude_cli, scenario, tmp_path_factory.mktemp(f"cli-{scenario.name}"))

    def observe(scenario: Scenario) -> Observation:
        if not runs:
            selected = _scenarios_selected(request.session) or [scenario]
            with ThreadPoolExecutor(_PARALLEL_RUNS) as pool:
                runs.update(zip([s.name for s in selected], pool.map(start, selected), strict=True))
        if scenario.name not in runs:
            runs[scenario.name] = start(scenario)
        run = runs[scenario.name]
        if run.returncode != 0:
            pytest.fail(f"Claude Code exited {run.returncode} on scenario {scenario.name!r}: {run.stderr[-2000:]}")
        return from_cli(run)

    return observe


@pytest.fixture(scope="session")
def hookreg_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Observation]:
    """hookreg's observations, by (scenario, side), kept for the other aspects of the same run."""
    return {}


@pytest.fixture
def hookreg_side(
    hookreg_runs: dict[tuple[str, str], Observation],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[Scenario, str], Observation]:
    """What one hookreg loop showed for a scenario, run once in its project directory (as the CLI runs)."""

    def observe(scenario: Scenario, side: str) -> Observation:
        key = (scenario.name, side)
        if key not in hookreg_runs:
            root = tmp_path_factory.mktemp(f"{side}-{scenario.name}")
            project_dir = root / "project"
            # The hooks' working directory and HOOK_LOG, as the CLI gives its hooks (restored after the test).
            monkeypatch.setenv("HOOK_LOG", str(root / "hooks.jsonl"))
            project_dir.mkdir()
            monkeypatch.chdir(project_dir)
            hookreg_runs[key] = _observe(side, scenario, root)
        return hookreg_runs[key]

    return observe


def _observe(side: str, scenario: Scenario, root: Path) -> Observation:
    project = Project(root)
    try:
        project, run = run_side(side, scenario, root)
    except Exception as exc:  # noqa: BLE001 -- what hookreg raised is the difference every aspect reports
        return from_hookreg(project, exc)
    return from_hookreg(project, run)
