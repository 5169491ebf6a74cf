"""Adapters driving agent frameworks from one HookRegistry; import ``hookreg.adapters.<framework>`` on demand.

This package imports no framework. Each adapter module imports its framework
and raises `ImportError` naming the extra to install when it is missing. Every
rule of the tool-call and run lifecycle lives in `hookreg._lifecycle` (the
same flows `hookreg.harness` drives); adapters only translate their
framework's events into those flows. `_ToolCall` is the thin async shim the
adapters' tool callbacks use.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from hookreg._context import RunContext, ToolCallRequest
from hookreg._lifecycle import (
    GateResult,
    adrive,
    failed,
    gate,
    missing_framework,
    refused_retry,
    require_registry,
    succeeded,
)
from hookreg._points import HookPoint
from hookreg._surface import HookRegistry

__all__: list[str] = []

# One copy of each, in hookreg._lifecycle; the adapters import these names.
_require_registry = require_registry
_refused_retry = refused_retry
_missing_framework = missing_framework


@dataclass(frozen=True, slots=True)
class _ToolCall:
    """One tool call, driven through `hookreg._lifecycle` from an async framework callback."""

    registry: HookRegistry
    run: RunContext
    tool_name: str
    call_id: str

    async def gate(
        self, args: object, *, known: Collection[str] | None = None, offered: Collection[str] | None = None
    ) -> GateResult:
        """Check, rewrite and gate the call (the model's raw `args`); run the tool only when ``.allowed``.

        `known` defaults to this tool alone: the framework already found it.
        """
        known = {self.tool_name} if known is None else known
        steps = gate(self.registry, self.run, self.tool_name, self.call_id, args, known=known, offered=offered)
        return await adrive(self.registry, steps)

    def _call(self, args: Mapping[str, object]) -> ToolCallRequest:
        return ToolCallRequest(self.call_id, self.tool_name, args)

    async def failed(self, args: Mapping[str, object], error: BaseException, message: str, ms: float) -> str:
        """Observe a tool failure and return the error text the model sees, rewritten by ``on_tool_error``."""
        steps = failed(self.registry, self.run, self._call(args), error, message=message, duration_ms=ms)
        return await adrive(self.registry, steps)

    async def succeeded(self, args: Mapping[str, object], raw: object, ms: float) -> object:
        """Rewrite the result for the model and observe it; return what the model sees.

        Without ``transform_tool_result`` hooks the framework receives `raw`
        unchanged (it serialises results its own way); with them, the final
        presentation string.
        """
        text = await adrive(self.registry, succeeded(self.registry, self.run, self._call(args), raw, duration_ms=ms))
        return text if self.registry.has_hooks(HookPoint.TRANSFORM_TOOL_RESULT) else raw
