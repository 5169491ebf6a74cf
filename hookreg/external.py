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
  which runs the matching commands concurrently (threads on the sync surface;
  identical commands once) and combines their answers: deny beats ask beats
  allow, reasons of the winning kind are joined with ``"; "``, and the last
  ``updatedInput`` in config order wins. ``continue: false`` from any entry
  raises `StopRun` whatever the others said.
- **Fail closed.** A command that exits with an unexpected status, times out
  (it is killed, with every process it started), cannot start, or prints
  something that starts with ``{`` or ``[`` but cannot be read as a JSON
  object of the protocol's shape, prints more than ``output_limit``, and an
  HTTP hook that redirects, answers a non-2xx status or cannot connect, is a
  *failure*. At a gate a failure denies unless the entry says
  ``"onFailure": "allow"`` (Claude Code) or ``"fail_mode": "open"``
  (Recursive), or the config was loaded with ``fail_closed=False``; at
  ``Stop`` a failure lets the run stop (hookreg's rule for failing ``stop``
  hooks); observers' failures are logged and ignored. ``"onFailure":
  "block"`` / ``"fail_mode": "closed"`` make one entry fail closed under
  ``fail_closed=False``. Both hosts fail open; hookreg does not by default.
- **Plain text on stdout** (not starting with ``{`` or ``[``) is ignored, as
  in Claude Code, but at ``SessionStart`` and ``UserPromptSubmit``, where it is
  context for the model, as ``additionalContext`` is: queued in the run's
  scratchpad, drained into the next ``pre_model_call``'s patch.
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
  bounds the whole request on both surfaces; a redirect is never followed.
- **Logging** names the event and the entry (``hooks.PreToolUse[0].hooks[1]``),
  never a command, an argument, or a hook's output.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import datetime
import itertools
import json
import os
import re
import shlex
import shutil
import tempfile
import threading
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, final

from hookreg import _commands
from hookreg._commands import Failure, Ran
from hookreg._context import (
    OnSessionEndContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    StopContext,
    UserPromptSubmitContext,
)
from hookreg._dispatch import resolving
from hookreg._errors import HookTypeError, HookValueError, StopRun
from hookreg._log import log
from hookreg._points import HookPoint, HookStyle
from hookreg._results import NO_ANSWER, Decision, HookResult, RequestPatch
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
    # Their feedback is appended to what the model reads, so they run where the result is still text.
    "PostToolUse": (_P.TRANSFORM_TOOL_RESULT,),
    "PostToolUseFailure": (_P.ON_TOOL_ERROR,),
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
_PLAIN_MATCHER: Final = re.compile(r"[A-Za-z0-9_|]+")
_RECURSIVE_MATCHER: Final = re.compile(r"([^()]+)\(([^()]+)\)")
_FIRST_ARGS: Final = ("command", "path", "goal", "input")
# Non-tool events whose matcher hookreg can honour: SessionStart's source, PreCompact's trigger.
_MATCHED_EVENTS: Final = frozenset({"SessionStart", "PreCompact"})
# What reaches the model from a hook's reason or added context; the rest is cut with a note.
_REASON_LIMIT: Final = 8192
# Events whose plain stdout on exit 0 is context for the model (Claude Code's rule).
_STDOUT_IS_CONTEXT: Final = frozenset({"SessionStart", "UserPromptSubmit"})
_ADDS_CONTEXT: Final = _STDOUT_IS_CONTEXT | {"PreToolUse", "PostToolUse"}
_SESSION_EVENTS: Final = frozenset({"SessionStart", "SessionEnd"})
# Top-level keys of a Claude Code settings file other than "hooks": such a file with no hooks loads as none.
_SETTINGS_KEYS: Final = frozenset(
    {"$schema", "permissions", "env", "model", "enabledPlugins", "statusLine", "outputStyle", "apiKeyHelper"}
)
_SHELLS: Final = {"bash": "bash", "powershell": "pwsh"}
# Claude Code runs a command through /bin/sh unless its `shell` says otherwise: bash-only syntax there is a trap.
_BASH_ONLY: Final = re.compile(r"\[\[|[<>]\(|\$'|\b\w+=\(|\$\{\w+\[")
_PLUGIN_ROOT: Final = re.compile(r"\$\{?CLAUDE_PLUGIN_ROOT\b")
_PLACEHOLDER: Final = re.compile(
    r"\$\{(CLAUDE_PROJECT_DIR|CLAUDE_PLUGIN_ROOT)\}|\$(CLAUDE_PROJECT_DIR|CLAUDE_PLUGIN_ROOT)\b"
)
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
    plugin_root: str | os.PathLike[str] | None = None,
    tool_names: Mapping[str, str] | None = None,
    fail_closed: bool = True,
    output_limit: int = 1_048_576,
) -> Inclusion[HookRegistry]:
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
        plugin_root: ``CLAUDE_PLUGIN_ROOT`` for a plugin's ``hooks/hooks.json``;
            found by itself for a path inside a plugin (a folder holding
            ``.claude-plugin/plugin.json``). Elsewhere a command that uses it
            is skipped, as Claude Code skips it.
        tool_names: Claude Code's tool names onto the host's (``{"Bash":
            "shell"}``): matchers and ``if`` filters name Claude Code's tools,
            and hooks are sent Claude Code's names.
        fail_closed: Whether a failing entry denies at a gate (hookreg's
            default) or lets the action go ahead (both hosts' behaviour).
            An entry's own ``onFailure`` / ``fail_mode`` overrides it.
        output_limit: The bytes read of a hook's stdout, stderr or HTTP body;
            more is that entry's failure.

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
    if isinstance(output_limit, bool) or not isinstance(output_limit, int) or output_limit < 1:
        msg = f"Cannot load hooks with output_limit={output_limit!r}: it is not a positive number of bytes."
        raise HookValueError(msg)
    data, where = _read(source)
    dialect = _detect(data, where, format)
    folder = os.fspath(project_dir) if project_dir is not None else os.getcwd()
    root = os.fspath(plugin_root) if plugin_root is not None else _plugin_of(source)
    setting = _Setting(
        project_dir=folder,
        plugin_root=root,
        claude_names=_claude_names(tool_names),
        permission_mode=_permission_mode(data),
        limit=output_limit,
    )
    loader = _Loader(dialect, setting, strict=strict, fail_closed=fail_closed)
    events = loader.claude(data) if dialect == "claude" else loader.recursive(data)
    own = HookRegistry()
    state = _State(setting)
    for event, points, entries in events:
        for point in points:
            hook = _EventHook(state, dialect, event, point, entries, kept=points == _GATE)
            own.register(point, hook, name=f"{dialect}:{event}")
    if dialect == "claude":
        if any(entry.url is None for _event, _points, entries in events for entry in entries):
            _Transcript.record_into(own, setting)
        rewakes = any(entry.rewake for _event, _points, entries in events for entry in entries)
        if rewakes or any(event in _ADDS_CONTEXT for event, _points, _entries in events):
            own.register(_P.PRE_MODEL_CALL, _deliver_context, name="claude:context")
        if rewakes:
            own.register(_P.STOP, _wake_at_stop, name="claude:asyncRewake")
    return registry.include(own)


@final
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Setting:
    """What every hook of one loaded config is run with."""

    project_dir: str
    plugin_root: str | None
    claude_names: Mapping[str, str]  # the host's tool names onto Claude Code's
    permission_mode: str
    limit: int

    def claude_name(self, tool: str | None) -> str | None:
        return None if tool is None else self.claude_names.get(tool, tool)


def _plugin_of(source: object) -> str | None:
    """The plugin a ``hooks/hooks.json`` path belongs to: the folder above ``hooks`` with a plugin manifest."""
    if not isinstance(source, str | os.PathLike):
        return None
    folder = Path(source).resolve().parent.parent
    return str(folder) if (folder / ".claude-plugin" / "plugin.json").is_file() else None


def _claude_names(tool_names: object) -> Mapping[str, str]:
    if tool_names is None:
        return {}
    if not isinstance(tool_names, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in tool_names.items()
    ):
        msg = f"Cannot load hooks with tool_names={tool_names!r}: give a mapping of Claude Code's tool names to yours."
        raise HookTypeError(msg)
    return {host: claude for claude, host in tool_names.items()}


def _permission_mode(data: Mapping[str, object]) -> str:
    """What hooks read as ``permission_mode``: the settings' ``permissions.defaultMode``, else ``"default"``."""
    permissions = data.get("permissions")
    mode = permissions.get("defaultMode") if isinstance(permissions, Mapping) else None
    return mode if isinstance(mode, str) else "default"


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
    if "hooks" in data or any(key in _SETTINGS_KEYS for key in data):
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
    shown: str | None = None  # the matcher as the config writes it (None: every call), for the registry table
    command: str | None = None  # through the shell
    argv: tuple[str, ...] | None = None  # run directly: Recursive's commands, Claude Code's exec form (`args`)
    shell: str | None = None  # None: /bin/sh
    condition: Matcher | None = None  # Claude Code's `if`: a permission rule the call must match
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

    def __init__(self, dialect: Format, setting: _Setting, *, strict: bool, fail_closed: bool) -> None:
        self.dialect: Format = dialect
        self.setting = setting
        self.strict = strict
        self.fail_closed = fail_closed
        self._events = _CLAUDE_EVENTS if dialect == "claude" else _RECURSIVE_EVENTS

    def claude(self, data: Mapping[str, object]) -> list[tuple[str, tuple[HookPoint, ...], list[_Entry]]]:
        hooks = data.get("hooks", {})  # a settings file with no hooks holds none
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
        shown = None if matcher is None else str(group.get("matcher"))
        entries = (
            self._entry(h, f"{where}.hooks[{j}]", event, matcher, shown)
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
            names = frozenset(part for part in text.split("|") if part)
            matcher: Matcher = lambda value, _args: value in names  # noqa: E731 -- one line each
        else:
            try:
                pattern = re.compile(text)
            except re.error as exc:
                raise _malformed(where, f"is not a valid regular expression ({exc.msg})") from None
            matcher = lambda value, _args: value is not None and pattern.search(value) is not None  # noqa: E731
        if not tool_event and event not in _MATCHED_EVENTS:
            return None  # hookreg does not know the value this event's matcher reads: match all
        return matcher

    def _entry(
        self, item: object, where: str, event: str, matcher: Matcher | None, shown: str | None = None
    ) -> _Entry | None:
        if not isinstance(item, Mapping):
            raise _malformed(where, f"is a {type(item).__name__}, not an object")
        if self.dialect == "recursive":
            own = self._matcher(item.get("matcher"), f"{where}.matcher", event)
            matcher, shown = (matcher, shown) if own is None else (own, str(item.get("matcher")))
        kind = item.get("type", "command" if "command" in item or self.dialect == "recursive" else None)
        if kind in _SKIPPED_TYPES or (isinstance(kind, str) and kind not in {"command", "http"}):
            self._skip(where, f"hookreg does not run {kind!r} hooks")
            return None
        if kind is None:
            raise _malformed(where, "has no 'type'. Give it 'type': 'command' with a 'command', or 'http' with a 'url'")
        if not isinstance(kind, str):
            raise _malformed(where, f"has a 'type' that is a {type(kind).__name__}, not a string")
        entry = _Entry(name=where, matcher=matcher, shown=shown, timeout=self._timeout(item, where))
        entry.fail_open = self._fail_open(item, where)
        if kind == "http":
            self._http(entry, item, where)
        else:
            command = item.get("command")
            if not isinstance(command, str) or not command.strip():
                raise _malformed(where, "has no command. Give it a non-empty 'command' string")
            if self.dialect == "claude":
                if not self._claude_command(entry, item, where, command):
                    return None
            else:
                try:
                    entry.argv = tuple(shlex.split(command))
                except ValueError as exc:
                    raise _malformed(where, f"has a command that cannot be split into words ({exc})") from None
        self._extras(entry, item, where, event)
        return entry

    def _extras(self, entry: _Entry, item: Mapping[str, object], where: str, event: str) -> None:
        """``once``, the background options and Claude Code's ``if`` filter."""
        entry.once = self._flag(item, "once", where)
        entry.rewake = self._flag(item, "async_rewake" if self.dialect == "recursive" else "asyncRewake", where)
        entry.background = self._flag(item, "async", where) or entry.rewake
        if self.dialect == "claude" and "if" in item:
            entry.condition = self._condition(item["if"], f"{where}.if", event)

    def _claude_command(self, entry: _Entry, item: Mapping[str, object], where: str, command: str) -> bool:
        """Shell form, ``shell`` or exec form (``args``); False: skipped, as Claude Code skips it."""
        args = item.get("args")
        if args is not None and (not isinstance(args, list) or not all(isinstance(a, str) for a in args)):
            raise _malformed(f"{where}.args", "must be a list of strings")
        shell = item.get("shell")
        if shell is not None and shell not in _SHELLS:
            raise _malformed(f"{where}.shell", f"must be one of {sorted(_SHELLS)}, not {shell!r}")
        words = [command, *(args or [])]
        if self.setting.plugin_root is None and any(_PLUGIN_ROOT.search(word) for word in words):
            self._skip(where, "uses ${CLAUDE_PLUGIN_ROOT} outside a plugin (pass plugin_root= for a plugin's hooks)")
            return False
        if args is not None:  # exec form: placeholders become plain strings, no shell ever parses them
            entry.argv = tuple(self._placeholders(word) for word in words)
            return True
        entry.command, entry.shell = command, None if shell is None else _SHELLS[shell]
        if shell is None and _BASH_ONLY.search(command):
            why = 'uses bash-only syntax but runs under /bin/sh (dash on Debian). Add "shell": "bash"'
            if self.strict:
                raise _malformed(where, why)
            log("warning", "config_entry_shell", entry=where, why=why)
        return True

    def _placeholders(self, word: str) -> str:
        values = {"CLAUDE_PROJECT_DIR": self.setting.project_dir, "CLAUDE_PLUGIN_ROOT": self.setting.plugin_root or ""}
        return _PLACEHOLDER.sub(lambda match: values[match.group(1) or match.group(2)], word)

    def _condition(self, text: object, where: str, event: str) -> Matcher | None:
        """Claude Code's ``if``: a permission rule (``Bash(git commit:*)``) the call must match for the hook to run."""
        if not isinstance(text, str):
            raise _malformed(where, f"is a {type(text).__name__}, not a permission rule string")
        if not all(point.is_tool_scoped for point in self._events[event]):
            self._skip(where, "filters tool events only; here it is ignored")
            return None
        from hookreg.policy import from_claude_permissions  # noqa: PLC0415 -- only configs with `if` need it

        try:
            rule = from_claude_permissions(
                {"permissions": {"deny": [text]}}, default="allow", project_dir=self.setting.project_dir
            )
        except HookValueError as exc:
            raise _malformed(where, f"is not a permission rule ({exc})") from None

        def matches(tool: str | None, args: Mapping[str, object]) -> bool:
            call = PreToolCallDecideContext(tool_name=tool or "", args=args, call_id="if")
            return rule(call).decision is Decision.DENY  # as broad as a deny rule: the hook runs when in doubt

        return matches

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
    context: tuple[str, ...] = ()  # additionalContext (and some events' plain stdout): for the next model call


_NO_ANSWER: Final = _Answer()
_RANK: Final = (Decision.DENY, Decision.ASK, Decision.ALLOW)


def _combine(answers: Sequence[_Answer]) -> _Answer:
    """Claude Code's rule: deny beats ask beats allow; the last updatedInput wins; any stop stops."""
    stop = next((a.stop for a in answers if a.stop is not None), None)
    decision = next((d for d in _RANK if any(a.decision is d for a in answers)), None)
    reason = "; ".join(dict.fromkeys(a.reason for a in answers if a.decision is decision and a.reason))
    updated = next((a.updated_input for a in reversed(answers) if a.updated_input is not None), None)
    return _Answer(decision, reason, updated, stop, tuple(text for a in answers for text in a.context))


def _cut(text: str) -> str:
    """What the model reads of a hook's text: at most 8 KiB, with a note saying how much was cut."""
    if len(text) <= _REASON_LIMIT:
        return text
    return f"{text[:_REASON_LIMIT]}\n[cut by hookreg: {len(text) - _REASON_LIMIT} more characters]"


def _json_object(stdout: str) -> Mapping[str, object] | None:
    """Stdout's JSON object; ``None`` for plain text. Text starting with ``{`` or ``[`` must be one."""
    text = stdout.strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise Failure("printed invalid JSON on stdout", "JSONDecodeError") from None
    except (ValueError, RecursionError) as exc:  # a number past the digit limit; nesting past the stack
        raise Failure("printed JSON that cannot be read", type(exc).__name__) from None
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


def _claude_answer(entry: _Entry, ran: Ran, event: str) -> _Answer:
    if ran.code == 2:
        return _Answer(Decision.DENY, _cut(ran.stderr.strip()) or f"blocked by hook {entry.name}")
    if ran.code != 0:
        raise Failure(f"exited with status {ran.code}", "ExitStatus")
    data = _json_object(ran.stdout)
    if data is None:
        text = ran.stdout.strip()
        return _Answer(context=(_cut(text),)) if text and event in _STDOUT_IS_CONTEXT else _NO_ANSWER
    stop = None
    if _field(data, "continue", bool, True) is False:
        stop = _cut(_field(data, "stopReason", str) or f"stopped by hook {entry.name}")
    reason = _cut(_field(data, "reason", str, ""))
    answers = [_Answer(_choice(data, "decision", _TOP_DECISION), reason, None, stop)]
    specific = _field(data, "hookSpecificOutput", Mapping)
    if specific is not None:
        updated = _field(specific, "updatedInput", Mapping)
        reason = _cut(_field(specific, "permissionDecisionReason", str, ""))
        context = _field(specific, "additionalContext", str, "")
        answers.append(
            _Answer(_choice(specific, "permissionDecision", _PERMISSION), reason, updated, None, (_cut(context),))
            if context
            else _Answer(_choice(specific, "permissionDecision", _PERMISSION), reason, updated)
        )
        request = _field(specific, "decision", Mapping)  # PermissionRequest's answer
        if request is not None:
            behavior = _choice(request, "behavior", _BEHAVIOR)
            answers.append(_Answer(behavior, _cut(_field(request, "message", str, ""))))
    return _combine(answers)


def _recursive_answer(entry: _Entry, ran: Ran) -> _Answer:
    if ran.code != 0:
        if entry.rewake and ran.code == 2:
            return _Answer(stop=f"hook {entry.name} asked to stop the run")
        raise Failure(f"exited with status {ran.code}", "ExitStatus")
    data = _json_object(ran.stdout)
    if data is None:
        return _NO_ANSWER
    message = _cut(_field(data, "message", str, ""))
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


def _claude_payload(hook: _EventHook, ctx: Any, match_value: str | None) -> dict[str, object]:
    """The JSON Claude Code sends a hook of `hook`'s event on stdin, from this point's context."""
    event, setting = hook.event, hook.state.setting
    payload: dict[str, object] = {
        "session_id": ctx.run.session_id,
        "transcript_path": _Transcript.of(ctx.run).path if hook.transcript else None,
        "cwd": os.getcwd(),
        "hook_event_name": event,
    }
    if event not in _SESSION_EVENTS:  # Claude Code sends no permission mode with these
        payload["permission_mode"] = setting.permission_mode
    if hook.point.is_tool_scoped:
        payload["tool_name"] = match_value
        payload["tool_input"] = dict(getattr(ctx, "args", {}))
        if hasattr(ctx, "call_id"):
            payload["tool_use_id"] = ctx.call_id
    extra: Mapping[str, Callable[[], Mapping[str, object]]] = {
        "PostToolUse": lambda: {"tool_response": _tool_response(ctx)},
        "PostToolUseFailure": lambda: {"error": _describe(getattr(ctx, "error", ""))},
        "UserPromptSubmit": lambda: {"prompt": getattr(ctx, "content", None)},
        "Notification": lambda: {"message": getattr(ctx, "message", None)},
        "Stop": lambda: {
            "stop_hook_active": getattr(ctx, "continuation_count", 0) > 0,
            "last_assistant_message": getattr(ctx, "response_text", ""),
        },
        "SubagentStop": lambda: {"stop_hook_active": False},
        "SessionStart": lambda: {"source": match_value},
        "SessionEnd": lambda: {"reason": ctx.outcome.status},
        "PreCompact": lambda: {"trigger": "auto", "custom_instructions": ""},
    }
    fields = extra.get(event)
    if fields is not None:
        payload.update(fields())
    return payload


def _tool_response(ctx: Any) -> object:
    """The tool's own result when JSON can carry it (a mapping stays an object), else the text the model reads."""
    raw = getattr(ctx, "raw_result", None)
    if isinstance(raw, Mapping | list | tuple | int | float):
        with contextlib.suppress(ValueError, TypeError, RecursionError):
            return json.loads(json.dumps(raw, default=str))
    text = getattr(ctx, "presentation", None)
    return text if text is not None else getattr(ctx, "result", None)


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


class _Pending(tuple[str, ...]):
    """Context hooks added for the next model call, queued in ``ctx.run.scratchpad``."""


class _Wake(tuple[str, ...]):
    """What an ``asyncRewake`` hook said on exit 2: feedback for the next model call, or a continuation at stop."""


def _queue(run: RunContext, kind: type[_Pending | _Wake], texts: Sequence[str]) -> None:
    if texts:
        run.scratchpad.update(kind, lambda queued: kind((*queued, *texts)))


def _drain(run: RunContext, kind: type[_Pending | _Wake]) -> tuple[str, ...]:
    return tuple(run.scratchpad.remove(kind) or ())


def _deliver_context(ctx: PreModelCallContext) -> RequestPatch | None:
    """``pre_model_call``: what hooks added since the last model call reaches this one, once."""
    texts = _drain(ctx.run, _Pending) + _drain(ctx.run, _Wake)
    return RequestPatch(extra_context=texts) if texts else None


def _wake_at_stop(ctx: StopContext) -> HookResult:
    """``stop``: a background hook's exit 2 keeps the run going with its feedback."""
    texts = _drain(ctx.run, _Wake)
    return HookResult.deny("\n".join(texts)) if texts else HookResult.allow()


@final
class _Transcript:
    """The run so far as a JSONL file in Claude Code's line format, for hooks that read ``transcript_path``.

    One per run, kept in ``run.scratchpad`` (so it survives a pause and resume with
    the run), in a 0600 file inside a private temporary directory, appended by
    recorder hooks that run before the config's own; deleted at ``on_session_end``.
    Only its path is state, so a scratchpad holding it still pickles and copies.
    """

    __slots__ = ("__weakref__", "path")
    lock: Final = threading.Lock()

    def __init__(self) -> None:
        folder = tempfile.mkdtemp(prefix="hookreg-transcript-")  # 0700
        self.path = os.path.join(folder, "transcript.jsonl")
        self.opened().close()
        # A run that never reaches on_session_end (dispatches without a loop) leaves no file behind.
        weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)

    def opened(self) -> Any:
        """The file for appending, made again (0600 in a 0700 folder) if a copied run's original was cleaned up."""
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        return os.fdopen(os.open(self.path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600), "a", encoding="utf-8")

    @staticmethod
    def of(run: RunContext) -> _Transcript:
        """The run's transcript (made on first use)."""
        return run.scratchpad.update(_Transcript, lambda transcript: transcript)

    @staticmethod
    def append(run: RunContext, role: str, content: object) -> None:
        line = {
            "type": role,
            "sessionId": run.session_id,
            "uuid": uuid.uuid4().hex,
            "timestamp": datetime.datetime.now(datetime.UTC).isoformat(),
            "message": {"role": role, "content": content},
        }
        text = json.dumps(line, default=str) + "\n"
        with _Transcript.lock, _Transcript.of(run).opened() as file:
            file.write(text)

    @staticmethod
    def record_into(own: HookRegistry, setting: _Setting) -> None:
        """Register the recorders: each runs before the config's hooks at its point (a higher priority)."""
        first = 1_000_000

        def prompt(ctx: UserPromptSubmitContext) -> HookResult:
            _Transcript.append(ctx.run, "user", ctx.content)
            return HookResult.allow()

        def text(ctx: PostTurnContext) -> None:
            if ctx.response_text:
                _Transcript.append(ctx.run, "assistant", [{"type": "text", "text": ctx.response_text}])

        def tool_use(ctx: PreToolCallDecideContext) -> None:
            name = setting.claude_name(ctx.tool_name)
            call = {"type": "tool_use", "id": ctx.call_id, "name": name, "input": dict(ctx.args)}
            _Transcript.append(ctx.run, "assistant", [call])

        def result(ctx: PostToolCallContext | PostToolCallFailureContext) -> None:
            failed = isinstance(ctx, PostToolCallFailureContext)
            content = _describe(ctx.error) if isinstance(ctx, PostToolCallFailureContext) else ctx.result
            part = {"type": "tool_result", "tool_use_id": ctx.call_id, "content": content, "is_error": failed}
            _Transcript.append(ctx.run, "user", [part])

        def delete(ctx: OnSessionEndContext) -> None:
            transcript = ctx.run.scratchpad.remove(_Transcript)
            if transcript is not None:
                shutil.rmtree(os.path.dirname(transcript.path), ignore_errors=True)

        own.register(_P.USER_PROMPT_SUBMIT, prompt, name="claude:transcript", priority=first)
        own.register(_P.POST_TURN, text, name="claude:transcript", priority=first)
        own.register(_P.TRANSFORM_TOOL_INPUT, tool_use, name="claude:transcript", priority=first)
        own.register(_P.POST_TOOL_CALL, result, name="claude:transcript", priority=first)
        own.register(_P.POST_TOOL_CALL_FAILURE, result, name="claude:transcript", priority=first)
        own.register(_P.ON_SESSION_END, delete, name="claude:transcript", priority=-first)


@final
class _State:
    """What the hooks of one loaded config share."""

    def __init__(self, setting: _Setting) -> None:
        self.setting = setting
        self.token = next(_TOKENS)
        self.lock = threading.Lock()
        self.pending_stop: str | None = None  # a Recursive async_rewake hook asked to stop the run
        self.sessions: set[str] = set()  # started: a SessionStart for one of these is a resume

    def check_stop(self) -> None:
        with self.lock:
            reason, self.pending_stop = self.pending_stop, None
        if reason is not None:
            raise StopRun(reason)


@final
class _EventHook:
    """All entries of one event at one point: a dual-path hook (``__call__`` sync, ``acall`` async)."""

    def __init__(  # noqa: PLR0913 -- internal, built in one place
        self,
        state: _State,
        dialect: Format,
        event: str,
        point: HookPoint,
        entries: Sequence[_Entry],
        *,
        kept: bool,
    ) -> None:
        self.state = state
        self.event = event
        self.point = point
        self._dialect = dialect
        self._entries = tuple(entries)
        self._kept = kept  # PreToolUse: the transform keeps its answer for the gate
        self._name = f"{dialect}:{event}"
        self.transcript = dialect == "claude" and any(entry.url is None for entry in entries)

    def __repr__(self) -> str:
        return f"<{self._dialect} {self.event} hook at {self.point}: {len(self._entries)} entries>"

    @property
    def hookreg_tools(self) -> str:
        """What a registry's table shows in its tools column: the config's matchers, ``"all"`` if one matches all."""
        shown = [entry.shown for entry in self._entries]
        if None in shown:
            return "all"
        unique = list(dict.fromkeys(shown))
        return ("matcher " if len(unique) == 1 else "matchers ") + ", ".join(map(str, unique))

    def __call__(self, ctx: Any) -> HookReturn:
        answer = self._kept_answer(ctx)
        if answer is None:
            body, entries = self._start(ctx)
            if len(entries) > 1:  # concurrently, as Claude Code runs them
                with concurrent.futures.ThreadPoolExecutor(len(entries)) as pool:
                    answers = list(pool.map(lambda entry: self._outcome(entry, body), entries))
            else:
                answers = [self._outcome(entry, body) for entry in entries]
            answer = self._fresh(ctx, _combine(answers))
        return self._finish(ctx, answer)

    async def acall(self, ctx: Any) -> HookReturn:
        """The async path: the entries run concurrently, none blocks the event loop."""
        answer = self._kept_answer(ctx)
        if answer is None:
            body, entries = self._start(ctx)
            answer = self._fresh(ctx, _combine(await asyncio.gather(*(self._aoutcome(e, body) for e in entries))))
        return self._finish(ctx, answer)

    # -- the steps both paths share --

    def _key(self, ctx: Any) -> _KeptKey | None:
        """Where this call's PreToolUse answer is kept: only inside a resolve_tool_call, which owns the token."""
        token = resolving()
        return None if token is None else (self.state.token, weakref.ref(token), ctx.call_id)

    def _kept_answer(self, ctx: Any) -> _Answer | None:
        """The transform's answer for this very call, if the commands judged exactly the args this gate sees."""
        self.state.check_stop()
        if not self._kept or self.point is not _P.PRE_TOOL_CALL_DECIDE:
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

    def _fresh(self, ctx: Any, answer: _Answer) -> _Answer:
        """An answer the commands just gave: its context is queued for the next model call (once per run)."""
        _queue(ctx.run, _Pending, [f"{self.event} hook additional context: {text}" for text in answer.context])
        return answer

    def _match_value(self, ctx: Any) -> str | None:
        """What this event's matchers read: the tool's Claude Code name, SessionStart's source, PreCompact's trigger."""
        if self.event == "SessionStart":
            session = ctx.run.session_id
            with self.state.lock:
                resumed = session in self.state.sessions
                self.state.sessions.add(session)
            return "resume" if resumed else "startup"
        if self.event == "PreCompact":
            return "auto"
        return self.state.setting.claude_name(getattr(ctx, "tool_name", None))

    def _start(self, ctx: Any) -> tuple[bytes, list[_Entry]]:
        """Pick the entries this call matches; launch the background ones; return the payload and the rest."""
        value = self._match_value(ctx)
        args: Mapping[str, object] = getattr(ctx, "args", {})
        chosen: dict[object, _Entry] = {}  # by what runs: identical commands of one event run once
        with self.state.lock:
            for entry in self._entries:
                if entry.matcher is not None and not entry.matcher(value, args):
                    continue
                if entry.condition is not None and not entry.condition(value, args):
                    continue
                identity = (entry.command, entry.argv, entry.shell, entry.url)
                if identity in chosen or (entry.once and entry.claimed):
                    continue
                entry.claimed = entry.once
                chosen[identity] = entry
        if not chosen:
            return b"", []
        if self._dialect == "claude":
            payload = _claude_payload(self, ctx, value)
        else:
            payload = _recursive_payload(self.event, self.point, ctx)
        body = json.dumps(payload, default=str).encode()
        for entry in chosen.values():
            if entry.background:
                threading.Thread(target=self._background, args=(entry, body, ctx.run), daemon=True).start()
        return body, [entry for entry in chosen.values() if not entry.background]

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
        setting = self.state.setting
        env = {}
        if self._dialect == "claude":
            env["CLAUDE_PROJECT_DIR"] = setting.project_dir
            if setting.plugin_root is not None:
                env["CLAUDE_PLUGIN_ROOT"] = setting.plugin_root
        return _commands.Launch(entry.command, entry.argv, entry.timeout, env, shell=entry.shell, limit=setting.limit)

    def _post(self, entry: _Entry) -> _commands.Post:
        headers = {name: _commands.expand(value, entry.allowed_env) for name, value in entry.headers.items()}
        return _commands.Post(str(entry.url), headers, entry.timeout, limit=self.state.setting.limit)

    def _outcome(self, entry: _Entry, body: bytes) -> _Answer:
        try:
            return self._interpret(entry, self._run(entry, body))
        except Failure as failure:
            return self._failed(entry, failure)

    def _interpret(self, entry: _Entry, ran: Ran) -> _Answer:
        if self._dialect == "claude":
            return _claude_answer(entry, ran, self.event)
        return _recursive_answer(entry, ran)

    def _background(self, entry: _Entry, body: bytes, run: RunContext) -> None:
        """Fire and forget: only a re-wake is kept (Claude Code: feedback for the model; Recursive: a stop)."""
        answer = self._outcome(entry, body)
        if not entry.rewake:
            return
        if self._dialect == "claude" and answer.decision is Decision.DENY:
            _queue(run, _Wake, [f"{self.event} hook feedback: {answer.reason}"])
        elif answer.stop is not None:
            with self.state.lock:
                self.state.pending_stop = answer.stop

    def _failed(self, entry: _Entry, failure: Failure) -> _Answer:
        """Log a failed entry (by name, never its output) and turn it into its answer."""
        point = self.point.value
        closes = self.point in _GATE_POINTS and not entry.fail_open and not entry.background
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
        point = self.point
        if answer.stop is not None:
            raise StopRun(answer.stop)
        if point is _P.TRANSFORM_TOOL_INPUT:
            self._keep(ctx, answer)
            return answer.updated_input
        if point in _FEEDBACK_SUBJECTS:  # PostToolUse(Failure): a block is feedback appended to what the model reads
            if answer.decision is not Decision.DENY:
                return None
            text = getattr(ctx, _FEEDBACK_SUBJECTS[point])
            return f"{text}\n\n{self.event}:{ctx.tool_name} hook blocking error: {answer.reason}"
        if point.style is HookStyle.OBSERVE:
            if answer.decision is Decision.DENY:
                log("info", "hook_denied", point=point.value, hook=self._name, reason=answer.reason)
            return None
        return self._verdict(answer)

    def _keep(self, ctx: Any, answer: _Answer) -> None:
        """PreToolUse's transform: keep the answer for the gate of this resolve, with the args the commands judged."""
        key = self._key(ctx) if self._kept else None
        if key is None:
            return
        judged = _canonical(ctx.args if answer.updated_input is None else answer.updated_input)

        def keep(kept: _Kept) -> _Kept:
            live = {k: v for k, v in kept.items() if k[1]() is not None}  # resolves that ended unused: dropped
            return _Kept({**live, key: (judged, answer)})

        ctx.run.turn_scratchpad.update(_Kept, keep)

    def _verdict(self, answer: _Answer) -> HookResult:
        """A gate's result: deny beats ask beats allow; at on_interaction no decision is no answer."""
        if answer.decision is Decision.DENY:
            return HookResult.deny(answer.reason or f"denied by the {self.event} hooks")
        if answer.decision is Decision.ASK:
            return HookResult.ask(answer.reason or f"the {self.event} hooks ask for approval")
        if answer.decision is None and self.point is _P.ON_INTERACTION:
            return NO_ANSWER  # counts as not having run: a question only such hooks saw is denied
        return HookResult.allow()


_FEEDBACK_SUBJECTS: Final = {_P.TRANSFORM_TOOL_RESULT: "presentation", _P.ON_TOOL_ERROR: "message"}
