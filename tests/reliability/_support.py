"""Shared helpers of the reliability tests: the stress factor, contexts for every point, hypothesis settings."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from hypothesis import HealthCheck, settings

from hookreg import (
    HookPoint,
    Message,
    RequestPatch,
    RunContext,
    RunOutcome,
    ToolCallRequest,
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
