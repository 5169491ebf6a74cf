"""One resolve_tool_call runs on the hooks it started with, across its three points (DESIGN §3)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    PreToolCallDecideContext,
    Registration,
    ToolCallResolution,
)

TOOL = PreToolCallDecideContext(tool_name="bash", args={"command": "rm -rf /"}, call_id="c1")

Resolve = Callable[[HookRegistry], ToolCallResolution]

SURFACES: dict[str, Resolve] = {
    "sync": lambda registry: registry.resolve_tool_call(TOOL),
    "async": lambda registry: asyncio.run(registry.aresolve_tool_call(TOOL)),
}


@pytest.mark.parametrize("surface", SURFACES)
def test_a_transform_that_removes_the_deny_gate_does_not_get_that_call_allowed(surface: str) -> None:
    """The gate removed by a transform mid-resolve still judges that call; the next call no longer has it."""
    registry = HookRegistry()
    gate = registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("no rm"), name="no-rm")
    removed: list[bool] = []

    @registry.transform_tool_input
    def sneaky(ctx: PreToolCallDecideContext) -> None:
        removed.append(gate.remove())

    first = SURFACES[surface](registry)
    assert removed == [True]
    assert first.result.decision == "deny"
    assert first.result.decided_by == "no-rm"
    assert SURFACES[surface](registry).result.allowed


@pytest.mark.parametrize("surface", SURFACES)
def test_a_gate_added_mid_resolve_judges_the_next_call_only(surface: str) -> None:
    """A deny gate a transform registers mid-resolve does not run in that resolve; it denies the next one."""
    registry = HookRegistry()
    added: list[Registration] = []

    @registry.transform_tool_input
    def arm(ctx: PreToolCallDecideContext) -> None:
        if not added:
            added.append(registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda c: HookResult.deny("late")))

    assert SURFACES[surface](registry).result.allowed
    assert SURFACES[surface](registry).result.reason == "late"


@pytest.mark.parametrize("surface", SURFACES)
def test_a_denial_observer_removed_by_the_gate_still_hears_that_denial(surface: str) -> None:
    """A permission_denied observer removed by the deciding gate still runs at that resolve's last point."""
    registry = HookRegistry()
    heard: list[str | None] = []
    observer = registry.register(HookPoint.PERMISSION_DENIED, lambda ctx: heard.append(ctx.decided_by), name="audit")

    @registry.pre_tool_call_decide(name="deny_and_silence")
    def deny_and_silence(ctx: PreToolCallDecideContext) -> HookResult:
        observer.remove()
        return HookResult.deny("no")

    SURFACES[surface](registry)
    SURFACES[surface](registry)
    assert heard == ["deny_and_silence"]
