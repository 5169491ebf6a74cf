"""What hooks receive: the per-point context classes, RunContext and its Scratchpad."""

from __future__ import annotations

import _thread  # threading's RLock without importing threading; looked up at each use, so a late monkeypatch applies
import enum
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar, cast, final

from hookreg._errors import HookTypeError, HookValueError
from hookreg._results import (
    FinishReason,
    Message,
    ReadOnlyDict,
    RequestPatch,
    compile_function,
    field,
    read_only,
    value_class,
    wrong_type,
)

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

if TYPE_CHECKING:  # annotations only name them
    _T = TypeVar("_T")
    _C = TypeVar("_C")
    _P = ParamSpec("_P")


def _freeze(obj: object, maps: tuple[str, ...] = (), seqs: tuple[str, ...] = ()) -> None:
    """Replace mapping fields by read-only copies and sequence fields by tuples.

    A mapping that already is hookreg's read-only mapping, and a tuple, are
    kept as they are: neither can change, so sharing them is safe.
    """
    for name in maps:
        if getattr(obj, name).__class__ is not ReadOnlyDict:
            _read_only(obj, name)
    for name in seqs:
        value = getattr(obj, name)
        if value.__class__ is not tuple:
            object.__setattr__(obj, name, _as_tuple(value, type(obj).__name__, name))


def _read_only(obj: object, name: str) -> None:
    """Replace the mapping field `name` by a read-only copy (a dict: one copy, nothing else)."""
    value = getattr(obj, name)
    object.__setattr__(
        obj, name, ReadOnlyDict(value) if value.__class__ is dict else read_only(value, type(obj).__name__, name)
    )


