"""The call loops (decide / transform / observe), compiled per point, sync and async.

Each style has one *step generator* holding its rules: it yields ``(hook, ctx)``
pairs and is sent back what the call produced. A sync and an async driver
perform the calls, so both surfaces share every rule. HookRegistry's
dispatch methods run the common case (sync hooks, no ``tools=`` filter) in an
inline loop and hand over to the step generator at the first hook that does
anything but pass.

A hook's outcome is read before any rule uses it: a wrong type, or a value
that cannot be read (a raising ``__bool__``, an unreadable Mapping, a result
missing its slots), is a failure of that hook like an exception it raised.
A `StopRun` (alone or in an exception group) is not a failure but a stop.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from types import CodeType
from typing import TYPE_CHECKING, Any, Final, cast, final

from hookreg._errors import AsyncHookError, HookReturnError, HookTypeError, StopRun
from hookreg._log import log
from hookreg._points import HookPoint, HookStyle
from hookreg._results import Decision, HookResult, InvalidToolCallAction, ReadOnlyDict, RequestPatch, TurnAction

if TYPE_CHECKING:
    from hookreg._registry import Registration

__all__ = [
    "OK",
    "RAISED",
    "AsyncRunner",
    "Plan",
    "Runners",
    "adrive",
    "async_refusal",
    "call_hook",
    "drive",
    "mark_stop",
    "marked_by",
    "wrong_context",
]

AsyncRunner = Callable[[Any], Coroutine[Any, Any, Any]]
Outcome = tuple[int, Any]
Steps = Generator[tuple["Registration", Any], Outcome, Any]

OK: Final = 0
RAISED: Final = 1
_TIMED_OUT: Final = 2


@final
class _Spec:
    """What dispatch needs to know about one point."""

    __slots__ = (
        "accepts",
        "all_passed",
        "ctx_type",
        "expected",
        "fast_pass",
        "no_hook",
        "point",
        "style",
        "subject",
    )

    def __init__(self, point: HookPoint) -> None:
        self.point = point
        self.style = point.style
        self.ctx_type: type[Any] = point.context
        self.subject = _SUBJECTS.get(point, "")
        accepted, self.expected = _ACCEPTS[point]
        self.accepts: Callable[[object], bool] = accepted
        self.fast_pass: object = _FAST_PASS.get(point)
        self.all_passed: object = self.fast_pass if point is not HookPoint.INVALID_TOOL_CALL else _FAIL
        self.no_hook: object = _NO_INTERACTION if point is HookPoint.ON_INTERACTION else self.all_passed


_ALLOW = HookResult.allow()
_CONTINUE = TurnAction.continue_run()
_FAIL = InvalidToolCallAction.fail()
_NO_INTERACTION = HookResult.deny("no interaction hook")
_SUBJECTS = {
    HookPoint.TRANSFORM_TOOL_INPUT: "args",
    HookPoint.MODEL_SELECT: "selected_model",
    HookPoint.ON_TOOL_ERROR: "message",
    HookPoint.TRANSFORM_TOOL_RESULT: "presentation",
    HookPoint.PRE_MODEL_CALL: "patch",
}
# Each transform context class also exposes its subject's slot as `_subject`: the
# inline loop then returns the unchanged subject with one specialized attribute
# read, where getattr(ctx, name) would cost a builtin call.
for _point, _name in _SUBJECTS.items():
    _point.context._subject = vars(_point.context)[_name]


def _is(kind: type, *, optional: bool) -> Callable[[object], bool]:
    # The result types are final: a subclass could override what dispatch reads
    # (`allowed`, `kind`, `__eq__`), so only the exact type is accepted.
    if optional:
        return lambda value: value is None or type(value) is kind
    return lambda value: type(value) is kind


def _accepts(point: HookPoint) -> tuple[Callable[[object], bool], str]:
    style = point.style
    if style is HookStyle.OBSERVE:
        return (lambda value: value is None), "None"
    if point is HookPoint.MODEL_TURN_FINISHED:
        return _is(TurnAction, optional=False), "TurnAction"
    if point is HookPoint.INVALID_TOOL_CALL:
        return _is(InvalidToolCallAction, optional=True), "InvalidToolCallAction | None"
    if style is HookStyle.DECIDE:
        return _is(HookResult, optional=False), "HookResult"
    if _SUBJECTS[point] == "patch":
        return _is(RequestPatch, optional=True), "RequestPatch | None"
    # Mappings and strings are read into plain values (`_read_subject`), so any kind is accepted.
    kind, label = (Mapping, "Mapping[str, object] | None") if _SUBJECTS[point] == "args" else (str, "str | None")
    return (lambda value: value is None or isinstance(value, kind)), label


_ACCEPTS = {point: _accepts(point) for point in HookPoint}
_FAST_PASS: dict[HookPoint, object] = {
    point: _CONTINUE if point is HookPoint.MODEL_TURN_FINISHED else _ALLOW
    for point in HookPoint
    if point.style is HookStyle.DECIDE and point is not HookPoint.INVALID_TOOL_CALL
}
_SPECS = {point: _Spec(point) for point in HookPoint}


# --- rules shared by every style -------------------------------------------


def wrong_context(point: HookPoint, ctx: object) -> HookTypeError:
    """Build the error for a dispatch of `point` with a context of another class."""
    expected = point.context.__name__
    msg = (
        f"Cannot dispatch {point} with {type(ctx).__name__}: this point takes a {expected}. "
        f"Build a {expected}(...) for it."
    )
    return HookTypeError(msg, point=point)


def _stopped(spec: _Spec, reg: Registration, raised: BaseException, ctx: object, effective: object) -> None:
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
    catchers = _catchers()
    enclosing = []
    frame = sys._getframe(1)  # the only way to see the enclosing dispatches
    mine = globals()
    while frame.f_back is not None:
        if frame.f_back.f_code in catchers and frame.f_globals is not mine:  # not this dispatch's own machinery
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


@functools.cache
def _catchers() -> frozenset[CodeType]:
    """The code objects of the frames that call hooks (and catch what they raise)."""
    from hookreg._surface import HookRegistry  # noqa: PLC0415 -- _surface imports this module

    methods = ("decide", "transform", "notify", "adecide", "atransform", "anotify")
    return frozenset([*(getattr(HookRegistry, name).__code__ for name in methods), call_hook.__code__, _acall.__code__])


def _wrong_return(spec: _Spec, reg: Registration, value: object) -> HookReturnError:
    hint = "Return one of the expected values."
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never awaited: close it so Python does not warn later
        hint = "It returned an awaitable from a sync callable: make it an async def, or return the value."
    msg = f"Hook {reg.name!r} at {spec.point} returned {type(value).__name__}; expected {spec.expected}. {hint}"
    return HookReturnError(msg, point=spec.point, callback=reg.callback, returned_type=type(value))


def _fail(spec: _Spec, reg: Registration, exc: BaseException, status: int) -> None:
    """Log a failure once; re-raise it under ``on_error="raise"``."""
    point = spec.point.value
    if status == _TIMED_OUT:
        log("warning", "hook_timed_out", point=point, hook=reg.name, timeout=reg.timeout)
    else:
        level = "error" if spec.style is HookStyle.DECIDE else "warning"
        error = (  # hookreg's own description, never the exception's text (DESIGN §7)
            f"returned {exc.returned_type.__name__}; expected {spec.expected}"
            if isinstance(exc, HookReturnError) and exc.callback is reg.callback
            else f"raised {type(exc).__name__}"
        )
        log(level, "hook_failed", point=point, hook=reg.name, exc_type=type(exc).__name__, error=error)
    if reg.on_error == "raise":
        note = f"hookreg: raised by hook {reg.name!r} at {point}"
        # A HookReturnError's message already names hook and point; an exception raised
        # again (a module-level constant) already carries the note from the last time.
        if not isinstance(exc, HookReturnError) and note not in getattr(exc, "__notes__", ()):
            exc.add_note(note)
        if isinstance(exc, StopIteration):
            # Raised inside a generator it would become a RuntimeError (PEP 479): the driver raises it.
            raise _StopIterationError(exc) from exc
        raise exc


class _StopIterationError(RuntimeError):
    """Carries a StopIteration out of a step generator to its driver, which raises it.

    A RuntimeError caused by the StopIteration, as PEP 479 would make it, for a driver that does not unwrap it.
    """

    def __init__(self, exc: StopIteration) -> None:
        super().__init__("a hook raised StopIteration")
        self.exc = exc


def _failure_decides(spec: _Spec, reg: Registration, exc: BaseException, status: int, ctx: object) -> object:
    """The decision a failing decider makes under ``on_error="deny"``: toward doing less."""
    why = f"hook {reg.name!r} {'timed out' if status == _TIMED_OUT else 'failed'}"
    point = spec.point
    if point is HookPoint.MODEL_TURN_FINISHED:
        stop = StopRun(why)
        mark_stop(stop, reg.name, ctx, None)
        raise stop from exc
    if point is HookPoint.INVALID_TOOL_CALL:
        return InvalidToolCallAction(kind="fail", reason=why, decided_by=reg.name)
    if point is HookPoint.STOP:  # the run stops rather than loops
        return HookResult(decision=Decision.ALLOW, message=why, decided_by=reg.name)
    return HookResult(decision=Decision.DENY, reason=f"{why}; the action was denied", decided_by=reg.name)


def _filtered_out(reg: Registration, ctx: Any) -> bool:
    return reg._matcher is not None and not reg._matcher(ctx)


# --- reading what a hook returned ---------------------------------------------
# Each reader raises on a wrong type or on a value that cannot be read (a
# missing slot, a raising __bool__ or __getitem__); the step generator then
# treats the hook as having raised that exception.


def _read_decision(spec: _Spec, reg: Registration, value: Any) -> tuple[bool, object]:
    """Read a decider's return: ``(True, result)`` decides; ``(False, allow or None)`` passes."""
    if not spec.accepts(value):  # INVALID_TOOL_CALL's pass, None, never gets here: it is the fast pass
        raise _wrong_return(spec, reg, value)
    if type(value) is HookResult:
        if value.allowed:
            return False, dataclasses.replace(value, decided_by=reg.name) if value.message else None
        result = dataclasses.replace(value, decided_by=reg.name)
        log("info", "hook_denied", point=spec.point.value, hook=reg.name, reason=result.reason)
        return True, result
    if type(value) is TurnAction and value.kind == "continue":
        return False, None
    return True, dataclasses.replace(value, decided_by=reg.name)


