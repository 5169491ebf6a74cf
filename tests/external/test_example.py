"""examples/claude_code_hooks.py runs a Claude Code block-rm.sh hook in the harness and in pydantic-ai."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "claude_code_hooks.py"


def test_the_example_denies_rm_rf_on_both_surfaces() -> None:
    """The rm -rf call is denied with the hook's stderr (run, arun and a pydantic-ai agent); ls runs."""
    result = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True, timeout=120)
    for label in ("run", "arun"):
        assert f"{label} c1: (would run) ls" in result.stdout
        assert f"{label} c2: Permission denied: rm -rf is blocked in this project" in result.stdout
        assert f"{label} -> completed" in result.stdout
    assert "pydantic-ai -> the tool said: " in result.stdout
    assert "rm -rf is blocked in this project" in result.stdout.split("pydantic-ai -> ")[1]
    assert "after remove(): HookRegistry(permission_denied=1)" in result.stdout
    assert result.stderr.count("claude_code_hooks_example: denied Bash by claude:PreToolUse") == 3
    assert "claude_code_hooks_example: denied Bash by claude:PreToolUse" in result.stderr
