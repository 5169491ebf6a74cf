"""The call loops (decide / transform / observe), compiled per point, sync and async.

Each style has one *step generator* holding its rules: it yields ``(hook, ctx)``
pairs and is sent back what the call produced. A sync and an async driver
perform the calls, so both surfaces share every rule. HookRegistry's
dispatch methods run the common case (sync hooks, no ``tools=`` filter) in an
inline loop and hand over to the step generator at the first hook that does
anything but pass.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, cast, final

from hookreg._errors import AsyncHookError, HookReturnError, HookTypeError, StopRun
from hookreg._log import log
from hookreg._points import HookPoint, HookStyle
from hookreg._results import Decision, HookResult, InvalidToolCallAction, RequestPatch, TurnAction

if TYPE_CHECKING:
    from hookreg._registry import Registration

__all__ = ["OK", "RAISED", "AsyncRunner", "Plan", "Runners", "async_refusal", "wrong_context"]

AsyncRunner = Callable[[Any], Coroutine[Any, Any, Any]]
Plan = tuple[type, tuple[Callable[[Any], Any], ...], object, Any, "Runners"]
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


def _is(kind: type | tuple[type, ...], *, optional: bool) -> Callable[[object], bool]:
    if optional:
        return lambda value: value is None or isinstance(value, kind)
    return lambda value: isinstance(value, kind)


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
    kind, label = {
        "args": (Mapping, "Mapping[str, object] | None"),
        "patch": (RequestPatch, "RequestPatch | None"),
    }.get(_SUBJECTS[point], (str, "str | None"))
    return _is(kind, optional=True), label


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


def _check(spec: _Spec, reg: Registration, outcome: Outcome) -> tuple[bool, Any]:
    """Return ``(True, value)`` for a valid return, ``(False, exception)`` for a failure.

    A `StopRun` is not a failure: it is marked with the hook's name, logged and re-raised.
    """
    status, value = outcome
    if status == OK:
        if spec.accepts(value):
            return True, value
        return False, _wrong_return(spec, reg, value)
    if isinstance(value, StopRun):
        if value.hook is None:  # an inner dispatch may have marked it already
            value.hook = reg.name
            log("info", "run_stopped", point=spec.point.value, hook=reg.name, reason=value.reason)
        raise value
    return False, value


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
        if not isinstance(exc, HookReturnError):  # its message already names hook and point
            exc.add_note(f"hookreg: raised by hook {reg.name!r} at {point}")
        raise exc


def _failure_decides(spec: _Spec, reg: Registration, exc: BaseException, status: int) -> object:
    """The decision a failing decider makes under ``on_error="deny"``: toward doing less."""
    why = f"hook {reg.name!r} {'timed out' if status == _TIMED_OUT else 'failed'}"
    point = spec.point
    if point is HookPoint.MODEL_TURN_FINISHED:
        stop = StopRun(why)
        stop.hook = reg.name
        raise stop from exc
    if point is HookPoint.INVALID_TOOL_CALL:
        return InvalidToolCallAction(kind="fail", reason=why, decided_by=reg.name)
    if point is HookPoint.STOP:  # the run stops rather than loops
        return HookResult(decision=Decision.ALLOW, message=why, decided_by=reg.name)
    return HookResult(decision=Decision.DENY, reason=f"{why}; the action was denied", decided_by=reg.name)


def _filtered_out(reg: Registration, ctx: Any) -> bool:
    return reg._matcher is not None and not reg._matcher(ctx)


# --- step generators: the rules of each style --------------------------------


def _decide_steps(spec: _Spec, hooks: Sequence[Registration], ctx: Any, first: Outcome | None) -> Steps:
    ran = False
    last_allow: object = None
    for reg in hooks:
        if first is not None:
            outcome, first = first, None
        elif _filtered_out(reg, ctx):
            continue
        else:
            outcome = yield reg, ctx
        ran = True
        ok, value = _check(spec, reg, outcome)
        if not ok:
            _fail(spec, reg, value, outcome[0])
            if reg.on_error == "ignore":
                continue
            return _failure_decides(spec, reg, value, outcome[0])
        if value is spec.fast_pass:
            continue
        if isinstance(value, HookResult):
            if value.allowed:
                if value.message:
                    last_allow = dataclasses.replace(value, decided_by=reg.name)
                continue
            log("info", "hook_denied", point=spec.point.value, hook=reg.name, reason=value.reason)
        elif isinstance(value, TurnAction) and value.kind == "continue":
            continue
        return dataclasses.replace(value, decided_by=reg.name)
    if last_allow is not None:
        return last_allow
    return spec.all_passed if ran else spec.no_hook


def _transform_steps(spec: _Spec, hooks: Sequence[Registration], ctx: Any, first: Outcome | None) -> Steps:
    subject = spec.subject
    value = getattr(ctx, subject)
    current = ctx
    for reg in hooks:
        if first is not None:
            outcome, first = first, None
        elif _filtered_out(reg, current):  # an argument pattern tests the args this hook would see
            continue
        else:
            outcome = yield reg, current
        try:
            ok, new = _check(spec, reg, outcome)
        except StopRun as stop:
            if current is not ctx and subject == "args":
                stop.effective_args = value
            raise
        if not ok:
            _fail(spec, reg, new, outcome[0])
            continue
        if new is None:
            continue
        if subject == "patch":
            value = value.merge(new)
        elif subject == "args":
            value = MappingProxyType(dict(new))
        else:
            value = new
        current = dataclasses.replace(ctx, **{subject: value})
    return value


def _observe_steps(spec: _Spec, hooks: Sequence[Registration], ctx: Any, first: Outcome | None) -> Steps:
    for reg in hooks:
        if first is not None:
            outcome, first = first, None
        elif _filtered_out(reg, ctx):
            continue
        else:
            outcome = yield reg, ctx
        ok, error = _check(spec, reg, outcome)
        if not ok:
            _fail(spec, reg, error, outcome[0])


_STEPS = {
    HookStyle.DECIDE: _decide_steps,
    HookStyle.TRANSFORM: _transform_steps,
    HookStyle.OBSERVE: _observe_steps,
}


# --- drivers: who makes the calls ---------------------------------------------


def drive(steps: Steps) -> Any:
    """Run `steps`, calling each hook inline."""
    try:
        reg, ctx = next(steps)
        while True:
            try:
                outcome: Outcome = (OK, reg.callback(ctx))
            except Exception as exc:  # noqa: BLE001 -- handed to the policy; BaseException passes
                outcome = (RAISED, exc)
            reg, ctx = steps.send(outcome)
    except StopIteration as done:
        return done.value


async def adrive(steps: Steps) -> Any:
    """Run `steps`, awaiting async hooks (with their timeouts) and calling sync ones inline."""
    try:
        reg, ctx = next(steps)
        while True:
            outcome = await _acall(reg, ctx)
            reg, ctx = steps.send(outcome)
    except StopIteration as done:
        return done.value


async def _acall(reg: Registration, ctx: object) -> Outcome:
    acall = reg._async_path  # the callable itself when async; a dual-path hook's `acall`
    if acall is None:
        try:
            return OK, reg.callback(ctx)
        except Exception as exc:  # noqa: BLE001 -- handed to the policy
            return RAISED, exc
    if reg.timeout is None:
        try:
            return OK, await cast("Awaitable[object]", acall(ctx))
        except Exception as exc:  # noqa: BLE001 -- handed to the policy
            return RAISED, exc
    import asyncio  # noqa: PLC0415 -- deferred: importing asyncio would double the cost of `import hookreg`

    deadline = asyncio.timeout(reg.timeout)
    try:
        async with deadline:
            value = await cast("Awaitable[object]", acall(ctx))
    except Exception as exc:  # noqa: BLE001 -- handed to the policy
        return (_TIMED_OUT if deadline.expired() else RAISED), exc
    # A hook that swallowed its cancellation and returned late still timed out: never a pass.
    return (_TIMED_OUT, TimeoutError()) if deadline.expired() else (OK, value)


# --- compiling a point's hooks into runners -------------------------------------


class _Slow:
    """Stands in for the context class in a plan the inline loop must not run."""


@final
class Runners:
    """One point of one registry, compiled: its hooks and how to dispatch them.

    The dispatch methods of HookRegistry run `plan` inline when they can
    (``(context class, callables, pass value, result when all pass, self)``);
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
        self.plan = (spec.ctx_type if inline else _Slow, fns, spec.fast_pass, done, self)
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
            method = {HookStyle.DECIDE: "adecide", HookStyle.TRANSFORM: "atransform", HookStyle.OBSERVE: "anotify"}
            raise async_refusal(spec.point, self.async_hook, method[spec.style])
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
