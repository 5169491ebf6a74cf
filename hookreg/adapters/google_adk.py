"""Drive a Google ADK app from a HookRegistry through one plugin (``pip install 'hookreg[google-adk]'``).

Attach it with ``App(..., plugins=[HookregPlugin(registry)])``.

See the adapter's docs page (docs/adapters/google-adk.md) for where each hook
point runs, and its limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import json
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from hookreg import (
    HookPoint,
    HookRegistry,
    HookValueError,
    Message,
    RequestPatch,
    RunContext,
    RunOutcome,
    StopRun,
    ToolCallRequest,
)
from hookreg._lifecycle import (
    ANSWER_POINTS,
    DELTA_POINTS,
    FAILURE_POINTS,
    SUCCESS_POINTS,
    Deltas,
    GateResult,
    RunState,
    arun_flow,
    error_text,
    failed,
    gate,
    listens,
    missing_framework,
    outcome_for,
    present,
    require_registry,
    require_release,
    run_flow,
    succeeded,
    unanswered,
)

require_release("google_adk", "google-adk", (2, 13))  # 2.13: the oldest release the adapter tests pass with

try:
    from google.adk.events.event import Event
    from google.adk.plugins.base_plugin import BasePlugin
    from google.genai import types
except ImportError as _error:  # pragma: no cover - exercised by a test that hides the framework
    raise missing_framework("google_adk", "google-adk", _error) from _error

__all__ = ["HookregPlugin"]

_INTERNAL = frozenset({"transfer_to_agent", "set_model_response", "finish_task", "task_completed"})
"""The tools ADK adds itself (agent transfer, structured output, task mode): not user tool calls, never gated."""

_GATE_POINTS = (
    HookPoint.INVALID_TOOL_CALL,
    HookPoint.TRANSFORM_TOOL_INPUT,
    HookPoint.PRE_TOOL_CALL_DECIDE,
    HookPoint.POST_TOOL_CALL_FAILURE,  # an invalid call is reported as failed
    HookPoint.ON_TOOL_ERROR,
)
"""The points the gate fires before a tool runs: with none of them listening (and no ``active_tools``), ADK's own
handling of the call stands as it is, so the plugin leaves the call alone."""

_ANSWER_POINTS = (*ANSWER_POINTS, HookPoint.STOP)

_REQUIRED: weakref.WeakKeyDictionary[Callable[..., Any], tuple[str, ...]] = weakref.WeakKeyDictionary()
"""Each function tool's required parameters, read once per function (an agent's tools are the same each call)."""

_TOOL_CHOICES = {
    "none": types.FunctionCallingConfigMode.NONE,
    "required": types.FunctionCallingConfigMode.ANY,
    "auto": types.FunctionCallingConfigMode.AUTO,
}


@dataclasses.dataclass(eq=False, slots=True)
class _Scope:
    """One ADK invocation's state: the lifecycle, this call's tools, and each tool call's verdict.

    The lifecycle (`state`) is built at the first point a hook listens at (`HookregPlugin._state`): until then the
    scope only counts turns, so a run nobody listens to builds no `RunContext` at all.
    """

    run_id: str
    session_id: str
    agent_name: str | None  # None when the runner drives a workflow node, not an agent
    prompt: Any = None
    turns: int = 0
    state: RunState | None = None
    tools: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    offered: frozenset[str] | None = None
    calls: dict[str, ToolCallRequest] = dataclasses.field(default_factory=dict)
    reported: set[str] = dataclasses.field(default_factory=set)
    started: dict[str, float] = dataclasses.field(default_factory=dict)
    ran: dict[str, str] = dataclasses.field(default_factory=dict)
    deltas: Deltas | None = None
    stopped: RunOutcome | None = None
    watched: tuple[asyncio.Task[Any], Any] | None = None


class HookregPlugin(BasePlugin):
    """An ADK plugin that runs a `HookRegistry`'s hooks in every run of an app.

    Add it in one line: ``App(..., plugins=[HookregPlugin(registry)])``. One
    plugin serves every run of the app, also concurrently: each ADK
    invocation gets its own `hookreg.RunContext` (its ``run_id`` is the
    invocation id, its ``session_id`` ADK's session id).

    Order among ADK's own callbacks: ADK runs plugins before an agent's own
    ``before_/after_*_callback`` and stops at the first that returns a value.
    So hookreg's gate judges each call first: a call it refuses is answered by
    the refusal (the tool's result, ``{"error": text}``) and no agent callback
    sees it; an allowed call reaches the agent's ``before_tool_callback``,
    which may still answer it itself (the tool then does not run).

    Tool calls follow the run contract (`hookreg._lifecycle.gate`), in
    ``before_tool_callback``: an unknown tool, a tool ``active_tools`` left
    out, or arguments missing a required parameter go to
    ``invalid_tool_call``; then ``transform_tool_input`` and
    ``pre_tool_call_decide`` on the transformed args, an ``ask`` through
    ``notification`` and ``on_interaction``. The tool gets a deep copy of the
    approved args (written into ADK's own argument dict). A result goes
    through ``transform_tool_result`` and ``post_tool_call``; a raised
    exception, or a result dict with an ``"error"`` key (ADK's own way of
    reporting a failed call), fires ``post_tool_call_failure`` then
    ``on_tool_error``, whose text the model reads when a hook gives one.
    """

    def __init__(self, registry: HookRegistry, *, name: str = "hookreg") -> None:
        """Wrap `registry`.

        Args:
            registry: The hooks to run.
            name: The plugin's name, unique among the app's plugins.

        Raises:
            HookTypeError: `registry` is not a `HookRegistry`.
        """
        super().__init__(name)
        self.registry: HookRegistry = require_registry(registry, "a HookregPlugin")
        self._runs: dict[str, _Scope] = {}
        self._ending: set[asyncio.Task[None]] = set()

    def _scope(self, ctx: Any) -> _Scope:
        """The scope of the invocation `ctx` belongs to (one is made for a call ADK made outside a run)."""
        scope = self._runs.get(ctx.invocation_id)
        if scope is None:
            # an InvocationContext names its agent (none when the runner drives a workflow node), a callback's
            # or tool's Context the agent's name
            name = getattr(ctx.agent, "name", None) if hasattr(ctx, "agent") else ctx.agent_name
            scope = self._runs[ctx.invocation_id] = _Scope(ctx.invocation_id, ctx.session.id, name)
        return scope

    def _state(self, scope: _Scope) -> RunState:
        """The run's lifecycle, built when a hook first listens: at the turn the run is in, its scratchpads fresh.

        Nothing was dispatched before, so nothing can have written to the scratchpads a `RunState` built at the
        session's start would hold by now.
        """
        state = scope.state
        if state is None:
            run = RunContext(
                run_id=scope.run_id, session_id=scope.session_id, agent_name=scope.agent_name, turn=scope.turns
            )
            state = scope.state = RunState(self.registry, run, _text(scope.prompt))
            state.turns = scope.turns
        return state

    # --- the run ----------------------------------------------------------------------------

    async def before_run_callback(self, *, invocation_context: Any) -> types.Content | None:
        """Start the session and gate the prompt (a deny raises `hookreg.StopRun` before any model call)."""
        scope = self._scope(invocation_context)
        scope.prompt = invocation_context.user_content
        if not listens(self.registry, (HookPoint.ON_SESSION_START, HookPoint.USER_PROMPT_SUBMIT)):
            return None
        stopped = await arun_flow(self.registry, self._state(scope).start())
        if stopped is not None:
            scope.stopped = stopped
            raise StopRun(stopped.reason)
        return None

    async def before_agent_callback(self, *, agent: Any, callback_context: Any) -> types.Content | None:
        """Watch the task running the agent: ADK calls no plugin when a run is cancelled, but that task ends."""
        scope = self._scope(callback_context)
        task = asyncio.current_task()
        if scope.watched is None and task is not None:
            done = functools.partial(self._task_done, callback_context.invocation_id)
            task.add_done_callback(done)
            scope.watched = (task, done)
        return None

    async def after_run_callback(self, *, invocation_context: Any) -> None:
        """End the session ``completed``."""
        scope = self._finish(invocation_context.invocation_id)
        if scope is not None and self.registry.has_hooks(HookPoint.ON_SESSION_END):
            state = self._state(scope)
            await arun_flow(self.registry, state.end(RunOutcome(status="completed", turns=state.turns)))

    async def on_run_error_callback(self, *, invocation_context: Any, error: Exception) -> None:
        """End the session ``failed``, or ``stopped`` for a `hookreg.StopRun` (which ADK wraps in RuntimeError)."""
        scope = self._finish(invocation_context.invocation_id)
        if scope is None:
            return
        stop, state = _stop_of(error), self._state(scope)
        if stop is None:
            await arun_flow(self.registry, state.end_with(error))
            return
        outcome = scope.stopped or outcome_for(stop, state.turns)
        try:
            await _close_dangling(invocation_context, scope.ran)
        finally:
            await arun_flow(self.registry, state.end(outcome, stop))

    def _finish(self, invocation_id: str) -> _Scope | None:
        scope = self._runs.pop(invocation_id, None)
        if scope is not None and scope.watched is not None:
            task, done = scope.watched
            task.remove_done_callback(done)
        return scope

    def _task_done(self, invocation_id: str, task: asyncio.Task[Any]) -> None:
        """The task running the agent ended: a cancelled (or interrupted) one ends the session ``cancelled``.

        ADK awaits this task before its run generator goes on, so the session
        ends before the caller sees the cancellation. Sync hooks run here and
        then; async ``on_session_end`` hooks run in a task of their own. A task
        that completed or raised an `Exception` is left to ``after_run_callback``
        and ``on_run_error_callback``.
        """
        error = asyncio.CancelledError() if task.cancelled() else task.exception()
        if error is None or isinstance(error, Exception):
            return
        scope = self._finish(invocation_id)
        if scope is None:
            return
        state = self._state(scope)
        if any(hook.is_async for hook in self.registry.callbacks(HookPoint.ON_SESSION_END)):
            ending = asyncio.get_running_loop().create_task(arun_flow(self.registry, state.end_with(error)))
            self._ending.add(ending)  # held until done: the loop keeps only a weak reference
            ending.add_done_callback(self._ending.discard)
        else:
            run_flow(self.registry, state.end_with(error))

    # --- the model call --------------------------------------------------------------------

    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> Any:
        """Start the turn (``pre_turn``), then apply the ``pre_model_call`` patch and ``model_select`` pick."""
        scope, registry = self._scope(callback_context), self.registry
        # the names ADK resolves this call's tool calls against, read when a gate runs (_apply replaces the dict)
        scope.tools, scope.offered, scope.deltas = llm_request.tools_dict, None, None
        state = scope.state
        if state is None and registry.has_hooks(HookPoint.PRE_TURN):
            state = self._state(scope)
        if state is None:
            scope.turns += 1  # the turn's RunContext is built when a hook first listens (_state)
        else:
            stopped = await arun_flow(registry, state.turn())
            scope.turns = state.turns
            if stopped is not None:
                scope.stopped = stopped
                raise StopRun(stopped.reason)
        if listens(self.registry, DELTA_POINTS):
            scope.deltas = self._state(scope).deltas()
        if not listens(self.registry, (HookPoint.PRE_MODEL_CALL, HookPoint.MODEL_SELECT)):
            return None
        base = RequestPatch(active_tools=_user_tools(scope.tools))
        default = llm_request.model or ""
        steps = self._state(scope).model_call(base, default, lambda: _history(llm_request.contents))
        patch, name = await arun_flow(registry, steps)
        if patch is not base:
            _apply(patch, llm_request)
            scope.offered = patch.active_tools
        if name != default:
            llm_request.model = name
        return None

    async def after_model_callback(self, *, callback_context: Any, llm_response: Any) -> Any:
        """Fire the delta points for a partial response; for the final one, ``model_turn_finished`` and ``stop``."""
        if llm_response.partial:
            if not listens(self.registry, DELTA_POINTS):
                return None
        elif not listens(self.registry, _ANSWER_POINTS):
            return None
        scope = self._scope(callback_context)
        state = self._state(scope)
        parts = llm_response.content.parts if llm_response.content and llm_response.content.parts else []
        if llm_response.partial:
            if scope.deltas is None:  # a delta hook registered since this call began: aggregated from here on
                scope.deltas = state.deltas()
            await arun_flow(self.registry, _fire_deltas(scope.deltas, parts))
            return None
        text = "".join(part.text for part in parts if part.text and not part.thought)
        calls = [
            ToolCallRequest(part.function_call.id or "", part.function_call.name or "", part.function_call.args or {})
            for part in parts
            if part.function_call
        ]
        reason = llm_response.finish_reason
        raw = reason.name if isinstance(reason, types.FinishReason) else reason
        # Gemini finishes an answer calling tools with STOP: it is a tool-calls finish
        normalised = "tool_calls" if calls and raw in (None, "STOP") else raw
        usage = llm_response.usage_metadata
        steps = state.answered(
            text,
            calls,
            raw_finish_reason=raw,
            normalised=normalised,
            usage=_usage(usage) if usage is not None else None,
            model=llm_response.model_version,
        )
        action = await arun_flow(self.registry, steps)
        if action.kind != "continue":
            msg = (
                f"Cannot {action.kind} turn {state.turns} as hook {action.decided_by!r} asked: an ADK plugin "
                "cannot send the model's answer back. Gate the answer's effects in pre_tool_call_decide instead."
            )
            raise HookValueError(msg, point=HookPoint.MODEL_TURN_FINISHED)
        if not calls:
            feedback = await arun_flow(self.registry, state.stop(text))
            if feedback is not None:
                msg = (
                    f"Cannot keep the run going with {feedback!r}: ADK ends the agent's turn on an answer that calls "
                    "no tool, and a plugin cannot add a user message to it. Let stop hooks allow the stop."
                )
                raise HookValueError(msg, point=HookPoint.STOP)
        return None

    # --- tool calls ---------------------------------------------------------------------------

    async def before_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any) -> Any:
        """Gate the call; a call that may not run is answered with the gate's text, and its tool never runs."""
        if tool.name in _INTERNAL:
            return None
        scope, registry = self._scope(tool_context), self.registry
        call_id = tool_context.function_call_id or ""
        if scope.offered is None and not listens(self.registry, _GATE_POINTS):
            scope.started[call_id] = time.perf_counter()  # for an outcome hook, however late it was registered
            return None
        known = _user_tools(scope.tools)
        steps = gate(
            registry,
            self._state(scope).run,
            tool.name,
            call_id,
            tool_args,
            # ADK resolves calls against the tools this request offered: a tool active_tools left out is
            # a placeholder there, but a known tool all the same (not offered, rather than unknown)
            known=known | {tool.name} if _is_real(tool) else known,
            offered=scope.offered,
            validate=functools.partial(_validate, tool),
        )
        verdict = await arun_flow(registry, steps)
        if verdict.allowed:
            if verdict.call.args is not tool_args:  # the approved copy, in ADK's own dict: what the tool gets
                tool_args.clear()
                tool_args.update(verdict.call.args)
            scope.calls[call_id] = verdict.call
            scope.started[call_id] = time.perf_counter()
            return None
        scope.reported.add(call_id)
        if _frameworks_own(verdict, scope):
            return None  # ADK answers it its own way (its text), as it would without hookreg
        key = "error" if verdict.status in ("failed", "denied") else "result"
        return {key: verdict.text}

    async def after_tool_callback(self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, result: Any) -> Any:
        """Report the outcome: a result, or a result dict with an ``"error"`` key (a failure)."""
        if tool.name in _INTERNAL:
            return None
        scope, registry = self._scope(tool_context), self.registry
        call_id = tool_context.function_call_id or ""
        if call_id in scope.reported:  # ADK answered a call hookreg reported already (its own text)
            scope.reported.discard(call_id)
            return None
        fault = isinstance(result, Mapping) and "error" in result
        taken = self._outcome(scope, call_id, tool.name, tool_args, FAILURE_POINTS if fault else SUCCESS_POINTS)
        if taken is None:
            return None
        call, ms = taken
        run = self._state(scope).run
        if fault:
            error, message = RuntimeError(present(result["error"])), present(result)
            text = await arun_flow(registry, failed(registry, run, call, error, message=message, duration_ms=ms))
            # the chain hands back the very message it got when no on_tool_error hook gave a text: the result stands
            return None if text is message else {"error": text}
        shown = scope.ran[call_id] = present(result)  # the history's text if a result hook stops the run
        text = await arun_flow(registry, succeeded(registry, run, call, result, presentation=shown, duration_ms=ms))
        scope.ran.pop(call_id, None)
        # every transform_tool_result hook returned None when the chain hands back the very presentation it got
        return None if text is shown else {"result": text}

    async def on_tool_error_callback(
        self, *, tool: Any, tool_args: dict[str, Any], tool_context: Any, error: Exception
    ) -> Any:
        """A tool raised: ``post_tool_call_failure`` and ``on_tool_error``; their text answers the call if given."""
        if tool.name in _INTERNAL:
            return None
        scope, registry = self._scope(tool_context), self.registry
        call_id = tool_context.function_call_id or ""
        if isinstance(error, asyncio.CancelledError) or call_id in scope.reported:
            scope.reported.discard(call_id)
            return None
        taken = self._outcome(scope, call_id, tool.name, tool_args, FAILURE_POINTS)
        if taken is None:
            return None  # ADK's own handling stands: the error ends the run, as without hookreg
        call, ms = taken
        message = error_text(error)
        run = self._state(scope).run
        text = await arun_flow(registry, failed(registry, run, call, error, message=message, duration_ms=ms))
        # ADK hands whatever answers the call now (this text, an agent's on_tool_error_callback) to
        # after_tool_callback: reported already
        scope.reported.add(call_id)
        if text is message:
            return None  # no on_tool_error hook gave a text: ADK's own handling stands, as without hookreg
        return {"error": text}

    def _outcome(
        self, scope: _Scope, call_id: str, name: str, tool_args: dict[str, Any], points: tuple[HookPoint, ...]
    ) -> tuple[ToolCallRequest, float] | None:
        """A finished call as its outcome points see it, and its duration in ms; ``None`` when none of `points` listens.

        The call's records go either way: a call the gate left alone (nobody listened there) is the one ADK ran.
        """
        call, started = scope.calls.pop(call_id, None), scope.started.pop(call_id, None)
        if not listens(self.registry, points):
            return None
        ms = 0.0 if started is None else (time.perf_counter() - started) * 1000
        return call or ToolCallRequest(call_id, name, dict(tool_args)), ms


# --- translations ---------------------------------------------------------------------------


def _stop_of(error: BaseException) -> StopRun | None:
    """The `StopRun` a plugin raised: ADK's plugin manager wraps it in a RuntimeError (its ``__cause__``)."""
    seen: list[BaseException] = []
    while error is not None and error not in seen:
        if isinstance(error, StopRun):
            return error
        seen.append(error)
        error = error.__cause__  # type: ignore[assignment]  # the loop ends on None
    return None


async def _close_dangling(invocation_context: Any, ran: Mapping[str, str]) -> None:
    """After a stop, answer each call of the invocation that has no response, in the session's history.

    A call whose tool ran before a hook stopped the run shows the tool's result
    (`ran`); any other the "not run" notice.
    """
    events = [
        event for event in invocation_context.session.events if event.invocation_id == invocation_context.invocation_id
    ]
    answered = {response.id for event in events for response in event.get_function_responses()}
    for event in events:
        calls = {call.id: call.name for call in event.get_function_calls() if call.id}
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call_id,
                    name=calls[call_id],
                    response={"result": ran[call_id]} if call_id in ran else {"error": notice},
                )
            )
            for call_id, notice in unanswered(calls, answered)
        ]
        if parts:
            closing = Event(
                invocation_id=invocation_context.invocation_id,
                author=event.author,
                branch=event.branch,
                content=types.Content(role="user", parts=parts),
            )
            await invocation_context.session_service.append_event(session=invocation_context.session, event=closing)


