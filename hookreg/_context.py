"""What hooks receive: the per-point context classes, RunContext and its Scratchpad."""

from __future__ import annotations

import enum
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, TypeVar, final

from hookreg._results import FinishReason, Message, RequestPatch

__all__ = [
    "InvalidToolCallContext",
    "Message",
    "ModelSelectContext",
    "ModelTurnFinishedContext",
    "NotificationContext",
    "OnCompactionContext",
    "OnInteractionContext",
    "OnSessionEndContext",
    "OnSessionStartContext",
    "OnToolErrorContext",
    "PermissionDeniedContext",
    "PostToolCallContext",
    "PostToolCallFailureContext",
    "PostTurnContext",
    "PreCompactContext",
    "PreModelCallContext",
    "PreToolCallDecideContext",
    "PreTurnContext",
    "ReasoningDeltaContext",
    "RunContext",
    "RunOutcome",
    "Scratchpad",
    "SetupContext",
    "StopContext",
    "SubagentStartContext",
    "SubagentStopContext",
    "TextDeltaContext",
    "ToolCallDeltaContext",
    "ToolCallRequest",
    "ToolErrorKind",
    "TransformToolResultContext",
    "UserPromptSubmitContext",
]

_T = TypeVar("_T")


def _freeze(obj: object, maps: tuple[str, ...] = (), seqs: tuple[str, ...] = ()) -> None:
    """Replace mapping fields by read-only copies and sequence fields by tuples."""
    for name in maps:
        object.__setattr__(obj, name, MappingProxyType(dict(getattr(obj, name))))
    for name in seqs:
        object.__setattr__(obj, name, tuple(getattr(obj, name)))


@final
class Scratchpad:
    """Run-scoped storage keyed by exact class, safe to share between threads.

    `child` gives a scope (a turn's) that reads through to this one and writes
    only to itself.

    Example:
        >>> class Retries(int): ...
        >>> pad = Scratchpad()
        >>> pad.update(Retries, lambda n: Retries(n + 1))
        1
    """

    __slots__ = ("_lock", "_parent", "_values")

    def __init__(self) -> None:
        self._values: dict[type, object] = {}
        self._lock = threading.RLock()
        self._parent: Scratchpad | None = None

    def child(self) -> Scratchpad:
        """A new scope whose `get` and ``in`` fall back to this scratchpad; writes stay in the child.

        `insert`, `remove` and `update` act on the child only (`update` starts
        from the child's value, else this scratchpad's, else ``T()``): this
        scratchpad never sees the child's state.
        """
        scope = Scratchpad()
        scope._parent = self
        return scope

    def get(self, key: type[_T], /) -> _T | None:
        """Return the value stored under class `key` (here, else in the parent scope), or ``None``."""
        if key in self._values or self._parent is None:
            return self._values.get(key)  # type: ignore[return-value]  # stored under its own type
        return self._parent.get(key)

    def insert(self, value: object, /) -> None:
        """Store `value` under ``type(value)``, replacing what was there."""
        with self._lock:
            self._values[type(value)] = value

    def remove(self, key: type[_T], /) -> _T | None:
        """Remove and return the value stored under `key` in this scope, or ``None``."""
        with self._lock:
            return self._values.pop(key, None)  # type: ignore[return-value]  # stored under its own type

    def update(self, key: type[_T], fn: Callable[[_T], _T], /) -> _T:
        """Atomically replace the value under `key` by ``fn(value)`` (``key()`` when absent here and in the parent)."""
        with self._lock:
            current = self.get(key)
            new = fn(key() if current is None else current)
            self._values[key] = new
            return new

    def __contains__(self, key: object, /) -> bool:
        return key in self._values or (self._parent is not None and key in self._parent)

    def __repr__(self) -> str:
        return f"Scratchpad({', '.join(sorted(t.__name__ for t in self._values))})"


def _new_run_id() -> str:
    return os.urandom(16).hex()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """The agent run a dispatch belongs to.

    ``RunContext()`` is a detached run: a new `run_id`, ``session_id == run_id``,
    turn 0, depth 0, a new scratchpad and a child of it as `turn_scratchpad`.
    Move to the next turn with
    ``dataclasses.replace(run, turn=n, turn_scratchpad=run.scratchpad.child())``,
    which keeps the run's scratchpad and starts a fresh turn scope.
    An empty `session_id` means "same as `run_id`"; an omitted
    `turn_scratchpad` is a new child of `scratchpad`.
    """

    run_id: str = field(default_factory=_new_run_id)
    session_id: str = ""
    turn: int = 0
    depth: int = 0
    agent_name: str | None = None
    is_streaming: bool = False
    scratchpad: Scratchpad = field(default_factory=Scratchpad, compare=False)
    turn_scratchpad: Scratchpad = field(default=None, compare=False)  # type: ignore[assignment]  # None: a new child

    def __post_init__(self) -> None:
        if not self.session_id:
            object.__setattr__(self, "session_id", self.run_id)
        if self.turn_scratchpad is None:
            object.__setattr__(self, "turn_scratchpad", self.scratchpad.child())


class ToolErrorKind(enum.StrEnum):
    """Why a tool call failed."""

    EXCEPTION = "exception"
    NOT_FOUND = "not_found"
    INVALID_ARGS = "invalid_args"
    TIMEOUT = "timeout"


