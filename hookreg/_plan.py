"""What a dispatch reads and who takes it over: `Plan`, `CompiledPoint`, and the drivers of the rules.

The path of ``registry.decide(point, ctx)`` (transforms and observers alike):

1. `hookreg._dispatch.decide` reads the point's `Plan` and, while every hook
   passes, calls them itself: the *inline loop*.
2. The first hook that does anything else (denies, raises, rewrites) hands
   the dispatch to the plan's `CompiledPoint` (`resume`, `rewrite`), and a
   plan the inline loop must not run (filters, async hooks, a wrong context;
   its context class is `_NotInline`) sends the whole dispatch there (`run`).
3. `CompiledPoint` starts the style's *step generator* (`hookreg._rules`),
   which holds every rule and yields each hook call to a *driver*:
   `run_steps` makes the calls inline, `arun_steps` awaits async hooks.
   Both take the call as a parameter, so that tracing times each call
   through the very same drivers.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Coroutine
from operator import attrgetter
from sys import getrefcount
from typing import TYPE_CHECKING, Any, Final, Protocol, cast, final

from hookreg._context import rebuilder
from hookreg._errors import AsyncHookError
from hookreg._points import POINTS, HookPoint, HookStyle
from hookreg._rules import (
    OK,
    RAISED,
    STEPS,
    TIMED_OUT,
    StopIterationError,
    calls_hooks,
    dispatch_module,
    plain_reader,
    transform_steps,
    wrong_context,
)

if TYPE_CHECKING:
    from hookreg._registration import Registration
    from hookreg._rules import Outcome, Steps

    AsyncRunner = Callable[[Any], Coroutine[Any, Any, Any]]

    class Detour(Protocol):
        """Who runs a whole dispatch when the inline loop cannot: `run`, and `arun` when some hook awaits."""

        @property
        def arun(self) -> AsyncRunner | None: ...
        def run(self, ctx: object) -> object: ...


__all__ = [
    "CompiledPoint",
    "Plan",
    "acall_hook",
    "arun_steps",
    "async_refusal",
    "call_hook",
    "no_hooks",
    "run_steps",
]

# --- drivers: who makes the calls ---------------------------------------------


@calls_hooks
def call_hook(reg: Registration, ctx: object) -> Outcome:
    """Call a sync hook: what it returned, or the exception it raised (a BaseException passes)."""
    try:
        return OK, reg.callback(ctx)
    except Exception as exc:  # noqa: BLE001 -- handed to the policy
        return RAISED, exc


@calls_hooks
def run_steps(steps: Steps, call: Callable[[Registration, object], Outcome] | None = None) -> Any:
    """Run `steps`, calling each hook inline: with `call` when given (tracing times each call), else as `call_hook`."""
    try:
        reg, ctx = next(steps)
        if call is not None:
            while True:
                reg, ctx = steps.send(call(reg, ctx))
        while True:
            try:  # call_hook's body, inline: a transform chain makes one call fewer per hook
                outcome = OK, reg.callback(ctx)
            except Exception as exc:  # noqa: BLE001 -- handed to the policy
                outcome = RAISED, exc
            reg, ctx = steps.send(outcome)
    except StopIteration as done:
        return done.value
    except StopIterationError as carried:
        stop_iteration = carried.exc
    raise stop_iteration


async def arun_steps(steps: Steps, acall: Callable[[Registration, object], Awaitable[Outcome]] | None = None) -> Any:
    """Run `steps`, awaiting async hooks (with their timeouts) and calling sync ones inline, with `acall`.

    A hook that swallows the cancellation of the task running the dispatch and
    returns does not end it: dispatch raises `CancelledError` instead of
    reading what the hook returned or calling the next hook. A hook that
    raises instead has its exception go through the rules as usual.
    """
    import asyncio  # noqa: PLC0415 -- deferred: importing asyncio would double the cost of `import hookreg`

    acall = acall or acall_hook
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
    except StopIterationError as carried:
        stop_iteration = carried.exc
    raise stop_iteration


@calls_hooks
async def acall_hook(reg: Registration, ctx: object) -> Outcome:
    acall = reg._async_path
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
        return (TIMED_OUT if deadline.expired() else RAISED), _unwrapped(exc)
    # A hook that swallowed its cancellation, or blocked the event loop past its
    # deadline (so the deadline could not fire), and returned late still timed out:
    # never a pass. Measured on the loop's clock, as the deadline is.
    late = deadline.expired() or asyncio.get_running_loop().time() >= cast("float", deadline.when())
    return (TIMED_OUT, TimeoutError()) if late else (OK, value)


def _unwrapped(exc: Exception) -> Exception:
    """An ``async def`` hook's StopIteration, which Python wrapped in a RuntimeError; else `exc` itself."""
    cause = exc.__cause__
    if type(exc) is RuntimeError and isinstance(cause, StopIteration) and str(exc) == "coroutine raised StopIteration":
        return cause
    return exc


