"""Drive an OpenAI Agents SDK run from a HookRegistry (``pip install 'hookreg[openai-agents]'``).

Mapping (hookreg point → SDK mechanism):

- Tool points → the invoker of each function tool copied by `guard_tool` / `guard_tools`.
- ``on_session_start``, ``post_turn``, ``on_session_end`` → `RunHooks` (`HookregRunHooks`).
- ``user_prompt_submit`` (first model call), ``pre_turn``, ``pre_model_call``,
  ``model_select`` → ``RunConfig.call_model_input_filter``, installed by
  `HookregRunHooks.run_config`. A deny raises `hookreg.StopRun` with its reason
  before the model call (``on_session_end`` reports ``stopped``); an ``ask``
  goes to ``on_interaction``. A `RequestPatch`'s ``preamble`` and
  ``extra_context`` join the instructions; ``temperature``, ``max_tokens``,
  ``tool_choice`` and ``additional_params`` (as ``extra_body``) become that
  call's model settings; a ``model_select`` pick becomes that call's model (a
  name in ``models`` maps to that model, any other goes to the run's model
  provider). ``active_tools`` cannot apply: the SDK fixes the tools of a turn
  before the filter runs.
- ``text_delta``, ``reasoning_delta``, ``tool_call_delta`` → the raw response
  events of a streamed run, when the caller iterates
  `HookregRunHooks.stream_events` instead of ``result.stream_events()``.
- Not reachable: ``model_turn_finished`` and ``stop`` (``on_llm_end`` and
  ``on_agent_end`` only observe; nothing can re-ask the model),
  ``invalid_tool_call`` (the SDK answers unknown tools itself).

Example:
    >>> hooks = hookreg_run_hooks(registry)  # doctest: +SKIP
    >>> agent = Agent(name="a", tools=guard_tools([lookup], registry))  # doctest: +SKIP
    >>> await Runner.run(agent, "hi", hooks=hooks, run_config=hooks.run_config())  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from hookreg._context import (
    Message,
    ModelSelectContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    PostTurnContext,
    PreModelCallContext,
    PreTurnContext,
    ReasoningDeltaContext,
    RunContext,
    RunOutcome,
    TextDeltaContext,
    ToolCallDeltaContext,
    UserPromptSubmitContext,
)
from hookreg._errors import HookTypeError, StopRun
from hookreg._points import HookPoint
from hookreg._results import Decision, HookResult, RequestPatch
from hookreg._surface import HookRegistry
from hookreg.adapters import _missing_framework, _require_registry, _ToolCall

try:
    from agents import (
        Agent,
        AgentHookContext,
        FunctionTool,
        ItemHelpers,
        Model,
        ModelResponse,
        ModelSettings,
        RawResponsesStreamEvent,
        RunConfig,
        RunContextWrapper,
        RunHooks,
        RunResultStreaming,
        StreamEvent,
        Tool,
    )
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool import maybe_invoke_function_tool_failure_error_function, set_function_tool_failure_error_function
    from agents.tool_context import ToolContext
    from openai.types.responses import (
        ResponseFunctionCallArgumentsDeltaEvent,
        ResponseFunctionToolCall,
        ResponseOutputItemAddedEvent,
        ResponseReasoningSummaryTextDeltaEvent,
        ResponseReasoningTextDeltaEvent,
        ResponseTextDeltaEvent,
    )
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
        HookTypeError: `tool` is not a `FunctionTool` (also a `TypeError`),
            or `registry` is not a `HookRegistry`.
    """
    _require_registry(registry, f"a guarded tool for {tool!r}")
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
        args: object = json.loads(input_json) if input_json.strip() else {}
        verdict = await call.gate(args)
        if not verdict.allowed:
            return verdict.text
        effective = verdict.call.args
        started = time.perf_counter()
        try:
            raw = await invoke(ctx, json.dumps(dict(effective)) if verdict.rewritten else input_json)
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

    Raises:
        HookTypeError: `registry` is not a `HookRegistry`.
    """
    _require_registry(registry, "guarded tools")
    return [guard_tool(tool, registry) if isinstance(tool, FunctionTool) else tool for tool in tools]


class HookregRunHooks(RunHooks[Any]):
    """SDK run hooks firing hookreg's session, turn and model points; use a fresh one per run.

    ``on_session_start`` fires when the first agent starts (``goal`` is the
    first user message's text), ``post_turn`` after every model response (its
    text output), ``on_session_end`` with a ``completed`` outcome when an
    agent produces the final output, or ``stopped`` when a hook stops the run
    before a model call. The SDK calls no run hook when a run fails, so a
    failed run fires no ``on_session_end``.

    ``user_prompt_submit``, ``pre_turn``, ``pre_model_call`` and
    ``model_select`` need the model-input filter: pass
    ``run_config=hooks.run_config()`` to the same ``Runner.run`` call.

    Attributes:
        registry: The hooks to run.
        models: Models a ``model_select`` hook may pick by name.
        run: The `hookreg.RunContext` of this run.
    """

    def __init__(self, registry: HookRegistry, *, models: Mapping[str, Model] | None = None) -> None:
        """Fire `registry`'s hooks during one SDK run.

        Args:
            registry: The hooks to run.
            models: Models a ``model_select`` hook may pick by name; other
                names go to the run's model provider.

        Raises:
            HookTypeError: `registry` is not a `HookRegistry`.
        """
        self.registry: HookRegistry = _require_registry(registry, "HookregRunHooks")
        self.models: Mapping[str, Model] = dict(models or {})
        self.run: RunContext = RunContext()
        self._started = False
        self._prompted = False
        self._config: RunConfig | None = None
        self._base: RunConfig | None = None

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """Return a copy of `base` whose model-input filter fires the turn and model points.

        Args:
            base: The run's own settings; ``None`` for the SDK defaults. Its
                ``call_model_input_filter`` must be unset.

        Returns:
            The `RunConfig` to pass as ``Runner.run(..., run_config=...)``.

        Raises:
            HookTypeError: `base` already has a ``call_model_input_filter``.
        """
        base = base or RunConfig()
        if base.call_model_input_filter is not None:
            msg = (
                "Cannot install hookreg's model-input filter into this RunConfig: it already has "
                f"call_model_input_filter={base.call_model_input_filter!r}. Do that work in a pre_model_call hook "
                "instead."
            )
            raise HookTypeError(msg)
        self._base = base
        self._config = dataclasses.replace(base, call_model_input_filter=self.filter_model_input)
        return self._config

    async def _settle(self, result: HookResult) -> HookResult:
        if result.decision is not Decision.ASK:
            return result
        question = OnInteractionContext(question=result.reason, options=("allow", "deny"), tool_name=None, run=self.run)
        return await self.registry.adecide(HookPoint.ON_INTERACTION, question)

    async def _stop(self, verdict: HookResult) -> None:
        """End the session as stopped and raise `StopRun` when `verdict` is not an allow."""
        if verdict.allowed:
            return
        outcome = RunOutcome(status="stopped", reason=verdict.reason, turns=self.run.turn)
        end = OnSessionEndContext(session_id=self.run.session_id, outcome=outcome, run=self.run)
        await self.registry.anotify(HookPoint.ON_SESSION_END, end)
        raise StopRun(verdict.reason)

    async def filter_model_input(self, data: CallModelData[Any]) -> ModelInputData:
        """The ``call_model_input_filter``: fire the turn and model points before one model call."""
        registry, model_input = self.registry, data.model_data
        prompt = _first_user_text(model_input.input)
        if not self._prompted:
            self._prompted = True
            submitted = UserPromptSubmitContext(content=prompt, run=self.run)
            await self._stop(await self._settle(await registry.adecide(HookPoint.USER_PROMPT_SUBMIT, submitted)))
        turn = self.run.turn + 1
        pre = PreTurnContext(prompt=prompt, turn=turn, run=self.run)
        await self._stop(await self._settle(await registry.adecide(HookPoint.PRE_TURN, pre)))
        patch = RequestPatch()
        if registry.has_hooks(HookPoint.PRE_MODEL_CALL):
            ctx = PreModelCallContext(
                prompt=prompt, history=_history(model_input.input), turn=turn, patch=patch, run=self.run
            )
            patch = await registry.atransform(HookPoint.PRE_MODEL_CALL, ctx)
            texts = [patch.preamble or "", model_input.instructions or "", *(patch.extra_context or ())]
            model_input = ModelInputData(
                input=model_input.input, instructions="\n\n".join(t for t in texts if t) or None
            )
        if self._config is not None and self._base is not None:
            self._config.model_settings = _settings(patch, self._base.model_settings)
            self._config.model = self._base.model
            if registry.has_hooks(HookPoint.MODEL_SELECT):
                default = _model_name(self._base.model or data.agent.model)
                select = ModelSelectContext(default_model=default, selected_model=default, patch=patch, run=self.run)
                name = await registry.atransform(HookPoint.MODEL_SELECT, select)
                if name != default:
                    self._config.model = self.models.get(name) or name
        return model_input

    async def stream_events(self, result: RunResultStreaming) -> AsyncIterator[StreamEvent]:
        """Yield `result`'s stream events unchanged, firing the delta points for the model's raw deltas.

        Args:
            result: What ``Runner.run_streamed(..., hooks=self)`` returned.

        Yields:
            Every event of ``result.stream_events()``, in order.
        """
        texts: dict[str, str] = {}
        calls: dict[str, tuple[str, str]] = {}
        async for event in result.stream_events():
            if isinstance(event, RawResponsesStreamEvent):
                await self._delta(event.data, texts, calls)
            yield event

    async def _delta(self, data: object, texts: dict[str, str], calls: dict[str, tuple[str, str]]) -> None:
        """Fire the delta point for one raw response event; `texts` and `calls` carry state across events."""
        run = dataclasses.replace(self.run, is_streaming=True)
        if isinstance(data, ResponseOutputItemAddedEvent) and isinstance(data.item, ResponseFunctionToolCall):
            calls[data.item.id or data.item.call_id] = (data.item.call_id, data.item.name)
        elif isinstance(data, ResponseFunctionCallArgumentsDeltaEvent):
            call_id, name = calls.get(data.item_id, (data.item_id, ""))
            ctx = ToolCallDeltaContext(call_id=call_id, tool_name=name or None, delta=data.delta, run=run)
            await self.registry.anotify(HookPoint.TOOL_CALL_DELTA, ctx)
        elif isinstance(data, ResponseTextDeltaEvent):
            aggregated = texts[data.item_id] = texts.get(data.item_id, "") + data.delta
            text = TextDeltaContext(delta=data.delta, aggregated=aggregated, run=run)
            await self.registry.anotify(HookPoint.TEXT_DELTA, text)
        elif isinstance(data, (ResponseReasoningTextDeltaEvent, ResponseReasoningSummaryTextDeltaEvent)):
            aggregated = texts[data.item_id] = texts.get(data.item_id, "") + data.delta
            thought = ReasoningDeltaContext(delta=data.delta, aggregated=aggregated, run=run)
            await self.registry.anotify(HookPoint.REASONING_DELTA, thought)

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        """Fire ``on_session_start`` once, for the run's first agent."""
        if self._started:
            return
        self._started = True
        self.run = RunContext(run_id=self.run.run_id, agent_name=agent.name, scratchpad=self.run.scratchpad)
        start = OnSessionStartContext(
            session_id=self.run.session_id, goal=_first_user_text(context.turn_input), run=self.run
        )
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


