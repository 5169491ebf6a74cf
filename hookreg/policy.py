"""Declarative tool rules — allow, deny, ask — compiled into one ``pre_tool_call_decide`` gate.

Example:
    >>> from hookreg import HookRegistry
    >>> from hookreg.policy import allow, ask, deny
    >>> registry = HookRegistry()
    >>> gate = registry.use_policy(
    ...     allow("read_*"),
    ...     deny("bash", when=lambda ctx: "rm " in str(ctx.args.get("command", "")), reason="no rm"),
    ...     allow("bash"),
    ...     ask("write_*"),
    ...     default="deny",
    ... )

A rule's pattern is a tool pattern, as for ``tools=``: an exact name, an
``fnmatch`` glob (``[[]`` matches a literal ``[``), or ``name(key=glob)``, which
also requires the string argument ``key`` to match ``glob`` —
``deny("bash(command=rm *)")``. A malformed pattern is refused when the rule is
built.

Which rule applies to a tool call: a rule whose name part is an exact tool
name is *specific* (with or without an argument test), a glob (``*``, ``?``,
``[``) is a *wildcard*. A specific deny
beats a specific ask, which beats a specific allow, which beats a wildcard
deny, then a wildcard ask, then a wildcard allow. Among rules of one level the
first one written wins. A rule with ``when=`` applies only when its predicate
returns true; a predicate that raises denies the call (fail closed) and logs
``policy_rule_failed`` (fields ``rule``, ``exc_type``). A call no rule matches
gets the policy's default. ``precedence="decision"`` drops the specific/wildcard
levels: any deny beats any ask beats any allow (Claude Code's order, which
`from_claude_permissions` uses).

An allow from a policy is a pass like any other: later gates still run and may deny.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal, TypeAlias, final
from urllib.parse import urlsplit

from hookreg._context import PreToolCallDecideContext
from hookreg._errors import HookTypeError, HookValueError
from hookreg._log import log
from hookreg._patterns import ToolPattern, parse_tool_pattern
from hookreg._results import Decision, HookResult

__all__ = [
    "CLAUDE_ARGUMENTS",
    "Default",
    "Policy",
    "Precedence",
    "Rule",
    "ToolPredicate",
    "allow",
    "ask",
    "deny",
    "from_claude_permissions",
]

ToolPredicate: TypeAlias = Callable[[PreToolCallDecideContext], bool]
"""A rule's ``when=``: takes the tool call's context, returns whether the rule applies."""

_RANK: Final = {Decision.DENY: 0, Decision.ASK: 1, Decision.ALLOW: 2}


@final
@dataclass(frozen=True, slots=True)
class Rule:
    """One tool rule; build it with `allow`, `deny` or `ask`.

    Attributes:
        decision: What the rule decides for the tools it matches.
        pattern: A tool pattern: an exact tool name, an ``fnmatch`` glob
            (case-sensitive), or ``name(key=glob)`` to test a string argument too.
        when: Applies the rule only when this returns true; ``None`` always applies.
        reason: What the model is told on a deny or an ask (a default names the
            tool); on an allow, the message.
    """

    decision: Decision
    pattern: str
    when: ToolPredicate | None = None
    reason: str = ""
    _parsed: ToolPattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        what = f"build {self.decision.value}({self.pattern!r})" if isinstance(self.decision, Decision) else "build"
        if not isinstance(self.decision, Decision):
            msg = f"Cannot build a rule: decision={self.decision!r} is not a Decision. Use allow(), deny() or ask()."
            raise HookTypeError(msg)
        if not isinstance(self.pattern, str):
            msg = f"Cannot {what}: the tool pattern must be a str, not {type(self.pattern).__name__}."
            raise HookTypeError(msg)
        if not self.pattern:
            msg = f"Cannot {what}: the tool pattern is empty. Name a tool such as 'bash' or a glob such as 'read_*'."
            raise HookValueError(msg)
        parsed = parse_tool_pattern(self.pattern, lambda why: HookValueError(f"Cannot {what}: {why}"))
        object.__setattr__(self, "_parsed", parsed)
        if self.when is not None and not callable(self.when):
            msg = (
                f"Cannot {what}: when= must be a callable taking the PreToolCallDecideContext and "
                f"returning a bool, not {type(self.when).__name__}. Pass a function, or omit when=."
            )
            raise HookTypeError(msg)
        if not isinstance(self.reason, str):
            msg = f"Cannot {what}: reason= must be a str, not {type(self.reason).__name__}."
            raise HookTypeError(msg)

    @property
    def is_specific(self) -> bool:
        """Whether the pattern's name part names one exact tool (not a glob)."""
        return self._parsed.is_exact

    def matches(self, tool_name: str, args: Mapping[str, object] | None = None) -> bool:
        """Whether the pattern matches a call of `tool_name` with `args` (``when=`` aside)."""
        return self._parsed.matches(tool_name, args)

    def result(self, tool_name: str) -> HookResult:
        """The HookResult this rule gives a call of `tool_name`."""
        if self.decision is Decision.ALLOW:
            return HookResult.allow(self.reason)
        if self.decision is Decision.DENY:
            return HookResult.deny(self.reason or f"the tool {tool_name!r} is not allowed")
        return HookResult.ask(self.reason or f"the tool {tool_name!r} needs approval")

    def __repr__(self) -> str:
        options = "" if self.when is None else ", when=..."
        options += f", reason={self.reason!r}" if self.reason else ""
        return f"{self.decision.value}({self.pattern!r}{options})"


