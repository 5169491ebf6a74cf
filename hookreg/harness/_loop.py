"""The reference agent loop: one step generator, driven four ways (run, arun, stream, astream).

`Harness._steps` is the loop. It never calls a hook, a model or a tool
itself: it yields an *operation* (`Dispatch`, `_OpenStream`, `_NextChunk`,
`_CallTool`, `_Emit`) and is sent back its result, or thrown its exception.
`_drive` performs operations synchronously and `_adrive` awaits them, so the
four entry points share one loop and one set of hook semantics — the same
split as hookreg's own dispatch (`hookreg/_dispatch.py`).

The run contract itself — session start, the prompt and turn gates, the
tool-call gate, its outcome points, the stop decision and the session end —
is `hookreg._lifecycle`, shared with every adapter: the loop ``yield from``s
those flows bound to the harness's own registry (`hookreg._lifecycle.bind`:
a subagent's harness has its own, and one driver serves both). What stays
here is the harness's own business: the model call and its deltas, retries,
compaction, subagents and the history.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, TypeVar, final

from hookreg import (
    HookPoint,
    HookRegistry,
    HookTypeError,
    HookValueError,
    Message,
    NotificationContext,
    OnCompactionContext,
    PreCompactContext,
    RequestPatch,
    RunContext,
    RunOutcome,
    SetupContext,
    StopRun,
    SubagentStartContext,
    SubagentStopContext,
    ToolCallRequest,
    TurnAction,
)
from hookreg._lifecycle import (
    Dispatch,
    HookFailure,
    RunState,
    Steps,
    aperform,
    bind,
    collecting,
    describe,
    failed,
    gate,
    outcome_for,
    perform,
    present,
    succeeded,
    unanswered,
)
from hookreg.harness._model import (
    Model,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    argument_text,
)
from hookreg.harness._tools import Tool

__all__ = ["STOPPED_AFTER_RUN", "Harness", "HookFailure", "RunFinished", "RunResult", "StreamItem", "TurnRetried"]

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
        failures: Every hook that failed during the run (its subagents' runs included), in order:
            a failing gate denies, so a run whose calls were all refused by a broken gate
            still ends ``completed``, and this says why.
    """

    outcome: RunOutcome
    output: str
    history: tuple[Message, ...]
    run: RunContext
    failures: tuple[HookFailure, ...] = ()


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


_Op: TypeAlias = Dispatch | _OpenStream | _NextChunk | _CallTool | _Emit
_Steps: TypeAlias = Generator[_Op, Any, "RunResult"]
_Step: TypeAlias = Generator[_Op, Any, Any]
_R = TypeVar("_R")


def _registry(op: Dispatch) -> HookRegistry:
    """The registry a dispatch of the loop goes to: every one is bound to its harness's registry."""
    assert op.registry is not None  # internal invariant: the loop yields bound dispatches only
    return op.registry


def _perform(op: _Op) -> object:
    """Perform one operation synchronously (`_Emit` is the driver's own business)."""
    if isinstance(op, Dispatch):
        return perform(_registry(op), op)
    if isinstance(op, _OpenStream):
        return iter(op.model.stream(op.request))
    if isinstance(op, _NextChunk):
        return next(op.stream, None)  # type: ignore[arg-type]  # the sync driver opens sync streams only
    assert isinstance(op, _CallTool)  # internal invariant
    return op.tool.fn(**op.args)


async def _aperform(op: _Op) -> object:
    """Perform one operation, awaiting hooks, model chunks and async tools."""
    if isinstance(op, Dispatch):
        return await aperform(_registry(op), op)
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


def _drive(steps: _Steps, failures: list[HookFailure]) -> Generator[StreamItem, None, None]:
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
            with collecting(failures):
                reply = _perform(op)
        except BaseException as exc:  # noqa: BLE001 -- thrown into the loop, which ends the run and re-raises
            error = exc


