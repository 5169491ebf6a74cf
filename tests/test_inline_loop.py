"""The inline loop calls the first hook by itself and loops over the rest: no position may behave differently.

Every style, on both surfaces, with one to three hooks and the hook that
acts (denies, rewrites, raises, returns a value it should not) at each
position: the hooks before it ran, it is the one reported, and what follows
it is what its style promises (DESIGN §3, §5).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Final

import pytest
from structlog.testing import capture_logs

from hookreg import HookPoint, HookRegistry, HookResult, PostTurnContext, PreToolCallDecideContext

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
INPUT: Final = HookPoint.TRANSFORM_TOOL_INPUT
OBSERVE: Final = HookPoint.POST_TURN

SHAPES = [(count, position) for count in (1, 2, 3) for position in range(count)]


def dispatched(registry: HookRegistry, method: str, point: HookPoint, ctx: object, *, surface: str) -> Any:
    """`registry.<method>(point, ctx)` on the sync surface, or its a-twin awaited."""
    if surface == "sync":
        return getattr(registry, method)(point, ctx)
    return asyncio.run(getattr(registry, "a" + method)(point, ctx))


def call() -> PreToolCallDecideContext:
    return PreToolCallDecideContext(tool_name="bash", args={"n": 0}, call_id="c1")


@pytest.mark.parametrize("surface", ["sync", "async"])
@pytest.mark.parametrize(("count", "position"), SHAPES)
def test_the_gate_that_denies_ends_the_chain_at_any_position(count: int, position: int, surface: str) -> None:
    registry = HookRegistry()
    seen: list[int] = []

    def gate(i: int) -> Callable[[PreToolCallDecideContext], HookResult]:
        def decide(ctx: PreToolCallDecideContext) -> HookResult:
            seen.append(i)
            return HookResult.deny(f"gate {i}") if i == position else HookResult.allow()

        return decide

    for i in range(count):
        registry.register(GATE, gate(i))
    result = dispatched(registry, "decide", GATE, call(), surface=surface)
    assert (result.reason, seen) == (f"gate {position}", list(range(position + 1)))


@pytest.mark.parametrize("surface", ["sync", "async"])
@pytest.mark.parametrize(("count", "position"), SHAPES)
def test_a_gate_that_raises_fails_closed_at_any_position(count: int, position: int, surface: str) -> None:
    registry = HookRegistry()
    seen: list[int] = []

    def gate(i: int) -> Callable[[PreToolCallDecideContext], HookResult]:
        def decide(ctx: PreToolCallDecideContext) -> HookResult:
            seen.append(i)
            if i == position:
                raise RuntimeError(f"gate {i} broke")
            return HookResult.allow()

        return decide

    for i in range(count):
        registry.register(GATE, gate(i), name=f"gate{i}")
    with capture_logs() as logs:
        result = dispatched(registry, "decide", GATE, call(), surface=surface)
    assert result.decision.value == "deny"
    assert seen == list(range(position + 1))
    assert [entry["hook"] for entry in logs] == [f"gate{position}"]


@pytest.mark.parametrize("surface", ["sync", "async"])
@pytest.mark.parametrize(("count", "position"), SHAPES)
def test_the_transform_that_rewrites_is_seen_by_every_later_one(count: int, position: int, surface: str) -> None:
    registry = HookRegistry()
    seen: list[tuple[int, object]] = []

    def transform(i: int) -> Callable[[PreToolCallDecideContext], Mapping[str, object] | None]:
        def rewrite(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
            seen.append((i, ctx.args["n"]))
            return {"n": i + 1} if i == position else None

        return rewrite

    for i in range(count):
        registry.register(INPUT, transform(i))
    result = dispatched(registry, "transform", INPUT, call(), surface=surface)
    assert result == {"n": position + 1}
    assert seen == [(i, 0 if i <= position else position + 1) for i in range(count)]


def quiet_def(i: int, seen: list[int]) -> Callable[[PostTurnContext], None]:
    """An observer whose code returns only None (the loop does not test its return)."""

    def observe(ctx: PostTurnContext) -> None:
        seen.append(i)

    return observe


def appending_lambda(i: int, seen: list[int]) -> Callable[[PostTurnContext], None]:
    """An observer that returns None, but whose return the loop must test (it returns a call's value)."""
    return lambda ctx: seen.append(i)


@pytest.mark.parametrize("surface", ["sync", "async"])
@pytest.mark.parametrize("kind", [quiet_def, appending_lambda])
@pytest.mark.parametrize(("count", "position"), SHAPES)
def test_an_observer_that_raises_is_reported_and_the_rest_still_run(
    count: int, position: int, kind: Callable[[int, list[int]], Callable[[PostTurnContext], None]], surface: str
) -> None:
    registry = HookRegistry()
    seen: list[int] = []

    def boom(ctx: PostTurnContext) -> None:
        seen.append(position)
        raise RuntimeError("boom")

    for i in range(count):
        registry.register(OBSERVE, boom if i == position else kind(i, seen), name=f"hook{i}", on_error="ignore")
    ctx = PostTurnContext(turn=1, response_text="r")
    with capture_logs() as logs:
        assert dispatched(registry, "notify", OBSERVE, ctx, surface=surface) is None
    assert seen == list(range(count))
    assert [(entry["hook"], entry["exc_type"]) for entry in logs] == [(f"hook{position}", "RuntimeError")]


@pytest.mark.parametrize("surface", ["sync", "async"])
@pytest.mark.parametrize("kind", [quiet_def, appending_lambda])
@pytest.mark.parametrize(("count", "position"), SHAPES)
def test_an_observer_that_returns_a_value_is_reported_and_the_rest_still_run(
    count: int, position: int, kind: Callable[[int, list[int]], Callable[[PostTurnContext], None]], surface: str
) -> None:
    registry = HookRegistry()
    seen: list[int] = []

    def chatty(ctx: PostTurnContext) -> str:
        seen.append(position)
        return "oops"

    for i in range(count):
        hook = chatty if i == position else kind(i, seen)
        registry.register(OBSERVE, hook, name=f"hook{i}")  # type: ignore[arg-type]
    with capture_logs() as logs:
        dispatched(registry, "notify", OBSERVE, PostTurnContext(turn=1, response_text="r"), surface=surface)
    assert seen == list(range(count))
    assert [(entry["hook"], entry["exc_type"]) for entry in logs] == [(f"hook{position}", "HookReturnError")]


@pytest.mark.parametrize("surface", ["sync", "async"])
@pytest.mark.parametrize("kind", [quiet_def, appending_lambda])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_observers_that_pass_all_run_in_order(
    count: int, kind: Callable[[int, list[int]], Callable[[PostTurnContext], None]], surface: str
) -> None:
    registry = HookRegistry()
    seen: list[int] = []
    for i in range(count):
        registry.register(OBSERVE, kind(i, seen))
    with capture_logs() as logs:
        dispatched(registry, "notify", OBSERVE, PostTurnContext(turn=1, response_text="r"), surface=surface)
    assert (seen, logs) == (list(range(count)), [])
