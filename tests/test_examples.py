"""The core examples run, and the README's example is examples/quickstart.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXPECTED = {
    "quickstart.py": ["run {'command': 'ls -la', 'timeout': 30}", "denied by no_rm: rm -rf is not allowed"],
    "deny_dangerous_tools.py": ["'rm -rf /'} -> deny (no-destruction)", "failed; the action was denied"],
    "redact_arguments.py": ["'token': '***', 'timeout': 10} rewritten: True", "same object back: True"],
    "audit_log.py": ["event='tool_called'", "exc_type='ConnectionError'", "calls counted: 1"],
    "claude_permissions.py": [
        "'git status'} -> allow",
        "-> deny (denied by the Claude Code permission rule 'Bash(rm *)')",
    ],
    "otel_tracing.py": [
        "hookreg pre_tool_call_decide {",
        "'hookreg.decision': 'deny', 'hookreg.decided_by': 'no_rm'",
        "hookreg post_tool_call ERROR: hook 'flaky_audit' raised ConnectionError",
    ],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str) -> None:
    """Each core example runs as a script and prints what it demonstrates."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)], capture_output=True, text=True, check=True, timeout=60
    )
    output = result.stdout + result.stderr
    for fragment in EXPECTED[name]:
        assert fragment in output


def test_readme_example_is_the_quickstart() -> None:
    """The README's first code block is examples/quickstart.py, verbatim."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.DOTALL)
    assert block is not None
    assert block.group(1) == (ROOT / "examples" / "quickstart.py").read_text()


def test_readme_commands() -> None:
    """The README gives the two set-up commands, and CI runs the test one."""
    readme = (ROOT / "README.md").read_text()
    assert "pip install -e '.[dev]' && pytest" in readme
    assert "pip install -e '.[dev]' && pytest" in (ROOT / ".ci" / "run").read_text()