def _user_tools(tools: Mapping[str, Any]) -> frozenset[str]:
    """The user tools among a request's tools (ADK's own are left out)."""
    return frozenset(tools) - _INTERNAL


def _is_real(tool: Any) -> bool:
    """Whether ADK resolved the call to a tool: an unknown name gets a bare placeholder `BaseTool`."""
    return type(tool).__name__ != "BaseTool"


def _frameworks_own(verdict: GateResult, scope: _Scope) -> bool:
    """A call ADK itself refuses (an unknown tool, bad arguments) and no hook answered: ADK's own answer stands.

    Every ``invalid_tool_call`` hook passed on it, and no ``on_tool_error`` hook gave a text: the chain hands
    back the default text (`error_text`) when every hook returned ``None``. A tool ``active_tools`` left out is
    hookreg's refusal alone (ADK would run it).
    """
    if verdict.status != "failed" or verdict.decided_by is not None or verdict.error is None:
        return False
    if verdict.text != error_text(verdict.error):  # an on_tool_error hook answered
        return False
    offered = scope.offered is None or verdict.call.tool_name in scope.offered
    return offered and not verdict.rewritten


def _validate(tool: Any, name: str, args: Mapping[str, object]) -> str:
    """ADK's own check of a function tool's arguments: every required parameter is present."""
    del name
    func = getattr(tool, "func", None)
    if func is None:
        return ""
    try:
        required = _REQUIRED.get(func)
    except TypeError:  # a callable that cannot be weakly referenced: read each time
        required = None
    if required is None:
        required = tuple(
            param.name
            for param in inspect.signature(func).parameters.values()
            if param.default is inspect.Parameter.empty
            and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
            and param.name not in ("tool_context", "input_stream")
        )
        with contextlib.suppress(TypeError):
            _REQUIRED[func] = required
    missing = [key for key in required if key not in args]
    return f"missing required parameters: {', '.join(missing)}" if missing else ""


