"""nox sessions: the slow tests (``nox -s slow``), the adapter tests at their frameworks' floors (``nox -s floors``)."""

from __future__ import annotations

import sys

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