def allow(pattern: str, /, *, when: ToolPredicate | None = None) -> Rule:
    """A rule letting the tools matching `pattern` through (other gates still run).

    Args:
        pattern: An exact tool name or an ``fnmatch`` glob such as ``"read_*"``.
        when: Apply the rule only when this returns true for the call's context.
    """
    return Rule(Decision.ALLOW, pattern, when)


def deny(pattern: str, /, *, when: ToolPredicate | None = None, reason: str = "") -> Rule:
    """A rule refusing the tools matching `pattern`.

    Args:
        pattern: An exact tool name or an ``fnmatch`` glob such as ``"shell_*"``.
        when: Apply the rule only when this returns true for the call's context.
        reason: What the model is told; by default it names the tool.
    """
    return Rule(Decision.DENY, pattern, when, reason)


def ask(pattern: str, /, *, when: ToolPredicate | None = None, reason: str = "") -> Rule:
    """A rule asking a human before the tools matching `pattern` run (through ``on_interaction``).

    Args:
        pattern: An exact tool name or an ``fnmatch`` glob such as ``"write_*"``.
        when: Apply the rule only when this returns true for the call's context.
        reason: The question's reason; by default it names the tool.
    """
    return Rule(Decision.ASK, pattern, when, reason)


Default: TypeAlias = Literal["allow", "ask", "deny"]
"""What a call no rule matches gets."""
Precedence: TypeAlias = Literal["specificity", "decision"]
"""How rules outrank each other: specific rules first, or by decision alone."""