def _text(content: Any) -> str:
    """The text parts of a `types.Content`, joined (``""`` for none)."""
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if part.text)


def _usage(usage: Any) -> dict[str, int]:
    return {
        "input_tokens": usage.prompt_token_count or 0,
        "output_tokens": usage.candidates_token_count or 0,
    }


def _fire_deltas(deltas: Deltas, parts: list[Any]) -> Any:
    """The delta points of one partial response's parts."""
    for part in parts:
        if part.text:
            yield from (deltas.reasoning(part.text) if part.thought else deltas.text(part.text))
        if part.function_call:
            call = part.function_call
            yield from deltas.tool_call(call.id or "", call.name, json.dumps(call.args or {}, default=str))


def _apply(patch: RequestPatch, llm_request: Any) -> None:
    """Apply a merged `RequestPatch` to one `LlmRequest`, in place (ADK sends this very object)."""
    config = llm_request.config
    texts = ([patch.preamble] if patch.preamble else []) + list(patch.extra_context or ())
    if texts:
        llm_request.append_instructions(texts)
    if patch.temperature is not None:
        config.temperature = patch.temperature
    if patch.max_tokens is not None:
        config.max_output_tokens = patch.max_tokens
    if patch.tool_choice is not None:
        mode = _TOOL_CHOICES.get(patch.tool_choice)
        calling = (
            types.FunctionCallingConfig(mode=mode)
            if mode
            else types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=[patch.tool_choice]
            )
        )
        config.tool_config = types.ToolConfig(function_calling_config=calling)
    if patch.active_tools is not None:
        keep = patch.active_tools | _INTERNAL  # active_tools restricts user tools only
        llm_request.tools_dict = {name: tool for name, tool in llm_request.tools_dict.items() if name in keep}
        for holder in config.tools or ():
            declarations = getattr(holder, "function_declarations", None)
            if declarations:
                holder.function_declarations = [d for d in declarations if d.name in keep]
    if patch.additional_params:
        config.labels = {**(config.labels or {}), **{k: str(v) for k, v in patch.additional_params.items()}}
    if patch.messages is not None:
        llm_request.contents = [_content(message) for message in patch.messages]


def _content(message: Message) -> types.Content:
    """One `Message` as a `types.Content` (``assistant`` is ADK's ``model`` role; tool results are user parts)."""
    if message.role == "tool":
        response = types.FunctionResponse(
            id=message.tool_call_id, name=message.name or "", response={"result": message.content}
        )
        return types.Content(role="user", parts=[types.Part(function_response=response)])
    role = "model" if message.role == "assistant" else "user"
    return types.Content(role=role, parts=[types.Part(text=message.content)])


def _history(contents: list[Any]) -> list[Message]:
    """ADK contents as hookreg history, one `Message` per part."""
    history: list[Message] = []
    for content in contents:
        role = "assistant" if content.role == "model" else "user"
        for part in content.parts or ():
            if part.text:
                history.append(Message(role, part.text))
            elif part.function_call:
                call = part.function_call
                history.append(Message("assistant", json.dumps(call.args or {}, default=str), call.name, call.id))
            elif part.function_response:
                reply = part.function_response
                history.append(Message("tool", present(reply.response), reply.name, reply.id))
    return history