# --- compiling a point's hooks -------------------------------------


@final
class Plan:
    """What the inline loop of a dispatch reads, by attribute: one point of one registry.

    Attributes:
        ctx_type: The context class the inline loop accepts; `_NotInline` sends every dispatch to `compiled`.
        first: The first hook's callable, or ``None`` when the point has no hook.
        rest: The other hooks' callables, in dispatch order. The loop calls
            `first` by itself and iterates `rest` only when it is not empty:
            one hook then costs no iterator (about a tenth of a one-hook dispatch).
        passed: A decider's pass value (the loop leaves at the first other return).
        done: The result when every hook passed (decide points).
        compiled: Who takes over when the inline loop cannot go on (a `CompiledPoint`, or a trace's `Detour`).
        unchecked: Every hook is an observer whose code can return only
            ``None`` (`returns_only_none`): the loop need not test returns.
        plain: At a transform point, the class of return that is a rewrite
            `compiled` goes on with inline (`plain_reader`); else ``None``.
    """

    __slots__ = ("compiled", "ctx_type", "done", "first", "passed", "plain", "rest", "unchecked")

    def __init__(  # noqa: PLR0913, PLR0917 -- one per attribute
        self,
        ctx_type: type,
        fns: tuple[Callable[[Any], Any], ...],
        passed: object,
        done: object,
        compiled: CompiledPoint,
        unchecked: bool,
        plain: type | None = None,
    ) -> None:
        self.ctx_type = ctx_type
        self.plain = plain
        self.first = fns[0] if fns else None
        self.rest = fns[1:]
        self.passed = passed
        self.done = done
        self.compiled = compiled
        self.unchecked = unchecked

    def detour(self, compiled: Detour) -> Plan:
        """This plan with every dispatch sent to `compiled`, never run inline (what the trace slot installs)."""
        # No hooks: the inline loop never runs a plan whose context class is _NotInline.
        return Plan(_NotInline, (), self.passed, self.done, cast("CompiledPoint", compiled), self.unchecked)


class _NotInline:
    """Stands in for the context class in a plan the inline loop must not run."""


# CPython before 3.14 counts every reference, those of a frame's locals and value stack included: a count of
# two (the local, getrefcount's argument) proves nothing else holds an object. 3.14 may borrow them uncounted.
_COUNTS_REFERENCES: Final = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
_HELD_HERE_ONLY: Final = 2

_IS_ASYNC: Final = attrgetter("is_async")
_CALLBACK: Final = attrgetter("callback")
_RETURNS_NONE: Final = attrgetter("_returns_none")