@final
class Policy:
    """Tool rules compiled into one gate: a ``pre_tool_call_decide`` hook.

    ``registry.use_policy(*rules)`` registers one, and ``registry.use_policy(policy)``
    registers a built one; or register it yourself (for instance with ``tools=``
    or on an async registry).

    Args:
        *rules: The rules, in the order that breaks ties within a level.
        default: What a call no rule matches gets: ``"allow"`` (a pass),
            ``"ask"`` or ``"deny"``.
        precedence: ``"specificity"`` (specific rules outrank wildcards, then
            deny > ask > allow) or ``"decision"`` (deny > ask > allow, whatever
            the patterns).

    Raises:
        HookTypeError: A rule is not a Rule.
        HookValueError: `default` or `precedence` is not one of its values.
    """

    __slots__ = ("_exact", "_wildcards", "default", "precedence", "rules")

    def __init__(self, *rules: Rule, default: Default = "allow", precedence: Precedence = "specificity") -> None:
        for rule in rules:
            if not isinstance(rule, Rule):
                msg = (
                    f"Cannot build a tool policy from {rule!r}: it is not a rule. "
                    "Build rules with hookreg.policy.allow(), deny() or ask()."
                )
                raise HookTypeError(msg)
        if default not in ("allow", "ask", "deny"):
            msg = f"Cannot build a tool policy with default={default!r}: it must be 'allow', 'ask' or 'deny'."
            raise HookValueError(msg)
        if precedence not in ("specificity", "decision"):
            msg = f"Cannot build a tool policy with precedence={precedence!r}: it must be 'specificity' or 'decision'."
            raise HookValueError(msg)
        self.rules: tuple[Rule, ...] = rules
        self.default: Default = default
        self.precedence: Precedence = precedence
        ordered = sorted(rules, key=lambda rule: _RANK[rule.decision])  # stable: the first written wins a tie
        by_specificity = precedence == "specificity"
        self._exact: dict[str, tuple[Rule, ...]] = {}
        for rule in ordered:
            if by_specificity and rule.is_specific:
                name = rule._parsed.name  # noqa: SLF001 -- a Rule, this module's own class
                self._exact[name] = (*self._exact.get(name, ()), rule)
        self._wildcards = tuple(rule for rule in ordered if not (by_specificity and rule.is_specific))

    def __call__(self, ctx: PreToolCallDecideContext, /) -> HookResult:
        """Decide the tool call in `ctx`."""
        tool = ctx.tool_name
        args = ctx.args
        for rule in (*self._exact.get(tool, ()), *self._wildcards):
            if not rule.matches(tool, args):
                continue
            if rule.when is not None:
                try:
                    applies = rule.when(ctx)
                except Exception as exc:  # noqa: BLE001 -- a broken rule fails closed
                    log("error", "policy_rule_failed", rule=repr(rule), exc_type=type(exc).__name__)
                    return HookResult.deny(f"the tool {tool!r} is denied: the policy rule {rule!r} failed")
                if not applies:
                    continue
            return rule.result(tool)
        if self.default == "deny":
            return HookResult.deny(f"the tool {tool!r} is not allowed by the policy")
        if self.default == "ask":
            return HookResult.ask(f"the tool {tool!r} needs approval: no policy rule allows it")
        return HookResult.allow()

    def __repr__(self) -> str:
        rules = "".join(f"{rule!r}, " for rule in self.rules)
        extra = "" if self.precedence == "specificity" else f", precedence={self.precedence!r}"
        return f"Policy({rules}default={self.default!r}{extra})"


# --- Claude Code permission rules ---------------------------------------------------------------

CLAUDE_ARGUMENTS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "Bash": ("command",),
        "Read": ("file_path", "path"),
        "Edit": ("file_path", "path"),
        "MultiEdit": ("file_path", "path"),
        "Write": ("file_path", "path"),
        "NotebookEdit": ("notebook_path", "file_path", "path"),
        "WebFetch": ("url",),
    }
)
"""Which argument of each Claude Code tool a rule's specifier tests: the first of these keys holding a string."""

# Claude Code applies an Edit rule to every built-in tool that edits files.
_COVERS: Final = {"Edit": ("Edit", "MultiEdit", "Write", "NotebookEdit")}
_PATH_TOOLS: Final = frozenset({"Read", "Edit", "Write"})
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]+|mcp__[A-Za-z0-9_-]+__\*")
_RULE: Final = re.compile(r"(?P<tool>[^()]*)(?:\((?P<content>.*)\))?", re.DOTALL)
# Shell control operators that join commands; ';;' and '|&' before ';' and '|'.
_OPERATORS: Final = ("&&", "||", ";;", "|&", ";", "|", "&", "\n")


