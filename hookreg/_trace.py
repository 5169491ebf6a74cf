"""registry.trace(): what each dispatch made while a trace was open called, returned and decided.

Tracing costs nothing while no trace is open. Opening one puts a wrapper in
the slot of that registry (and of every registry including it), so that its
plans leave the inline loop for `TracedPoint`, which drives the same step
generators with dispatch's own drivers, timing each call. Which dispatches a trace
sees depends on how it was opened: a ``with`` block scopes it by a context
variable (the thread and the asyncio tasks started inside the block);
``start()`` opens it for every dispatch on the registry until ``stop()``, so
that it spans notebook cells whatever the kernel does with context variables.
A closed trace records nothing more, not even a dispatch that was running
when it closed.

A trace is one kind of `Watcher`: the slot tells every watcher of a registry
when each dispatch begins, after each hook call, and when it ends
(``hookreg.otel`` is the other kind, turning dispatches into spans).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, cast, final, overload

from hookreg._display import empty_html, html_table, text_table
from hookreg._errors import HookRegError, StopRun
from hookreg._plan import CompiledPoint, acall_hook, arun_steps, call_hook, run_steps
from hookreg._points import POINTS, HookPoint, HookStyle
from hookreg._registration import LOCK, Registration, short_name
from hookreg._registry import add_wrapper, including, reachable, remove_wrapper
from hookreg._results import HookResult, InvalidToolCallAction, TurnAction
from hookreg._rules import OK, RAISED

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    from hookreg._plan import AsyncRunner, Detour
    from hookreg._registry import RegistryCore
    from hookreg._rules import Outcome, Steps

__all__ = ["DispatchRecord", "HookCall", "Trace", "TracedPoint", "Watcher", "unwatch", "watch"]

_OPEN: Final[ContextVar[tuple[Trace, ...]]] = ContextVar("hookreg_open_traces", default=())
# Watchers that see every dispatch on their registries, in any context (started traces, instrumentations).
# Replaced whole, under LOCK.
_started: tuple[Watcher, ...] = ()
_PASSES: Final = frozenset({"allow", "continue", "pass"})
_HEADERS: Final = ("#", "point", "about", "hook", "outcome", "detail", "ms")
_NEW, _RUNNING, _CLOSED = "not started", "open", "closed"


@final
@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class HookCall:
    """One hook call inside a traced dispatch.

    Attributes:
        hook: The hook's name, in full (``make.<locals>.gate``); tables show `label`.
        registration: The hook's registration.
        outcome: What the call did, in a word: ``"allow"``, ``"deny"``, ``"ask"``
            (deciders of HookResult); the kind of a TurnAction or an
            InvalidToolCallAction, or ``"pass"`` for ``None``; ``"changed"`` or
            ``"unchanged"`` (transforms); ``"ran"`` (observers); ``"raised"``,
            ``"timed out"``, ``"stopped"`` (raised StopRun) or ``"bad return"``.
        reason: The reason (or message, or feedback) of what it returned, else ``""``.
        returned: What it returned (``None`` when it raised).
        error: What it raised, or ``None``.
        duration_ms: How long the call took.
        decided: Whether this call decided the dispatch.
    """

    hook: str
    registration: Registration
    outcome: str
    reason: str = ""
    returned: object = None
    error: BaseException | None = None
    duration_ms: float
    decided: bool = False

    @property
    def exc_type(self) -> str | None:
        """The class name of what the call raised, or ``None``."""
        return None if self.error is None else type(self.error).__name__

    @property
    def label(self) -> str:
        """The hook's name as tables show it: without the ``<locals>`` path of a function defined in a function."""
        return short_name(self.hook)

    @property
    def detail(self) -> str:
        """The reason, or the exception type for a call that raised."""
        if self.error is not None:
            return f"{self.exc_type}: {self.reason}" if self.reason else str(self.exc_type)
        if self.outcome == "bad return":
            return f"returned {type(self.returned).__name__}"
        return self.reason

    def __repr__(self) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        decided = ", decided" if self.decided else ""
        return f"<HookCall {self.label}: {self.outcome}{detail}{decided}, {self.duration_ms:.3f} ms>"


