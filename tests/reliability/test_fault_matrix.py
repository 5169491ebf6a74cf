"""The fault matrix: every point x every allowed on_error x sync/async x every kind of fault.

Each cell registers three hooks at one point — ``before`` (passes, or for a
transform rewrites the subject), ``faulty`` (the fault) and ``after`` (records
that it ran) — dispatches once, and asserts the outcome, whether ``after`` ran,
and the exact log events. A sync hook cannot time out: ``timeout=`` is refused
for sync callables at registration (DESIGN §4), and that refusal is the
outcome asserted in the sync x timeout cells. The modes: ``sync`` (every hook
sync, sync dispatch), ``async`` (an async faulty hook, ``a``-dispatch) and
``mixed`` (a sync faulty hook between async ones, ``a``-dispatch). 27 points
give 61 (point, policy) pairs; x 3 modes x 9 faults = 1647 cells, of which 244
are timeout refusals and 1403 are dispatches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Final, NoReturn

import pytest
from structlog.testing import capture_logs

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookReturnError,
    HookStyle,
    HookValueError,
    InvalidToolCallAction,
    RequestPatch,
    StopRun,
    TurnAction,
)
from hookreg._points import POINTS as _SPECS  # the accepted-return label hook_failed's `error` names

from ._support import make_context

POLICIES = {
    HookStyle.DECIDE: ("deny", "raise", "ignore"),
    HookStyle.TRANSFORM: ("raise", "ignore"),
    HookStyle.OBSERVE: ("ignore", "raise"),
}
MODES = ("sync", "async", "mixed")
# "swallowed_timeout": the hook catches its own cancellation at the deadline and returns a pass
# anyway. Its deadline still passed, so it is a timeout like any other: a gate that ignores its
# deadline must not fail open.
# "stop_in_group": a StopRun inside an exception group (an asyncio.TaskGroup's), which is a stop.
# "stop_iteration": an ordinary failure, but one Python would turn into RuntimeError in a generator.
FAULTS = (
    "exception",
    "wrong_return",
    "timeout",
    "swallowed_timeout",
    "stop_run",
    "stop_in_group",
    "stop_iteration",
    "keyboard_interrupt",
    "cancelled",
)
STOPS = ("stop_run", "stop_in_group")
TIMEOUT_FAULTS = ("timeout", "swallowed_timeout")
CELLS = [
    (point, policy, mode, fault)
    for point in HookPoint
    for policy in POLICIES[point.style]
    for mode in MODES
    for fault in FAULTS
]
TIMEOUT = 0.01
DISPATCH = {HookStyle.DECIDE: "decide", HookStyle.TRANSFORM: "transform", HookStyle.OBSERVE: "notify"}


class BoomError(RuntimeError):
    """The exception a faulty hook raises."""


def pass_value(point: HookPoint) -> object:
    """What a decider returns to pass, and what observers and no-op transforms return."""
    if point is HookPoint.MODEL_TURN_FINISHED:
        return TurnAction.continue_run()
    if point.style is HookStyle.DECIDE and point is not HookPoint.INVALID_TOOL_CALL:
        return HookResult.allow()
    return None


def rewrite(point: HookPoint) -> object:
    """The new subject the ``before`` transform returns."""
    if point is HookPoint.TRANSFORM_TOOL_INPUT:
        return {"rewritten": True}
    if point is HookPoint.PRE_MODEL_CALL:
        return RequestPatch(preamble="before")
    return "before"


def wrong_return(point: HookPoint) -> object:
    """A return of the wrong type: a decider's forgotten ``return`` (None), else a value no point accepts."""
    if point is HookPoint.INVALID_TOOL_CALL:
        return True
    return None if point.style is HookStyle.DECIDE else 42


def after_value(point: HookPoint) -> object:
    """What ``after`` returns: a pass that a decide result shows (an allow with a message), else a no-op."""
    if point.style is HookStyle.DECIDE and point not in {HookPoint.MODEL_TURN_FINISHED, HookPoint.INVALID_TOOL_CALL}:
        return HookResult.allow("after")
    return pass_value(point)


def deny_outcome(point: HookPoint) -> object:
    """The decision a failing decider makes under ``on_error="deny"`` (DESIGN §5), ignoring `decided_by`."""
    if point is HookPoint.INVALID_TOOL_CALL:
        return InvalidToolCallAction.fail()
    if point is HookPoint.STOP:
        return "allow"  # the run stops rather than loops
    return "deny"