def _split_command(command: str) -> tuple[list[str], bool]:
    """Split a shell command at control operators outside quotes: ``(subcommands, statically_clear)``.

    Not statically clear: a command substitution (``$(...)``, backticks), a
    process substitution, a subshell or group parenthesis, or an unclosed quote.
    """
    parts: list[str] = []
    current: list[str] = []
    clear = True
    quote = ""
    i, n = 0, len(command)
    while i < n:
        char = command[i]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\" and i + 1 < n:
            current.append(command[i : i + 2])
            i += 2
            continue
        elif command.startswith(("$(", "`"), i) or (not quote and command.startswith(("<(", ">(", "(", ")"), i)):
            clear = False
        elif quote:
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        else:
            redirect = char == "&" and ((i > 0 and command[i - 1] in "<>") or command[i + 1 : i + 2] == ">")
            operator = None if redirect else next((op for op in _OPERATORS if command.startswith(op, i)), None)
            if operator is not None:
                parts.append("".join(current))
                current = []
                i += len(operator)
                continue
        current.append(char)
        i += 1
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()], clear and not quote


def _shell_matcher(content: str) -> Callable[[str], bool]:
    """Claude Code's Bash specifier: legacy ``prefix:*``, a ``*`` wildcard (``\\*`` a literal star), or exact."""
    if content.endswith(":*"):
        prefix = content[:-2]
        return lambda command: command == prefix or command.startswith(prefix + " ")
    pattern = content.strip()
    pieces = re.split(r"(\\\\|\\\*|\*)", pattern)
    stars = pieces.count("*")
    if not stars:
        exact = pattern.replace("\\*", "*").replace("\\\\", "\\")
        return lambda command: command == exact
    literal = {"\\\\": re.escape("\\"), "\\*": re.escape("*")}
    regex = "".join(".*" if piece == "*" else literal.get(piece) or re.escape(piece) for piece in pieces)
    if stars == 1 and pieces[-1] == "" and pieces[-2] == "*" and pieces[-3].endswith(" "):
        # 'git *' also matches a bare 'git', as the legacy 'git:*' does.
        regex = regex[: -len(re.escape(" ") + ".*")] + "(?: .*)?"
    compiled = re.compile(regex, re.DOTALL)
    return lambda command: compiled.fullmatch(command) is not None


def _glob_regex(glob: str) -> str:
    """Translate a gitignore-style glob: ``**`` any directories, ``*`` and ``?`` within one, ``[...]`` a set."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (close := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : close]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def _path_matcher(content: str, project_dir: str) -> Callable[[str], bool]:
    """Claude Code's Read/Edit path specifier, gitignore style, against the call's path.

    ``//p`` is absolute, ``~/p`` under the home directory, ``/p`` and ``./p``
    relative to `project_dir`, as is a bare ``p`` — which, holding no ``/`` but
    a trailing one, matches at any depth (``.env``, ``*.key``). A pattern that
    names a directory also matches everything inside it.
    """
    if content.startswith("//"):
        base, glob, anchored = "/", content[2:], True
    elif content.startswith("~/"):
        base, glob, anchored = os.path.expanduser("~"), content[2:], True
    elif content.startswith(("/", "./")):
        base, glob, anchored = project_dir, content.removeprefix(".").removeprefix("/"), True
    else:
        base, glob, anchored = project_dir, content, "/" in content.rstrip("/")
    directory_only = glob.endswith("/")
    regex = re.compile(("" if anchored else "(?:.*/)?") + _glob_regex(glob.rstrip("/")), re.DOTALL)

    def matches(path: str) -> bool:
        full = os.path.normpath(os.path.join(project_dir, os.path.expanduser(path)))
        relative = os.path.relpath(full, base).replace(os.sep, "/")
        if relative == ".." or relative.startswith("../"):
            return False
        parts = relative.split("/")
        candidates = range(1, len(parts)) if directory_only else range(1, len(parts) + 1)
        return any(regex.fullmatch("/".join(parts[:k])) for k in candidates)

    return matches


def _domain_matcher(domain: str) -> Callable[[str], bool]:
    """``WebFetch(domain:example.com)``: the URL's host is that domain (``*.example.com``: any subdomain)."""
    wanted = domain.lower()
    return lambda url: fnmatch.fnmatchcase(urlsplit(url).hostname or "", wanted)


