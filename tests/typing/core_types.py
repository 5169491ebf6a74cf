"""Type tests for the core surface: what must type-check, and what mypy must reject."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final, assert_type

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    ModelSelectContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PreToolCallDecideContext,
    PreTurnContext,
    Registration,
    RequestPatch,
    ToolCallResolution,
    TurnAction,
)

registry = HookRegistry()
ctx = PreToolCallDecideContext(tool_name="bash", args={}, call_id="c1")


# --- what must pass -------------------------------------------------------------


@registry.pre_tool_call_decide
def gate(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow()


@registry.transform_tool_input(tools=["bash"], priority=10, name="add-timeout", on_error="ignore")
def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
    return None


@registry.post_tool_call
def audit(ctx: PostToolCallContext) -> None:
    pass


@registry.model_select
def pick(ctx: ModelSelectContext) -> str | None:
    return None


def generic_logger(ctx: object) -> None:
    pass


assert_type(gate(ctx=ctx), HookResult)  # the decorator kept the exact function type, keywords included
assert_type(registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate), Registration)
assert_type(registry.register(HookPoint.POST_TOOL_CALL, generic_logger), Registration)
assert_type(registry.register("post_turn", generic_logger), Registration)
assert_type(registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx), HookResult)
assert_type(registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, ctx), Mapping[str, object])
assert_type(registry.resolve_tool_call(ctx), ToolCallResolution)
assert_type(registry.has_hooks(HookPoint.STOP), bool)
assert_type(RequestPatch().merge(RequestPatch()), RequestPatch)
assert_type(TurnAction.repeat(), TurnAction)
assert_type(InvalidToolCallAction.fail(), InvalidToolCallAction)
registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("no"))


# register() at a literal point, by member or value string: the point's own callable type.


async def async_logger(ctx: object) -> None:
    pass


def any_logger(ctx: Any) -> None:
    pass


def tool_logger(ctx: PostToolCallContext | PostToolCallFailureContext) -> None:
    pass


def turn_gate(ctx: PreTurnContext) -> HookResult:
    return HookResult.allow()


assert_type(registry.register("post_tool_call", audit), Registration)
assert_type(registry.register("pre_tool_call_decide", gate, tools="bash", on_error="deny"), Registration)
assert_type(registry.register("transform_tool_input", add_timeout), Registration)
assert_type(registry.register("post_tool_call_failure", tool_logger), Registration)
assert_type(registry.register("pre_turn", turn_gate, on_error="raise"), Registration)
registry.register("pre_tool_call_decide", lambda ctx: HookResult.deny(ctx.tool_name))  # ctx is the point's context
registry.register(HookPoint.MODEL_SELECT, lambda ctx: ctx.selected_model)

# A context-agnostic hook (it takes `object`, or `Any`) registers at any point, even one known only at run time.
for point in HookPoint:
    assert_type(registry.register(point, generic_logger), Registration)
    registry.register(point.value, async_logger)
    registry.register(point, any_logger, on_error="ignore")
    registry.register(point, lambda ctx: None)

# Hot loops: a point bound to a `Final` constant keeps its literal type, so dispatch and
# register stay exactly typed; a plain variable widens to HookPoint (see the rejections).
DECIDE: Final = HookPoint.PRE_TOOL_CALL_DECIDE
ENDED: Final = "post_tool_call"
assert_type(registry.decide(DECIDE, ctx), HookResult)
assert_type(registry.register(DECIDE, gate), Registration)
assert_type(registry.register(ENDED, audit), Registration)


def hot_loop(calls: list[PreToolCallDecideContext]) -> list[HookResult]:
    decide = registry.decide
    return [decide(DECIDE, call) for call in calls]


# What a point's hooks return, and a hook's name as tables show it.
assert_type(DECIDE.expected_return, str)
assert_type(DECIDE.is_valid_return(HookResult.allow()), bool)
assert_type(registry.register(DECIDE, gate).label, str)


# --- what mypy must reject ----------------------------------------------------------


@registry.pre_tool_call_decide  # type: ignore[type-var]
def returns_bool(ctx: PreToolCallDecideContext) -> bool:
    return True


@registry.pre_tool_call_decide  # type: ignore[type-var]
def takes_two(ctx: PreToolCallDecideContext, extra: int) -> HookResult:
    return HookResult.allow()


@registry.transform_tool_input  # type: ignore[type-var]
def returns_list(ctx: PreToolCallDecideContext) -> list[str]:
    return []


@registry.post_tool_call  # type: ignore[type-var]
def observer_for_another_context(ctx: ModelSelectContext) -> None:
    pass


registry.pre_turn(tools="bash")  # type: ignore[call-overload]
registry.pre_tool_call_decide(on_error="skip")  # type: ignore[call-overload]
registry.post_turn(on_error="deny")  # type: ignore[call-overload]
registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, returns_bool)  # type: ignore[arg-type]
registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: True)  # type: ignore[arg-type, return-value]
registry.register("pre_tool_call_decide", lambda ctx: 1)  # type: ignore[arg-type, return-value]
registry.register(HookPoint.POST_TOOL_CALL, lambda ctx: True)  # type: ignore[arg-type, return-value]
registry.register("post_tool_call", gate)  # type: ignore[arg-type]  # a gate is no observer
registry.register(HookPoint.POST_TOOL_CALL, gate)  # type: ignore[arg-type]
registry.register("pre_tool_call_decide", audit)  # type: ignore[arg-type]  # another point's context
registry.register(HookPoint.MODEL_SELECT, lambda ctx: ctx.tool_name)  # type: ignore[attr-defined]
registry.register("post_turn", tool_logger)  # type: ignore[arg-type]
registry.register("post_tool_call", audit, tools=3)  # type: ignore[call-overload]
registry.register("pre_turn", turn_gate, tools="bash")  # type: ignore[arg-type]  # pre_turn is not tool-scoped
registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, on_error="skip")  # type: ignore[arg-type]
for point in HookPoint:
    registry.register(point, gate)  # type: ignore[arg-type]  # at a run-time point the hook must take any context
    registry.register(point.value, returns_bool)  # type: ignore[arg-type]
    registry.register(point, lambda ctx: 0)  # type: ignore[arg-type, return-value]
widened = HookPoint.PRE_TOOL_CALL_DECIDE  # not Final: mypy widens it to HookPoint
registry.register(widened, gate)  # type: ignore[arg-type]  # mypy only: pyright keeps the literal
registry.decide(HookPoint.POST_TOOL_CALL, ctx)  # type: ignore[call-overload]
registry.decide(HookPoint.STOP, ctx)  # type: ignore[call-overload]
registry.notify(HookPoint.PRE_TOOL_CALL_DECIDE, ctx)  # type: ignore[call-overload]
ctx.tool_name = "other"  # type: ignore[misc]
PreToolCallDecideContext("bash", {}, "c1")  # type: ignore[call-arg]
HookResult.deny()  # type: ignore[call-arg]
dataclasses.replace(ctx, args={"a": 1}).args["a"] = 2  # type: ignore[index]

# An inclusion gives back the very registry it included, typed surface and all.
assert_type(registry.include(HookRegistry()).registry, HookRegistry)
registry.include(HookRegistry()).registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
