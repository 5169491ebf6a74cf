"""The rules of each style as step generators (sans-I/O, as h11): check what a hook returned, fail, decide.

Each style has one *step generator* holding its rules: it yields ``(hook, ctx)``
pairs and is sent back what the call produced (an `Outcome`). The drivers in
`hookreg._plan` perform the calls, sync or async, so both surfaces share
every rule.

A hook's outcome is read before any rule uses it: a wrong type, or a value
that cannot be read (a raising ``__bool__``, an unreadable Mapping, a result
missing its slots), is a failure of that hook like an exception it raised.
A `StopRun` (alone or in an exception group) is not a failure but a stop.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Generator, Mapping, Sequence
from types import CodeType
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from hookreg._context import rebuilder
from hookreg._errors import HookReturnError, HookTypeError, StopRun
from hookreg._log import debug_enabled, log
from hookreg._points import HookPoint, HookStyle, PointSpec
from hookreg._registration import filtered_out, wrong_return
from hookreg._results import (
    NO_ANSWER,
    Decision,
    HookResult,
    InvalidToolCallAction,
    ReadOnlyDict,
    TurnAction,
    replace,
)

if TYPE_CHECKING:
    from hookreg._registration import Registration

    Outcome = tuple[int, Any]
    Steps = Generator[tuple[Registration, Any], Outcome, Any]
    _F = TypeVar("_F", bound=Callable[..., Any])
    StepsOf = Callable[[PointSpec, Sequence[Registration], Any, Outcome | None, bool], Steps]
    """A style's step generator: ``(spec, hooks, ctx, first, filtered)``; `first` is the outcome of the first hook's
    call made already (by the inline loop), `filtered` whether any hook has ``tools=`` patterns to test."""

__all__ = [
    "OK",
    "RAISED",
    "STEPS",
    "TIMED_OUT",
    "StopIterationError",
    "calls_hooks",
    "dispatch_module",
    "mark_stop",
    "marked_by",
    "plain_reader",
    "transform_steps",
    "wrong_context",
]


OK: Final = 0
RAISED: Final = 1
TIMED_OUT: Final = 2


# --- rules shared by every style -------------------------------------------


def wrong_context(point: HookPoint, ctx: object) -> HookTypeError:
    """Build the error for a dispatch of `point` with a context of another class."""
    expected = point.context.__name__
    msg = (
        f"Cannot dispatch {point} with {type(ctx).__name__}: this point takes a {expected}. "
        f"Build a {expected}(...) for it."
    )
    return HookTypeError(msg, point=point)


def _raise_stop(spec: PointSpec, reg: Registration, raised: BaseException, ctx: object, effective: object) -> None:
    """Raise the `StopRun` in `raised` (itself, or the first in an exception group), if there is one.

    A `StopRun` is not a failure. A hook that raised it directly, or got it
    from a dispatch made before this hook call (a reused instance), has it
    marked with its name (and `effective`, the rewritten args or ``None``) and
    logged; one propagating out of a dispatch nested inside this hook call
    keeps what that dispatch set.
    """
    stop = raised if isinstance(raised, StopRun) else _first_stop(raised)
    if stop is None:
        return
    if not _nested(stop, raised):
        mark_stop(stop, reg.name, ctx, effective)
        log("info", "run_stopped", point=spec.point.value, hook=reg.name, reason=stop.reason)
    raise stop


def _first_stop(raised: BaseException) -> StopRun | None:
    """The first `StopRun` in an exception group (depth first, nested groups too), else ``None``."""
    if isinstance(raised, BaseExceptionGroup):
        for inner in raised.exceptions:
            stop = inner if isinstance(inner, StopRun) else _first_stop(inner)
            if stop is not None:
                return stop
    return None


def mark_stop(stop: StopRun, hook: str, ctx: object, effective: object) -> None:
    """Mark `stop` as raised by `hook` in the dispatch of `ctx`, and remember the hook calls it is nested in.

    Those are the frames, on the stack now, that a dispatch called as a hook:
    the dispatch that made such a call keeps these marks when `stop` comes out
    of that very call (`_nested`).
    """
    stop.hook = hook
    stop.effective_args = cast("Mapping[str, object] | None", effective)
    enclosing = []
    frame = sys._getframe(1)
    while frame.f_back is not None:
        if frame.f_back.f_code in _CATCHERS and not any(frame.f_globals is mine for mine in _DISPATCH_MODULES):
            enclosing.append(frame)
        frame = frame.f_back
    stop._hookreg_mark = (ctx, tuple(enclosing))


def marked_by(stop: StopRun) -> object:
    """The context of the dispatch that last marked `stop`, or ``None``."""
    return stop._hookreg_mark[0]


def _nested(stop: StopRun, raised: BaseException) -> bool:
    """Whether `stop` was marked by a dispatch made inside the hook call that raised `raised`."""
    # The traceback starts at the frame that caught the hook's exception; the next entry is the hook's call.
    tb = raised.__traceback__
    call = tb.tb_next if tb is not None else None
    return call is not None and any(frame is call.tb_frame for frame in stop._hookreg_mark[1])


_CATCHERS: set[CodeType] = set()
_DISPATCH_MODULES: list[dict[str, Any]] = []


def calls_hooks(fn: _F) -> _F:
    """Declare `fn` as a function that calls hooks and catches what they raise (see `mark_stop`)."""
    _CATCHERS.add(fn.__code__)
    return fn


def dispatch_module(namespace: dict[str, Any]) -> None:
    """Declare a module's globals as hookreg's own dispatch dispatch_module: its frames are never a hook call."""
    _DISPATCH_MODULES.append(namespace)


def _fail(spec: PointSpec, reg: Registration, exc: BaseException, status: int) -> None:
    """Log a failure once; re-raise it under ``on_error="raise"``."""
    point = spec.point.value
    if status == TIMED_OUT:
        log("warning", "hook_timed_out", point=point, hook=reg.name, timeout=reg.timeout)
    else:
        level = "error" if spec.style is HookStyle.DECIDE else "warning"
        error = (  # hookreg's own description, never the exception's text (DESIGN §7)
            f"returned {exc.returned_type.__name__}; expected {spec.expected}"
            if isinstance(exc, HookReturnError) and exc.callback is reg.callback
            else f"raised {type(exc).__name__}"
        )
        # The traceback may hold values: it goes along only when the developer opted in with DEBUG (DESIGN §7).
        traceback = exc if debug_enabled() else None
        log(
            level,
            "hook_failed",
            point=point,
            hook=reg.name,
            exc_type=type(exc).__name__,
            error=error,
            exc_info=traceback,
        )
    if reg.on_error == "raise":
        note = f"hookreg: raised by hook {reg.name!r} at {point}"
        # A HookReturnError's message already names hook and point; an exception raised
        # again (a module-level constant) already carries the note from the last time.
        if not isinstance(exc, HookReturnError) and note not in getattr(exc, "__notes__", ()):
            exc.add_note(note)
        if isinstance(exc, StopIteration):
            # Raised inside a generator it would become a RuntimeError (PEP 479): the driver raises it.
            raise StopIterationError(exc) from exc
        raise exc


class StopIterationError(RuntimeError):
    """Carries a StopIteration out of a step generator to its driver, which raises it.

    A RuntimeError caused by the StopIteration, as PEP 479 would make it, for a driver that does not unwrap it.
    """

    def __init__(self, exc: StopIteration) -> None:
        super().__init__("a hook raised StopIteration")
        self.exc = exc


def _failure_decides(spec: PointSpec, reg: Registration, exc: BaseException, status: int, ctx: object) -> object:
    """The decision a failing decider makes under ``on_error="deny"``: toward doing less."""
    why = f"hook {reg.name!r} {'timed out' if status == TIMED_OUT else 'failed'}"
    toward = spec.on_failure
    if toward == "stop":
        stop = StopRun(why)
        mark_stop(stop, reg.name, ctx, None)
        raise stop from exc
    if toward == "fail":
        return InvalidToolCallAction(kind="fail", reason=why, decided_by=reg.name)
    if toward == "allow":
        return HookResult(decision=Decision.ALLOW, message=why, decided_by=reg.name)
    return HookResult(decision=Decision.DENY, reason=f"{why}; the action was denied", decided_by=reg.name)


# --- reading what a hook returned ---------------------------------------------
# Each reader raises on a wrong type or on a value that cannot be read (a
# missing slot, a raising __bool__ or __getitem__); the step generator then
# treats the hook as having raised that exception.


def _read_decision(spec: PointSpec, reg: Registration, value: Any) -> tuple[bool, object]:
    """Read a decider's return: ``(True, result)`` decides; ``(False, allow or None)`` passes."""
    if not spec.accepts(value):  # INVALID_TOOL_CALL's pass, None, never gets here: it is the fast pass
        raise wrong_return(spec, reg, value)
    if type(value) is HookResult:
        if value.allowed:
            return False, replace(value, decided_by=reg.name) if value.message else None
        result = replace(value, decided_by=reg.name)
        log("info", "hook_denied", point=spec.point.value, hook=reg.name, reason=result.reason)
        return True, result
    if type(value) is TurnAction and value.kind == "continue":
        return False, None
    return True, replace(value, decided_by=reg.name)