@final
class _ClaudeCheck:
    """A rule's ``when=``: whether the call's argument satisfies one Claude Code specifier."""

    __slots__ = ("allowed", "decision", "keys", "rule", "shell", "test")

    def __init__(
        self, rule: str, decision: Decision, keys: tuple[str, ...], test: Callable[[str], bool], *, shell: bool
    ) -> None:
        self.rule = rule
        self.decision = decision
        self.keys = keys
        self.test = test
        self.shell = shell
        self.allowed: list[Callable[[str], bool]] = []  # shell allows: each subcommand must pass one of these

    def __call__(self, ctx: PreToolCallDecideContext) -> bool:
        value = next((v for k in self.keys if isinstance(v := ctx.args.get(k), str)), None)
        if value is None:
            return False
        return self._shell(value) if self.shell else self.test(value)

    def _shell(self, command: str) -> bool:
        subcommands, clear = _split_command(command)
        if self.decision is not Decision.ALLOW:  # deny and ask: the command or any part of it
            return self.test(command.strip()) or any(self.test(part) for part in subcommands)
        return (
            clear
            and bool(subcommands)
            and any(self.test(part) for part in subcommands)
            and all(any(test(part) for test in self.allowed) for part in subcommands)
        )

    def __repr__(self) -> str:
        return self.rule


def _refuse(rule: object, where: str, why: str) -> HookValueError:
    return HookValueError(f"Cannot read the Claude Code permission rule {rule!r} in {where}: {why}.")


def _load_permissions(source: object) -> Mapping[str, object]:
    """The ``"permissions"`` object of a settings file or mapping (empty when it has none)."""
    if isinstance(source, str | os.PathLike):
        text = Path(source).read_text(encoding="utf-8")
        try:
            settings = json.loads(text)
        except json.JSONDecodeError as exc:
            msg = (
                f"Cannot read Claude Code permissions from {os.fspath(source)!r}: it is not JSON ({exc}). Fix the file."
            )
            raise HookValueError(msg) from None
        label = repr(os.fspath(source))
    elif isinstance(source, Mapping):
        settings, label = source, "the mapping"
    else:
        msg = (
            f"Cannot read Claude Code permissions from {type(source).__name__}: pass a settings file's path "
            "or its parsed mapping."
        )
        raise HookTypeError(msg)
    if not isinstance(settings, Mapping):
        msg = f"Cannot read Claude Code permissions from {label}: the settings are not a JSON object."
        raise HookValueError(msg)
    permissions = settings.get("permissions", {})
    if "permissions" not in settings and {"allow", "ask", "deny"} & set(settings):
        msg = (
            f"Cannot read Claude Code permissions from {label}: it has allow/ask/deny at the top level. "
            'Pass the whole settings, where they sit under "permissions", or wrap them: {"permissions": {...}}.'
        )
        raise HookValueError(msg)
    if not isinstance(permissions, Mapping):
        msg = f'Cannot read Claude Code permissions from {label}: "permissions" is not a JSON object.'
        raise HookValueError(msg)
    return permissions


def _argument_keys(arguments: Mapping[str, str | Sequence[str]] | None) -> dict[str, tuple[str, ...]]:
    keys = dict(CLAUDE_ARGUMENTS)
    for tool, given in (arguments or {}).items():
        names = (given,) if isinstance(given, str) else tuple(given)
        if not names or not all(isinstance(name, str) and name for name in names):
            msg = f"Cannot use arguments={{{tool!r}: {given!r}}}: give an argument name or a list of them."
            raise HookValueError(msg)
        keys[tool] = names
    return keys


