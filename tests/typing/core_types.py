"""Type tests for the core surface: what must type-check, and what mypy must reject."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import assert_type

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    ModelSelectContext,
    PostToolCallContext,
    PreToolCallDecideContext,
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
registry.decide(HookPoint.POST_TOOL_CALL, ctx)  # type: ignore[call-overload]
registry.decide(HookPoint.STOP, ctx)  # type: ignore[call-overload]
registry.notify(HookPoint.PRE_TOOL_CALL_DECIDE, ctx)  # type: ignore[call-overload]
ctx.tool_name = "other"  # type: ignore[misc]
PreToolCallDecideContext("bash", {}, "c1")  # type: ignore[call-arg]
HookResult.deny()  # type: ignore[call-arg]
dataclasses.replace(ctx, args={"a": 1}).args["a"] = 2  # type: ignore[index]