class Cell:
    """One cell's registry and its fault objects."""

    def __init__(self, point: HookPoint, policy: str, mode: str, fault: str) -> None:
        self.point, self.policy, self.mode, self.fault = point, policy, mode, fault
        self.registry = HookRegistry()
        self.after_saw: list[object] = []
        self.stop = StopRun("halt")
        self.interrupt = KeyboardInterrupt()
        self.cancelled = asyncio.CancelledError()
        self.boom = BoomError("boom")
        self.done = StopIteration("done")
        self.registry.register(point, self.before, name="before", priority=2)
        if mode == "mixed":

            async def after(ctx: Any) -> Any:
                return self.after(ctx)

            self.registry.register(point, after, name="after", priority=0)
        else:
            self.registry.register(point, self.after, name="after", priority=0)

    def before(self, ctx: Any) -> Any:
        return rewrite(self.point) if self.point.style is HookStyle.TRANSFORM else pass_value(self.point)

    def after(self, ctx: Any) -> Any:
        subject = {
            HookPoint.TRANSFORM_TOOL_INPUT: "args",
            HookPoint.PRE_MODEL_CALL: "patch",
            HookPoint.MODEL_SELECT: "selected_model",
            HookPoint.ON_TOOL_ERROR: "message",
            HookPoint.TRANSFORM_TOOL_RESULT: "presentation",
        }.get(self.point)
        self.after_saw.append(getattr(ctx, subject) if subject else ctx)
        return after_value(self.point)

    def act(self) -> object:
        """The fault, run inside the hook."""
        raising: dict[str, BaseException] = {
            "exception": self.boom,
            "stop_run": self.stop,
            "keyboard_interrupt": self.interrupt,
            "cancelled": self.cancelled,
            "stop_in_group": ExceptionGroup("fan-out", [BoomError("a sibling"), self.stop]),
            "stop_iteration": self.done,
        }
        if self.fault in raising:
            raise raising[self.fault]
        return wrong_return(self.point)

    def faulty_hook(self) -> Callable[[Any], Any]:
        if self.mode != "async":
            return lambda ctx: self.act()

        async def faulty(ctx: Any) -> object:
            if self.fault in TIMEOUT_FAULTS:
                try:
                    await asyncio.Event().wait()  # never set: only the timeout ends it
                except asyncio.CancelledError:
                    if self.fault == "timeout":
                        raise
                    return pass_value(self.point)
            return self.act()

        return faulty

    def register_faulty(self) -> None:
        timeout = TIMEOUT if self.fault in TIMEOUT_FAULTS else None
        self.registry.register(
            self.point, self.faulty_hook(), name="faulty", priority=1, on_error=self.policy, timeout=timeout
        )

    def dispatch(self) -> tuple[str, Any]:
        ctx = make_context(self.point, tool_name="bash", patch=RequestPatch())
        method = DISPATCH[self.point.style]
        if self.mode == "sync":
            try:
                return "returned", getattr(self.registry, method)(self.point, ctx)
            except BaseException as exc:  # noqa: BLE001 -- every outcome is the cell's subject
                return "raised", exc

        async def run() -> tuple[str, Any]:
            try:
                return "returned", await getattr(self.registry, "a" + method)(self.point, ctx)
            except BaseException as exc:  # noqa: BLE001 -- every outcome is the cell's subject
                return "raised", exc

        return asyncio.run(run())


def test_matrix_size() -> None:
    """The matrix covers 61 (point, policy) pairs x 3 modes x 9 faults; 244 sync-hook timeout cells are refusals."""
    assert len(CELLS) == 1647
    assert sum(1 for _, _, mode, fault in CELLS if mode != "async" and fault in TIMEOUT_FAULTS) == 244


_RAISED_TYPES = {"exception": "BoomError", "stop_iteration": "StopIteration"}
"""The faults that raise, by the exception type `hook_failed` names."""


