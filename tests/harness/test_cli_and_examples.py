"""`python -m hookreg demo` / `points`, and the harness examples, run and say what they should."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from hookreg import HookPoint
from hookreg.__main__ import main, points_table
from hookreg.harness import RunResult

ROOT = Path(__file__).resolve().parents[2]


def test_demo_runs_as_a_module_and_prints_each_decision() -> None:
    """`python -m hookreg demo` prints the transcript and every steering decision through structlog."""
    done = subprocess.run(
        [sys.executable, "-m", "hookreg", "demo"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "hook_denied" in out
    assert "rm -rf is not allowed; delete files one by one" in out
    assert "input_rewritten" in out
    assert "timeout=30.0" in out
    assert "error_rewritten" in out
    assert "CHANGES.md does not exist" in out
    assert "turn_repeated" in out
    assert "new_max_tokens=48" in out
    assert "finish_reason=length" in out
    assert "status=completed" in out
    assert "files=['README.md', 'notes.txt']" in out


def test_points_prints_one_row_per_hook_point(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m hookreg points` prints the table: one row per point with its style and context."""
    assert main(["points"]) == 0
    out = capsys.readouterr().out
    assert out == points_table() + "\n"
    rows = out.splitlines()[2:]
    assert len(rows) == len(HookPoint)
    assert rows[0].split() == ["setup", "observe", "SetupContext"]
    assert "PreToolCallDecideContext" in out
    assert "yes" in out


def test_unknown_command_prints_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown command exits with status 2 and prints the usage line."""
    assert main(["dance"]) == 2
    assert "usage: python -m hookreg {demo|points}" in capsys.readouterr().err


def test_retry_on_truncation_example(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/retry_on_truncation.py doubles the cap until the answer is whole."""
    runpy.run_path(str(ROOT / "examples" / "retry_on_truncation.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "caps requested: [4, 8, 16, 32]" in out
    assert "completed after 4 model calls: Hooks let one registry" in out


def test_human_in_the_loop_example(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/human_in_the_loop.py deploys to staging after approval and is refused production."""
    runpy.run_path(str(ROOT / "examples" / "human_in_the_loop.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "c1: deployed to staging" in out
    assert "c2: Permission denied: production deploys need a change ticket" in out


def test_import_hookreg_does_not_import_the_harness() -> None:
    """`import hookreg` leaves hookreg.harness unimported."""
    code = "import sys, hookreg; print('hookreg.harness' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_readme_reference_loop_snippet_runs() -> None:
    """The README's "Reference loop" example runs and its gate denies the rm -rf call."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Reference loop", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert isinstance(result, RunResult)
    assert result.outcome.status == "completed"
    assert result.history[2].content == "Permission denied: no rm -rf"
