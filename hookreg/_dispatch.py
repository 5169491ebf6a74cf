"""HookRegistry's hand-written methods: decide, transform, notify, resolve_tool_call and their a-twins.

`HookRegistry` (generated in `hookreg._surface`) binds these functions as its
methods and declares their per-point overloads. Each looks the point's `Plan`
up in its style's table (a point of another style is simply missing), runs
the inline loop while every hook passes, and hands the first hook that does
anything else to the plan's `CompiledPoint`, which runs the style's rules
(`hookreg._rules`). A plan the inline loop must not run (filters, async or
dual-path hooks, a repeated callable, a wrong context, a trace) sends the
whole dispatch to its `CompiledPoint`.

Also here, for the same reason (they sit above the registry core): `trace`,
`describe`, the notebook table and `use_policy`, which import what they
need on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, cast, final

from hookreg._context import PermissionDeniedContext, PreToolCallDecideContext
from hookreg._errors import HookTypeError, StopRun
from hookreg._log import log
from hookreg._plan import async_refusal
from hookreg._points import HookPoint, HookStyle
from hookreg._registry import RegistryCore, hook_rows, snapshot
from hookreg._results import Decision, HookResult, ToolCallResolution, replace
from hookreg._rules import OK, RAISED, calls_hooks, dispatch_module, marked_by

if TYPE_CHECKING:
    from types import CoroutineType

    from hookreg._registration import Registration
    from hookreg._trace import Trace
    from hookreg.policy import Policy, Rule

__all__ = [
    "DispatchCoroutine",
    "adecide",
    "anotify",
    "aresolve_tool_call",
    "atransform",
    "decide",
    "notify",
    "resolve_tool_call",
    "resolving",
    "transform",
]


@final
class _Resolve:
    """The token of one resolve: nothing but its identity (weakly referable, so what is kept by it can be pruned)."""

    __slots__ = ("__weakref__",)


_RESOLVING: ContextVar[object | None] = ContextVar("hookreg_resolving", default=None)


def resolving() -> object | None:
    """A token unique to the `resolve_tool_call` the caller runs inside; ``None`` outside one.

    It lets a hook hand what its ``transform_tool_input`` step learned to its
    gate in the very same resolve, and never to another call, whatever ids the
    calls share (hookreg.external keeps its command hooks' answers this way).
    """
    return _RESOLVING.get()


# The inline loops below are the hot path: while every hook passes, nothing else
# runs. `is not None` (transforms, observers) is one instruction less per hook
# than comparing with a loaded pass value. Iterating a tuple allocates an
# iterator, which costs more than testing the tuple first: so the first hook is
# called by itself (`plan.first`, ``None`` with no hook), and the rest are
# iterated only when there are some. The loops are written out per style rather
# than shared, because a shared one would cost a call or a test per hook.


@calls_hooks
def decide(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:
    """Run the gates of `point` in order; return the first result that is not a pass."""
    try:
        plan = self._decide[point]
    except (KeyError, TypeError):
        self._misdirected(point, HookStyle.DECIDE, "decide")
    if ctx.__class__ is not plan.ctx_type:
        return plan.compiled.run(ctx)
    fn = plan.first
    if fn is not None:
        passed = plan.passed
        try:
            result = fn(ctx)
            if result is passed:
                if not plan.rest:
                    return plan.done
                for fn in plan.rest:
                    result = fn(ctx)
                    if result is not passed:
                        break
                else:
                    return plan.done
        except Exception as exc:  # noqa: BLE001 -- handed to the point's failure policy
            return plan.compiled.resume(ctx, fn, (RAISED, exc))
        return plan.compiled.resume(ctx, fn, (OK, result))
    return plan.done


@calls_hooks
async def _adecide(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:
    """The coroutine `adecide` wraps: what awaiting it runs."""
    try:
        plan = self._decide[point]
    except (KeyError, TypeError):
        self._misdirected(point, HookStyle.DECIDE, "adecide")
    if ctx.__class__ is not plan.ctx_type:
        # A plan holding an async hook never runs inline: its `CompiledPoint` awaits it.
        arun = plan.compiled.arun
        return plan.compiled.run(ctx) if arun is None else await arun(ctx)
    fn = plan.first
    if fn is not None:
        passed = plan.passed
        try:
            result = fn(ctx)
            if result is passed:
                if not plan.rest:
                    return plan.done
                for fn in plan.rest:
                    result = fn(ctx)
                    if result is not passed:
                        break
                else:
                    return plan.done
        except Exception as exc:  # noqa: BLE001 -- handed to the point's failure policy
            return plan.compiled.resume(ctx, fn, (RAISED, exc))
        return plan.compiled.resume(ctx, fn, (OK, result))
    return plan.done


@calls_hooks
def transform(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:  # noqa: PLR0911 -- one exit per path of the loop
    """Chain the transforms of `point`; return the final subject (the original object when unchanged)."""
    try:
        plan = self._transform[point]
    except (KeyError, TypeError):
        self._misdirected(point, HookStyle.TRANSFORM, "transform")
    if ctx.__class__ is not plan.ctx_type:
        return plan.compiled.run(ctx)
    fn = plan.first
    if fn is not None:
        try:
            result = fn(ctx)
            if result is None:
                if not plan.rest:
                    return ctx._subject_value  # type: ignore[attr-defined]
                for fn in plan.rest:
                    result = fn(ctx)
                    if result is not None:
                        break
                else:
                    return ctx._subject_value  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 -- handed to the point's failure policy
            return plan.compiled.resume(ctx, fn, (RAISED, exc))
        if type(result) is plan.plain:  # a rewrite: the chain goes on without the step generator
            return plan.compiled.rewrite(ctx, fn, result)
        return plan.compiled.resume(ctx, fn, (OK, result))
    return ctx._subject_value  # type: ignore[attr-defined]


@calls_hooks
async def _atransform(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:  # noqa: PLR0911 -- one exit per path of the loop
    """The coroutine `atransform` wraps: what awaiting it runs."""
    try:
        plan = self._transform[point]
    except (KeyError, TypeError):
        self._misdirected(point, HookStyle.TRANSFORM, "atransform")
    if ctx.__class__ is not plan.ctx_type:
        arun = plan.compiled.arun
        return plan.compiled.run(ctx) if arun is None else await arun(ctx)
    fn = plan.first
    if fn is not None:
        try:
            result = fn(ctx)
            if result is None:
                if not plan.rest:
                    return ctx._subject_value  # type: ignore[attr-defined]
                for fn in plan.rest:
                    result = fn(ctx)
                    if result is not None:
                        break
                else:
                    return ctx._subject_value  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 -- handed to the point's failure policy
            return plan.compiled.resume(ctx, fn, (RAISED, exc))
        if type(result) is plan.plain:  # a rewrite: the chain goes on without the step generator
            return plan.compiled.rewrite(ctx, fn, result)
        return plan.compiled.resume(ctx, fn, (OK, result))
    return ctx._subject_value  # type: ignore[attr-defined]


@calls_hooks
def notify(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:  # noqa: PLR0911 -- one exit per path of the loop
    """Call every observer of `point`, in order."""
    try:
        plan = self._notify[point]
    except (KeyError, TypeError):
        self._misdirected(point, HookStyle.OBSERVE, "notify")
    if ctx.__class__ is not plan.ctx_type:
        return plan.compiled.run(ctx)
    fn = plan.first
    if fn is not None:
        try:
            if plan.unchecked:  # every hook's code returns only None: nothing to test
                fn(ctx)
                if plan.rest:
                    for fn in plan.rest:
                        fn(ctx)
                return None
            result = fn(ctx)
            if result is None:
                if not plan.rest:
                    return None
                for fn in plan.rest:
                    result = fn(ctx)
                    if result is not None:
                        break
                else:
                    return None
        except Exception as exc:  # noqa: BLE001 -- handed to the point's failure policy
            return plan.compiled.resume(ctx, fn, (RAISED, exc))
        return plan.compiled.resume(ctx, fn, (OK, result))
    return None


@calls_hooks
async def _anotify(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:  # noqa: PLR0911 -- one exit per path of the loop
    """The coroutine `anotify` wraps: what awaiting it runs."""
    try:
        plan = self._notify[point]
    except (KeyError, TypeError):
        self._misdirected(point, HookStyle.OBSERVE, "anotify")
    if ctx.__class__ is not plan.ctx_type:
        arun = plan.compiled.arun
        return plan.compiled.run(ctx) if arun is None else await arun(ctx)
    fn = plan.first
    if fn is not None:
        try:
            if plan.unchecked:  # every hook's code returns only None: nothing to test
                fn(ctx)
                if plan.rest:
                    for fn in plan.rest:
                        fn(ctx)
                return None
            result = fn(ctx)
            if result is None:
                if not plan.rest:
                    return None
                for fn in plan.rest:
                    result = fn(ctx)
                    if result is not None:
                        break
                else:
                    return None
        except Exception as exc:  # noqa: BLE001 -- handed to the point's failure policy
            return plan.compiled.resume(ctx, fn, (RAISED, exc))
        return plan.compiled.resume(ctx, fn, (OK, result))
    return None


# --- resolving a tool call ------------------------------------------------------

_NOT_COPIED: set[tuple[str, str]] = set()  # (tool, key) pairs args_not_copied was logged for
_ATOMS = frozenset({str, int, float, bool, type(None)})  # what `copy.deepcopy` hands back as the very object


def approved_args(tool_name: str, args: Mapping[str, object]) -> dict[str, object]:
    """A deep copy of a call's args, the one its tool gets (DESIGN §3, "What runs is what was approved").

    Nothing a hook, a framework or the caller changes in place afterwards reaches
    the tool. Shared references and cycles are kept. A value `copy.deepcopy`
    refuses (a lock, a file, a client a transform injected) is handed over as
    the very object, logged once per tool and key as ``args_not_copied``. Args
    holding only strings, numbers and ``None`` (a model's usual ones) are
    copied as a dict, which is what `copy.deepcopy` makes of them, at a tenth
    of its cost.
    """
    if _ATOMS.issuperset(map(type, args.values())) and _ATOMS.issuperset(map(type, args)):
        return dict(args)
    import copy  # noqa: PLC0415 -- on the first gated tool call: `import hookreg` stays light

    memo: dict[int, object] = {}
    try:
        return copy.deepcopy(dict(args), memo)
    except Exception:  # noqa: BLE001 -- some value cannot be copied: find which, key by key
        memo = {}
    copied: dict[str, object] = {}
    for key, value in args.items():
        try:
            copied[key] = copy.deepcopy(value, memo)
        except Exception:  # noqa: BLE001 -- handed over as it is, and said so
            memo = {}  # what the failed copy left half built is not reused
            copied[key] = value
            if (tool_name, key) not in _NOT_COPIED:
                _NOT_COPIED.add((tool_name, key))
                log("warning", "args_not_copied", tool=tool_name, key=key)
    return copied


RESOLUTION_POINTS: Final = (HookPoint.TRANSFORM_TOOL_INPUT, HookPoint.PRE_TOOL_CALL_DECIDE, HookPoint.PERMISSION_DENIED)
"""The points `resolve_tool_call` dispatches, in order."""


def resolve_tool_call(self: RegistryCore, ctx: PreToolCallDecideContext, /) -> ToolCallResolution:
    """Rewrite a tool call's arguments, then gate the rewritten call.

    Runs ``transform_tool_input``, then ``pre_tool_call_decide`` on the
    transformed arguments (gates judge what will execute), then on a deny
    (not an ask) ``permission_denied``. The resolution's ``args`` is a deep
    copy of the transformed arguments taken before the first gate ran, so a
    gate changing a nested value in place cannot change what was approved
    (the caller's own mapping when neither point has a hook). A `StopRun`
    raised after a rewrite carries the rewritten arguments in ``effective_args``.
    """
    copies = self.has_hooks(HookPoint.TRANSFORM_TOOL_INPUT) or self.has_hooks(HookPoint.PRE_TOOL_CALL_DECIDE)
    plans = snapshot(self)  # one resolve runs on the hooks it started with (DESIGN §3)
    for point in RESOLUTION_POINTS:
        hook = self._compiled[point].async_hook
        if hook is not None:
            raise async_refusal(point, hook, "aresolve_tool_call")
    token = _RESOLVING.set(_Resolve())
    try:
        args = transform(plans, HookPoint.TRANSFORM_TOOL_INPUT, ctx)
        approved = approved_args(ctx.tool_name, args) if copies else args
        gate_ctx = _gate_context(ctx, args)
        denied = None
        try:
            result = decide(plans, HookPoint.PRE_TOOL_CALL_DECIDE, gate_ctx)
            if result.decision is Decision.DENY:
                denied = _denied_context(gate_ctx, result)
                notify(plans, HookPoint.PERMISSION_DENIED, denied)
        except StopRun as stop:
            _salvage(stop, ctx, args, gate_ctx, denied)
            raise
    finally:
        _RESOLVING.reset(token)
    return ToolCallResolution(args=approved, result=result, rewritten=args is not ctx.args)


async def _aresolve_tool_call(self: RegistryCore, ctx: PreToolCallDecideContext, /) -> ToolCallResolution:
    """The coroutine `aresolve_tool_call` wraps: what awaiting it runs."""
    copies = self.has_hooks(HookPoint.TRANSFORM_TOOL_INPUT) or self.has_hooks(HookPoint.PRE_TOOL_CALL_DECIDE)
    plans = snapshot(self)  # one resolve runs on the hooks it started with (DESIGN §3)
    token = _RESOLVING.set(_Resolve())
    try:
        args = await _atransform(plans, HookPoint.TRANSFORM_TOOL_INPUT, ctx)
        approved = approved_args(ctx.tool_name, args) if copies else args
        gate_ctx = _gate_context(ctx, args)
        denied = None
        try:
            result = await _adecide(plans, HookPoint.PRE_TOOL_CALL_DECIDE, gate_ctx)
            if result.decision is Decision.DENY:
                denied = _denied_context(gate_ctx, result)
                await _anotify(plans, HookPoint.PERMISSION_DENIED, denied)
        except StopRun as stop:
            _salvage(stop, ctx, args, gate_ctx, denied)
            raise
    finally:
        _RESOLVING.reset(token)
    return ToolCallResolution(args=approved, result=result, rewritten=args is not ctx.args)


def _gate_context(ctx: PreToolCallDecideContext, args: Mapping[str, object]) -> PreToolCallDecideContext:
    return ctx if args is ctx.args else replace(ctx, args=args)


def _denied_context(ctx: PreToolCallDecideContext, result: HookResult) -> PermissionDeniedContext:
    return PermissionDeniedContext(
        tool_name=ctx.tool_name,
        args=ctx.args,
        call_id=ctx.call_id,
        reason=result.reason,
        decided_by=result.decided_by,
        run=ctx.run,
    )


def _salvage(stop: StopRun, ctx: PreToolCallDecideContext, args: Mapping[str, object], *made: object) -> None:
    """Keep a rewrite that a stop from the gate or denial dispatch (of context in `made`) interrupted.

    A stop coming out of a dispatch nested inside one of their hooks keeps what that dispatch set.
    """
    if any(marked_by(stop) is mine for mine in made):
        stop.effective_args = None if args is ctx.args else args


# --- what the a-methods return --------------------------------------------------


class DispatchCoroutine(Coroutine[Any, Any, Any]):
    """What an a-method returns: the native coroutine running its dispatch, whose truth value raises.

    A coroutine is truthy, so ``if registry.adecide(...):`` with the ``await``
    forgotten would take the allow branch of a deny (DESIGN §6). Everything but
    ``bool()`` goes to the native coroutine, so this works wherever a coroutine
    does, and never started it warns once (the native coroutine's own warning).
    """

    __slots__ = ("_coro",)

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro

    def __await__(self) -> Generator[Any, None, Any]:
        return self._coro.__await__()

    def send(self, value: Any) -> Any:
        """Start or resume the dispatch (what an event loop calls)."""
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        """Raise `typ` inside the dispatch."""
        # The one-argument form: the three-argument one is deprecated from Python 3.12.
        return self._coro.throw(typ) if val is None and tb is None else self._coro.throw(typ, val, tb)

    def close(self) -> None:
        """End the dispatch; one never started then runs no hook and warns of nothing."""
        self._coro.close()

    def __bool__(self) -> NoReturn:
        method = cast("CoroutineType[Any, Any, Any]", self._coro).__name__  # always an async def's coroutine
        msg = (
            f"Cannot take the truth value of registry.{method}(...): it was not awaited, so no hook ran "
            f"and it would count as true. Write `await registry.{method}(...)` and test its result."
        )
        raise HookTypeError(msg)

    def __repr__(self) -> str:
        return repr(self._coro)


def _named(native: Callable[..., Any], method: str) -> None:
    """Name `native` after the method it serves, as Python's never-awaited warning and `__bool__` show it."""
    native.__name__ = method
    native.__qualname__ = f"HookRegistry.{method}"


_named(_adecide, "adecide")
_named(_atransform, "atransform")
_named(_anotify, "anotify")
_named(_aresolve_tool_call, "aresolve_tool_call")

# Written out rather than made by a decorator: a generic ``*args`` wrapper costs a tuple per call.


def adecide(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:
    """Run the gates of `point` in order; return the first result that is not a pass.

    Async hooks are awaited, with their timeouts; sync hooks are called inline.
    """
    return DispatchCoroutine(_adecide(self, point, ctx))


def atransform(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:
    """Chain the transforms of `point`; return the final subject (the original object when unchanged).

    Async hooks are awaited, with their timeouts; sync hooks are called inline.
    """
    return DispatchCoroutine(_atransform(self, point, ctx))


def anotify(self: RegistryCore, point: HookPoint, ctx: object, /) -> Any:
    """Call every observer of `point`, in order.

    Async hooks are awaited, with their timeouts; sync hooks are called inline.
    """
    return DispatchCoroutine(_anotify(self, point, ctx))


def aresolve_tool_call(self: RegistryCore, ctx: PreToolCallDecideContext, /) -> Any:
    """The async twin of `resolve_tool_call`: awaits async hooks, calls sync ones inline."""
    return DispatchCoroutine(_aresolve_tool_call(self, ctx))


# --- the methods that reach above the registry core (imported on first use) ------


def repr_html(self: RegistryCore) -> str:
    """The table a notebook shows: HookRegistry's ``_repr_html_``."""
    from hookreg._display import registry_html  # noqa: PLC0415 -- on first display: keeps the import light

    return registry_html(repr(self), hook_rows(self))


def describe(self: RegistryCore) -> str:
    """A plain-text table of points to hooks in dispatch order: name, priority, tools, kind, on_error.

    The text twin of the table a notebook shows; included registries are flattened.
    """
    from hookreg._display import describe_registry  # noqa: PLC0415 -- on first use: keeps the import light

    return describe_registry(repr(self), hook_rows(self))


def trace(self: RegistryCore) -> Trace:
    """Record what the dispatches made inside ``with registry.trace() as trace:`` call and decide.

    Records the dispatches made on this registry, or on a registry that
    includes it when the trace opens, by the current thread and the asyncio
    tasks started inside the block. ``str(trace)`` is a table; notebooks show
    one in HTML. Costs nothing while no trace is open.
    """
    from hookreg._trace import Trace  # noqa: PLC0415 -- on first use: keeps the import light

    return Trace(self)


def use_policy(
    self: RegistryCore,
    *rules: Rule | Policy,
    default: Literal["allow", "ask", "deny"] | None = None,
    name: str = "policy",
    priority: int = 0,
) -> Registration:
    """Compile tool rules (``hookreg.policy.allow/deny/ask``) into one ``pre_tool_call_decide`` gate.

    A rule naming an exact tool beats a glob; at one level deny beats ask
    beats allow; among equals the first rule wins. A tool no rule matches
    gets `default` (``"allow"`` when omitted). Instead of rules, pass one
    built `Policy` (such as ``hookreg.policy.from_claude_permissions(...)``),
    which keeps its own default. Using a policy under the same `name` again
    replaces it.

    Returns:
        The gate's Registration.
    """
    from hookreg.policy import Policy  # noqa: PLC0415 -- on first use: keeps the import light

    built = [rule for rule in rules if isinstance(rule, Policy)]
    if built and (len(rules) > 1 or default is not None):
        msg = (
            f"Cannot use {built[0]!r} with other rules or default=: a built Policy carries its own. "
            "Pass it alone, or pass the rules and default= instead."
        )
        raise HookTypeError(msg)
    gate = built[0] if built else Policy(*cast("tuple[Rule, ...]", rules), default=default or "allow")
    return self._register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, name=name, priority=priority, on_error="deny")


dispatch_module(globals())
