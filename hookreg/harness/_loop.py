"""The reference agent loop: one step generator, driven four ways (run, arun, stream, astream).

`Harness._steps` holds every rule of the loop. It never calls a hook, a model
or a tool itself: it yields an *operation* (`_Dispatch`, `_OpenStream`,
`_NextChunk`, `_CallTool`, `_Emit`) and is sent back its result, or thrown its
exception. `_drive` performs operations synchronously and `_adrive` awaits
them, so the four entry points share one loop and one set of hook semantics —
the same split as hookreg's own dispatch (`hookreg/_dispatch.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, final

from hookreg import (
    Decision,
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
    NotificationContext,
    OnCompactionContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PostTurnContext,
    PreCompactContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    ReasoningDeltaContext,
    RequestPatch,
    RunContext,
    RunOutcome,
    SetupContext,
    StopContext,
    StopRun,
    SubagentStartContext,
    SubagentStopContext,
    TextDeltaContext,
    ToolCallDeltaContext,
    ToolCallRequest,
    ToolCallResolution,
    ToolErrorKind,
    TransformToolResultContext,
    TurnAction,
    UserPromptSubmitContext,
)
from hookreg.harness._model import (
    Model,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)
from hookreg.harness._tools import Tool

__all__ = ["Harness", "RunFinished", "RunResult", "StreamItem", "TurnRetried"]

P = HookPoint


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """How a run ended, and what it said.

    Attributes:
        outcome: The status (``completed``, ``stopped``, ``failed``,
            ``cancelled``), the reason, and the number of model calls made.
        output: The last accepted answer text.
        history: The conversation, as the model saw it last (after compaction).
        run: The run's context at its last turn.
    """

    outcome: RunOutcome
    output: str
    history: tuple[Message, ...]
    run: RunContext


@final
@dataclass(frozen=True, slots=True)
class TurnRetried:
    """A `model_turn_finished` hook rejected the answer just streamed: discard its deltas.

    Attributes:
        turn: The turn being retried.
        kind: ``"repeat"`` (asked again afresh) or ``"feedback"`` (asked again with feedback).
    """

    turn: int
    kind: Literal["repeat", "feedback"]


@final
@dataclass(frozen=True, slots=True)
class RunFinished:
    """The last item of every stream: the run's result."""

    result: RunResult


StreamItem: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta | TurnRetried | RunFinished
"""What `Harness.stream` and `Harness.astream` yield."""


# --- operations: what the loop asks its driver to do ----------------------------


@dataclass(frozen=True, slots=True)
class _Dispatch:
    """Call ``registry.<method>(*args)``, or its ``a``-twin in the async driver."""

    registry: HookRegistry
    method: Literal["decide", "transform", "notify", "resolve_tool_call"]
    args: tuple[object, ...]


@dataclass(frozen=True, slots=True)
class _OpenStream:
    model: Model
    request: ModelRequest


@dataclass(frozen=True, slots=True)
class _NextChunk:
    stream: Iterator[ModelChunk] | AsyncIterator[ModelChunk]


@dataclass(frozen=True, slots=True)
class _CallTool:
    tool: Tool
    args: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class _Emit:
    item: StreamItem


_Op: TypeAlias = _Dispatch | _OpenStream | _NextChunk | _CallTool | _Emit
_Steps: TypeAlias = Generator[_Op, Any, "RunResult"]
_Step: TypeAlias = Generator[_Op, Any, Any]


def _perform(op: _Op) -> object:
    """Perform one operation synchronously (`_Emit` is the driver's own business)."""
    if isinstance(op, _Dispatch):
        return getattr(op.registry, op.method)(*op.args)
    if isinstance(op, _OpenStream):
        return iter(op.model.stream(op.request))
    if isinstance(op, _NextChunk):
        return next(op.stream, None)  # type: ignore[arg-type]  # the sync driver opens sync streams only
    assert isinstance(op, _CallTool)  # internal invariant
    return op.tool.fn(**op.args)


