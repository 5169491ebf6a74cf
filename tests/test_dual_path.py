"""Dual-path hooks: one object with a sync ``__call__`` and an ``async def acall`` serves both surfaces."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

import pytest

from hookreg import (
    AsyncHookError,
    HookPoint,
    HookRegistry,
    HookResult,
    HookSignatureError,
    HookValueError,
    PermissionDeniedContext,
    PostToolCallContext,
    PreToolCallDecideContext,
    RunContext,
    _lifecycle,
)

TOOL = PreToolCallDecideContext(tool_name="bash", args={"command": "ls"}, call_id="c1")


class Gate:
    """A dual-path gate that records which path ran and answers with `answer`."""

    def __init__(self, answer: HookResult | None = None, *, delay: float = 0.0, fail: bool = False) -> None:
        self.answer = answer if answer is not None else HookResult.deny("no")
        self.delay = delay
        self.fail = fail
        self.paths: list[str] = []

    def __call__(self, ctx: PreToolCallDecideContext) -> HookResult:
        self.paths.append("sync")
        if self.fail:
            raise RuntimeError("sync path broke")
        return self.answer

    async def acall(self, ctx: PreToolCallDecideContext) -> HookResult:
        self.paths.append("async")
        await asyncio.sleep(self.delay)
        if self.fail:
            raise RuntimeError("async path broke")
        return self.answer


class Rewrite:
    """A dual-path transform adding which path ran to the arguments."""

    def __call__(self, ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        return {**ctx.args, "path": "sync"}

    async def acall(self, ctx: PreToolCallDecideContext) -> Mapping[str, object]:
        return {**ctx.args, "path": "async"}


class Observer:
    """A dual-path observer recording which path ran."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, ctx: PostToolCallContext) -> None:
        self.paths.append("sync")

    async def acall(self, ctx: PostToolCallContext) -> None:
        self.paths.append("async")


class Denials:
    """A dual-path ``permission_denied`` observer that does nothing on either path."""

    def __call__(self, ctx: PermissionDeniedContext) -> None:
        del ctx

    async def acall(self, ctx: PermissionDeniedContext) -> None:
        del ctx


def test_sync_surface_calls_dunder_call() -> None:
    """A sync dispatch calls the sync path and is not refused as async."""
    registry = HookRegistry()
    gate = Gate()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, name="dual")
    result = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
    assert (result.reason, result.decided_by, gate.paths) == ("no", "dual", ["sync"])


def test_async_surface_awaits_acall() -> None:
    """An async dispatch awaits `acall` and never calls the sync path."""
    registry = HookRegistry()
    gate = Gate()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate)
    result = asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
    assert (result.reason, gate.paths) == ("no", ["async"])


def test_each_style_takes_both_paths() -> None:
    """Transforms, observers and resolve_tool_call pick the path of the surface they run on."""
    registry = HookRegistry()
    registry.transform_tool_input(Rewrite())
    observer = Observer()
    registry.post_tool_call(observer)
    post = PostToolCallContext(
        tool_name="bash", args={}, call_id="c1", result="ok", raw_result="ok", duration_ms=1.0, metadata={}
    )
    assert registry.resolve_tool_call(TOOL).args["path"] == "sync"
    assert asyncio.run(registry.aresolve_tool_call(TOOL)).args["path"] == "async"
    registry.notify(HookPoint.POST_TOOL_CALL, post)
    asyncio.run(registry.anotify(HookPoint.POST_TOOL_CALL, post))
    assert observer.paths == ["sync", "async"]


def test_sync_dispatch_beside_a_dual_hook_still_refuses_a_real_async_hook() -> None:
    """Only a plain async hook makes a sync dispatch refuse; the dual hook does not hide it."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, Gate(HookResult.allow()))

    async def real_async(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, real_async)
    with pytest.raises(AsyncHookError, match="real_async"):
        registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)


def test_timeout_applies_to_acall(caplog: pytest.LogCaptureFixture) -> None:
    """timeout= is accepted for a dual-path hook and bounds `acall`: past it, the gate fails closed."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, Gate(HookResult.allow(), delay=30), name="slow", timeout=0.05)
    with caplog.at_level(logging.WARNING, logger="hookreg"):
        result = asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
    assert (result.allowed, result.decided_by) == (False, "slow")
    assert "timed out" in result.reason
    assert any("hook_timed_out" in record.getMessage() for record in caplog.records)


def test_timeout_does_not_apply_to_the_sync_path() -> None:
    """The sync path of a hook with timeout= runs as a plain sync call (Python cannot bound it)."""
    registry = HookRegistry()
    gate = Gate(HookResult.allow())
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, timeout=0.05)
    assert registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL).allowed


