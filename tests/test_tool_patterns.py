"""Tool patterns — NAME or NAME(KEY=GLOB) — as tools= filters and policy rules, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from hookreg import HookPoint, HookRegistry, HookResult, HookValueError, PreToolCallDecideContext
from hookreg._patterns import parse_tool_pattern
from hookreg.policy import Policy, allow, deny
from hookreg.testing import make_context

# (pattern, tool name, args, whether a call of that tool with those args matches)
MATCHES: list[tuple[str, str, Mapping[str, object], bool]] = [
    ("bash", "bash", {}, True),
    ("bash", "bash2", {}, False),
    ("Bash", "bash", {}, False),  # case-sensitive
    ("shell_*", "shell_run", {}, True),
    ("tool_?", "tool_ab", {}, False),
    ("[bz]sh", "zsh", {}, True),
    ("tool[[]1]", "tool[1]", {}, True),  # [[] is a literal [
    ("tool[[]1]", "tool1", {}, False),
    ("bash(command=git *)", "bash", {"command": "git status"}, True),
    ("bash(command=git *)", "bash", {"command": "gitk"}, False),
    ("bash(command=git *)", "bash", {"command": "echo; git status"}, False),  # the glob is anchored at the start
    ("bash(command=git *)", "bash", {"command": "git log\nrm -rf /"}, True),  # * is any text, newlines included
    ("bash(command=git *)", "zsh", {"command": "git status"}, False),
    ("bash(command=git *)", "bash", {}, False),  # key missing
    ("bash(command=git *)", "bash", {"command": ["git", "status"]}, False),  # not a string
    ("bash(command=git *)", "bash", {"command": None}, False),
    ("bash(cmd=git *)", "bash", {"command": "git status"}, False),  # another key
    ("write_*(path=src/*)", "write_file", {"path": "src/a/b.py"}, True),
    ("write_*(path=src/*)", "write_file", {"path": "docs/a.md"}, False),
    ("write_*(path=src/*)", "read_file", {"path": "src/a.py"}, False),
    ("bash(command=echo $(date))", "bash", {"command": "echo $(date)"}, True),
    ("bash(command=*[)]*)", "bash", {"command": "a)b"}, True),  # a lone ) inside a set
    ("bash(command=a=b*)", "bash", {"command": "a=bc"}, True),  # the first = splits key from glob
    ("bash(command=[[]x])", "bash", {"command": "[x]"}, True),
    ("bash(command=[!(]*)", "bash", {"command": "x("}, True),  # a negated set holding a parenthesis
    ("bash(command=[])]*)", "bash", {"command": ")"}, True),  # ] first in a set is literal
    ("bash(command=a[b(c))", "bash", {"command": "a[b(c)"}, True),  # an unclosed [ is literal
]

MALFORMED: list[tuple[str, str]] = [
    ("bash(", "do not close at the end"),
    ("bash(command=git *", "do not close at the end"),
    ("bash)", "a ')' before any '('"),
    ("(command=x)", "the tool name before '(' is empty"),
    ("bash()", "has no '='"),
    ("bash(command)", "has no '='"),
    ("bash(=git *)", "argument name '' is not an identifier"),
    ("bash(my-key=x)", "argument name 'my-key' is not an identifier"),
    ("bash(command=)", "the argument glob after '=' is empty"),
    ("bash(command=x))", "unbalanced"),
    ("bash(command=a(b)", "unbalanced"),
    ("bash(command=x)y", "do not close at the end"),
]


def call(tool: str, args: Mapping[str, object]) -> PreToolCallDecideContext:
    return make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name=tool, args=dict(args))


def gate_registry(pattern: str) -> HookRegistry:
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("hit"), tools=pattern, name="gate")
    return registry


@pytest.mark.parametrize(("pattern", "tool", "args", "expected"), MATCHES)
def test_tools_filter_matching_table_sync(pattern: str, tool: str, args: Mapping[str, object], expected: bool) -> None:
    """A hook registered with tools=pattern runs exactly for the calls the pattern matches (sync dispatch)."""
    result = gate_registry(pattern).decide(HookPoint.PRE_TOOL_CALL_DECIDE, call(tool, args))
    assert (not result.allowed) is expected


@pytest.mark.parametrize(("pattern", "tool", "args", "expected"), MATCHES)
def test_tools_filter_matching_table_async(pattern: str, tool: str, args: Mapping[str, object], expected: bool) -> None:
    """The async surface filters with the same patterns, for an async hook too."""
    registry = HookRegistry()

    async def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("hit")

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, tools=pattern)
    result = asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, call(tool, args)))
    assert (not result.allowed) is expected


@pytest.mark.parametrize(("pattern", "tool", "args", "expected"), MATCHES)
def test_policy_rule_matching_table(pattern: str, tool: str, args: Mapping[str, object], expected: bool) -> None:
    """A policy rule's pattern matches exactly the calls the same tools= pattern matches."""
    policy = Policy(deny(pattern), default="allow")
    assert (not policy(call(tool, args)).allowed) is expected
    assert deny(pattern).matches(tool, args) is expected


