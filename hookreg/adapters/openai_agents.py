"""Drive an OpenAI Agents SDK run from a HookRegistry (``pip install 'hookreg[openai-agents]'``).

Example:
    >>> agent = Agent(name="a", tools=guard_tools([lookup], registry))  # doctest: +SKIP
    >>> await Runner.run(agent, "hi", hooks=hookreg_run_hooks(registry))  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

from hookreg._context import (
    OnSessionEndContext,
    OnSessionStartContext,
    PostTurnContext,
    RunContext,
    RunOutcome,
)
from hookreg._errors import HookTypeError
from hookreg._points import HookPoint
from hookreg._surface import HookRegistry
from hookreg.adapters import _missing_framework, _ToolCall

try:
    from agents import (
        Agent,
        AgentHookContext,
        FunctionTool,
        ItemHelpers,
        ModelResponse,
        RunContextWrapper,
        RunHooks,
        Tool,
    )
    from agents.tool import maybe_invoke_function_tool_failure_error_function, set_function_tool_failure_error_function
    from agents.tool_context import ToolContext
except ImportError as _error:  # pragma: no cover - exercised by a test that hides the framework
    raise _missing_framework("openai_agents", "openai-agents", _error) from _error

__all__ = ["HookregRunHooks", "guard_tool", "guard_tools", "hookreg_run_hooks"]


def guard_tool(tool: FunctionTool, registry: HookRegistry) -> FunctionTool:
    """Return a copy of `tool` whose every call runs `registry`'s tool hooks.

    The SDK has no input-rewrite point and runs its own tool guardrails on the
    model's raw arguments, so the copy wraps the tool's invoker instead:
    ``transform_tool_input`` rewrites the parsed arguments,
    ``pre_tool_call_decide`` gates the rewritten call (a deny, or a failing
    gate, returns the reason as the tool output the model sees and the tool
    never runs; an ``ask`` is answered by ``on_interaction``) and
    ``permission_denied`` observes denials. An exception from the tool fires
    ``post_tool_call_failure``, then ``on_tool_error`` chains over the text
    the tool's own ``failure_error_function`` would have shown (the SDK's
    default formatter unless the tool set one); a tool created with
    ``failure_error_function=None`` and no ``on_tool_error`` hook re-raises,
    as the SDK would. A result passes through ``transform_tool_result`` and
    ``post_tool_call``. Each call gets a fresh detached `hookreg.RunContext`.

    Args:
        tool: A function tool, e.g. from ``@function_tool``.
        registry: The hooks to run.

    Returns:
        A new `FunctionTool` with the same name, schema and options.

    Raises:
        HookTypeError: `tool` is not a `FunctionTool` (also a `TypeError`).
    """
    if not isinstance(tool, FunctionTool):
        msg = (
            f"Cannot guard {tool!r}: only FunctionTool calls pass through Python code the adapter can hook. "
            "Pass function tools, or use guard_tools() to leave hosted tools as they are."
        )
        raise HookTypeError(msg)
    guarded = copy.copy(tool)
    # The copy re-raises tool errors so the wrapper below can observe and rewrite them.
    set_function_tool_failure_error_function(guarded, None)
    invoke = guarded.on_invoke_tool

    async def invoke_with_hooks(ctx: ToolContext[Any], input_json: str) -> Any:
        call = _ToolCall(registry, RunContext(), tool.name, ctx.tool_call_id)
        args: Mapping[str, object] = json.loads(input_json) if input_json.strip() else {}
        effective, denial = await call.gate(args)
        if denial is not None:
            return denial
        started = time.perf_counter()
        try:
            raw = await invoke(ctx, input_json if effective is args else json.dumps(dict(effective)))
        except Exception as exc:
            ms = (time.perf_counter() - started) * 1000
            base = await maybe_invoke_function_tool_failure_error_function(function_tool=tool, context=ctx, error=exc)
            message = await call.failed(effective, exc, base if base is not None else str(exc), ms)
            if base is None and not registry.has_hooks(HookPoint.ON_TOOL_ERROR):
                raise
            return message
        return await call.succeeded(effective, raw, (time.perf_counter() - started) * 1000)

    guarded.on_invoke_tool = invoke_with_hooks
    return guarded


def guard_tools(tools: Iterable[Tool], registry: HookRegistry) -> list[Tool]:
    """Guard every `FunctionTool` in `tools` with `guard_tool`; keep other tools (hosted, MCP) as they are.

    Args:
        tools: The agent's tools.
        registry: The hooks to run.

    Returns:
        The tools, function tools replaced by guarded copies, in order.
    """
    return [guard_tool(tool, registry) if isinstance(tool, FunctionTool) else tool for tool in tools]


class HookregRunHooks(RunHooks[Any]):
    """SDK run hooks firing hookreg's session and turn points; use a fresh one per run.

    ``on_session_start`` fires when the first agent starts (``goal`` is the
    first user message's text), ``post_turn`` after every model response (its
    text output), ``on_session_end`` with a ``completed`` outcome when an
    agent produces the final output. The SDK calls no run hook when a run
    fails, so a failed run fires no ``on_session_end``.

    Attributes:
        registry: The hooks to run.
        run: The `hookreg.RunContext` of this run.
    """

    def __init__(self, registry: HookRegistry) -> None:
        """Fire `registry`'s session and turn hooks during one SDK run."""
        self.registry: HookRegistry = registry
        self.run: RunContext = RunContext()
        self._started = False

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        """Fire ``on_session_start`` once, for the run's first agent."""
        if self._started:
            return
        self._started = True
        self.run = RunContext(run_id=self.run.run_id, agent_name=agent.name, scratchpad=self.run.scratchpad)
        start = OnSessionStartContext(session_id=self.run.session_id, goal=_first_user_text(context), run=self.run)
        await self.registry.anotify(HookPoint.ON_SESSION_START, start)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        """Fire ``post_turn`` with the response's text."""
        self.run = RunContext(
            run_id=self.run.run_id,
            session_id=self.run.session_id,
            turn=self.run.turn + 1,
            agent_name=agent.name,
            scratchpad=self.run.scratchpad,
        )
        if self.registry.has_hooks(HookPoint.POST_TURN):
            text = "".join(ItemHelpers.extract_last_text(item) or "" for item in response.output)
            post = PostTurnContext(turn=self.run.turn, response_text=text, run=self.run)
            await self.registry.anotify(HookPoint.POST_TURN, post)

    async def on_agent_end(self, context: AgentHookContext[Any], agent: Agent[Any], output: Any) -> None:
        """Fire ``on_session_end`` with a completed outcome."""
        outcome = RunOutcome(status="completed", turns=self.run.turn)
        end = OnSessionEndContext(session_id=self.run.session_id, outcome=outcome, run=self.run)
        await self.registry.anotify(HookPoint.ON_SESSION_END, end)


def _first_user_text(context: AgentHookContext[Any]) -> str:
    """The text of the run's first user message, or ``""`` when it has none."""
    for item in context.turn_input:
        fields: Mapping[str, object] = item if isinstance(item, Mapping) else {}
        content = fields.get("content")
        if fields.get("role") == "user" and isinstance(content, str):
            return content
    return ""


def hookreg_run_hooks(registry: HookRegistry) -> HookregRunHooks:
    """Return fresh run hooks for ``Runner.run(..., hooks=...)`` firing `registry`'s session and turn points.

    Args:
        registry: The hooks to run.

    Returns:
        A `HookregRunHooks` for one run.
    """
    return HookregRunHooks(registry)
