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
import functools
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, TypeAlias, final
from urllib.parse import unquote, urlsplit

from hookreg._context import PreToolCallDecideContext
from hookreg._errors import HookTypeError, HookValueError
from hookreg._log import log
from hookreg._patterns import ToolPattern, parse_tool_pattern
from hookreg._results import Decision, HookResult

__all__ = [
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

# Claude Code applies an Edit rule to every built-in tool that edits files, a Read rule to those that read them.
_COVERS: Final = {"Edit": ("Edit", "MultiEdit", "Write", "NotebookEdit"), "Read": ("Read", "Grep", "Glob", "LS")}
_PATH_TOOLS: Final = frozenset({"Read", "Edit", "Write"})
_PATH_KEYS: Final = ("file_path", "path", "notebook_path", "paths")
# Tools whose specifier Claude Code matches, in Bash's grammar but without a shell, against one argument.
_NAMED_ARGUMENT: Final = {"Task": "subagent_type", "Skill": "skill", "SlashCommand": "command"}
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]+|mcp__[A-Za-z0-9_-]+__\*")
_RULE: Final = re.compile(r"(?P<tool>[^()]*)(?:\((?P<content>.*)\))?", re.DOTALL)

# Shell control operators that join commands; ';;' and '|&' before ';' and '|'.
_OPERATORS: Final = ("&&", "||", ";;", "|&", ";", "|", "&", "\n")
# Wrappers that run the command after them, each with its options that take the next word as their value.
_WRAPPERS: Final = {
    "sudo": frozenset({"-u", "-g", "-U", "-C", "-D", "-h", "-p", "-r", "-t", "-T"}),
    "env": frozenset({"-u", "-C"}),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "timeout": frozenset({"-s", "-k"}),
    "xargs": frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"}),
}
# Reserved words the shell reads before a command's program ('{ git push; }', 'then rm -rf x').
_RESERVED: Final = frozenset({"!", "{", "}", "if", "then", "else", "elif", "do", "while", "until"})
_SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_ASSIGNMENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
# An unquoted redirection ('2>&1', '>log', '> log', '<<EOF'): neither it nor its file is a word of the command.
_REDIRECT: Final = re.compile(r"(?:[0-9]+|&)?(?:>>?|<<?<?|<>)[&|]?")
# Brace expansion ('{push,}', '{a..c}') among a word's unquoted characters: the shell makes other words of it.
_BRACES: Final = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")


class _UnsplittableError(Exception):
    """The command cannot be split as the shell would: an unclosed quote, substitution or parenthesis."""