@final
@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class DispatchRecord:
    """One traced dispatch: the point, what it was about, every hook call in order, and the result.

    Attributes:
        point: The point dispatched.
        calls: The hook calls, in the order they were made.
        result: What the dispatch returned (``None`` for observers, or when it raised).
        error: What the dispatch raised, or ``None``.
        duration_ms: How long the whole dispatch took.
        tool_name: The tool the dispatch was about, when the point's context names one, else ``None``.
        call_id: The tool call the dispatch was about, when the point's context has one, else ``None``.
    """

    point: HookPoint
    calls: tuple[HookCall, ...]
    result: object
    error: BaseException | None
    duration_ms: float
    tool_name: str | None = None
    call_id: str | None = None

    @property
    def about(self) -> str:
        """What the dispatch was about, in a few words: ``"bash (call-1)"``, or ``""`` for a turn-level point."""
        tool = "" if self.tool_name is None else str(self.tool_name)
        call = "" if self.call_id is None else f"({self.call_id})"
        return f"{tool} {call}".strip()

    @property
    def decider(self) -> HookCall | None:
        """The call that decided the dispatch, or ``None`` (all passed, or not a decide point)."""
        return next((call for call in self.calls if call.decided), None)

    @property
    def decided_by(self) -> str | None:
        """The name of the deciding hook, or ``None``."""
        decider = self.decider
        return None if decider is None else decider.hook

    @property
    def hooks(self) -> tuple[str, ...]:
        """The names of the hooks called, in order."""
        return tuple(call.hook for call in self.calls)

    @property
    def summary(self) -> str:
        """The dispatch's result in a few words."""
        if self.error is not None:
            return f"raised {type(self.error).__name__}"
        if self.point.style is HookStyle.OBSERVE:
            return "done"
        if self.point.style is HookStyle.TRANSFORM:
            changed = any(call.outcome == "changed" for call in self.calls)
            return "changed" if changed else "unchanged"
        return _outcome(self.point, self.result)[0]

    def __repr__(self) -> str:  # hooks by their table label: `hooks` and `decided_by` keep the full names
        about = f" {self.about}" if self.about else ""
        decider = self.decider
        decided = f" by {decider.label}" if decider is not None else ""
        hooks = ", ".join(call.label for call in self.calls) if self.calls else "none ran"
        return (
            f"<DispatchRecord {self.point.value}{about}: {self.summary}{decided}; "
            f"hooks: {hooks}; {self.duration_ms:.3f} ms>"
        )


class Watcher(ABC):
    """What the trace slot tells about each dispatch on the registries it watches.

    `Trace` is one; ``hookreg.otel``'s instrumentation is another. Once
    `watch` has started it, every dispatch that it sees leaves the inline loop
    (registries nobody watches keep it, and pay nothing), and the slot calls,
    in the thread or task making the dispatch:

    1. ``token = begin(point, tool_name, call_id)`` before the first hook call;
    2. ``call(token, hook_call)`` after each hook call (its ``decided`` is
       always ``False`` here: only the record knows the decider);
    3. ``end(token, record)`` once, when the dispatch returns or raises.

    `end` follows every `begin`, also when the watcher stopped watching in
    between, so a watcher holding something per dispatch (a span, a context
    token) always releases it. A nested dispatch (made by a hook) begins and
    ends between its enclosing dispatch's `begin` and `end`. The methods must
    not raise: what one raises propagates from the dispatch.
    """

    __slots__ = ("_watched",)

    def __init__(self) -> None:
        self._watched: frozenset[RegistryCore] = frozenset()  # the registries whose dispatches it sees, while watching

    @abstractmethod
    def begin(self, point: HookPoint, tool_name: str | None, call_id: str | None) -> object:
        """A dispatch of `point` starts, about `tool_name` and `call_id` where its context names them.

        Returns:
            The token handed back to `call` and `end` for this dispatch.
        """

    @abstractmethod
    def call(self, token: object, call: HookCall) -> None:
        """The dispatch of `token` made `call`."""

    @abstractmethod
    def end(self, token: object, record: DispatchRecord) -> None:
        """The dispatch of `token` finished, as `record` says."""