def _read_subject(spec: _Spec, reg: Registration, so_far: Any, new: object) -> object:
    """Read a transform's non-None return into the new subject: plain, detached from the hook's object."""
    if not spec.accepts(new):
        raise _wrong_return(spec, reg, new)
    subject = spec.subject
    if subject == "patch":
        return so_far.merge(new)
    if subject == "args":
        # Read through the Mapping protocol (a dict subclass's own __iter__ and __getitem__
        # included), so a mapping that cannot be read fails here and nowhere later.
        items = cast("Mapping[str, object]", new)
        return ReadOnlyDict(items if type(items) is dict else {key: items[key] for key in items})
    return new if type(new) is str else str(new)


# --- step generators: the rules of each style --------------------------------


def _decide_steps(spec: _Spec, hooks: Sequence[Registration], ctx: Any, first: Outcome | None) -> Steps:
    ran = False
    last_allow: object = None
    for reg in hooks:
        if first is not None:
            (status, value), first = first, None
        elif _filtered_out(reg, ctx):
            continue
        else:
            status, value = yield reg, ctx
        if status == OK:
            if value is spec.fast_pass:
                ran = True
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
        _stopped(spec, reg, value, ctx, None)
        _fail(spec, reg, value, status)
        if reg.on_error == "ignore":
            continue  # a pass, but not an answer: at ON_INTERACTION it has not run
        return _failure_decides(spec, reg, value, status, ctx)
    if last_allow is not None:
        return last_allow
    return spec.all_passed if ran else spec.no_hook


