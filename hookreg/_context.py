"""What hooks receive: the per-point context classes, RunContext and its Scratchpad."""

from __future__ import annotations

import _thread  # threading's RLock without importing threading; looked up at each use, so a late monkeypatch applies
import enum
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar, cast, final

from hookreg._errors import HookTypeError, HookValueError
from hookreg._results import (
    FACTORY,
    VALUE_CLASS,
    FinishReason,
    Message,
    ReadOnlyDict,
    RequestPatch,
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

    The class gets `_subject`, an alias of that field's slot: the inline loop
    returns the unchanged subject with one specialized attribute read, where
    ``getattr(ctx, name)`` would cost a builtin call. `rebuilder` gives the
    constructor a transform chain uses for each step.
    """

    def declare(cls: type[_C]) -> type[_C]:
        cls._subject = vars(cls)[subject]  # type: ignore[attr-defined]  # declared here, read by the inline loop
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
    exec(f"def rebuild(ctx, value):\n    out = new(cls)\n{body}", namespace)  # source made of the field names
    rebuild = _REBUILDERS[context] = cast("Callable[[Any, Any], Any]", namespace["rebuild"])
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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = (
            "run_id",
            "session_id",
            "turn",
            "depth",
            "agent_name",
            "is_streaming",
            "scratchpad",
            "turn_scratchpad",
        )
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {
            "run_id": run_id,
            "session_id": session_id,
            "turn": turn,
            "depth": depth,
            "agent_name": agent_name,
            "is_streaming": is_streaming,
            "scratchpad": scratchpad,
            "turn_scratchpad": turn_scratchpad,
        }
        del run_id, session_id, turn, depth, agent_name, is_streaming, scratchpad, turn_scratchpad
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            (
                set_run_id,
                set_session_id,
                set_turn,
                set_depth,
                set_agent_name,
                set_is_streaming,
                set_scratchpad,
                set_turn_scratchpad,
            ) = setters

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                run_id: str = FACTORY,
                session_id: str = "",
                turn: int = 0,
                depth: int = 0,
                agent_name: str | None = None,
                is_streaming: bool = False,
                scratchpad: Scratchpad = FACTORY,
                turn_scratchpad: Scratchpad = None,
            ) -> None:
                set_run_id(self, _new_run_id() if run_id is FACTORY else run_id)
                set_session_id(self, session_id)
                set_turn(self, turn)
                set_depth(self, depth)
                set_agent_name(self, agent_name)
                set_is_streaming(self, is_streaming)
                set_scratchpad(self, Scratchpad() if scratchpad is FACTORY else scratchpad)
                set_turn_scratchpad(self, turn_scratchpad)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("status", "reason", "turns")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"reason": reason, "turns": turns}
        del reason, turns
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_status, set_reason, set_turns = setters

            def init(
                self: Any,
                status: Literal["completed", "stopped", "failed", "cancelled"],
                reason: str = "",
                turns: int = 0,
            ) -> None:
                set_status(self, status)
                set_reason(self, reason)
                set_turns(self, turns)

            return init


@final
@value_class(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call the model asked for; `args` is a read-only copy."""

    call_id: str
    tool_name: str
    args: Mapping[str, object]

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("call_id", "tool_name", "args")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {}
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_call_id, set_tool_name, set_args = setters

            def init(self: Any, call_id: str, tool_name: str, args: Mapping[str, object]) -> None:
                set_call_id(self, call_id)
                set_tool_name(self, tool_name)
                set_args(self, args)
                self.__post_init__()

            return init

    def __post_init__(self) -> None:
        _freeze(self, maps=("args",))


@final
@value_class(frozen=True, slots=True, kw_only=True)
class SetupContext:
    """`setup`: once per harness, before the first session."""

    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("run",)
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            (set_run,) = setters

            def init(self: Any, *, run: RunContext = FACTORY) -> None:
                set_run(self, RunContext() if run is FACTORY else run)

            return init


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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("session_id", "goal", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"session_id": session_id, "run": run}
        del session_id, run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_session_id, set_goal, set_run = setters

            def init(self: Any, *, session_id: str = "", goal: str, run: RunContext = _SESSION_RUN) -> None:
                set_session_id(self, session_id)
                set_goal(self, goal)
                set_run(self, run)
                self.__post_init__()

            return init

    def __post_init__(self) -> None:
        _bind_session(self)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class UserPromptSubmitContext:
    """`user_prompt_submit`: the user's prompt, before anything runs."""

    content: str
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("content", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_content, set_run = setters

            def init(self: Any, *, content: str, run: RunContext = FACTORY) -> None:
                set_content(self, content)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class PreTurnContext:
    """`pre_turn`: a turn is about to start."""

    prompt: str
    turn: int
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("prompt", "turn", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_prompt, set_turn, set_run = setters

            def init(self: Any, *, prompt: str, turn: int, run: RunContext = FACTORY) -> None:
                set_prompt(self, prompt)
                set_turn(self, turn)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("prompt", "history", "turn", "patch", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_prompt, set_history, set_turn, set_patch, set_run = setters

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                prompt: str,
                history: Sequence[Message],
                turn: int,
                patch: RequestPatch,
                run: RunContext = FACTORY,
            ) -> None:
                set_prompt(self, prompt)
                set_history(self, history)
                set_turn(self, turn)
                set_patch(self, patch)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("default_model", "selected_model", "patch", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_default_model, set_selected_model, set_patch, set_run = setters

            def init(
                self: Any, *, default_model: str, selected_model: str, patch: RequestPatch, run: RunContext = FACTORY
            ) -> None:
                set_default_model(self, default_model)
                set_selected_model(self, selected_model)
                set_patch(self, patch)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class TextDeltaContext:
    """`text_delta`: a chunk of streamed text."""

    delta: str
    aggregated: str
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("delta", "aggregated", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_delta, set_aggregated, set_run = setters

            def init(self: Any, *, delta: str, aggregated: str, run: RunContext = FACTORY) -> None:
                set_delta(self, delta)
                set_aggregated(self, aggregated)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class ReasoningDeltaContext:
    """`reasoning_delta`: a chunk of streamed reasoning."""

    delta: str
    aggregated: str
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("delta", "aggregated", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_delta, set_aggregated, set_run = setters

            def init(self: Any, *, delta: str, aggregated: str, run: RunContext = FACTORY) -> None:
                set_delta(self, delta)
                set_aggregated(self, aggregated)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class ToolCallDeltaContext:
    """`tool_call_delta`: a chunk of a streamed tool call (the name may not be known yet)."""

    call_id: str
    tool_name: str | None
    delta: str
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("call_id", "tool_name", "delta", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_call_id, set_tool_name, set_delta, set_run = setters

            def init(self: Any, *, call_id: str, tool_name: str | None, delta: str, run: RunContext = FACTORY) -> None:
                set_call_id(self, call_id)
                set_tool_name(self, tool_name)
                set_delta(self, delta)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = (
            "turn",
            "text",
            "tool_calls",
            "finish_reason",
            "max_tokens",
            "usage",
            "raw_finish_reason",
            "message_id",
            "model",
            "run",
        )
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"raw_finish_reason": raw_finish_reason, "message_id": message_id, "model": model, "run": run}
        del raw_finish_reason, message_id, model, run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            (
                set_turn,
                set_text,
                set_tool_calls,
                set_finish_reason,
                set_max_tokens,
                set_usage,
                set_raw_finish_reason,
                set_message_id,
                set_model,
                set_run,
            ) = setters

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                turn: int,
                text: str,
                tool_calls: Sequence[ToolCallRequest],
                finish_reason: FinishReason | None,
                max_tokens: int | None,
                usage: Mapping[str, int],
                raw_finish_reason: str | None = None,
                message_id: str | None = None,
                model: str | None = None,
                run: RunContext = FACTORY,
            ) -> None:
                set_turn(self, turn)
                set_text(self, text)
                set_tool_calls(self, tool_calls)
                set_finish_reason(self, finish_reason)
                set_max_tokens(self, max_tokens)
                set_usage(self, usage)
                set_raw_finish_reason(self, raw_finish_reason)
                set_message_id(self, message_id)
                set_model(self, model)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("tool_name", "args", "call_id", "available_tools", "error", "raw_args", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"raw_args": raw_args, "run": run}
        del raw_args, run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_tool_name, set_args, set_call_id, set_available_tools, set_error, set_raw_args, set_run = setters

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                tool_name: str,
                args: Mapping[str, object],
                call_id: str,
                available_tools: Sequence[str],
                error: str,
                raw_args: object = None,
                run: RunContext = FACTORY,
            ) -> None:
                set_tool_name(self, tool_name)
                set_args(self, args)
                set_call_id(self, call_id)
                set_available_tools(self, available_tools)
                set_error(self, error)
                set_raw_args(self, raw_args)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("tool_name", "args", "call_id", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_tool_name, set_args, set_call_id, set_run = setters

            def init(
                self: Any, *, tool_name: str, args: Mapping[str, object], call_id: str, run: RunContext = FACTORY
            ) -> None:
                set_tool_name(self, tool_name)
                set_args(self, args)
                set_call_id(self, call_id)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("tool_name", "args", "call_id", "reason", "decided_by", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_tool_name, set_args, set_call_id, set_reason, set_decided_by, set_run = setters

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                tool_name: str,
                args: Mapping[str, object],
                call_id: str,
                reason: str,
                decided_by: str | None,
                run: RunContext = FACTORY,
            ) -> None:
                set_tool_name(self, tool_name)
                set_args(self, args)
                set_call_id(self, call_id)
                set_reason(self, reason)
                set_decided_by(self, decided_by)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("tool_name", "args", "call_id", "error", "duration_ms", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_tool_name, set_args, set_call_id, set_error, set_duration_ms, set_run = setters

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                tool_name: str,
                args: Mapping[str, object],
                call_id: str,
                error: BaseException,
                duration_ms: float,
                run: RunContext = FACTORY,
            ) -> None:
                set_tool_name(self, tool_name)
                set_args(self, args)
                set_call_id(self, call_id)
                set_error(self, error)
                set_duration_ms(self, duration_ms)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("tool_name", "args", "call_id", "error", "kind", "message", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_tool_name, set_args, set_call_id, set_error, set_kind, set_message, set_run = setters

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                tool_name: str,
                args: Mapping[str, object],
                call_id: str,
                error: BaseException,
                kind: ToolErrorKind,
                message: str,
                run: RunContext = FACTORY,
            ) -> None:
                set_tool_name(self, tool_name)
                set_args(self, args)
                set_call_id(self, call_id)
                set_error(self, error)
                set_kind(self, kind)
                set_message(self, message)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("tool_name", "args", "call_id", "raw_result", "presentation", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_tool_name, set_args, set_call_id, set_raw_result, set_presentation, set_run = setters

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                tool_name: str,
                args: Mapping[str, object],
                call_id: str,
                raw_result: object,
                presentation: str,
                run: RunContext = FACTORY,
            ) -> None:
                set_tool_name(self, tool_name)
                set_args(self, args)
                set_call_id(self, call_id)
                set_raw_result(self, raw_result)
                set_presentation(self, presentation)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("tool_name", "args", "call_id", "result", "raw_result", "duration_ms", "metadata", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_tool_name, set_args, set_call_id, set_result, set_raw_result, set_duration_ms, set_metadata, set_run = (
                setters
            )

            def init(  # noqa: PLR0913 -- one parameter per field
                self: Any,
                *,
                tool_name: str,
                args: Mapping[str, object],
                call_id: str,
                result: str,
                raw_result: object,
                duration_ms: float,
                metadata: Mapping[str, object],
                run: RunContext = FACTORY,
            ) -> None:
                set_tool_name(self, tool_name)
                set_args(self, args)
                set_call_id(self, call_id)
                set_result(self, result)
                set_raw_result(self, raw_result)
                set_duration_ms(self, duration_ms)
                set_metadata(self, metadata)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("turn", "response_text", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_turn, set_response_text, set_run = setters

            def init(self: Any, *, turn: int, response_text: str, run: RunContext = FACTORY) -> None:
                set_turn(self, turn)
                set_response_text(self, response_text)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("transcript_len", "message_count", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"message_count": message_count, "run": run}
        del message_count, run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_transcript_len, set_message_count, set_run = setters

            def init(self: Any, *, transcript_len: int, message_count: int = 0, run: RunContext = FACTORY) -> None:
                set_transcript_len(self, transcript_len)
                set_message_count(self, message_count)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class OnCompactionContext:
    """`on_compaction`: the history was compacted."""

    removed: int
    summary_chars: int
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("removed", "summary_chars", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_removed, set_summary_chars, set_run = setters

            def init(self: Any, *, removed: int, summary_chars: int, run: RunContext = FACTORY) -> None:
                set_removed(self, removed)
                set_summary_chars(self, summary_chars)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class OnInteractionContext:
    """`on_interaction`: a question for a human (for instance a gate's ``ask``)."""

    question: str
    options: Sequence[str]
    tool_name: str | None
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("question", "options", "tool_name", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_question, set_options, set_tool_name, set_run = setters

            def init(
                self: Any, *, question: str, options: Sequence[str], tool_name: str | None, run: RunContext = FACTORY
            ) -> None:
                set_question(self, question)
                set_options(self, options)
                set_tool_name(self, tool_name)
                set_run(self, RunContext() if run is FACTORY else run)
                self.__post_init__()

            return init

    def __post_init__(self) -> None:
        _tool_call(self, seqs=("options",), optional=True)


@final
@value_class(frozen=True, slots=True, kw_only=True)
class SubagentStartContext:
    """`subagent_start`: a nested agent run begins."""

    goal: str
    depth: int
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("goal", "depth", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_goal, set_depth, set_run = setters

            def init(self: Any, *, goal: str, depth: int, run: RunContext = FACTORY) -> None:
                set_goal(self, goal)
                set_depth(self, depth)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class SubagentStopContext:
    """`subagent_stop`: a nested agent run ended."""

    outcome: RunOutcome
    depth: int
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("outcome", "depth", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_outcome, set_depth, set_run = setters

            def init(self: Any, *, outcome: RunOutcome, depth: int, run: RunContext = FACTORY) -> None:
                set_outcome(self, outcome)
                set_depth(self, depth)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class NotificationContext:
    """`notification`: a message for the user."""

    message: str
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("message", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_message, set_run = setters

            def init(self: Any, *, message: str, run: RunContext = FACTORY) -> None:
                set_message(self, message)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


@final
@value_class(frozen=True, slots=True, kw_only=True)
class StopContext:
    """`stop`: the agent wants to stop; a deny keeps it going."""

    response_text: str
    continuation_count: int
    run: RunContext = field(default_factory=RunContext)

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("response_text", "continuation_count", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"run": run}
        del run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_response_text, set_continuation_count, set_run = setters

            def init(self: Any, *, response_text: str, continuation_count: int, run: RunContext = FACTORY) -> None:
                set_response_text(self, response_text)
                set_continuation_count(self, continuation_count)
                set_run(self, RunContext() if run is FACTORY else run)

            return init


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

    if not TYPE_CHECKING:  # written out from the fields by scripts/generate_values.py
        __slots__ = ("session_id", "outcome", "run")
        # The defaults leave the class namespace (__slots__ needs it); the shared methods join it.
        _defaults = {"session_id": session_id, "run": run}
        del session_id, run
        vars().update(VALUE_CLASS)

        def _init(*setters: Callable[[object, object], None]) -> Callable[..., None]:
            set_session_id, set_outcome, set_run = setters

            def init(self: Any, *, session_id: str = "", outcome: RunOutcome, run: RunContext = _SESSION_RUN) -> None:
                set_session_id(self, session_id)
                set_outcome(self, outcome)
                set_run(self, run)
                self.__post_init__()

            return init

    def __post_init__(self) -> None:
        _bind_session(self)


# The context classes (what `RunContext.context` builds).
_CONTEXTS = frozenset(globals()[name] for name in __all__ if name.endswith("Context") and name != "RunContext")
