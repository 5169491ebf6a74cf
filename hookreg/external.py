"""Hook configs written for Claude Code or Recursive, loaded into a HookRegistry.

`load_hooks_config` reads a Claude Code settings file (its ``"hooks"`` object)
or a Recursive ``hooks.json`` and registers one hook per event, in a registry
of its own that it includes into yours: ``inclusion.remove()`` unloads them all.

Example:
    >>> from hookreg import HookRegistry
    >>> from hookreg.external import load_hooks_config
    >>> registry = HookRegistry()
    >>> config = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 0"}]}]}}
    >>> inclusion = load_hooks_config(registry, config)
    >>> registry.has_hooks("pre_tool_call_decide")
    True
    >>> inclusion.remove()
    True

Choices made where the two hosts' references leave room, each one place in
this module:

- **One gate per event.** Every entry of an event becomes part of one hook,
  which runs the matching commands (in config order on the sync surface,
  concurrently on the async one) and combines their answers: deny beats ask
  beats allow, reasons of the winning kind are joined with ``"; "``, and the
  last ``updatedInput`` in config order wins. ``continue: false`` from any
  entry raises `StopRun` whatever the others said.
- **Fail closed.** A command that exits with an unexpected status, times out
  (it is killed, with every process it started), cannot start, or prints
  something that starts with ``{`` or ``[`` but is not a JSON object of the
  protocol's shape, and an HTTP hook that answers a non-2xx status or cannot connect,
  is a *failure*. At a gate a failure denies unless the entry says
  ``"onFailure": "allow"`` (Claude Code) or ``"fail_mode": "open"``
  (Recursive), or the config was loaded with ``fail_closed=False``; at
  ``Stop`` a failure lets the run stop (hookreg's rule for failing ``stop``
  hooks); observers' failures are logged and ignored. ``"onFailure":
  "block"`` / ``"fail_mode": "closed"`` make one entry fail closed under
  ``fail_closed=False``. Both hosts fail open; hookreg does not by default.
- **Plain text on stdout** (not starting with ``{`` or ``[``) is ignored, as
  in Claude Code.
- **PermissionRequest** runs at ``on_interaction``, where a context carries no
  tool arguments: ``tool_input`` is ``{}``. Only ``decision.behavior:
  "allow"`` approves. When no entry decides (none matched, none answered, or a
  failure was let through) the hook counts as not having run, as a failed and
  ignored hook does: another ``on_interaction`` hook's answer decides, and a
  question that only such hooks saw is denied.
- **The kept answer.** At ``PreToolUse`` the transform runs the commands and
  keeps their answer in ``ctx.run.turn_scratchpad`` for the gate of the very
  same ``resolve_tool_call`` (a token private to it, never the call id alone),
  with the canonical JSON of the arguments the commands judged; the gate uses
  it only when its own arguments read the same, else it runs the commands on
  the arguments that will execute.
- **Matchers of non-tool events** are honoured for ``SessionStart`` (source
  ``"startup"``) and ``PreCompact`` (trigger ``"auto"``); the others match all.
- **HTTP hooks** expand ``$VAR`` and ``${VAR}`` in header values from
  ``allowedEnvVars`` only; any other reference becomes empty. The timeout
  bounds each network operation on the sync surface and the whole request on
  the async one.
- **Logging** names the event and the entry (``hooks.PreToolUse[0].hooks[1]``),
  never a command, an argument, or a hook's output.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import re
import shlex
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, final

from hookreg import _commands
from hookreg._commands import Failure, Ran
from hookreg._dispatch import resolving
from hookreg._errors import HookTypeError, HookValueError, StopRun
from hookreg._log import log
from hookreg._points import HookPoint, HookStyle
from hookreg._results import NO_ANSWER, Decision, HookResult
from hookreg._surface import HookRegistry, HookReturn

if TYPE_CHECKING:
    from hookreg._context import RunContext
    from hookreg._registration import Inclusion

__all__ = ["Format", "load_hooks_config"]

Format = Literal["claude", "recursive"]
"""The two config formats: Claude Code settings and Recursive's ``hooks.json``."""