def _transform_steps(spec: _Spec, hooks: Sequence[Registration], ctx: Any, first: Outcome | None) -> Steps:
    subject = spec.subject
    value = getattr(ctx, subject)
    current = ctx
    for reg in hooks:
        if first is not None:
            (status, new), first = first, None
        elif _filtered_out(reg, current):  # an argument pattern tests the args this hook would see
            continue
        else:
            status, new = yield reg, current
        if status == OK:
            if new is None:
                continue
            try:
                new = _read_subject(spec, reg, value, new)
                current = dataclasses.replace(ctx, **{subject: new})
            except Exception as exc:  # noqa: BLE001 -- reading the return failed: a failure of the hook
                status, new = RAISED, exc
            else:
                value = new
                continue
        _stopped(spec, reg, new, ctx, value if current is not ctx and subject == "args" else None)
        _fail(spec, reg, new, status)
    return value


def _observe_steps(spec: _Spec, hooks: Sequence[Registration], ctx: Any, first: Outcome | None) -> Steps:
    for reg in hooks:
        if first is not None:
            (status, error), first = first, None
        elif _filtered_out(reg, ctx):
            continue
        else:
            status, error = yield reg, ctx
        if status == OK:
            if error is None:
                continue
            try:
                error = _wrong_return(spec, reg, error)
            except Exception as exc:  # noqa: BLE001 -- reading the return failed: a failure of the hook
                error = exc
            status = RAISED
        _stopped(spec, reg, error, ctx, None)
        _fail(spec, reg, error, status)


