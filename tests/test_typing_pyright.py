"""pyright agrees with mypy on the type tests: it rejects exactly the lines marked `# type: ignore` in tests/typing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TYPING = ROOT / "tests" / "typing"
MYPY_ONLY = "# mypy only"  # a rejection pyright does not make, said on its line


def test_pyright_rejects_exactly_the_lines_mypy_must_reject(tmp_path: Path) -> None:
    """With `# type: ignore` switched off, pyright errs on every marked line of the type tests and nowhere else."""
    config = tmp_path / "pyrightconfig.json"
    settings = {"enableTypeIgnoreComments": False, "extraPaths": [str(ROOT)], "pythonVersion": "3.11"}
    config.write_text(json.dumps(settings))
    files = sorted(TYPING.glob("*.py"))
    pyright = Path(sys.executable).parent / "pyright"
    result = subprocess.run(
        [str(pyright), "-p", str(config), "--outputjson", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    report = json.loads(result.stdout)
    rejected = {
        (Path(d["file"]).name, d["range"]["start"]["line"] + 1)
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    }
    marked = {
        (file.name, number)
        for file in files
        for number, line in enumerate(file.read_text().splitlines(), start=1)
        if "# type: ignore" in line and MYPY_ONLY not in line
    }
    assert rejected == marked
