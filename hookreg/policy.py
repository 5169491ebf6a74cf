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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias, final

from hookreg._context import PreToolCallDecideContext
from hookreg._errors import HookTypeError, HookValueError
from hookreg._log import log
from hookreg._patterns import ToolPattern, parse_tool_pattern
from hookreg._results import Decision, HookResult

__all__ = ["Policy", "Rule", "ToolPredicate", "allow", "ask", "deny"]

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
                name = rule._parsed.name
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