@final
class _ShellReader:
    """Reads a command as the shell would: its simple commands, each as written and as its words.

    A substitution or subshell is read by a reader of its own, from where it
    starts to its ``)``; its commands join this reader's.
    """

    __slots__ = ("bare", "clear", "commands", "pos", "start", "target", "text", "word", "words")

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.pos = self.start = pos
        self.commands: list[tuple[str, list[str]]] = []
        self.clear = True  # no substitution, subshell or expansion anywhere
        self.words: list[str] = []
        self.word: list[str] = []
        self.bare: list[str] = []  # the word's characters, quoted ones as "_": operators are unquoted only
        self.target = False  # whether the next word is the file of a redirection

    def read(self, closer: str = "") -> None:
        """Read simple commands up to `closer` (the ``)`` ending a substitution or subshell) or the end."""
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == ")":
                if not closer:
                    raise _UnsplittableError
                self._end_command(1)
                return
            if char in " \t":
                self._end_word()
                self.pos += 1
            elif char == "#" and not self.word:  # a comment, to the end of the line
                end = text.find("\n", self.pos)
                self.pos = len(text) if end == -1 else end
            elif char == "'":
                end = text.find("'", self.pos + 1)
                if end == -1:
                    raise _UnsplittableError
                self._add(text[self.pos + 1 : end], quoted=True)
                self.pos = end + 1
            elif char == '"':
                self._double_quoted()
            elif char == "\\":
                self._escaped()
            elif char == "(":
                self._nested(self.pos + 1)
            elif not self._expansion():
                self._operator_or(char)
        if closer:
            raise _UnsplittableError
        self._end_command(0)

    def _operator_or(self, char: str) -> None:
        """End the command at a control operator; any other character joins the word."""
        text, pos = self.text, self.pos
        after = text[pos - 1 : pos] if pos else ""
        # '&' in '2>&1', '<&0', '&>log' and '|' in '>|log' belong to a redirection, not to an operator
        redirect = (char == "&" and (after in ("<", ">") or text[pos + 1 : pos + 2] == ">")) or (
            char == "|" and after == ">"
        )
        operator = None if redirect else next((op for op in _OPERATORS if text.startswith(op, pos)), None)
        if operator is None:
            self._add(char, quoted=False)
            self.pos += 1
        else:
            self._end_command(len(operator))

    def _double_quoted(self) -> None:
        text = self.text
        self.pos += 1
        while self.pos < len(text):
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return
            if char == "\\":
                self._escaped()
            elif not self._expansion():
                self._add(char, quoted=True)
                self.pos += 1
        raise _UnsplittableError

    def _escaped(self) -> None:
        """A backslash: the next character taken literally (a backslash-newline joins two lines)."""
        self._add(self.text[self.pos + 1 : self.pos + 2].replace("\n", ""), quoted=True)
        self.pos += 2

    def _expansion(self) -> bool:
        """Read a ``$`` expansion or a backtick substitution at the position; whether there was one."""
        text, pos = self.text, self.pos
        if text.startswith("$(", pos):
            self._nested(pos + 2)
        elif text[pos] == "`":
            end = pos + 1
            while end < len(text) and text[end] != "`":
                end += 2 if text[end] == "\\" else 1
            if end >= len(text):
                raise _UnsplittableError
            # Inside backticks a backslash escapes only a backslash, a backtick or a dollar: drop it there.
            inner = _ShellReader(re.sub(r"\\([\\`$])", r"\1", text[pos + 1 : end]))
            inner.read()
            self.commands.extend(inner.commands)
            self.clear = False
            self.pos = end + 1
        elif text[pos] == "$" and text[pos + 1 : pos + 2] not in ("", " ", "\t", "\n"):
            # A parameter or quoted ($'...', $"...") expansion: its value is unknown here. Its quotes are read next.
            self.clear = False
            self.pos += 1
            if text[self.pos] not in "'\"":
                self._add("$", quoted=False)
        else:
            return False
        return True

    def _nested(self, start: int) -> None:
        """Read the commands of the substitution or subshell starting at `start`, up to its ``)``."""
        inner = _ShellReader(self.text, start)
        inner.read(")")
        self.commands.extend(inner.commands)
        self.clear = False
        self.pos = inner.pos

    def _add(self, chars: str, *, quoted: bool) -> None:
        self.word.append(chars)
        self.bare.append("_" * len(chars) if quoted else chars)

    def _end_word(self) -> None:
        if self.word:
            bare = "".join(self.bare)
            redirect = _REDIRECT.match(bare)
            if self.target:
                self.target = False
            elif redirect is not None:
                self.target = redirect.end() == len(bare)  # '>' alone: its file is the next word
            else:
                self.words.append("".join(self.word))
            self.clear = self.clear and not _BRACES.search(bare)
        self.word, self.bare = [], []

    def _end_command(self, skip: int) -> None:
        """Record the command ending at the position, then skip `skip` characters (its operator or ``)``)."""
        self._end_word()
        written = self.text[self.start : self.pos].strip()
        if written:
            self.commands.append((written, self.words))
        self.words, self.target = [], False
        self.pos += skip
        self.start = self.pos