_P = HookPoint
_GATE: Final = (_P.TRANSFORM_TOOL_INPUT, _P.PRE_TOOL_CALL_DECIDE)
_CLAUDE_EVENTS: Final[Mapping[str, tuple[HookPoint, ...]]] = {
    "PreToolUse": _GATE,
    "PermissionRequest": (_P.ON_INTERACTION,),
    "PostToolUse": (_P.POST_TOOL_CALL,),
    "PostToolUseFailure": (_P.POST_TOOL_CALL_FAILURE,),
    "UserPromptSubmit": (_P.USER_PROMPT_SUBMIT,),
    "Stop": (_P.STOP,),
    "SubagentStart": (_P.SUBAGENT_START,),
    "SubagentStop": (_P.SUBAGENT_STOP,),
    "SessionStart": (_P.ON_SESSION_START,),
    "SessionEnd": (_P.ON_SESSION_END,),
    "PreCompact": (_P.PRE_COMPACT,),
    "Notification": (_P.NOTIFICATION,),
}
_RECURSIVE_EVENTS: Final[Mapping[str, tuple[HookPoint, ...]]] = {
    "PreToolCall": _GATE,
    "PostToolCall": (_P.POST_TOOL_CALL, _P.POST_TOOL_CALL_FAILURE),  # Recursive fires it for failures too
    "PostToolCallFailure": (_P.POST_TOOL_CALL_FAILURE,),
    "PermissionRequest": (_P.ON_INTERACTION,),
    "PermissionDenied": (_P.PERMISSION_DENIED,),
    "SessionStart": (_P.ON_SESSION_START,),
    "SessionEnd": (_P.ON_SESSION_END,),
    "UserPromptSubmit": (_P.USER_PROMPT_SUBMIT,),
    "Stop": (_P.STOP,),
    "SubagentStart": (_P.SUBAGENT_START,),
    "SubagentStop": (_P.SUBAGENT_STOP,),
    "Notification": (_P.NOTIFICATION,),
    "Setup": (_P.SETUP,),
}
_RECURSIVE_BY_KEY: Final = {name.casefold(): name for name in _RECURSIVE_EVENTS}
_DEFAULT_TIMEOUT: Final[Mapping[Format, float]] = {"claude": 600.0, "recursive": 5.0}
_SKIPPED_TYPES: Final = ("prompt", "agent", "mcp_tool")
# Claude Code: a matcher of only these characters is a name or a list of names; anything else is a regex.
_PLAIN_MATCHER: Final = re.compile(r"[A-Za-z0-9_\-, |]+")
_RECURSIVE_MATCHER: Final = re.compile(r"([^()]+)\(([^()]+)\)")
_FIRST_ARGS: Final = ("command", "path", "goal", "input")
_NON_TOOL_MATCH_VALUES: Final = {"SessionStart": "startup", "PreCompact": "auto"}
_GATE_POINTS: Final = frozenset(
    {_P.PRE_TOOL_CALL_DECIDE, _P.TRANSFORM_TOOL_INPUT, _P.USER_PROMPT_SUBMIT, _P.ON_INTERACTION}
)
_TOKENS: Final = itertools.count()

Matcher = Callable[[str | None, Mapping[str, object]], bool]


# --- loading ------------------------------------------------------------------------


def load_hooks_config(  # noqa: PLR0913 -- the documented options
    registry: HookRegistry,
    source: str | os.PathLike[str] | Mapping[str, object],
    *,
    format: Format | None = None,
    strict: bool = False,
    project_dir: str | os.PathLike[str] | None = None,
    fail_closed: bool = True,
) -> Inclusion:
    """Load Claude Code or Recursive hook entries into `registry`, as one included registry.

    Args:
        registry: Where the hooks run.
        source: A JSON file's path, or the parsed mapping.
        format: ``"claude"`` (a top-level ``"hooks"`` object), ``"recursive"``
            (keys are Recursive's event names), or ``None`` to detect it.
        strict: Refuse, instead of skipping with a ``config_entry_skipped``
            warning, an event or hook type hookreg does not map.
        project_dir: ``CLAUDE_PROJECT_DIR`` for Claude Code commands; by
            default the current directory when loading.
        fail_closed: Whether a failing entry denies at a gate (hookreg's
            default) or lets the action go ahead (both hosts' behaviour).
            An entry's own ``onFailure`` / ``fail_mode`` overrides it.

    Returns:
        The `Inclusion`: ``remove()`` unloads every hook of the config.

    Raises:
        HookValueError: The config is malformed (the message names the entry),
            its format cannot be told, or under `strict` it holds an event or
            hook type hookreg does not map.
        HookTypeError: `source` is neither a path nor a mapping.
    """
    if not isinstance(registry, HookRegistry):
        msg = f"Cannot load hooks into {registry!r}: it is not a HookRegistry. Pass the registry the hooks run in."
        raise HookTypeError(msg)
    data, where = _read(source)
    dialect = _detect(data, where, format)
    folder = os.fspath(project_dir) if project_dir is not None else os.getcwd()
    loader = _Loader(dialect, strict=strict, fail_closed=fail_closed)
    events = loader.claude(data) if dialect == "claude" else loader.recursive(data)
    own = HookRegistry()
    state = _State()
    for event, points, entries in events:
        for point in points:
            hook = _EventHook(state, dialect, event, point, entries, folder, kept=points == _GATE)
            own.register(point, hook, name=f"{dialect}:{event}")
    return registry.include(own)