async def _aperform(op: _Op) -> object:
    """Perform one operation, awaiting hooks, model chunks and async tools."""
    if isinstance(op, _Dispatch):
        return await getattr(op.registry, "a" + op.method)(*op.args)
    if isinstance(op, _OpenStream):
        return op.model.astream(op.request)
    if isinstance(op, _NextChunk):
        return await anext(op.stream, None)  # type: ignore[arg-type]  # the async driver opens async streams only
    assert isinstance(op, _CallTool)  # internal invariant
    tool, result = op.tool, op.tool.fn(**op.args)
    if not tool.is_async:
        return result
    async with asyncio.timeout(tool.timeout):
        return await result  # type: ignore[misc]  # an async tool returns an awaitable


def _drive(steps: _Steps) -> Generator[StreamItem, None, None]:
    """Run the loop synchronously, yielding what it emits, then `RunFinished`."""
    reply: object = None
    error: BaseException | None = None
    closed = False
    while True:
        try:
            op = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            if not closed:
                yield RunFinished(done.value)
            return
        reply, error = None, None
        if isinstance(op, _Emit):
            if not closed:
                try:
                    yield op.item
                except GeneratorExit as exc:  # the consumer closed the stream: end the run as cancelled
                    closed, error = True, exc
            continue
        try:
            reply = _perform(op)
        except BaseException as exc:  # noqa: BLE001 -- thrown into the loop, which ends the run and re-raises
            error = exc


async def _adrive(steps: _Steps) -> AsyncGenerator[StreamItem, None]:
    """Run the loop, awaiting what it asks for, yielding what it emits, then `RunFinished`."""
    reply: object = None
    error: BaseException | None = None
    closed = False
    while True:
        try:
            op = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            if not closed:
                yield RunFinished(done.value)
            return
        reply, error = None, None
        if isinstance(op, _Emit):
            if not closed:
                try:
                    yield op.item
                except GeneratorExit as exc:  # the consumer closed the stream: end the run as cancelled
                    closed, error = True, exc
            continue
        try:
            reply = await _aperform(op)
        except BaseException as exc:  # noqa: BLE001 -- thrown into the loop, which ends the run and re-raises
            error = exc


# --- the loop ---------------------------------------------------------------------


