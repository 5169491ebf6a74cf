"""nox sessions: slow tests, adapter tests at the floors, the Claude Code corpus, the frameworks' own tests."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import nox

sys.path.insert(0, "tests/adapters")  # where pytest finds it too (pyproject.toml: pythonpath)
from adapter_extras import ADAPTERS

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True


@nox.session
def slow(session: nox.Session) -> None:
    """Run the tests a plain ``pytest`` leaves out: type checkers, the docs site, the notebook kernel, stress runs."""
    session.install("-e", ".[dev]")
    session.run("pytest", "-m", "slow", *session.posargs)


@nox.session
def floors(session: nox.Session) -> None:
    """Run the adapter tests with every framework at its floor (``>=X`` in pyproject.toml → ``==X``)."""
    pins = [f"{name}=={floor}" for adapter in ADAPTERS for name, floor in adapter.floors]
    session.install("-e", ".", "pytest>=8", "hypothesis>=6.100", *pins)
    session.run(
        "pytest",
        "-q",
        "-o",
        "addopts=--strict-markers --import-mode=importlib -p no:hookreg",
        "tests/adapters",
        *session.posargs,
    )


@nox.session
def claude_code(session: nox.Session) -> None:
    """The whole Claude Code corpus (tests/external/claude_code), judged by the pinned CLI, through every loop."""
    session.install("-e", ".[pydantic-ai,langchain]", "pytest>=8")
    session.run(
        "pytest",
        "-q",
        "--slow",
        "-o",
        "addopts=--strict-markers --import-mode=importlib -p no:hookreg",
        "tests/external/claude_code",
        *session.posargs,
        env={"HOOKREG_CLAUDE_CODE": "full"},
    )


def _transparency_frameworks() -> list[str]:
    """The adapters whose framework's own tests tests/transparency runs (each has a ``transparency_<module>.py``)."""
    return [a.module for a in ADAPTERS if (Path("tests/transparency") / f"transparency_{a.module}.py").is_file()]


@nox.session
@nox.parametrize("framework", _transparency_frameworks())
def transparency(session: nox.Session, framework: str) -> None:
    """Each framework's own tests without hookreg, with an empty registry and with pass-through hooks, compared.

    ``nox -s transparency`` runs the files each ``tests/transparency/transparency_<module>.py`` lists in ``FILES``
    (it says which and why); ``nox -s transparency -- --subset`` the smaller ``SUBSET`` that ``.ci/run`` runs.
    """
    sys.path.insert(0, "tests/transparency")
    spec = importlib.import_module(f"transparency_{framework}")
    extra = next(a.extra for a in ADAPTERS if a.module == framework)
    checkout = getattr(spec, "TESTS_FROM", None)  # a framework whose sdist ships no tests (runner.py)
    vendored = getattr(spec, "VENDORED", None) is not None and "--subset" in session.posargs
    if checkout is not None and not os.environ.get(checkout) and not vendored:
        session.skip(f"{spec.DIST}'s sdist ships no tests: set {checkout} to a checkout of its repository")
    session.install("-e", f".[{extra}]", "pytest-timeout>=2.3", *spec.TEST_REQUIREMENTS)
    session.run("python", "tests/transparency/runner.py", framework, *session.posargs)
