"""`python -m hookreg demo` / `points`, and the harness examples, run and say what they should."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Final

import pytest

import hookreg
import hookreg.__main__ as cli
from hookreg import HookPoint
from hookreg.__main__ import main, points_table
from hookreg.harness import RunResult

ROOT = Path(__file__).resolve().parents[2]
# The events DESIGN §7 lists for the library's own logger.
LIBRARY_EVENTS: Final = {
    "hook_registered",
    "hook_removed",
    "hook_replaced",
    "hook_denied",
    "hook_failed",
    "hook_timed_out",
    "run_stopped",
    "patch_conflict",
}


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m hookreg ARGS`` in a fresh interpreter, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "hookreg", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_demo_explains_itself_and_shows_each_decision() -> None:
    """`python -m hookreg demo`: a header naming the hooks and their file, the narration, hookreg's events apart,
    and at the end the registry table and the refused call's trace."""
    done = run_module("demo")
    assert (done.returncode, done.stderr) == (0, "")
    out = done.stdout
    head, _, rest = out.partition("\n\n")
    assert "hookreg/__main__.py" in head
    for hook in ("no_rm_rf", "add_timeout", "explain_missing_file", "grow_cap_on_truncation", "apply_cap"):
        assert f" {hook} " in head
    assert "<locals>" not in head
    assert "     user │ Tidy up the project directory" in rest
    assert "     hook │ add_timeout: shell gets timeout=30.0" in rest
    assert (
        '  [hookreg INFO] hook_denied point=pre_tool_call_decide hook=no_rm_rf reason="rm -rf is not allowed; '
        'delete files one by one"' in rest
    )
    assert "the model reads 'CHANGES.md does not exist; run `ls` to see the files'" in rest
    assert "again with max_tokens=48" in rest
    assert "[length]" in rest
    assert "      run │ completed after 6 model calls; files left: ['README.md', 'notes.txt']" in rest
    table = rest.split("The registry", 1)[1]
    assert "  pre_tool_call_decide  no_rm_rf " in table
    assert "<DispatchRecord pre_tool_call_decide shell (call-2): deny by no_rm_rf; hooks: no_rm_rf;" in table
    assert "<DispatchRecord permission_denied shell (call-2): done; hooks: report_denial;" in table


def test_demo_logs_only_the_librarys_own_events_under_hookreg() -> None:
    """Every record under "hookreg.*" during the demo is one of the library's events; structlog is never imported."""
    code = (
        "import json, logging, sys\n"
        "seen = []\n"
        "class Keep(logging.Handler):\n"
        "    def emit(self, record):\n"
        "        seen.append([record.name, getattr(record, 'event', None)])\n"
        "logging.getLogger().addHandler(Keep())\n"
        "logging.getLogger().setLevel(logging.DEBUG)\n"
        "from hookreg.__main__ import main\n"
        "main(['demo'])\n"
        "print(json.dumps({'records': seen, 'structlog': 'structlog' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["structlog"] is False
    hookreg_records = [(name, event) for name, event in report["records"] if name.split(".")[0] == "hookreg"]
    assert {name for name, _ in hookreg_records} == {"hookreg"}
    assert {event for _, event in hookreg_records} <= LIBRARY_EVENTS
    assert ("hookreg", "hook_denied") in hookreg_records


def test_points_prints_one_row_per_hook_point_with_what_its_hooks_return(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m hookreg points` prints one row per point: style, context, tools= and what its hooks return."""
    assert main(["points"]) == 0
    out = capsys.readouterr().out
    assert out == points_table() + "\n"
    lines = out.splitlines()
    assert lines[0].split() == ["point", "/", "decorator", "style", "context", "tools=", "hooks", "return"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2 : 2 + len(HookPoint)]}
    assert list(rows) == [point.value for point in HookPoint]
    assert rows["setup"] == ["observe", "SetupContext", "None"]
    assert rows["pre_tool_call_decide"] == ["decide", "PreToolCallDecideContext", "yes", "HookResult"]
    assert rows["model_turn_finished"] == ["decide", "ModelTurnFinishedContext", "TurnAction"]
    assert rows["transform_tool_input"][2:] == ["yes", "Mapping[str,", "object]", "|", "None"]
    assert rows["invalid_tool_call"][-3:] == ["InvalidToolCallAction", "|", "None"]
    assert "To pass: a decider passes with HookResult.allow()" in out


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_the_commands(flag: str) -> None:
    """`python -m hookreg --help` and `-h` print the usage and both commands, and exit 0."""
    done = run_module(flag)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: python -m hookreg [-h] [--version] {demo,points}")
    assert "  demo " in done.stdout
    assert "  points " in done.stdout
    assert "--version" in done.stdout


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    """`--version` prints the version from the package metadata."""
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"hookreg {version('hookreg')}\n"


def test_version_falls_back_to_the_package_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without package metadata, --version reads hookreg.__version__, else says "unknown"."""

    def missing(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(cli, "version", missing)
    assert cli.hookreg_version() == "unknown"
    monkeypatch.setattr(hookreg, "__version__", "9.9", raising=False)
    assert cli.hookreg_version() == "9.9"


def test_unknown_command_names_itself_and_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown command exits with status 2 and the error names it and the commands there are."""
    assert main(["dance"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m hookreg")
    assert "invalid choice: 'dance' (choose from 'demo', 'points')" in err


def test_no_command_is_a_usage_error() -> None:
    """`python -m hookreg` alone prints the usage and says a command is required."""
    done = run_module()
    assert done.returncode == 2
    assert "usage: python -m hookreg" in done.stderr
    assert "required: command" in done.stderr


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


def test_the_docs_reference_loop_snippet_runs() -> None:
    """The embedding guide's "Reference loop" example runs and its gate denies the rm -rf call."""
    text = (ROOT / "docs" / "guides" / "embedding.md").read_text()
    block = text.split("## Reference loop", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(block, "embedding.md", "exec"), namespace)
    result = namespace["result"]
    assert isinstance(result, RunResult)
    assert result.outcome.status == "completed"
    assert result.history[2].content == "Permission denied: no rm -rf"