def _program_words(words: list[str]) -> list[str]:
    """A simple command's words as its program gets them.

    ``VAR=value`` prefixes, reserved words and wrappers (with their options)
    dropped, the program's path reduced to its base name.
    """
    words = [word for word in words if word]
    i = 0
    while i < len(words):
        name = os.path.basename(words[i])
        if _ASSIGNMENT.match(words[i]) or words[i] in _RESERVED:
            i += 1
        elif name in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in _WRAPPERS[name] else 1
            if name == "timeout":
                i += 1  # its duration
        else:
            break
    rest = words[i:]
    return [os.path.basename(rest[0]), *rest[1:]] if rest else []


def _shell_script(words: list[str]) -> str | None:
    """The script of ``bash -c 'script'`` (or sh, dash, zsh, ksh), or None."""
    if not words or words[0] not in _SHELLS:
        return None
    i, has_c = 1, False
    while i < len(words) and words[i].startswith(("-", "+")):
        has_c = has_c or (not words[i].startswith("--") and "c" in words[i])
        i += 2 if words[i] in ("-o", "+o", "-O", "+O") else 1  # these take a value
    return words[i] if has_c and i < len(words) else None


def _shell_commands(command: str) -> tuple[list[tuple[str, str]], bool] | None:
    """The simple commands in `command`, each as written and normalised, and whether none holds a substitution.

    None when the command cannot be split. The script of ``bash -c`` is read
    as commands of its own.
    """
    readers = [_ShellReader(command)]
    found: list[tuple[str, str]] = []
    clear = True
    while readers:
        reader = readers.pop()
        try:
            reader.read()
        except _UnsplittableError:
            return None
        clear = clear and reader.clear
        for written, words in reader.commands:
            program = _program_words(words)
            found.append((written, " ".join(program)))
            script = _shell_script(program)
            if script is not None:
                readers.append(_ShellReader(script))
    return found, clear


_Readings: TypeAlias = tuple[tuple[str, ...] | None, tuple[str, ...] | None]
"""One argument as a deny or ask rule tests it (None: it matches every such rule), and as allow rules must cover it,
each reading by one of them (None: no allow rule applies)."""


@functools.lru_cache(maxsize=256)  # every Bash rule of a policy reads the same command: read it once
def _command_readings(command: str) -> _Readings:
    """A Bash command: the whole and each simple command as written and normalised; for allows, each as written."""
    split = _shell_commands(command)
    if split is None:
        return None, None
    commands, clear = split
    denied = (command.strip(), *(text for pair in commands for text in pair))
    return denied, (tuple(written for written, _ in commands) if clear else None)


def _path_readings(cwd: str, path: str) -> _Readings:
    """A path resolved against `cwd`: as written (``..`` and doubled slashes removed) and with symlinks followed.

    A directory (on disk, or written with a trailing ``/``) is also read as
    any entry inside it, so a search or listing of ``~/.ssh`` matches a deny
    rule for ``~/.ssh/**``.
    """
    joined = os.path.join(cwd, os.path.expanduser(path))
    try:
        real = os.path.realpath(joined)
    except ValueError:  # an embedded NUL: no file has that name, and no allow rule can vouch for it
        return (os.path.normpath(joined),), None
    forms = tuple(dict.fromkeys((os.path.normpath(joined), real)))
    if path.endswith("/") or os.path.isdir(real):
        return (*forms, *(os.path.join(form, "\0") for form in forms)), forms  # \0: a name no file has
    return forms, forms


