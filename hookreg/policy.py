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

Which rule applies to a tool call: a rule naming an exact tool is
*specific*, a glob (``*``, ``?``, ``[``) is a *wildcard*. A specific deny
beats a specific ask, which beats a specific allow, which beats a wildcard
deny, then a wildcard ask, then a wildcard allow. Among rules of one level the
first one written wins. A rule with ``when=`` applies only when its predicate
returns true; a predicate that raises denies the call (fail closed) and logs
``policy_rule_failed`` (fields ``rule``, ``exc_type``). A call no rule matches
gets the policy's default.

An allow from a policy is a pass like any other: later gates still run and may deny.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, final

from hookreg._context import PreToolCallDecideContext
from hookreg._errors import HookTypeError, HookValueError
from hookreg._log import log
from hookreg._results import Decision, HookResult

__all__ = ["Policy", "Rule", "ToolPredicate", "allow", "ask", "deny"]

ToolPredicate: TypeAlias = Callable[[PreToolCallDecideContext], bool]
"""A rule's ``when=``: takes the tool call's context, returns whether the rule applies."""

_RANK: Final = {Decision.DENY: 0, Decision.ASK: 1, Decision.ALLOW: 2}
_GLOB_CHARS: Final = "*?["


@final
@dataclass(frozen=True, slots=True)
class Rule:
    """One tool rule; build it with `allow`, `deny` or `ask`.

    Attributes:
        decision: What the rule decides for the tools it matches.
        pattern: An exact tool name, or an ``fnmatch`` glob (case-sensitive).
        when: Applies the rule only when this returns true; ``None`` always applies.
        reason: What the model is told on a deny or an ask (a default names the
            tool); on an allow, the message.
    """

    decision: Decision
    pattern: str
    when: ToolPredicate | None = None
    reason: str = ""

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
        """Whether the pattern names one exact tool (not a glob)."""
        return not any(c in self.pattern for c in _GLOB_CHARS)

    def matches(self, tool_name: str) -> bool:
        """Whether the pattern matches `tool_name` (``when=`` aside)."""
        return tool_name == self.pattern if self.is_specific else fnmatch.fnmatchcase(tool_name, self.pattern)

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


@final
class Policy:
    """Tool rules compiled into one gate: a ``pre_tool_call_decide`` hook.

    ``registry.use_policy(*rules)`` registers one; build it directly to register
    it yourself (for instance with ``tools=`` or an async registry).

    Args:
        *rules: The rules, in the order that breaks ties within a level.
        default: What a call no rule matches gets: ``"allow"`` (a pass) or ``"deny"``.

    Raises:
        HookTypeError: A rule is not a Rule.
        HookValueError: `default` is neither ``"allow"`` nor ``"deny"``.
    """

    __slots__ = ("_exact", "_wildcards", "default", "rules")

    def __init__(self, *rules: Rule, default: Literal["allow", "deny"] = "allow") -> None:
        for rule in rules:
            if not isinstance(rule, Rule):
                msg = (
                    f"Cannot build a tool policy from {rule!r}: it is not a rule. "
                    "Build rules with hookreg.policy.allow(), deny() or ask()."
                )
                raise HookTypeError(msg)
        if default not in ("allow", "deny"):
            msg = f"Cannot build a tool policy with default={default!r}: it must be 'allow' or 'deny'."
            raise HookValueError(msg)
        self.rules: tuple[Rule, ...] = rules
        self.default: Literal["allow", "deny"] = default
        ordered = sorted(rules, key=lambda rule: _RANK[rule.decision])  # stable: the first written wins a tie
        self._exact: dict[str, tuple[Rule, ...]] = {}
        for rule in ordered:
            if rule.is_specific:
                self._exact[rule.pattern] = (*self._exact.get(rule.pattern, ()), rule)
        self._wildcards = tuple(rule for rule in ordered if not rule.is_specific)

    def __call__(self, ctx: PreToolCallDecideContext, /) -> HookResult:
        """Decide the tool call in `ctx`."""
        tool = ctx.tool_name
        for rule in (*self._exact.get(tool, ()), *self._wildcards):
            if not rule.matches(tool):
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
        return HookResult.allow()

    def __repr__(self) -> str:
        rules = "".join(f"{rule!r}, " for rule in self.rules)
        return f"Policy({rules}default={self.default!r})"
