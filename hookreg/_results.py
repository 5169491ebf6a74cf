"""What hooks return: HookResult, TurnAction, InvalidToolCallAction, RequestPatch, FinishReason."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal, final

from hookreg._log import log

__all__ = [
    "Decision",
    "FinishReason",
    "HookResult",
    "InvalidToolCallAction",
    "Message",
    "RequestPatch",
    "ToolCallResolution",
    "TurnAction",
]


class Decision(enum.StrEnum):
    """What a gate decided."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class HookResult:
    """The result of a gate: allow, deny or ask.

    Build it with `allow`, `deny` or `ask`. Equality ignores `decided_by`.

    Attributes:
        decision: What was decided.
        reason: Why, for the model (empty for an allow).
        message: For the user or the log.
        decided_by: The name of the deciding hook, filled in by dispatch.
    """

    decision: Decision
    reason: str = ""
    message: str = ""
    decided_by: str | None = field(default=None, compare=False)

    _ALLOW: ClassVar[HookResult]

    @property
    def allowed(self) -> bool:
        """``True`` only for an allow."""
        return self.decision is Decision.ALLOW

    @classmethod
    def allow(cls, message: str = "") -> HookResult:
        """Let the action go ahead; without a message this is one shared instance."""
        return cls(decision=Decision.ALLOW, message=message) if message else cls._ALLOW

    @classmethod
    def deny(cls, reason: str) -> HookResult:
        """Refuse the action; `reason` is what the model is told."""
        return cls(decision=Decision.DENY, reason=reason)

    @classmethod
    def ask(cls, reason: str) -> HookResult:
        """Ask a human first (resolved by the harness through ``on_interaction``)."""
        return cls(decision=Decision.ASK, reason=reason)


HookResult._ALLOW = HookResult(decision=Decision.ALLOW)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TurnAction:
    """What to do with a finished model turn.

    Attributes:
        kind: ``"continue"``, ``"repeat"`` or ``"feedback"``.
        feedback: The user message appended by ``retry_with_feedback``.
        decided_by: The name of the deciding hook; takes no part in equality.
    """

    kind: Literal["continue", "repeat", "feedback"]
    feedback: str | None = None
    decided_by: str | None = field(default=None, compare=False)

    _CONTINUE: ClassVar[TurnAction]

    @classmethod
    def continue_run(cls) -> TurnAction:
        """Accept the turn (the pass value; one shared instance)."""
        return cls._CONTINUE

    @classmethod
    def repeat(cls) -> TurnAction:
        """Ask again with the same prompt and history, prepared afresh."""
        return cls(kind="repeat")

    @classmethod
    def retry_with_feedback(cls, text: str) -> TurnAction:
        """Keep the rejected answer and append `text` as a user message."""
        return cls(kind="feedback", feedback=text)


TurnAction._CONTINUE = TurnAction(kind="continue")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidToolCallAction:
    """What to do with a call to an unknown tool or with bad arguments.

    Attributes:
        kind: ``"fail"``, ``"retry"``, ``"repair"``, ``"skip"`` or ``"stop"``.
        feedback: What the model is told on ``retry``.
        tool_name: The tool to call instead, on ``repair``.
        reason: Why, on ``fail``, ``skip`` and ``stop``.
        decided_by: The name of the deciding hook; takes no part in equality.
    """

    kind: Literal["fail", "retry", "repair", "skip", "stop"]
    feedback: str | None = None
    tool_name: str | None = None
    reason: str = ""
    decided_by: str | None = field(default=None, compare=False)

    _FAIL: ClassVar[InvalidToolCallAction]

    @classmethod
    def fail(cls, reason: str = "") -> InvalidToolCallAction:
        """Fail the call (the result when no hook decides)."""
        return cls(kind="fail", reason=reason) if reason else cls._FAIL

    @classmethod
    def retry(cls, feedback: str) -> InvalidToolCallAction:
        """Send `feedback` to the model and let it try again."""
        return cls(kind="retry", feedback=feedback)

    @classmethod
    def repair(cls, tool_name: str) -> InvalidToolCallAction:
        """Call `tool_name` instead, with the same arguments."""
        return cls(kind="repair", tool_name=tool_name)

    @classmethod
    def skip(cls, reason: str) -> InvalidToolCallAction:
        """Skip the call, telling the model `reason`."""
        return cls(kind="skip", reason=reason)

    @classmethod
    def stop(cls, reason: str) -> InvalidToolCallAction:
        """End the run: the harness and the adapters raise ``StopRun(reason)``."""
        return cls(kind="stop", reason=reason)


