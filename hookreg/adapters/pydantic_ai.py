"""Drive a pydantic-ai agent from a HookRegistry through one capability (``pip install 'hookreg[pydantic-ai]'``).

Mapping (hookreg point → pydantic-ai capability hook):

- ``on_session_start`` / ``user_prompt_submit`` / ``on_session_end`` → ``wrap_run``.
  A ``user_prompt_submit`` deny raises `hookreg.StopRun` carrying the reason
  before any model call (an ``ask`` goes to ``on_interaction``);
  ``on_session_end`` then reports ``stopped``.
- ``pre_turn``, ``pre_model_call``, ``model_select`` → ``before_model_request``,
  once per request step. A ``pre_turn`` deny raises `hookreg.StopRun`. The
  merged `RequestPatch` applies to that request only: ``preamble`` and
  ``extra_context`` become extra instruction parts, ``temperature``,
  ``max_tokens`` and ``tool_choice`` model settings, ``additional_params`` the
  ``extra_body`` setting, ``active_tools`` filters the function tools offered
  (a call to another function tool fails without running).
  A ``model_select`` pick replaces the model: a name in ``models`` maps to
  that model, any other goes through `pydantic_ai.models.infer_model`.
- ``model_turn_finished``, ``post_turn``, ``stop``, unknown-tool
  ``invalid_tool_call`` → ``after_model_request``. ``repeat()`` raises
  `pydantic_ai.exceptions.RetryModelRequest` (the answer is dropped);
  ``retry_with_feedback(text)`` and a ``stop`` deny raise
  `pydantic_ai.exceptions.ModelRetry` (the answer stays in the history, the
  text follows it; both count against pydantic-ai's output retry budget).
  ``stop`` fires for answers calling no function tool. ``repair(name)`` renames
  a call to an unknown tool; other actions leave pydantic-ai's own retry prompt.
- ``invalid_tool_call`` for arguments failing validation → ``on_tool_validate_error``:
  ``retry(feedback)`` raises ``ModelRetry(feedback)``, ``skip(reason)`` ends the
  call with a failed result carrying the reason, ``fail`` and ``repair`` keep
  pydantic-ai's own retry prompt.
- Tool points → ``wrap_tool_execute`` (see `HookregCapability`).
- ``text_delta``, ``reasoning_delta``, ``tool_call_delta`` → ``on_event``. With
  such hooks registered pydantic-ai streams every run, so the model must stream.

Example:
    >>> agent = Agent(model, tools=[...], capabilities=[hookreg_capability(registry)])  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hookreg._context import (
    InvalidToolCallContext,
    Message,
    ModelSelectContext,
    ModelTurnFinishedContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    PostTurnContext,
    PreModelCallContext,
    PreTurnContext,
    ReasoningDeltaContext,
    RunContext,
    RunOutcome,
    StopContext,
    TextDeltaContext,
    ToolCallDeltaContext,
    ToolCallRequest,
    UserPromptSubmitContext,
)
from hookreg._errors import StopRun
from hookreg._points import HookPoint
from hookreg._results import Decision, FinishReason, HookResult, RequestPatch
from hookreg._surface import HookRegistry
from hookreg.adapters import _missing_framework, _refused_retry, _require_registry, _ToolCall

try:
    from pydantic_ai import RunContext as PaiRunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.exceptions import ModelRetry, RetryModelRequest, ToolFailed
    from pydantic_ai.messages import (
        InstructionPart,
        ModelResponse,
        PartDeltaEvent,
        PartStartEvent,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        TextPartDelta,
        ThinkingPart,
        ThinkingPartDelta,
        ToolCallPart,
        ToolCallPartDelta,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import Model, infer_model
    from pydantic_ai.tools import ToolDefinition
except ImportError as _error:  # pragma: no cover - exercised by a test that hides the framework
    raise _missing_framework("pydantic_ai", "pydantic-ai", _error) from _error

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import (
        RawToolArgs,
        ValidatedToolArgs,
        WrapRunHandler,
        WrapToolExecuteHandler,
    )
    from pydantic_ai.messages import AgentStreamEvent, ModelMessage
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.settings import ModelSettings
    from pydantic_core import ValidationError

__all__ = ["HookregCapability", "hookreg_capability"]

_DELTA_POINTS = (HookPoint.TEXT_DELTA, HookPoint.REASONING_DELTA, HookPoint.TOOL_CALL_DELTA)
_TOOL_CHOICES = ("none", "required", "auto")


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

    Run, turn and model points are mapped as the module docstring lists:
    ``on_session_start`` (``session_id`` is the pydantic-ai conversation id,
    or the run id; ``goal`` the prompt text), ``user_prompt_submit``,
    ``pre_turn``, ``pre_model_call``, ``model_select``, the delta points,
    ``model_turn_finished``, ``invalid_tool_call``, ``post_turn``, ``stop``
    and ``on_session_end`` (``completed``, ``stopped`` after `hookreg.StopRun`,
    or ``failed``). Each agent run gets its own `hookreg.RunContext` (one
    scratchpad per run) whose ``turn`` is pydantic-ai's run step.

    Sync and async hooks both work: hooks are awaited with the registry's
    ``a``-methods inside pydantic-ai's async callbacks.
    """

    def __init__(
        self, registry: HookRegistry, *, models: Mapping[str, Model] | None = None, run: RunContext | None = None
    ) -> None:
        """Wrap `registry`.

        Args:
            registry: The hooks to run.
            models: Models a ``model_select`` hook may pick by name; other
                names go through `pydantic_ai.models.infer_model`.
            run: The run context for this agent run; `for_run` gives every
                agent run a fresh one, so leave it unset.

        Raises:
            HookTypeError: `registry` is not a `HookRegistry`.
        """
        self.registry: HookRegistry = _require_registry(registry, "a HookregCapability")
        self.models: Mapping[str, Model] = dict(models or {})
        self.run: RunContext = run or RunContext()
        self._prompt = ""
        self._stops = 0
        self._aggregated: dict[int, str] = {}
        self._calls: dict[int, tuple[str, str]] = {}
        self._offered: frozenset[str] | None = None

    async def for_run(self, ctx: PaiRunContext[Any]) -> HookregCapability:
        """Return a copy holding a fresh `hookreg.RunContext` for this agent run."""
        run_id = ctx.run_id or RunContext().run_id
        session_id = ctx.conversation_id or run_id
        agent_name = ctx.agent.name if ctx.agent is not None else None
        run = RunContext(run_id=run_id, session_id=session_id, agent_name=agent_name)
        return HookregCapability(self.registry, models=self.models, run=run)

    @property
    def has_on_event(self) -> bool:
        """Whether delta hooks are registered; pydantic-ai then streams the run to `on_event`."""
        return any(self.registry.has_hooks(point) for point in _DELTA_POINTS)

    def listens_to(self, event: AgentStreamEvent) -> bool:
        """Whether `on_event` wants `event`: part starts and deltas, when delta hooks are registered."""
        return self.has_on_event and isinstance(event, (PartStartEvent, PartDeltaEvent))

    def _turn(self, ctx: PaiRunContext[Any]) -> RunContext:
        return self.run if self.run.turn == ctx.run_step else dataclasses.replace(self.run, turn=ctx.run_step)

    async def _settle(self, result: HookResult, run: RunContext) -> HookResult:
        """Resolve an ``ask`` through ``on_interaction``; other results stand."""
        if result.decision is not Decision.ASK:
            return result
        question = OnInteractionContext(question=result.reason, options=("allow", "deny"), tool_name=None, run=run)
        return await self.registry.adecide(HookPoint.ON_INTERACTION, question)

    async def _end(self, ctx: PaiRunContext[Any], outcome: RunOutcome) -> None:
        end = OnSessionEndContext(session_id=self.run.session_id, outcome=outcome, run=self._turn(ctx))
        await self.registry.anotify(HookPoint.ON_SESSION_END, end)

    async def wrap_run(self, ctx: PaiRunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        """Fire ``on_session_start`` and ``user_prompt_submit`` before the run, ``on_session_end`` after it."""
        registry = self.registry
        self._prompt = ctx.prompt if isinstance(ctx.prompt, str) else ""
        start = OnSessionStartContext(session_id=self.run.session_id, goal=self._prompt, run=self.run)
        await registry.anotify(HookPoint.ON_SESSION_START, start)
        try:
            submitted = UserPromptSubmitContext(content=self._prompt, run=self.run)
            verdict = await self._settle(await registry.adecide(HookPoint.USER_PROMPT_SUBMIT, submitted), self.run)
            if not verdict.allowed:
                raise StopRun(verdict.reason)
            result = await handler()
        except StopRun as stop:
            await self._end(ctx, RunOutcome(status="stopped", reason=stop.reason, turns=ctx.run_step))
            raise
        except Exception as exc:
            await self._end(ctx, RunOutcome(status="failed", reason=type(exc).__name__, turns=ctx.run_step))
            raise
        await self._end(ctx, RunOutcome(status="completed", turns=ctx.run_step))
        return result

    async def before_model_request(
        self, ctx: PaiRunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Fire ``pre_turn``, then apply the ``pre_model_call`` patch and the ``model_select`` pick."""
        registry, run = self.registry, self._turn(ctx)
        turn = PreTurnContext(prompt=self._prompt, turn=ctx.run_step, run=run)
        verdict = await self._settle(await registry.adecide(HookPoint.PRE_TURN, turn), run)
        if not verdict.allowed:
            raise StopRun(verdict.reason)
        offered = frozenset(tool.name for tool in request_context.model_request_parameters.function_tools)
        patch = RequestPatch(active_tools=offered)
        if registry.has_hooks(HookPoint.PRE_MODEL_CALL):
            history = _history(request_context.messages)
            pre = PreModelCallContext(prompt=self._prompt, history=history, turn=ctx.run_step, patch=patch, run=run)
            patch = await registry.atransform(HookPoint.PRE_MODEL_CALL, pre)
            request_context = _apply(patch, request_context)
            self._offered = patch.active_tools
        if registry.has_hooks(HookPoint.MODEL_SELECT):
            default = request_context.model.model_name
            select = ModelSelectContext(default_model=default, selected_model=default, patch=patch, run=run)
            name = await registry.atransform(HookPoint.MODEL_SELECT, select)
            if name != default:
                model = self.models.get(name) or infer_model(name)
                request_context = dataclasses.replace(request_context, model=model, model_id=None)
        return request_context

    async def after_model_request(
        self, ctx: PaiRunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        """Fire ``invalid_tool_call`` for unknown tools, ``model_turn_finished``, ``post_turn`` and ``stop``."""
        registry, run = self.registry, self._turn(ctx)
        params = request_context.model_request_parameters
        functions = {tool.name for tool in params.function_tools}
        known = functions | {tool.name for tool in params.output_tools}
        if registry.has_hooks(HookPoint.INVALID_TOOL_CALL):
            response = await self._repair(run, response, sorted(known))
        calls = [part for part in response.parts if isinstance(part, ToolCallPart)]
        if registry.has_hooks(HookPoint.MODEL_TURN_FINISHED):
            settings = request_context.model_settings or {}
            finished = ModelTurnFinishedContext(
                turn=ctx.run_step,
                text=response.text or "",
                tool_calls=[ToolCallRequest(c.tool_call_id, c.tool_name, c.args_as_dict()) for c in calls],
                finish_reason=FinishReason.from_raw(response.finish_reason),
                raw_finish_reason=response.finish_reason,
                max_tokens=settings.get("max_tokens"),
                usage={"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens},
                run=run,
            )
            action = await registry.adecide(HookPoint.MODEL_TURN_FINISHED, finished)
            if action.kind != "continue":
                if calls:
                    raise _refused_retry(ctx.run_step, action.decided_by, [c.tool_name for c in calls])
                if action.kind == "repeat":
                    raise RetryModelRequest
                raise ModelRetry(action.feedback or "")
        if registry.has_hooks(HookPoint.POST_TURN):
            post = PostTurnContext(turn=ctx.run_step, response_text=response.text or "", run=run)
            await registry.anotify(HookPoint.POST_TURN, post)
        if registry.has_hooks(HookPoint.STOP) and not any(call.tool_name in functions for call in calls):
            stop = StopContext(response_text=response.text or "", continuation_count=self._stops, run=run)
            verdict = await self._settle(await registry.adecide(HookPoint.STOP, stop), run)
            if not verdict.allowed:
                self._stops += 1
                raise ModelRetry(verdict.reason)
        return response

    async def _repair(self, run: RunContext, response: ModelResponse, known: list[str]) -> ModelResponse:
        """Ask ``invalid_tool_call`` about each call to an unknown tool; apply ``repair`` picks."""
        parts = list(response.parts)
        for index, part in enumerate(parts):
            if not isinstance(part, ToolCallPart) or part.tool_name in known:
                continue
            invalid = InvalidToolCallContext(
                tool_name=part.tool_name,
                args=part.args_as_dict(),
                call_id=part.tool_call_id,
                available_tools=known,
                error=f"unknown tool {part.tool_name!r}",
                run=run,
            )
            action = await self.registry.adecide(HookPoint.INVALID_TOOL_CALL, invalid)
            if action.kind == "repair" and action.tool_name is not None:
                parts[index] = ToolCallPart(action.tool_name, part.args_as_dict(), tool_call_id=part.tool_call_id)
        return dataclasses.replace(response, parts=parts)

    async def on_tool_validate_error(
        self,
        ctx: PaiRunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: RawToolArgs,
        error: ValidationError | ModelRetry,
    ) -> ValidatedToolArgs:
        """Let ``invalid_tool_call`` answer arguments that fail validation (see the module docstring)."""
        if not self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL):
            raise error
        invalid = InvalidToolCallContext(
            tool_name=call.tool_name,
            args=args if isinstance(args, dict) else {"args": args},
            call_id=call.tool_call_id,
            available_tools=[tool_def.name],
            error=str(error),
            run=self._turn(ctx),
        )
        action = await self.registry.adecide(HookPoint.INVALID_TOOL_CALL, invalid)
        if action.kind == "retry":
            raise ModelRetry(action.feedback or "") from error
        if action.kind == "skip":
            raise ToolFailed(action.reason) from error
        raise error

    async def on_event(self, ctx: PaiRunContext[Any], *, event: AgentStreamEvent) -> None:
        """Fire ``text_delta``, ``reasoning_delta`` and ``tool_call_delta`` for the streamed answer."""
        run = dataclasses.replace(self._turn(ctx), is_streaming=True)
        if isinstance(event, PartStartEvent):
            part = event.part
            self._aggregated[event.index] = ""
            if isinstance(part, ToolCallPart):
                self._calls[event.index] = (part.tool_call_id, part.tool_name)
                await self._tool_delta(run, event.index, part.args if isinstance(part.args, str) else _json(part.args))
            elif isinstance(part, (TextPart, ThinkingPart)):
                await self._text_delta(run, event.index, part.content, thinking=isinstance(part, ThinkingPart))
        elif isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta):
                await self._text_delta(run, event.index, delta.content_delta, thinking=False)
            elif isinstance(delta, ThinkingPartDelta):
                await self._text_delta(run, event.index, delta.content_delta or "", thinking=True)
            elif isinstance(delta, ToolCallPartDelta):
                args = delta.args_delta
                await self._tool_delta(run, event.index, args if isinstance(args, str) else _json(args))

    async def _text_delta(self, run: RunContext, index: int, delta: str, *, thinking: bool) -> None:
        if not delta:
            return
        aggregated = self._aggregated[index] = self._aggregated.get(index, "") + delta
        if thinking:
            await self.registry.anotify(
                HookPoint.REASONING_DELTA, ReasoningDeltaContext(delta=delta, aggregated=aggregated, run=run)
            )
        else:
            await self.registry.anotify(
                HookPoint.TEXT_DELTA, TextDeltaContext(delta=delta, aggregated=aggregated, run=run)
            )

    async def _tool_delta(self, run: RunContext, index: int, delta: str) -> None:
        call_id, tool_name = self._calls.get(index, ("", ""))
        if delta:
            ctx = ToolCallDeltaContext(call_id=call_id, tool_name=tool_name or None, delta=delta, run=run)
            await self.registry.anotify(HookPoint.TOOL_CALL_DELTA, ctx)

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
        if self._offered is not None and tool_def.name not in self._offered and tool_def.kind == "function":
            msg = (
                f"tool {call.tool_name!r} was not offered for this turn; the tools offered are: {sorted(self._offered)}"
            )
            raise ToolFailed(msg)
        tool = _ToolCall(self.registry, self._turn(ctx), call.tool_name, call.tool_call_id)
        verdict = await tool.gate(args)
        if not verdict.allowed:
            raise ToolFailed(verdict.text)
        effective = verdict.call.args
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


def hookreg_capability(registry: HookRegistry, *, models: Mapping[str, Model] | None = None) -> HookregCapability:
    """Return the capability that runs `registry`'s hooks in a pydantic-ai agent.

    Args:
        registry: The hooks to run.
        models: Models a ``model_select`` hook may pick by name; other names
            go through `pydantic_ai.models.infer_model`.

    Returns:
        A capability for ``Agent(..., capabilities=[...])`` (or per run).

    Raises:
        HookTypeError: `registry` is not a `HookRegistry`.
    """
    return HookregCapability(_require_registry(registry, "a pydantic-ai capability"), models=models)


def _apply(patch: RequestPatch, request_context: ModelRequestContext) -> ModelRequestContext:
    """Apply a merged `RequestPatch` to one model request."""
    params = request_context.model_request_parameters
    parts = list(params.instruction_parts or [])
    if patch.preamble:
        parts.insert(0, InstructionPart(content=patch.preamble, dynamic=True))
    parts += [InstructionPart(content=text, dynamic=True) for text in patch.extra_context or ()]
    tools = params.function_tools
    if patch.active_tools is not None:
        tools = [tool for tool in tools if tool.name in patch.active_tools]
    params = dataclasses.replace(params, instruction_parts=parts or None, function_tools=tools)
    settings: ModelSettings = {**(request_context.model_settings or {})}
    if patch.temperature is not None:
        settings["temperature"] = patch.temperature
    if patch.max_tokens is not None:
        settings["max_tokens"] = patch.max_tokens
    if patch.tool_choice is not None:
        choice = patch.tool_choice
        settings["tool_choice"] = choice if choice in _TOOL_CHOICES else [choice]  # type: ignore[typeddict-item]
    if patch.additional_params:
        body = settings.get("extra_body")
        settings["extra_body"] = {**(body if isinstance(body, dict) else {}), **patch.additional_params}
    return dataclasses.replace(request_context, model_request_parameters=params, model_settings=settings)


def _history(messages: list[ModelMessage]) -> list[Message]:
    """pydantic-ai messages as hookreg history, one `Message` per part."""
    history: list[Message] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, (SystemPromptPart, UserPromptPart)):
                role = "system" if isinstance(part, SystemPromptPart) else "user"
                history.append(Message(role, part.content if isinstance(part.content, str) else str(part.content)))
            elif isinstance(part, ToolReturnPart):
                history.append(Message("tool", part.model_response_str(), part.tool_name, part.tool_call_id))
            elif isinstance(part, RetryPromptPart):
                role = "user" if part.tool_name is None else "tool"
                history.append(Message(role, part.model_response(), part.tool_name, part.tool_call_id))
            elif isinstance(part, TextPart):
                history.append(Message("assistant", part.content))
            elif isinstance(part, ToolCallPart):
                history.append(Message("assistant", part.args_as_json_str(), part.tool_name, part.tool_call_id))
    return history


def _json(args: object) -> str:
    return "" if args is None else json.dumps(args, default=str)