@dataclass(slots=True)
class _State:
    """What one run remembers between steps."""

    goal: str
    run: RunContext
    history: list[Message]
    streaming: bool
    model_calls: int = 0
    output: str = ""
    continuations: int = 0
    tools_offered: frozenset[str] = field(default_factory=frozenset)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _present(raw: object) -> str:
    """What the model sees of a tool's return value, before `transform_tool_result`."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, RunResult):
        if raw.outcome.status == "completed":
            return raw.output
        return f"subagent {raw.outcome.status}: {raw.outcome.reason}"
    try:
        return json.dumps(raw, default=str)
    except (TypeError, ValueError):
        return str(raw)


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


@final
class Harness:
    """A small reference agent loop over a `Model`, firing every hook point at its moment.

    Example:
        >>> from hookreg import HookRegistry
        >>> from hookreg.harness import ScriptedModel, ScriptedTurn
        >>> harness = Harness(ScriptedModel([ScriptedTurn(text="done")]), registry=HookRegistry())
        >>> harness.run("say done").outcome.status
        'completed'
    """

    def __init__(  # noqa: PLR0913 -- the documented options
        self,
        model: Model,
        tools: Iterable[Tool | Callable[..., object]] = (),
        registry: HookRegistry | None = None,
        *,
        name: str | None = None,
        max_turns: int = 10,
        max_tokens: int | None = None,
        compact_after: int | None = None,
    ) -> None:
        """Build a harness.

        Args:
            model: The model to call, for instance a `ScriptedModel`.
            tools: Tools, or plain callables made tools under their ``__name__``.
            registry: The hooks; a new empty registry when omitted.
            name: The agent's name, carried as ``run.agent_name``.
            max_turns: The most model calls one run makes, retries included.
            max_tokens: The default output cap, when no `pre_model_call` patch sets one.
            compact_after: Compact the history when it holds more messages than
                this (at least 4); ``None`` never compacts.

        Raises:
            HookTypeError: A tool is neither a `Tool` nor a callable.
            HookValueError: Two tools share a name, or a limit is out of range.
        """
        self.model: Model = model
        self.registry: HookRegistry = registry if registry is not None else HookRegistry()
        self.name: str | None = name
        self.tools: dict[str, Tool] = {}
        for item in tools:
            tool = item if isinstance(item, Tool) else Tool(item)
            if tool.name in self.tools:
                msg = (
                    f"Cannot add tool {tool!r} to the harness: a tool named {tool.name!r} is already there. Rename it."
                )
                raise HookValueError(msg, callback=tool.fn)
            self.tools[tool.name] = tool
        for option, value, low in (
            ("max_turns", max_turns, 1),
            ("max_tokens", max_tokens, 1),
            ("compact_after", compact_after, 4),
        ):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                msg = f"Cannot build a Harness with {option}={value!r}: it must be an int of at least {low}."
                raise HookValueError(msg)
        self.max_turns: int = max_turns
        self.max_tokens: int | None = max_tokens
        self.compact_after: int | None = compact_after
        self._setup_fired = False
        self._setup_lock = threading.Lock()

    def as_tool(self, name: str | None = None) -> Tool:
        """This harness as a tool taking one ``goal: str``, run as a subagent at depth + 1.

        The parent fires `subagent_start` and `subagent_stop` around it; the
        nested run fires its own points, with ``run.depth`` one higher.
        """
        return Tool.for_subagent(self, name=name or self.name or "subagent")

    # --- the four entry points ----------------------------------------------------

    def run(self, goal: str) -> RunResult:
        """Run the agent on `goal` to the end and return the result."""
        self._refuse_async_tools("run")
        for item in _drive(self._steps(goal, streaming=False)):
            if isinstance(item, RunFinished):
                return item.result
        raise AssertionError("unreachable: the driver always ends with RunFinished")  # pragma: no cover

    async def arun(self, goal: str) -> RunResult:
        """Run the agent on `goal` to the end, awaiting async hooks and tools."""
        async for item in _adrive(self._steps(goal, streaming=False)):
            if isinstance(item, RunFinished):
                return item.result
        raise AssertionError("unreachable: the driver always ends with RunFinished")  # pragma: no cover

    def stream(self, goal: str) -> Generator[StreamItem, None, None]:
        """Run the agent on `goal`, yielding deltas and `TurnRetried` as they happen, then `RunFinished`.

        Closing the stream early ends the run as ``cancelled`` (``on_session_end`` fires).
        """
        self._refuse_async_tools("stream")
        return _drive(self._steps(goal, streaming=True))

    def astream(self, goal: str) -> AsyncGenerator[StreamItem, None]:
        """The async twin of `stream`."""
        return _adrive(self._steps(goal, streaming=True))

    def _refuse_async_tools(self, method: str) -> None:
        for tool in self.tools.values():
            if tool.is_async:
                msg = (
                    f"Cannot {method} {self!r} synchronously: tool {tool.name!r} is async. "
                    f"Call `await harness.a{method}(...)` instead."
                )
                raise HookTypeError(msg, callback=tool.fn)
            if tool.subagent is not None:
                tool.subagent._refuse_async_tools(method)

    def __repr__(self) -> str:
        return f"Harness({self.name or self.model.name!r}, tools={sorted(self.tools)})"

    # --- the loop, written once -----------------------------------------------

    def _steps(self, goal: str, *, streaming: bool, parent: RunContext | None = None) -> _Steps:
        """The whole run, as operations for a driver; returns the `RunResult`."""
        run = RunContext(depth=0 if parent is None else parent.depth + 1, agent_name=self.name, is_streaming=streaming)
        state = _State(goal=goal, run=run, history=[Message("user", goal)], streaming=streaming)
        try:
            outcome = yield from self._session(state)
        except StopRun as stop:
            outcome = RunOutcome(status="stopped", reason=stop.reason, turns=state.model_calls)
        except BaseException as exc:
            status: Literal["failed", "cancelled"] = "failed" if isinstance(exc, Exception) else "cancelled"
            yield from self._end(state, RunOutcome(status=status, reason=_describe(exc), turns=state.model_calls))
            raise
        yield from self._end(state, outcome)
        return RunResult(outcome=outcome, output=state.output, history=tuple(state.history), run=state.run)

    def _session(self, state: _State) -> Generator[_Op, Any, RunOutcome]:
        reg, run = self.registry, state.run
        with self._setup_lock:
            first, self._setup_fired = not self._setup_fired, True
        if first and reg.has_hooks(P.SETUP):
            yield _Dispatch(reg, "notify", (P.SETUP, SetupContext(run=run)))
        if reg.has_hooks(P.ON_SESSION_START):
            ctx = OnSessionStartContext(session_id=run.session_id, goal=state.goal, run=run)
            yield _Dispatch(reg, "notify", (P.ON_SESSION_START, ctx))
        verdict = yield _Dispatch(
            reg, "decide", (P.USER_PROMPT_SUBMIT, UserPromptSubmitContext(content=state.goal, run=run))
        )
        verdict = yield from self._settle(state, verdict, None)
        if not verdict.allowed:
            return RunOutcome(status="stopped", reason=verdict.reason)
        while True:
            outcome = yield from self._turn(state)
            if outcome is not None:
                return outcome

    def _end(self, state: _State, outcome: RunOutcome) -> _Step:
        if self.registry.has_hooks(P.ON_SESSION_END):
            ctx = OnSessionEndContext(session_id=state.run.session_id, outcome=outcome, run=state.run)
            with contextlib.suppress(StopRun):  # the run is ending already
                yield _Dispatch(self.registry, "notify", (P.ON_SESSION_END, ctx))

    def _turn(self, state: _State) -> Generator[_Op, Any, RunOutcome | None]:
        """One turn: gate, model call (with retries), tool calls, stop check, compaction."""
        reg = self.registry
        state.run = run = dataclasses.replace(state.run, turn=state.run.turn + 1)
        verdict = yield _Dispatch(
            reg, "decide", (P.PRE_TURN, PreTurnContext(prompt=state.goal, turn=run.turn, run=run))
        )
        verdict = yield from self._settle(state, verdict, None)
        if not verdict.allowed:
            return RunOutcome(status="stopped", reason=verdict.reason, turns=state.model_calls)
        response = yield from self._answer(state)
        if response is None:
            reason = f"max_turns={self.max_turns} reached"
            yield from self._notify(P.NOTIFICATION, NotificationContext(message=f"run ended: {reason}", run=run))
            return RunOutcome(status="failed", reason=reason, turns=state.model_calls)
        for call in response.tool_calls:
            yield from self._tool_call(state, call)
        yield from self._notify(P.POST_TURN, PostTurnContext(turn=run.turn, response_text=response.text, run=run))
        if not response.tool_calls:
            ctx = StopContext(response_text=response.text, continuation_count=state.continuations, run=run)
            verdict = yield _Dispatch(reg, "decide", (P.STOP, ctx))
            verdict = yield from self._settle(state, verdict, None)
            if verdict.allowed:
                return RunOutcome(status="completed", turns=state.model_calls)
            state.continuations += 1
            state.history.append(Message("user", verdict.reason))
        yield from self._compact(state)
        return None

    def _answer(self, state: _State) -> Generator[_Op, Any, ModelResponse | None]:
        """Call the model until `model_turn_finished` accepts an answer; ``None`` when out of turns."""
        reg = self.registry
        run = state.run
        while state.model_calls < self.max_turns:
            state.model_calls += 1
            base = RequestPatch(active_tools=frozenset(self.tools))
            ctx = PreModelCallContext(prompt=state.goal, history=state.history, turn=run.turn, patch=base, run=run)
            patch: RequestPatch = yield _Dispatch(reg, "transform", (P.PRE_MODEL_CALL, ctx))
            name = self.model.name
            select = ModelSelectContext(default_model=name, selected_model=name, patch=patch, run=run)
            model_name: str = yield _Dispatch(reg, "transform", (P.MODEL_SELECT, select))
            request = self._request(state, patch, model_name)
            response = yield from self._call_model(state, request)
            finished = ModelTurnFinishedContext(
                turn=run.turn,
                text=response.text,
                tool_calls=response.tool_calls,
                finish_reason=FinishReason.from_raw(response.finish_reason),
                raw_finish_reason=response.finish_reason,
                max_tokens=request.max_tokens,
                usage=response.usage,
                run=run,
            )
            action: TurnAction = yield _Dispatch(reg, "decide", (P.MODEL_TURN_FINISHED, finished))
            if action.kind == "continue":
                state.tools_offered = frozenset(request.tools)
                state.output = response.text
                if response.text or not response.tool_calls:
                    state.history.append(Message("assistant", response.text))
                state.history.extend(
                    Message(
                        "assistant", json.dumps(dict(c.args), default=str), name=c.tool_name, tool_call_id=c.call_id
                    )
                    for c in response.tool_calls
                )
                return response
            if response.tool_calls:
                names = [call.tool_name for call in response.tool_calls]
                msg = (
                    f"Cannot retry turn {run.turn} as hook {action.decided_by!r} asked: the answer carries tool calls "
                    f"{names}, which would be dropped unrun. Return TurnAction.continue_run() for such turns, "
                    "and gate the calls in pre_tool_call_decide instead."
                )
                raise HookValueError(msg, point=P.MODEL_TURN_FINISHED)
            if state.streaming:
                yield _Emit(TurnRetried(run.turn, action.kind))
            if action.kind == "feedback":
                state.history += [Message("assistant", response.text), Message("user", action.feedback or "")]
        return None

    def _request(self, state: _State, patch: RequestPatch, model_name: str) -> ModelRequest:
        offered = frozenset(self.tools) if patch.active_tools is None else patch.active_tools & frozenset(self.tools)
        return ModelRequest(
            model=model_name,
            messages=tuple(state.history),
            tools=tuple(sorted(offered)),
            system=((patch.preamble,) if patch.preamble else ()) + (patch.extra_context or ()),
            max_tokens=self.max_tokens if patch.max_tokens is None else patch.max_tokens,
            temperature=patch.temperature,
            tool_choice=patch.tool_choice,
            params=patch.additional_params or {},
        )

    def _call_model(self, state: _State, request: ModelRequest) -> Generator[_Op, Any, ModelResponse]:
        """Stream one answer; in streaming runs, fire the delta points and emit the deltas."""
        reg, run = self.registry, state.run
        stream = yield _OpenStream(self.model, request)
        text = reasoning = ""
        while True:
            chunk: ModelChunk | None = yield _NextChunk(stream)
            if isinstance(chunk, ModelResponse):
                return chunk
            if chunk is None:
                msg = f"Cannot finish turn {run.turn}: the stream of {self.model!r} ended without a ModelResponse."
                raise HookValueError(msg)
            if not state.streaming:
                continue
            if isinstance(chunk, TextDelta):
                text += chunk.text
                if reg.has_hooks(P.TEXT_DELTA):
                    yield _Dispatch(
                        reg, "notify", (P.TEXT_DELTA, TextDeltaContext(delta=chunk.text, aggregated=text, run=run))
                    )
            elif isinstance(chunk, ReasoningDelta):
                reasoning += chunk.text
                if reg.has_hooks(P.REASONING_DELTA):
                    ctx = ReasoningDeltaContext(delta=chunk.text, aggregated=reasoning, run=run)
                    yield _Dispatch(reg, "notify", (P.REASONING_DELTA, ctx))
            elif reg.has_hooks(P.TOOL_CALL_DELTA):
                ctx2 = ToolCallDeltaContext(call_id=chunk.call_id, tool_name=chunk.tool_name, delta=chunk.args, run=run)
                yield _Dispatch(reg, "notify", (P.TOOL_CALL_DELTA, ctx2))
            yield _Emit(chunk)

    def _tool_call(self, state: _State, call: ToolCallRequest) -> _Step:
        """Check, resolve, run and report one tool call; its result (or error) joins the history."""
        reg, run = self.registry, state.run
        tool, problem = self._lookup(state, call.tool_name, call.args)
        if problem is not None:
            ctx = InvalidToolCallContext(
                tool_name=call.tool_name,
                args=call.args,
                call_id=call.call_id,
                available_tools=sorted(state.tools_offered),
                error=str(problem[1]),
                run=run,
            )
            action: InvalidToolCallAction = yield _Dispatch(reg, "decide", (P.INVALID_TOOL_CALL, ctx))
            if action.kind in ("retry", "skip"):
                content = action.feedback or action.reason
                state.history.append(Message("tool", content, name=call.tool_name, tool_call_id=call.call_id))
                return
            if action.kind == "repair" and action.tool_name is not None:
                call = dataclasses.replace(call, tool_name=action.tool_name)
                tool, problem = self._lookup(state, call.tool_name, call.args)
        if problem is not None:
            kind, error = problem
            content = yield from self._failed(state, call, error, kind, 0.0)
        else:
            assert tool is not None  # _lookup returns a tool whenever there is no problem
            content = yield from self._resolve_and_run(state, tool, call)
        state.history.append(Message("tool", content, name=call.tool_name, tool_call_id=call.call_id))

    def _lookup(
        self, state: _State, name: str, args: Mapping[str, object]
    ) -> tuple[Tool | None, tuple[ToolErrorKind, Exception] | None]:
        tool = self.tools.get(name) if name in state.tools_offered else None
        if tool is None:
            offered = ", ".join(sorted(state.tools_offered)) or "none"
            return None, (
                ToolErrorKind.NOT_FOUND,
                LookupError(f"unknown tool {name!r}; the tools offered are: {offered}"),
            )
        invalid = tool.check(args)
        if invalid is not None:
            return tool, (ToolErrorKind.INVALID_ARGS, TypeError(f"bad arguments for {name!r}: {invalid}"))
        return tool, None

    def _resolve_and_run(self, state: _State, tool: Tool, call: ToolCallRequest) -> Generator[_Op, Any, str]:
        """Transform and gate the call (asking a human when told to), then run the tool and report."""
        reg, run, call_id = self.registry, state.run, call.call_id
        ctx = PreToolCallDecideContext(tool_name=tool.name, args=call.args, call_id=call_id, run=run)
        resolution: ToolCallResolution = yield _Dispatch(reg, "resolve_tool_call", (ctx,))
        args, verdict = resolution.args, resolution.result
        call = dataclasses.replace(call, args=args)
        if verdict.decision is Decision.ASK:
            verdict = yield from self._settle(state, verdict, tool.name)
            if not verdict.allowed:
                denied = PermissionDeniedContext(
                    tool_name=tool.name,
                    args=args,
                    call_id=call_id,
                    reason=verdict.reason,
                    decided_by=verdict.decided_by,
                    run=run,
                )
                yield from self._notify(P.PERMISSION_DENIED, denied)
        if not verdict.allowed:
            return f"Permission denied: {verdict.reason}"
        invalid = tool.check(args)  # an input transform may have broken them
        if invalid is not None:
            error = TypeError(f"bad arguments for {tool.name!r} after transform_tool_input: {invalid}")
            return (yield from self._failed(state, call, error, ToolErrorKind.INVALID_ARGS, 0.0))
        started = time.perf_counter()
        raw: object = None
        failure: Exception | None = None
        if tool.subagent is not None:
            raw, failure = yield from self._delegate(state, tool.subagent, str(args["goal"]))
        else:
            try:
                raw = yield _CallTool(tool, args)
            except StopRun:
                raise
            except Exception as exc:  # noqa: BLE001 -- a tool error is reported to hooks and to the model
                failure = exc
        duration_ms = (time.perf_counter() - started) * 1000
        if failure is not None:
            kind = ToolErrorKind.TIMEOUT if isinstance(failure, TimeoutError) else ToolErrorKind.EXCEPTION
            return (yield from self._failed(state, call, failure, kind, duration_ms))
        shown = TransformToolResultContext(
            tool_name=tool.name, args=args, call_id=call_id, raw_result=raw, presentation=_present(raw), run=run
        )
        presentation: str = yield _Dispatch(reg, "transform", (P.TRANSFORM_TOOL_RESULT, shown))
        done = PostToolCallContext(
            tool_name=tool.name,
            args=args,
            call_id=call_id,
            result=presentation,
            raw_result=raw,
            duration_ms=duration_ms,
            metadata={"rewritten": resolution.rewritten},
            run=run,
        )
        yield from self._notify(P.POST_TOOL_CALL, done)
        return presentation

    def _delegate(
        self, state: _State, harness: Harness, goal: str
    ) -> Generator[_Op, Any, tuple[object, Exception | None]]:
        """Run `harness` on `goal` at depth + 1, between `subagent_start` and `subagent_stop`."""
        run = state.run
        depth = run.depth + 1
        yield from self._notify(P.SUBAGENT_START, SubagentStartContext(goal=goal, depth=depth, run=run))
        try:
            result: RunResult = yield from harness._steps(goal, streaming=False, parent=run)
        except Exception as exc:  # noqa: BLE001 -- the subagent's failure is this tool call's error
            outcome = RunOutcome(status="failed", reason=_describe(exc))
            yield from self._notify(P.SUBAGENT_STOP, SubagentStopContext(outcome=outcome, depth=depth, run=run))
            return None, exc
        yield from self._notify(P.SUBAGENT_STOP, SubagentStopContext(outcome=result.outcome, depth=depth, run=run))
        return result, None

    def _failed(
        self, state: _State, call: ToolCallRequest, error: Exception, kind: ToolErrorKind, duration_ms: float
    ) -> Generator[_Op, Any, str]:
        """Report a failed call to `post_tool_call_failure`; return what `on_tool_error` says the model sees."""
        run, name, args, call_id = state.run, call.tool_name, call.args, call.call_id
        failure = PostToolCallFailureContext(
            tool_name=name, args=args, call_id=call_id, error=error, duration_ms=duration_ms, run=run
        )
        yield from self._notify(P.POST_TOOL_CALL_FAILURE, failure)
        ctx = OnToolErrorContext(
            tool_name=name,
            args=args,
            call_id=call_id,
            error=error,
            kind=kind,
            message=f"Error: {_describe(error)}",
            run=run,
        )
        message: str = yield _Dispatch(self.registry, "transform", (P.ON_TOOL_ERROR, ctx))
        return message

    def _settle(self, state: _State, verdict: HookResult, tool_name: str | None) -> Generator[_Op, Any, HookResult]:
        """Resolve an ``ask`` through `notification` and `on_interaction`; other verdicts pass through."""
        if verdict.decision is not Decision.ASK:
            return verdict
        run = state.run
        about = f" for {tool_name}" if tool_name else ""
        yield from self._notify(
            P.NOTIFICATION, NotificationContext(message=f"approval needed{about}: {verdict.reason}", run=run)
        )
        ctx = OnInteractionContext(question=verdict.reason, options=("allow", "deny"), tool_name=tool_name, run=run)
        answer: HookResult = yield _Dispatch(self.registry, "decide", (P.ON_INTERACTION, ctx))
        return answer

    def _compact(self, state: _State) -> _Step:
        """Fold older messages into one summary when the history outgrows `compact_after`."""
        limit = self.compact_after
        if limit is None or len(state.history) <= limit:
            return
        run = state.run
        yield from self._notify(P.PRE_COMPACT, PreCompactContext(transcript_len=len(state.history), run=run))
        keep = limit // 2
        first, older, recent = state.history[0], state.history[1:-keep], state.history[-keep:]
        lines = [f"{m.role}{f' ({m.name})' if m.name else ''}: {_clip(m.content)}" for m in older]
        summary = f"Summary of {len(older)} earlier messages:\n" + "\n".join(lines)
        state.history = [first, Message("system", summary), *recent]
        yield from self._notify(
            P.ON_COMPACTION, OnCompactionContext(removed=len(older), summary_chars=len(summary), run=run)
        )

    def _notify(self, point: HookPoint, ctx: object) -> _Step:
        """Fire an observe point, skipping it (and its dispatch) when nobody listens."""
        if self.registry.has_hooks(point):
            yield _Dispatch(self.registry, "notify", (point, ctx))