def watch(watcher: Watcher, registry: RegistryCore, *, included: bool = False, everywhere: bool = True) -> None:
    """Start telling `watcher` about dispatches on `registry` and on the registries that include it now.

    With ``included=True``, also on the registries `registry` includes now.
    With ``everywhere=False`` it sees them only where it is open otherwise (a
    trace's ``with`` block); else in every thread and task until `unwatch`.

    Raises:
        HookRegError: `watcher` is watching already (`unwatch` it first).
    """
    global _started  # noqa: PLW0603 -- one tuple of started watchers, replaced whole under the lock
    with LOCK:
        if watcher._watched:
            msg = f"Cannot watch {registry!r} with {watcher!r}: it is watching already. Call unwatch() on it first."
            raise HookRegError(msg)
        reach = including(registry) | (reachable(registry) if included else frozenset())
        for each in reach:
            add_wrapper(each, _traced)
        watcher._watched = frozenset(reach)
        if everywhere:
            _started = (*_started, watcher)


def unwatch(watcher: Watcher) -> None:
    """Stop telling `watcher` about dispatches, including the ones that begin after this; does nothing twice.

    A dispatch already begun still gets its `Watcher.end`.
    """
    global _started  # noqa: PLW0603 -- see watch()
    with LOCK:
        _started = tuple(each for each in _started if each is not watcher)
        reach, watcher._watched = watcher._watched, frozenset()
        for each in reach:
            remove_wrapper(each, _traced)


