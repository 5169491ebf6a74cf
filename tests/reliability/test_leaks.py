"""Leaks: long register/remove and scoped-registration cycles leave memory flat and hold no removed callback.

100,000 cycles run untraced in every CI run (about 2 s each): they must leave
no removed callback alive (weakref check) and no growth in the number of
objects the garbage collector tracks. tracemalloc slows allocation-heavy code
about sevenfold, so the byte-level check traces 10,000 cycles after a warm-up
by default, and the full 100,000 with HOOKREG_STRESS=10.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
import weakref
from collections.abc import Callable
from typing import Final

import pytest

from hookreg import HookPoint, HookRegistry, HookResult, PreTurnContext, UserPromptSubmitContext

from ._support import STRESS

POINT: Final = HookPoint.PRE_TURN
CTX = PreTurnContext(prompt="p", turn=1)
CYCLES = 100_000
TRACED_CYCLES = 10_000 * STRESS
SLACK_BYTES = 64 * 1024
SLACK_OBJECTS = 200


def steady_registry() -> HookRegistry:
    """A registry with one permanent hook, so every cycle recompiles a non-empty point."""
    registry = HookRegistry()
    registry.register(POINT, lambda ctx: HookResult.allow(), name="steady")
    return registry


def plain_cycle(registry: HookRegistry, hook: Callable[[PreTurnContext], HookResult]) -> None:
    """Register `hook`, dispatch once, remove it by handle."""
    handle = registry.register(POINT, hook)
    registry.decide(POINT, CTX)
    assert handle.remove()


def scoped_cycle(registry: HookRegistry, hook: Callable[[PreTurnContext], HookResult]) -> None:
    """Register `hook` for the span of a with block, dispatching once inside it."""
    with registry.register(POINT, hook):
        registry.decide(POINT, CTX)


def make_hook(i: int) -> Callable[[PreTurnContext], HookResult]:
    """A fresh closure: every cycle registers a new callable."""

    def hook(ctx: PreTurnContext) -> HookResult:
        return HookResult.allow(f"{i}") if ctx.turn < 0 else HookResult.allow()

    return hook


CYCLE_KINDS = {"register-remove": plain_cycle, "scoped": scoped_cycle}


def run_cycles(
    registry: HookRegistry, cycle: Callable[[HookRegistry, Callable[[PreTurnContext], HookResult]], None], count: int
) -> list[weakref.ref[Callable[[PreTurnContext], HookResult]]]:
    """Run `count` cycles, each with a fresh closure; return weak references to a sample of them."""
    sample: list[weakref.ref[Callable[[PreTurnContext], HookResult]]] = []
    for i in range(count):
        hook = make_hook(i)
        cycle(registry, hook)
        if i % 997 == 0:
            sample.append(weakref.ref(hook))
    return sample


@pytest.mark.slow
@pytest.mark.parametrize("kind", CYCLE_KINDS)
def test_cycles_keep_no_removed_callback_and_no_objects(kind: str) -> None:
    """100,000 cycles leave no removed callback alive and no more gc-tracked objects than before."""
    registry = steady_registry()
    cycle = CYCLE_KINDS[kind]
    run_cycles(registry, cycle, 1000)  # warm-up: caches, interned names
    gc.collect()
    before = len(gc.get_objects())
    sample = run_cycles(registry, cycle, CYCLES)
    gc.collect()
    after = len(gc.get_objects()) - 1  # the sample list itself
    assert [ref for ref in sample if ref() is not None] == []
    assert after - before - len(sample) < SLACK_OBJECTS
    assert [r.name for r in registry.callbacks(POINT)] == ["steady"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", CYCLE_KINDS)
def test_cycles_leave_memory_flat(kind: str) -> None:
    """Traced cycles after a warm-up grow memory by no more than a small absolute slack."""
    registry = steady_registry()
    cycle = CYCLE_KINDS[kind]
    tracemalloc.start()
    try:
        run_cycles(registry, cycle, 1000)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        sample = run_cycles(registry, cycle, TRACED_CYCLES)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert [ref for ref in sample if ref() is not None] == []
    assert after - before < SLACK_BYTES


def test_inclusion_cycles_release_registries() -> None:
    """Including and un-including registries leaves no trace: each dropped registry is collected."""
    root = steady_registry()
    refs = []
    for i in range(2000 * STRESS):
        child = HookRegistry()
        child.register(POINT, lambda ctx: HookResult.deny("no"), name="child-gate")
        with root.include(child, priority=i % 3):
            assert not root.decide(POINT, CTX).allowed
        if i % 97 == 0:
            refs.append(weakref.ref(child))
    del child
    gc.collect()
    assert [ref for ref in refs if ref() is not None] == []
    assert root.decide(POINT, CTX) is HookResult.allow()
    assert len(root) == 1


def test_failures_and_timeouts_hold_nothing() -> None:
    """The exceptions of failing hooks and the tasks of timed-out ones are dropped once dispatch returns."""

    class Payload:
        """Something big a failing hook's exception refers to."""

    payloads: list[weakref.ref[Payload]] = []

    def failing(ctx: PreTurnContext) -> HookResult:
        payload = Payload()
        payloads.append(weakref.ref(payload))
        raise RuntimeError(payload)

    async def hanging(ctx: UserPromptSubmitContext) -> HookResult:
        payload = Payload()
        payloads.append(weakref.ref(payload))
        await asyncio.Event().wait()
        return HookResult.allow()

    registry = HookRegistry()
    registry.register(POINT, failing, on_error="ignore")
    registry.register(HookPoint.USER_PROMPT_SUBMIT, hanging, timeout=0.001)

    async def main() -> None:
        ctx = UserPromptSubmitContext(content="c")
        for _ in range(50):
            result = await registry.adecide(HookPoint.USER_PROMPT_SUBMIT, ctx)
            assert not result.allowed

    for _ in range(500 * STRESS):
        assert registry.decide(POINT, CTX) is HookResult.allow()
    asyncio.run(main())
    gc.collect()
    assert len(payloads) == 500 * STRESS + 50
    assert [ref for ref in payloads if ref() is not None] == []


def test_dropped_registry_is_collected() -> None:
    """A registry with hooks, an inclusion and a dispatch behind it is freed once its owner drops it."""
    registry = steady_registry()
    parent = HookRegistry()
    parent.include(registry)
    parent.decide(POINT, CTX)
    refs = [weakref.ref(registry), weakref.ref(parent)]
    del registry, parent
    gc.collect()
    assert [ref for ref in refs if ref() is not None] == []
