"""Shared helpers of the reliability tests: stress factor, contexts for every point, both surfaces, settings."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings

from hookreg import (
    HookPoint,
    HookRegistry,
    HookStyle,
    Message,
    PreToolCallDecideContext,
    RequestPatch,
    RunContext,
    RunOutcome,
    ToolCallRequest,
    ToolCallResolution,
    ToolErrorKind,
)

# HOOKREG_STRESS=10 multiplies every iteration and example count, for long local runs.
STRESS = max(1, int(os.environ.get("HOOKREG_STRESS", "1")))

settings.register_profile(
    "hookreg-reliability",
    max_examples=40 * STRESS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
LAWS = settings.get_profile("hookreg-reliability")


def field_value(point: HookPoint, name: str, secret: str) -> object:
    """A value for field `name` of `point`'s context that carries `secret` wherever the type allows."""
    if name == "error":
        return secret if point is HookPoint.INVALID_TOOL_CALL else RuntimeError(secret)
    values: dict[str, object] = {
        "args": {"path": secret, secret: secret},
        "metadata": {"meta": secret},
        "usage": {"input_tokens": 1},
        "history": (Message("user", secret, name=secret, tool_call_id=secret),),
        "tool_calls": (ToolCallRequest(secret, secret, {"arg": secret}),),
        "available_tools": (secret,),
        "options": (secret,),
        "kind": ToolErrorKind.EXCEPTION,
        "raw_result": {"raw": secret},
        "outcome": RunOutcome(status="completed", reason=secret),
        "patch": RequestPatch(extra_context=(secret,), additional_params={"p": secret}, preamble=secret),
        "duration_ms": 1.5,
        "max_tokens": 64,
        "run": RunContext(run_id=secret, session_id=secret, agent_name=secret),
        "session_id": secret,  # a session context's session_id is its run's
    }
    if name in values:
        return values[name]
    if name in {"turn", "depth", "transcript_len", "removed", "summary_chars", "continuation_count"}:
        return 1
    return f"{name}:{secret}"  # every remaining field is a str (or str | None)


def make_context(point: HookPoint, secret: str = "s3cr3t", **overrides: object) -> Any:
    """Build `point`'s context with `secret` in every field that can hold it.

    `overrides` apply to the fields the context has and are ignored elsewhere.
    """
    names = [f.name for f in dataclasses.fields(point.context)]
    values = {name: overrides[name] if name in overrides else field_value(point, name, secret) for name in names}
    return point.context(**values)


def as_hook(fn: Callable[[Any], object], *, is_async: bool) -> Callable[[Any], Any]:
    """`fn` itself for the sync surface; an async hook that suspends once, then calls it, for the async one."""
    if not is_async:
        return fn

    async def async_hook(ctx: Any) -> Any:
        await asyncio.sleep(0)
        return fn(ctx)

    return async_hook


def dispatch(registry: HookRegistry, point: HookPoint, ctx: object, *, is_async: bool) -> Any:
    """Dispatch `ctx` at `point` by its style, on the sync surface or (in a fresh event loop) the async one."""
    method = {HookStyle.DECIDE: "decide", HookStyle.TRANSFORM: "transform", HookStyle.OBSERVE: "notify"}[point.style]
    if is_async:
        return asyncio.run(getattr(registry, "a" + method)(point, ctx))
    return getattr(registry, method)(point, ctx)


def resolve(registry: HookRegistry, ctx: PreToolCallDecideContext, *, is_async: bool) -> ToolCallResolution:
    """`resolve_tool_call`, or `aresolve_tool_call` in a fresh event loop."""
    if is_async:
        return asyncio.run(registry.aresolve_tool_call(ctx))
    return registry.resolve_tool_call(ctx)
