"""Type tests for the toolkit: trace, describe, use_policy and hookreg.testing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_type

import hookreg
from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    ModelSelectContext,
    PostToolCallContext,
    PreToolCallDecideContext,
    Registration,
)
from hookreg.policy import Policy, Rule, allow, ask, deny, from_claude_permissions
from hookreg.testing import (
    DispatchRecord,
    HookCall,
    RecordingObserver,
    Trace,
    acall_hook,
    call_hook,
    call_point,
    make_context,
)

registry = HookRegistry()

# --- what must pass -------------------------------------------------------------

with registry.trace() as trace:
    assert_type(trace, Trace)
assert_type(trace[0], DispatchRecord)
assert_type(trace[0].calls, tuple[HookCall, ...])
assert_type(trace[0].decided_by, str | None)
assert_type(registry.describe(), str)
# The trace records are hookreg's own, loaded on first use at run time; type checkers see them as imports.
assert_type(registry.trace(), hookreg.Trace)
assert_type(trace[0], hookreg.DispatchRecord)
assert_type(trace[0].calls[0], hookreg.HookCall)

assert_type(allow("read_*"), Rule)
assert_type(deny("bash", when=lambda ctx: "rm" in str(ctx.args), reason="no rm"), Rule)
assert_type(registry.use_policy(allow("read_*"), ask("write_*"), default="deny"), Registration)
assert_type(registry.use_policy(allow("bash(command=git *)"), default="ask"), Registration)
assert_type(from_claude_permissions({"permissions": {}}, tool_names={"Bash": "shell"}), Policy)
assert_type(registry.use_policy(from_claude_permissions("settings.json")), Registration)

assert_type(make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="bash"), PreToolCallDecideContext)
assert_type(make_context(HookPoint.MODEL_SELECT), ModelSelectContext)
assert_type(make_context("post_tool_call"), object)


def gate(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow()


async def agate(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow()


def rewrite(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
    return None


assert_type(call_hook(HookPoint.PRE_TOOL_CALL_DECIDE, gate), HookResult)
assert_type(call_hook(HookPoint.TRANSFORM_TOOL_INPUT, rewrite), Mapping[str, object] | None)


async def awaits() -> None:
    assert_type(await acall_hook(HookPoint.PRE_TOOL_CALL_DECIDE, agate), HookResult)


assert_type(call_point(registry, HookPoint.PRE_TOOL_CALL_DECIDE), DispatchRecord)

seen: RecordingObserver[PostToolCallContext] = RecordingObserver()
registry.register(HookPoint.POST_TOOL_CALL, seen)
registry.post_tool_call(RecordingObserver())
assert_type(seen.last, PostToolCallContext)
assert_type(RecordingObserver().last, object)

# --- what mypy must reject ------------------------------------------------------

registry.use_policy("bash")  # type: ignore[arg-type]
_ = hookreg.Tracer  # type: ignore[attr-defined]  # the lazy loading opens no door to unknown names
registry.use_policy(allow("x"), default="maybe")  # type: ignore[arg-type]
from_claude_permissions({}, default="never")  # type: ignore[arg-type]
deny("bash", when=lambda ctx: ctx.missing)  # type: ignore[attr-defined]
other = make_context(HookPoint.MODEL_SELECT)
call_hook(HookPoint.PRE_TOOL_CALL_DECIDE, gate, ctx=other)  # type: ignore[arg-type]
registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, seen)  # type: ignore[arg-type]
