"""Security posture: hooks cannot reach the harness's data in place, and logs never carry values.

DESIGN §7: log fields carry names, never argument, result or exception-message
values; the one text field is a deny's or stop's ``reason``, logged as the hook
wrote it for the model. The hooks here therefore write constant reasons and put
the secret everywhere else: in every context field, in the values they return,
in the messages of the exceptions they raise, in the wrong types they return.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest
from structlog.testing import capture_logs

from hookreg import (
    HookPoint,
    HookRegError,
    HookRegistry,
    HookResult,
    HookStyle,
    InvalidToolCallAction,
    PreToolCallDecideContext,
    RequestPatch,
    StopRun,
    TurnAction,
)

from ._support import make_context

SECRET = "SECRET-7f3a9c41"
POLICIES = {
    HookStyle.DECIDE: ("deny", "raise", "ignore"),
    HookStyle.TRANSFORM: ("raise", "ignore"),
    HookStyle.OBSERVE: ("ignore", "raise"),
}
BEHAVIOURS = ("pass", "act", "raise", "wrong", "stop", "timeout")
DISPATCH = {HookStyle.DECIDE: "decide", HookStyle.TRANSFORM: "transform", HookStyle.OBSERVE: "notify"}


def acting_value(point: HookPoint) -> object:  # noqa: PLR0911 -- one return per kind of point
    """A valid non-pass return that holds the secret wherever the value is not logged by contract."""
    if point is HookPoint.MODEL_TURN_FINISHED:
        return TurnAction.retry_with_feedback(SECRET)
    if point is HookPoint.INVALID_TOOL_CALL:
        return InvalidToolCallAction.retry(SECRET)
    if point.style is HookStyle.DECIDE:
        return HookResult.deny("constant reason")
    if point is HookPoint.TRANSFORM_TOOL_INPUT:
        return {"path": SECRET + "-rewritten", SECRET: SECRET}
    if point is HookPoint.PRE_MODEL_CALL:
        # Conflicts with the base patch's preamble and adds to it: patch_conflict must name the field only.
        return RequestPatch(preamble=SECRET + "-2", extra_context=(SECRET,), additional_params={SECRET: SECRET})
    if point.style is HookStyle.TRANSFORM:
        return SECRET + "-rewritten"
    return None


def passing_value(point: HookPoint) -> object:
    """A pass that still carries the secret where it can (an allow's message)."""
    if point is HookPoint.MODEL_TURN_FINISHED:
        return TurnAction.continue_run()
    if point is HookPoint.INVALID_TOOL_CALL or point.style is not HookStyle.DECIDE:
        return None
    return HookResult.allow(SECRET)


def behave(point: HookPoint, behaviour: str) -> object:
    """Do what `behaviour` says, inside a hook."""
    if behaviour == "raise":
        raise RuntimeError(SECRET)
    if behaviour == "stop":
        raise StopRun("constant reason")
    if behaviour == "wrong":
        return [SECRET]  # the wrong type at every point
    return acting_value(point) if behaviour == "act" else passing_value(point)


@pytest.fixture
def debug_logging() -> Iterator[None]:
    """Enable DEBUG on the "hookreg" logger, so registration events are emitted too."""
    logger = logging.getLogger("hookreg")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.setLevel(level)


def assert_no_secret(events: Sequence[Mapping[str, Any]], raised: list[BaseException]) -> None:
    """No log event, and no error hookreg itself raised, shows the secret.

    The one exception is a failure's own traceback (`exc_info`), which DESIGN §7 lets
    `hook_failed` carry at DEBUG only: it is the hook's exception, values and all.
    """
    for event in events:
        assert SECRET not in repr({k: v for k, v in event.items() if k != "exc_info"}), event
    for exc in raised:
        if isinstance(exc, HookRegError):
            assert SECRET not in str(exc), exc
            assert SECRET not in repr(getattr(exc, "__notes__", "")), exc


def run_point(point: HookPoint, policy: str, behaviour: str, mode: str, raised: list[BaseException]) -> None:
    """Register one hook behaving as told (plus a bystander), dispatch once, and unregister everything."""
    registry = HookRegistry()
    ctx = make_context(point, SECRET)

    def sync_hook(ctx: Any) -> Any:
        return behave(point, behaviour)

    async def async_hook(ctx: Any) -> Any:
        if behaviour == "timeout":
            await asyncio.Event().wait()
        return behave(point, behaviour)

    def bystander(ctx: Any) -> Any:
        return passing_value(point)

    is_async = mode == "async"
    registry.register(point, bystander, priority=1)
    registry.register(
        point,
        async_hook if is_async else sync_hook,
        on_error=policy,
        timeout=0.01 if is_async and behaviour == "timeout" else None,
    )
    method = DISPATCH[point.style]
    try:
        if is_async:
            asyncio.run(getattr(registry, "a" + method)(point, ctx))
        else:
            getattr(registry, method)(point, ctx)
    except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 -- every outcome is inspected
        raised.append(exc)
    registry.clear()


def test_no_log_event_ever_holds_a_value(debug_logging: None) -> None:
    """Across all 27 points, every policy, every behaviour, sync and async, no log event shows a value."""
    raised: list[BaseException] = []
    runs = 0
    with capture_logs() as logs:
        for point in HookPoint:
            for policy in POLICIES[point.style]:
                for behaviour in BEHAVIOURS:
                    for mode in ("sync", "async"):
                        if behaviour == "timeout" and mode == "sync":
                            continue  # sync hooks take no timeout
                        run_point(point, policy, behaviour, mode, raised)
                        runs += 1
    events = {e["event"] for e in logs}
    # Every kind of event was exercised, so the check is not vacuous.
    assert events >= {
        "hook_registered",
        "hook_removed",
        "hook_denied",
        "hook_failed",
        "hook_timed_out",
        "run_stopped",
        "patch_conflict",
    }
    assert runs == 61 * 11
    assert_no_secret(logs, raised)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_resolve_tool_call_logs_no_value(mode: str, debug_logging: None) -> None:
    """A rewrite, a failing gate, a deny and an audit along resolve_tool_call log no value."""
    raised: list[BaseException] = []
    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {"path": SECRET + "-safe"}, name="rewrite")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: [SECRET], name="broken")  # type: ignore[arg-type, return-value]
    registry.register(HookPoint.PERMISSION_DENIED, lambda ctx: [SECRET], name="audit")  # type: ignore[arg-type, return-value]
    replacement = registry.register(
        HookPoint.PERMISSION_DENIED, lambda ctx: None, name="audit"
    )  # a replacement logs hook_replaced
    ctx = make_context(HookPoint.PRE_TOOL_CALL_DECIDE, SECRET)
    with capture_logs() as logs:
        resolution = (
            asyncio.run(registry.aresolve_tool_call(ctx)) if mode == "async" else registry.resolve_tool_call(ctx)
        )
        replacement.remove()
    assert not resolution.result.allowed
    assert {e["event"] for e in logs} >= {"hook_failed", "hook_removed"}
    assert_no_secret(logs, raised)


