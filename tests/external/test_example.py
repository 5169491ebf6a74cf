"""examples/claude_code_hooks.py runs a Claude Code block-rm.sh hook inside the harness, on both surfaces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "claude_code_hooks.py"


def test_the_example_denies_rm_rf_on_both_surfaces() -> None:
    """The example's rm -rf call is denied with the hook's stderr, the ls call runs, on run and arun."""
    result = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=True, timeout=120)
    for label in ("run", "arun"):
        assert f"{label} c1: (would run) ls" in result.stdout
        assert f"{label} c2: Permission denied: rm -rf is blocked in this project" in result.stdout
        assert f"{label} -> completed" in result.stdout
    assert "after remove(): HookRegistry(permission_denied=1)" in result.stdout
    assert "claude_code_hooks_example: denied Bash by claude:PreToolUse" in result.stderr