def _first_user_text(items: Iterable[object]) -> str:
    """The text of the first user message in `items`, or ``""`` when there is none."""
    for item in items:
        fields: Mapping[str, object] = item if isinstance(item, Mapping) else {}
        content = fields.get("content")
        if fields.get("role") == "user" and isinstance(content, str):
            return content
    return ""


def _history(items: Iterable[object]) -> list[Message]:
    """SDK input items as hookreg history: messages, tool calls and tool outputs."""
    history: list[Message] = []
    for item in items:
        fields: Mapping[str, object] = item if isinstance(item, Mapping) else {}
        kind, content = fields.get("type"), fields.get("content")
        call_id = str(fields.get("call_id", "")) or None
        if kind == "function_call":
            history.append(Message("assistant", str(fields.get("arguments", "")), str(fields.get("name")), call_id))
        elif kind == "function_call_output":
            history.append(Message("tool", str(fields.get("output", "")), None, call_id))
        elif "role" in fields:
            text = content if isinstance(content, str) else json.dumps(content, default=str)
            history.append(Message(str(fields["role"]), text))
    return history


def _settings(patch: RequestPatch, base: ModelSettings | None) -> ModelSettings | None:
    """The run's model settings with the patch's per-call settings laid over them."""
    override = ModelSettings(
        temperature=patch.temperature,
        max_tokens=patch.max_tokens,
        tool_choice=patch.tool_choice,
        extra_body=dict(patch.additional_params) if patch.additional_params else None,
    )
    if override == ModelSettings():
        return base
    return (base or ModelSettings()).resolve(override)


def _model_name(model: object) -> str:
    """A model's name: the string itself, a model object's ``model`` attribute, else its class name."""
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


def hookreg_run_hooks(registry: HookRegistry, *, models: Mapping[str, Model] | None = None) -> HookregRunHooks:
    """Return fresh run hooks for ``Runner.run(..., hooks=...)`` firing `registry`'s session, turn and model points.

    Pass ``run_config=hooks.run_config()`` to the same run for ``user_prompt_submit``,
    ``pre_turn``, ``pre_model_call`` and ``model_select``.

    Args:
        registry: The hooks to run.
        models: Models a ``model_select`` hook may pick by name.

    Returns:
        A `HookregRunHooks` for one run.

    Raises:
        HookTypeError: `registry` is not a `HookRegistry`.
    """
    return HookregRunHooks(_require_registry(registry, "OpenAI Agents run hooks"), models=models)
