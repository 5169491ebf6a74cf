"""RegistryCore: a registry's own hooks, its inclusions, the lock, and recompiling plans; a slot tracing fills."""

from __future__ import annotations

import itertools
from _weakref import ref  # weakref's own ref, loaded with the interpreter: no import of weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast, final

from hookreg._errors import HookTypeError, IncludeError
from hookreg._log import debug_enabled, log
from hookreg._plan import CompiledPoint, Plan, no_hooks
from hookreg._points import HookPoint, HookStyle
from hookreg._registration import (
    LOCK,
    Inclusion,
    Registration,
    as_point,
    detach,
    predecessor,
    quoted_name,
    replace_handle,
    validate,
)

if TYPE_CHECKING:
    from hookreg._plan import Detour

    Wrapper = Callable[["RegistryCore", CompiledPoint, Detour], Detour]
    """What fills the wrapper slot: given a registry, one point's `CompiledPoint` and the runner it wraps
    (the `CompiledPoint` itself, or the previous wrapper's), the runner every dispatch of that point goes to."""

__all__ = [
    "RegistryCore",
    "add_wrapper",
    "awaits",
    "hook_rows",
    "including",
    "listens",
    "reachable",
    "remove_wrapper",
    "snapshot",
]


_Core = TypeVar("_Core", bound="RegistryCore")  # what `include` took: its Inclusion gives back that very class


class RegistryCore:
    """Everything of HookRegistry but its typed per-point surface."""

    def __init__(self) -> None:
        self._own: dict[HookPoint, list[Registration]] = {point: [] for point in HookPoint}
        self._inclusions: list[Inclusion[Any]] = []
        self._parents: list[ref[RegistryCore]] = []  # the registries that include this one, weakly held
        self._compiled: dict[HookPoint, CompiledPoint] = {}
        self._has: dict[HookPoint, bool] = {}
        self._heard: set[HookPoint] = set()  # the points with a hook: whether any of several has one, in one call
        self._awaiting: set[HookPoint] = set()  # the points whose a-method dispatch awaits anything
        self._count = 0  # hooks at every point, included ones too: `len` in one read (adapters ask it per run)
        # Per-style tables, so that a dispatch is one dict lookup and a point of
        # another style is simply missing. Value strings find their point too:
        # a HookPoint hashes and compares like its value.
        self._plans: dict[HookStyle, dict[HookPoint, Plan]] = {style: {} for style in HookStyle}
        self._decide = self._plans[HookStyle.DECIDE]
        self._transform = self._plans[HookStyle.TRANSFORM]
        self._notify = self._plans[HookStyle.OBSERVE]
        # The wrapper slot (see `add_wrapper`): each installed wrapper with how many times it was installed.
        self._wrappers: dict[Wrapper, int] = {}
        for point in HookPoint:
            self._install(point, no_hooks(point))

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
        point = as_point(point, f"register {quoted_name(fn)}")
        reg = validate(self, point, fn, name, priority, tools, on_error, timeout)
        with LOCK:
            hooks = self._own[point]
            old = predecessor(hooks, fn, name, stacklevel + 1)
            if old is not None:
                replace_handle(old, reg)
                hooks[hooks.index(old)] = reg
            else:
                hooks.append(reg)
            self._changed(point)
        if old is not None:
            log("info", "hook_replaced", point=point.value, hook=reg.name)
        elif debug_enabled():
            log("debug", "hook_registered", point=point.value, hook=reg.name)
        return reg

    def _drop(self, reg: Registration) -> None:
        self._own[reg.point].remove(reg)
        detach(reg)
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
        with LOCK:
            for p in points:
                for reg in list(self._own[p]):
                    if (reg.name if by_name else reg.callback) == fn_or_name:
                        self._drop(reg)
                        removed += 1
        return removed

    def clear(self, point: HookPoint | str | None = None) -> None:
        """Remove this registry's own hooks at `point`; without a point, all of them and every inclusion."""
        points = list(HookPoint) if point is None else [as_point(point, "clear")]
        with LOCK:
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

    # --- inclusion -----------------------------------------------------------

    def include(self, other: _Core, /, *, priority: int = 0) -> Inclusion[_Core]:
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
        with LOCK:
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
            other._hold_parents([*other._live_parents(), self])
            for point in HookPoint:
                if other._has[point]:
                    self._changed(point)
        return inclusion

    def _exclude(self, inclusion: Inclusion[Any]) -> None:
        self._inclusions.remove(inclusion)
        detach(inclusion)
        other = inclusion.registry
        other._hold_parents(parent for parent in other._live_parents() if parent is not self)
        for point in HookPoint:
            if other._has[point]:
                self._changed(point)

    def _reachable(self) -> set[RegistryCore]:
        found = {self}
        for inclusion in self._inclusions:
            found |= inclusion.registry._reachable()
        return found

    def _live_parents(self) -> list[RegistryCore]:
        return [parent for held in self._parents if (parent := held()) is not None]

    def _hold_parents(self, parents: Iterable[RegistryCore]) -> None:
        self._parents = [ref(parent) for parent in parents]

    def _ancestors(self) -> set[RegistryCore]:
        found = {self}
        for parent in self._live_parents():
            found |= parent._ancestors()
        return found

    # --- compiling ------------------------------------------------------------

    def _compile_all(self) -> None:
        for point in HookPoint:
            self._compile(point)

    def _changed(self, point: HookPoint) -> None:
        """Recompile `point` here and in every registry that includes this one."""
        self._compile(point)
        for parent in self._live_parents():
            parent._changed(point)

    def _compile(self, point: HookPoint) -> None:
        items: list[tuple[int, int, tuple[Registration, ...]]] = [
            (-reg.priority, reg._order, (reg,)) for reg in self._own[point]
        ]
        items += [(-inc.priority, inc._order, inc.registry._compiled[point].hooks) for inc in self._inclusions]
        items.sort()  # each order is unique: two groups are never compared
        hooks = tuple(itertools.chain.from_iterable(group for _, _, group in items))
        self._install(point, CompiledPoint(point, hooks) if hooks else no_hooks(point))

    def _install(self, point: HookPoint, compiled: CompiledPoint) -> None:
        """Make `compiled` what dispatches of `point` go to, through the wrappers in the slot."""
        before = self._compiled.get(point)
        self._count += len(compiled.hooks) - (0 if before is None else len(before.hooks))
        self._compiled[point] = compiled
        plan = compiled.plan
        runner: Detour = compiled
        for wrapper in self._wrappers:  # each wraps the one before; the inline loop stays untouched
            runner = wrapper(self, compiled, runner)
            plan = compiled.plan.detour(runner)
        self._plans[point.style][point] = plan
        self._has[point] = heard = bool(compiled.hooks)
        (self._heard.add if heard else self._heard.discard)(point)
        (self._awaiting.add if runner.arun is not None else self._awaiting.discard)(point)

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
        return self._compiled[as_point(point, "list callbacks")].hooks

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        counts = ", ".join(f"{p.value}={len(r.hooks)}" for p, r in self._compiled.items() if r.hooks)
        return f"{type(self).__name__}({counts})"


