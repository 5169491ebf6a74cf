"""Property laws of dispatch and combination, checked with hypothesis over random registries.

Example counts come from the ``hookreg-reliability`` settings profile, which
HOOKREG_STRESS scales.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, Final

from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    OnToolErrorContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    RequestPatch,
    ToolErrorKind,
)

from ._support import LAWS

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
ERROR: Final = HookPoint.ON_TOOL_ERROR
OBSERVE: Final = HookPoint.POST_TURN
GATE_CTX = PreToolCallDecideContext(tool_name="bash", args={"cmd": "ls"}, call_id="c1")
ERROR_CTX = OnToolErrorContext(
    tool_name="bash", args={}, call_id="c1", error=RuntimeError(), kind=ToolErrorKind.EXCEPTION, message="m"
)
OBSERVE_CTX = PostTurnContext(turn=1, response_text="")

priorities = st.integers(min_value=-2, max_value=2)
outcomes = st.sampled_from(["allow", "allow-message", "deny", "ask"])
gates = st.lists(st.tuples(priorities, outcomes, st.booleans()), max_size=8)


def dispatch_order(priorities: list[int]) -> list[int]:
    """Indices in the documented dispatch order: higher priority first, then registration order."""
    return sorted(range(len(priorities)), key=lambda i: -priorities[i])


def gate_result(outcome: str, i: int) -> HookResult:
    """The result gate `i` returns for `outcome`."""
    return {
        "allow": HookResult.allow(),
        "allow-message": HookResult.allow(f"ok {i}"),
        "deny": HookResult.deny(f"no {i}"),
        "ask": HookResult.ask(f"ask {i}"),
    }[outcome]


@LAWS
@given(gates)
def test_decide_returns_first_non_pass_in_order(spec: list[tuple[int, str, bool]]) -> None:
    """decide returns the first non-allow in dispatch order, runs nothing after it, and agrees with adecide."""
    registry = HookRegistry()
    ran: list[int] = []

    def make(i: int, outcome: str, is_async: bool) -> Callable[[Any], Any]:
        def gate(ctx: Any) -> HookResult:
            ran.append(i)
            return gate_result(outcome, i)

        async def agate(ctx: Any) -> HookResult:
            return gate(ctx)

        return agate if is_async else gate

    for i, (priority, outcome, is_async) in enumerate(spec):
        registry.register(GATE, make(i, outcome, is_async), name=f"h{i}", priority=priority)

    order = dispatch_order([p for p, _, _ in spec])
    assert [r.name for r in registry.callbacks(GATE)] == [f"h{i}" for i in order]
    expected_ran: list[int] = []
    expected: HookResult = HookResult.allow()
    for i in order:
        expected_ran.append(i)
        result = gate_result(spec[i][1], i)
        if not result.allowed:
            expected = result
            break
        if result.message:
            expected = result
    expected_by = f"h{expected_ran[-1]}" if not expected.allowed else None
    if expected.allowed and expected.message:
        expected_by = f"h{int(expected.message.split()[-1])}"

    result = asyncio.run(registry.adecide(GATE, GATE_CTX))
    assert ran == expected_ran
    assert result == expected
    assert result.decided_by == expected_by
    if expected is HookResult.allow():
        assert result is HookResult.allow()
    if not any(is_async for _, _, is_async in spec):
        ran.clear()
        assert registry.decide(GATE, GATE_CTX) == expected
        assert ran == expected_ran


@LAWS
@given(st.lists(st.tuples(priorities, st.none() | st.text(max_size=3)), max_size=8))
def test_transform_is_a_left_fold(spec: list[tuple[int, str | None]]) -> None:
    """transform equals a left fold of the hooks, in dispatch order, over the subject; None keeps it."""
    registry = HookRegistry()
    seen: list[str] = []

    def make(suffix: str | None) -> Callable[[OnToolErrorContext], str | None]:
        def hook(ctx: OnToolErrorContext) -> str | None:
            seen.append(ctx.message)
            return None if suffix is None else ctx.message + suffix

        return hook

    for i, (priority, suffix) in enumerate(spec):
        registry.register(ERROR, make(suffix), name=f"t{i}", priority=priority)
    value = ERROR_CTX.message
    expected_seen = []
    for i in dispatch_order([p for p, _ in spec]):
        expected_seen.append(value)
        suffix = spec[i][1]
        value = value if suffix is None else value + suffix
    result = registry.transform(ERROR, ERROR_CTX)
    assert result == value
    assert seen == expected_seen
    if all(suffix is None for _, suffix in spec):
        assert result is ERROR_CTX.message


# --- RequestPatch.merge -----------------------------------------------------------

SCALARS = {
    "preamble": st.none() | st.sampled_from(["a", "b"]),
    "temperature": st.none() | st.sampled_from([0.0, 0.5, 1.0]),
    "max_tokens": st.none() | st.sampled_from([10, 20]),
    "tool_choice": st.none() | st.sampled_from(["auto", "none"]),
}
patches = st.builds(
    RequestPatch,
    extra_context=st.none() | st.lists(st.sampled_from("xyz"), max_size=2).map(tuple),
    additional_params=st.none() | st.dictionaries(st.sampled_from("kl"), st.integers(0, 3), max_size=2),
    active_tools=st.none() | st.frozensets(st.sampled_from(["bash", "read", "write"])),
    **SCALARS,
)


def expected_merge(base: RequestPatch, sequence: list[RequestPatch]) -> tuple[dict[str, object], list[str]]:
    """Apply DESIGN §2's per-field rules by hand: the merged fields and the conflicts logged."""
    fields: dict[str, Any] = {name: getattr(base, name) for name in RequestPatch.__dataclass_fields__}
    conflicts = []
    for patch in sequence:
        if patch.extra_context is not None:
            fields["extra_context"] = (fields["extra_context"] or ()) + patch.extra_context
        if patch.additional_params is not None:
            fields["additional_params"] = {**(fields["additional_params"] or {}), **patch.additional_params}
        for name in SCALARS:
            value = getattr(patch, name)
            if value is not None:
                if fields[name] is not None and fields[name] != value:
                    conflicts.append(name)
                fields[name] = value
        if patch.active_tools is not None:
            mine = fields["active_tools"]
            fields["active_tools"] = patch.active_tools if mine is None else mine & patch.active_tools
    return fields, conflicts


