"""Running the real Claude Code CLI offline: installed at a pinned version, pointed at the fake Messages API only.

`find_cli` returns the ``claude`` executable of the pinned version (the repo's
git-ignored ``.cache/claude-code``, installed there with npm when missing, or
one on PATH of that very version), or says why there is none. `run_cli` runs
one scenario in a scratch project: ``HOME`` is a scratch directory, the API is
`FakeMessagesAPI` on 127.0.0.1, auto-update, telemetry, error reporting and
every other non-essential request are switched off through the variables the
CLI reads, and its Bash tool runs `record_bash` instead of a shell.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fake_api import FakeMessagesAPI
from .scenarios import CORPUS, Scenario, bind

__all__ = ["CLAUDE_CODE_VERSION", "CliRun", "Project", "find_cli", "run_cli"]

CLAUDE_CODE_VERSION = "2.1.332"
"""The CLI release the corpus is judged against (bump it, run ``nox -s claude_code``, reclassify what changed)."""

REPO = Path(__file__).resolve().parents[3]
CACHE = REPO / ".cache" / "claude-code"
_PACKAGE = f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"
_RECORD_BASH = Path(__file__).with_name("record_bash.py")

# What the CLI documents for running unattended and offline (each read by the pinned release).
_OFFLINE = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "DISABLE_GROWTHBOOK": "1",
    "DO_NOT_TRACK": "1",
    "IS_SANDBOX": "1",  # root may run it unattended
}


def _version(cli: str) -> str | None:
    try:
        done = subprocess.run([cli, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return None
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout.split() else None


def find_cli() -> tuple[str | None, str]:
    """The pinned CLI's path, installing it into the cache when npm is there; else ``None`` and why."""
    cached = CACHE / "node_modules" / ".bin" / "claude"
    for candidate in (str(cached), shutil.which("claude")):
        if candidate and Path(candidate).exists() and _version(candidate) == CLAUDE_CODE_VERSION:
            return candidate, ""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return None, (
            f"Cannot run the Claude Code conformance suite: node and npm are not installed, so Claude Code "
            f"{CLAUDE_CODE_VERSION} cannot be installed. Install Node.js 20+ (or run .ci/run, which installs it)."
        )
    done = subprocess.run(
        [npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--no-save", _PACKAGE],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or _version(str(cached)) != CLAUDE_CODE_VERSION:
        msg = (
            f"Cannot install {_PACKAGE} into {CACHE}: npm said\n{done.stdout}{done.stderr}\n"
            "Run the same npm install by hand to see why."
        )
        raise RuntimeError(msg)
    return str(cached), ""


@dataclass(frozen=True)
class Project:
    """One scenario's scratch directory, laid out alike for the CLI and for hookreg."""

    root: Path

    @property
    def dir(self) -> Path:
        """The project: the agent's working directory, with ``.claude/settings.json`` and ``.claude/hooks/``."""
        return self.root / "project"

    @property
    def settings(self) -> Path:
        return self.dir / ".claude" / "settings.json"

    @property
    def hook_log(self) -> Path:
        """Where the corpus's recording hook writes what each hook was sent (``HOOK_LOG``)."""
        return self.root / "hooks.jsonl"

    @property
    def bash_log(self) -> Path:
        """Where the recording Bash tool writes the commands that would have run."""
        return self.root / "bash.jsonl"

    def plugin(self, name: str) -> Path:
        return self.root / "plugins" / name

    @classmethod
    def create(cls, root: Path, scenario: Scenario) -> Project:
        """Copy the corpus's hooks, the scenario's settings, plugin and files into a fresh directory."""
        project = cls(root)
        shutil.copytree(CORPUS / "hooks", project.dir / ".claude" / "hooks")
        shutil.copy(CORPUS / "settings" / f"{scenario.settings}.json", project.settings)
        if scenario.plugin is not None:
            shutil.copytree(CORPUS / "plugins" / scenario.plugin, project.plugin(scenario.plugin))
        for name, text in scenario.files.items():
            (project.dir / name).write_text(text)
        return project

    def hook_entries(self) -> list[dict[str, Any]]:
        """What the recording hooks wrote, in order."""
        return _lines(self.hook_log)

    def commands(self) -> list[str]:
        """The Bash commands the agent ran (recorded, never executed), in order."""
        return [entry["command"] for entry in _lines(self.bash_log)]


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class CliRun:
    """What one CLI run showed: its JSON result, the requests the fake API got, and the project it ran in."""

    project: Project
    result: Mapping[str, Any]
    agent_requests: list[dict[str, Any]]
    side_requests: list[dict[str, Any]]
    returncode: int
    stderr: str


def _fake_bash(project: Project) -> Path:
    """A ``bash`` (the CLI accepts only a shell path naming bash or zsh) that is `record_bash`."""
    folder = project.root / "fakebin"
    folder.mkdir()
    shell = folder / "bash"
    shell.write_text(f'#!/bin/sh\nexec {sys.executable} {_RECORD_BASH} "$@"\n')
    shell.chmod(0o755)
    return shell


def run_cli(cli: str, scenario: Scenario, root: Path) -> CliRun:
    """Run `scenario` through the CLI in a fresh project under `root`."""
    project = Project.create(root, scenario)
    home = root / "home"
    home.mkdir()
    # Trusted, so the project's permission rules apply as they do for a user who accepted the dialog.
    trust = {"projects": {str(project.dir): {"hasTrustDialogAccepted": True}}}
    (home / ".claude.json").write_text(json.dumps(trust))
    tmp = root / "tmp"
    tmp.mkdir()
    args = [cli, "-p", scenario.prompt, "--output-format", "json"]
    if scenario.plugin is not None:
        args += ["--plugin-dir", str(project.plugin(scenario.plugin))]
    with FakeMessagesAPI(bind(scenario.script, project.dir)) as api:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "SHELL": "/bin/bash",
            "CLAUDE_CODE_SHELL": str(_fake_bash(project)),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-offline-test",
            "RECORD_BASH_LOG": str(project.bash_log),
            "HOOK_LOG": str(project.hook_log),
            **_OFFLINE,
        }
        done = subprocess.run(args, cwd=project.dir, env=env, capture_output=True, text=True, timeout=180, check=False)
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        result = {"unparsed_stdout": done.stdout}
    return CliRun(project, result, api.log.agent_requests, api.log.side_requests, done.returncode, done.stderr)