# --- the wrapper slot: what tracing (and OpenTelemetry) fill ----------------------


def add_wrapper(registry: RegistryCore, wrapper: Wrapper) -> None:
    """Send every dispatch on `registry` through `wrapper`, until as many `remove_wrapper` calls.

    A registry with no wrapper runs the inline loop and pays nothing for the
    slot; one with a wrapper recompiles each point into a plan that never runs
    inline and hands the dispatch to ``wrapper(registry, compiled, inner)``, which
    returns the runner to use: it calls `inner` (the point's `CompiledPoint`, or the
    wrapper installed before it) to dispatch unchanged, or drives
    ``compiled.steps`` itself with its own call (``hookreg._plan.run_steps``), which
    bypasses the wrappers inside it. The same wrapper installed again is counted,
    not stacked.
    """
    with LOCK:
        wrappers = registry._wrappers
        wrappers[wrapper] = wrappers.get(wrapper, 0) + 1
        if wrappers[wrapper] == 1:
            registry._compile_all()


def remove_wrapper(registry: RegistryCore, wrapper: Wrapper) -> None:
    """Undo one `add_wrapper` of `wrapper` on `registry`; the last one puts the inline plans back."""
    with LOCK:
        wrappers = registry._wrappers
        wrappers[wrapper] -= 1
        if not wrappers[wrapper]:
            del wrappers[wrapper]
            registry._compile_all()


def including(registry: RegistryCore) -> frozenset[RegistryCore]:
    """`registry` and every registry that includes it, directly or not: those whose dispatches run its hooks."""
    with LOCK:
        return frozenset(registry._ancestors())


def reachable(registry: RegistryCore) -> frozenset[RegistryCore]:
    """`registry` and every registry it includes, directly or not: those whose hooks its dispatches run."""
    with LOCK:
        return frozenset(registry._reachable())


def hook_rows(registry: RegistryCore) -> list[tuple[HookPoint, Registration, str | None]]:
    """One row per hook a dispatch calls, points in HookPoint order and hooks in dispatch order.

    Each row is ``(point, registration, placed)``: `placed` is the priority of the
    inclusion that brings an included hook in (where it sits), or ``None`` for
    the registry's own hooks.
    """
    placed: dict[object, int] = {
        reachable: inclusion.priority
        for inclusion in registry._inclusions
        for reachable in inclusion.registry._reachable()
    }
    return [
        (point, reg, None if reg._registry in (registry, None) else str(placed[reg._registry]))
        for point, compiled in registry._compiled.items()
        for reg in compiled.hooks
    ]


def listens(registry: RegistryCore, points: Iterable[HookPoint]) -> bool:
    """Whether a dispatch of any of `points` would call a hook: `has_hooks` of several points in one call."""
    return not registry._heard.isdisjoint(points)


def awaits(registry: RegistryCore, points: Iterable[HookPoint]) -> bool:
    """Whether an a-method dispatch of any of `points` awaits anything (an async or dual-path hook, a wrapper).

    When none does, the sync method does exactly what the a-method would, without a coroutine.
    """
    return not registry._awaiting.isdisjoint(points)


def snapshot(registry: RegistryCore) -> RegistryCore:
    """`registry`'s plans as they are now, to dispatch on whatever hooks change later.

    What a dispatch function takes as its registry when several dispatches must
    run on one set of hooks (a resolve's three points, DESIGN §3): it reads
    nothing but the per-style plan tables, so a `_Snapshot` holding copies of theirs stands in.
    """
    return cast("RegistryCore", _Snapshot(registry))


@final
class _Snapshot:
    """The plan tables of a `snapshot`: copies of the per-style tables a dispatch function reads, and nothing else."""

    __slots__ = ("_decide", "_notify", "_transform")

    def __init__(self, registry: RegistryCore) -> None:
        self._decide = dict(registry._decide)
        self._transform = dict(registry._transform)
        self._notify = dict(registry._notify)
