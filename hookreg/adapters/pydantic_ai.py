"""Drive a pydantic-ai agent from a HookRegistry through one capability (``pip install 'hookreg[pydantic-ai]'``).

Attach it with ``Agent(..., capabilities=[hookreg_capability(registry)])``.

See the adapter's docs page (docs/adapters/pydantic-ai.md) for where each hook point runs, and its limits.
"""

from __future__ import annotations

import dataclasses
import json
import time
import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, cast

from hookreg import (
    HookPoint,
    HookRegistry,
    Message,
    RequestPatch,
    RunContext,
    RunOutcome,
    StopRun,
    ToolCallRequest,
    ToolErrorKind,
)
from hookreg._lifecycle import (
    DELTA_POINTS,
    Deltas,
    GateResult,
    RunState,
    Validator,
    approved_copy,
    arun_flow,
    error_text,
    failed,
    gate,
    keep_paused,
    missing_framework,
    present,
    require_registry,
    require_release,
    succeeded,
    unanswered,
)

require_release("pydantic_ai", "pydantic-ai-slim", (2, 64))  # 2.64: the first with RetryModelRequest

try:
    import anyio
    from pydantic import ValidationError
    from pydantic_ai import DeferredToolRequests
    from pydantic_ai import RunContext as PaiRunContext
    from pydantic_ai.capabilities import AbstractCapability, CapabilityOrdering, CombinedCapability
    from pydantic_ai.exceptions import (
        AgentRunError,
        ApprovalRequired,
        CallDeferred,
        ModelRetry,
        RetryModelRequest,
        SkipToolExecution,
        ToolFailed,
        ToolFailedError,
        ToolRetryError,
    )
    from pydantic_ai.messages import (
        InstructionPart,
        ModelRequest,
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
    raise missing_framework("pydantic_ai", "pydantic-ai", _error) from _error

if TYPE_CHECKING:
    from pydantic_ai.capabilities.abstract import (
        RawToolArgs,
        ValidatedToolArgs,
        WrapRunHandler,
        WrapToolExecuteHandler,
        WrapToolValidateHandler,
    )
    from pydantic_ai.messages import AgentStreamEvent, ModelMessage
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.settings import ModelSettings

__all__ = ["HookregCapability", "hookreg_capability"]


_TOOL_CHOICES = ("none", "required", "auto")
_PASS_THROUGH = (CallDeferred, ApprovalRequired, SkipToolExecution, StopRun)
"""Raised through a tool call as they are, with no outcome point: pydantic-ai's control flow, and a stop."""


_SAME_PAUSE = "another run paused at the same point of the same history took its place"
"""The reason a paused run ends ``cancelled`` when a concurrent run on its history pauses where it did."""

_ABSENT: CombinedCapability[Any] = CombinedCapability([])
"""What a part is in a run no hook listens to: a group of no capability, which pydantic-ai flattens away."""


class _Refused(ToolFailed):
    """The gate refused a call in ``before_tool_execute``: a failed result for the model, no outcome point."""


class _RetryRefused(ModelRetry):
    """An ``invalid_tool_call`` hook asked for a retry in ``before_tool_execute``: no outcome point."""


@dataclasses.dataclass(eq=False)
class _Scope:
    """One agent run's state: the lifecycle, this turn's offered tools, and this turn's verdicts by call id."""

    state: RunState
    offered: frozenset[str] | None = None
    gated: dict[str, GateResult] = dataclasses.field(default_factory=dict)
    rewrites: dict[str, GateResult] = dataclasses.field(default_factory=dict)
    stopped: RunOutcome | None = None
    history: list[ModelMessage] = dataclasses.field(default_factory=list)
    ran: dict[str, str] = dataclasses.field(default_factory=dict)
    stream: Deltas | None = None  # the delta points of this request's streamed answer, from its first delta
    streamed_calls: dict[int, tuple[str, str]] = dataclasses.field(default_factory=dict)
    approved: dict[str, ValidatedToolArgs | None] = dataclasses.field(default_factory=dict)
    # call id -> the model's arguments and the gate's verdict, for a call pydantic-ai deferred for approval
    deferred: dict[str, tuple[object, GateResult]] = dataclasses.field(default_factory=dict)
    key: object = None


_Pause = tuple[str | None, str | None, frozenset[tuple[str, str]]]
"""What tells a paused run's history: its conversation, the run that gave the last answer, that answer's open calls."""


class _Runs:
    """A capability's runs: those starting, and those paused for calls deferred to the caller."""

    def __init__(self) -> None:
        # by pydantic-ai's run, until the run starts (both parts hold its state then)
        self.starting: weakref.WeakValueDictionary[object, _Scope] = weakref.WeakValueDictionary()
        # by their history's pause, until a run on that history resumes them
        self.paused: dict[_Pause, _Scope] = {}


class _Part(AbstractCapability[Any]):
    """One of the two capabilities a `HookregCapability` places in an agent; both hold the same run's state."""

    def __init__(
        self, registry: HookRegistry, models: Mapping[str, Model], runs: _Runs, scope: _Scope | None = None
    ) -> None:
        self.registry = registry
        self.models = models
        self._runs = runs
        self._scope = scope if scope is not None else _Scope(RunState(registry, RunContext()))

    @property
    def run(self) -> RunContext:
        """This run's context (the current turn's, once a turn started)."""
        return self._scope.state.run

    async def for_run(self, ctx: PaiRunContext[Any]) -> Self | CombinedCapability[Any]:
        """Return a copy holding this agent run's state: a fresh `hookreg.RunContext`, shared with the other part.

        With no hook registered at all, no capability (an empty group, which
        pydantic-ai leaves out of the run): pydantic-ai calls every hook
        method of every capability of a run, so a part that is there costs
        the run whether or not a hook listens (DESIGN §8, "Transparent when
        nobody listens"). Hooks registered once the run started then count
        from the next run.
        """
        if not len(self.registry):  # no hook at any point (a registry's length counts those it includes)
            return _ABSENT
        runs = self._runs
        # pydantic-ai binds each part with its own copy of the run's context, all holding the run's one message
        # list; its run id alone may repeat (a caller may give two runs the same one)
        key = (ctx.run_id, id(ctx.messages))
        scope = runs.starting.get(key)
        if scope is None:  # the first of the two parts pydantic-ai binds to this run starts its state
            run_id = ctx.run_id or RunContext().run_id
            agent_name = ctx.agent.name if ctx.agent is not None else None
            run = RunContext(run_id=run_id, session_id=ctx.conversation_id or run_id, agent_name=agent_name)
            scope = runs.starting[key] = _Scope(RunState(self.registry, run), key=key)
            scope.state.goal = _prompt_text(ctx.prompt)
        return type(self)(self.registry, self.models, runs, scope)

    async def _gate(
        self, ctx: PaiRunContext[Any], call: ToolCallPart, raw: object, functions: Collection[str], validate: Validator
    ) -> GateResult:
        scope = self._scope
        scope.history = ctx.messages  # the live history, for a stop to close: a resumed run may gate before any request
        steps = gate(
            self.registry,
            scope.state.run,
            call.tool_name,
            call.tool_call_id,
            raw,
            known=functions,
            offered=scope.offered,
            validate=validate,
        )
        return await arun_flow(self.registry, steps)

    async def _failed(
        self,
        call: ToolCallRequest,
        error: BaseException,
        message: str | None,
        started: float | None = None,
        kind: ToolErrorKind | None = None,
    ) -> str:
        """Report a failed call (`hookreg._lifecycle.failed`); return the text the model should read."""
        ms = 0.0 if started is None else (time.perf_counter() - started) * 1000
        steps = failed(self.registry, self._scope.state.run, call, error, kind=kind, message=message, duration_ms=ms)
        return await arun_flow(self.registry, steps)


class _RunPoints(_Part):
    """hookreg's run, turn, model and stream points: the outermost capability, around every other one."""

    def get_ordering(self) -> CapabilityOrdering:
        """Outermost: the session starts before, and ends after, every other capability's part of the run."""
        return CapabilityOrdering(position="outermost")

    @property
    def has_on_event(self) -> bool:
        """``False``: delta hooks never make pydantic-ai stream a blocking run (``agent.run``).

        A blocking run stays blocking, so its model need not stream, and fires
        no delta points; a streamed run (``agent.run_stream``, ``node.stream``
        under ``agent.iter``) reaches `on_event` through `listens_to` anyway.
        """
        return False

    def listens_to(self, event: AgentStreamEvent) -> bool:
        """Whether `on_event` wants `event`: part starts and deltas, when delta hooks are registered."""
        return any(self.registry.has_hooks(point) for point in DELTA_POINTS) and isinstance(
            event, (PartStartEvent, PartDeltaEvent)
        )

    # --- the run ----------------------------------------------------------------------------

    async def wrap_run(self, ctx: PaiRunContext[Any], *, handler: WrapRunHandler) -> AgentRunResult[Any]:
        """Start the session and gate the prompt; end the session exactly once, however the run ends."""
        scope, registry = self._scope, self.registry
        starting = self._runs.starting
        if starting.get(scope.key) is scope:  # both parts hold it now: no later run may find it
            del starting[scope.key]
        resumed = self._resume(ctx)
        try:
            # a run going on with a paused one starts no session; a prompt sent with the answers is gated all the same
            stopped = await arun_flow(registry, scope.state.start()) if not resumed or ctx.prompt is not None else None
            if stopped is not None:
                scope.stopped = stopped
                raise StopRun(stopped.reason)
            result = await handler()
        except BaseException as error:
            _rewrite_unknown(scope.history, scope.rewrites)  # the run ended before the next request would
            if isinstance(error, StopRun):
                _close_dangling(scope.history, scope.ran)
            with anyio.CancelScope(shield=True):  # a cancelled run still reports its end
                if scope.stopped is not None and isinstance(error, StopRun):
                    await arun_flow(registry, scope.state.end(scope.stopped, error))
                else:
                    await arun_flow(registry, scope.state.end_with(error))
            raise
        pause = _pause(ctx.conversation_id, result.all_messages()) if _deferred(result.output) else None
        if pause is None:
            await arun_flow(registry, scope.state.end(RunOutcome(status="completed", turns=scope.state.turns)))
        else:  # the caller answers the deferred calls in a run on this history, which goes on with this run
            paused = self._runs.paused
            other, paused[pause] = paused.get(pause), scope
            if other is not None:  # a run paused at the same point (a concurrent run on one history) gives way
                outcome = RunOutcome(status="cancelled", reason=_SAME_PAUSE, turns=other.state.turns)
                await arun_flow(registry, other.state.end(outcome))
        return result

    def _resume(self, ctx: PaiRunContext[Any]) -> bool:
        """Go on with the run this capability keeps paused where `ctx`'s history ends (`_pause`); whether one is.

        The paused turn's offered tools, texts for unknown calls and the
        verdicts on the calls deferred for approval go on: a call that comes
        back with the arguments the gate judged is not judged again, one the
        caller edited is judged as it comes back.
        """
        paused = self._runs.paused
        pause = _pause(ctx.conversation_id, ctx.messages) if paused else None
        resumed = paused.pop(pause, None) if pause is not None else None
        if resumed is None:
            return False
        scope, goal = self._scope, self._scope.state.goal
        scope.state, scope.offered, scope.rewrites = resumed.state, resumed.offered, resumed.rewrites
        scope.deferred = resumed.deferred
        if ctx.prompt is not None:  # a prompt sent with the answers: what the session goes on for now
            scope.state.goal = goal
        return True

    async def before_model_request(
        self, ctx: PaiRunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Start the turn (``pre_turn``), then apply the ``pre_model_call`` patch and the ``model_select`` pick."""
        scope, registry = self._scope, self.registry
        scope.history = ctx.messages  # the run's live history (wrap_run's context holds none yet)
        _rewrite_unknown(ctx.messages, scope.rewrites)
        scope.gated.clear()  # verdicts hold for their own turn only: models reuse call ids across turns
        scope.approved.clear()
        scope.deferred.clear()  # a deferred call is answered before the next request, or not at all
        stopped = await arun_flow(registry, scope.state.turn())
        if stopped is not None:
            scope.stopped = stopped
            raise StopRun(stopped.reason)
        scope.stream = None  # the next streamed events are this request's
        scope.offered = None
        if not (registry.has_hooks(HookPoint.PRE_MODEL_CALL) or registry.has_hooks(HookPoint.MODEL_SELECT)):
            return request_context  # the request as pydantic-ai made it, which model_call would leave as it is
        offered = frozenset(tool.name for tool in request_context.model_request_parameters.function_tools)
        base = RequestPatch(active_tools=offered)
        default = request_context.model.model_name
        flow = scope.state.model_call(base, default, lambda: _history(request_context.messages))
        patch, name = await arun_flow(registry, flow)
        if patch is not base:  # a pre_model_call hook returned a patch: it shapes this request alone
            request_context = _apply(patch, request_context)
            scope.offered = patch.active_tools
        if name != default:
            model = self.models.get(name) or infer_model(name)
            request_context = dataclasses.replace(request_context, model=model, model_id=None)
        return request_context

    async def after_model_request(
        self, ctx: PaiRunContext[Any], *, request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        """Gate calls to unknown tools; fire ``model_turn_finished``, ``post_turn`` and ``stop``."""
        scope, registry = self._scope, self.registry
        response = await self._gate_unknown(ctx, request_context, response)
        calls = [part for part in response.parts if isinstance(part, ToolCallPart)]
        text = response.text or ""
        # what the answer shows model_turn_finished and post_turn is built only when one of them listens
        if registry.has_hooks(HookPoint.MODEL_TURN_FINISHED) or registry.has_hooks(HookPoint.POST_TURN):
            normal = response.finish_reason  # pydantic-ai's own normalisation knows every provider
            flow = scope.state.answered(
                text,
                [ToolCallRequest(call.tool_call_id, call.tool_name, _args_or_empty(call)) for call in calls],
                raw_finish_reason=_raw_finish_reason(response),
                normalised="tool_calls" if normal == "tool_call" else normal,
                max_tokens=(request_context.model_settings or {}).get("max_tokens"),
                usage={"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens},
                message_id=response.provider_response_id,
                model=response.model_name,
            )
            action = await arun_flow(registry, flow)
            if action.kind == "repeat":
                raise RetryModelRequest
            if action.kind == "feedback":
                raise ModelRetry(action.feedback or "")
        if not registry.has_hooks(HookPoint.STOP):
            return response
        functions = _function_tools(ctx, request_context)
        if not any(call.tool_name in functions for call in calls):
            feedback = await arun_flow(registry, scope.state.stop(text))
            if feedback is not None:
                raise ModelRetry(feedback)
        return response

    # --- tool calls ---------------------------------------------------------------------------

    async def _gate_unknown(
        self, ctx: PaiRunContext[Any], request_context: ModelRequestContext, response: ModelResponse
    ) -> ModelResponse:
        """Gate each call to a tool pydantic-ai does not know; rename the calls ``repair`` fixed."""
        parts = list(response.parts)
        if not any(isinstance(part, ToolCallPart) for part in parts):
            return response
        known = _all_tools(ctx, request_context)
        functions = _function_tools(ctx, request_context)
        for index, part in enumerate(parts):
            if not isinstance(part, ToolCallPart) or part.tool_name in known:
                continue
            verdict = await self._gate(ctx, part, _parse(part.args), functions, _validator(ctx))
            if verdict.allowed:  # repaired: the renamed call runs with these arguments, gated already
                self._scope.gated[part.tool_call_id] = verdict
                model_args = cast("str | dict[str, Any] | None", part.args)  # a plain call: its args are JSON
                parts[index] = ToolCallPart(verdict.call.tool_name, model_args, tool_call_id=part.tool_call_id)
            else:
                self._scope.rewrites[part.tool_call_id] = verdict
        return dataclasses.replace(response, parts=parts) if parts != list(response.parts) else response

    async def on_event(self, ctx: PaiRunContext[Any], *, event: AgentStreamEvent) -> None:
        """Fire ``text_delta``, ``reasoning_delta`` and ``tool_call_delta`` for the streamed answer."""
        if not isinstance(event, PartStartEvent | PartDeltaEvent):  # no other event has a delta
            return
        scope = self._scope
        if isinstance(event, PartStartEvent) and isinstance(event.part, ToolCallPart):
            scope.streamed_calls[event.index] = (event.part.tool_call_id, event.part.tool_name)
        kind, delta = _delta(event)
        if not delta:  # pydantic-ai's empty starts and deltas carry nothing to report
            return
        if scope.stream is None:  # this request's first delta: its run is a streamed one
            scope.stream = Deltas(self.registry, dataclasses.replace(scope.state.run, is_streaming=True))
        if kind == "text":
            await arun_flow(self.registry, scope.stream.text(delta))
        elif kind == "reasoning":
            await arun_flow(self.registry, scope.stream.reasoning(delta))
        else:
            call_id, tool_name = scope.streamed_calls.get(event.index, ("", ""))
            await arun_flow(self.registry, scope.stream.tool_call(call_id, tool_name or None, delta))


class _ToolGate(_Part):
    """hookreg's tool points: the innermost capability, so the gate judges a call as every other one left it."""

    def get_ordering(self) -> CapabilityOrdering:
        """Innermost: closest to the tool, after every other capability edited the call."""
        return CapabilityOrdering(position="innermost")

    async def wrap_tool_validate(
        self,
        ctx: PaiRunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: RawToolArgs,
        handler: WrapToolValidateHandler,
    ) -> ValidatedToolArgs:
        """Gate the call on the model's raw arguments, then let pydantic-ai validate the effective ones.

        Arguments pydantic-ai refuses stay pydantic-ai's to handle unless an
        ``invalid_tool_call`` hook answers: its own error, text and retry count
        (``Tool(max_retries=...)``), so a model that keeps sending them is still
        stopped by the tool's retry budget. They never reach the gate.
        """
        scope, registry = self._scope, self.registry
        parsed = _parse(args)
        kept = scope.deferred.pop(call.tool_call_id, None)  # judged before pydantic-ai asked for approval
        if kept is None:
            verdict = scope.gated.get(call.tool_call_id)  # a call to an unknown tool, repaired and judged already
        elif parsed in (kept[0], kept[1].call.args):  # it came back as the model asked it or as the gate approved it
            verdict = scope.gated[call.tool_call_id] = kept[1]
        else:  # the human edited it: judged as it comes back
            verdict = None
        if verdict is None:
            functions = _function_tools(ctx, None) | {tool_def.name}
            error = _schema_error(ctx, tool_def.name, args)
            frameworks = bool(error) and (scope.offered is None or call.tool_name in scope.offered)
            reported: str | None = None
            if not frameworks or registry.has_hooks(HookPoint.INVALID_TOOL_CALL):
                verdict = await self._gate(ctx, call, parsed, functions, _validator(ctx, parsed, error))
                if frameworks and verdict.status == "failed" and verdict.decided_by is None:
                    reported, verdict = verdict.text, None  # every invalid_tool_call hook passed: they are reported
            if verdict is None:
                request = ToolCallRequest(
                    call.tool_call_id, call.tool_name, parsed if isinstance(parsed, Mapping) else {}
                )
                accepted = await self._validated(request, args, handler, reported)  # raises pydantic-ai's own error
                # pydantic-ai accepted them after all (another capability's on_tool_validate_error repaired them):
                # the gate judges what it accepted
                verdict = await self._gate(ctx, call, accepted, functions, _validator(ctx))
            scope.gated[call.tool_call_id] = verdict
        if not verdict.allowed:
            raise ModelRetry(verdict.text) if verdict.status == "retry" else ToolFailed(verdict.text)
        validated = await self._validated(verdict.call, dict(verdict.call.args), handler)
        if _judges(registry):  # what before_tool_execute lets run unjudged: any other arguments are judged again
            scope.approved[call.tool_call_id] = approved_copy(
                tool_def.name, _plain_validation(ctx, tool_def.name, verdict.call.args)
            )
        # until the tool runs: pydantic-ai may defer the call for approval, and the run resuming it needs the verdict
        scope.deferred[call.tool_call_id] = (parsed, verdict)
        return validated

    async def _validated(
        self, call: ToolCallRequest, args: RawToolArgs, handler: WrapToolValidateHandler, reported: str | None = None
    ) -> ValidatedToolArgs:
        """pydantic-ai's validation of `args`; a refusal fires the failure points (``INVALID_ARGS``), and stays one.

        A `ValidationError` or `ModelRetry` keeps counting against the tool's
        retries; with ``on_tool_error`` hooks the model reads their text.
        `reported` is that text when the failure points already fired.
        """
        try:
            return await handler(args)
        except (ValidationError, ModelRetry, ToolFailed) as exc:  # the tool's own args_validator refused them
            self._scope.gated.pop(call.call_id, None)
            message = exc.message if isinstance(exc, ModelRetry | ToolFailed) else str(exc)
            text = reported
            if text is None:
                text = await self._failed(call, exc, message, kind=ToolErrorKind.INVALID_ARGS)
            if not self.registry.has_hooks(HookPoint.ON_TOOL_ERROR):
                raise
            raise (ToolFailed(text) if isinstance(exc, ToolFailed) else ModelRetry(text)) from exc

    async def before_tool_execute(
        self, ctx: PaiRunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: ValidatedToolArgs
    ) -> ValidatedToolArgs:
        """The last step before the tool runs (the innermost capability's ``before_tool_execute`` runs last).

        Arguments that are not those the gate approved — another capability
        changed them since (in ``before_tool_validate``, ``after_tool_validate``,
        ``wrap_tool_validate``, ``wrap_tool_execute`` or ``before_tool_execute``),
        or skipped validation — are judged as they will run: the tool never runs
        a call ungated.
        """
        scope = self._scope
        verdict = scope.gated.get(call.tool_call_id)
        expected = scope.approved.pop(call.tool_call_id, args)  # nothing kept when no hook may judge them
        if verdict is not None and args == expected:
            return args
        functions = _function_tools(ctx, None) | {tool_def.name}
        verdict = scope.gated[call.tool_call_id] = await self._gate(ctx, call, args, functions, _validator(ctx))
        if not verdict.allowed:
            raise _RetryRefused(verdict.text) if verdict.status == "retry" else _Refused(verdict.text)
        return dict(verdict.call.args)

    def _judged(self, call: ToolCallPart, args: ValidatedToolArgs) -> ToolCallRequest:
        """The call the tool ran as the gate judged it (its arguments as given when no gate judged it)."""
        verdict = self._scope.gated.pop(call.tool_call_id, None)
        return verdict.call if verdict is not None else ToolCallRequest(call.tool_call_id, call.tool_name, args)

    async def wrap_tool_execute(
        self,
        ctx: PaiRunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        """Run the tool and report its outcome: a result, or a failure however the tool signalled it.

        The call as it runs is the one `before_tool_execute` settled, inside `handler`.
        """
        registry, scope = self.registry, self._scope
        run = scope.state.run
        kept = scope.deferred.pop(call.tool_call_id, None)
        started = time.perf_counter()
        try:
            raw = await handler(args)
        except (*_PASS_THROUGH, _Refused, _RetryRefused) as exc:  # control flow, a stop, or the gate's refusal
            scope.gated.pop(call.tool_call_id, None)
            if isinstance(exc, ApprovalRequired) and kept is not None:  # the tool itself asked for approval
                scope.deferred[call.tool_call_id] = kept
            raise
        except (ToolRetryError, ToolFailedError) as exc:  # the tool raised ModelRetry / ToolFailed
            part = exc.tool_retry if isinstance(exc, ToolRetryError) else exc.tool_failed
            error = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
            text = await self._failed(self._judged(call, args), error, str(part.content), started)
            if isinstance(part, ToolReturnPart | RetryPromptPart) and registry.has_hooks(HookPoint.ON_TOOL_ERROR):
                part.content = text
            raise
        except AgentRunError as exc:  # pydantic-ai ends the run (a retry budget spent): report, never swallow
            cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
            await self._failed(self._judged(call, args), cause, None, started)
            raise
        except Exception as exc:
            # the text `failed` starts on_tool_error from, held so that a chain of hooks returning None is seen
            default = error_text(exc)
            text = await self._failed(self._judged(call, args), exc, default, started)
            if text is default:  # no on_tool_error hook, or none gave a text: pydantic-ai's own handling
                raise
            raise ToolFailed(text) from exc
        request = self._judged(call, args)
        ms = (time.perf_counter() - started) * 1000
        shown = self._scope.ran[call.tool_call_id] = present(raw)  # the history's text if a result hook stops the run
        text = await arun_flow(registry, succeeded(registry, run, request, raw, presentation=shown, duration_ms=ms))
        self._scope.ran.pop(call.tool_call_id, None)
        # every transform_tool_result hook returned None when the chain hands back the very presentation it got
        return raw if text is shown else text


class HookregCapability(CombinedCapability[Any]):
    """A pydantic-ai capability that runs a `HookRegistry`'s hooks inside the agent loop.

    It is two capabilities, which the agent places apart whatever order the
    user lists its capabilities in (DESIGN §8, "Order among the framework's own
    extensions"): the run, turn, model and stream points sit outermost, so the
    session encloses every other capability's part of the run; the tool points
    innermost, so the gate judges a call as every other capability left it.
    Arguments another capability changes after the gate approved them (in its
    ``wrap_tool_execute``, ``after_tool_validate`` or ``before_tool_execute``)
    are judged again before the tool runs.

    One capability may serve many runs, also concurrently: pydantic-ai calls
    `for_run` of both parts for each run, which return copies holding that
    run's own `hookreg.RunContext` and state. A run that starts with no hook
    in the registry holds neither part, so hookreg costs it nothing; a hook
    registered while such a run goes on counts from the next run.

    Tool calls follow the run contract (`hookreg._lifecycle.gate`):

    - A call to a tool pydantic-ai does not know is gated in
      ``after_model_request``; the model reads the text ``invalid_tool_call``
      and ``on_tool_error`` settle on (written over pydantic-ai's own "unknown
      tool" retry prompt in the history before the next request); ``repair``
      renames the call, which then runs through the gate.
    - Every other call is gated in ``wrap_tool_validate``, on the model's raw
      arguments: a tool ``active_tools`` left out, and arguments pydantic-ai's
      schema check refuses (not a JSON object, malformed JSON, failing the
      schema) go to ``invalid_tool_call``; then ``transform_tool_input``,
      ``pre_tool_call_decide`` on the transformed args, an ``ask`` through
      ``notification`` and ``on_interaction``. A call that may not run becomes
      a failed tool result carrying the text
      (`pydantic_ai.exceptions.ToolFailed`; a ``retry`` answer becomes a
      `pydantic_ai.exceptions.ModelRetry`, which counts against the tool's
      retries); the tool never runs. Refused arguments stay pydantic-ai's to
      handle when no ``invalid_tool_call`` hook listens or every one passes:
      its own error, text and retry count (``Tool(max_retries=...)``,
      ``Agent(retries=...)``), with ``post_tool_call_failure`` and
      ``on_tool_error`` (kind ``INVALID_ARGS``) fired; they never reach the
      gate. pydantic-ai then validates the effective arguments as usual; when
      the tool's own ``args_validator`` refuses them, the failure points fire
      the same way and the tool never runs.
    - ``wrap_tool_execute`` runs the tool. A result goes through
      ``transform_tool_result`` (the model then reads the presentation
      string) and ``post_tool_call``. A failure — an exception, a
      `ModelRetry` or a `ToolFailed` raised by the tool — fires
      ``post_tool_call_failure`` then ``on_tool_error``, never
      ``post_tool_call``. With ``on_tool_error`` hooks the model reads their
      text: a `ModelRetry` stays a retry request and a `ToolFailed` a failed
      result, each carrying the new text, and an exception becomes a failed
      result; without them pydantic-ai's own text stands and an exception
      ends the run, as it would without hookreg.

    An ``ask`` is settled inside the run through ``on_interaction``, not with
    pydantic-ai's deferred approval (``ApprovalRequired``): a deferral ends the
    run with `DeferredToolRequests` as its output, which the agent's output
    type must allow and the caller must resume, so the same registry would
    behave differently here than in every other loop.

    A run that ends with calls deferred to the caller (`DeferredToolRequests`:
    approvals, external calls) is paused, its session open: the run on its
    history that answers them (``deferred_tool_results``) goes on with it, and
    the session ends once, when that run ends. A paused run nothing resumes
    ends ``cancelled`` when the agent holding this capability goes, or at
    interpreter exit.

    After a `hookreg.StopRun`, each tool call of the stopped answer that has
    no result gets a "not run" notice in the message history the caller
    reads with `pydantic_ai.capture_run_messages`.

    Sync and async hooks both work: hooks are awaited with the registry's
    ``a``-methods inside pydantic-ai's async callbacks.
    """

    def __init__(self, registry: HookRegistry, *, models: Mapping[str, Model] | None = None) -> None:
        """Wrap `registry`.

        Args:
            registry: The hooks to run.
            models: Models a ``model_select`` hook may pick by name; other
                names go through `pydantic_ai.models.infer_model`.

        Raises:
            HookTypeError: `registry` is not a `HookRegistry`.
        """
        registry = require_registry(registry, "a HookregCapability")
        known = dict(models or {})
        runs = _Runs()
        points = _RunPoints(registry, known, runs)
        # a paused run nothing resumes ends when the agent (which holds the parts, not this group) goes, or at exit
        keep_paused(points, runs.paused)
        super().__init__([points, _ToolGate(registry, known, runs)])
        self.registry: HookRegistry = registry
        self.models: Mapping[str, Model] = known


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
    return HookregCapability(require_registry(registry, "a pydantic-ai capability"), models=models)


# --- translations ---------------------------------------------------------------------------


def _prompt_text(prompt: object) -> str:
    """The text of a run's prompt: the string, or the string pieces of multimodal content."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list | tuple):
        return "\n".join(piece for piece in prompt if isinstance(piece, str))
    return ""


def _parse(raw: object) -> object:
    """The model's arguments as pydantic-ai reads them: JSON text parsed (``""`` is ``{}``), else as given.

    Malformed JSON stays the raw string, which the gate reports as arguments that are not an object.
    """
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _args_or_empty(call: ToolCallPart) -> Mapping[str, object]:
    parsed = _parse(call.args)
    return parsed if isinstance(parsed, Mapping) else {}


def _judges(registry: HookRegistry) -> bool:
    """Whether a hook may change or refuse a valid call's arguments (DESIGN §3: only then are they copied)."""
    return registry.has_hooks(HookPoint.TRANSFORM_TOOL_INPUT) or registry.has_hooks(HookPoint.PRE_TOOL_CALL_DECIDE)


def _plain_validation(ctx: PaiRunContext[Any], name: str, args: Mapping[str, object]) -> ValidatedToolArgs | None:
    """The validated arguments pydantic-ai makes of `args` when no other capability edits them.

    ``None`` when they cannot be told: the step has no such tool, or `args`
    pass only as another capability repaired them — so the call is judged again.
    """
    tool = _tools(ctx).get(name)
    if tool is None:
        return None
    try:
        return cast(
            "ValidatedToolArgs", tool.args_validator.validate_python(dict(args), context=ctx.validation_context)
        )
    except ValidationError:
        return None


def _raw_finish_reason(response: ModelResponse) -> str | None:
    """The provider's own finish reason when the model reports it, else pydantic-ai's."""
    details = response.provider_details or {}
    raw = details.get("finish_reason")
    return raw if isinstance(raw, str) else response.finish_reason


def _tools(ctx: PaiRunContext[Any]) -> Mapping[str, Any]:
    """The run step's tools by name (`RunContext.tool_manager`, public since it serves sandboxed dispatch)."""
    manager = ctx.tool_manager
    return (manager.tools or {}) if manager is not None else {}


def _function_tools(ctx: PaiRunContext[Any], request_context: ModelRequestContext | None) -> frozenset[str]:
    names = {name for name, tool in _tools(ctx).items() if tool.tool_def.kind == "function"}
    if request_context is not None:
        names |= {tool.name for tool in request_context.model_request_parameters.function_tools}
    return frozenset(names)


def _all_tools(ctx: PaiRunContext[Any], request_context: ModelRequestContext) -> frozenset[str]:
    params = request_context.model_request_parameters
    return frozenset(_tools(ctx)) | {tool.name for tool in (*params.function_tools, *params.output_tools)}


def _schema_error(ctx: PaiRunContext[Any], name: str, args: object) -> str:
    """pydantic-ai's own schema check of `args` for tool `name`: its error text, or ``""`` when they fit.

    As pydantic-ai runs it (`ToolsetTool.args_validator`): text is read as JSON
    (``""`` is ``{}``), anything else as Python objects.
    """
    tool = _tools(ctx).get(name)
    if tool is None:  # not a tool of this step: pydantic-ai's own lookup reports it
        return ""
    try:
        if isinstance(args, str):
            tool.args_validator.validate_json(args or "{}", context=ctx.validation_context)
        else:
            plain = dict(args) if isinstance(args, Mapping) else args  # a hook's read-only mapping as a dict
            tool.args_validator.validate_python(plain or {}, context=ctx.validation_context)
    except ValidationError as exc:
        return str(exc)
    return ""


def _validator(ctx: PaiRunContext[Any], model_args: object = None, model_error: str = "") -> Validator:
    """The tools' own schema check, for the gate to run before any hook.

    The model's own arguments (`model_args`, parsed) carry `model_error`,
    pydantic-ai's verdict on them as the model sent them (JSON text is
    checked as JSON, which accepts what a check of the parsed objects might not).
    """

    def validate(name: str, args: Mapping[str, object]) -> str:
        return model_error if args is model_args else _schema_error(ctx, name, args)

    return validate


def _rewrite_unknown(messages: list[ModelMessage], rewrites: dict[str, GateResult]) -> None:
    """Put the gate's text for calls to unknown tools over pydantic-ai's own "unknown tool" retry prompt."""
    if not rewrites:
        return
    for message in messages:
        if not isinstance(message, ModelRequest):
            continue
        for part in message.parts:
            verdict = rewrites.get(getattr(part, "tool_call_id", ""))
            if verdict is not None and isinstance(part, ToolReturnPart | RetryPromptPart):
                part.content = verdict.text
                if isinstance(part, ToolReturnPart) and verdict.status != "retry":
                    part.outcome = "failed"
    rewrites.clear()


def _last_answer(messages: Sequence[ModelMessage]) -> tuple[int, set[str]] | None:
    """Where the last answer of `messages` is, and the ids of its calls the requests after it answer."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, ModelResponse)), default=None)
    if last is None:
        return None
    answered = {
        part.tool_call_id
        for message in messages[last + 1 :]
        for part in message.parts
        if isinstance(part, ToolReturnPart | RetryPromptPart)
    }
    return last, answered


def _deferred(output: object) -> bool:
    """Whether a run's output is calls deferred to the caller: approvals, and calls the caller runs itself."""
    return isinstance(output, DeferredToolRequests) and bool(output.approvals or output.calls)


def _pause(conversation: str | None, messages: Sequence[ModelMessage]) -> _Pause | None:
    """The pause `messages` end on: the last answer's calls without a result, in `conversation` (``None``: none).

    A run resuming deferred calls is given the paused run's history (also
    through JSON) and, unless the caller says otherwise, its conversation.
    """
    found = _last_answer(messages)
    if found is None:
        return None
    last, answered = found
    answer = cast("ModelResponse", messages[last])
    open_calls = frozenset((c.tool_name, c.tool_call_id) for c in answer.tool_calls if c.tool_call_id not in answered)
    return (conversation, answer.run_id, open_calls) if open_calls else None


def _close_dangling(messages: list[ModelMessage], ran: Mapping[str, str]) -> None:
    """After a stop, give each call of the last answer without a result one in the history.

    A call whose tool ran before a hook stopped the run shows the tool's result
    (`ran`); any other shows the "not run" notice.
    """
    found = _last_answer(messages)
    if found is None:
        return
    last, answered = found
    names = {part.tool_call_id: part.tool_name for part in messages[last].parts if isinstance(part, ToolCallPart)}
    later = [m for m in messages[last + 1 :] if isinstance(m, ModelRequest)]
    parts = [
        ToolReturnPart(
            tool_name=names[call_id],
            content=ran.get(call_id, notice),
            tool_call_id=call_id,
            outcome="success" if call_id in ran else "failed",
        )
        for call_id, notice in unanswered(names, answered)
    ]
    if not parts:
        return
    if later and messages[-1] is later[-1]:
        messages[-1] = dataclasses.replace(later[-1], parts=[*later[-1].parts, *parts])
    else:
        messages.append(ModelRequest(parts=parts))


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
    messages = request_context.messages if patch.messages is None else _messages(patch.messages)
    return dataclasses.replace(
        request_context, messages=messages, model_request_parameters=params, model_settings=settings
    )


def _messages(messages: tuple[Message, ...]) -> list[ModelMessage]:
    """`RequestPatch.messages` as the messages pydantic-ai sends for this one request (its history is untouched).

    ``system`` and ``user`` messages become request parts, ``assistant`` ones
    text responses, and ``tool`` ones tool returns (named by the message's
    `name` and `tool_call_id`).
    """
    sent: list[ModelMessage] = []
    for message in messages:
        if message.role == "assistant":
            sent.append(ModelResponse(parts=[TextPart(content=message.content)]))
        elif message.role == "system":
            sent.append(ModelRequest(parts=[SystemPromptPart(content=message.content)]))
        elif message.role == "tool":
            part = ToolReturnPart(
                tool_name=message.name or "", content=message.content, tool_call_id=message.tool_call_id or ""
            )
            sent.append(ModelRequest(parts=[part]))
        else:
            sent.append(ModelRequest(parts=[UserPromptPart(content=message.content)]))
    return sent


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


def _delta(event: PartStartEvent | PartDeltaEvent) -> tuple[str, str]:
    """What a stream event adds to the answer: its kind (``"text"``, ``"reasoning"``, ``"tool_call"``) and text.

    ``("", "")`` for parts hookreg has no delta point for (files, built-in tool calls).
    """
    if isinstance(event, PartStartEvent):
        part = event.part
        if isinstance(part, ToolCallPart):
            return "tool_call", part.args if isinstance(part.args, str) else _json(part.args)
        if isinstance(part, ThinkingPart):
            return "reasoning", part.content
        return ("text", part.content) if isinstance(part, TextPart) else ("", "")
    delta = event.delta
    if isinstance(delta, ToolCallPartDelta):
        return "tool_call", delta.args_delta if isinstance(delta.args_delta, str) else _json(delta.args_delta)
    if isinstance(delta, ThinkingPartDelta):
        return "reasoning", delta.content_delta or ""
    return ("text", delta.content_delta) if isinstance(delta, TextPartDelta) else ("", "")


def _json(args: object) -> str:
    return "" if args is None else json.dumps(args, default=str)