@pytest.mark.parametrize(("pattern", "why"), MALFORMED)
def test_malformed_tools_pattern_is_refused_at_registration(pattern: str, why: str) -> None:
    """A malformed tools= pattern is a HookValueError naming the hook, the pattern, the fault and the grammar."""
    registry = HookRegistry()

    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    with pytest.raises(HookValueError, match="NAME or NAME\\(KEY=GLOB\\)") as raised:
        registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, tools=["ok", pattern])
    message = str(raised.value)
    assert message.startswith("Cannot register 'test_malformed_tools_pattern_is_refused_at_registration.<locals>.gate'")
    assert f"the tool pattern {pattern!r} is malformed: " in message
    assert why in message
    assert raised.value.point is HookPoint.PRE_TOOL_CALL_DECIDE
    assert isinstance(raised.value, ValueError)
    assert not registry.has_hooks(HookPoint.PRE_TOOL_CALL_DECIDE)


@pytest.mark.parametrize(("pattern", "why"), MALFORMED)
def test_malformed_policy_pattern_is_refused_when_the_rule_is_built(pattern: str, why: str) -> None:
    """A malformed policy rule pattern is refused by allow()/deny()/ask(), naming the rule and the grammar."""
    with pytest.raises(HookValueError, match="NAME or NAME\\(KEY=GLOB\\)") as raised:
        allow(pattern)
    assert str(raised.value).startswith(f"Cannot build allow({pattern!r}): the tool pattern {pattern!r} is malformed")
    assert why in str(raised.value)


def test_the_decorator_refuses_a_malformed_pattern_when_applied() -> None:
    """The decorator form validates tools= when applied, and the error names the decorated function."""
    registry = HookRegistry()
    with pytest.raises(
        HookValueError,
        match=r"Cannot register '[^']*no_git' at pre_tool_call_decide: the tool pattern 'bash\(command=git \*' is malf",
    ):

        @registry.pre_tool_call_decide(tools="bash(command=git *")
        def no_git(ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.deny("no")


def test_an_argument_pattern_at_a_point_without_args_is_refused() -> None:
    """tool_call_delta and on_interaction contexts carry no args, so an argument pattern there could never match."""
    registry = HookRegistry()
    with pytest.raises(HookValueError, match=r"ToolCallDeltaContext carries no args.*Use the bare tool name 'bash'"):
        registry.register(HookPoint.TOOL_CALL_DELTA, lambda ctx: None, tools="bash(command=git *)")
    with pytest.raises(HookValueError, match="OnInteractionContext carries no args"):
        registry.register(HookPoint.ON_INTERACTION, lambda ctx: HookResult.allow(), tools="bash(command=x)")
    registry.register(HookPoint.TOOL_CALL_DELTA, lambda ctx: None, tools="bash")  # a bare name is fine


def test_names_and_argument_patterns_combine_as_any_of() -> None:
    """A list of patterns matches when any one does: a bare name, a glob or an argument pattern."""
    registry = HookRegistry()
    seen: list[str] = []
    registry.register(
        HookPoint.POST_TOOL_CALL,
        lambda ctx: seen.append(ctx.tool_name),
        tools=["ls", "read_*", "bash(command=git *)"],
    )
    for tool, args in [("ls", {}), ("read_x", {}), ("bash", {"command": "git st"}), ("bash", {"command": "rm"})]:
        registry.notify(HookPoint.POST_TOOL_CALL, make_context(HookPoint.POST_TOOL_CALL, tool_name=tool, args=args))
    assert seen == ["ls", "read_x", "bash"]


def test_a_transform_filter_tests_the_args_rewritten_so_far() -> None:
    """At transform_tool_input an argument pattern sees the args earlier transforms produced, as the hook would."""
    registry = HookRegistry()
    registry.register(
        HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {**ctx.args, "command": "git status"}, name="to-git", priority=1
    )
    registry.register(
        HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {**ctx.args, "seen": True}, tools="bash(command=git *)"
    )
    args = registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, call("bash", {"command": "ls"}))
    assert dict(args) == {"command": "git status", "seen": True}


def test_an_argument_policy_rule_is_specific_and_acts_like_a_predicate() -> None:
    """An argument rule is specific: deny('bash(command=rm *)') beats a wildcard allow; an allow does the rest."""
    registry = HookRegistry()
    registry.use_policy(deny("bash(command=rm *)", reason="no rm"), allow("bash"), allow("*"), default="deny")
    rm = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, call("bash", {"command": "rm -rf /"}))
    assert (rm.allowed, rm.reason) == (False, "no rm")
    assert registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, call("bash", {"command": "ls"})).allowed
    assert deny("bash(command=rm *)").is_specific
    assert not deny("b*(command=rm *)").is_specific
    assert not deny("bash(command=rm *)").matches("bash")  # no args: the key is missing


def test_the_parser_refuses_an_empty_pattern_itself() -> None:
    """parse_tool_pattern refuses "" even though tools= and rules check emptiness first, with the grammar."""
    with pytest.raises(HookValueError, match=r"the tool pattern '' is malformed: it is empty\. A tool pattern is"):
        parse_tool_pattern("", HookValueError)