def test_registration_errors_and_replacement_log_no_value(debug_logging: None) -> None:
    """Replacing a hook and refusing bad registrations log names only, even for partials bound to secrets."""
    import functools

    def gate(token: str, ctx: Any) -> HookResult:
        return HookResult.allow()

    registry = HookRegistry()
    raised: list[BaseException] = []
    with capture_logs() as logs:
        registry.register(HookPoint.PRE_TURN, functools.partial(gate, SECRET), name="gate")
        registry.register(HookPoint.PRE_TURN, functools.partial(gate, SECRET + "2"), name="gate")
        registry.decide(HookPoint.PRE_TURN, make_context(HookPoint.PRE_TURN, SECRET))
        registry.unregister("gate")
    assert [e["event"] for e in logs] == ["hook_registered", "hook_replaced", "hook_removed"]
    assert_no_secret(logs, raised)


# --- a hook cannot change the harness's data in place ------------------------------------


def harness_args() -> dict[str, object]:
    """The harness's own argument mapping, with a nested value that is the caller's to protect."""
    return {"path": "/tmp/x", "mode": "read"}


MUTATIONS: list[tuple[str, Callable[[Any], object]]] = [
    ("setitem", lambda ctx: operator.setitem(ctx.args, "path", "/")),
    ("delitem", lambda ctx: operator.delitem(ctx.args, "path")),
    ("update", lambda ctx: ctx.args.update(path="/")),
    ("clear", lambda ctx: ctx.args.clear()),
    ("pop", lambda ctx: ctx.args.pop("path")),
    ("copy-then-mutate", lambda ctx: dict(ctx.args).update(path="/")),
    ("replace-field", lambda ctx: object.__setattr__(ctx, "args", {"path": "/"})),
]


@pytest.mark.parametrize("point", [HookPoint.TRANSFORM_TOOL_INPUT, HookPoint.PRE_TOOL_CALL_DECIDE])
@pytest.mark.parametrize(("how", "mutate"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_hook_cannot_mutate_harness_args(point: HookPoint, how: str, mutate: Callable[[Any], object]) -> None:
    """Whatever a hook does to ``ctx.args``, the harness's mapping is unchanged after the dispatch."""
    args = harness_args()
    ctx = PreToolCallDecideContext(tool_name="bash", args=args, call_id="c1")

    def meddler(ctx: Any) -> Any:
        with contextlib.suppress(TypeError, AttributeError):  # refused: what we want
            mutate(ctx)
        return HookResult.allow() if point.style is HookStyle.DECIDE else None

    registry = HookRegistry()
    registry.register(point, meddler)
    registry.resolve_tool_call(ctx)
    assert args == harness_args()


def test_transform_result_is_detached_from_the_hook() -> None:
    """A transform's returned mapping is copied: changing it later changes neither the result nor later hooks."""
    kept: list[dict[str, object]] = []
    seen: list[object] = []

    def rewrite(ctx: PreToolCallDecideContext) -> dict[str, object]:
        new: dict[str, object] = {"path": "/safe"}
        kept.append(new)
        return new

    def tamper_then_look(ctx: PreToolCallDecideContext) -> None:
        kept[0]["path"] = "/etc/shadow"
        seen.append(ctx.args["path"])

    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, rewrite, priority=2)
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, tamper_then_look, priority=1)
    ctx = PreToolCallDecideContext(tool_name="bash", args=harness_args(), call_id="c1")
    resolution = registry.resolve_tool_call(ctx)
    assert seen == ["/safe"]
    assert resolution.args == {"path": "/safe"}
    with pytest.raises(TypeError, match="does not support item assignment"):
        operator.setitem(resolution.args, "path", "/")  # type: ignore[call-overload]  # the point: it is read-only


def test_gate_judges_the_args_that_will_execute() -> None:
    """A gate sees exactly the transformed args the harness will run; a deny holds even after a rewrite."""
    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {**ctx.args, "path": "/etc/shadow"})
    registry.register(
        HookPoint.PRE_TOOL_CALL_DECIDE,
        lambda ctx: HookResult.deny("no /etc") if str(ctx.args["path"]).startswith("/etc") else HookResult.allow(),
    )
    resolution = registry.resolve_tool_call(
        PreToolCallDecideContext(tool_name="bash", args=harness_args(), call_id="c")
    )
    assert not resolution.result.allowed
    assert resolution.args["path"] == "/etc/shadow"