def plain_reader(spec: PointSpec) -> tuple[type | None, Callable[[Any], object] | None]:
    """The class of return a transform point reads without a check, and how: ``(dict, ReadOnlyDict)`` at an args
    point (a copy, so the hook's own dict can change nothing), ``(str, None)`` at a text point (the very str),
    ``(None, None)`` for a patch (every return is checked and merged).

    The one place of that rule: the step generator and the rewriting loop of `hookreg._plan` both read it.
    """
    if spec.subject == "args":
        return dict, ReadOnlyDict
    return (str, None) if spec.returns is str else (None, None)


def _read_subject(spec: PointSpec, reg: Registration, so_far: Any, new: object) -> object:
    """Read a transform's non-None return into the new subject: plain, detached from the hook's object."""
    if not spec.accepts(new):
        raise wrong_return(spec, reg, new)
    subject = spec.subject
    if subject == "patch":
        return so_far.merge(new)
    if subject == "args":
        # Read through the Mapping protocol (a dict subclass's own __iter__ and __getitem__
        # included), so a mapping that cannot be read fails here and nowhere later.
        # A dict or hookreg's own read-only mapping is copied in C; always a copy, so that a hook
        # returning the args it was given still counts as a rewrite.
        items = cast("Mapping[str, object]", new)
        plain = type(items) is dict or type(items) is ReadOnlyDict
        return ReadOnlyDict(items if plain else {key: items[key] for key in items})
    return new if type(new) is str else str(new)