@final
class _Reader:
    """Turns Claude Code rule strings into Rules for the host's tool names."""

    __slots__ = ("keys", "names", "project", "shell_allows")

    def __init__(self, names: dict[str, str], keys: dict[str, tuple[str, ...]], project: str) -> None:
        self.names = names
        self.keys = keys
        self.project = project
        self.shell_allows: dict[str, list[_ClaudeCheck]] = {}

    def rules(self, text: object, where: str, decision: Decision) -> list[Rule]:
        """The Rules for one rule string (one per host tool it covers), or a refusal naming it."""
        if not isinstance(text, str):
            raise _refuse(text, where, "a rule is a string such as 'Bash(npm test)'")
        parsed = _RULE.fullmatch(text.strip())
        tool = parsed["tool"] if parsed else ""
        if parsed is None or not _TOOL_NAME.fullmatch(tool):
            raise _refuse(text, where, "a rule is Tool or Tool(specifier), as in 'Bash' or 'Read(./.env)'")
        content = parsed["content"] or ""
        content = "" if content.strip() == "*" else content
        is_mcp = tool.startswith("mcp__")
        check = self._check(text, where, tool, content, decision) if content else None
        if is_mcp and (tool.count("__") == 1 or tool.endswith("__*")):
            targets: tuple[str, ...] = (tool.removesuffix("__*") + "__*",)
        else:
            targets = _COVERS.get(tool, (tool,))
        hosts = dict.fromkeys(self.names.get(target, target) for target in targets)
        reason = {
            Decision.ALLOW: "",
            Decision.ASK: f"the Claude Code permission rule {text!r} asks for approval",
            Decision.DENY: f"denied by the Claude Code permission rule {text!r}",
        }[decision]
        if check is not None and check.shell and decision is Decision.ALLOW:
            self.shell_allows.setdefault(tool, []).append(check)
        return [Rule(decision, host, check, reason) for host in hosts]

    def _check(self, text: str, where: str, tool: str, content: str, decision: Decision) -> _ClaudeCheck:
        """The check for a rule with a specifier, or a refusal naming the rule."""
        keys = self.keys.get(tool, ())
        if tool == "Bash":
            return _ClaudeCheck(text, decision, keys, _shell_matcher(content), shell=True)
        if tool in _PATH_TOOLS:
            return _ClaudeCheck(text, decision, keys, _path_matcher(content, self.project), shell=False)
        if tool == "WebFetch":
            domain = content.removeprefix("domain:")
            if domain == content or not domain:
                why = "a WebFetch rule's specifier must be domain:<host>, as in WebFetch(domain:example.com)"
                raise _refuse(text, where, why)
            return _ClaudeCheck(text, decision, keys, _domain_matcher(domain), shell=False)
        if tool.startswith("mcp__"):
            raise _refuse(text, where, "MCP rules take no specifier; name the server or the tool")
        why = (
            f"hookreg reads specifiers only for Bash, Read, Edit, Write and WebFetch, not for {tool}. "
            f"Use the bare tool name {tool!r}, or a hookreg rule such as deny('{tool}(key=glob)')"
        )
        raise _refuse(text, where, why)


