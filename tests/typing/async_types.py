"""Type tests for the async surface: async hooks register typed, a-methods return typed, wrong returns are rejected."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import assert_type

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    PostToolCallContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    Registration,
    RequestPatch,
    TextDeltaContext,
    ToolCallResolution,
    TransformToolResultContext,
    TurnAction,
)

registry = HookRegistry()


# --- async hooks register through the same decorators, keeping their exact type -----


@registry.pre_tool_call_decide
async def gate(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow()


@registry.pre_tool_call_decide(tools="bash", timeout=2.5, on_error="raise")
async def timed_gate(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.deny("no")


@registry.transform_tool_input
async def rewrite(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
    return None


@registry.model_turn_finished
async def turn_check(ctx: ModelTurnFinishedContext) -> TurnAction:
    return TurnAction.repeat()


@registry.invalid_tool_call
async def invalid(ctx: InvalidToolCallContext) -> InvalidToolCallAction | None:
    return None


@registry.pre_model_call
async def patcher(ctx: PreModelCallContext) -> RequestPatch | None:
    return RequestPatch(temperature=0.0)


@registry.model_select
async def selector(ctx: ModelSelectContext) -> str | None:
    return None


@registry.transform_tool_result
async def presenter(ctx: TransformToolResultContext) -> str:
    return ctx.presentation


@registry.post_tool_call
async def audit(ctx: PostToolCallContext) -> None:
    return None


@registry.text_delta
async def on_delta(ctx: TextDeltaContext) -> None:
    return None


class AsyncGate:
    async def __call__(self, ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow()


assert_type(registry.pre_tool_call_decide(AsyncGate()), AsyncGate)
assert_type(registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, timeout=1), Registration)
assert_type(registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, functools.partial(gate)), Registration)


# --- a-methods return the point's type -------------------------------------------------


call = PreToolCallDecideContext(tool_name="bash", args={}, call_id="1")
turn = ModelTurnFinishedContext(turn=1, text="", tool_calls=(), finish_reason=None, max_tokens=None, usage={})
bad_call = InvalidToolCallContext(tool_name="x", args={}, call_id="2", available_tools=(), error="unknown")
request = PreModelCallContext(prompt="", history=(), turn=1, patch=RequestPatch())
select = ModelSelectContext(default_model="m", selected_model="m", patch=RequestPatch())
done = PostToolCallContext(
    tool_name="bash", args={}, call_id="1", result="", raw_result=None, duration_ms=0, metadata={}
)


async def dispatch() -> None:
    # The decorators handed back the very async functions, still typed as such.
    assert_type(await gate(call), HookResult)
    assert_type(await timed_gate(call), HookResult)
    assert_type(await turn_check(turn), TurnAction)
    assert_type(await rewrite(call), Mapping[str, object] | None)
    assert_type(await registry.adecide(HookPoint.PRE_TOOL_CALL_DECIDE, call), HookResult)
    assert_type(await registry.adecide(HookPoint.MODEL_TURN_FINISHED, turn), TurnAction)
    assert_type(await registry.adecide(HookPoint.INVALID_TOOL_CALL, bad_call), InvalidToolCallAction)
    assert_type(await registry.atransform(HookPoint.TRANSFORM_TOOL_INPUT, call), Mapping[str, object])
    assert_type(await registry.atransform(HookPoint.PRE_MODEL_CALL, request), RequestPatch)
    assert_type(await registry.atransform(HookPoint.MODEL_SELECT, select), str)
    assert_type(await registry.anotify(HookPoint.POST_TOOL_CALL, done), None)
    assert_type(await registry.aresolve_tool_call(call), ToolCallResolution)

    # Rejected: a point of another style, and the wrong context.
    await registry.adecide(HookPoint.POST_TOOL_CALL, done)  # type: ignore[call-overload]
    await registry.atransform(HookPoint.TRANSFORM_TOOL_INPUT, turn)  # type: ignore[call-overload]
    await registry.anotify(HookPoint.PRE_TOOL_CALL_DECIDE, call)  # type: ignore[call-overload]


# --- rejected: async hooks returning the wrong type ------------------------------------


async def says_yes(ctx: PreToolCallDecideContext) -> bool:
    return True


async def maybe_decides(ctx: PreToolCallDecideContext) -> HookResult | None:
    return None


async def turn_as_string(ctx: ModelTurnFinishedContext) -> str:
    return "continue"


async def observer_returning_int(ctx: PostToolCallContext) -> int:
    return 1


async def transformer_returning_int(ctx: PreToolCallDecideContext) -> int:
    return 1


async def gate_for_other_context(ctx: PostToolCallContext) -> HookResult:
    return HookResult.allow()


registry.pre_tool_call_decide(says_yes)  # type: ignore[type-var]
registry.pre_tool_call_decide(maybe_decides)  # type: ignore[type-var]
registry.model_turn_finished(turn_as_string)  # type: ignore[type-var]
registry.post_tool_call(observer_returning_int)  # type: ignore[type-var]
registry.transform_tool_input(transformer_returning_int)  # type: ignore[type-var]
registry.pre_tool_call_decide(gate_for_other_context)  # type: ignore[type-var]
registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, says_yes)  # type: ignore[arg-type]


@registry.pre_tool_call_decide  # type: ignore[type-var]
async def decorated_says_yes(ctx: PreToolCallDecideContext) -> bool:
    return True
