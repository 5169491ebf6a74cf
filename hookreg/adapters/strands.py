"""Run a hookreg registry as a Strands ``HookProvider`` (``pip install 'hookreg[strands]'``).

Pass `HookregProvider` to ``strands.Agent(hooks=[...])``. A *session* is one
agent invocation (with the continuations ``stop`` asks for) and a *turn* is
one model call (turn 1 is the first); the tool calls a model answer asks for
belong to its turn. Every callback is async, so hooks run through the
registry's ``a``-methods: sync and async hooks mix freely.

Where each hook point runs:

- ``on_session_start``, ``user_prompt_submit``: ``BeforeInvocationEvent``; a
  deny cancels the invocation with its reason as the agent's answer.
- ``pre_turn``: ``BeforeModelCallEvent``; a deny cancels the model call with
  its reason as the answer, which ends the run.
- ``pre_model_call``, ``model_select``, the delta points: Strands'
  ``InvokeModelStage`` middleware, which the provider adds to the agent on its
  first invocation. The merged `hookreg.RequestPatch` applies to the model
  call: ``preamble`` replaces the system prompt and ``extra_context`` blocks
  are appended to it; ``active_tools`` filters the tool specs offered;
  ``tool_choice`` (``"auto"``, ``"any"``/``"required"``, ``"none"``, or a
  tool's name) sets the call's tool choice. ``temperature``, ``max_tokens``
  and ``additional_params`` cannot apply: Strands keeps them in the model's
  shared config, not in the call, so a patch setting them logs
  ``patch_field_unsupported`` and they are left alone. ``model_select`` picks
  by name among the models given as ``models=``; the agent's own model is
  ``default_model`` (its key in ``models``, else its ``model_id``, else its
  class name). ``text_delta``, ``reasoning_delta`` and ``tool_call_delta``
  fire for the model's stream events as they pass through.
- ``model_turn_finished``, ``post_turn``: ``AfterModelCallEvent``.
  ``repeat()`` discards the answer and calls the model again
  (``AfterModelCallEvent.retry``); ``retry_with_feedback`` also keeps the
  answer in the conversation and adds the feedback as a user message before
  the new call, which stays in the same turn (``pre_turn`` does not fire
  for it). A non-continue action for an answer that calls tools raises
  `hookreg.HookValueError` (its tool calls would be dropped unrun).
  ``post_turn`` fires for the answer that is kept.
- ``invalid_tool_call``: ``BeforeToolCallEvent`` for a tool the agent does
  not have. ``repair`` selects the named tool instead (then the gate runs);
  ``retry`` and ``skip`` cancel the call with the feedback or reason as its
  error result; ``fail`` with a reason cancels it with the reason, and
  without one lets Strands answer ``Unknown tool`` (which the failure points
  see). Arguments are validated inside the tool, so bad arguments reach the
  failure points, not this one.
- ``transform_tool_input``, ``pre_tool_call_decide``, ``permission_denied``,
  ``on_interaction``: ``BeforeToolCallEvent``. The rewritten arguments replace
  the tool input; a deny (or an ``ask`` that no ``on_interaction`` hook
  allows) cancels the call with the reason as its error result, and the tool
  never runs.
- ``post_tool_call_failure``, ``on_tool_error``: ``AfterToolCallEvent`` with
  an exception; the chain starts from Strands' error text and its result is
  the text the model reads.
- ``transform_tool_result``, ``post_tool_call``: ``AfterToolCallEvent``
  without one. Strands keeps only the formatted tool result, so ``raw_result``
  is its text (the function's return value as Strands rendered it).
- ``stop``, ``on_session_end``: ``AfterInvocationEvent``. When the run ended
  normally, a ``stop`` deny resumes the agent with its reason as the next
  user message; otherwise ``on_session_end`` fires with the outcome.

A `hookreg.StopRun` raised by a hook inside the event loop (turn and tool
points) leaves the agent call as Strands' ``EventLoopException``, whose
``__cause__`` is the `hookreg.StopRun`.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from hookreg._context import (
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
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
from hookreg._context import (
    Message as HookMessage,
)
from hookreg._errors import HookTypeError, HookValueError
from hookreg._log import log
from hookreg._points import HookPoint
from hookreg._results import FinishReason, HookResult, InvalidToolCallAction, RequestPatch
from hookreg._surface import HookRegistry
from hookreg.adapters import _missing_framework, _refused_retry, _require_registry, _ToolCall

try:
    from strands.hooks import (
        AfterInvocationEvent,
        AfterModelCallEvent,
        AfterToolCallEvent,
        BeforeInvocationEvent,
        BeforeModelCallEvent,
        BeforeToolCallEvent,
    )
    from strands.hooks import (
        HookRegistry as StrandsHookRegistry,
    )
    from strands.middleware import InvokeModelContext, InvokeModelStage, MiddlewareNext
    from strands.models import Model
    from strands.types.content import Message, Messages, SystemContentBlock, SystemPrompt
    from strands.types.events import TypedEvent
    from strands.types.tools import ToolChoice, ToolResult, ToolSpec
except ImportError as _import_error:  # pragma: no cover - exercised by a test that hides the framework
    raise _missing_framework("strands", "strands", _import_error) from _import_error

__all__ = ["HookregProvider"]

_KEY = "hookreg"
"""Where the run's state lives in Strands' per-invocation ``invocation_state``."""

_COMPLETED = frozenset({"end_turn", "stop_sequence"})


@dataclass(slots=True)
class _Run:
    """One invocation as the provider tracks it."""

    run: RunContext
    continuations: int = 0
    denied: str | None = None
    retrying: bool = False


def _text(content: object) -> str:
    """The text blocks of a message's or tool result's content, joined."""
    blocks = cast("list[Mapping[str, object]]", content if isinstance(content, list) else [])
    return "".join(str(block["text"]) for block in blocks if "text" in block)


def _last_user_text(messages: Messages | None) -> str:
    return next((_text(m["content"]) for m in reversed(messages or []) if m["role"] == "user"), "")


def _outcome(event: AfterInvocationEvent, state: _Run) -> RunOutcome:
    result, turns = event.result, state.run.turn
    if state.denied is not None:
        return RunOutcome(status="stopped", reason=state.denied, turns=turns)
    if result is None:
        return RunOutcome(status="failed", turns=turns)
    if result.stop_reason in _COMPLETED:
        return RunOutcome(status="completed", turns=turns)
    if result.stop_reason == "cancelled":
        return RunOutcome(status="cancelled", turns=turns)
    return RunOutcome(status="stopped", reason=result.stop_reason, turns=turns)


def _with_text(result: ToolResult, text: str) -> ToolResult:
    return cast("ToolResult", {**result, "content": [{"text": text}]})


def _denial(result: HookResult) -> str:
    """The text of a refusal: never empty, since Strands ignores an empty cancel message."""
    return result.reason or f"denied by {result.decided_by or 'a hook'}"


_MODEL_POINTS = (HookPoint.PRE_MODEL_CALL, HookPoint.MODEL_SELECT)
_DELTA_POINTS = (HookPoint.TEXT_DELTA, HookPoint.REASONING_DELTA, HookPoint.TOOL_CALL_DELTA)
_UNSUPPORTED = ("temperature", "max_tokens", "additional_params")
_CHOICES = {"auto": "auto", "any": "any", "required": "any"}


def _history(messages: Messages) -> list[HookMessage]:
    return [HookMessage(role=m["role"], content=_text(m["content"])) for m in messages]


def _system(prompt: SystemPrompt, patch: RequestPatch) -> SystemPrompt:
    """The system prompt with the patch's preamble (replacing it) and extra context appended."""
    if patch.preamble is None and not patch.extra_context:
        return prompt
    if patch.preamble is not None:
        prompt = patch.preamble
    extra = list(patch.extra_context or ())
    if isinstance(prompt, list):
        return [*prompt, *(SystemContentBlock(text=block) for block in extra)]
    return "\n\n".join(block for block in (prompt, *extra) if block)