@pytest.mark.parametrize(("point", "policy", "mode", "fault"), CELLS, ids=str)
def test_fault_cell(point: HookPoint, policy: str, mode: str, fault: str) -> None:  # noqa: PLR0912, PLR0915 -- one branch per documented outcome
    """The cell's fault has exactly the outcome DESIGN §5 gives it, and is logged once."""
    cell = Cell(point, policy, mode, fault)
    if mode != "async" and fault in TIMEOUT_FAULTS:
        with pytest.raises(HookValueError, match=r"timeout= applies only to async callables") as refused:
            cell.register_faulty()
        assert isinstance(refused.value, ValueError)
        assert point.value in str(refused.value)
        assert [r.name for r in cell.registry.callbacks(point)] == ["before", "after"]
        return
    cell.register_faulty()
    with capture_logs() as logs:
        kind, value = cell.dispatch()

    if fault in {*STOPS, "keyboard_interrupt", "cancelled"}:
        # These propagate whatever the policy, as the same object, with no note.
        expected = {"keyboard_interrupt": cell.interrupt, "cancelled": cell.cancelled}.get(fault, cell.stop)
        assert kind == "raised"
        assert value is expected
        assert getattr(value, "__notes__", None) is None
        assert cell.after_saw == []
        if fault in STOPS:
            assert cell.stop.hook == "faulty"
            assert logs == [
                {"event": "run_stopped", "log_level": "info", "point": point.value, "hook": "faulty", "reason": "halt"}
            ]
            if point is HookPoint.TRANSFORM_TOOL_INPUT:
                assert cell.stop.effective_args == {"rewritten": True}
        else:
            assert logs == []
        return

    # A failure: logged exactly once, as hook_failed or hook_timed_out, and nothing else.
    if fault in TIMEOUT_FAULTS:
        assert logs == [
            {
                "event": "hook_timed_out",
                "log_level": "warning",
                "point": point.value,
                "hook": "faulty",
                "timeout": TIMEOUT,
            }
        ]
    else:
        assert logs == [
            {
                "event": "hook_failed",
                "log_level": "error" if point.style is HookStyle.DECIDE else "warning",
                "point": point.value,
                "hook": "faulty",
                "exc_type": _RAISED_TYPES.get(fault, "HookReturnError"),
                "error": f"raised {_RAISED_TYPES[fault]}"
                if fault in _RAISED_TYPES
                else f"returned {type(wrong_return(point)).__name__}; expected {_SPECS[point].expected}",
            }
        ]

    if policy == "raise":
        assert kind == "raised"
        assert cell.after_saw == []
        if fault == "wrong_return":
            assert isinstance(value, HookReturnError)
            assert isinstance(value, TypeError)
            message = str(value)
            assert "'faulty'" in message
            assert point.value in message
            assert type(wrong_return(point)).__name__ in message
            assert value.returned_type is type(wrong_return(point))
        else:
            if fault == "stop_iteration":
                # Itself from a sync dispatch; an async dispatch cannot raise StopIteration (PEP 479
                # wraps it in RuntimeError at the coroutine's edge), so there it is the cause.
                assert value is cell.done if mode == "sync" else value.__cause__ is cell.done
                value = cell.done
            assert value is cell.boom if fault == "exception" else isinstance(value, TimeoutError | StopIteration)
            notes = getattr(value, "__notes__", [])
            assert len(notes) == 1
            assert "'faulty'" in notes[0]
            assert point.value in notes[0]
        return

    if policy == "ignore":
        assert kind == "returned", value
        assert len(cell.after_saw) == 1
        if point.style is HookStyle.TRANSFORM:
            # "ignore" keeps the value so far: the next hook and the caller see before's rewrite.
            expected_subject = RequestPatch(preamble="before") if point is HookPoint.PRE_MODEL_CALL else rewrite(point)
            assert value == expected_subject
            assert cell.after_saw == [expected_subject]
        elif point.style is HookStyle.OBSERVE:
            assert value is None
        else:
            # A failing decider counts as a pass: the result is what the passing hooks make of it.
            assert value == after_value(point) if point is not HookPoint.INVALID_TOOL_CALL else value.kind == "fail"
            expected_by = None if point in {HookPoint.MODEL_TURN_FINISHED, HookPoint.INVALID_TOOL_CALL} else "after"
            assert value.decided_by == expected_by
        return

    # on_error="deny": the failure decides, toward doing less; no later hook runs.
    assert policy == "deny"
    assert cell.after_saw == []
    if point is HookPoint.MODEL_TURN_FINISHED:
        assert kind == "raised"
        assert isinstance(value, StopRun)
        assert value.hook == "faulty"
        return
    assert kind == "returned", value
    assert value.decided_by == "faulty"
    outcome = deny_outcome(point)
    if isinstance(outcome, InvalidToolCallAction):
        # DESIGN says "InvalidToolCallAction.fail()"; the kind is the decision, and a reason
        # naming the failed hook (never a value) is welcome, so only the kind is pinned.
        assert value.kind == outcome.kind
    else:
        assert value.decision.value == outcome


