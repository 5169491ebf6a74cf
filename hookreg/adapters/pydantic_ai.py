"""Drive a pydantic-ai agent from a HookRegistry through one capability (``pip install 'hookreg[pydantic-ai]'``).

Example:
    >>> agent = Agent(model, tools=[...], capabilities=[hookreg_capability(registry)])  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from hookreg._context import (
    OnSessionEndContext,
    OnSessionStartContext,
    PostTurnContext,
    RunContext,
    RunOutcome,
)
from hookreg._points import HookPoint
from hookreg._surface import HookRegistry
from hookreg.adapters import _missing_framework, _ToolCall

try:
    from pydantic_ai import RunContext as PaiRunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ToolFailed
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.tools import ToolDefinition
except ImportError as _error:  # pragma: no cover - exercised by a test that hides the framework
    raise _missing_framework("pydantic_ai", "pydantic-ai", _error) from _error

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import ValidatedToolArgs, WrapRunHandler, WrapToolExecuteHandler
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult

__all__ = ["HookregCapability", "hookreg_capability"]


class HookregCapability(AbstractCapability[Any]):
    """A pydantic-ai capability that runs a `HookRegistry`'s hooks inside the agent loop.

    Tool calls: ``transform_tool_input`` rewrites the validated arguments,
    ``pre_tool_call_decide`` gates the rewritten call (a deny, or a failing
    gate, becomes a failed tool result carrying the reason, via
    `pydantic_ai.exceptions.ToolFailed`; the tool never runs; an ``ask`` is
    answered by ``on_interaction``), ``permission_denied`` observes denials.
    An exception from the tool fires ``post_tool_call_failure``; when
    ``on_tool_error`` hooks exist their text reaches the model as a failed
    tool result, otherwise the exception propagates as pydantic-ai would let
    it. A result passes through ``transform_tool_result`` (the model then sees
    the presentation string) and ``post_tool_call``.

    Run points: ``on_session_start`` before the run (``session_id`` is the
    pydantic-ai conversation id, or the run id; ``goal`` the prompt text),
    ``post_turn`` after each model response, ``on_session_end`` with a
    ``completed`` or ``failed`` outcome. Each agent run gets its own
    `hookreg.RunContext` (one scratchpad per run) whose ``turn`` is
    pydantic-ai's run step.

    Sync and async hooks both work: hooks are awaited with the registry's
    ``a``-methods inside pydantic-ai's async callbacks.
    """

    def __init__(self, registry: HookRegistry, *, run: RunContext | None = None) -> None:
        """Wrap `registry`.

        Args:
            registry: The hooks to run.
            run: The run context for this agent run; `for_run` gives every
                agent run a fresh one, so leave it unset.
        """
        self.registry: HookRegistry = registry
        self.run: RunContext = run or RunContext()

    async def for_run(self, ctx: PaiRunContext[Any]) -> HookregCapability:
        """Return a copy holding a fresh `hookreg.RunContext` for this agent run."""
        run_id = ctx.run_id or RunContext().run_id
        session_id = ctx.conversation_id or run_id
        agent_name = ctx.agent.name if ctx.agent is not None else None
        return HookregCapability(
            self.registry, run=RunContext(run_id=run_id, session_id=session_id, agent_name=agent_name)
        )

    def _turn(self, ctx: PaiRunContext[Any]) -> RunContext:
        return self.run if self.run.turn == ctx.run_step else dataclasses.replace(self.run, turn=ctx.run_step)

    async def wrap_run(self, ctx: PaiRunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        """Fire ``on_session_start`` and ``on_session_end`` around the run."""
        registry = self.registry
        prompt = ctx.prompt if isinstance(ctx.prompt, str) else ""
        start = OnSessionStartContext(session_id=self.run.session_id, goal=prompt, run=self.run)
        await registry.anotify(HookPoint.ON_SESSION_START, start)
        try:
            result = await handler()
        except Exception as exc:
            outcome = RunOutcome(status="failed", reason=type(exc).__name__, turns=ctx.run_step)
            end = OnSessionEndContext(session_id=self.run.session_id, outcome=outcome, run=self._turn(ctx))
            await registry.anotify(HookPoint.ON_SESSION_END, end)
            raise
        outcome = RunOutcome(status="completed", turns=ctx.run_step)
        end = OnSessionEndContext(session_id=self.run.session_id, outcome=outcome, run=self._turn(ctx))
        await registry.anotify(HookPoint.ON_SESSION_END, end)
        return result

    async def after_model_request(
        self, ctx: PaiRunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        """Fire ``post_turn`` with the response's text."""
        if self.registry.has_hooks(HookPoint.POST_TURN):
            post = PostTurnContext(turn=ctx.run_step, response_text=response.text or "", run=self._turn(ctx))
            await self.registry.anotify(HookPoint.POST_TURN, post)
        return response

    async def wrap_tool_execute(
        self,
        ctx: PaiRunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """Rewrite, gate, run and observe one tool call (see the class docstring)."""
        tool = _ToolCall(self.registry, self._turn(ctx), call.tool_name, call.tool_call_id)
        effective, denial = await tool.gate(args)
        if denial is not None:
            raise ToolFailed(denial)
        started = time.perf_counter()
        try:
            raw = await handler(dict(effective))
        except Exception as exc:
            # pydantic-ai's control-flow signals (retry, skip, defer, ToolFailed) are not tool failures.
            if type(exc).__module__.startswith("pydantic_ai"):
                raise
            ms = (time.perf_counter() - started) * 1000
            message = await tool.failed(effective, exc, str(exc), ms)
            if not self.registry.has_hooks(HookPoint.ON_TOOL_ERROR):
                raise
            raise ToolFailed(message) from exc
        return await tool.succeeded(effective, raw, (time.perf_counter() - started) * 1000)


def hookreg_capability(registry: HookRegistry) -> HookregCapability:
    """Return the capability that runs `registry`'s hooks in a pydantic-ai agent.

    Args:
        registry: The hooks to run.

    Returns:
        A capability for ``Agent(..., capabilities=[...])`` (or per run).
    """
    return HookregCapability(registry)
