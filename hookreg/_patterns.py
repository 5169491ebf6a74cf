"""Tool patterns — ``NAME`` or ``NAME(KEY=GLOB)`` — parsed and matched, for ``tools=`` and policy rules alike.

``NAME`` is an exact tool name or a case-sensitive ``fnmatch`` glob (``*``,
``?``, ``[...]``; ``[[]`` matches a literal ``[``). ``NAME(KEY=GLOB)`` also
requires the call's argument ``KEY`` to be a string matching ``GLOB`` (also an
``fnmatch`` glob, where ``*`` matches any text, ``/`` and newlines included): a
call whose ``KEY`` is missing or not a string does not match. ``KEY`` is an
identifier; ``NAME`` holds no parentheses; ``GLOB`` is not empty and its
parentheses balance outside ``[...]`` sets (write ``[(]`` or ``[)]`` for a
lone one).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

__all__ = ["GRAMMAR", "ToolPattern", "parse_tool_pattern", "tool_matcher", "tools_matcher"]

GRAMMAR: Final = (
    "A tool pattern is NAME or NAME(KEY=GLOB): NAME a tool name or fnmatch glob without parentheses, "
    "KEY an argument name (an identifier), GLOB a non-empty fnmatch glob of that string argument, "
    "as in 'bash' or 'bash(command=git *)'"
)
_GLOB_CHARS: Final = frozenset("*?[")


class ToolPattern(NamedTuple):
    """One parsed tool pattern.

    Attributes:
        text: The pattern as written.
        name: The tool-name part: an exact name or a glob.
        key: The argument the pattern also tests, or ``None``.
        glob: The argument's glob (``""`` without a `key`).
    """

    text: str
    name: str
    key: str | None
    glob: str

    @property
    def is_exact(self) -> bool:
        """Whether the name part names one tool (it holds no glob character)."""
        return not _GLOB_CHARS.intersection(self.name)

    def matches(self, tool_name: str, args: Mapping[str, object] | None) -> bool:
        """Whether a call of `tool_name` with `args` matches (``args=None``: a call without arguments)."""
        if not (tool_name == self.name if self.is_exact else fnmatch.fnmatchcase(tool_name, self.name)):
            return False
        if self.key is None:
            return True
        value = None if args is None else args.get(self.key)
        return isinstance(value, str) and fnmatch.fnmatchcase(value, self.glob)


def _balanced(glob: str) -> bool:
    """Whether the parentheses of `glob` balance, skipping ``[...]`` sets as fnmatch reads them."""
    depth, i, n = 0, 0, len(glob)
    while i < n:
        char = glob[i]
        if char == "[":
            j = i + 1
            if j < n and glob[j] == "!":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            close = glob.find("]", j)
            if close != -1:  # a set: its characters are literal; an unclosed '[' is itself literal
                i = close + 1
                continue
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return False
        i += 1
    return depth == 0


def _problem(pattern: str) -> tuple[str, ToolPattern | None]:  # noqa: PLR0911 -- one return per fault, each named
    """What is wrong with `pattern` (``""`` when nothing is), and its parse."""
    if not pattern:
        return "it is empty", None
    if "(" not in pattern and ")" not in pattern:
        return "", ToolPattern(pattern, pattern, None, "")
    name, _, rest = pattern.partition("(")
    if not name:
        return "the tool name before '(' is empty", None
    if ")" in name:
        return "it has a ')' before any '('", None
    if not rest.endswith(")"):
        return "its parentheses do not close at the end", None
    key, equals, glob = rest[:-1].partition("=")
    if not equals:
        return "the part in parentheses has no '='", None
    if not key.isidentifier():
        return f"the argument name {key!r} is not an identifier", None
    if not glob:
        return "the argument glob after '=' is empty", None
    if not _balanced(glob):
        return "its parentheses are unbalanced", None
    return "", ToolPattern(pattern, name, key, glob)


def parse_tool_pattern(pattern: str, fail: Callable[[str], Exception]) -> ToolPattern:
    """Parse `pattern`, or raise ``fail(why)``: a sentence naming the pattern, the fault and the grammar."""
    why, parsed = _problem(pattern)
    if parsed is None:
        raise fail(f"the tool pattern {pattern!r} is malformed: {why}. {GRAMMAR}.")
    return parsed


def tool_matcher(patterns: tuple[ToolPattern, ...]) -> Callable[[Any], bool]:
    """Compile `patterns` into one test of a tool-scoped context (``ctx.tool_name``, and ``ctx.args`` if needed).

    Exact names are one set lookup; a context without a tool name matches
    nothing. Only patterns with an argument read ``ctx.args``.
    """
    exact = frozenset(p.name for p in patterns if p.key is None and p.is_exact)
    globs = tuple(p.name for p in patterns if p.key is None and not p.is_exact)
    with_args = tuple(p for p in patterns if p.key is not None)

    def by_name(ctx: Any) -> bool:
        tool_name = ctx.tool_name
        return tool_name is not None and (
            tool_name in exact or any(fnmatch.fnmatchcase(tool_name, glob) for glob in globs)
        )

    if not with_args:
        return by_name  # the common case: one call, as cheap as before argument patterns existed

    def matches(ctx: Any) -> bool:
        if by_name(ctx):
            return True
        tool_name = ctx.tool_name
        return tool_name is not None and any(p.matches(tool_name, ctx.args) for p in with_args)

    return matches


def tools_matcher(
    tools: object, context: type[Any], type_error: Callable[[str], Exception], value_error: Callable[[str], Exception]
) -> tuple[tuple[str, ...], Callable[[Any], bool]]:
    """Check a ``tools=`` option: its patterns as given, and the test of a `context` they make.

    A pattern testing an argument is refused where `context` carries no
    ``args`` (it could never match); a fault is raised as ``type_error(why)``
    or ``value_error(why)``.
    """
    if not isinstance(tools, str | Iterable):
        raise type_error(f"tools= must be a str or an iterable of str, not {type(tools).__name__}.")
    patterns = (tools,) if isinstance(tools, str) else tuple(tools)
    wrong = next((p for p in patterns if not isinstance(p, str)), None)
    if wrong is not None:
        raise type_error(f"tools= must hold only str tool names or globs, not {type(wrong).__name__}.")
    if not patterns or not all(patterns):
        raise value_error("tools= must be non-empty tool names or globs. Omit tools= to match every tool.")
    parsed = tuple(parse_tool_pattern(p, value_error) for p in patterns)
    testing_args = next((p for p in parsed if p.key is not None), None)
    if testing_args is not None and "args" not in context.__slots__:
        raise value_error(
            f"tools={testing_args.text!r} tests an argument, but {context.__name__} carries no args, "
            f"so the hook would never run. Use the bare tool name {testing_args.name!r}."
        )
    return patterns, tool_matcher(parsed)