_STEPS = {
    HookStyle.DECIDE: _decide_steps,
    HookStyle.TRANSFORM: _transform_steps,
    HookStyle.OBSERVE: _observe_steps,
}


# --- drivers: who makes the calls ---------------------------------------------


def call_hook(reg: Registration, ctx: object) -> Outcome:
    """Call a sync hook: what it returned, or the exception it raised (a BaseException passes)."""
    try:
        return OK, reg.callback(ctx)
    except Exception as exc:  # noqa: BLE001 -- handed to the policy
        return RAISED, exc


def drive(steps: Steps, call: Callable[[Registration, object], Outcome] = call_hook) -> Any:
    """Run `steps`, calling each hook inline with `call`."""
    try:
        reg, ctx = next(steps)
        while True:
            reg, ctx = steps.send(call(reg, ctx))
    except StopIteration as done:
        return done.value
    except _StopIterationError as carried:
        stop_iteration = carried.exc
    raise stop_iteration


async def adrive(steps: Steps, acall: Callable[[Registration, object], Awaitable[Outcome]] | None = None) -> Any:
    """Run `steps`, awaiting async hooks (with their timeouts) and calling sync ones inline, with `acall`.

    A hook that swallows the cancellation of the task running the dispatch and
    returns does not end it: dispatch raises `CancelledError` instead of
    reading what the hook returned or calling the next hook. A hook that
    raises instead has its exception go through the rules as usual.
    """
    import asyncio  # noqa: PLC0415 -- deferred: importing asyncio would double the cost of `import hookreg`

    acall = acall or _acall
    try:
        task = asyncio.current_task()
    except RuntimeError:  # driven by another event loop than asyncio's: no task to watch
        task = None
    cancelling = task.cancelling() if task is not None else 0
    try:
        reg, ctx = next(steps)
        while True:
            outcome = await acall(reg, ctx)
            if task is not None:
                if outcome[0] == OK:
                    if task.cancelling() > cancelling:  # the hook swallowed a cancellation and returned
                        raise asyncio.CancelledError
                else:
                    # A hook whose TaskGroup saw a task fail leaves the count raised on Python 3.11
                    # (fixed in 3.12): what it raised is its outcome, and the count starts again.
                    cancelling = task.cancelling()
            reg, ctx = steps.send(outcome)
    except StopIteration as done:
        return done.value
    except _StopIterationError as carried:
        stop_iteration = carried.exc
    raise stop_iteration


async def _acall(reg: Registration, ctx: object) -> Outcome:
    acall = reg._async_path  # the callable itself when async; a dual-path hook's `acall`
    if acall is None:
        return call_hook(reg, ctx)
    if reg.timeout is None:
        try:
            return OK, await cast("Awaitable[object]", acall(ctx))
        except Exception as exc:  # noqa: BLE001 -- handed to the policy
            return RAISED, _unwrapped(exc)
    import asyncio  # noqa: PLC0415 -- deferred: importing asyncio would double the cost of `import hookreg`

    deadline = asyncio.timeout(reg.timeout)
    try:
        async with deadline:
            value = await cast("Awaitable[object]", acall(ctx))
    except Exception as exc:  # noqa: BLE001 -- handed to the policy
        # Only an exception the deadline caused is a timeout: one a hook raised itself, even
        # late, is its failure as it stands (it names what went wrong).
        return (_TIMED_OUT if deadline.expired() else RAISED), _unwrapped(exc)
    # A hook that swallowed its cancellation, or blocked the event loop past its
    # deadline (so the deadline could not fire), and returned late still timed out:
    # never a pass. Measured on the loop's clock, as the deadline is.
    late = deadline.expired() or asyncio.get_running_loop().time() >= cast("float", deadline.when())
    return (_TIMED_OUT, TimeoutError()) if late else (OK, value)


