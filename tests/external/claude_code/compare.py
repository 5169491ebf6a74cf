"""One run, seen alike from the CLI and from hookreg, and the aspects the two are compared on.

An `Observation` is what a run showed, with the scratch directory written
``<root>`` so that two runs compare: the Bash commands that would have run and
the files written (``tools``), the text the model read back for each call
(``results``), how many model calls the run made and how it ended (``run``),
the model call at which each context marker (``CTX_...``, printed only by the
corpus's hooks) first reached the model (``context``), and what each recorded
hook was sent (``stdin``). Each ``compare_<aspect>`` returns the differences
as sentences; none means the two agree.

Formatting differences the comparison reads past (each a documented one):
the CLI frames a blocked call's reason (``PreToolUse:Bash hook error: [<hook
command>]: <reason>``, plus ``This hook comes from the <name> plugin.``) where
the harness writes ``Permission denied: <reason>``, pydantic-ai ``{"error":
"<reason>"}`` and LangChain the reason alone; the CLI shows PostToolUse feedback in a message of its own where
hookreg appends it to the tool result (so lines carrying a ``CTX_`` marker are
compared under ``context``, not ``results``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .cli import CliRun, Project
from .hookreg_side import HookregRun

__all__ = ["ASPECTS", "COMPARE", "Observation", "from_cli", "from_hookreg"]

_MARKER = re.compile(r"CTX_[A-Z_]+")
_CLI_DENIAL = re.compile(r"^PreToolUse:\w+ hook error: (?:\[.*?\]: )?(.*)$", re.DOTALL)
_CLI_PLUGIN = re.compile(r"\n\nThis hook comes from the \S+ plugin\.$")
_HARNESS_DENIAL = "Permission denied: "

# What a hook's stdin field must show on both sides (DESIGN §10): the same value, or only the same JSON type.
_SAME_VALUE = frozenset(
    {
        "cwd",
        "permission_mode",
        "hook_event_name",
        "tool_name",
        "tool_input",
        "tool_use_id",
        "prompt",
        "message",
        "stop_hook_active",
        "last_assistant_message",
        "source",
        "reason",
        "trigger",
        "custom_instructions",
    }
)
_SAME_TYPE = frozenset({"session_id", "transcript_path", "tool_response", "error"})
CLI_ONLY: Mapping[str, str] = {
    # Fields the CLI sends that DESIGN §10 does not promise: read past, listed so that a new one is noticed.
    "prompt_id": "an id of the user prompt",
    "effort": "the model's effort setting",
    "duration_ms": "the tool's run time (PostToolUse)",
    "background_tasks": "background shells still running (Stop)",
    "session_crons": "scheduled wake-ups (Stop)",
}


@dataclass(frozen=True)
class Observation:
    """What one run showed, on either side."""

    commands: tuple[str, ...]
    files: Mapping[str, str]
    results: Mapping[str, str]
    model_calls: int
    ended: str
    final: str
    context: Mapping[str, int]
    hooks: tuple[Mapping[str, Any], ...]
    error: str | None = None  # hookreg raised instead of finishing the run


def _rooted(value: Any, root: str) -> Any:
    """`value` with the scratch directory written ``<root>``, at every level."""
    if isinstance(value, str):
        return value.replace(root, "<root>")
    if isinstance(value, list):
        return [_rooted(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _rooted(v, root) for k, v in value.items()}
    return value


def _read_back(text: str) -> str:
    """A result as compared: without the lines carrying hook feedback (compared under ``context``)."""
    return "\n".join(line for line in text.splitlines() if not _MARKER.search(line)).strip()


def _first_seen(requests: list[str]) -> dict[str, int]:
    seen: dict[str, int] = {}
    for index, text in enumerate(requests, start=1):
        for marker in _MARKER.findall(text):
            seen.setdefault(marker, index)
    return seen


def _written(project: Project) -> dict[str, str]:
    """The files the agent wrote: everything in the project but the copied ``.claude`` folder."""
    return {
        str(path.relative_to(project.dir)): path.read_text(errors="replace")
        for path in sorted(project.dir.rglob("*"))
        if path.is_file() and ".claude" not in path.relative_to(project.dir).parts
    }


def _cli_text(content: object) -> str:
    if isinstance(content, str):
        return content
    return (
        "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
        if isinstance(content, list)
        else ""
    )


def _cli_reason(text: str) -> str:
    found = _CLI_DENIAL.match(text)
    return _CLI_PLUGIN.sub("", found.group(1) if found else text)


def _hookreg_reason(text: str) -> str:
    """A refused call's reason without its loop's frame: the harness's prefix, pydantic-ai's ``{"error": ...}``."""
    if text.startswith('{"error":'):
        error = json.loads(text)
        if isinstance(error, dict) and set(error) == {"error"} and isinstance(error["error"], str):
            return error["error"]
    return text.removeprefix(_HARNESS_DENIAL)


def from_cli(run: CliRun) -> Observation:
    """The CLI's run: the results are the tool_result blocks of its last request."""
    root = str(run.project.root)
    results: dict[str, str] = {}
    last = run.agent_requests[-1]["messages"] if run.agent_requests else []
    for message in last:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "tool_result":
                results[part["tool_use_id"]] = _read_back(_cli_reason(_cli_text(part.get("content"))))
    final = str(run.result.get("result", ""))
    blocked = not run.agent_requests and "blocked by hook" in final
    return Observation(
        commands=tuple(_rooted(run.project.commands(), root)),
        files=_written(run.project),
        results=_rooted(results, root),
        model_calls=len(run.agent_requests),
        ended="prompt blocked" if blocked else "answered",
        final="" if blocked else final,
        context=_first_seen([json.dumps([r.get("system"), r["messages"]]) for r in run.agent_requests]),
        hooks=tuple(_rooted(run.project.hook_entries(), root)),
    )


