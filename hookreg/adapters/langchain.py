"""Run a hookreg registry as LangChain v1 agent middleware (``pip install 'hookreg[langchain]'``).

Pass `HookregMiddleware` to ``langchain.agents.create_agent(..., middleware=[...])``.
A *session* is one agent invocation and a *turn* is one model call (turn 1 is
the first); the tool calls a model answer asks for belong to its turn.

Where each hook point runs:

- ``on_session_start``, ``user_prompt_submit``: ``before_agent``; a deny ends
  the run with its reason as the agent's answer.
- ``pre_turn``: ``before_model``; a deny ends the run the same way.
- ``pre_model_call``, ``model_select``: ``wrap_model_call``. The merged
  `hookreg.RequestPatch` applies to the ``ModelRequest``: ``preamble``
  replaces the system prompt and ``extra_context`` blocks are appended to it;
  ``active_tools`` filters the tools offered; ``tool_choice`` sets the
  request's tool choice; ``temperature``, ``max_tokens`` and
  ``additional_params`` become model settings (keyword arguments bound to the
  chat model, which passes them to its provider). ``model_select`` picks by
  name among the chat models given as ``models=``; the agent's own model is
  ``default_model`` (its key in ``models``, else its ``model_name``/``model``
  attribute, else its class name).
- ``text_delta``, ``reasoning_delta``, ``tool_call_delta``: ``wrap_model_call``
  gives the call a copy of its chat model with a callback handler that turns
  each streamed chunk's text, reasoning and tool-call args into deltas. They
  fire when the model streams (``agent.stream(..., stream_mode="messages")``,
  or a model made with ``streaming=True``); a call answered whole fires none.
- ``model_turn_finished``, ``post_turn``, ``stop``: ``after_model``.
  ``repeat()`` drops the answer and asks again; ``retry_with_feedback`` keeps
  it and adds the feedback as a user message. Either, for an answer that
  calls tools, raises `hookreg.HookValueError` (its tool calls would be
  dropped unrun). ``stop`` runs when the answer calls no tool; a deny adds its
  reason as a user message and calls the model again.
- ``invalid_tool_call``: ``wrap_tool_call``, for a call to a tool the agent
  does not have, or whose args fail the tool's pydantic schema (the check
  LangChain itself makes). ``retry`` and ``skip`` answer with an error
  ``ToolMessage`` carrying the feedback or reason; ``repair`` calls the named
  tool instead, through the gate (a name not offered in the last model
  request is answered like ``fail``); ``fail`` answers with the reason, else
  LangChain's own error text. The tool points do not fire for a call
  answered here.
- ``transform_tool_input``, ``pre_tool_call_decide``, ``permission_denied``,
  ``on_interaction``: ``wrap_tool_call``, before the tool. A deny (or an
  ``ask`` that no ``on_interaction`` hook allows) returns an error
  ``ToolMessage`` carrying the reason, and the tool never runs.
- ``post_tool_call_failure``, ``on_tool_error``: the tool raised. The failure
  is observed; with ``on_tool_error`` hooks their text reaches the model as an
  error ``ToolMessage``, without them the exception propagates, as LangChain
  does by default.
- ``transform_tool_result``, ``post_tool_call``: the tool returned a
  ``ToolMessage``; its text is rewritten, then observed (``raw_result`` is the
  message's ``artifact``, or its content when it has none).
- ``on_session_end``: ``after_agent``, with a ``completed`` outcome, or
  ``stopped`` (the reason as ``reason``) after a ``user_prompt_submit`` or
  ``pre_turn`` deny.

``invoke``/``stream`` dispatch with the registry's sync methods (an async hook
there raises `hookreg.AsyncHookError`); ``ainvoke``/``astream`` use the
``a``-methods, which run sync and async hooks alike. A `hookreg.StopRun` raised
by a hook propagates out of ``invoke``. One middleware instance tracks one run
at a time: give concurrent runs their own instance (they can share a registry).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from hookreg import (
    FinishReason,
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    Message,
    ModelSelectContext,
    ModelTurnFinishedContext,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    ReasoningDeltaContext,
    RequestPatch,
    RunContext,
    RunOutcome,
    StopContext,
    TextDeltaContext,
    ToolCallDeltaContext,
    ToolCallRequest,
    ToolErrorKind,
    TransformToolResultContext,
    TurnAction,
    UserPromptSubmitContext,
)
from hookreg._lifecycle import GateResult, Steps, adrive, drive, gate
from hookreg.adapters import _missing_framework, _refused_retry, _require_registry

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse, hook_config
    from langchain.agents.middleware import ToolCallRequest as LangChainToolCall
    from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler, BaseCallbackManager
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import (
        AIMessage,
        AIMessageChunk,
        AnyMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolCall,
        ToolMessage,
    )
    from langchain_core.outputs import ChatGenerationChunk, GenerationChunk
    from langchain_core.tools import BaseTool
    from langgraph.errors import GraphBubbleUp
    from langgraph.prebuilt.tool_node import INVALID_TOOL_NAME_ERROR_TEMPLATE, ToolInvocationError
    from langgraph.runtime import Runtime
    from langgraph.types import Command
    from pydantic import BaseModel, ValidationError
except ImportError as _import_error:  # pragma: no cover - exercised by a test that hides the framework
    raise _missing_framework("langchain", "langchain", _import_error) from _import_error

__all__ = ["HookregMiddleware"]

_ToolResponse = ToolMessage | Command[Any]
_Update = dict[str, Any] | None
_ModelHandler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
_AsyncModelHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
_MODEL_POINTS = (HookPoint.PRE_MODEL_CALL, HookPoint.MODEL_SELECT)
_DELTA_POINTS = (HookPoint.TEXT_DELTA, HookPoint.REASONING_DELTA, HookPoint.TOOL_CALL_DELTA)
_Delta = TextDeltaContext | ReasoningDeltaContext | ToolCallDeltaContext


class _Continuations(int):
    """How many times ``stop`` kept this run going (kept in the run's scratchpad)."""


def _messages(state: Mapping[str, Any]) -> list[AnyMessage]:
    return cast("list[AnyMessage]", state.get("messages", []))


def _turn(state: Mapping[str, Any]) -> int:
    """The number of model answers so far: the current turn once the model has answered."""
    return sum(isinstance(m, AIMessage) for m in _messages(state))


def _prompt(state: Mapping[str, Any]) -> str:
    """The text of the latest user message."""
    return next((m.text for m in reversed(_messages(state)) if isinstance(m, HumanMessage)), "")


def _denial(result: HookResult) -> str:
    """What the model reads for a refused tool call (never empty: an empty text would look like a result)."""
    return result.reason or f"The tool call was denied by {result.decided_by or 'a hook'}."


def _tool_name(tool: BaseTool | dict[str, Any]) -> str:
    """The name a tool is offered under (a provider's built-in tool given as a dict may have none)."""
    if isinstance(tool, BaseTool):
        return tool.name
    function = tool.get("function")
    return str(tool.get("name") or (function.get("name") if isinstance(function, Mapping) else "") or "")


def _history(messages: list[AnyMessage]) -> list[Message]:
    """The conversation as hookreg messages (a tool call's id and name kept on its result)."""
    return [
        Message(
            role=m.type,
            content=m.text,
            name=m.name,
            tool_call_id=m.tool_call_id if isinstance(m, ToolMessage) else None,
        )
        for m in messages
    ]


def _system(request: ModelRequest[Any], patch: RequestPatch) -> SystemMessage | None:
    """The system message with the patch's preamble (replacing the prompt) and extra context appended."""
    if patch.preamble is None and not patch.extra_context:
        return request.system_message
    prompt = patch.preamble if patch.preamble is not None else request.system_prompt
    blocks = [block for block in (prompt, *(patch.extra_context or ())) if block]
    return SystemMessage(content="\n\n".join(blocks))


def _settings(request: ModelRequest[Any], patch: RequestPatch) -> dict[str, Any]:
    """The model settings with the patch's provider parameters, temperature and token cap."""
    settings = {**request.model_settings, **(patch.additional_params or {})}
    if patch.temperature is not None:
        settings["temperature"] = patch.temperature
    if patch.max_tokens is not None:
        settings["max_tokens"] = patch.max_tokens
    return settings


class _Stream:
    """One model call's stream, turned into delta contexts (text and reasoning aggregated)."""

    def __init__(self, run: RunContext) -> None:
        self.run, self.text, self.reasoning = run, "", ""
        self.calls: dict[object, tuple[str, str | None]] = {}  # a chunk's index -> its call's id and name

    def deltas(self, chunk: GenerationChunk | ChatGenerationChunk | None) -> list[_Delta]:
        """The delta contexts one streamed chunk carries, in order."""
        message = chunk.message if isinstance(chunk, ChatGenerationChunk) else None
        if not isinstance(message, AIMessageChunk):
            return []
        out: list[_Delta] = []
        for block in message.content_blocks:
            if block["type"] == "text" and block["text"]:
                self.text += block["text"]
                out.append(TextDeltaContext(delta=block["text"], aggregated=self.text, run=self.run))
            elif block["type"] == "reasoning" and block.get("reasoning"):
                delta = block.get("reasoning", "")
                self.reasoning += delta
                out.append(ReasoningDeltaContext(delta=delta, aggregated=self.reasoning, run=self.run))
        for piece in message.tool_call_chunks:  # read here: content_blocks drops them from a last chunk
            known = self.calls.get(piece["index"], ("", None))
            call = self.calls[piece["index"]] = (piece["id"] or known[0], piece["name"] or known[1])
            out.append(
                ToolCallDeltaContext(call_id=call[0], tool_name=call[1], delta=piece["args"] or "", run=self.run)
            )
        return out


class _Deltas(BaseCallbackHandler):
    """Fires the delta points for a streaming model call (sync dispatch)."""

    raise_error = True

    def __init__(self, registry: HookRegistry, run: RunContext) -> None:
        self.registry, self.stream = registry, _Stream(run)

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        **kwargs: Any,
    ) -> None:
        for ctx in self.stream.deltas(chunk):
            if isinstance(ctx, TextDeltaContext):
                self.registry.notify(HookPoint.TEXT_DELTA, ctx)
            elif isinstance(ctx, ReasoningDeltaContext):
                self.registry.notify(HookPoint.REASONING_DELTA, ctx)
            else:
                self.registry.notify(HookPoint.TOOL_CALL_DELTA, ctx)


