"""RegistryCore: a registry's own hooks, its inclusions, the lock, and recompiling plans; a slot tracing fills."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal, NoReturn, cast

from hookreg._errors import HookTypeError, IncludeError
from hookreg._log import debug_enabled, log
from hookreg._plan import Plan, Runners
from hookreg._points import HookPoint, HookStyle
from hookreg._registration import LOCK, Inclusion, Registration, as_point, label, predecessor, validate

if TYPE_CHECKING:
    from hookreg._surface import HookRegistry
    from hookreg._trace import Trace
    from hookreg.policy import Policy, Rule

__all__ = ["RegistryCore"]


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
        point = as_point(point, f"register {label(fn)}")
        reg = validate(self, point, fn, name, priority, tools, on_error, timeout)
        with LOCK:
            hooks = self._own[point]
            old = predecessor(hooks, fn, name, stacklevel + 1)
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