def returns(patch: RequestPatch, ctx: PreModelCallContext) -> RequestPatch:
    """A patcher returning `patch` (bound with functools.partial)."""
    return patch


@LAWS
@given(patches, st.lists(patches, max_size=6))
def test_patch_merge_obeys_its_field_rules(base: RequestPatch, sequence: list[RequestPatch]) -> None:
    """Merging patches follows the per-field rules, logs each conflict by field name, and equals pre_model_call."""
    fields, conflicts = expected_merge(base, sequence)
    with capture_logs() as logs:
        merged = functools.reduce(RequestPatch.merge, sequence, base)
    assert {name: getattr(merged, name) for name in fields} == fields
    assert [e["field"] for e in logs if e["event"] == "patch_conflict"] == conflicts
    assert all(set(e) == {"event", "log_level", "field"} for e in logs)

    registry = HookRegistry()
    for i, patch in enumerate(sequence):
        registry.register(HookPoint.PRE_MODEL_CALL, functools.partial(returns, patch), name=f"p{i}")
    ctx = PreModelCallContext(prompt="", history=(), turn=1, patch=base)
    assert registry.transform(HookPoint.PRE_MODEL_CALL, ctx) == merged


# --- ordering, inclusion and removal ---------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("own"), priorities),
        st.tuples(st.just("include"), priorities),
        st.tuples(st.just("replace"), priorities),
    ),
    max_size=10,
)


@LAWS
@given(ops, st.lists(priorities, max_size=4), st.lists(priorities, max_size=3))
def test_include_splices_the_included_hooks_in_place(
    steps: list[tuple[str, int]], child_before: list[int], child_after: list[int]
) -> None:
    """callbacks() and dispatch equal the stable priority sort with the inclusion spliced in at its place, live."""
    registry = HookRegistry()
    child = HookRegistry()
    trace: list[str] = []

    def hook(name: str) -> Callable[[PostTurnContext], None]:
        return lambda ctx: trace.append(name)

    for j, priority in enumerate(child_before):
        child.register(OBSERVE, hook(f"c{j}"), name=f"c{j}", priority=priority)
    # The model: (priority, position) per item; an item is a hook name or the child's slot.
    model: list[tuple[int, int, str]] = []
    included = False
    for position, (kind, priority) in enumerate(steps):
        if kind == "include" and not included:
            registry.include(child, priority=priority)
            model.append((priority, position, "<child>"))
            included = True
        elif kind == "replace" and model and any(item != "<child>" for _, _, item in model):
            # Re-register the first own hook under its name: new priority, predecessor's place.
            index, (_, old_position, name) = next((k, m) for k, m in enumerate(model) if m[2] != "<child>")
            registry.register(OBSERVE, hook(name), name=name, priority=priority)
            model[index] = (priority, old_position, name)
        else:
            name = f"h{position}"
            registry.register(OBSERVE, hook(name), name=name, priority=priority)
            model.append((priority, position, name))
    for j, priority in enumerate(child_after, start=len(child_before)):
        child.register(OBSERVE, hook(f"c{j}"), name=f"c{j}", priority=priority)  # after the include: shows at once

    child_names = [r.name for r in child.callbacks(OBSERVE)]
    assert child_names == [f"c{j}" for j in dispatch_order(child_before + child_after)]
    expected: list[str] = []
    for _, _, item in sorted(model, key=lambda m: (-m[0], m[1])):
        expected += child_names if item == "<child>" else [item]
    assert [r.name for r in registry.callbacks(OBSERVE)] == expected
    registry.notify(OBSERVE, OBSERVE_CTX)
    assert trace == expected
    assert len(registry) == len(expected)


def first(ctx: PostTurnContext) -> None:
    """A pooled observer."""


def second(ctx: PostTurnContext) -> None:
    """Another pooled observer."""


def third(ctx: PostTurnContext) -> None:
    """A third pooled observer."""


POOL: list[Callable[[PostTurnContext], None]] = [first, second, third]


@LAWS
@given(st.lists(st.tuples(st.sampled_from(range(3)), priorities), max_size=10), st.sampled_from(range(3)))
def test_unregister_removes_every_copy_and_nothing_else(spec: list[tuple[int, int]], target: int) -> None:
    """After unregister(fn), callbacks() holds no hook of fn; every other hook stays, in order; the count is exact."""
    registry = HookRegistry()
    for i, (fn, priority) in enumerate(spec):
        registry.register(OBSERVE, POOL[fn], name=f"r{i}", priority=priority)
    before = registry.callbacks(OBSERVE)
    removed = registry.unregister(POOL[target])
    after = registry.callbacks(OBSERVE)
    assert removed == sum(1 for fn, _ in spec if fn == target)
    assert all(r.callback is not POOL[target] for r in after)
    assert list(after) == [r for r in before if r.callback is not POOL[target]]
    assert registry.unregister(POOL[target]) == 0