@final
class CompiledPoint:
    """One point of one registry, compiled: its hooks and how to dispatch them.

    The dispatch methods of HookRegistry run `plan` inline when they can;
    a plan whose context class is `_NotInline` sends every dispatch to `run`.

    Attributes:
        hooks: The hooks, in dispatch order.
        async_hook: The first async hook, which a sync dispatch refuses; or ``None``.
        plan: What the inline loop needs.
        arun: The async runner, or ``None`` when no hook has an async path
            (the sync dispatch then serves the async one). Dual-path hooks
            have one: they keep the plan out of the inline loop, so the async
            surface awaits their ``acall`` while the sync surface calls them.
    """

    __slots__ = ("_filtered", "_position", "arun", "async_hook", "hooks", "plan", "spec", "steps")

    def __init__(self, point: HookPoint, hooks: tuple[Registration, ...]) -> None:
        spec = self.spec = POINTS[point]
        steps = self.steps = STEPS[spec.style]
        self.hooks = hooks
        # One pass each, in C where it can be: a registration recompiles its point.
        self.async_hook = next(filter(_IS_ASYNC, hooks), None)
        fns = tuple(map(_CALLBACK, hooks))
        self._position = {id(fn): i for i, fn in enumerate(fns)}
        awaits = any(reg._async_path is not None for reg in hooks)
        inline = not awaits and len(self._position) == len(fns)
        filtered = self._filtered = any(reg._matcher is not None for reg in hooks)
        inline = inline and not filtered
        done = spec.all_passed if fns else spec.no_hook  # transforms return their subject instead
        unchecked = all(map(_RETURNS_NONE, hooks))
        plain = plain_reader(spec)[0] if spec.style is HookStyle.TRANSFORM else None
        self.plan = Plan(spec.context if inline else _NotInline, fns, spec.passed, done, self, unchecked, plain)
        self.arun: AsyncRunner | None = None
        if awaits:

            async def arun(ctx: object) -> object:
                if ctx.__class__ is not spec.context:
                    raise wrong_context(point, ctx)
                return await arun_steps(steps(spec, hooks, ctx, None, filtered))

            self.arun = arun

    def run(self, ctx: object) -> object:
        """Dispatch synchronously without the inline loop (filters, repeats, async, a wrong context)."""
        spec = self.spec
        if ctx.__class__ is not spec.context:
            raise wrong_context(spec.point, ctx)
        if self.async_hook is not None:
            raise async_refusal(spec.point, self.async_hook, spec.style.amethod)
        return run_steps(self.start(ctx))

    def resume(self, ctx: object, fn: object, outcome: Outcome) -> object:
        """Take over from the inline loop at hook `fn`, whose call produced `outcome`."""
        return run_steps(self.steps(self.spec, self.hooks[self._position[id(fn)] :], ctx, outcome, self._filtered))

    @calls_hooks
    def rewrite(self, ctx: object, fn: object, new: object) -> object:
        """Go on with an inline transform chain at hook `fn`, which returned `new`: a plain subject (`plain_reader`).

        Each later hook sees a context holding the subject so far, built only
        when a hook is to see it. Hooks that return ``None`` or a plain subject
        are called here, one function frame for the whole chain; any other
        return, or an exception, hands the rest of the chain to the step
        generator, which holds every other rule.

        A context this loop built that no hook kept (nothing but this frame
        holds it) takes the next subject in place of a new one: no one can
        see the difference, and a step costs half (`benchmarks/RESULTS.md`,
        TRANSFORM_TOOL_INPUT against Strands). Where reference counts do not
        tell that (`_COUNTS_REFERENCES`) every step builds a new one.
        """
        spec, hooks = self.spec, self.hooks
        plain, read = plain_reader(spec)
        value = new if read is None else read(new)
        start = self._position[id(fn)] + 1
        if start == len(hooks):  # the last hook rewrote: nothing more to call
            return value
        rebuild = rebuilder(ctx.__class__)
        set_subject = getattr(ctx.__class__, cast("str", spec.subject)).__set__  # the slot's descriptor
        current, stale = ctx, True
        for index in range(start, len(hooks)):
            if stale:
                if current is not ctx and _COUNTS_REFERENCES and getrefcount(current) == _HELD_HERE_ONLY:
                    set_subject(current, value)
                else:
                    current = rebuild(ctx, value)
                stale = False
            try:
                new = hooks[index].callback(current)
            except Exception as exc:  # noqa: BLE001 -- handed to the point's failure policy
                return run_steps(transform_steps(spec, hooks[index:], current, (RAISED, exc), False, changed=True))
            if new is None:
                continue
            if type(new) is not plain:  # type(): a hostile __class__ can lie or raise
                return run_steps(transform_steps(spec, hooks[index:], current, (OK, new), False, changed=True))
            value, stale = new if read is None else read(new), True
        return value

    def start(self, ctx: object) -> Steps:
        """The rules of a whole dispatch of `ctx`, for a driver to run (`run_steps`, `arun_steps`, or tracing's)."""
        return self.steps(self.spec, self.hooks, ctx, None, self._filtered)


_NO_HOOKS: dict[HookPoint, CompiledPoint] = {}


def no_hooks(point: HookPoint) -> CompiledPoint:
    """The `CompiledPoint` of `point` with no hooks: one for every registry (it holds none), made on first use."""
    try:
        return _NO_HOOKS[point]
    except KeyError:
        compiled = _NO_HOOKS[point] = CompiledPoint(point, ())
        return compiled


def async_refusal(point: HookPoint, reg: Registration, method: str) -> AsyncHookError:
    """Build the error for a sync dispatch of `point`, which holds async hook `reg`."""
    msg = (
        f"Cannot dispatch {point} synchronously: hook {reg.name!r} is async. "
        f"Call `await registry.{method}(...)` instead."
    )
    return AsyncHookError(msg, point=point, callback=reg.callback)


dispatch_module(globals())