class _AsyncDeltas(AsyncCallbackHandler):
    """Fires the delta points for a streaming model call (async dispatch)."""

    raise_error = True

    def __init__(self, registry: HookRegistry, run: RunContext) -> None:
        self.registry, self.stream = registry, _Stream(run)

    async def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        **kwargs: Any,
    ) -> None:
        for ctx in self.stream.deltas(chunk):
            if isinstance(ctx, TextDeltaContext):
                await self.registry.anotify(HookPoint.TEXT_DELTA, ctx)
            elif isinstance(ctx, ReasoningDeltaContext):
                await self.registry.anotify(HookPoint.REASONING_DELTA, ctx)
            else:
                await self.registry.anotify(HookPoint.TOOL_CALL_DELTA, ctx)


def _observed(request: ModelRequest[Any], handler: BaseCallbackHandler) -> ModelRequest[Any]:
    """`request` with a copy of its chat model that also reports its stream to `handler`."""
    callbacks = request.model.callbacks
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(handler)
        combined: BaseCallbackManager | list[BaseCallbackHandler] = manager
    else:
        combined = [*(callbacks or []), handler]
    return request.override(model=request.model.model_copy(update={"callbacks": combined}))


def _error_message(ctx: PreToolCallDecideContext, text: str) -> ToolMessage:
    """An error `ToolMessage`: what the model reads for a refused or failed call."""
    return ToolMessage(content=text, tool_call_id=ctx.call_id, name=ctx.tool_name, status="error")