def _as_tuple(value: object, owner: str, name: str) -> tuple[object, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise wrong_type(owner, name, value, "a sequence", f"Pass a tuple or a list (one item: ({value!r},)).")
    return tuple(value)


def _tool_call(obj: Any, maps: tuple[str, ...] = (), seqs: tuple[str, ...] = (), *, optional: bool = False) -> None:
    """Check a context's `tool_name`, then freeze its mapping and sequence fields."""
    name = obj.tool_name
    if name.__class__ is not str and not isinstance(name, str) and not (optional and name is None):
        owner = type(obj).__name__
        if optional:
            hint = "Pass the tool's name, or None when it is not known (hooks with tools= then do not run)."
            raise wrong_type(owner, "tool_name", name, "a str or None", hint)
        hint = "Pass the tool's name: a missing one would slip past every tools= filter."
        raise wrong_type(owner, "tool_name", name, "a str", hint)
    _freeze(obj, maps, seqs)


_SUBJECTS: dict[type, str] = {}
_REBUILDERS: dict[type, Callable[[Any, Any], Any]] = {}


def _transformed(subject: str) -> Callable[[type[_C]], type[_C]]:
    """Declare `subject` as the field a transform point rewrites on this context class.

    The class gets `_subject_value`, an alias of that field's slot: the inline loop
    returns the unchanged subject with one specialized attribute read, where
    ``getattr(ctx, name)`` would cost a builtin call. `rebuilder` gives the
    constructor a transform chain uses for each step.
    """

    def declare(cls: type[_C]) -> type[_C]:
        cls._subject_value = vars(cls)[subject]  # type: ignore[attr-defined]  # declared here, read by the inline loop
        _SUBJECTS[cls] = subject
        return cls

    return declare


def subject_of(context: type) -> str | None:
    """The field a transform point rewrites on `context`, or ``None`` for a context no transform point takes."""
    return _SUBJECTS.get(context)


def rebuilder(context: type[_C]) -> Callable[[_C, object], _C]:
    """The constructor of a transform step: a copy of a `context` holding a new subject, which the caller has read.

    A step's context is a copy of the one before with a new subject, which
    dispatch has already read into a plain, detached value: the other fields
    were checked and frozen when the caller built the first context, so the
    copy skips ``__init__`` and its checks. Compiled on first use (not at
    import), one per transform context class.
    """
    try:
        return _REBUILDERS[context]
    except KeyError:
        pass
    subject = _SUBJECTS[context]
    slots = vars(context)
    fields_ = cast("tuple[str, ...]", context.__slots__)  # type: ignore[attr-defined]  # slots=True dataclass
    namespace: dict[str, object] = {"new": object.__new__, "cls": context}
    namespace.update({f"set_{name}": slots[name].__set__ for name in fields_})
    lines = [f"    set_{name}(out, ctx.{name})\n" for name in fields_ if name != subject]
    body = f"{''.join(lines)}    set_{subject}(out, value)\n    return out\n"
    source = f"def rebuild(ctx, value):\n    out = new(cls)\n{body}"
    rebuild = _REBUILDERS[context] = compile_function(
        source, f"{context.__module__}.{context.__qualname__}.rebuild", namespace
    )
    return rebuild


@final
class Scratchpad:
    """Run-scoped storage keyed by exact class, safe to share between threads.

    `child` gives a scope (a turn's) that reads through to this one and writes
    only to itself. It pickles and copies with its contents (a deep copy
    copies them too, and a child its parent); the copy gets a lock of its own.

    Example:
        >>> class Retries(int): ...
        >>> pad = Scratchpad()
        >>> pad.update(Retries, lambda n: Retries(n + 1))
        1
    """

    __slots__ = ("_lock", "_parent", "_values")

    def __init__(self) -> None:
        self._values: dict[type, object] = {}
        self._lock = _thread.RLock()
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

    def __getstate__(self) -> dict[str, object]:
        # Pickling and copying take the values (a snapshot, under the lock), never the lock.
        with self._lock:
            state = {name: getattr(self, name) for name in self.__slots__ if name != "_lock"}
            state["_values"] = dict(self._values)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._lock = _thread.RLock()

    def __repr__(self) -> str:
        return f"Scratchpad({', '.join(sorted(t.__name__ for t in self._values))})"


def _new_run_id() -> str:
    return os.urandom(16).hex()


@final
@value_class(frozen=True, slots=True, kw_only=True)
class RunContext:
    """The agent run a dispatch belongs to.

    ``RunContext()`` is a detached run: a new `run_id`, ``session_id == run_id``,
    turn 0, depth 0, a new scratchpad and a child of it as `turn_scratchpad`.
    Move to the next turn with
    ``dataclasses.replace(run, turn=n, turn_scratchpad=run.scratchpad.child())``,
    which keeps the run's scratchpad and starts a fresh turn scope.
    An empty `session_id` means "same as `run_id`"; an omitted
    `turn_scratchpad` is a new child of `scratchpad`. Build the contexts of a
    run with `context`.
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

    def context(self, kind: Callable[_P, _C], /, *args: _P.args, **fields: _P.kwargs) -> _C:
        """Build a context bound to this run: the way to embed hookreg in an agent loop.

        ``run.context(PreToolCallDecideContext, tool_name="bash", args=args,
        call_id=call_id)`` is ``PreToolCallDecideContext(..., run=run)``: every
        context a loop builds this way carries the run, so per-run state (the
        scratchpad, the run and session ids) reaches every hook. Pass the
        context class, and mypy checks every field. A `HookPoint` is accepted
        too (``run.context(HookPoint.PRE_TOOL_CALL_DECIDE, ...)``); type
        checkers take its ``point.context``, typed `Any`. The session contexts'
        `session_id` may be left out: it is the run's.

        Example:
            >>> run = RunContext(session_id="s-1")
            >>> ctx = run.context(PreToolCallDecideContext, tool_name="bash", args={}, call_id="c-1")
            >>> ctx.run is run
            True

        Raises:
            HookTypeError: `kind` is neither a context class nor a HookPoint, or
                `run` is passed too.
        """
        cls: Any = getattr(kind, "context", None) if isinstance(kind, str) else kind
        if not (isinstance(cls, type) and cls in _CONTEXTS):
            msg = (
                f"Cannot build a context from {kind!r}: it is neither a context class nor a HookPoint. "
                "Pass one, such as PreToolCallDecideContext or HookPoint.PRE_TOOL_CALL_DECIDE."
            )
            raise HookTypeError(msg)
        if "run" in fields:
            msg = f"Cannot build {cls.__name__} with run=...: run.context() binds the run itself. Leave run out."
            raise HookTypeError(msg)
        return cls(*args, run=self, **fields)  # type: ignore[no-any-return]  # the class `kind` names


# The default `run` of the session contexts: replaced at construction by a
# detached run whose session is theirs, so that `session_id == run.session_id`.
_SESSION_RUN = RunContext(run_id="unbound")


def _bind_session(obj: Any) -> None:
    """Hold a session context's `session_id` equal to its run's: fill in either from the other, or refuse."""
    session_id, run = obj.session_id, obj.run
    if not isinstance(session_id, str):
        raise wrong_type(type(obj).__name__, "session_id", session_id, "a str", "Pass run.session_id, or leave it out.")
    if run is _SESSION_RUN:
        run = RunContext(session_id=session_id)
        object.__setattr__(obj, "run", run)
    if not session_id:
        object.__setattr__(obj, "session_id", run.session_id)
    elif session_id != run.session_id:
        msg = (
            f"Cannot build {type(obj).__name__} with session_id={session_id!r} for a run of session "
            f"{run.session_id!r}: a session context's session_id is its run's. Leave session_id out, "
            "or build the run with RunContext(session_id=...)."
        )
        raise HookValueError(msg)


class ToolErrorKind(enum.StrEnum):
    """Why a tool call failed."""

    EXCEPTION = "exception"
    NOT_FOUND = "not_found"
    INVALID_ARGS = "invalid_args"
    TIMEOUT = "timeout"


@final
@value_class(frozen=True, slots=True)
class RunOutcome:
    """How a run or a subagent ended."""

    status: Literal["completed", "stopped", "failed", "cancelled"]
    reason: str = ""
    turns: int = 0


@final
@value_class(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call the model asked for; `args` is a read-only copy."""

    call_id: str
    tool_name: str
    args: Mapping[str, object]

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",))


@final
@value_class(frozen=True, slots=True, kw_only=True)
class SetupContext:
    """`setup`: once per harness, before the first session."""

    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class OnSessionStartContext:
    """`on_session_start`: a session begins; `session_id` is the run's.

    Left out, `session_id` is taken from `run`; `run` left out is a detached
    run of that session.
    """

    session_id: str = ""
    goal: str
    run: RunContext = _SESSION_RUN

    def __post_init__(self) -> None:
        _bind_session(self)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class UserPromptSubmitContext:
    """`user_prompt_submit`: the user's prompt, before anything runs."""

    content: str
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class PreTurnContext:
    """`pre_turn`: a turn is about to start."""

    prompt: str
    turn: int
    run: RunContext = field(default_factory=RunContext)


@_transformed("patch")
@final
@value_class(frozen=True, slots=True, kw_only=True)
class PreModelCallContext:
    """`pre_model_call`: a model request is being prepared; `patch` is the merge so far."""

    prompt: str
    history: Sequence[Message]
    turn: int
    patch: RequestPatch
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _freeze(self, seqs=("history",))


@_transformed("selected_model")
@final
@value_class(frozen=True, slots=True, kw_only=True)
class ModelSelectContext:
    """`model_select`: which model serves this request; `selected_model` is the pick so far."""

    default_model: str
    selected_model: str
    patch: RequestPatch
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class TextDeltaContext:
    """`text_delta`: a chunk of streamed text."""

    delta: str
    aggregated: str
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class ReasoningDeltaContext:
    """`reasoning_delta`: a chunk of streamed reasoning."""

    delta: str
    aggregated: str
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class ToolCallDeltaContext:
    """`tool_call_delta`: a chunk of a streamed tool call (the name may not be known yet)."""

    call_id: str
    tool_name: str | None
    delta: str
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _tool_call(self, optional=True)


@final
@value_class(frozen=True, slots=True, kw_only=True)
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
@value_class(frozen=True, slots=True, kw_only=True)
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
        _tool_call(self, maps=("args",), seqs=("available_tools",))


@_transformed("args")
@final
@value_class(frozen=True, slots=True, kw_only=True)
class PreToolCallDecideContext:
    """`transform_tool_input` and `pre_tool_call_decide`: a tool call about to run."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        # _tool_call's rules with their common cases inline (one context per tool call):
        # a str name needs no check, args passed on from another context no copy.
        if self.tool_name.__class__ is not str:
            _tool_call(self)
        if self.args.__class__ is not ReadOnlyDict:
            _read_only(self, "args")


@final
@value_class(frozen=True, slots=True, kw_only=True)
class PermissionDeniedContext:
    """`permission_denied`: a gate denied a tool call."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    reason: str
    decided_by: str | None
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _tool_call(self, maps=("args",))


@final
@value_class(frozen=True, slots=True, kw_only=True)
class PostToolCallFailureContext:
    """`post_tool_call_failure`: a tool call failed."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    error: BaseException
    duration_ms: float
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _tool_call(self, maps=("args",))


@_transformed("message")
@final
@value_class(frozen=True, slots=True, kw_only=True)
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
        _tool_call(self, maps=("args",))


@_transformed("presentation")
@final
@value_class(frozen=True, slots=True, kw_only=True)
class TransformToolResultContext:
    """`transform_tool_result`: `presentation` is what the model will see, so far."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str
    raw_result: object
    presentation: str
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _tool_call(self, maps=("args",))


@final
@value_class(frozen=True, slots=True, kw_only=True)
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
        # As PreToolCallDecideContext: the common cases inline.
        if self.tool_name.__class__ is not str:
            _tool_call(self)
        if self.args.__class__ is not ReadOnlyDict:
            _read_only(self, "args")
        if self.metadata.__class__ is not ReadOnlyDict:
            _read_only(self, "metadata")


@final
@value_class(frozen=True, slots=True, kw_only=True)
class PostTurnContext:
    """`post_turn`: a turn ended."""

    turn: int
    response_text: str
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class PreCompactContext:
    """`pre_compact`: the history is about to be compacted.

    `transcript_len` is the history's length in characters (its messages'
    contents); `message_count` the number of messages in it.
    """

    transcript_len: int
    message_count: int = 0
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class OnCompactionContext:
    """`on_compaction`: the history was compacted."""

    removed: int
    summary_chars: int
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class OnInteractionContext:
    """`on_interaction`: a question for a human (for instance a gate's ``ask``)."""

    question: str
    options: Sequence[str]
    tool_name: str | None
    run: RunContext = field(default_factory=RunContext)

    def __post_init__(self) -> None:
        _tool_call(self, seqs=("options",), optional=True)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class SubagentStartContext:
    """`subagent_start`: a nested agent run begins."""

    goal: str
    depth: int
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class SubagentStopContext:
    """`subagent_stop`: a nested agent run ended."""

    outcome: RunOutcome
    depth: int
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class NotificationContext:
    """`notification`: a message for the user."""

    message: str
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class StopContext:
    """`stop`: the agent wants to stop; a deny keeps it going."""

    response_text: str
    continuation_count: int
    run: RunContext = field(default_factory=RunContext)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class OnSessionEndContext:
    """`on_session_end`: a session ended; `session_id` is the run's.

    Left out, `session_id` is taken from `run`; `run` left out is a detached
    run of that session.
    """

    session_id: str = ""
    outcome: RunOutcome
    run: RunContext = _SESSION_RUN

    def __post_init__(self) -> None:
        _bind_session(self)


# The context classes (what `RunContext.context` builds).
_CONTEXTS = frozenset(globals()[name] for name in __all__ if name.endswith("Context") and name != "RunContext")