@final
class Trace(Watcher):
    """The records of the dispatches made while it is open; from ``registry.trace()``.

    Use it as a context manager: it records every dispatch made on the
    registry, or on a registry including it when the trace opened, by the
    current thread and by the asyncio tasks started inside the ``with`` block.
    Or open it with `start` and close it with `stop`, for a trace spanning
    notebook cells: it then records every dispatch on those registries, in any
    thread or task, until `stop`. A closed trace records nothing more — not a
    task started inside the block that dispatches later, nor a dispatch still
    running when it closed — and cannot be opened again.

    Records stay readable after it closes. ``str(trace)`` is a plain-text
    table and a notebook shows an HTML one, with one row per hook call and the
    deciding call marked; a dispatch in which no hook ran has no row (unless it
    raised, or nobody answering decided it) and the table counts them. `hooked`
    leaves them out of the records too.

    Example:
        >>> from hookreg import HookRegistry, HookResult, HookPoint, PreToolCallDecideContext
        >>> registry = HookRegistry()
        >>> _ = registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("no"), name="gate")
        >>> with registry.trace() as trace:
        ...     _ = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(
        ...         tool_name="bash", args={}, call_id="1"))
        >>> trace[0].decided_by
        'gate'
        >>> trace[0]
        <DispatchRecord pre_tool_call_decide bash (1): deny by gate; hooks: gate; ...>
    """

    __slots__ = ("_filter", "_records", "_registry", "_state", "_token")

    def __init__(self, registry: RegistryCore) -> None:
        super().__init__()
        self._registry = registry
        # One slot per dispatch, reserved when it starts and filled when it ends, so records
        # keep the order dispatches started in; clear() swaps the list, orphaning pending slots.
        self._records: list[list[DispatchRecord]] = []
        self._token: Token[tuple[Trace, ...]] | None = None
        self._state = _NEW
        self._filter = ""  # what a copy from hooked() left out, for its repr

    @property
    def records(self) -> tuple[DispatchRecord, ...]:
        """The finished dispatches, in the order they started."""
        return tuple(slot[0] for slot in self._records if slot)

    @property
    def calls(self) -> tuple[HookCall, ...]:
        """Every hook call of every finished dispatch, in order."""
        return tuple(call for record in self.records for call in record.calls)

    @property
    def is_open(self) -> bool:
        """Whether the trace is recording: started, and not yet stopped."""
        return self._state is _RUNNING

    def hooked(self) -> Trace:
        """A closed copy of the trace without the dispatches in which no hook ran.

        A run fires many points nobody hooks; these are the records to read.
        """
        copy = Trace(self._registry)
        copy._records = [[record] for record in self.records if record.calls]
        copy._state, copy._filter = _CLOSED, " with a hook"
        return copy

    def clear(self) -> None:
        """Forget the records so far (an open trace stays open)."""
        self._records = []

    def start(self) -> Self:
        """Open the trace until `stop`: it records every dispatch on the registry, in any thread or task.

        For a trace spanning notebook cells; within one block of code, prefer
        ``with registry.trace() as trace:``, which sees only that block's dispatches.

        Raises:
            HookRegError: The trace is open already, or was closed.
        """
        self._open("start", everywhere=True)
        return self

    def stop(self) -> None:
        """Close the trace: it records nothing more. Stopping a closed trace does nothing.

        Raises:
            HookRegError: The trace was never opened.
        """
        if self._state is _NEW:
            msg = f"Cannot stop {self!r}: it was never started. Call trace.start() first, or use it in a with block."
            raise HookRegError(msg)
        self._close()

    def __enter__(self) -> Self:
        self._open("open", everywhere=False)
        self._token = _OPEN.set((*_OPEN.get(), self))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close()

    def _open(self, doing: str, *, everywhere: bool) -> None:
        with LOCK:
            if self._state is not _NEW:
                closed = "it was closed, and a closed trace stays closed"
                why = "it is already open" if self._state is _RUNNING else closed
                msg = f"Cannot {doing} {self!r}: {why}. Call registry.trace() for another trace."
                raise HookRegError(msg)
            watch(self, self._registry, everywhere=everywhere)
            self._state = _RUNNING

    def _close(self) -> None:
        with LOCK:
            if self._state is not _RUNNING:
                return
            self._state = _CLOSED  # from here on no dispatch files a record in it (see end())
            unwatch(self)
        if self._token is not None:
            try:
                _OPEN.reset(self._token)
            except ValueError:  # closed from another context than it opened in: remove just this trace
                _OPEN.set(tuple(trace for trace in _OPEN.get() if trace is not self))
            self._token = None

    def begin(self, point: HookPoint, tool_name: str | None, call_id: str | None) -> object:
        """Reserve the dispatch's place among the records: they keep the order dispatches started in."""
        slot: list[DispatchRecord] = []
        self._records.append(slot)
        return slot

    def call(self, token: object, call: HookCall) -> None:
        """Nothing: `end` files the record, which holds the calls."""

    def end(self, token: object, record: DispatchRecord) -> None:
        """File `record` in its place, unless the trace closed meanwhile (or was cleared: the place is orphaned)."""
        if self._state is _RUNNING:
            cast("list[DispatchRecord]", token).append(record)

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[DispatchRecord]:
        return iter(self.records)

    @overload
    def __getitem__(self, index: int) -> DispatchRecord: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[DispatchRecord, ...]: ...
    def __getitem__(self, index: int | slice) -> DispatchRecord | tuple[DispatchRecord, ...]:
        return self.records[index]

    def __repr__(self) -> str:
        return f"<Trace of {self._registry!r}: {len(self)} dispatch(es){self._filter}, {self._state}>"

    def _table(self) -> tuple[list[tuple[str, ...]], set[int], str]:
        """The rows, the deciding ones, and the legend: what ``*`` means and how many dispatches were left out."""
        rows: list[tuple[str, ...]] = []
        marked: set[int] = set()
        left_out = 0
        for number, record in enumerate(self.records, 1):
            if not _shown(record):
                left_out += 1
                continue
            first = (str(number), record.point.value, record.about)
            if not record.calls:
                detail = record.summary if record.error is not None else f"no hook ran; {record.summary}"
                rows.append((*first, "-", "-", detail, f"{record.duration_ms:.3f}"))
                continue
            for i, call in enumerate(record.calls):
                if call.decided:
                    marked.add(len(rows))
                head = first if i == 0 else ("", "", "")
                rows.append((*head, call.label, call.outcome, call.detail, f"{call.duration_ms:.3f}"))
        legend = ["* decided the dispatch"] if marked else []
        if left_out:
            dispatches = "dispatch" if left_out == 1 else "dispatches"
            legend.append(f"{left_out} {dispatches} in which no hook ran not shown (see trace.records)")
        return rows, marked, "\n".join(legend)

    def __str__(self) -> str:
        if not self.records:
            return f"{self!r}: no dispatches"
        rows, marked, legend = self._table()
        return "\n".join(filter(None, [repr(self), text_table(_HEADERS, rows, marked=marked), legend]))

    def _repr_html_(self) -> str:
        if not self.records:
            return empty_html(f"{self!r}: no dispatches")
        rows, marked, legend = self._table()
        table = html_table(_HEADERS, rows, caption=repr(self), marked=marked)
        return table + (empty_html(legend) if legend else "")