@pytest.mark.parametrize("surface", ["sync", "async"])
def test_failures_go_through_the_policy_on_both_paths(surface: str) -> None:
    """A raising path is a failure: denied by default, passed under on_error="ignore", re-raised under "raise"."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, Gate(fail=True), name="broken")

    def decide(reg: HookRegistry) -> HookResult:
        if surface == "sync":
            return reg.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
        return asyncio.run(reg.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))

    denied = decide(registry)
    assert (denied.allowed, denied.decided_by) == (False, "broken")
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, Gate(fail=True), name="broken", on_error="ignore")
    assert decide(registry).allowed
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, Gate(fail=True), name="broken", on_error="raise")
    with pytest.raises(RuntimeError, match=f"{surface} path broke"):
        decide(registry)


def test_decorators_accept_a_dual_path_hook() -> None:
    """The per-point decorators register a dual-path object and return it unchanged, with options."""
    registry = HookRegistry()
    gate, other = Gate(), Gate()
    assert registry.pre_tool_call_decide(timeout=1.0, tools="bash")(gate) is gate
    assert registry.pre_tool_call_decide(other) is other
    (first, second) = registry.callbacks(HookPoint.PRE_TOOL_CALL_DECIDE)
    assert (first.timeout, first.is_async, second.timeout) == (1.0, False, None)
    assert asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)).reason == "no"


def test_included_dual_path_hook_takes_the_async_path() -> None:
    """A dual-path hook in an included registry is awaited by the including registry's async dispatch."""
    inner, outer = HookRegistry(), HookRegistry()
    gate = Gate()
    inner.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate)
    outer.include(inner)
    asyncio.run(outer.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
    outer.decide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL)
    assert gate.paths == ["async", "sync"]


def test_traced_dispatch_takes_the_async_path() -> None:
    """An open trace records the dual-path hook on the async path it took."""
    registry = HookRegistry()
    gate = Gate()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, name="dual")
    with registry.trace() as trace:
        asyncio.run(registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, TOOL))
    assert gate.paths == ["async"]
    assert [call.hook for record in trace.records for call in record.calls] == ["dual"]


def test_acall_with_a_wrong_signature_is_refused() -> None:
    """An `acall` that cannot take the one context is refused when registered, naming it."""

    class Bad:
        def __call__(self, ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

        async def acall(self, ctx: PreToolCallDecideContext, extra: int) -> HookResult:
            return HookResult.allow()

    with pytest.raises(HookSignatureError, match="acall"):
        HookRegistry().register(HookPoint.PRE_TOOL_CALL_DECIDE, Bad())


def test_a_sync_acall_does_not_make_a_dual_path_hook() -> None:
    """An object whose `acall` is a plain function is a sync hook: timeout= is still refused."""

    class NotDual:
        def __call__(self, ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

        def acall(self, ctx: PreToolCallDecideContext) -> HookResult:
            return HookResult.allow()

    with pytest.raises(HookValueError, match="timeout"):
        HookRegistry().register(HookPoint.PRE_TOOL_CALL_DECIDE, NotDual(), timeout=1.0)


def test_a_flow_awaited_takes_the_async_path_of_every_dual_path_hook() -> None:
    """`arun_flow` hands a point with a dual-path hook to the a-method: its ``acall`` runs, never ``__call__``."""
    registry, decider, rewrite = HookRegistry(), Gate(HookResult.allow()), Rewrite()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, decider)
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, rewrite)
    flow = _lifecycle.gate(registry, RunContext(), "bash", "c1", {"command": "ls"}, known={"bash"})
    verdict = asyncio.run(_lifecycle.arun_flow(registry, flow))
    assert verdict.allowed
    assert dict(verdict.call.args) == {"command": "ls", "path": "async"}
    assert decider.paths == ["async"]


def test_a_flow_awaited_over_sync_hooks_only_calls_them_without_a_coroutine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no hook a dispatch reaches awaits, `arun_flow` calls the sync method: the same result, no coroutine."""
    awaited: list[str] = []
    aperform = _lifecycle.aperform

    async def counted(registry: HookRegistry, op: _lifecycle.Dispatch) -> object:
        awaited.append(op.method)
        return await aperform(registry, op)

    monkeypatch.setattr(_lifecycle, "aperform", counted)
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.deny("no"))
    flow = _lifecycle.gate(registry, RunContext(), "bash", "c1", {"command": "ls"}, known={"bash"})
    verdict = asyncio.run(_lifecycle.arun_flow(registry, flow))
    assert (verdict.allowed, verdict.text, awaited) == (False, "no", [])
    registry.register(HookPoint.PERMISSION_DENIED, Denials())  # now one hook on the way awaits
    flow = _lifecycle.gate(registry, RunContext(), "bash", "c1", {"command": "ls"}, known={"bash"})
    assert not asyncio.run(_lifecycle.arun_flow(registry, flow)).allowed
    assert awaited == ["resolve_tool_call"]