def from_hookreg(project: Project, run: HookregRun | BaseException) -> Observation:
    """A hookreg loop's run (or the exception it raised, which every aspect then reports)."""
    root = str(project.root)
    if isinstance(run, BaseException):
        error = f"{type(run).__name__}: {run}"
        return Observation((), {}, {}, 0, "raised", "", {}, (), error=error)
    results = {k: _read_back(_hookreg_reason(v)) for k, v in run.results.items()}
    return Observation(
        commands=tuple(_rooted(project.commands(), root)),
        files=_written(project),
        results=_rooted(results, root),
        model_calls=len(run.requests),
        ended="prompt blocked" if run.stopped is not None else "answered",
        final=run.final,
        context=_first_seen(run.requests),
        hooks=tuple(_rooted(project.hook_entries(), root)),
    )


# --- the aspects ---------------------------------------------------------------------------------


def _differ(what: str, cli: object, ours: object) -> list[str]:
    return [] if cli == ours else [f"{what}: Claude Code {cli!r}, hookreg {ours!r}"]


def compare_tools(cli: Observation, ours: Observation) -> list[str]:
    """Which tool calls ran, with the input they ran with (after any rewrite), and the files they wrote.

    Calls of one answer may run concurrently (LangChain runs them in threads), so the commands compare as a set.
    """
    return _differ("Bash commands run", sorted(cli.commands), sorted(ours.commands)) + _differ(
        "files written", cli.files, ours.files
    )


def compare_results(cli: Observation, ours: Observation) -> list[str]:
    """What the model read back for each call."""
    out = []
    for call_id in sorted(set(cli.results) | set(ours.results)):
        out += _differ(f"the model read for call {call_id}", cli.results.get(call_id), ours.results.get(call_id))
    return out