@final
@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run or a subagent ended."""

    status: Literal["completed", "stopped", "failed", "cancelled"]
    reason: str = ""
    turns: int = 0


@final
@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call the model asked for; `args` is a read-only copy."""

    call_id: str
    tool_name: str
    args: Mapping[str, object]

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SetupContext:
    """`setup`: once per harness, before the first session."""

    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class OnSessionStartContext:
    """`on_session_start`: a session begins."""

    session_id: str
    goal: str
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class UserPromptSubmitContext:
    """`user_prompt_submit`: the user's prompt, before anything runs."""

    content: str
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PreTurnContext:
    """`pre_turn`: a turn is about to start."""

    prompt: str
    turn: int
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PreModelCallContext:
    """`pre_model_call`: a model request is being prepared; `patch` is the merge so far."""

    prompt: str
    history: Sequence[Message]
    turn: int
    patch: RequestPatch
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, seqs=("history",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSelectContext:
    """`model_select`: which model serves this request; `selected_model` is the pick so far."""

    default_model: str
    selected_model: str
    patch: RequestPatch
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TextDeltaContext:
    """`text_delta`: a chunk of streamed text."""

    delta: str
    aggregated: str
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDeltaContext:
    """`reasoning_delta`: a chunk of streamed reasoning."""

    delta: str
    aggregated: str
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallDeltaContext:
    """`tool_call_delta`: a chunk of a streamed tool call (the name may not be known yet)."""

    call_id: str
    tool_name: str | None
    delta: str
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelTurnFinishedContext:
    """`model_turn_finished`: the model answered; decide what to do with the answer.

    `finish_reason` is normalised (`FinishReason`); a plain string given there
    is normalised with `FinishReason.from_raw` and kept as `raw_finish_reason`
    when that is unset.
    """

    turn: int
    text: str
    tool_calls: Sequence[ToolCallRequest]
    finish_reason: FinishReason | None
    max_tokens: int | None
    usage: Mapping[str, int]
    raw_finish_reason: str | None = None
    message_id: str | None = None
    model: str | None = None
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, maps=("usage",), seqs=("tool_calls",))
        reason: object = self.finish_reason
        if isinstance(reason, str) and not isinstance(reason, FinishReason):
            object.__setattr__(self, "finish_reason", FinishReason.from_raw(reason))
            if self.raw_finish_reason is None:
                object.__setattr__(self, "raw_finish_reason", reason)

    @property
    def truncated(self) -> bool:
        """Whether the answer was cut at the token cap (``finish_reason is FinishReason.LENGTH``)."""
        return self.finish_reason is FinishReason.LENGTH


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidToolCallContext:
    """`invalid_tool_call`: the model called an unknown tool or passed bad arguments.

    `args` is ``{}`` when the model's arguments are not a mapping; `raw_args`
    holds the model's value as it came.
    """

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    available_tools: Sequence[str]
    error: str
    raw_args: object = None
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",), seqs=("available_tools",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PreToolCallDecideContext:
    """`transform_tool_input` and `pre_tool_call_decide`: a tool call about to run."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionDeniedContext:
    """`permission_denied`: a gate denied a tool call."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    reason: str
    decided_by: str | None
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolCallFailureContext:
    """`post_tool_call_failure`: a tool call failed."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    error: BaseException
    duration_ms: float
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class OnToolErrorContext:
    """`on_tool_error`: `message` is what the model will see about the failure, so far."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    error: BaseException
    kind: ToolErrorKind
    message: str
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TransformToolResultContext:
    """`transform_tool_result`: `presentation` is what the model will see, so far."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    raw_result: object
    presentation: str
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolCallContext:
    """`post_tool_call`: a tool call finished; `result` is what the model saw."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    result: str
    raw_result: object
    duration_ms: float
    metadata: Mapping[str, object]
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, maps=("args", "metadata"))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PostTurnContext:
    """`post_turn`: a turn ended."""

    turn: int
    response_text: str
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class PreCompactContext:
    """`pre_compact`: the history is about to be compacted.

    `transcript_len` is the history's length in characters (its messages'
    contents); `message_count` the number of messages in it.
    """

    transcript_len: int
    message_count: int = 0
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class OnCompactionContext:
    """`on_compaction`: the history was compacted."""

    removed: int
    summary_chars: int
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class OnInteractionContext:
    """`on_interaction`: a question for a human (for instance a gate's ``ask``)."""

    question: str
    options: Sequence[str]
    tool_name: str | None
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, seqs=("options",))


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStartContext:
    """`subagent_start`: a nested agent run begins."""

    goal: str
    depth: int
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStopContext:
    """`subagent_stop`: a nested agent run ended."""

    outcome: RunOutcome
    depth: int
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class NotificationContext:
    """`notification`: a message for the user."""

    message: str
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StopContext:
    """`stop`: the agent wants to stop; a deny keeps it going."""

    response_text: str
    continuation_count: int
    run: RunContext = field(default_factory=RunContext)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class OnSessionEndContext:
    """`on_session_end`: a session ended."""

    session_id: str
    outcome: RunOutcome
    run: RunContext = field(default_factory=RunContext)