def _shown(record: DispatchRecord) -> bool:
    """Whether a trace's table shows `record`: one rule for every point, whoever dispatched it.

    A dispatch in which no hook ran is left out, as a loop that skips the
    points nobody hooks leaves none (the harness and the adapters skip some,
    `resolve_tool_call` dispatches all three of its points) — unless it
    raised, or nobody answering decided it (``on_interaction``'s deny).
    """
    if record.calls or record.error is not None:
        return True
    spec = POINTS[record.point]
    return spec.no_hook is not spec.all_passed


def _outcome(point: HookPoint, value: object) -> tuple[str, str]:
    """Name what a valid return means at `point`, with its reason."""
    style = point.style
    if style is HookStyle.OBSERVE:
        return "ran", ""
    if style is HookStyle.TRANSFORM:
        return ("unchanged" if value is None else "changed"), ""
    if isinstance(value, HookResult):
        return value.decision.value, value.reason or value.message
    if isinstance(value, TurnAction | InvalidToolCallAction):
        reason = value.reason if isinstance(value, InvalidToolCallAction) else ""
        return value.kind, value.feedback or reason
    return "pass", ""


def _call(compiled: CompiledPoint, reg: Registration, outcome: Outcome, seconds: float) -> HookCall:
    status, value = outcome
    spec = compiled.spec
    if status == OK and not spec.accepts(value):
        word, reason, error = "bad return", "", None
    elif status == OK:
        (word, reason), error = _outcome(spec.point, value), None
    else:
        error, value = value, None
        word = "stopped" if isinstance(error, StopRun) else ("raised" if status == RAISED else "timed out")
        reason = error.reason if isinstance(error, StopRun) else ""
    return HookCall(
        hook=reg.name,
        registration=reg,
        outcome=word,
        reason=reason,
        returned=value,
        error=error,
        duration_ms=seconds * 1000,
    )


def _decider(calls: list[HookCall], point: HookPoint, result: object) -> int | None:
    """Which call decided: the last one when it did not pass, else the last allow carrying a message."""
    name = getattr(result, "decided_by", None)
    if point.style is not HookStyle.DECIDE or name is None or not calls:
        return None
    last = calls[-1]
    failed_over = last.outcome not in _PASSES and last.registration.on_error == "ignore" and last.error is not None
    if last.hook == name and last.outcome not in _PASSES and not failed_over:
        return len(calls) - 1
    return next(
        (
            i
            for i in reversed(range(len(calls)))
            if calls[i].hook == name and isinstance(calls[i].returned, HookResult) and calls[i].outcome == "allow"
        ),
        None,
    )


