"""registry.trace(): what each dispatch made while a trace was open called, returned and decided.

Tracing costs nothing while no trace is open. Opening one on a registry
recompiles that registry (and every registry including it) so that its plans
leave the inline loop for `TracedRunners`, which drives the same step
generators as the normal runners, timing each call. Which dispatches a trace
sees is scoped by a context variable: the thread and the asyncio tasks
started inside the ``with`` block.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, cast, final, overload

from hookreg._dispatch import OK, RAISED, Runners, _acall, _Slow
from hookreg._display import html_table, text_table
from hookreg._errors import HookRegError, StopRun
from hookreg._points import HookPoint, HookStyle
from hookreg._registry import _LOCK, Registration
from hookreg._results import HookResult, InvalidToolCallAction, TurnAction

if TYPE_CHECKING:
    from types import TracebackType
    from typing import Self

    from hookreg._dispatch import AsyncRunner, Outcome, Plan, Steps
    from hookreg._registry import RegistryCore

__all__ = ["DispatchRecord", "HookCall", "Trace", "TracedRunners"]

_OPEN: Final[ContextVar[tuple[Trace, ...]]] = ContextVar("hookreg_open_traces", default=())
_PASSES: Final = frozenset({"allow", "continue", "pass"})
_HEADERS: Final = ("#", "point", "hook", "outcome", "detail", "ms")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class HookCall:
    """One hook call inside a traced dispatch.

    Attributes:
        hook: The hook's name.
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
    def detail(self) -> str:
        """The reason, or the exception type for a call that raised."""
        if self.error is not None:
            return f"{self.exc_type}: {self.reason}" if self.reason else str(self.exc_type)
        if self.outcome == "bad return":
            return f"returned {type(self.returned).__name__}"
        return self.reason


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class DispatchRecord:
    """One traced dispatch: the point, every hook call in order, and the result.

    Attributes:
        point: The point dispatched.
        calls: The hook calls, in the order they were made.
        result: What the dispatch returned (``None`` for observers, or when it raised).
        error: What the dispatch raised, or ``None``.
        duration_ms: How long the whole dispatch took.
    """

    point: HookPoint
    calls: tuple[HookCall, ...]
    result: object
    error: BaseException | None
    duration_ms: float

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


@final
class Trace:
    """The records of the dispatches made while it is open; from ``registry.trace()``.

    Use it as a context manager. It records every dispatch made on the
    registry, or on a registry including it when the trace opened, by the
    current thread and by the asyncio tasks started inside the ``with`` block.
    Dispatches elsewhere are not recorded. Records stay readable after the
    block; ``str(trace)`` is a plain-text table and a notebook shows an HTML
    one, with one row per hook call and the deciding call marked.

    Example:
        >>> from hookreg import HookRegistry, HookResult, HookPoint, PreToolCallDecideContext
        >>> registry = HookRegistry()
        >>> _ = registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("no"), name="gate")
        >>> with registry.trace() as trace:
        ...     _ = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(
        ...         tool_name="bash", args={}, call_id="1"))
        >>> trace[0].decided_by
        'gate'
    """

    __slots__ = ("_records", "_registries", "_registry", "_token")

    def __init__(self, registry: RegistryCore) -> None:
        self._registry = registry
        # One slot per dispatch, reserved when it starts and filled when it ends, so records
        # keep the order dispatches started in; clear() swaps the list, orphaning pending slots.
        self._records: list[list[DispatchRecord]] = []
        self._registries: frozenset[RegistryCore] = frozenset()
        self._token: Token[tuple[Trace, ...]] | None = None

    @property
    def records(self) -> tuple[DispatchRecord, ...]:
        """The finished dispatches, in the order they started."""
        return tuple(slot[0] for slot in self._records if slot)

    @property
    def calls(self) -> tuple[HookCall, ...]:
        """Every hook call of every finished dispatch, in order."""
        return tuple(call for record in self.records for call in record.calls)

    def clear(self) -> None:
        """Forget the records so far (the trace stays open)."""
        self._records = []

    def __enter__(self) -> Self:
        if self._token is not None:
            msg = f"Cannot open {self!r}: it is already open. Call registry.trace() for another trace."
            raise HookRegError(msg)
        with _LOCK:
            reach = frozenset(self._registry._ancestors())
            for registry in reach:
                registry._tracing += 1
                for point in HookPoint:
                    registry._compile(point)
        self._registries = reach
        self._token = _OPEN.set((*_OPEN.get(), self))
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            _OPEN.reset(cast("Token[tuple[Trace, ...]]", self._token))
        except ValueError:  # closed from another context than it opened in: remove just this trace
            _OPEN.set(tuple(trace for trace in _OPEN.get() if trace is not self))
        self._token = None
        with _LOCK:
            for registry in self._registries:
                registry._tracing -= 1
                for point in HookPoint:
                    registry._compile(point)

    def _reserve(self) -> list[DispatchRecord]:
        slot: list[DispatchRecord] = []
        self._records.append(slot)
        return slot

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
        state = "open" if self._token is not None else "closed"
        return f"<Trace of {self._registry!r}: {len(self)} dispatch(es), {state}>"

    def _table(self) -> tuple[list[tuple[str, ...]], set[int]]:
        rows: list[tuple[str, ...]] = []
        marked: set[int] = set()
        for number, record in enumerate(self.records, 1):
            first = (str(number), record.point.value)
            if not record.calls:
                detail = record.summary if record.error is not None else f"no hook ran; {record.summary}"
                rows.append((*first, "-", "-", detail, f"{record.duration_ms:.3f}"))
                continue
            for i, call in enumerate(record.calls):
                if call.decided:
                    marked.add(len(rows))
                head = first if i == 0 else ("", "")
                rows.append((*head, call.hook, call.outcome, call.detail, f"{call.duration_ms:.3f}"))
        return rows, marked

    def __str__(self) -> str:
        if not self.records:
            return f"{self!r}: no dispatches"
        rows, marked = self._table()
        legend = "\n* decided the dispatch" if marked else ""
        return f"{self!r}\n{text_table(_HEADERS, rows, marked=marked)}{legend}"

    def _repr_html_(self) -> str:
        rows, marked = self._table()
        return html_table(_HEADERS, rows, caption=repr(self), marked=marked)


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


