"""The registry core: registration, handles, inclusion and introspection."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn, cast, final

from hookreg._context import PermissionDeniedContext, PreToolCallDecideContext
from hookreg._dispatch import Plan, Runners, async_refusal, marked_by
from hookreg._errors import (
    DuplicateHookWarning,
    HookSignatureError,
    HookTypeError,
    HookValueError,
    IncludeError,
    StopRun,
)
from hookreg._log import debug_enabled, log
from hookreg._patterns import parse_tool_pattern, tool_matcher
from hookreg._points import HookPoint, HookStyle
from hookreg._results import Decision, HookResult, ToolCallResolution

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    from hookreg._surface import HookRegistry
    from hookreg._trace import Trace
    from hookreg.policy import Policy, Rule

__all__ = ["Inclusion", "Registration", "RegistryCore", "as_point"]

# One lock for every registry: an inclusion links two registries' plans, and
# registration is rare enough that one lock costs nothing.
_LOCK: Final = threading.RLock()
_ORDER: Final = itertools.count()

_POLICIES: Final = {
    HookStyle.DECIDE: ("deny", "raise", "ignore"),
    HookStyle.TRANSFORM: ("raise", "ignore"),
    HookStyle.OBSERVE: ("ignore", "raise"),
}


def as_point(point: object, doing: str) -> HookPoint:
    """Return `point` as a HookPoint, or raise naming what was being done."""
    if isinstance(point, HookPoint):
        return point
    if isinstance(point, str):
        try:
            return HookPoint(point)
        except ValueError:
            import difflib  # noqa: PLC0415 -- only on this error path

            values = [p.value for p in HookPoint]
            close = [v for v in values if point and point in v] or difflib.get_close_matches(point, values)
            hint = f"Did you mean {' or '.join(map(repr, close[:3]))}?" if close else "See `list(HookPoint)`."
            msg = f"Cannot {doing}: {point!r} is not a hook point. {hint}"
            raise HookValueError(msg, point=point) from None
    msg = f"Cannot {doing}: the point must be a HookPoint or its value string, not {type(point).__name__}."
    raise HookTypeError(msg)


@final
class Registration:
    """A registered hook; also a handle to remove it.

    Use it as a context manager to remove the hook on exit. Its attributes are
    read-only: to change an option, register again with the same `name`.

    Attributes:
        point: Where the hook is registered.
        name: Its name (by default the callable's qualified name; not unique).
        callback: The callable itself.
        priority: Higher runs first.
        tools: The ``tools=`` patterns, or ``None`` for every tool.
        on_error: The failure policy.
        timeout: Seconds an async hook may take, or ``None``.
        is_async: Whether the callable is async. A dual-path hook (sync
            ``__call__`` plus ``async def acall``) is not: a sync dispatch calls it.
    """

    __slots__ = (
        "_async_path",
        "_matcher",
        "_order",
        "_registry",
        "callback",
        "is_async",
        "name",
        "on_error",
        "point",
        "priority",
        "timeout",
        "tools",
    )

    point: HookPoint
    name: str
    callback: Callable[[Any], object]
    priority: int
    tools: tuple[str, ...] | None
    on_error: str
    timeout: float | None
    is_async: bool
    _async_path: Callable[[Any], Any] | None  # what the async surface awaits: see _async_path_of
    _matcher: Callable[[Any], bool] | None
    _order: int
    _registry: RegistryCore | None

    def __init__(self, **values: object) -> None:
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> None:
        msg = f"Cannot set {name!r} on {self!r}: a Registration is read-only. Register again with the same name=."
        raise AttributeError(msg)

    def remove(self) -> bool:
        """Remove the hook; ``False`` when it was already gone (removed, replaced or cleared)."""
        with _LOCK:
            registry = self._registry
            if registry is None:
                return False
            registry._drop(self)
            return True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<Registration {self.point.value} {self.name!r} priority={self.priority}>"


@final
class Inclusion:
    """A live inclusion of one registry into another; also a handle to undo it.

    Attributes:
        registry: The included registry.
        priority: Its position among the including registry's hooks.
    """

    __slots__ = ("_order", "_parent", "priority", "registry")

    def __init__(self, parent: RegistryCore, registry: HookRegistry, priority: int) -> None:
        self._parent: RegistryCore | None = parent
        self._order = next(_ORDER)
        self.registry: HookRegistry = registry
        self.priority: int = priority

    def remove(self) -> bool:
        """Undo the inclusion; ``False`` when it was already undone or cleared."""
        with _LOCK:
            parent = self._parent
            if parent is None:
                return False
            parent._exclude(self)
            return True

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<Inclusion of {self.registry!r} priority={self.priority}>"


_MAX_TIMEOUT: Final = 1e9  # seconds (about 31 years): asyncio cannot schedule much further
_RESOLUTION_POINTS: Final = (
    HookPoint.TRANSFORM_TOOL_INPUT,
    HookPoint.PRE_TOOL_CALL_DECIDE,
    HookPoint.PERMISSION_DENIED,
)


def _gate_context(ctx: PreToolCallDecideContext, args: Mapping[str, object]) -> PreToolCallDecideContext:
    return ctx if args is ctx.args else dataclasses.replace(ctx, args=args)


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


def _name_of(fn: object) -> str:
    target = fn
    while isinstance(target, functools.partial):
        target = target.func
    name = getattr(target, "__qualname__", None)
    if not isinstance(name, str):
        name = type(target).__qualname__
    return f"partial({name})" if target is not fn else name


def _label(fn: object) -> str:
    """How messages name a hook: its name when callable, else its repr."""
    return repr(_name_of(fn)) if callable(fn) else repr(fn)


def _is_async(fn: object) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn) or isinstance(fn, type):
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)


def _async_path_of(fn: Callable[..., object], is_async: bool) -> Callable[..., Any] | None:
    """What the async surface awaits: `fn` itself when async, a dual-path hook's `acall`, else ``None`` (sync)."""
    if is_async:
        return fn
    acall = getattr(fn, "acall", None)
    return acall if acall is not None and _is_async(acall) else None


def _takes_one_argument(fn: Callable[..., object]) -> bool:
    """Whether `fn` can be called with one positional argument (builtins without a signature are trusted)."""
    if type(fn) is types.FunctionType and not hasattr(fn, "__wrapped__"):
        # The common case, read off the code object: inspect.signature costs ~15 us.
        code = fn.__code__
        required = code.co_argcount - len(fn.__defaults__ or ())
        accepts = code.co_argcount >= 1 or bool(code.co_flags & inspect.CO_VARARGS)
        return required <= 1 and accepts and code.co_kwonlyargcount == len(fn.__kwdefaults__ or ())
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    try:
        signature.bind(None)
    except TypeError:
        return False
    return True


def _same_callable(a: object, b: object) -> bool:
    """Whether `a` and `b` are the very same callable (a bound method: the same function of the same object)."""
    if a is b:
        return True
    return (
        isinstance(a, types.MethodType)
        and isinstance(b, types.MethodType)
        and a.__self__ is b.__self__
        and a.__func__ is b.__func__
    )


def _rerun_key(fn: object) -> tuple[str, str] | None:
    """The ``(__module__, __qualname__)`` by which a re-run notebook cell's function replaces its predecessor.

    Only a plain function defined at module level has one: a lambda, a closure
    (a factory makes many distinct hooks, whatever their names), a nested
    function, a partial, a bound method or a callable object gives ``None`` and
    never replaces implicitly. A function decorated by a wrapper is a closure.
    """
    if not isinstance(fn, types.FunctionType) or fn.__closure__ is not None:
        return None
    module, qualname = fn.__module__, fn.__qualname__
    if not isinstance(module, str) or "<" in qualname:  # <locals>, <lambda>
        return None
    return module, qualname


class RegistryCore:
    """Everything of HookRegistry but its typed per-point surface."""

    def __init__(self) -> None:
        self._own: dict[HookPoint, list[Registration]] = {point: [] for point in HookPoint}
        self._inclusions: list[Inclusion] = []
        self._parents: weakref.WeakSet[RegistryCore] = weakref.WeakSet()
        self._runners: dict[HookPoint, Runners] = {}
        self._has: dict[HookPoint, bool] = {}
        # Per-style tables, so that a dispatch is one dict lookup and a point of
        # another style is simply missing. Value strings find their point too:
        # a HookPoint hashes and compares like its value.
        self._plans: dict[HookStyle, dict[HookPoint, Plan]] = {style: {} for style in HookStyle}
        self._decide = self._plans[HookStyle.DECIDE]
        self._transform = self._plans[HookStyle.TRANSFORM]
        self._notify = self._plans[HookStyle.OBSERVE]
        self._tracing = 0  # open traces that watch this registry: see hookreg/_trace.py
        for point in HookPoint:
            self._compile(point)

    # --- registration ---------------------------------------------------------

    def _register(  # noqa: PLR0913 -- the documented options
        self,
        point: object,
        fn: object,
        *,
        name: str | None = None,
        priority: int = 0,
        tools: str | Iterable[str] | None = None,
        on_error: str | None = None,
        timeout: float | None = None,
        stacklevel: int = 3,
    ) -> Registration:
        point = as_point(point, f"register {_label(fn)}")
        reg = self._validate(point, fn, name, priority, tools, on_error, timeout)
        with _LOCK:
            hooks = self._own[point]
            old = self._predecessor(hooks, fn, name, stacklevel + 1)
            if old is not None:
                object.__setattr__(reg, "_order", old._order)
                object.__setattr__(old, "_registry", None)
                hooks[hooks.index(old)] = reg
            else:
                hooks.append(reg)
            self._changed(point)
        if old is not None:
            log("info", "hook_replaced", point=point.value, hook=reg.name)
        elif debug_enabled():
            log("debug", "hook_registered", point=point.value, hook=reg.name)
        return reg

    @staticmethod
    def _predecessor(hooks: list[Registration], fn: object, name: str | None, stacklevel: int) -> Registration | None:
        """The registration that registering `fn` as `name` replaces, if any (DESIGN §4, Replacement).

        An explicit `name` replaces the earliest hook of that name. Without one,
        a module-level function replaces the earliest hook whose callback is
        another function of the same ``__module__`` and ``__qualname__``: the
        same cell run again, edited or not. The very same callable registered
        again is not replaced but registered twice, with a warning.
        """
        if name is not None:
            return next((r for r in hooks if r.name == name), None)
        same = next((r for r in hooks if _same_callable(r.callback, fn)), None)
        if same is not None:
            msg = (
                f"{same.name!r} is already registered at {same.point}; registering the same callable again "
                f"runs it twice. Pass name={same.name!r} to replace it instead, or a distinct name= to keep both."
            )
            warnings.warn(msg, DuplicateHookWarning, stacklevel=stacklevel)
            return None
        key = _rerun_key(fn)
        if key is None:
            return None
        return next((r for r in hooks if _rerun_key(r.callback) == key), None)

    def _validate(  # noqa: PLR0912, PLR0913, PLR0917 -- one check per option, each with its message
        self,
        point: HookPoint,
        fn: object,
        name: str | None,
        priority: int,
        tools: str | Iterable[str] | None,
        on_error: str | None,
        timeout: float | None,
    ) -> Registration:
        what = f"register {_label(fn)} at {point}"

        def type_error(msg: str) -> HookTypeError:
            return HookTypeError(f"Cannot {what}: {msg}", point=point, callback=fn)

        def value_error(msg: str) -> HookValueError:
            return HookValueError(f"Cannot {what}: {msg}", point=point, callback=fn)

        if not callable(fn):
            msg = f"Cannot {what}: it is not callable. Pass a function taking one {point.context.__name__}."
            raise HookSignatureError(msg, point=point, callback=fn)
        if not _takes_one_argument(fn):
            msg = (
                f"Cannot {what}: it must accept exactly one positional argument, the "
                f"{point.context.__name__}, but its signature is {inspect.signature(fn)}. "
                "Read what you need from that one context."
            )
            raise HookSignatureError(msg, point=point, callback=fn)
        if name is not None and not isinstance(name, str):
            raise type_error(f"name= must be a str, not {type(name).__name__}.")
        if name is not None and not name.strip():
            raise value_error(
                f"name={name!r} is empty or blank. Give a name with a visible character, or omit name= to use "
                "the function's name."
            )
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise type_error(f"priority= must be an int, not {type(priority).__name__}.")
        policies = _POLICIES[point.style]
        if on_error is not None and not isinstance(on_error, str):
            raise type_error(f"on_error= must be one of {policies}, not {type(on_error).__name__}.")
        if on_error is not None and on_error not in policies:
            raise value_error(f"on_error={on_error!r} does not apply to {point.style} hooks. Use one of {policies}.")
        patterns = matcher = None
        if tools is not None:
            if not point.is_tool_scoped:
                raise value_error(
                    f"tools= applies only to tool-scoped points; {point} has no tool_name. Remove tools=."
                )
            if not isinstance(tools, str | Iterable):
                raise type_error(f"tools= must be a str or an iterable of str, not {type(tools).__name__}.")
            patterns = (tools,) if isinstance(tools, str) else tuple(tools)
            wrong = next((p for p in patterns if not isinstance(p, str)), None)
            if wrong is not None:
                raise type_error(f"tools= must hold only str tool names or globs, not {type(wrong).__name__}.")
            if not patterns or not all(patterns):
                raise value_error("tools= must be non-empty tool names or globs. Omit tools= to match every tool.")
            parsed = tuple(parse_tool_pattern(p, value_error) for p in patterns)
            with_args = next((p for p in parsed if p.key is not None), None)
            if with_args is not None and not any(f.name == "args" for f in dataclasses.fields(point.context)):
                raise value_error(
                    f"tools={with_args.text!r} tests an argument, but {point.context.__name__} carries no args, "
                    f"so the hook would never run. Use the bare tool name {with_args.name!r}."
                )
            matcher = tool_matcher(parsed)
        is_async = _is_async(fn)
        async_path = _async_path_of(fn, is_async)
        if async_path is not None and async_path is not fn and not _takes_one_argument(async_path):
            msg = (
                f"Cannot {what}: its async path `acall` must accept exactly one positional argument, the "
                f"{point.context.__name__}, but its signature is {inspect.signature(async_path)}."
            )
            raise HookSignatureError(msg, point=point, callback=fn)
        if timeout is not None:
            if not isinstance(timeout, int | float) or isinstance(timeout, bool):
                raise type_error(f"timeout= must be a number of seconds, not {type(timeout).__name__}.")
            if async_path is None:
                raise value_error(
                    "timeout= applies only to async callables (an async def, or an object with an "
                    "`async def acall` beside its __call__). Make the hook async or drop timeout=."
                )
            if not 0 < timeout <= _MAX_TIMEOUT:  # compared exactly: no float conversion to overflow
                shown = repr(timeout) if isinstance(timeout, float) or abs(timeout) <= _MAX_TIMEOUT else "a huge int"
                raise value_error(f"timeout={shown} must be a positive, finite number of seconds, at most 1e9.")
        return Registration(
            point=point,
            name=name if name is not None else _name_of(fn),
            callback=fn,
            priority=priority,
            tools=patterns,
            on_error=on_error if on_error is not None else policies[0],
            timeout=float(timeout) if timeout is not None else None,
            is_async=is_async,
            _async_path=async_path,
            _matcher=matcher,
            _order=next(_ORDER),
            _registry=self,
        )

    def _drop(self, reg: Registration) -> None:
        self._own[reg.point].remove(reg)
        object.__setattr__(reg, "_registry", None)
        self._changed(reg.point)
        if debug_enabled():
            log("debug", "hook_removed", point=reg.point.value, hook=reg.name)

    def unregister(self, fn_or_name: object, /, point: HookPoint | str | None = None) -> int:
        """Remove this registry's own hooks registered as `fn_or_name`.

        Args:
            fn_or_name: A hook name, or a callable matched with ``==`` (so
                bound methods work).
            point: Only at this point; by default at every point.

        Returns:
            How many hooks were removed.
        """
        points = list(HookPoint) if point is None else [as_point(point, f"unregister {fn_or_name!r}")]
        by_name = isinstance(fn_or_name, str)
        removed = 0
        with _LOCK:
            for p in points:
                for reg in list(self._own[p]):
                    if (reg.name if by_name else reg.callback) == fn_or_name:
                        self._drop(reg)
                        removed += 1
        return removed

    def clear(self, point: HookPoint | str | None = None) -> None:
        """Remove this registry's own hooks at `point`; without a point, all of them and every inclusion."""
        points = list(HookPoint) if point is None else [as_point(point, "clear")]
        with _LOCK:
            for p in points:
                for reg in list(self._own[p]):
                    self._drop(reg)
            if point is None:
                for inclusion in list(self._inclusions):
                    self._exclude(inclusion)

    def _decorate(self, point: HookPoint, fn: object, options: dict[str, Any]) -> Any:
        """Register `fn` now (bare decorator), or return a decorator that will."""
        unknown = set(options) - {"name", "priority", "tools", "on_error", "timeout"}
        if unknown:
            msg = (
                f"Cannot make a {point} decorator: unknown option(s) {sorted(unknown)}. "
                "Use name, priority, tools, on_error, timeout."
            )
            raise HookTypeError(msg, point=point)
        if fn is not None:
            self._register(point, fn, **options, stacklevel=4)
            return fn

        def decorator(fn: object) -> object:
            self._register(point, fn, **options, stacklevel=3)
            return fn

        return decorator

    def _misdirected(self, point: object, style: HookStyle, method: str) -> NoReturn:
        """Raise the error for a dispatch that found no runner: a bad point, or one of another style."""
        hook_point = as_point(point, f"{method} {point!r}")
        right = hook_point.style.amethod if method.startswith("a") else hook_point.style.method
        msg = (
            f"Cannot {method} {hook_point}: its style is {hook_point.style}, not {style}. "
            f"Call registry.{right}(...) instead."
        )
        raise HookTypeError(msg, point=hook_point)

    # --- resolving a tool call ---------------------------------------------------

    def resolve_tool_call(self, ctx: PreToolCallDecideContext, /) -> ToolCallResolution:
        """Rewrite a tool call's arguments, then gate the rewritten call.

        Runs ``transform_tool_input``, then ``pre_tool_call_decide`` on the
        transformed arguments (gates judge what will execute), then on a deny
        (not an ask) ``permission_denied``. A `StopRun` raised after a rewrite
        carries the rewritten arguments in ``effective_args``.
        """
        self._refuse_sync_resolution()
        registry = cast("HookRegistry", self)
        args = registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, ctx)
        gate_ctx = _gate_context(ctx, args)
        denied = None
        try:
            result = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, gate_ctx)
            if result.decision is Decision.DENY:
                denied = _denied_context(gate_ctx, result)
                registry.notify(HookPoint.PERMISSION_DENIED, denied)
        except StopRun as stop:
            _salvage(stop, ctx, args, gate_ctx, denied)
            raise
        return ToolCallResolution(args=args, result=result, rewritten=args is not ctx.args)

    async def aresolve_tool_call(self, ctx: PreToolCallDecideContext, /) -> ToolCallResolution:
        """The async twin of `resolve_tool_call`: awaits async hooks, calls sync ones inline."""
        registry = cast("HookRegistry", self)
        args = await registry.atransform(HookPoint.TRANSFORM_TOOL_INPUT, ctx)
        gate_ctx = _gate_context(ctx, args)
        denied = None
        try:
            result = await registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, gate_ctx)
            if result.decision is Decision.DENY:
                denied = _denied_context(gate_ctx, result)
                await registry.anotify(HookPoint.PERMISSION_DENIED, denied)
        except StopRun as stop:
            _salvage(stop, ctx, args, gate_ctx, denied)
            raise
        return ToolCallResolution(args=args, result=result, rewritten=args is not ctx.args)

    def _refuse_sync_resolution(self) -> None:
        for point in _RESOLUTION_POINTS:
            reg = self._runners[point].async_hook
            if reg is not None:
                raise async_refusal(point, reg, "aresolve_tool_call")

    # --- inclusion -----------------------------------------------------------

    def include(self, other: HookRegistry, /, *, priority: int = 0) -> Inclusion:
        """Run `other`'s hooks here, at `priority`, live: later changes to `other` show at once.

        Raises:
            IncludeError: `other` is this registry, would close a cycle, or
                would be reachable twice from here or from a registry that
                includes this one.
        """
        if not isinstance(other, RegistryCore):
            msg = f"Cannot include {other!r}: only a HookRegistry can be included."
            raise HookTypeError(msg)
        if not isinstance(priority, int) or isinstance(priority, bool):
            msg = f"Cannot include {other!r}: priority= must be an int, not {type(priority).__name__}."
            raise HookTypeError(msg)
        with _LOCK:
            if other is self:
                msg = f"Cannot include {self!r} into itself: its hooks would run forever."
                raise IncludeError(msg)
            below = other._reachable()
            if self in below:
                msg = f"Cannot include {other!r}: it already includes this registry, so the inclusion would be a cycle."
                raise IncludeError(msg)
            for above in self._ancestors():
                if above._reachable() & below:
                    msg = (
                        f"Cannot include {other!r}: a registry it reaches is already reachable from {above!r}, "
                        "so its hooks would run twice. Include it in one place only."
                    )
                    raise IncludeError(msg)
            inclusion = Inclusion(self, other, priority)
            self._inclusions.append(inclusion)
            other._parents.add(self)
            for point in HookPoint:
                if other._has[point]:
                    self._changed(point)
        return inclusion

    def _exclude(self, inclusion: Inclusion) -> None:
        self._inclusions.remove(inclusion)
        inclusion._parent = None
        other = inclusion.registry
        other._parents.discard(self)
        for point in HookPoint:
            if other._has[point]:
                self._changed(point)

    def _reachable(self) -> set[RegistryCore]:
        found = {self}
        for inclusion in self._inclusions:
            found |= inclusion.registry._reachable()
        return found

    def _ancestors(self) -> set[RegistryCore]:
        found = {self}
        for parent in self._parents:
            found |= parent._ancestors()
        return found

    # --- compiling ------------------------------------------------------------

    def _changed(self, point: HookPoint) -> None:
        """Recompile `point` here and in every registry that includes this one."""
        self._compile(point)
        for parent in self._parents:
            parent._changed(point)

    def _compile(self, point: HookPoint) -> None:
        items: list[tuple[int, int, tuple[Registration, ...]]] = [
            (-reg.priority, reg._order, (reg,)) for reg in self._own[point]
        ]
        items += [(-inc.priority, inc._order, inc.registry._runners[point].hooks) for inc in self._inclusions]
        items.sort(key=lambda item: item[:2])
        runners = Runners(point, tuple(itertools.chain.from_iterable(hooks for _, _, hooks in items)))
        style = point.style
        self._runners[point] = runners
        plan = runners.plan
        if self._tracing:  # route every dispatch through the trace recorder; the inline loop stays untouched
            from hookreg._trace import TracedRunners  # noqa: PLC0415 -- only while tracing: keeps the import light

            plan = TracedRunners(self, runners).plan
        self._plans[style][point] = plan
        self._has[point] = bool(runners.hooks)

    # --- introspection --------------------------------------------------------

    def has_hooks(self, point: HookPoint | str, /) -> bool:
        """Whether a dispatch of `point` would call any hook (included registries count).

        As cheap as a dict read, so a harness can skip building contexts nobody reads.
        """
        try:
            return self._has[point]  # type: ignore[index]  # value strings hash and compare like their point
        except (KeyError, TypeError):
            return self._has[as_point(point, "check for hooks")]

    def callbacks(self, point: HookPoint | str, /) -> tuple[Registration, ...]:
        """The hooks a dispatch of `point` calls, in order, with included registries flattened."""
        return self._runners[as_point(point, "list callbacks")].hooks

    def __len__(self) -> int:
        return sum(len(runners.hooks) for runners in self._runners.values())

    def __repr__(self) -> str:
        counts = ", ".join(f"{p.value}={len(r.hooks)}" for p, r in self._runners.items() if r.hooks)
        return f"{type(self).__name__}({counts})"

    def _repr_html_(self) -> str:
        from hookreg._display import registry_html  # noqa: PLC0415 -- on first display: keeps the import light

        return registry_html(self)

    def describe(self) -> str:
        """A plain-text table of points to hooks in dispatch order: name, priority, tools, kind, on_error.

        The text twin of the table a notebook shows; included registries are flattened.
        """
        from hookreg._display import describe_registry  # noqa: PLC0415 -- on first use: keeps the import light

        return describe_registry(self)

    def trace(self) -> Trace:
        """Record what the dispatches made inside ``with registry.trace() as trace:`` call and decide.

        Records the dispatches made on this registry, or on a registry that
        includes it when the trace opens, by the current thread and the asyncio
        tasks started inside the block. ``str(trace)`` is a table; notebooks show
        one in HTML. Costs nothing while no trace is open.
        """
        from hookreg._trace import Trace  # noqa: PLC0415 -- on first use: keeps the import light

        return Trace(self)

    def use_policy(
        self,
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