class _Recorder:
    """Collects one dispatch's calls and tells every watcher that sees it."""

    __slots__ = ("call_id", "calls", "compiled", "start", "tokens", "tool_name")

    def __init__(self, watchers: tuple[Watcher, ...], compiled: CompiledPoint, ctx: object) -> None:
        self.compiled = compiled
        self.calls: list[HookCall] = []
        # What the dispatch is about, read only from the point's own context class (a wrong one is refused anyway).
        about = ctx if ctx.__class__ is compiled.spec.context else None
        self.tool_name: str | None = getattr(about, "tool_name", None)
        self.call_id: str | None = getattr(about, "call_id", None)
        point = compiled.spec.point
        self.tokens = [(watcher, watcher.begin(point, self.tool_name, self.call_id)) for watcher in watchers]
        self.start = time.perf_counter()

    def _made(self, reg: Registration, outcome: Outcome, seconds: float) -> None:
        call = _call(self.compiled, reg, outcome, seconds)
        self.calls.append(call)
        for watcher, token in self.tokens:
            watcher.call(token, call)

    def call(self, reg: Registration, ctx: object) -> Outcome:
        start = time.perf_counter()
        outcome = call_hook(reg, ctx)
        self._made(reg, outcome, time.perf_counter() - start)
        return outcome

    async def acall(self, reg: Registration, ctx: object) -> Outcome:
        start = time.perf_counter()
        outcome = await acall_hook(reg, ctx)
        self._made(reg, outcome, time.perf_counter() - start)
        return outcome

    def run_steps(self, steps: Steps) -> Any:
        """Run `steps` with dispatch's own driver, each call timed and recorded."""
        return run_steps(steps, self.call)

    async def arun_steps(self, steps: Steps) -> Any:
        """Run `steps` with dispatch's own async driver, each call timed and recorded."""
        return await arun_steps(steps, self.acall)

    def finish(self, result: object, error: BaseException | None) -> None:
        point = self.compiled.spec.point
        decided = _decider(self.calls, point, result) if error is None else None
        if decided is not None:
            self.calls[decided] = replace(self.calls[decided], decided=True)
        record = DispatchRecord(
            point=point,
            calls=tuple(self.calls),
            result=None if error is not None or point.style is HookStyle.OBSERVE else result,
            error=error,
            duration_ms=(time.perf_counter() - self.start) * 1000,
            tool_name=self.tool_name,
            call_id=self.call_id,
        )
        for watcher, token in reversed(self.tokens):  # the last begun ends first, as nested scopes do
            watcher.end(token, record)


def _watching(registry: RegistryCore) -> tuple[Watcher, ...]:
    """The watchers that see a dispatch on `registry` here: the traces open in this context, and every started one."""
    return tuple(watcher for watcher in (*_OPEN.get(), *_started) if registry in watcher._watched)


def _traced(registry: RegistryCore, compiled: CompiledPoint, inner: Detour) -> Detour:
    """The wrapper the trace slot puts in a watched registry's slot: a `TracedPoint` around `inner`."""
    return TracedPoint(registry, compiled, inner)


@final
class TracedPoint:
    """Takes every dispatch of a registry's point while a watcher (a trace, an instrumentation) watches it.

    A dispatch that no watcher sees in the current context runs exactly as
    before, through `inner`. A watched one drives the point's rules with
    dispatch's own drivers, telling every watcher about each call.
    """

    __slots__ = ("_compiled", "_inner", "_registry", "arun")

    def __init__(self, registry: RegistryCore, compiled: CompiledPoint, inner: Detour) -> None:
        self._registry = registry
        self._compiled = compiled
        self._inner = inner
        self.arun: AsyncRunner | None = self._arun if inner.arun is not None else None

    def run(self, ctx: object) -> object:
        """Dispatch synchronously, telling every watcher that sees it."""
        compiled = self._compiled
        watchers = _watching(self._registry)
        if not watchers:
            return self._inner.run(ctx)
        recorder = _Recorder(watchers, compiled, ctx)
        try:
            if ctx.__class__ is not compiled.spec.context or compiled.async_hook is not None:
                result = compiled.run(ctx)  # raises the error for a wrong context or an async hook
            else:
                result = recorder.run_steps(compiled.start(ctx))
        except BaseException as exc:
            recorder.finish(None, exc)
            raise
        recorder.finish(result, None)
        return result

    async def _arun(self, ctx: object) -> object:
        compiled = self._compiled
        watchers = _watching(self._registry)
        if not watchers:
            return await cast("AsyncRunner", self._inner.arun)(ctx)  # this method is used only when it has one
        recorder = _Recorder(watchers, compiled, ctx)
        try:
            if ctx.__class__ is not compiled.spec.context:
                result = await cast("AsyncRunner", compiled.arun)(ctx)  # raises the error for a wrong context
            else:
                result = await recorder.arun_steps(compiled.start(ctx))
        except BaseException as exc:
            recorder.finish(None, exc)
            raise
        recorder.finish(result, None)
        return result