def _unwrapped(exc: Exception) -> Exception:
    """An ``async def`` hook's StopIteration, which Python wrapped in a RuntimeError; else `exc` itself."""
    cause = exc.__cause__
    if type(exc) is RuntimeError and isinstance(cause, StopIteration) and str(exc) == "coroutine raised StopIteration":
        return cause
    return exc


# --- compiling a point's hooks into runners -------------------------------------


@final
class Plan:
    """What the inline loop of a dispatch reads, by attribute: one point of one registry.

    Attributes:
        ctx_type: The context class the inline loop accepts; `_Slow` sends every dispatch to `runners`.
        fns: The hooks' callables, in dispatch order.
        passed: A decider's pass value (the loop leaves at the first other return).
        done: The result when every hook passed (decide points).
        runners: Who takes over when the inline loop cannot go on.
    """

    __slots__ = ("ctx_type", "done", "fns", "passed", "runners")

    def __init__(
        self, ctx_type: type, fns: tuple[Callable[[Any], Any], ...], passed: object, done: object, runners: Any
    ) -> None:
        self.ctx_type = ctx_type
        self.fns = fns
        self.passed = passed
        self.done = done
        self.runners = runners



class _Slow:
    """Stands in for the context class in a plan the inline loop must not run."""


@final
class Runners:
    """One point of one registry, compiled: its hooks and how to dispatch them.

    The dispatch methods of HookRegistry run `plan` inline when they can;
    a plan whose context class is `_Slow` sends every dispatch to `run`.

    Attributes:
        hooks: The hooks, in dispatch order.
        async_hook: The first async hook, which a sync dispatch refuses; or ``None``.
        plan: What the inline loop needs.
        arun: The async runner, or ``None`` when no hook has an async path
            (the sync dispatch then serves the async one). Dual-path hooks
            have one: they keep the plan out of the inline loop, so the async
            surface awaits their ``acall`` while the sync surface calls them.
    """

    __slots__ = ("_position", "_spec", "_steps", "arun", "async_hook", "hooks", "plan")

    def __init__(self, point: HookPoint, hooks: tuple[Registration, ...]) -> None:
        spec = self._spec = _SPECS[point]
        steps = self._steps = _STEPS[spec.style]
        self.hooks = hooks
        self.async_hook = next((reg for reg in hooks if reg.is_async), None)
        fns = tuple(reg.callback for reg in hooks)
        self._position = {id(fn): i for i, fn in enumerate(fns)}
        awaits = any(reg._async_path is not None for reg in hooks)
        inline = not awaits and len(self._position) == len(fns)
        inline = inline and all(reg._matcher is None for reg in hooks)
        done = spec.all_passed if fns else spec.no_hook  # transforms return their subject instead
        self.plan = Plan(spec.ctx_type if inline else _Slow, fns, spec.fast_pass, done, self)
        self.arun: AsyncRunner | None = None
        if awaits:

            async def arun(ctx: object) -> object:
                if ctx.__class__ is not spec.ctx_type:
                    raise wrong_context(point, ctx)
                return await adrive(steps(spec, hooks, ctx, None))

            self.arun = arun

    def run(self, ctx: object) -> object:
        """Dispatch synchronously without the inline loop (filters, repeats, async, a wrong context)."""
        spec = self._spec
        if ctx.__class__ is not spec.ctx_type:
            raise wrong_context(spec.point, ctx)
        if self.async_hook is not None:
            raise async_refusal(spec.point, self.async_hook, spec.style.amethod)
        return drive(self._steps(spec, self.hooks, ctx, None))

    def resume(self, ctx: object, fn: object, outcome: Outcome) -> object:
        """Take over from the inline loop at hook `fn`, whose call produced `outcome`."""
        return drive(self._steps(self._spec, self.hooks[self._position[id(fn)] :], ctx, outcome))


def async_refusal(point: HookPoint, reg: Registration, method: str) -> AsyncHookError:
    """Build the error for a sync dispatch of `point`, which holds async hook `reg`."""
    msg = (
        f"Cannot dispatch {point} synchronously: hook {reg.name!r} is async. "
        f"Call `await registry.{method}(...)` instead."
    )
    return AsyncHookError(msg, point=point, callback=reg.callback)