def _read(source: object) -> tuple[Mapping[str, object], str]:
    if isinstance(source, Mapping):
        return source, "the config mapping"
    if not isinstance(source, str | os.PathLike):
        msg = f"Cannot load hooks from {type(source).__name__}: pass a JSON file's path or a mapping."
        raise HookTypeError(msg)
    path = Path(source)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        msg = f"Cannot load hooks from {path}: it is not valid JSON (line {exc.lineno}). Fix the file."
        raise HookValueError(msg) from None
    if not isinstance(data, Mapping):
        msg = f"Cannot load hooks from {path}: it holds a JSON {type(data).__name__}, not an object."
        raise HookValueError(msg)
    return data, str(path)


def _detect(data: Mapping[str, object], where: str, format: object) -> Format:
    if format == "claude":
        return "claude"
    if format == "recursive":
        return "recursive"
    if format is not None:
        msg = f"Cannot load hooks from {where}: format={format!r} is not a format. Use 'claude', 'recursive' or None."
        raise HookValueError(msg)
    if "hooks" in data:
        return "claude"
    if any(isinstance(key, str) and key.casefold() in _RECURSIVE_BY_KEY for key in data):
        return "recursive"
    msg = (
        f"Cannot load hooks from {where}: it has neither a top-level 'hooks' object (Claude Code) nor "
        "Recursive's event names as keys. Pass format= if it is one of them."
    )
    raise HookValueError(msg)


@final
@dataclasses.dataclass(eq=False, slots=True)
class _Entry:
    """One hook of the config, checked and ready to run."""

    name: str  # its path in the config: how logs and reasons name it
    matcher: Matcher | None  # None: every call
    command: str | None = None  # Claude Code: through the shell
    argv: tuple[str, ...] | None = None  # Recursive: run directly
    url: str | None = None
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    allowed_env: frozenset[str] = frozenset()
    timeout: float = 600.0
    fail_open: bool = False
    once: bool = False
    background: bool = False
    rewake: bool = False
    claimed: bool = False  # a `once` entry that already ran