InvalidToolCallAction._FAIL = InvalidToolCallAction(kind="fail")

_SCALARS = ("preamble", "temperature", "max_tokens", "tool_choice", "messages")


class FinishReason(enum.StrEnum):
    """Why a model turn ended, normalised across providers (the provider's spelling stays in ``raw_finish_reason``)."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    OTHER = "other"

    @classmethod
    def from_raw(cls, raw: str | None) -> FinishReason | None:
        """Map a provider's spelling, case-insensitively: unknown spellings are `OTHER`, no reason is ``None``.

        Example:
            >>> FinishReason.from_raw("MAX_TOKENS")
            <FinishReason.LENGTH: 'length'>
        """
        if raw is None:
            return None
        return _FINISH_SPELLINGS.get(str(raw).lower(), cls.OTHER)


_FINISH_SPELLINGS: dict[str, FinishReason] = {
    "stop": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "tool_use": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "safety": FinishReason.CONTENT_FILTER,
    "recitation": FinishReason.CONTENT_FILTER,
    "error": FinishReason.ERROR,
}


@final
@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation history."""

    role: str
    content: str
    name: str | None = None
    tool_call_id: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RequestPatch:
    """Changes to one model request (per turn, never sticky); ``None`` means unset.

    Attributes:
        extra_context: Extra context blocks, appended in order.
        additional_params: Provider parameters, shallow-merged (later key wins).
        preamble: The system preamble.
        temperature: Sampling temperature.
        max_tokens: The output token cap.
        tool_choice: The provider's tool-choice setting.
        active_tools: The tools offered; patches intersect them.
        messages: The messages sent for this call instead of the history
            (the transcript is unchanged).
    """

    extra_context: tuple[str, ...] | None = None
    additional_params: Mapping[str, object] | None = None
    preamble: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: str | None = None
    active_tools: frozenset[str] | None = None
    messages: tuple[Message, ...] | None = None

    def __post_init__(self) -> None:
        if self.extra_context is not None:
            object.__setattr__(self, "extra_context", tuple(self.extra_context))
        if self.additional_params is not None:
            object.__setattr__(self, "additional_params", MappingProxyType(dict(self.additional_params)))
        if self.active_tools is not None:
            object.__setattr__(self, "active_tools", frozenset(self.active_tools))
        if self.messages is not None:
            object.__setattr__(self, "messages", tuple(self.messages))

    def merge(self, other: RequestPatch) -> RequestPatch:
        """Return this patch with `other` applied on top.

        `extra_context` is concatenated; `additional_params` shallow-merged,
        later key wins; scalars and `messages` take `other`'s value when set, logging
        ``patch_conflict`` when both set different values; `active_tools` is
        intersected. An unset field never overwrites a set one.
        """
        changes: dict[str, object] = {}
        if other.extra_context is not None:
            changes["extra_context"] = (self.extra_context or ()) + other.extra_context
        if other.additional_params is not None:
            changes["additional_params"] = {**(self.additional_params or {}), **other.additional_params}
        for name in _SCALARS:
            value = getattr(other, name)
            if value is None:
                continue
            mine = getattr(self, name)
            if mine is not None and mine != value:
                log("warning", "patch_conflict", field=name)
            changes[name] = value
        if other.active_tools is not None:
            changes["active_tools"] = (
                other.active_tools if self.active_tools is None else self.active_tools & other.active_tools
            )
        if not changes:
            return self
        merged: dict[str, Any] = {name: getattr(self, name) for name in self.__dataclass_fields__}
        merged.update(changes)
        return RequestPatch(**merged)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallResolution:
    """What `HookRegistry.resolve_tool_call` concluded about one tool call.

    Attributes:
        args: The effective arguments (after input transforms), also on a deny.
        result: The gate's decision on those arguments.
        rewritten: Whether any input transform returned a value.
    """

    args: Mapping[str, object]
    result: HookResult
    rewritten: bool