def from_claude_permissions(
    source: str | os.PathLike[str] | Mapping[str, object],
    *,
    tool_names: Mapping[str, str] | None = None,
    default: Default = "ask",
    project_dir: str | os.PathLike[str] | None = None,
    arguments: Mapping[str, str | Sequence[str]] | None = None,
) -> Policy:
    """Build a Policy from Claude Code ``"permissions"`` rules, with Claude Code's matching and precedence.

    Reads the ``allow``, ``ask`` and ``deny`` lists of the settings'
    ``"permissions"`` object; its other keys (``defaultMode``,
    ``additionalDirectories``, ``disableBypassPermissionsMode``...) are
    ignored, and settings without ``"permissions"`` give no rules. Any deny
    beats any ask beats any allow, whatever their specificity; a call no rule
    matches gets `default` — ``"ask"``, as Claude Code asks the user.

    Rules:
        - ``Tool`` (also ``Tool(*)``, ``Tool()``) matches every call of the tool;
          ``mcp__server`` and ``mcp__server__*`` every tool of that MCP server;
          ``mcp__server__tool`` that one tool.
        - ``Bash(npm run build)``: exactly that command. ``Bash(npm run test:*)``
          (legacy): that command, or it followed by a space and anything.
          ``Bash(git * main)``: ``*`` matches any text (``\\*`` a literal star); a
          single trailing `` *`` is optional, so ``Bash(git *)`` also matches
          ``git``. A command is split at ``&&``, ``||``, ``;``, ``|``, ``&`` and
          newlines outside quotes: a deny or ask rule matching the command or any
          part denies or asks; an allow applies only when every part matches an
          allow rule, and never to a command holding ``$(...)``, backticks,
          parentheses or an unclosed quote. Wrappers (``timeout``, ``nohup``) and
          leading ``VAR=value`` assignments are not stripped.
        - ``Read(...)``, ``Edit(...)``, ``Write(...)``: gitignore-style paths —
          ``//abs`` absolute, ``~/p`` under the home directory, ``/p``, ``./p``
          and ``p`` relative to `project_dir` (a ``p`` without ``/`` matches at
          any depth); ``*`` stays within a directory, ``**`` crosses them, and a
          directory matches what it holds. The call's path is resolved against
          `project_dir` and normalised (``..`` removed; symlinks are not
          followed). An ``Edit`` rule covers Edit, MultiEdit, Write and
          NotebookEdit, as in Claude Code.
        - ``WebFetch(domain:example.com)``: the URL's host is that domain
          (``domain:*.example.com`` any subdomain).
        - Any other specifier is refused, naming the rule.

    Args:
        source: A settings file's path, or its parsed mapping.
        tool_names: Claude Code tool names mapped onto the host's, such as
            ``{"Bash": "shell", "Read": "read_file"}``; unmapped names are kept.
        default: What a call no rule matches gets: ``"ask"``, ``"allow"`` or ``"deny"``.
        project_dir: The directory relative paths and path rules are resolved
            against; by default the current directory when this is called.
        arguments: Per Claude Code tool, the argument (or arguments, first
            string wins) its specifier tests; defaults in `CLAUDE_ARGUMENTS`:
            Bash ``command``; Read, Edit, MultiEdit and Write ``file_path``, then
            ``path``; NotebookEdit ``notebook_path``; WebFetch ``url``. A call
            whose argument is missing or not a string matches no rule with a
            specifier.

    Returns:
        A Policy with ``precedence="decision"``, for ``registry.use_policy(policy)``.

    Raises:
        HookValueError: A rule hookreg cannot interpret (named), malformed
            settings, or a bad option.
        HookTypeError: `source` is neither a path nor a mapping.
        OSError: The file cannot be read.
    """
    permissions = _load_permissions(source)
    names = dict(tool_names or {})
    for claude, host in names.items():
        if not (isinstance(claude, str) and isinstance(host, str) and host):
            msg = f"Cannot use tool_names={{{claude!r}: {host!r}}}: map Claude Code tool names to non-empty host names."
            raise HookValueError(msg)
    keys = _argument_keys(arguments)
    project = os.path.abspath(os.fspath(project_dir) if project_dir is not None else os.getcwd())
    reader = _Reader(names, keys, project)
    rules: list[Rule] = []
    for decision in (Decision.DENY, Decision.ASK, Decision.ALLOW):
        entries = permissions.get(decision.value, [])
        where = f"permissions.{decision.value}"
        if not isinstance(entries, list | tuple):
            msg = f"Cannot read Claude Code permissions: {where} is not a list of rules. Make it a JSON array."
            raise HookValueError(msg)
        for text in entries:
            rules.extend(reader.rules(text, where, decision))
    for checks in reader.shell_allows.values():
        for check in checks:
            check.allowed = [other.test for other in checks]
    return Policy(*rules, default=default, precedence="decision")