class _Loader:
    """Turns a config mapping into ``(event, points, entries)``, refusing malformed entries by name."""

    def __init__(self, dialect: Format, *, strict: bool, fail_closed: bool) -> None:
        self.dialect: Format = dialect
        self.strict = strict
        self.fail_closed = fail_closed
        self._events = _CLAUDE_EVENTS if dialect == "claude" else _RECURSIVE_EVENTS

    def claude(self, data: Mapping[str, object]) -> list[tuple[str, tuple[HookPoint, ...], list[_Entry]]]:
        hooks = data.get("hooks")
        if not isinstance(hooks, Mapping):
            raise _malformed("hooks", f"is a {type(hooks).__name__}, not an object of events")
        events = []
        for event, groups in hooks.items():
            where = f"hooks.{event}"
            points = _CLAUDE_EVENTS.get(event) if isinstance(event, str) else None
            if points is None:
                self._skip(where, f"hookreg does not map the Claude Code event {event!r}")
                continue
            entries = [
                entry
                for i, group in enumerate(_sequence(groups, where))
                for entry in self._group(group, f"{where}[{i}]", event)
            ]
            if entries:
                events.append((event, points, entries))
        return events

    def recursive(self, data: Mapping[str, object]) -> list[tuple[str, tuple[HookPoint, ...], list[_Entry]]]:
        found: dict[str, list[_Entry]] = {}
        for key, items in data.items():
            where = str(key)
            event = _RECURSIVE_BY_KEY.get(key.casefold()) if isinstance(key, str) else None
            if event is None:
                self._skip(where, f"hookreg does not map the Recursive event {key!r}")
                continue
            for i, item in enumerate(_sequence(items, where)):
                if isinstance(item, Mapping) and "hooks" in item:
                    found.setdefault(event, []).extend(self._group(item, f"{where}[{i}]", event))
                else:
                    entry = self._entry(item, f"{where}[{i}]", event, None)
                    if entry is not None:
                        found.setdefault(event, []).append(entry)
        return [(event, _RECURSIVE_EVENTS[event], entries) for event, entries in found.items() if entries]

    def _group(self, group: object, where: str, event: str) -> list[_Entry]:
        if not isinstance(group, Mapping):
            raise _malformed(where, f"is a {type(group).__name__}, not an object with 'matcher' and 'hooks'")
        matcher = self._matcher(group.get("matcher"), f"{where}.matcher", event)
        entries = (
            self._entry(h, f"{where}.hooks[{j}]", event, matcher)
            for j, h in enumerate(_sequence(group.get("hooks"), f"{where}.hooks"))
        )
        return [entry for entry in entries if entry is not None]

    def _matcher(self, text: object, where: str, event: str) -> Matcher | None:
        if text is None:
            return None
        if not isinstance(text, str):
            raise _malformed(where, f"is a {type(text).__name__}, not a string")
        if text in {"", "*"}:
            return None
        tool_event = all(point.is_tool_scoped for point in self._events[event])
        if self.dialect == "recursive":
            recursive = _recursive_matcher(text, where)
            return recursive if tool_event else None
        if _PLAIN_MATCHER.fullmatch(text):
            names = frozenset(part.strip() for part in re.split(r"[|,]", text) if part.strip())
            matcher: Matcher = lambda value, _args: value in names  # noqa: E731 -- one line each
        else:
            try:
                pattern = re.compile(text)
            except re.error as exc:
                raise _malformed(where, f"is not a valid regular expression ({exc.msg})") from None
            matcher = lambda value, _args: value is not None and pattern.search(value) is not None  # noqa: E731
        fixed = _NON_TOOL_MATCH_VALUES.get(event)
        if fixed is not None:
            return lambda _value, args: matcher(fixed, args)
        if not tool_event:
            return None  # hookreg does not know the value this event's matcher reads: match all
        return matcher

    def _entry(self, item: object, where: str, event: str, matcher: Matcher | None) -> _Entry | None:
        if not isinstance(item, Mapping):
            raise _malformed(where, f"is a {type(item).__name__}, not an object")
        if self.dialect == "recursive":
            matcher = self._matcher(item.get("matcher"), f"{where}.matcher", event) or matcher
        kind = item.get("type", "command" if "command" in item or self.dialect == "recursive" else None)
        if kind in _SKIPPED_TYPES or (isinstance(kind, str) and kind not in {"command", "http"}):
            self._skip(where, f"hookreg does not run {kind!r} hooks")
            return None
        if kind is None:
            raise _malformed(where, "has no 'type'. Give it 'type': 'command' with a 'command', or 'http' with a 'url'")
        if not isinstance(kind, str):
            raise _malformed(where, f"has a 'type' that is a {type(kind).__name__}, not a string")
        entry = _Entry(name=where, matcher=matcher, timeout=self._timeout(item, where))
        entry.fail_open = self._fail_open(item, where)
        if kind == "http":
            self._http(entry, item, where)
        else:
            command = item.get("command")
            if not isinstance(command, str) or not command.strip():
                raise _malformed(where, "has no command. Give it a non-empty 'command' string")
            if self.dialect == "claude":
                entry.command = command
            else:
                try:
                    entry.argv = tuple(shlex.split(command))
                except ValueError as exc:
                    raise _malformed(where, f"has a command that cannot be split into words ({exc})") from None
        if self.dialect == "recursive":
            entry.once = self._flag(item, "once", where)
            entry.rewake = self._flag(item, "async_rewake", where)
            entry.background = self._flag(item, "async", where) or entry.rewake
        return entry

    def _http(self, entry: _Entry, item: Mapping[str, object], where: str) -> None:
        url = item.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise _malformed(where, "has no http(s) 'url'. Give the http hook the URL it posts to")
        headers = item.get("headers", {})
        if not isinstance(headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise _malformed(f"{where}.headers", "must be an object of string header values")
        allowed = item.get("allowedEnvVars", [])
        if not isinstance(allowed, list) or not all(isinstance(name, str) for name in allowed):
            raise _malformed(f"{where}.allowedEnvVars", "must be a list of environment variable names")
        entry.url, entry.headers, entry.allowed_env = url, dict(headers), frozenset(allowed)

    def _timeout(self, item: Mapping[str, object], where: str) -> float:
        timeout = item.get("timeout", _DEFAULT_TIMEOUT[self.dialect])
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < 1e9:
            raise _malformed(f"{where}.timeout", "must be a positive number of seconds")
        return float(timeout)

    def _fail_open(self, item: Mapping[str, object], where: str) -> bool:
        key, choices = ("onFailure", {"allow": True, "block": False, "deny": False})
        if self.dialect == "recursive":
            key, choices = ("fail_mode", {"open": True, "closed": False})
        value = item.get(key)
        if value is None:
            return not self.fail_closed
        if not isinstance(value, str) or value not in choices:
            raise _malformed(f"{where}.{key}", f"must be one of {sorted(choices)}, not {value!r}")
        return choices[value]

    def _flag(self, item: Mapping[str, object], key: str, where: str) -> bool:
        value = item.get(key, False)
        if not isinstance(value, bool):
            raise _malformed(f"{where}.{key}", f"must be true or false, not {type(value).__name__}")
        return value

    def _skip(self, where: str, why: str) -> None:
        if self.strict:
            msg = f"Cannot load hook config entry {where}: {why}. Remove it, or load with strict=False to skip it."
            raise HookValueError(msg)
        log("warning", "config_entry_skipped", entry=where, why=why)


def _sequence(value: object, where: str) -> Sequence[object]:
    if value is None:
        raise _malformed(where, "is missing. Give it a list")
    if not isinstance(value, list):
        raise _malformed(where, f"is a {type(value).__name__}, not a list")
    return value


def _malformed(where: str, why: str) -> HookValueError:
    return HookValueError(f"Cannot load hook config entry {where}: it {why}.")


def _recursive_matcher(text: str, where: str) -> Matcher:
    if "(" not in text and ")" not in text:
        return lambda value, _args: value == text
    parts = _RECURSIVE_MATCHER.fullmatch(text)
    if parts is None or not parts.group(1).strip():
        raise _malformed(where, f"{text!r} is malformed. Write 'Tool' or 'Tool(prefix *)'")
    name, pattern = parts.group(1).strip(), parts.group(2)
    prefix = pattern.removesuffix("*")
    exact = prefix == pattern

    def matches(value: str | None, args: Mapping[str, object]) -> bool:
        if value != name:
            return False
        first = _first_argument(args)
        return first is not None and (first == pattern if exact else first.startswith(prefix))

    return matches


def _first_argument(args: Mapping[str, object]) -> str | None:
    """What a Recursive ``Tool(...)`` matcher reads: command, path, goal or input, else the first string argument."""
    key = next((k for k in _FIRST_ARGS if k in args), None)
    if key is not None:
        value = args[key]
        return value if isinstance(value, str) else None
    return next((v for v in args.values() if isinstance(v, str)), None)


# --- answers ------------------------------------------------------------------------


@final
@dataclasses.dataclass(frozen=True, slots=True)
class _Answer:
    """What one entry (or one event's entries combined) said."""

    decision: Decision | None = None  # None: no answer (a pass)
    reason: str = ""
    updated_input: Mapping[str, object] | None = None
    stop: str | None = None  # continue: false -> StopRun(stop)


_NO_ANSWER: Final = _Answer()
_RANK: Final = (Decision.DENY, Decision.ASK, Decision.ALLOW)


def _combine(answers: Sequence[_Answer]) -> _Answer:
    """Claude Code's rule: deny beats ask beats allow; the last updatedInput wins; any stop stops."""
    stop = next((a.stop for a in answers if a.stop is not None), None)
    decision = next((d for d in _RANK if any(a.decision is d for a in answers)), None)
    reason = "; ".join(dict.fromkeys(a.reason for a in answers if a.decision is decision and a.reason))
    updated = next((a.updated_input for a in reversed(answers) if a.updated_input is not None), None)
    return _Answer(decision, reason, updated, stop)


def _json_object(stdout: str) -> Mapping[str, object] | None:
    """Stdout's JSON object; ``None`` for plain text. Text starting with ``{`` or ``[`` must be one."""
    text = stdout.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise Failure("printed invalid JSON on stdout", "JSONDecodeError") from None
    if not isinstance(data, Mapping):
        raise Failure("printed JSON that is not an object", "ValueError")
    return data


def _field(data: Mapping[str, object], key: str, kind: type, default: Any = None) -> Any:
    value = data.get(key, default)
    if value is not default and not isinstance(value, kind):
        raise Failure(f"answered {key!r} with a {type(value).__name__}", "ValueError")
    return value


def _choice(data: Mapping[str, object], key: str, choices: Mapping[str, Decision | None]) -> Decision | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or value not in choices:
        raise Failure(f"answered {key!r} with a value that is not one of {sorted(choices)}", "ValueError")
    return choices[value]


_PERMISSION: Final = {"allow": Decision.ALLOW, "deny": Decision.DENY, "ask": Decision.ASK, "defer": None}
_BEHAVIOR: Final = {"allow": Decision.ALLOW, "deny": Decision.DENY}
_TOP_DECISION: Final = {"block": Decision.DENY, "approve": Decision.ALLOW}
_ACTION: Final = {"continue": None, "skip": Decision.DENY, "error": Decision.DENY}
_RECURSIVE_PERMISSION: Final = {"allow": Decision.ALLOW, "deny": Decision.DENY, "passthrough": None}


def _claude_answer(entry: _Entry, ran: Ran) -> _Answer:
    if ran.code == 2:
        return _Answer(Decision.DENY, ran.stderr.strip() or f"blocked by hook {entry.name}")
    if ran.code != 0:
        raise Failure(f"exited with status {ran.code}", "ExitStatus")
    data = _json_object(ran.stdout)
    if data is None:
        return _NO_ANSWER
    stop = None
    if _field(data, "continue", bool, True) is False:
        stop = _field(data, "stopReason", str) or f"stopped by hook {entry.name}"
    answers = [_Answer(_choice(data, "decision", _TOP_DECISION), _field(data, "reason", str, ""), None, stop)]
    specific = _field(data, "hookSpecificOutput", Mapping)
    if specific is not None:
        updated = _field(specific, "updatedInput", Mapping)
        reason = _field(specific, "permissionDecisionReason", str, "")
        answers.append(_Answer(_choice(specific, "permissionDecision", _PERMISSION), reason, updated))
        request = _field(specific, "decision", Mapping)  # PermissionRequest's answer
        if request is not None:
            behavior = _choice(request, "behavior", _BEHAVIOR)
            answers.append(_Answer(behavior, _field(request, "message", str, "")))
    return _combine(answers)


def _recursive_answer(entry: _Entry, ran: Ran) -> _Answer:
    if ran.code != 0:
        if entry.rewake and ran.code == 2:
            return _Answer(stop=f"hook {entry.name} asked to stop the run")
        raise Failure(f"exited with status {ran.code}", "ExitStatus")
    data = _json_object(ran.stdout)
    if data is None:
        return _NO_ANSWER
    message = _field(data, "message", str, "")
    return _combine(
        [
            _Answer(_choice(data, "action", _ACTION), message),
            _Answer(_choice(data, "permissionDecision", _RECURSIVE_PERMISSION), message),
        ]
    )


# --- what a hook is sent ----------------------------------------------------------------


def _describe(error: object) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _claude_payload(event: str, point: HookPoint, ctx: Any) -> dict[str, object]:
    run: RunContext = ctx.run
    payload: dict[str, object] = {
        "session_id": run.session_id,
        "transcript_path": None,
        "cwd": os.getcwd(),
        "permission_mode": "default",
        "hook_event_name": event,
    }
    if point.is_tool_scoped:
        payload["tool_name"] = ctx.tool_name
        payload["tool_input"] = dict(getattr(ctx, "args", {}))
        if hasattr(ctx, "call_id"):
            payload["tool_use_id"] = ctx.call_id
    extra: Mapping[str, Mapping[str, object]] = {
        "PostToolUse": {"tool_response": getattr(ctx, "result", None)},
        "PostToolUseFailure": {"error": _describe(getattr(ctx, "error", ""))},
        "UserPromptSubmit": {"prompt": getattr(ctx, "content", None)},
        "Notification": {"message": getattr(ctx, "message", None)},
        "Stop": {"stop_hook_active": getattr(ctx, "continuation_count", 0) > 0},
        "SubagentStop": {"stop_hook_active": False},
        "SessionStart": {"source": "startup"},
        "SessionEnd": {"reason": "other"},
        "PreCompact": {"trigger": "auto", "custom_instructions": ""},
    }
    payload.update(extra.get(event, {}))
    return payload


def _recursive_payload(event: str, point: HookPoint, ctx: Any) -> dict[str, object]:
    payload: dict[str, object] = {"event": event, "mode": "default", "depth": ctx.run.depth}
    if point.is_tool_scoped:
        payload["toolName"] = ctx.tool_name
        payload["args"] = dict(getattr(ctx, "args", {}))
    for field, name in (("content", "content"), ("message", "message"), ("reason", "reason"), ("goal", "content")):
        value = getattr(ctx, field, None)
        if isinstance(value, str):
            payload[name] = value
    if hasattr(ctx, "response_text"):
        payload["content"] = ctx.response_text
    if hasattr(ctx, "outcome"):
        payload["reason"] = ctx.outcome.status
    if hasattr(ctx, "error"):
        payload["error"] = _describe(ctx.error)
    return payload


# --- one hook per event and point -----------------------------------------------------------


_KeptKey = tuple[int, "weakref.ref[object]", str]  # (config, the resolve, call_id)


class _Kept(dict[_KeptKey, tuple[str, _Answer]]):
    """PreToolUse answers the transform computed, waiting for the gate of the same resolve.

    Each is kept with the canonical JSON of the arguments the commands judged, and
    lives in ``ctx.run.turn_scratchpad``; an answer whose resolve has ended unused
    (an earlier gate denied) is dropped when the next one is kept.
    """


def _canonical(args: Mapping[str, object]) -> str:
    """The arguments as the commands read them: what the gate compares before using a kept answer."""
    return json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


@final
class _State:
    """What the hooks of one loaded config share."""

    def __init__(self) -> None:
        self.token = next(_TOKENS)
        self.lock = threading.Lock()
        self.pending_stop: str | None = None  # an async_rewake hook asked to stop the run

    def check_stop(self) -> None:
        with self.lock:
            reason, self.pending_stop = self.pending_stop, None
        if reason is not None:
            raise StopRun(reason)


@final
class _EventHook:
    """All entries of one event at one point: a dual-path hook (``__call__`` sync, ``acall`` async)."""

    def __init__(  # noqa: PLR0913, PLR0917 -- internal, built in one place
        self,
        state: _State,
        dialect: Format,
        event: str,
        point: HookPoint,
        entries: Sequence[_Entry],
        project_dir: str,
        *,
        kept: bool,
    ) -> None:
        self._state = state
        self._dialect = dialect
        self._event = event
        self._point = point
        self._entries = tuple(entries)
        self._project_dir = project_dir if dialect == "claude" else None
        self._kept = kept  # PreToolUse: the transform keeps its answer for the gate
        self._name = f"{dialect}:{event}"

    def __repr__(self) -> str:
        return f"<{self._dialect} {self._event} hook at {self._point}: {len(self._entries)} entries>"

    def __call__(self, ctx: Any) -> HookReturn:
        answer = self._kept_answer(ctx)
        if answer is None:
            body, entries = self._start(ctx)
            answer = _combine([self._outcome(entry, body) for entry in entries])
        return self._finish(ctx, answer)

    async def acall(self, ctx: Any) -> HookReturn:
        """The async path: the entries run concurrently, none blocks the event loop."""
        answer = self._kept_answer(ctx)
        if answer is None:
            body, entries = self._start(ctx)
            answer = _combine(await asyncio.gather(*(self._aoutcome(e, body) for e in entries)))
        return self._finish(ctx, answer)

    # -- the steps both paths share --

    def _key(self, ctx: Any) -> _KeptKey | None:
        """Where this call's PreToolUse answer is kept: only inside a resolve_tool_call, which owns the token."""
        token = resolving()
        return None if token is None else (self._state.token, weakref.ref(token), ctx.call_id)

    def _kept_answer(self, ctx: Any) -> _Answer | None:
        """The transform's answer for this very call, if the commands judged exactly the args this gate sees."""
        self._state.check_stop()
        if not self._kept or self._point is not _P.PRE_TOOL_CALL_DECIDE:
            return None
        key = self._key(ctx)
        if key is None:
            return None
        found: list[tuple[str, _Answer]] = []

        def pop(kept: _Kept) -> _Kept:
            if key in kept:
                found.append(kept[key])
            return _Kept({k: v for k, v in kept.items() if k != key})

        ctx.run.turn_scratchpad.update(_Kept, pop)
        if found and found[0][0] == _canonical(ctx.args):
            return found[0][1]
        return None  # changed since (a later transform, a change in place): the commands judge what runs

    def _start(self, ctx: Any) -> tuple[bytes, list[_Entry]]:
        """Pick the entries this call matches; launch the background ones; return the payload and the rest."""
        tool = getattr(ctx, "tool_name", None)
        args: Mapping[str, object] = getattr(ctx, "args", {})
        chosen = []
        with self._state.lock:
            for entry in self._entries:
                if entry.matcher is not None and not entry.matcher(tool, args):
                    continue
                if entry.once:
                    if entry.claimed:
                        continue
                    entry.claimed = True
                chosen.append(entry)
        if not chosen:
            return b"", []
        if self._dialect == "claude":
            payload = _claude_payload(self._event, self._point, ctx)
        else:
            payload = _recursive_payload(self._event, self._point, ctx)
        body = json.dumps(payload, default=str).encode()
        for entry in chosen:
            if entry.background:
                threading.Thread(target=self._background, args=(entry, body), daemon=True).start()
        return body, [entry for entry in chosen if not entry.background]

    def _run(self, entry: _Entry, body: bytes) -> Ran:
        if entry.url is not None:
            return _commands.post(self._post(entry), body)
        return _commands.run(self._launch(entry), body)

    async def _aoutcome(self, entry: _Entry, body: bytes) -> _Answer:
        try:
            if entry.url is not None:
                ran = await _commands.apost(self._post(entry), body)
            else:
                ran = await _commands.arun(self._launch(entry), body)
            return self._interpret(entry, ran)
        except Failure as failure:
            return self._failed(entry, failure)

    def _launch(self, entry: _Entry) -> _commands.Launch:
        env = {} if self._project_dir is None else {"CLAUDE_PROJECT_DIR": self._project_dir}
        return _commands.Launch(entry.command, entry.argv, entry.timeout, env)

    @staticmethod
    def _post(entry: _Entry) -> _commands.Post:
        headers = {name: _commands.expand(value, entry.allowed_env) for name, value in entry.headers.items()}
        return _commands.Post(str(entry.url), headers, entry.timeout)

    def _outcome(self, entry: _Entry, body: bytes) -> _Answer:
        try:
            return self._interpret(entry, self._run(entry, body))
        except Failure as failure:
            return self._failed(entry, failure)

    def _interpret(self, entry: _Entry, ran: Ran) -> _Answer:
        return _claude_answer(entry, ran) if self._dialect == "claude" else _recursive_answer(entry, ran)

    def _background(self, entry: _Entry, body: bytes) -> None:
        """Fire and forget (Recursive ``async``): only a re-wake's stop is kept, for the next dispatch."""
        answer = self._outcome(entry, body)
        if entry.rewake and answer.stop is not None:
            with self._state.lock:
                self._state.pending_stop = answer.stop

    def _failed(self, entry: _Entry, failure: Failure) -> _Answer:
        """Log a failed entry (by name, never its output) and turn it into its answer."""
        point = self._point.value
        closes = self._point in _GATE_POINTS and not entry.fail_open and not entry.background
        if failure.kind == "TimeoutError":
            log("warning", "hook_timed_out", point=point, hook=entry.name, timeout=entry.timeout)
        else:
            level = "error" if closes else "warning"
            log(level, "hook_failed", point=point, hook=entry.name, exc_type=failure.kind, error=failure.why)
        if not closes:
            return _NO_ANSWER
        return _Answer(Decision.DENY, f"hook {entry.name} {failure.why}; the action was denied")

    def _finish(self, ctx: Any, answer: _Answer) -> HookReturn:
        """Turn the combined answer into what this point's hooks return."""
        point = self._point
        if answer.stop is not None:
            raise StopRun(answer.stop)
        if point is _P.TRANSFORM_TOOL_INPUT:
            key = self._key(ctx) if self._kept else None
            if key is not None:
                judged = _canonical(ctx.args if answer.updated_input is None else answer.updated_input)

                def keep(kept: _Kept) -> _Kept:
                    live = {k: v for k, v in kept.items() if k[1]() is not None}
                    return _Kept({**live, key: (judged, answer)})

                ctx.run.turn_scratchpad.update(_Kept, keep)
            return answer.updated_input
        if point.style is HookStyle.OBSERVE:
            if answer.decision is Decision.DENY:
                log("info", "hook_denied", point=point.value, hook=self._name, reason=answer.reason)
            return None
        if answer.decision is Decision.DENY:
            return HookResult.deny(answer.reason or f"denied by the {self._event} hooks")
        if answer.decision is Decision.ASK:
            return HookResult.ask(answer.reason or f"the {self._event} hooks ask for approval")
        if answer.decision is None and point is _P.ON_INTERACTION:
            return NO_ANSWER  # counts as not having run: a question only such hooks saw is denied
        return HookResult.allow()