def _call(runners: Runners, reg: Registration, outcome: Outcome, seconds: float) -> HookCall:
    status, value = outcome
    spec = runners._spec
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
    """Collects one dispatch's calls and files the record in every trace that sees it."""

    __slots__ = ("calls", "runners", "slots", "start")

    def __init__(self, traces: tuple[Trace, ...], runners: Runners) -> None:
        self.runners = runners
        self.calls: list[HookCall] = []
        self.slots = [trace._reserve() for trace in traces]
        self.start = time.perf_counter()

    def call(self, reg: Registration, ctx: object) -> Outcome:
        start = time.perf_counter()
        try:
            outcome: Outcome = (OK, reg.callback(ctx))
        except Exception as exc:  # noqa: BLE001 -- handed to the policy, exactly as `drive` does
            outcome = (RAISED, exc)
        self.calls.append(_call(self.runners, reg, outcome, time.perf_counter() - start))
        return outcome

    async def acall(self, reg: Registration, ctx: object) -> Outcome:
        start = time.perf_counter()
        outcome = await _acall(reg, ctx)
        self.calls.append(_call(self.runners, reg, outcome, time.perf_counter() - start))
        return outcome

    def drive(self, steps: Steps) -> Any:
        # The twin of _dispatch.drive/adrive, with each call timed and recorded.
        try:
            reg, ctx = next(steps)
            while True:
                reg, ctx = steps.send(self.call(reg, ctx))
        except StopIteration as done:
            return done.value

    async def adrive(self, steps: Steps) -> Any:
        try:
            reg, ctx = next(steps)
            while True:
                reg, ctx = steps.send(await self.acall(reg, ctx))
        except StopIteration as done:
            return done.value

    def finish(self, result: object, error: BaseException | None) -> None:
        point = self.runners._spec.point
        decided = _decider(self.calls, point, result) if error is None else None
        if decided is not None:
            self.calls[decided] = replace(self.calls[decided], decided=True)
        record = DispatchRecord(
            point=point,
            calls=tuple(self.calls),
            result=None if error is not None or point.style is HookStyle.OBSERVE else result,
            error=error,
            duration_ms=(time.perf_counter() - self.start) * 1000,
        )
        for slot in self.slots:
            slot.append(record)


def _watching(registry: RegistryCore) -> tuple[Trace, ...]:
    return tuple(trace for trace in _OPEN.get() if registry in trace._registries)


@final
class TracedRunners:
    """Stands in for a registry's `Runners` at one point while a trace is open on it.

    Its plan always leaves the inline loop, so only `run` and `arun` are ever called. A dispatch that no open trace in
    the current context watches runs exactly as before, through the real runners.
    """

    __slots__ = ("_registry", "_runners", "arun", "plan")

    def __init__(self, registry: RegistryCore, runners: Runners) -> None:
        self._registry = registry
        self._runners = runners
        # A Plan whose runners are these: the dispatch methods only call `run` and `resume` on them.
        self.plan = cast("Plan", (_Slow, *runners.plan[1:-1], self))
        self.arun = self._arun if runners.arun is not None else None

    def run(self, ctx: object) -> object:
        """Dispatch synchronously, recording the calls for every trace watching."""
        runners = self._runners
        traces = _watching(self._registry)
        if not traces:
            return runners.run(ctx)
        recorder = _Recorder(traces, runners)
        try:
            if ctx.__class__ is not runners._spec.ctx_type or runners.async_hook is not None:
                result = runners.run(ctx)  # raises the error for a wrong context or an async hook
            else:
                result = recorder.drive(runners._steps(runners._spec, runners.hooks, ctx, None))
        except BaseException as exc:
            recorder.finish(None, exc)
            raise
        recorder.finish(result, None)
        return result

    async def _arun(self, ctx: object) -> object:
        runners = self._runners
        traces = _watching(self._registry)
        arun = cast("AsyncRunner", runners.arun)  # this method is used only when the runners have one
        if not traces:
            return await arun(ctx)
        recorder = _Recorder(traces, runners)
        try:
            if ctx.__class__ is not runners._spec.ctx_type:
                result = await arun(ctx)  # raises the error for a wrong context
            else:
                result = await recorder.adrive(runners._steps(runners._spec, runners.hooks, ctx, None))
        except BaseException as exc:
            recorder.finish(None, exc)
            raise
        recorder.finish(result, None)
        return result