def _host(name: str) -> str | None:
    """A host name as parsers compare it: percent-decoded, lower case, no trailing dot, IDNA; None if not IDNA."""
    name = unquote(name).lower().rstrip(".")
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def _url_readings(url: str) -> _Readings:
    """The hosts URL parsers may read in `url`; for allows, only a host every parser reads alike."""
    # WHATWG parsers (browsers, Node) drop tabs and newlines, trim controls and spaces, and read '\' as '/'.
    # After a special scheme they read any run of slashes as '//' ('https:evil.com' is https://evil.com).
    whatwg = re.sub(r"[\t\n\r]", "", url).strip("".join(map(chr, range(33)))).replace("\\", "/")
    whatwg = re.sub(r"^(https?|wss?|ftp):/*", r"\1://", whatwg, flags=re.IGNORECASE)
    hosts: list[str] = []
    plain = whatwg == url and not re.search(r"[\x00-\x1f\x7f]", url)
    for form in dict.fromkeys((url, whatwg)):
        try:
            parts = urlsplit(form)
        except ValueError:  # a malformed IPv6 literal
            plain = False
            continue
        if parts.hostname is not None:
            host = _host(parts.hostname)
            hosts.append(host or parts.hostname.lower())
            plain = plain and host is not None and "@" not in parts.netloc and "%" not in parts.hostname
    unique = tuple(dict.fromkeys(hosts))
    return unique, (unique if plain and len(unique) == 1 else None)


def _as_is(value: str) -> _Readings:
    return (value,), (value,)


def _unknown(value: str) -> _Readings:
    """A generic specifier: deny and ask rules test the value; an allow rule needs the tool's schema, not known."""
    return (value,), None


def _content_matcher(content: str) -> Callable[[str], bool]:
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


def _path_matcher(content: str, root: str, cwd: str) -> Callable[[str], bool]:
    """Claude Code's Read/Edit path specifier, gitignore style, against an absolute, normalised path.

    ``//p`` is absolute, ``~/p`` under the home directory, ``/p`` under `root`
    (the settings file's project), ``./p`` and ``p`` under `cwd` — a ``p``
    holding no ``/`` but a trailing one matches at any depth (``.env``,
    ``*.key``). A pattern that names a directory also matches everything
    inside it.
    """
    if content.startswith("//"):
        base, glob, anchored = "/", content[2:], True
    elif content.startswith("~/"):
        base, glob, anchored = os.path.expanduser("~"), content[2:], True
    elif content.startswith("/"):
        base, glob, anchored = root, content[1:], True
    elif content.startswith("./"):
        base, glob, anchored = cwd, content[2:], True
    else:
        base, glob, anchored = cwd, content, "/" in content.rstrip("/")
    bases = tuple(dict.fromkeys((base, os.path.realpath(base))))  # a symlinked base: its real paths are under it too
    directory_only = glob.endswith("/")
    regex = re.compile(("" if anchored else "(?:.*/)?") + _glob_regex(glob.rstrip("/")), re.DOTALL)

    def under(path: str, base: str) -> bool:
        relative = os.path.relpath(path, base).replace(os.sep, "/")
        if relative == ".." or relative.startswith("../"):
            return False
        parts = relative.split("/")
        candidates = range(1, len(parts)) if directory_only else range(1, len(parts) + 1)
        return any(regex.fullmatch("/".join(parts[:k])) for k in candidates)

    return lambda path: any(under(path, base) for base in bases)


def _domain_matcher(domain: str) -> Callable[[str], bool]:
    """``WebFetch(domain:example.com)``: the host is that domain (``*.example.com``: any subdomain of it)."""
    name = domain.removeprefix("*.")
    wanted = domain[: len(domain) - len(name)] + (_host(name) or name.lower())
    return lambda host: fnmatch.fnmatchcase(host, wanted)


def _values(args: Mapping[str, object], keys: tuple[str, ...]) -> tuple[list[str], bool]:
    """The strings `keys` hold in `args` (a key may hold a list of them), and whether they hold nothing else."""
    values: list[str] = []
    definite = True
    for key in keys:
        if key in args:
            held = args[key]
            for item in held if isinstance(held, list | tuple) else (held,):
                if isinstance(item, str):
                    values.append(item)
                else:
                    definite = False
    return values, definite