def _tools(context: InvokeModelContext, patch: RequestPatch) -> tuple[list[ToolSpec], ToolChoice | None]:
    """The tool specs offered and the tool choice, after the patch."""
    active, choice = patch.active_tools, patch.tool_choice
    specs = context.tool_specs if active is None else [s for s in context.tool_specs if s["name"] in active]
    if choice is None:
        return specs, context.tool_choice
    if choice == "none":
        return [], None
    key = _CHOICES.get(choice)
    return specs, cast("ToolChoice", {key: {}} if key else {"tool": {"name": choice}})


def _tool_use(message: Message) -> list[ToolCallRequest]:
    uses = [block["toolUse"] for block in message["content"] if "toolUse" in block]
    return [
        ToolCallRequest(str(u["toolUseId"]), u["name"], u["input"] if isinstance(u["input"], Mapping) else {})
        for u in uses
    ]


class HookregProvider:
    """A Strands hook provider that dispatches a hookreg registry's hooks.

    Example:
        >>> from hookreg import HookRegistry
        >>> provider = HookregProvider(HookRegistry())
        >>> agent = Agent(model=model, tools=[...], hooks=[provider])  # doctest: +SKIP

    Args:
        registry: The hooks to run; later changes to it apply to the next dispatch.
        models: The Strands models a ``model_select`` hook may pick, by name.

    Raises:
        HookTypeError: `registry` is not a HookRegistry, or `models` maps a
            name to something other than a Strands model.
    """

    def __init__(self, registry: HookRegistry, *, models: Mapping[str, Model] | None = None) -> None:
        self.registry: HookRegistry = _require_registry(registry, "HookregProvider")
        self.models: Mapping[str, Model] = dict(models or {})
        for name, model in self.models.items():
            if not isinstance(model, Model):
                msg = (
                    f"Cannot build HookregProvider with model {name!r} = {model!r}: it is not a Strands model. "
                    "Pass models={name: model} with strands.models.Model instances, e.g. BedrockModel(...)."
                )
                raise HookTypeError(msg)
        self._agents: weakref.WeakSet[Any] = weakref.WeakSet()

    def register_hooks(self, registry: StrandsHookRegistry, **kwargs: Any) -> None:
        """Subscribe to the Strands events the hook points map to (called by ``Agent``).

        Args:
            registry: The agent's Strands hook registry.
            **kwargs: Unused; Strands reserves them for future use.
        """
        registry.add_callback(BeforeInvocationEvent, self.before_invocation)
        registry.add_callback(BeforeModelCallEvent, self.before_model_call)
        registry.add_callback(AfterModelCallEvent, self.after_model_call)
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)
        registry.add_callback(AfterToolCallEvent, self.after_tool_call)
        registry.add_callback(AfterInvocationEvent, self.after_invocation)

    @staticmethod
    def _state(invocation_state: dict[str, Any]) -> _Run:
        """This invocation's run, created on first use (an event fired outside an invocation gets its own)."""
        state = invocation_state.get(_KEY)
        if not isinstance(state, _Run):
            state = invocation_state[_KEY] = _Run(RunContext())
        return state

    async def before_invocation(self, event: BeforeInvocationEvent) -> None:
        """Start the session and gate the prompt; a continuation asked for by ``stop`` skips both."""
        if event.agent not in self._agents:  # first run of this agent: wrap its model calls
            self._agents.add(event.agent)
            event.agent.add_middleware(InvokeModelStage, self.invoke_model)
        if isinstance(event.invocation_state.get(_KEY), _Run):
            return
        agent_name = getattr(event.agent, "name", None)
        state = event.invocation_state[_KEY] = _Run(RunContext(agent_name=agent_name))
        run, prompt = state.run, _last_user_text(event.messages)
        start = OnSessionStartContext(session_id=run.session_id, goal=prompt, run=run)
        await self.registry.anotify(HookPoint.ON_SESSION_START, start)
        result = await self.registry.adecide(
            HookPoint.USER_PROMPT_SUBMIT, UserPromptSubmitContext(content=prompt, run=run)
        )
        if not result.allowed:
            state.denied = event.cancel = _denial(result)

    async def before_model_call(self, event: BeforeModelCallEvent) -> None:
        """Gate the next turn with ``pre_turn``; an allowed turn becomes the run's current one.

        A call retried by ``model_turn_finished`` stays in its turn: ``pre_turn`` does not fire for it.
        """
        state = self._state(event.invocation_state)
        if state.retrying:
            state.retrying = False
            return
        run = dataclasses.replace(state.run, turn=state.run.turn + 1)
        prompt = _last_user_text(event.agent.messages)
        result = await self.registry.adecide(HookPoint.PRE_TURN, PreTurnContext(prompt=prompt, turn=run.turn, run=run))
        if result.allowed:
            state.run = run
        else:
            state.denied = event.cancel = _denial(result)

    def _default_model(self, model: Model) -> str:
        named = next((name for name, known in self.models.items() if known is model), None)
        config = model.get_config()
        model_id = config.get("model_id") if isinstance(config, Mapping) else None
        return named or (model_id if isinstance(model_id, str) else type(model).__name__)

    async def _patched(self, context: InvokeModelContext, run: RunContext) -> InvokeModelContext:
        """The model call with the ``pre_model_call`` patch applied and the ``model_select`` pick swapped in."""
        base = RequestPatch(active_tools=frozenset(spec["name"] for spec in context.tool_specs))
        pre = PreModelCallContext(
            prompt=_last_user_text(context.messages),
            history=_history(context.messages),
            turn=run.turn,
            patch=base,
            run=run,
        )
        patch = await self.registry.atransform(HookPoint.PRE_MODEL_CALL, pre)
        unsupported = [name for name in _UNSUPPORTED if getattr(patch, name) is not None]
        if unsupported:
            log("warning", "patch_field_unsupported", framework="strands", fields=unsupported)
        default = self._default_model(context.model)
        select = ModelSelectContext(default_model=default, selected_model=default, patch=patch, run=run)
        pick = await self.registry.atransform(HookPoint.MODEL_SELECT, select)
        model = context.model
        if pick != default:
            if pick not in self.models:
                msg = (
                    f"Cannot call model {pick!r} picked by a model_select hook: HookregProvider has no model of "
                    f"that name (it has {sorted(self.models)}). Pass it as HookregProvider(registry, "
                    f"models={{{pick!r}: model}}), or return one of those names."
                )
                raise HookValueError(msg, point=HookPoint.MODEL_SELECT)
            model = self.models[pick]
        specs, choice = _tools(context, patch)
        return context.replace(
            system_prompt=_system(context.system_prompt, patch), tool_specs=specs, tool_choice=choice, model=model
        )

    async def _observe(self, event: TypedEvent, deltas: dict[str, str], run: RunContext) -> None:
        """Fire the delta point for one stream event (`deltas` aggregates text and reasoning)."""
        if isinstance(event.get("data"), str) and "delta" in event:
            deltas["text"] = deltas.get("text", "") + event["data"]
            ctx = TextDeltaContext(delta=event["data"], aggregated=deltas["text"], run=run)
            await self.registry.anotify(HookPoint.TEXT_DELTA, ctx)
        elif isinstance(event.get("reasoningText"), str):
            deltas["reasoning"] = deltas.get("reasoning", "") + event["reasoningText"]
            chunk = ReasoningDeltaContext(delta=event["reasoningText"], aggregated=deltas["reasoning"], run=run)
            await self.registry.anotify(HookPoint.REASONING_DELTA, chunk)
        elif event.get("type") == "tool_use_stream":
            use, delta = event["current_tool_use"], event["delta"]["toolUse"]
            call = ToolCallDeltaContext(
                call_id=str(use.get("toolUseId", "")), tool_name=use.get("name"), delta=str(delta["input"]), run=run
            )
            await self.registry.anotify(HookPoint.TOOL_CALL_DELTA, call)

    async def invoke_model(
        self, context: InvokeModelContext, next_fn: MiddlewareNext[InvokeModelContext, TypedEvent]
    ) -> AsyncGenerator[TypedEvent, None]:
        """Strands ``InvokeModelStage`` middleware: patch and route the call, and observe its stream.

        Args:
            context: The model call Strands is about to make.
            next_fn: The rest of the middleware chain, ending in the model.

        Yields:
            The model call's events, unchanged.
        """
        run = self._state(context.invocation_state).run
        if any(self.registry.has_hooks(point) for point in _MODEL_POINTS):
            context = await self._patched(context, run)
        observed = any(self.registry.has_hooks(point) for point in _DELTA_POINTS)
        deltas: dict[str, str] = {}
        async for event in next_fn(context):
            if observed:
                await self._observe(event, deltas, run)
            yield event

    async def after_model_call(self, event: AfterModelCallEvent) -> None:
        """Judge the answer (``model_turn_finished``), then observe the kept one (``post_turn``).

        Not for a turn ``pre_turn`` denied, nor for a failed call.
        """
        state = self._state(event.invocation_state)
        if event.stop_response is None or state.denied is not None:
            return
        message: Message = event.stop_response.message
        text = _text(message["content"])
        if self.registry.has_hooks(HookPoint.MODEL_TURN_FINISHED):
            calls = _tool_use(message)
            usage = cast("Mapping[str, object]", message.get("metadata", {}).get("usage", {}))
            finished = ModelTurnFinishedContext(
                turn=state.run.turn,
                text=text,
                tool_calls=calls,
                finish_reason=FinishReason.from_raw(event.stop_response.stop_reason),
                raw_finish_reason=event.stop_response.stop_reason,
                max_tokens=None,
                usage={k: v for k, v in usage.items() if isinstance(v, int)},
                run=state.run,
            )
            action = await self.registry.adecide(HookPoint.MODEL_TURN_FINISHED, finished)
            if action.kind != "continue":
                if calls:
                    raise _refused_retry(state.run.turn, action.decided_by, [c.tool_name for c in calls])
                if action.kind == "feedback":
                    feedback: Message = {"role": "user", "content": [{"text": action.feedback or ""}]}
                    event.agent.messages.extend([{"role": "assistant", "content": message["content"]}, feedback])
                event.retry = state.retrying = True
                return
        post = PostTurnContext(turn=state.run.turn, response_text=text, run=state.run)
        await self.registry.anotify(HookPoint.POST_TURN, post)

    def _tool_call(self, event: BeforeToolCallEvent | AfterToolCallEvent) -> tuple[_ToolCall, Mapping[str, object]]:
        tool_use = event.tool_use
        run = self._state(event.invocation_state).run
        args = tool_use["input"] if isinstance(tool_use["input"], Mapping) else {}
        return _ToolCall(self.registry, run, tool_use["name"], str(tool_use["toolUseId"])), args

    async def _invalid(self, event: BeforeToolCallEvent) -> bool:
        """Settle a call to an unknown tool with ``invalid_tool_call``; ``True`` when the call was cancelled."""
        call, args = self._tool_call(event)
        known = event.agent.tool_registry.registry
        ctx = InvalidToolCallContext(
            tool_name=call.tool_name,
            args=args,
            call_id=call.call_id,
            available_tools=sorted(known),
            error=f"Unknown tool: {call.tool_name}",
            run=call.run,
        )
        action: InvalidToolCallAction = await self.registry.adecide(HookPoint.INVALID_TOOL_CALL, ctx)
        repaired = known.get(action.tool_name or "") if action.kind == "repair" else None
        if repaired is not None:
            event.selected_tool = repaired
            event.tool_use = {**event.tool_use, "name": repaired.tool_name}
            return False
        text = action.feedback if action.kind == "retry" else action.reason
        if text:
            event.cancel_tool = text
        return bool(text)

    async def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        """Settle an unknown tool, rewrite the tool input and gate the call; a denial cancels it with the reason."""
        unknown = event.selected_tool is None and self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL)
        if unknown and await self._invalid(event):
            return
        call, _ = self._tool_call(event)
        verdict = await call.gate(event.tool_use["input"])  # the model's own value: a non-object is invalid
        if not verdict.allowed:
            event.cancel_tool = verdict.text
        elif verdict.rewritten:
            event.tool_use = {**event.tool_use, "input": dict(verdict.call.args)}

    async def after_tool_call(self, event: AfterToolCallEvent) -> None:
        """Observe the outcome and rewrite the text the model reads (not for a cancelled call)."""
        if event.cancel_message is not None:
            return
        call, args = self._tool_call(event)
        text = _text(event.result["content"])
        ms = (event.duration or 0.0) * 1000
        if event.exception is not None:
            shown: object = await call.failed(args, event.exception, text, ms)
        else:
            shown = await call.succeeded(args, text, ms)
        if shown is not text:
            event.result = _with_text(event.result, str(shown))

    async def after_invocation(self, event: AfterInvocationEvent) -> None:
        """Gate stopping with ``stop`` (a deny resumes the agent), else end the session."""
        state = self._state(event.invocation_state)
        result = event.result
        if result is not None and result.stop_reason in _COMPLETED and state.denied is None:
            stop = StopContext(
                response_text=_text(result.message["content"]), continuation_count=state.continuations, run=state.run
            )
            decision = await self.registry.adecide(HookPoint.STOP, stop)
            if not decision.allowed:
                state.continuations += 1
                event.resume = _denial(decision)
                return
        end = OnSessionEndContext(session_id=state.run.session_id, outcome=_outcome(event, state), run=state.run)
        del event.invocation_state[_KEY]
        await self.registry.anotify(HookPoint.ON_SESSION_END, end)
