"""The corpus's scenarios: a settings file (and maybe a plugin), a scripted model, and what hookreg is known to miss.

Each scenario names a settings file of ``corpus/settings/``, the model's turns
(which tool calls it sends, then its final text) and the prompt. `gaps` maps an
aspect (see ``compare.py``), or ``"aspect/side"`` for one side only, to the
one-line disagreement hookreg shows today: that case is a strict xfail, so it
turns red the day hookreg starts agreeing. `ci` marks the subset ``.ci/run``
runs in a plain ``pytest``; ``nox -s claude_code`` runs them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .fake_api import ModelCall, ModelTurn

__all__ = ["CORPUS", "SCENARIOS", "Scenario", "bind"]

CORPUS = Path(__file__).with_name("corpus")


@dataclass(frozen=True)
class Scenario:
    """One run, played alike by the CLI and by hookreg."""

    name: str
    settings: str
    script: tuple[ModelTurn, ...]
    prompt: str = "go"
    plugin: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    gaps: Mapping[str, str] = field(default_factory=dict)
    ci: bool = True


def bash(call_id: str, command: str) -> ModelCall:
    """A Bash tool call."""
    return ModelCall("Bash", {"command": command, "description": "scripted"}, call_id)


def write(call_id: str, path: str, content: str) -> ModelCall:
    """A Write tool call (`path` relative to the project: the runner makes it absolute)."""
    return ModelCall("Write", {"file_path": "{project}/" + path, "content": content}, call_id)


def bind(script: tuple[ModelTurn, ...], project: Path) -> tuple[ModelTurn, ...]:
    """The script with ``{project}`` in its string arguments replaced by the project's directory."""

    def value(item: object) -> object:
        return item.replace("{project}", str(project)) if isinstance(item, str) else item

    return tuple(
        ModelTurn(
            turn.text, [ModelCall(c.tool_name, {k: value(v) for k, v in c.args.items()}, c.call_id) for c in turn.calls]
        )
        for turn in script
    )


def calls(*items: ModelCall, text: str = "") -> ModelTurn:
    return ModelTurn(text=text, calls=items)


def say(text: str) -> ModelTurn:
    return ModelTurn(text=text)


# The disagreements hookreg shows today, one line each (the cases xfail strictly on them).
# Deliberate differences, each listed in docs/guides/external.md ("Deliberate differences from Claude Code").
_TOOL_RESPONSE = (
    "deliberate: tool_response is the host tool's own result (the recording Bash returns text); "
    "the CLI's Bash returns an object (stdout, stderr, ...)"
)
_FAIL_CLOSED = "deliberate: a guard exiting 1 denies in hookreg (fail_closed=True); the CLI runs the tool"
_SHELL = "deliberate: shell 'bash' runs bash -c in hookreg; CLI 2.1.332 runs it through $SHELL (/bin/sh here)"

SCENARIOS: tuple[Scenario, ...] = (
    # Guards: exit 2 with stderr, JSON permissionDecision, a guard that crashes.
    Scenario(
        "guard-rm-rf", "guard-rm", (calls(bash("toolu_a", "rm -rf build"), bash("toolu_b", "ls build")), say("done"))
    ),
    Scenario(
        "guard-env-files",
        "protect-env",
        (
            calls(bash("toolu_a", "cat config/.env"), write("toolu_b", "notes.md", "# notes"), bash("toolu_c", "ls")),
            say("done"),
        ),
        ci=False,
    ),
    Scenario(
        "json-permission-decisions",
        "bash-policy",
        (
            calls(
                bash("toolu_a", "git status"),
                bash("toolu_b", "git push --force origin main"),
                bash("toolu_c", "curl -O https://example.com/x.tgz"),
                bash("toolu_d", "make build"),
            ),
            say("done"),
        ),
        gaps={"results": "deliberate: an unanswered ask reads 'no interaction hook'; the CLI shows the hook's reason"},
    ),
    Scenario(
        "guard-crashes",
        "crash",
        (calls(bash("toolu_a", "ls")), say("done")),
        gaps={"tools": _FAIL_CLOSED, "results": _FAIL_CLOSED},
        ci=False,
    ),
    # Rewrites.
    Scenario(
        "updated-input",
        "rewrite",
        (calls(bash("toolu_a", "pytest tests")), say("done")),
        gaps={"stdin": _TOOL_RESPONSE},
    ),
    # After edits: a formatter, a validator that blocks, additionalContext after Bash.
    Scenario(
        "after-edits",
        "after-edits",
        (
            calls(
                write("toolu_a", "notes.txt", "hello   \nworld \n"),
                write("toolu_b", "config.json", "{bad json"),
                bash("toolu_c", "ls"),
            ),
            say("done"),
        ),
    ),
    # Prompt checks and session context.
    Scenario("prompt-and-session-context", "prompt-context", (say("ok"),)),
    Scenario(
        "prompt-blocked",
        "prompt-context",
        (say("ok"),),
        prompt="deploy with password=hunter2",
    ),
    # Stop loops that read the transcript.
    Scenario(
        "stop-after-tests-ran", "stop-loop", (calls(bash("toolu_a", "pytest -q")), say("done"), say("really done"))
    ),
    Scenario("stop-blocks-once", "stop-loop", (say("done"), say("fine, done")), ci=False),
    # A plugin's hooks/hooks.json using ${CLAUDE_PLUGIN_ROOT}.
    Scenario(
        "plugin-hooks",
        "plain",
        (calls(bash("toolu_a", "git push origin main"), bash("toolu_b", "ls")), say("done")),
        plugin="audit",
    ),
    # Filters: `if`, matchers with |, regex matchers, `shell`, exec form.
    Scenario(
        "if-filter",
        "if-filter",
        (
            calls(
                bash("toolu_a", "git status"),
                bash("toolu_b", "git commit -m wip"),
                bash("toolu_c", "git commit -m 'ABC-12 fix parser'"),
            ),
            say("done"),
        ),
    ),
    Scenario(
        "matchers", "matchers", (calls(bash("toolu_a", "ls"), write("toolu_b", "a.txt", "a")), say("done")), ci=False
    ),
    Scenario(
        "shell-bash",
        "shell-bash",
        (calls(bash("toolu_a", "sudo apt-get install jq"), bash("toolu_b", "ls")), say("done")),
        gaps={"tools": _SHELL, "results": _SHELL},
        ci=False,
    ),
    Scenario("exec-form-args", "exec-form", (calls(bash("toolu_a", "ls")), say("done")), ci=False),
    # Every event's stdin, recorded.
    Scenario(
        "stdin-of-every-event",
        "record-all",
        (calls(bash("toolu_a", "ls"), write("toolu_b", "x.txt", "x")), say("done")),
        gaps={"stdin": _TOOL_RESPONSE + "; deliberate: SessionEnd's reason is the outcome ('completed')"},
    ),
)
