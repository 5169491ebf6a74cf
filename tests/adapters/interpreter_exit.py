"""Run a script to its interpreter's exit and read what it printed: for what an adapter does at exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent


def printed_until_exit(tmp_path: Path, script: str) -> list[str]:
    """Run `script` (dedented; the adapter test modules importable) in a fresh interpreter; return its stdout lines.

    Fails when the interpreter exits non-zero, or reports an exception it ignored (a finalizer that raised).
    """
    path = tmp_path / "at_exit.py"
    path.write_text(f"import sys\nsys.path.insert(0, {str(HERE)!r})\n{textwrap.dedent(script)}", encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
    return done.stdout.splitlines()
