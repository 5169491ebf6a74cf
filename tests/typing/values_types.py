"""Type tests for values: contexts built through their run, and checked result fields."""

from __future__ import annotations

from typing import Any, assert_type

from hookreg import (
    HookPoint,
    HookResult,
    OnSessionStartContext,
    PostToolCallContext,
    PreToolCallDecideContext,
    RunContext,
)

run = RunContext()

# --- what must pass -------------------------------------------------------------

assert_type(run.context(PreToolCallDecideContext, tool_name="bash", args={}, call_id="c1"), PreToolCallDecideContext)
assert_type(
    run.context(
        PostToolCallContext,
        tool_name="bash",
        args={"a": 1},
        call_id="c1",
        result="ok",
        raw_result=None,
        duration_ms=1.0,
        metadata={},
    ),
    PostToolCallContext,
)
assert_type(run.context(OnSessionStartContext, goal="g"), OnSessionStartContext)
assert_type(run.context(HookPoint.PRE_TOOL_CALL_DECIDE.context, tool_name="bash", args={}, call_id="c1"), Any)

# --- what mypy must reject ------------------------------------------------------

run.context(PreToolCallDecideContext, tool_name=None, args={}, call_id="c1")  # type: ignore[arg-type]
run.context(PreToolCallDecideContext, tool="bash", args={}, call_id="c1")  # type: ignore[call-arg]
run.context(PreToolCallDecideContext, args={}, call_id="c1")  # type: ignore[call-arg]
run.context("pre_tool_call_decide", tool_name="bash")  # type: ignore[arg-type]
# A HookPoint works at runtime; type checkers want the class, or `point.context`.
run.context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="bash", args={}, call_id="c1")  # type: ignore[arg-type]
HookResult.deny(None)  # type: ignore[arg-type]
