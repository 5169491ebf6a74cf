"""Adapters driving agent frameworks from one HookRegistry; import ``hookreg.adapters.<framework>`` on demand.

This package imports no framework. Each adapter module imports its framework
and raises `ImportError` naming the extra to install when it is missing. The
private helpers below hold the tool-call flow every adapter shares, so each
framework honours the tool points in the same order as `hookreg.harness`:
``transform_tool_input`` → ``pre_tool_call_decide`` (an ``ask`` goes to
``on_interaction``) → ``permission_denied`` on a deny; after the tool,
``post_tool_call_failure`` → ``on_tool_error`` on an exception, or
``transform_tool_result`` → ``post_tool_call`` on success.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from hookreg._context import (
    OnInteractionContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PreToolCallDecideContext,
    RunContext,
    ToolErrorKind,
    TransformToolResultContext,
)
from hookreg._errors import HookTypeError, HookValueError
from hookreg._points import HookPoint
from hookreg._results import Decision
from hookreg._surface import HookRegistry

__all__: list[str] = []

_GATE_POINTS = (HookPoint.TRANSFORM_TOOL_INPUT, HookPoint.PRE_TOOL_CALL_DECIDE)


def _require_registry(registry: object, building: str) -> HookRegistry:
    """Return `registry`, or raise naming what was being built when it is not a HookRegistry."""
    if not isinstance(registry, HookRegistry):
        msg = (
            f"Cannot build {building} from {registry!r}: it is not a HookRegistry. "
            "Pass the hookreg.HookRegistry holding your hooks."
        )
        raise HookTypeError(msg)
    return registry


def _refused_retry(turn: int, hook: str | None, tool_names: list[str]) -> HookValueError:
    """The error for a retry asked of an answer that carries tool calls (as `hookreg.harness` refuses it)."""
    msg = (
        f"Cannot retry turn {turn} as hook {hook!r} asked: the answer carries tool calls {tool_names}, "
        "which would be dropped unrun. Return TurnAction.continue_run() for such turns, "
        "and gate the calls in pre_tool_call_decide instead."
    )
    return HookValueError(msg, point=HookPoint.MODEL_TURN_FINISHED)


def _missing_framework(module: str, extra: str, error: ImportError) -> ImportError:
    """Build the ImportError an adapter raises when its framework is not installed."""
    msg = (
        f"Cannot import hookreg.adapters.{module}: {error.name or module} is not installed. "
        f"Install it with: pip install 'hookreg[{extra}]'."
    )
    missing = ImportError(msg, name=error.name)
    missing.__cause__ = error
    return missing


@dataclass(frozen=True, slots=True)
class _ToolCall:
    """One tool call as the shared flow sees it."""

    registry: HookRegistry
    run: RunContext
    tool_name: str
    call_id: str

    async def gate(self, args: Mapping[str, object]) -> tuple[Mapping[str, object], str | None]:
        """Rewrite and gate the call: return the effective args and the denial text, or ``None`` to run."""
        if not any(self.registry.has_hooks(point) for point in _GATE_POINTS):
            return args, None
        ctx = PreToolCallDecideContext(tool_name=self.tool_name, args=args, call_id=self.call_id, run=self.run)
        resolution = await self.registry.aresolve_tool_call(ctx)
        result = resolution.result
        if result.decision is Decision.ASK:
            question = OnInteractionContext(
                question=result.reason, options=("allow", "deny"), tool_name=self.tool_name, run=self.run
            )
            answer = await self.registry.adecide(HookPoint.ON_INTERACTION, question)
            if not answer.allowed:
                denied = PermissionDeniedContext(
                    tool_name=self.tool_name,
                    args=resolution.args,
                    call_id=self.call_id,
                    reason=answer.reason,
                    decided_by=answer.decided_by,
                    run=self.run,
                )
                await self.registry.anotify(HookPoint.PERMISSION_DENIED, denied)
                return resolution.args, answer.reason
            return resolution.args, None
        return resolution.args, None if result.allowed else result.reason

    async def failed(self, args: Mapping[str, object], error: BaseException, message: str, ms: float) -> str:
        """Observe a tool failure and return the error text the model sees, rewritten by ``on_tool_error``."""
        failure = PostToolCallFailureContext(
            tool_name=self.tool_name, args=args, call_id=self.call_id, error=error, duration_ms=ms, run=self.run
        )
        await self.registry.anotify(HookPoint.POST_TOOL_CALL_FAILURE, failure)
        ctx = OnToolErrorContext(
            tool_name=self.tool_name,
            args=args,
            call_id=self.call_id,
            error=error,
            kind=ToolErrorKind.EXCEPTION,
            message=message,
            run=self.run,
        )
        return await self.registry.atransform(HookPoint.ON_TOOL_ERROR, ctx)

    async def succeeded(self, args: Mapping[str, object], raw: object, ms: float) -> object:
        """Rewrite the result for the model and observe it; return what the model sees.

        Without ``transform_tool_result`` hooks the framework receives `raw`
        unchanged (it serialises results its own way); with them, the final
        presentation string.
        """
        presentation = _present(raw)
        if self.registry.has_hooks(HookPoint.TRANSFORM_TOOL_RESULT):
            ctx = TransformToolResultContext(
                tool_name=self.tool_name,
                args=args,
                call_id=self.call_id,
                raw_result=raw,
                presentation=presentation,
                run=self.run,
            )
            presentation = await self.registry.atransform(HookPoint.TRANSFORM_TOOL_RESULT, ctx)
            shown: object = presentation
        else:
            shown = raw
        if self.registry.has_hooks(HookPoint.POST_TOOL_CALL):
            post = PostToolCallContext(
                tool_name=self.tool_name,
                args=args,
                call_id=self.call_id,
                result=presentation,
                raw_result=raw,
                duration_ms=ms,
                metadata={},
                run=self.run,
            )
            await self.registry.anotify(HookPoint.POST_TOOL_CALL, post)
        return shown


def _present(raw: object) -> str:
    """The text a result shows the model: strings as they are, anything else as JSON when it can be."""
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw, default=str)
    except (TypeError, ValueError):
        return str(raw)