@final
class _ClaudeCheck:
    """A rule's ``when=``: whether a call's arguments satisfy one Claude Code specifier.

    A deny or ask rule matches when any reading of any of the tool's
    arguments does (of every top-level string argument, when the call holds
    none of them). An allow rule applies when it matches a reading and every
    reading of every argument is matched by an allow rule of the same kind
    for the same host tool (`allowed`).
    """

    __slots__ = ("allowed", "decision", "keys", "kind", "read", "rule", "test")

    def __init__(  # noqa: PLR0913 -- one parameter per part of a check
        self,
        rule: str,
        decision: Decision,
        kind: str,
        *,
        keys: tuple[str, ...],
        read: Callable[[str], _Readings],
        test: Callable[[str], bool],
    ) -> None:
        self.rule = rule
        self.decision = decision
        self.kind = kind
        self.keys = keys
        self.read = read
        self.test = test
        self.allowed: dict[str, list[Callable[[str], bool]]] = {}  # per host tool: the tests of its allow rules

    def __call__(self, ctx: PreToolCallDecideContext) -> bool:
        values, definite = _values(ctx.args, self.keys)
        if self.decision is not Decision.ALLOW:
            strings = values or [value for value in ctx.args.values() if isinstance(value, str)]
            return any(self._denies(value) for value in strings)
        readings: list[str] = []
        for value in values:
            allowed = self.read(value)[1]
            if allowed is None:
                return False
            readings.extend(allowed)
        tests = self.allowed.get(ctx.tool_name, [])
        return (
            definite
            and any(map(self.test, readings))
            and all(any(test(reading) for test in tests) for reading in readings)
        )

    def _denies(self, value: str) -> bool:
        readings = self.read(value)[0]
        return readings is None or any(map(self.test, readings))

    def __repr__(self) -> str:
        return self.rule


def _refuse(rule: object, where: str, why: str) -> HookValueError:
    return HookValueError(f"Cannot read the Claude Code permission rule {rule!r} in {where}: {why}.")


def _load_permissions(source: object) -> tuple[Mapping[str, object], str | None]:
    """The ``"permissions"`` object of a settings file or mapping (empty when it has none), and the file's directory."""
    directory = None
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
        directory = os.path.dirname(os.path.abspath(source))
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
    return permissions, directory


@final
class _Reader:
    """Turns Claude Code rule strings into Rules for the host's tool names."""

    __slots__ = ("allows", "cwd", "generic", "names", "path_keys", "read_path", "root")

    def __init__(self, names: dict[str, str], root: str, cwd: str, path_args: tuple[str, ...]) -> None:
        self.names = names
        self.root = root
        self.cwd = cwd
        self.path_keys = (*_PATH_KEYS, *path_args)
        self.read_path: Callable[[str], _Readings] = functools.partial(_path_readings, cwd)
        self.allows: list[tuple[_ClaudeCheck, tuple[str, ...]]] = []  # allow checks and the host tools they cover
        self.generic: set[str] = set()  # the rules already logged as rule_generic_specifier

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
        if tool.startswith("mcp__") and (tool.count("__") == 1 or tool.endswith("__*")):
            targets: tuple[str, ...] = (tool.removesuffix("__*") + "__*",)
        else:
            targets = _COVERS.get(tool, (tool,))
        hosts = tuple(dict.fromkeys(self.names.get(target, target) for target in targets))
        check = self._check(text, tool, content, decision) if content else None
        if check is not None and decision is Decision.ALLOW:
            self.allows.append((check, hosts))
        reason = {
            Decision.ALLOW: "",
            Decision.ASK: f"the Claude Code permission rule {text!r} asks for approval",
            Decision.DENY: f"denied by the Claude Code permission rule {text!r}",
        }[decision]
        return [Rule(decision, host, check, reason) for host in hosts]

    def _check(self, text: str, tool: str, content: str, decision: Decision) -> _ClaudeCheck:
        """The check for a rule with a specifier: Claude Code's matching for the tool where hookreg knows it."""
        if tool == "Bash":
            return _ClaudeCheck(
                text, decision, "Bash", keys=("command",), read=_command_readings, test=_content_matcher(content)
            )
        if tool in _PATH_TOOLS:
            test = _path_matcher(content, self.root, self.cwd)
            return _ClaudeCheck(text, decision, "path", keys=self.path_keys, read=self.read_path, test=test)
        domain = content.removeprefix("domain:")
        if tool == "WebFetch" and domain and domain != content:
            return _ClaudeCheck(
                text, decision, "WebFetch", keys=("url",), read=_url_readings, test=_domain_matcher(domain)
            )
        test = _content_matcher(content)
        if tool in _NAMED_ARGUMENT:
            return _ClaudeCheck(text, decision, tool, keys=(_NAMED_ARGUMENT[tool],), read=_as_is, test=test)
        if text not in self.generic:
            self.generic.add(text)
            log("info", "rule_generic_specifier", rule=text, tool=tool)
        return _ClaudeCheck(text, decision, "generic", keys=(), read=_unknown, test=test)


