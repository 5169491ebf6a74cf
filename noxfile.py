"""nox sessions: the adapter tests at the oldest framework releases hookreg supports (``nox -s floors``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True

_EXTRAS = ("pydantic-ai", "openai-agents", "strands", "langchain")


def _floors() -> list[str]:
    """Each adapter extra's requirements pinned at their floors (``>=X`` → ``==X``), read from pyproject.toml."""
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    pins = []
    for extra in _EXTRAS:
        for requirement in project["optional-dependencies"][extra]:
            name, _, rest = requirement.partition(">=")
            pins.append(f"{name}=={rest.split(',')[0]}")
    return pins


@nox.session
def floors(session: nox.Session) -> None:
    """Run the adapter tests with every framework at its floor."""
    session.install("-e", ".", "pytest>=8", "hypothesis>=6.100", *_floors())
    session.run(
        "pytest",
        "-q",
        "-o",
        "addopts=--strict-markers --import-mode=importlib -p no:hookreg",
        "tests/adapters",
        *session.posargs,
    )