@pytest.mark.parametrize("fault", ["exception", "wrong_return", "stop_run", "keyboard_interrupt", "cancelled"])
def test_generous_timeout_changes_no_outcome(fault: str) -> None:
    """An async gate with a timeout it never reaches fails exactly as one without: the deadline adds nothing."""
    point = HookPoint.PRE_TOOL_CALL_DECIDE
    cell = Cell(point, "deny", "async", fault)
    cell.registry.register(point, cell.faulty_hook(), name="faulty", priority=1, timeout=60.0)
    with capture_logs() as logs:
        kind, value = cell.dispatch()
    assert cell.after_saw == []
    if fault in {"exception", "wrong_return"}:
        assert kind == "returned"
        assert value.decision.value == "deny"
        assert value.decided_by == "faulty"
        assert [e["event"] for e in logs] == ["hook_failed"]
    else:
        assert kind == "raised"
        assert (
            value is {"stop_run": cell.stop, "keyboard_interrupt": cell.interrupt, "cancelled": cell.cancelled}[fault]
        )
        assert [e["event"] for e in logs] == (["run_stopped"] if fault == "stop_run" else [])


def test_resolve_tool_call_fails_closed_on_every_gate_failure() -> None:
    """resolve_tool_call on a failing gate denies, reports the denial, and keeps the rewritten args."""
    registry = HookRegistry()
    denied: list[object] = []
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {"safe": True}, name="rewrite")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: None, name="broken-gate")
    registry.register(HookPoint.PERMISSION_DENIED, denied.append, name="audit")
    with capture_logs() as logs:
        resolution = registry.resolve_tool_call(make_context(HookPoint.PRE_TOOL_CALL_DECIDE))
    assert not resolution.result.allowed
    assert resolution.result.decided_by == "broken-gate"
    assert resolution.args == {"safe": True}
    assert resolution.rewritten
    assert len(denied) == 1
    assert [e["event"] for e in logs] == ["hook_failed"]


@pytest.mark.parametrize("point", list(HookPoint), ids=str)
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_sync_hook_returning_an_awaitable_fails_and_closes_it(point: HookPoint, mode: str) -> None:
    """A sync hook returning a coroutine fails at every point, sync or async dispatch, and the coroutine is closed."""
    returned: list[Any] = []

    async def forgotten() -> None:
        """Never awaited by anyone."""

    def hook(ctx: Any) -> Any:
        coroutine = forgotten()
        returned.append(coroutine)
        return coroutine

    registry = HookRegistry()
    registry.register(point, hook, name="hasty", on_error="ignore")
    ctx = make_context(point, tool_name="bash")
    method = DISPATCH[point.style]
    with capture_logs() as logs:
        if mode == "async":
            asyncio.run(getattr(registry, "a" + method)(point, ctx))
        else:
            getattr(registry, method)(point, ctx)
    assert [(e["event"], e["exc_type"]) for e in logs] == [("hook_failed", "HookReturnError")]
    assert returned[0].cr_frame is None  # closed: no "never awaited" warning later


@pytest.mark.parametrize("fault", ["exception", "wrong_return", "timeout"])
@pytest.mark.parametrize("answered", [False, True], ids=["alone", "with-an-answer"])
def test_an_ignored_failure_at_on_interaction_answers_nothing(fault: str, *, answered: bool) -> None:
    """A failing interaction hook under "ignore" has not run: alone, the question is denied, never approved."""
    point: Final = HookPoint.ON_INTERACTION
    registry = HookRegistry()

    async def faulty(ctx: object) -> Any:
        if fault == "timeout":
            await asyncio.Event().wait()
        if fault == "exception":
            raise BoomError("boom")
        return None

    registry.register(point, faulty, name="faulty", on_error="ignore", timeout=TIMEOUT if fault == "timeout" else None)
    if answered:
        registry.register(point, lambda ctx: HookResult.allow("a human said yes"), name="human")
    with capture_logs() as logs:
        result = asyncio.run(registry.adecide(point, make_context(point, tool_name="bash")))
    assert [e["event"] for e in logs] == ["hook_timed_out" if fault == "timeout" else "hook_failed"]
    if answered:
        assert (result.allowed, result.message, result.decided_by) == (True, "a human said yes", "human")
    else:
        assert (result.allowed, result.reason) == (False, "no interaction hook")


def test_an_ignored_failure_at_on_interaction_answers_nothing_on_the_sync_surface() -> None:
    """The same on the sync surface, where the failing hook leaves the inline loop."""
    point: Final = HookPoint.ON_INTERACTION
    registry = HookRegistry()
    registry.register(point, _broken, name="faulty", on_error="ignore")
    with capture_logs() as logs:
        result = registry.decide(point, make_context(point, tool_name="bash"))
    assert (result.allowed, result.reason) == (False, "no interaction hook")
    assert [(e["event"], e["exc_type"]) for e in logs] == [("hook_failed", "ZeroDivisionError")]


def _broken(ctx: object) -> NoReturn:
    """A hook that fails with ZeroDivisionError."""
    raise ZeroDivisionError