def compare_run(cli: Observation, ours: Observation) -> list[str]:
    """Whether the run was stopped or went on: the model calls made, how it ended, its last answer."""
    return (
        _differ("model calls", cli.model_calls, ours.model_calls)
        + _differ("the run", cli.ended, ours.ended)
        + _differ("the final answer", cli.final, ours.final)
    )


def compare_context(cli: Observation, ours: Observation) -> list[str]:
    """The model call at which each hook's context first reached the model."""
    out = []
    for marker in sorted(set(cli.context) | set(ours.context)):
        out += _differ(f"model call first sent {marker}", cli.context.get(marker), ours.context.get(marker))
    return out


def _json_type(value: object) -> str:
    return (
        "null"
        if value is None
        else {dict: "object", list: "array", str: "string", bool: "boolean"}.get(type(value), "number")
    )


def _key(entry: Mapping[str, Any]) -> str:
    stdin = entry["stdin"]
    call = f" {stdin['tool_use_id']}" if "tool_use_id" in stdin else ""
    return f"hook {entry['label']!r} at {stdin.get('hook_event_name')}{call}"


def _stdin(where: str, cli: Mapping[str, Any], ours: Mapping[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(cli) | set(ours)):
        if name in CLI_ONLY and name not in ours:
            continue
        if name not in cli:
            out.append(f"{where}: hookreg sends {name!r} = {ours[name]!r}, which Claude Code does not send")
        elif name not in ours:
            out.append(f"{where}: hookreg does not send {name!r} (Claude Code: {cli[name]!r})")
        elif name in _SAME_TYPE:
            out += _differ(f"{where}: the type of {name!r}", _json_type(cli[name]), _json_type(ours[name]))
        elif name in _SAME_VALUE:
            out += _differ(f"{where}: {name!r}", cli[name], ours[name])
        else:
            out.append(f"{where}: field {name!r} is not classified in compare.py (Claude Code sent {cli[name]!r})")
    return out


def compare_stdin(cli: Observation, ours: Observation) -> list[str]:
    """What each recorded hook was sent (field by field), its working directory and its Claude variables."""
    out = []
    cli_by, ours_by = _grouped(cli.hooks), _grouped(ours.hooks)
    for key in sorted(set(cli_by) | set(ours_by)):
        mine, theirs = ours_by.get(key, []), cli_by.get(key, [])
        if not theirs and _raced_a_blocked_prompt(cli, mine):
            continue
        if len(mine) != len(theirs):
            out.append(f"{key} ran {len(theirs)} time(s) in Claude Code, {len(mine)} in hookreg")
        for a, b in zip(theirs, mine, strict=False):
            out += _stdin(key, a["stdin"], b["stdin"])
            out += _differ(f"{key}: its working directory", a["cwd"], b["cwd"])
            out += _differ(f"{key}: its environment", a["env"], b["env"])
    return out


def _raced_a_blocked_prompt(cli: Observation, mine: list[Mapping[str, Any]]) -> bool:
    """Whether hookreg's records are of a UserPromptSubmit hook whose sibling blocked the prompt in Claude Code.

    Claude Code runs a point's hooks in parallel and, in ``-p`` mode, ends the run as soon as one blocks the
    prompt, without waiting for the rest: whether a slower sibling's record lands is a race (it loses on a loaded
    machine). hookreg waits for every hook, so its record of such a sibling is no difference.
    """
    return cli.ended == "prompt blocked" and all(e["stdin"].get("hook_event_name") == "UserPromptSubmit" for e in mine)


def _grouped(entries: tuple[Mapping[str, Any], ...]) -> dict[str, list[Mapping[str, Any]]]:
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for entry in entries:
        grouped.setdefault(_key(entry), []).append(entry)
    return grouped


COMPARE: Mapping[str, Callable[[Observation, Observation], list[str]]] = {
    "tools": compare_tools,
    "results": compare_results,
    "run": compare_run,
    "context": compare_context,
    "stdin": compare_stdin,
}
ASPECTS = tuple(COMPARE)
