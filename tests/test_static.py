"""Static checks run as tests: ruff, mypy --strict (type tests included), pyright completeness."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, check=False)


def test_ruff_lint_and_format() -> None:
    """The code passes ruff's lint rules and is formatted."""
    lint = run(sys.executable, "-m", "ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    fmt = run(sys.executable, "-m", "ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


@pytest.mark.slow
def test_mypy_strict() -> None:
    """mypy --strict passes over hookreg, tests (type tests included) and examples."""
    result = run(sys.executable, "-m", "mypy", "hookreg", "tests", "examples")
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_surface_is_current() -> None:
    """hookreg/_surface.py is exactly what scripts/generate_surface.py writes."""
    result = run(sys.executable, "scripts/generate_surface.py", "--check")
    assert result.returncode == 0, "run `python scripts/generate_surface.py` and commit the result"


@pytest.mark.slow
def test_pyright_type_completeness() -> None:
    """pyright --verifytypes scores the public API 100% typed."""
    result = run(str(BIN / "pyright"), "--verifytypes", "hookreg", "--ignoreexternal")
    assert "Type completeness score: 100%" in result.stdout, result.stdout[-3000:]