async def _adrive(steps: _Steps, failures: list[HookFailure]) -> AsyncGenerator[StreamItem, None]:
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
            with collecting(failures):
                reply = await _aperform(op)
        except BaseException as exc:  # noqa: BLE001 -- thrown into the loop, which ends the run and re-raises
            error = exc


@dataclass(slots=True)
class _Watch:
    """What a watched flow's dispatches gave: each point's last answer, and where a dispatch raised."""

    replies: dict[HookPoint, object] = field(default_factory=dict)
    raised_at: HookPoint | None = None

    def note(self, op: Dispatch, reply: object, error: BaseException | None) -> None:
        """Note one dispatch's answer, or the point where it raised (`bind`'s `note`)."""
        if error is None:
            self.replies[op.point] = reply
        else:
            self.raised_at = op.point


@dataclass(slots=True)
class _State:
    """What one run remembers between steps; the run's lifecycle is `life` (`hookreg._lifecycle.RunState`)."""

    life: RunState
    history: list[Message]
    streaming: bool
    failures: list[HookFailure]  # shared with the driver, which collects into it; subagents' runs append too
    model_calls: int = 0
    output: str = ""
    tools_offered: frozenset[str] = field(default_factory=frozenset)

    @property
    def run(self) -> RunContext:
        """The run's context at its current turn."""
        return self.life.run


STOPPED_AFTER_RUN: Final = "The tool ran, but the run was stopped before its result was shown."
"""What the model reads, after a stop, for a call whose tool ran but whose result never passed its hooks."""


def _tool_message(call: ToolCallRequest, text: str) -> Message:
    """The tool message answering `call`."""
    return Message("tool", text, name=call.tool_name, tool_call_id=call.call_id)