def from_claude_permissions(
    source: str | os.PathLike[str] | Mapping[str, object],
    *,
    tool_names: Mapping[str, str] | None = None,
    default: Default = "ask",
    project_dir: str | os.PathLike[str] | None = None,
    path_args: Sequence[str] = (),
) -> Policy:
    """Build a Policy from Claude Code ``"permissions"`` rules, with Claude Code's matching and precedence.

    Reads the ``allow``, ``ask`` and ``deny`` lists of the settings'
    ``"permissions"`` object; its other keys (``defaultMode``,
    ``additionalDirectories``, ``disableBypassPermissionsMode``...) are
    ignored, and settings without ``"permissions"`` give no rules. Any deny
    beats any ask beats any allow, whatever their specificity; a call no rule
    matches gets `default` — ``"ask"``, as Claude Code asks the user. Every
    rule of the form ``Name`` or ``Name(specifier)`` loads, whatever the tool.

    Rules:
        - ``Tool`` (also ``Tool(*)``, ``Tool()``) matches every call of the tool;
          ``mcp__server`` and ``mcp__server__*`` every tool of that MCP server;
          ``mcp__server__tool`` that one tool.
        - ``Bash(npm run build)``: exactly that command. ``Bash(npm run test:*)``
          (legacy): that command, or it followed by a space and anything.
          ``Bash(git * main)``: ``*`` matches any text (``\\*`` a literal star); a
          single trailing `` *`` is optional, so ``Bash(git *)`` also matches
          ``git``. A deny or ask rule matches a command when it matches the
          whole command or any part of it, as written or normalised: split
          at ``&&``, ``||``, ``;``, ``|``, ``&`` and newlines; quotes,
          backslashes and runs of blanks and tabs removed; ``VAR=value``
          prefixes, reserved words (``{``, ``!``, ``then``...) and the
          wrappers ``sudo``, ``env``, ``command``, ``exec``, ``nohup``,
          ``time``, ``timeout N`` and ``xargs`` dropped; the program's path
          reduced to its base name; the text of ``bash -c`` / ``sh -c``,
          ``$(...)``, backticks and subshells read as commands of their own.
          A command that cannot be split (an unclosed quote) matches every
          Bash deny and ask rule. An allow rule allows a command only when
          every part, as written, is matched by an allow rule, and no part
          holds a substitution, a subshell, a ``$`` expansion or a brace
          expansion.
        - ``Read(...)``, ``Edit(...)``, ``Write(...)``: gitignore-style paths —
          ``//abs`` absolute, ``~/p`` under the home directory, ``/p``
          relative to the settings file's project (the directory holding its
          ``.claude`` folder, else its own; `project_dir` for a mapping),
          ``./p`` and ``p`` relative to `project_dir` (a ``p`` without ``/``
          matches at any depth); ``*`` stays within a directory, ``**``
          crosses them, and a directory matches what it holds. The path
          arguments are ``file_path``, ``path``, ``notebook_path``, each
          string in ``paths``, and those named in `path_args`; each is
          resolved against `project_dir` and read as written (``..`` and
          doubled slashes removed) and with symlinks followed. A deny or ask
          rule matches when any reading of any of them does; an allow rule
          applies when every reading of every one is allowed. An ``Edit``
          rule covers Edit, MultiEdit, Write and NotebookEdit; a ``Read``
          rule covers Read, Grep, Glob and LS, as in Claude Code.
        - ``WebFetch(domain:example.com)``: the URL's host is that domain
          (``domain:*.example.com`` any subdomain), compared in lower case,
          without a trailing dot, percent-decoded and IDNA-encoded. A URL
          that parsers read differently (a backslash, user info, control
          characters, a percent-encoded host) is never allowed by a domain
          rule, and a deny or ask rule tests every host parsers may read in it.
        - ``Task(agent)``, ``Skill(name)``, ``SlashCommand(/name:*)``: Bash's
          grammar against ``subagent_type``, ``skill`` and ``command``.
        - Any other specifier (``mcp__server__tool(x)``, a tool hookreg does not
          know) is generic, logged once as ``rule_generic_specifier``: a deny
          or ask rule matches when any top-level string argument matches it
          (Bash's grammar); an allow rule needs the tool's first declared
          parameter, which a tool call's context does not carry, so it allows
          nothing and such calls get `default`.

        A deny or ask rule for a call holding none of its tool's arguments
        (a host that names them differently) tests every top-level string
        argument instead, so a renamed argument cannot dodge it.

    Args:
        source: A settings file's path, or its parsed mapping.
        tool_names: Claude Code tool names mapped onto the host's, such as
            ``{"Bash": "shell", "Read": "read_file"}``; unmapped names are kept.
        default: What a call no rule matches gets: ``"ask"``, ``"allow"`` or ``"deny"``.
        project_dir: The directory relative paths and path rules are resolved
            against; by default the current directory when this is called.
        path_args: More argument names that hold a path (a string or a list of
            them), tested by Read, Edit and Write rules.

    Returns:
        A Policy with ``precedence="decision"``, for ``registry.use_policy(policy)``.

    Raises:
        HookValueError: A rule that is not ``Name`` or ``Name(specifier)``
            (named), malformed settings, or a bad option.
        HookTypeError: `source` is neither a path nor a mapping.
        OSError: The file cannot be read.
    """
    permissions, directory = _load_permissions(source)
    names = dict(tool_names or {})
    for claude, host in names.items():
        if not (isinstance(claude, str) and isinstance(host, str) and host):
            msg = f"Cannot use tool_names={{{claude!r}: {host!r}}}: map Claude Code tool names to non-empty host names."
            raise HookValueError(msg)
    if isinstance(path_args, str) or not all(isinstance(name, str) and name for name in path_args):
        msg = f"Cannot use path_args={path_args!r}: give a list of argument names, such as ['target']."
        raise HookValueError(msg)
    cwd = os.path.abspath(os.fspath(project_dir) if project_dir is not None else os.getcwd())
    # Claude Code reads '/p' relative to the project a settings file belongs to: the one holding its .claude folder.
    root = cwd if directory is None else directory
    root = os.path.dirname(root) if os.path.basename(root) == ".claude" else root
    reader = _Reader(names, root, cwd, tuple(path_args))
    rules: list[Rule] = []
    for decision in (Decision.DENY, Decision.ASK, Decision.ALLOW):
        entries = permissions.get(decision.value, [])
        where = f"permissions.{decision.value}"
        if not isinstance(entries, list | tuple):
            msg = f"Cannot read Claude Code permissions: {where} is not a list of rules. Make it a JSON array."
            raise HookValueError(msg)
        for text in entries:
            rules.extend(reader.rules(text, where, decision))
    groups: dict[tuple[str, str], list[Callable[[str], bool]]] = {}
    for check, hosts in reader.allows:
        for host in hosts:
            groups.setdefault((host, check.kind), []).append(check.test)
    for check, hosts in reader.allows:
        check.allowed = {host: groups[host, check.kind] for host in hosts}
    return Policy(*rules, default=default, precedence="decision")