def _kind(error: Exception) -> ToolErrorKind:
    return ToolErrorKind.INVALID_ARGS if isinstance(error, ToolInvocationError) else ToolErrorKind.EXCEPTION


class HookregMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """LangChain agent middleware that dispatches a hookreg registry's hooks.

    Example:
        >>> from hookreg import HookRegistry
        >>> middleware = HookregMiddleware(HookRegistry())
        >>> middleware.name
        'hookreg'

    Args:
        registry: The hooks to run; later changes to it apply to the next dispatch.
        models: The chat models a ``model_select`` hook may pick, by name.

    Raises:
        HookTypeError: `registry` is not a HookRegistry, or `models` maps a
            name to something other than a LangChain chat model.
    """

    def __init__(self, registry: HookRegistry, *, models: Mapping[str, BaseChatModel] | None = None) -> None:
        self.registry: HookRegistry = _require_registry(registry, "HookregMiddleware")
        self.models: Mapping[str, BaseChatModel] = dict(models or {})
        for name, model in self.models.items():
            if not isinstance(model, BaseChatModel):
                msg = (
                    f"Cannot build HookregMiddleware with model {name!r} = {model!r}: it is not a chat model. "
                    "Pass models={name: chat_model} with BaseChatModel instances, e.g. init_chat_model(...)."
                )
                raise HookTypeError(msg)
        self._run = RunContext()
        self._denied: str | None = None
        self._offered: dict[str, BaseTool] = {}

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph: ``"hookreg"``."""
        return "hookreg"

    def _at(self, state: Mapping[str, Any], turn: int | None = None) -> RunContext:
        """The run context for `turn` (default: the turn of the latest model answer)."""
        return dataclasses.replace(self._run, turn=_turn(state) if turn is None else turn)

    def _start(self, runtime: Runtime[Any], prompt: str) -> OnSessionStartContext:
        """Begin a new run: the LangGraph thread (or run) id is the session id when there is one."""
        info = runtime.execution_info
        session = (info.thread_id or info.run_id or "") if info is not None else ""
        self._run, self._denied = RunContext(session_id=session), None
        return OnSessionStartContext(session_id=self._run.session_id, goal=prompt, run=self._run)

    def _end_with(self, result: HookResult) -> dict[str, Any]:
        """A state update that ends the run with the denial's reason as the agent's answer."""
        self._denied = _denial(result)
        return {"messages": [AIMessage(content=self._denied)], "jump_to": "end"}

    # --- before_agent: on_session_start, user_prompt_submit ---------------------

    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Fire ``on_session_start`` and gate the prompt with ``user_prompt_submit``."""
        prompt = _prompt(state)
        self.registry.notify(HookPoint.ON_SESSION_START, self._start(runtime, prompt))
        result = self.registry.decide(
            HookPoint.USER_PROMPT_SUBMIT, UserPromptSubmitContext(content=prompt, run=self._run)
        )
        return None if result.allowed else self._end_with(result)

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `before_agent`."""
        prompt = _prompt(state)
        await self.registry.anotify(HookPoint.ON_SESSION_START, self._start(runtime, prompt))
        result = await self.registry.adecide(
            HookPoint.USER_PROMPT_SUBMIT, UserPromptSubmitContext(content=prompt, run=self._run)
        )
        return None if result.allowed else self._end_with(result)

    # --- before_model: pre_turn ---------------------------------------------------

    def _pre_turn(self, state: AgentState[Any]) -> PreTurnContext:
        turn = _turn(state) + 1
        return PreTurnContext(prompt=_prompt(state), turn=turn, run=self._at(state, turn))

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Gate the coming model call with ``pre_turn``."""
        result = self.registry.decide(HookPoint.PRE_TURN, self._pre_turn(state))
        return None if result.allowed else self._end_with(result)

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `before_model`."""
        result = await self.registry.adecide(HookPoint.PRE_TURN, self._pre_turn(state))
        return None if result.allowed else self._end_with(result)

    # --- wrap_model_call: pre_model_call, model_select ---------------------------

    def _offer(self, request: ModelRequest[Any]) -> None:
        """Remember the tools offered: an ``invalid_tool_call`` lists them and may repair to one."""
        self._offered = {t.name: t for t in request.tools if isinstance(t, BaseTool)}

    def _default_model(self, model: BaseChatModel) -> str:
        named = next((name for name, chat in self.models.items() if chat is model), None)
        attribute = getattr(model, "model_name", None) or getattr(model, "model", None)
        return named or (attribute if isinstance(attribute, str) else model.get_name())

    def _pre_model(self, request: ModelRequest[Any]) -> PreModelCallContext:
        state = request.state
        turn = _turn(state) + 1
        base = RequestPatch(active_tools=frozenset(_tool_name(t) for t in request.tools))
        return PreModelCallContext(
            prompt=_prompt(state), history=_history(request.messages), turn=turn, patch=base, run=self._at(state, turn)
        )

    def _select(self, ctx: PreModelCallContext, request: ModelRequest[Any], patch: RequestPatch) -> ModelSelectContext:
        name = self._default_model(request.model)
        return ModelSelectContext(default_model=name, selected_model=name, patch=patch, run=ctx.run)

    def _patched(
        self, request: ModelRequest[Any], patch: RequestPatch, select: ModelSelectContext, pick: str
    ) -> ModelRequest[Any]:
        """`request` with the patch applied and the picked model swapped in."""
        model = request.model
        if pick != select.default_model:
            if pick not in self.models:
                msg = (
                    f"Cannot call model {pick!r} picked by a model_select hook: HookregMiddleware has no chat model "
                    f"of that name (it has {sorted(self.models)}). Pass it as HookregMiddleware(registry, "
                    f"models={{{pick!r}: chat_model}}), or return one of those names."
                )
                raise HookValueError(msg, point=HookPoint.MODEL_SELECT)
            model = self.models[pick]
        active = patch.active_tools
        tools = request.tools if active is None else [t for t in request.tools if _tool_name(t) in active]
        patched = request.override(
            model=model,
            system_message=_system(request, patch),
            tools=tools,
            tool_choice=request.tool_choice if patch.tool_choice is None else patch.tool_choice,
            model_settings=_settings(request, patch),
        )
        self._offer(patched)
        return patched

    def _streamed(self, request: ModelRequest[Any], handler: type[_Deltas | _AsyncDeltas]) -> ModelRequest[Any]:
        """`request`, its model reporting its stream to the delta points when they have hooks."""
        if not any(self.registry.has_hooks(point) for point in _DELTA_POINTS):
            return request
        return _observed(request, handler(self.registry, self._at(request.state, _turn(request.state) + 1)))

    def wrap_model_call(self, request: ModelRequest[Any], handler: _ModelHandler) -> ModelResponse[Any]:
        """Patch the request (``pre_model_call``), pick its model (``model_select``), observe its stream, call it."""
        if not any(self.registry.has_hooks(point) for point in _MODEL_POINTS):
            self._offer(request)
            return handler(self._streamed(request, _Deltas))
        ctx = self._pre_model(request)
        patch = self.registry.transform(HookPoint.PRE_MODEL_CALL, ctx)
        select = self._select(ctx, request, patch)
        pick = self.registry.transform(HookPoint.MODEL_SELECT, select)
        return handler(self._streamed(self._patched(request, patch, select, pick), _Deltas))

    async def awrap_model_call(self, request: ModelRequest[Any], handler: _AsyncModelHandler) -> ModelResponse[Any]:
        """Async twin of `wrap_model_call`."""
        if not any(self.registry.has_hooks(point) for point in _MODEL_POINTS):
            self._offer(request)
            return await handler(self._streamed(request, _AsyncDeltas))
        ctx = self._pre_model(request)
        patch = await self.registry.atransform(HookPoint.PRE_MODEL_CALL, ctx)
        select = self._select(ctx, request, patch)
        pick = await self.registry.atransform(HookPoint.MODEL_SELECT, select)
        return await handler(self._streamed(self._patched(request, patch, select, pick), _AsyncDeltas))

    # --- after_model: model_turn_finished, post_turn, stop -----------------------

    def _finished(self, state: AgentState[Any]) -> tuple[AIMessage | None, ModelTurnFinishedContext]:
        answer = next((m for m in reversed(_messages(state)) if isinstance(m, AIMessage)), None)
        calls = answer.tool_calls if answer is not None else []
        usage = answer.usage_metadata if answer is not None else None
        metadata = answer.response_metadata if answer is not None else {}
        reason = metadata.get("finish_reason") or metadata.get("stop_reason")
        raw_reason = reason if isinstance(reason, str) else None
        ctx = ModelTurnFinishedContext(
            turn=_turn(state),
            text=answer.text if answer is not None else "",
            tool_calls=[ToolCallRequest(c["id"] or "", c["name"], c["args"]) for c in calls],
            finish_reason=FinishReason.from_raw(raw_reason),
            raw_finish_reason=raw_reason,
            max_tokens=None,
            usage={k: v for k, v in (usage or {}).items() if isinstance(v, int)},
            run=self._at(state),
        )
        return answer, ctx

    def _steer(self, answer: AIMessage | None, turn: int, action: TurnAction) -> _Update:
        """The state update for a non-continue `action`, or ``None`` to go on."""
        if action.kind != "continue" and answer is not None and answer.tool_calls:
            raise _refused_retry(turn, action.decided_by, [c["name"] for c in answer.tool_calls])
        if action.kind == "repeat" and answer is not None and answer.id is not None:
            return {"messages": [RemoveMessage(id=answer.id)], "jump_to": "model"}
        if action.kind == "feedback":
            return {"messages": [HumanMessage(content=action.feedback or "")], "jump_to": "model"}
        return None

    def _stop(self, ctx: ModelTurnFinishedContext) -> StopContext:
        count = ctx.run.scratchpad.get(_Continuations) or 0
        return StopContext(response_text=ctx.text, continuation_count=count, run=ctx.run)

    @staticmethod
    def _keep_going(stop: StopContext, result: HookResult) -> _Update:
        if result.allowed:
            return None
        stop.run.scratchpad.update(_Continuations, lambda n: _Continuations(n + 1))
        return {"messages": [HumanMessage(content=_denial(result))], "jump_to": "model"}

    @hook_config(can_jump_to=["model"])
    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Judge the answer (``model_turn_finished``), observe it (``post_turn``), and gate stopping (``stop``)."""
        answer, ctx = self._finished(state)
        steer = self._steer(answer, ctx.turn, self.registry.decide(HookPoint.MODEL_TURN_FINISHED, ctx))
        if steer is not None:
            return steer
        self.registry.notify(HookPoint.POST_TURN, PostTurnContext(turn=ctx.turn, response_text=ctx.text, run=ctx.run))
        if ctx.tool_calls:
            return None
        stop = self._stop(ctx)
        return self._keep_going(stop, self.registry.decide(HookPoint.STOP, stop))

    @hook_config(can_jump_to=["model"])
    async def aafter_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `after_model`."""
        answer, ctx = self._finished(state)
        steer = self._steer(answer, ctx.turn, await self.registry.adecide(HookPoint.MODEL_TURN_FINISHED, ctx))
        if steer is not None:
            return steer
        post = PostTurnContext(turn=ctx.turn, response_text=ctx.text, run=ctx.run)
        await self.registry.anotify(HookPoint.POST_TURN, post)
        if ctx.tool_calls:
            return None
        stop = self._stop(ctx)
        return self._keep_going(stop, await self.registry.adecide(HookPoint.STOP, stop))

    # --- after_agent: on_session_end ---------------------------------------------

    def _end(self, state: AgentState[Any]) -> OnSessionEndContext:
        turns = _turn(state) - (self._denied is not None)  # the denial's answer is no model turn
        if self._denied is not None:
            outcome = RunOutcome(status="stopped", reason=self._denied, turns=turns)
        else:
            outcome = RunOutcome(status="completed", turns=turns)
        return OnSessionEndContext(session_id=self._run.session_id, outcome=outcome, run=self._at(state))

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Fire ``on_session_end``."""
        self.registry.notify(HookPoint.ON_SESSION_END, self._end(state))
        return None

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `after_agent`."""
        await self.registry.anotify(HookPoint.ON_SESSION_END, self._end(state))
        return None

    # --- wrap_tool_call: the tool points -----------------------------------------

    def _call(self, request: LangChainToolCall) -> PreToolCallDecideContext:
        call = request.tool_call
        state = request.state if isinstance(request.state, Mapping) else {}
        return PreToolCallDecideContext(
            tool_name=call["name"], args=call["args"], call_id=call["id"] or "", run=self._at(state)
        )

    @staticmethod
    def _rewrite(request: LangChainToolCall, args: Mapping[str, object], rewritten: bool) -> LangChainToolCall:
        return request.override(tool_call={**request.tool_call, "args": dict(args)}) if rewritten else request

    @staticmethod
    def _result(ctx: PreToolCallDecideContext, response: ToolMessage) -> TransformToolResultContext:
        raw = response.artifact if response.artifact is not None else response.content
        return TransformToolResultContext(
            tool_name=ctx.tool_name,
            args=ctx.args,
            call_id=ctx.call_id,
            raw_result=raw,
            presentation=response.text,
            run=ctx.run,
        )

    @staticmethod
    def _post(
        result: TransformToolResultContext, response: ToolMessage, presentation: str, started: float
    ) -> PostToolCallContext:
        return PostToolCallContext(
            tool_name=result.tool_name,
            args=result.args,
            call_id=result.call_id,
            result=presentation,
            raw_result=result.raw_result,
            duration_ms=(time.perf_counter() - started) * 1000,
            metadata={"status": response.status},
            run=result.run,
        )

    @staticmethod
    def _presented(response: ToolMessage, result: TransformToolResultContext, presentation: str) -> ToolMessage:
        if presentation is result.presentation:
            return response
        return response.model_copy(update={"content": presentation})

    @staticmethod
    def _failure(ctx: PreToolCallDecideContext, error: Exception, started: float) -> PostToolCallFailureContext:
        return PostToolCallFailureContext(
            tool_name=ctx.tool_name,
            args=ctx.args,
            call_id=ctx.call_id,
            error=error,
            duration_ms=(time.perf_counter() - started) * 1000,
            run=ctx.run,
        )

    @staticmethod
    def _explained(ctx: PreToolCallDecideContext, error: Exception) -> OnToolErrorContext:
        # LangChain's own text for a handled tool error (ToolNode's TOOL_CALL_ERROR_TEMPLATE).
        message = f"Error: {error!r}\n Please fix your mistakes."
        return OnToolErrorContext(
            tool_name=ctx.tool_name,
            args=ctx.args,
            call_id=ctx.call_id,
            error=error,
            kind=_kind(error),
            message=message,
            run=ctx.run,
        )

    def _gate_steps(self, ctx: PreToolCallDecideContext) -> Steps[GateResult]:
        return gate(self.registry, ctx.run, ctx.tool_name, ctx.call_id, ctx.args, known={ctx.tool_name})

    @staticmethod
    def _gated(ctx: PreToolCallDecideContext, verdict: GateResult) -> PreToolCallDecideContext:
        return dataclasses.replace(ctx, args=verdict.call.args)

    def _gate(self, ctx: PreToolCallDecideContext) -> tuple[PreToolCallDecideContext, GateResult]:
        verdict = drive(self.registry, self._gate_steps(ctx))
        return self._gated(ctx, verdict), verdict

    async def _agate(self, ctx: PreToolCallDecideContext) -> tuple[PreToolCallDecideContext, GateResult]:
        verdict = await adrive(self.registry, self._gate_steps(ctx))
        return self._gated(ctx, verdict), verdict

    def _invalid(self, request: LangChainToolCall) -> InvalidToolCallContext | None:
        """The ``invalid_tool_call`` context when the call names no tool or fails its args schema, else ``None``."""
        if not self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL):
            return None
        call, tool = request.tool_call, request.tool
        if tool is None:
            error = INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
                requested_tool=call["name"], available_tools=", ".join(self._offered)
            )
        else:
            schema = tool.tool_call_schema
            if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
                return None  # a JSON-schema tool: LangChain passes its args through unchecked
            try:
                schema.model_validate(call["args"])
            except ValidationError as exc:
                error = ToolInvocationError(call["name"], exc, call["args"], exc.errors()).message
            else:
                return None
        ctx = self._call(request)
        return InvalidToolCallContext(
            tool_name=ctx.tool_name,
            args=ctx.args,
            call_id=ctx.call_id,
            available_tools=sorted(self._offered),
            error=error,
            run=ctx.run,
        )

    def _settled(
        self, request: LangChainToolCall, ctx: InvalidToolCallContext, action: InvalidToolCallAction
    ) -> LangChainToolCall | ToolMessage:
        """The repaired request to run, or the error `ToolMessage` that answers an invalid call."""
        tool = self._offered.get(action.tool_name or "") if action.kind == "repair" else None
        if tool is not None:
            call: ToolCall = {**request.tool_call, "name": tool.name}
            return request.override(tool_call=call, tool=tool)
        text = action.feedback if action.kind == "retry" else action.reason
        return ToolMessage(content=text or ctx.error, tool_call_id=ctx.call_id, name=ctx.tool_name, status="error")

    def wrap_tool_call(
        self, request: LangChainToolCall, handler: Callable[[LangChainToolCall], _ToolResponse]
    ) -> _ToolResponse:
        """Gate and rewrite the call, run the tool, then rewrite and observe its result or failure."""
        invalid = self._invalid(request)
        if invalid is not None:
            settled = self._settled(request, invalid, self.registry.decide(HookPoint.INVALID_TOOL_CALL, invalid))
            if isinstance(settled, ToolMessage):
                return settled
            request = settled
        ctx, verdict = self._gate(self._call(request))
        if not verdict.allowed:
            return _error_message(ctx, verdict.text)
        started = time.perf_counter()
        try:
            response = handler(self._rewrite(request, ctx.args, verdict.rewritten))
        except GraphBubbleUp:
            raise  # LangGraph's interrupts are control flow, not failures
        except Exception as error:
            self.registry.notify(HookPoint.POST_TOOL_CALL_FAILURE, self._failure(ctx, error, started))
            if not self.registry.has_hooks(HookPoint.ON_TOOL_ERROR):
                raise
            text = self.registry.transform(HookPoint.ON_TOOL_ERROR, self._explained(ctx, error))
            return _error_message(ctx, text)
        if not isinstance(response, ToolMessage):
            return response  # a Command steers the graph; there is no text to rewrite
        result = self._result(ctx, response)
        presentation = self.registry.transform(HookPoint.TRANSFORM_TOOL_RESULT, result)
        self.registry.notify(HookPoint.POST_TOOL_CALL, self._post(result, response, presentation, started))
        return self._presented(response, result, presentation)

    async def awrap_tool_call(
        self, request: LangChainToolCall, handler: Callable[[LangChainToolCall], Awaitable[_ToolResponse]]
    ) -> _ToolResponse:
        """Async twin of `wrap_tool_call`."""
        invalid = self._invalid(request)
        if invalid is not None:
            action = await self.registry.adecide(HookPoint.INVALID_TOOL_CALL, invalid)
            settled = self._settled(request, invalid, action)
            if isinstance(settled, ToolMessage):
                return settled
            request = settled
        ctx, verdict = await self._agate(self._call(request))
        if not verdict.allowed:
            return _error_message(ctx, verdict.text)
        started = time.perf_counter()
        try:
            response = await handler(self._rewrite(request, ctx.args, verdict.rewritten))
        except GraphBubbleUp:
            raise  # LangGraph's interrupts are control flow, not failures
        except Exception as error:
            await self.registry.anotify(HookPoint.POST_TOOL_CALL_FAILURE, self._failure(ctx, error, started))
            if not self.registry.has_hooks(HookPoint.ON_TOOL_ERROR):
                raise
            text = await self.registry.atransform(HookPoint.ON_TOOL_ERROR, self._explained(ctx, error))
            return _error_message(ctx, text)
        if not isinstance(response, ToolMessage):
            return response  # a Command steers the graph; there is no text to rewrite
        result = self._result(ctx, response)
        presentation = await self.registry.atransform(HookPoint.TRANSFORM_TOOL_RESULT, result)
        await self.registry.anotify(HookPoint.POST_TOOL_CALL, self._post(result, response, presentation, started))
        return self._presented(response, result, presentation)