def _subagent_text(result: RunResult) -> str:
    """What the parent's model reads of a subagent's run: its answer, or how it ended."""
    if result.outcome.status == "completed":
        return result.output
    return f"subagent {result.outcome.status}: {result.outcome.reason}"


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
        for item in _drive(*self._started(goal, streaming=False)):
            if isinstance(item, RunFinished):
                return item.result
        raise AssertionError("unreachable: the driver always ends with RunFinished")  # pragma: no cover

    async def arun(self, goal: str) -> RunResult:
        """Run the agent on `goal` to the end, awaiting async hooks and tools."""
        async for item in _adrive(*self._started(goal, streaming=False)):
            if isinstance(item, RunFinished):
                return item.result
        raise AssertionError("unreachable: the driver always ends with RunFinished")  # pragma: no cover

    def stream(self, goal: str) -> Generator[StreamItem, None, None]:
        """Run the agent on `goal`, yielding deltas and `TurnRetried` as they happen, then `RunFinished`.

        Closing the stream early ends the run as ``cancelled`` (``on_session_end`` fires).
        """
        self._refuse_async_tools("stream")
        return _drive(*self._started(goal, streaming=True))

    def astream(self, goal: str) -> AsyncGenerator[StreamItem, None]:
        """The async twin of `stream`."""
        return _adrive(*self._started(goal, streaming=True))

    def _refuse_async_tools(self, method: str) -> None:
        for tool in self.tools.values():
            if tool.is_async:
                msg = (
                    f"Cannot {method} {self!r} synchronously: tool {tool.name!r} is async. "
                    f"Call `await harness.a{method}(...)` instead."
                )
                raise HookTypeError(msg, callback=tool.fn)
            if tool.subagent is not None:
                tool.subagent._refuse_async_tools(method)  # noqa: SLF001 -- a Harness, this module's own class

    def __repr__(self) -> str:
        return f"Harness({self.name or self.model.name!r}, tools={sorted(self.tools)})"

    # --- the loop, written once -----------------------------------------------

    def _hooks(self, flow: Steps[_R], watch: _Watch | None = None) -> Generator[Dispatch, Any, _R]:
        """A lifecycle flow bound to this harness's registry, watched by `watch` when given."""
        return bind(self.registry, flow, None if watch is None else watch.note)

    def _notify(self, point: HookPoint, ctx: object) -> _Step:
        """Fire one of the harness's own observe points, skipping it when nobody listens."""
        if self.registry.has_hooks(point):
            yield Dispatch("notify", point, ctx, self.registry)

    def _started(self, goal: str, *, streaming: bool) -> tuple[_Steps, list[HookFailure]]:
        """A top-level run's operations, and the list its driver collects the run's hook failures into."""
        failures: list[HookFailure] = []
        return self._steps(goal, streaming=streaming, failures=failures), failures

    def _steps(
        self, goal: str, *, streaming: bool, failures: list[HookFailure], parent: RunContext | None = None
    ) -> _Steps:
        """The whole run, as operations for a driver collecting into `failures`; returns the `RunResult`."""
        run = RunContext(depth=0 if parent is None else parent.depth + 1, agent_name=self.name, is_streaming=streaming)
        life = RunState(self.registry, run, goal)
        state = _State(life=life, history=[Message("user", goal)], streaming=streaming, failures=failures)
        first = len(failures)  # a subagent's run shares its parent's list: its own failures start here
        try:
            outcome = yield from self._session(state)
        except StopRun as stop:
            outcome = outcome_for(stop, state.model_calls)
        except BaseException as exc:
            # The exception ending the run wins over any on_session_end failure (DESIGN §5).
            yield from self._hooks(life.end(outcome_for(exc, state.model_calls), exc))
            raise
        yield from self._hooks(life.end(outcome))
        return RunResult(
            outcome=outcome,
            output=state.output,
            history=tuple(state.history),
            run=state.run,
            failures=tuple(failures[first:]),
        )

    def _session(self, state: _State) -> Generator[_Op, Any, RunOutcome]:
        with self._setup_lock:
            first, self._setup_fired = not self._setup_fired, True
        if first:
            yield from self._notify(P.SETUP, SetupContext(run=state.run))
        refused = yield from self._hooks(state.life.start())
        if refused is not None:
            return refused
        while True:
            outcome = yield from self._turn(state)
            if outcome is not None:
                return outcome

    def _turn(self, state: _State) -> Generator[_Op, Any, RunOutcome | None]:
        """One turn: gate, model call (with retries), tool calls, stop check, compaction."""
        refused = yield from self._hooks(state.life.turn())
        if refused is not None:
            return dataclasses.replace(refused, turns=state.model_calls)
        run = state.run
        response = yield from self._answer(state)
        if response is None:
            reason = f"max_turns={self.max_turns} reached"
            yield from self._notify(P.NOTIFICATION, NotificationContext(message=f"run ended: {reason}", run=run))
            return RunOutcome(status="failed", reason=reason, turns=state.model_calls)
        yield from self._tool_calls(state, response)
        if not response.tool_calls:
            feedback = yield from self._hooks(state.life.stop(response.text))
            if feedback is None:
                return RunOutcome(status="completed", turns=state.model_calls)
            state.history.append(Message("user", feedback))
        yield from self._compact(state)
        return None

    def _answer(self, state: _State) -> Generator[_Op, Any, ModelResponse | None]:
        """Call the model until `model_turn_finished` accepts an answer; ``None`` when out of turns."""
        life = state.life
        while state.model_calls < self.max_turns:
            state.model_calls += 1
            base = RequestPatch(active_tools=frozenset(self.tools))
            patch, model_name = yield from self._hooks(life.model_call(base, self.model.name, lambda: state.history))
            request = self._request(state, patch, model_name)
            response = yield from self._call_model(state, request)
            answered = life.answered(
                response.text,
                response.tool_calls,
                raw_finish_reason=response.finish_reason,
                max_tokens=request.max_tokens,
                usage=response.usage,
                message_id=response.message_id,
                model=response.model or request.model,
            )
            action: TurnAction = yield from self._hooks(answered)
            if action.kind == "continue":
                state.tools_offered = frozenset(request.tools)
                state.output = response.text
                if response.text or not response.tool_calls:
                    state.history.append(Message("assistant", response.text))
                state.history.extend(
                    Message(
                        "assistant",
                        argument_text(call, response.raw_arguments),
                        name=call.tool_name,
                        tool_call_id=call.call_id,
                    )
                    for call in response.tool_calls
                )
                return response
            if state.streaming:
                yield _Emit(TurnRetried(life.run.turn, action.kind))
            if action.kind == "feedback":
                if response.text:  # an empty rejected answer adds nothing to the conversation (as rig)
                    state.history.append(Message("assistant", response.text))
                state.history.append(Message("user", action.feedback or ""))
        return None

    def _request(self, state: _State, patch: RequestPatch, model_name: str) -> ModelRequest:
        offered = frozenset(self.tools) if patch.active_tools is None else patch.active_tools & frozenset(self.tools)
        return ModelRequest(
            model=model_name,
            messages=tuple(state.history) if patch.messages is None else patch.messages,
            tools=tuple(sorted(offered)),
            system=((patch.preamble,) if patch.preamble else ()) + (patch.extra_context or ()),
            max_tokens=self.max_tokens if patch.max_tokens is None else patch.max_tokens,
            temperature=patch.temperature,
            tool_choice=patch.tool_choice,
            params=patch.additional_params or {},
        )

    def _call_model(self, state: _State, request: ModelRequest) -> Generator[_Op, Any, ModelResponse]:
        """Stream one answer; in streaming runs, fire the delta points and emit the deltas."""
        stream = yield _OpenStream(self.model, request)
        deltas = state.life.deltas()
        while True:
            chunk: ModelChunk | None = yield _NextChunk(stream)
            if isinstance(chunk, ModelResponse):
                return chunk
            if chunk is None:
                msg = (
                    f"Cannot finish turn {state.run.turn}: the stream of {self.model!r} ended without a ModelResponse."
                )
                raise HookValueError(msg)
            if not state.streaming:
                continue
            if isinstance(chunk, TextDelta):
                yield from self._hooks(deltas.text(chunk.text))
            elif isinstance(chunk, ReasoningDelta):
                yield from self._hooks(deltas.reasoning(chunk.text))
            else:
                yield from self._hooks(deltas.tool_call(chunk.call_id, chunk.tool_name, chunk.args))
            yield _Emit(chunk)

    def _tool_calls(self, state: _State, response: ModelResponse) -> _Step:
        """Run the answer's tool calls in order; after a stop, every call of the batch still gets a tool message."""
        start = len(state.history)
        try:
            for call in response.tool_calls:
                raw_args = response.raw_arguments.get(call.call_id, call.args)
                yield from self._tool_call(state, call, raw_args)
        except StopRun:
            answered = {m.tool_call_id for m in state.history[start:] if m.role == "tool" and m.tool_call_id}
            names = {call.call_id: call.tool_name for call in response.tool_calls}
            for call_id, notice in unanswered(list(names), answered):
                state.history.append(Message("tool", notice, name=names[call_id], tool_call_id=call_id))
            raise

    def _tool_call(self, state: _State, call: ToolCallRequest, raw_args: object) -> _Step:
        """Gate one call (`hookreg._lifecycle.gate`), run it, report its outcome; its text joins the history."""
        run = state.run
        verdict = yield from self._hooks(
            gate(
                self.registry,
                run,
                call.tool_name,
                call.call_id,
                raw_args,
                known=self.tools,
                offered=state.tools_offered,
                validate=self._validate,
            )
        )
        call = verdict.call
        if not verdict.allowed:
            text = f"Permission denied: {verdict.text}" if verdict.status == "denied" else verdict.text
            state.history.append(_tool_message(call, text))
            return
        tool = self.tools[call.tool_name]
        started = time.perf_counter()
        raw: object = None
        failure: Exception | None = None
        if tool.subagent is not None:
            raw, failure = yield from self._delegate(state, call, tool.subagent)
        else:
            try:
                raw = yield _CallTool(tool, call.args)
            except StopRun:  # raised by the tool itself
                state.history.append(_tool_message(call, STOPPED_AFTER_RUN))
                raise
            except Exception as exc:  # noqa: BLE001 -- a tool error is reported to hooks and to the model
                failure = exc
        duration_ms = (time.perf_counter() - started) * 1000
        watch = _Watch()
        try:
            if failure is not None:
                text = yield from self._hooks(failed(self.registry, run, call, failure, duration_ms=duration_ms), watch)
            else:
                shown = _subagent_text(raw) if isinstance(raw, RunResult) else None
                outcome = succeeded(
                    self.registry,
                    run,
                    call,
                    raw,
                    presentation=shown,
                    duration_ms=duration_ms,
                    metadata={"rewritten": verdict.rewritten},
                )
                text = yield from self._hooks(outcome, watch)
        except StopRun:
            # Stopped by an outcome hook: the model reads the result as its hooks left it, when they got that far.
            text = STOPPED_AFTER_RUN
            if failure is None and watch.raised_at is P.POST_TOOL_CALL:
                default = _subagent_text(raw) if isinstance(raw, RunResult) else present(raw)
                text = str(watch.replies.get(P.TRANSFORM_TOOL_RESULT, default))
            state.history.append(_tool_message(call, text))
            raise
        state.history.append(_tool_message(call, text))

    def _validate(self, tool_name: str, args: Mapping[str, object]) -> str | None:
        """The schema check `gate` runs: whether `args` bind to the tool's signature."""
        return self.tools[tool_name].check(args)

    def _delegate(
        self, state: _State, call: ToolCallRequest, harness: Harness
    ) -> Generator[_Op, Any, tuple[object, Exception | None]]:
        """Run `harness` on the call's goal at depth + 1, between `subagent_start` and `subagent_stop`."""
        run, goal = state.run, str(call.args["goal"])
        depth = run.depth + 1
        yield from self._notify(P.SUBAGENT_START, SubagentStartContext(goal=goal, depth=depth, run=run))
        result: RunResult | None = None
        error: Exception | None = None
        try:
            result = yield from harness._steps(goal, streaming=False, failures=state.failures, parent=run)
            outcome = result.outcome
        except Exception as exc:  # noqa: BLE001 -- the subagent's failure is this tool call's error
            error = exc
            outcome = RunOutcome(status="failed", reason=describe(exc))
        try:
            yield from self._notify(P.SUBAGENT_STOP, SubagentStopContext(outcome=outcome, depth=depth, run=run))
        except StopRun:  # the subagent ran: its call is answered
            state.history.append(_tool_message(call, STOPPED_AFTER_RUN))
            raise
        return result, error

    def _compact(self, state: _State) -> _Step:
        """Fold older messages into one summary when the history outgrows `compact_after`."""
        limit = self.compact_after
        if limit is None or len(state.history) <= limit:
            return
        run = state.run
        chars = sum(len(m.content) for m in state.history)
        yield from self._notify(
            P.PRE_COMPACT, PreCompactContext(transcript_len=chars, message_count=len(state.history), run=run)
        )
        keep = limit // 2
        first, older, recent = state.history[0], state.history[1:-keep], state.history[-keep:]
        lines = [f"{m.role}{f' ({m.name})' if m.name else ''}: {_clip(m.content)}" for m in older]
        summary = f"Summary of {len(older)} earlier messages:\n" + "\n".join(lines)
        state.history = [first, Message("system", summary), *recent]
        yield from self._notify(
            P.ON_COMPACTION, OnCompactionContext(removed=len(older), summary_chars=len(summary), run=run)
        )