# --- step generators: the rules of each style --------------------------------


def _decide_steps(
    spec: PointSpec, hooks: Sequence[Registration], ctx: Any, first: Outcome | None, filtered: bool
) -> Steps:
    ran = False
    last_allow: object = None
    for reg in hooks:
        if first is not None:
            (status, value), first = first, None
        elif filtered and filtered_out(reg, ctx):
            continue
        else:
            status, value = yield reg, ctx
        if status == OK:
            if value is spec.passed or value is NO_ANSWER:
                ran = ran or value is spec.passed  # NO_ANSWER: as a failed, ignored hook, it has not run
                continue
            try:
                decides, value = _read_decision(spec, reg, value)
            except Exception as exc:  # noqa: BLE001 -- reading the return failed: a failure of the hook
                status, value = RAISED, exc
            else:
                ran = True
                if decides:
                    return value
                if value is not None:
                    last_allow = value
                continue
        _raise_stop(spec, reg, value, ctx, None)
        _fail(spec, reg, value, status)
        if reg.on_error == "ignore":
            continue  # a pass, but not an answer: at ON_INTERACTION it has not run
        return _failure_decides(spec, reg, value, status, ctx)
    if last_allow is not None:
        return last_allow
    return spec.all_passed if ran else spec.no_hook


def transform_steps(  # noqa: PLR0913 -- the steps' five, and where a chain resumes
    spec: PointSpec,
    hooks: Sequence[Registration],
    ctx: Any,
    first: Outcome | None,
    filtered: bool,
    *,
    changed: bool = False,
) -> Steps:
    """The transform rules; `changed`: `ctx` already holds a subject earlier hooks rewrote (a resumed chain)."""
    subject = cast("str", spec.subject)
    value = getattr(ctx, subject)
    rebuild = rebuilder(ctx.__class__)
    plain, read = plain_reader(spec)  # a return of this class is read without a check
    current = ctx
    stale = False  # `current` does not hold `value` yet, built when a hook is to see it
    for reg in hooks:
        if first is not None:
            (status, new), first = first, None
        else:
            if stale:
                current, stale = rebuild(ctx, value), False
            if filtered and filtered_out(reg, current):  # an argument pattern tests the args this hook would see
                continue
            status, new = yield reg, current
        if status == OK:
            if new is None:
                continue
            if type(new) is plain:  # the common case, without the checks (type(): __class__ can lie)
                value, changed, stale = new if read is None else read(new), True, True
                continue
            try:
                new = _read_subject(spec, reg, value, new)
            except Exception as exc:  # noqa: BLE001 -- reading the return failed: a failure of the hook
                status, new = RAISED, exc
            else:
                value, changed, stale = new, True, True
                continue
        _raise_stop(spec, reg, new, ctx, value if changed and subject == "args" else None)
        _fail(spec, reg, new, status)
    return value


def _observe_steps(
    spec: PointSpec, hooks: Sequence[Registration], ctx: Any, first: Outcome | None, filtered: bool
) -> Steps:
    for reg in hooks:
        if first is not None:
            (status, error), first = first, None
        elif filtered and filtered_out(reg, ctx):
            continue
        else:
            status, error = yield reg, ctx
        if status == OK:
            if error is None:
                continue
            try:
                error = wrong_return(spec, reg, error)
            except Exception as exc:  # noqa: BLE001 -- reading the return failed: a failure of the hook
                error = exc
            status = RAISED
        _raise_stop(spec, reg, error, ctx, None)
        _fail(spec, reg, error, status)


STEPS: Final[dict[HookStyle, StepsOf]] = {
    HookStyle.DECIDE: _decide_steps,
    HookStyle.TRANSFORM: transform_steps,
    HookStyle.OBSERVE: _observe_steps,
}


dispatch_module(globals())
