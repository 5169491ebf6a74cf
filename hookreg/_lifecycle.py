"""The run contract (DESIGN §8) as sans-I/O step generators — tool call, ask, outcome, run — and their drivers."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.metadata
import json
import threading
import weakref
from collections.abc import Awaitable, Callable, Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, TypeAlias, TypeVar, final

from hookreg._context import (
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    NotificationContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PostTurnContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    ReasoningDeltaContext,
    RunContext,
    RunOutcome,
    StopContext,
    TextDeltaContext,
    ToolCallDeltaContext,
    ToolCallRequest,
    ToolErrorKind,
    TransformToolResultContext,
    UserPromptSubmitContext,
)
from hookreg._dispatch import RESOLUTION_POINTS, approved_args
from hookreg._errors import HookTypeError, HookValueError, StopRun
from hookreg._log import HookFailure, collecting, log
from hookreg._points import HookPoint
from hookreg._registration import is_async
from hookreg._registry import awaits, listens
from hookreg._results import (
    Decision,
    FinishReason,
    HookResult,
    InvalidToolCallAction,
    Message,
    RequestPatch,
    ToolCallResolution,
    TurnAction,
    replace,
)
from hookreg._surface import HookRegistry

__all__ = [
    "ANSWER_POINTS",
    "DELTA_POINTS",
    "FAILURE_POINTS",
    "MODEL_CALL_POINTS",
    "NOT_RESUMED",
    "STOPPED_NOTICE",
    "SUCCESS_POINTS",
    "Deltas",
    "Dispatch",
    "GateResult",
    "HookFailure",
    "RunState",
    "Steps",
    "Validator",
    "aperform",
    "arun_flow",
    "ask",
    "bind",
    "cancel_paused",
    "collecting",
    "describe",
    "error_text",
    "failed",
    "finish_reason",
    "gate",
    "is_async",
    "keep_paused",
    "listens",
    "log",
    "missing_framework",
    "outcome_for",
    "perform",
    "present",
    "refused_retry",
    "require_registry",
    "require_release",
    "run_flow",
    "succeeded",
    "unanswered",
]

P = HookPoint
_R = TypeVar("_R")

STOPPED_NOTICE: Final = "Not run: the run was stopped."
"""What the model reads for a tool call of a stopped batch that never ran."""

Validator: TypeAlias = Callable[[str, Mapping[str, object]], object]
"""A framework's schema check: ``validate(tool_name, args)`` returns ``None`` (or ``""``) when the
arguments fit the tool, else an error text; raising an `Exception` also means they do not fit
(its message is the error text)."""


# --- the operation and its drivers -------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class Dispatch:
    """Call ``registry.<method>(point, ctx)`` (``resolve_tool_call(ctx)``), or its ``a``-twin when awaited.

    Attributes:
        method: The registry method.
        point: The hook point (`PRE_TOOL_CALL_DECIDE` for ``resolve_tool_call``, which takes no point).
        ctx: The context.
        registry: The registry to call, set by `bind`; ``None`` (what flows yield): the driver's.
    """

    method: Literal["decide", "transform", "notify", "resolve_tool_call"]
    point: HookPoint
    ctx: object
    registry: HookRegistry | None = None


Steps: TypeAlias = Generator[Dispatch, Any, _R]
"""A flow: yields `Dispatch` operations, is sent their results (or thrown their exceptions), returns `_R`.

Flows never call the registry: `run_flow` performs their dispatches with the sync
methods, `arun_flow` awaits the ``a``-twins, so sync loops, async loops and the
harness share every rule. Flows read ``registry.has_hooks`` to skip contexts
nobody listens to: run a flow with the registry it was built with."""


def perform(registry: HookRegistry, op: Dispatch) -> Any:
    """Perform one `Dispatch` with the sync methods of its own registry, else `registry`'s; return the result."""
    method = getattr(op.registry or registry, op.method)
    return method(op.ctx) if op.method == "resolve_tool_call" else method(op.point, op.ctx)


async def aperform(registry: HookRegistry, op: Dispatch) -> Any:
    """Perform one `Dispatch` with the ``a``-methods of its own registry, else `registry`'s; return the result."""
    method = getattr(op.registry or registry, "a" + op.method)
    return await (method(op.ctx) if op.method == "resolve_tool_call" else method(op.point, op.ctx))


def bind(
    registry: HookRegistry,
    flow: Steps[_R],
    note: Callable[[Dispatch, object, BaseException | None], None] | None = None,
) -> Steps[_R]:
    """`flow` with every `Dispatch` it yields bound to `registry`.

    For a loop whose one driver serves several registries (the harness
    running a subagent's loop inside its own): ``yield from bind(reg, flow)``
    and perform each op with ``perform(op.registry, op)``. Results and
    exceptions pass through to `flow` unchanged; `note`, when given, is
    shown each op with its result (or the exception) first.
    """
    reply: object = None
    error: BaseException | None = None
    while True:
        try:
            op = flow.send(reply) if error is None else flow.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]  # the flow's declared return type
        reply, error = None, None
        try:
            reply = yield dataclasses.replace(op, registry=registry)
        except GeneratorExit:
            flow.close()
            raise
        except BaseException as exc:  # noqa: BLE001 -- thrown into the flow, as a driver would
            error = exc
        if note is not None:
            note(op, reply, error)


def run_flow(registry: HookRegistry, steps: Generator[Any, Any, _R], other: Callable[[Any], Any] | None = None) -> _R:
    """Run a flow to its end synchronously; an operation's exception is thrown into the flow.

    A flow of a framework's own may also yield operations that are not a
    `Dispatch` (a LangChain middleware calling its next handler): `other`
    performs them.
    """
    reply: object = None
    error: BaseException | None = None
    while True:
        try:
            op = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]  # the flow's declared return type
        reply, error = None, None
        try:
            reply = perform(registry, op) if other is None or isinstance(op, Dispatch) else other(op)
        except BaseException as exc:  # noqa: BLE001 -- thrown into the flow, which decides what it means
            error = exc


async def arun_flow(
    registry: HookRegistry, steps: Generator[Any, Any, _R], other: Callable[[Any], Awaitable[Any]] | None = None
) -> _R:
    """Run a flow to its end, awaiting each operation; an operation's exception is thrown into the flow.

    `other` awaits the operations that are not a `Dispatch`, as in `run_flow`.
    """
    reply: object = None
    error: BaseException | None = None
    while True:
        try:
            op = steps.send(reply) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]  # the flow's declared return type
        reply, error = None, None
        try:
            if other is not None and not isinstance(op, Dispatch):
                reply = await other(op)
            elif _awaited(op.registry or registry, op):
                reply = await aperform(registry, op)
            else:  # no hook it reaches awaits: the sync method does the same, without a coroutine
                reply = perform(registry, op)
        except BaseException as exc:  # noqa: BLE001 -- thrown into the flow, which decides what it means
            error = exc


def _awaited(registry: HookRegistry, op: Dispatch) -> bool:
    """Whether performing `op` on `registry` awaits anything (else `perform` does what `aperform` would)."""
    if op.method == "resolve_tool_call":
        return awaits(registry, RESOLUTION_POINTS)
    return awaits(registry, (op.point,))


def _notify(registry: HookRegistry, point: HookPoint, build: Callable[[], object]) -> Steps[None]:
    """Fire an observe point, building its context only when someone listens."""
    if registry.has_hooks(point):
        yield Dispatch("notify", point, build())


# --- which points each flow fires: what an adapter asks `has_hooks` about before it translates anything -----------

MODEL_CALL_POINTS: Final = (P.PRE_MODEL_CALL, P.MODEL_SELECT)
"""What `RunState.model_call` fires."""
DELTA_POINTS: Final = (P.TEXT_DELTA, P.REASONING_DELTA, P.TOOL_CALL_DELTA)
"""What `Deltas` fires."""
ANSWER_POINTS: Final = (P.MODEL_TURN_FINISHED, P.POST_TURN)
"""What `RunState.answered` fires."""
SUCCESS_POINTS: Final = (P.TRANSFORM_TOOL_RESULT, P.POST_TOOL_CALL)
"""What `succeeded` fires."""
FAILURE_POINTS: Final = (P.POST_TOOL_CALL_FAILURE, P.ON_TOOL_ERROR)
"""What `failed` fires."""

# --- texts shared by every loop ------------------------------------------------------


def describe(error: BaseException) -> str:
    """``"ValueError: boom"`` (or the type name alone when the exception has no message)."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def present(raw: object) -> str:
    """The text a tool result shows the model: strings as they are, anything else as JSON when it can be."""
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw, default=str)
    except (TypeError, ValueError):
        return str(raw)


def _by(result: HookResult | InvalidToolCallAction) -> str:
    return f"hook {result.decided_by!r}" if result.decided_by else "a hook"


def finish_reason(raw: str | None) -> FinishReason | None:
    """A provider's finish reason as a `FinishReason` (``None`` for none); see `FinishReason.from_raw`."""
    return FinishReason.from_raw(raw)


def require_registry(registry: object, building: str) -> HookRegistry:
    """Return `registry`, or raise naming what was being built when it is not a HookRegistry."""
    if not isinstance(registry, HookRegistry):
        msg = (
            f"Cannot build {building} from {registry!r}: it is not a HookRegistry. "
            "Pass the hookreg.HookRegistry holding your hooks."
        )
        raise HookTypeError(msg)
    return registry


def refused_retry(turn: int, hook: str | None, tool_names: list[str]) -> HookValueError:
    """The error for a retry asked of an answer that carries tool calls (they would be dropped unrun)."""
    msg = (
        f"Cannot retry turn {turn} as hook {hook!r} asked: the answer carries tool calls {tool_names}, "
        "which would be dropped unrun. Return TurnAction.continue_run() for such turns, "
        "and gate the calls in pre_tool_call_decide instead."
    )
    return HookValueError(msg, point=P.MODEL_TURN_FINISHED)


def require_release(module: str, distribution: str, floor: tuple[int, ...]) -> None:
    """Refuse, before importing it, a framework older than the adapter's `floor`.

    Raises:
        ImportError: `distribution` is installed at a release older than
            `floor`, naming the release needed. Nothing is raised when it is
            not installed (the import then fails with `missing_framework`'s
            message) or when its version is not plain numbers (a development
            build is trusted).
    """
    try:
        installed = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return
    numbers = installed.split(".")[: len(floor)]
    if not all(number.isdigit() for number in numbers) or tuple(map(int, numbers)) >= floor:
        return
    needed = ".".join(map(str, floor))
    msg = (
        f"Cannot import hookreg.adapters.{module}: {distribution} {installed} is installed, but the adapter "
        f"needs {distribution}>={needed}. Upgrade it with: pip install --upgrade '{distribution}>={needed}'."
    )
    raise ImportError(msg, name=distribution)


def missing_framework(module: str, extra: str, error: ImportError) -> ImportError:
    """Build the ImportError an adapter raises when its framework is not installed."""
    msg = (
        f"Cannot import hookreg.adapters.{module}: {error.name or module} is not installed. "
        f"Install it with: pip install 'hookreg[{extra}]'."
    )
    missing = ImportError(msg, name=error.name)
    missing.__cause__ = error
    return missing


# --- ask: notification, then on_interaction ------------------------------------------


def ask(
    registry: HookRegistry, run: RunContext, verdict: HookResult, tool_name: str | None = None
) -> Steps[HookResult]:
    """Resolve an ``ask`` through ``notification`` then ``on_interaction``; any other verdict is returned as is.

    The answer is returned when it allows. No answer, a failed one, or an
    answer that is itself an ``ask`` is a deny (with the answer's reason and
    ``decided_by``).
    """
    if verdict.decision is not Decision.ASK:
        return verdict
    about = f" for {tool_name}" if tool_name else ""
    yield from _notify(
        registry,
        P.NOTIFICATION,
        lambda: NotificationContext(message=f"approval needed{about}: {verdict.reason}", run=run),
    )
    question = OnInteractionContext(question=verdict.reason, options=("allow", "deny"), tool_name=tool_name, run=run)
    answer: HookResult = yield Dispatch("decide", P.ON_INTERACTION, question)
    if answer.decision is Decision.ASK:  # a question answered by a question: nobody approved
        return HookResult(decision=Decision.DENY, reason=answer.reason, decided_by=answer.decided_by)
    return answer


# --- the tool call, before it runs -----------------------------------------------------


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    """What `gate` concluded about one tool call: run it with `call`, or tell the model `text`.

    Attributes:
        status: ``"run"`` (run ``call``), ``"denied"`` (a gate or an unanswered
            ``ask`` refused it; ``permission_denied`` fired), ``"failed"``
            (an invalid call reported through ``post_tool_call_failure`` and
            ``on_tool_error``), ``"retry"`` or ``"skipped"`` (an
            ``invalid_tool_call`` hook answered; no failure points fired),
            ``"passed"`` (an invalid call every ``invalid_tool_call`` hook
            passed on, with ``gate(..., passing=True)``: the framework's own
            handling applies; no failure points fired).
        call: The effective call: its name after a ``repair``, its args after
            ``transform_tool_input`` (``{}`` when the model's were not a mapping).
        text: What the model reads when the tool does not run; ``""`` for ``"run"``.
        rewritten: Whether an input transform returned new args.
        decided_by: The hook that denied, skipped, asked a retry or failed the call.
        error: What was wrong with a ``"failed"`` or ``"passed"`` call (a `LookupError` or a `TypeError`), else
            ``None``.
        kind: ``NOT_FOUND`` or ``INVALID_ARGS`` for a ``"failed"`` or ``"passed"`` call, else ``None``.
    """

    status: Literal["run", "denied", "failed", "retry", "skipped", "passed"]
    call: ToolCallRequest
    text: str = ""
    rewritten: bool = False
    decided_by: str | None = None
    error: Exception | None = None
    kind: ToolErrorKind | None = None

    @property
    def allowed(self) -> bool:
        """``True`` only when the tool may run (`status` is ``"run"``)."""
        return self.status == "run"

    def __bool__(self) -> bool:
        msg = f"Cannot take the truth value of {self!r}: read `.allowed` to know whether the tool may run."
        raise HookTypeError(msg)


def _problem(
    name: str,
    args: object,
    known: Collection[str],
    offered: Collection[str] | None,
    validate: Validator | None,
) -> tuple[ToolErrorKind, Exception] | None:
    """What is wrong with a call before any hook sees it, or ``None``."""
    if name not in known:
        return ToolErrorKind.NOT_FOUND, LookupError(
            f"unknown tool {name!r}; the tools offered are: {_choices(known, offered)}"
        )
    if offered is not None and name not in offered:
        return ToolErrorKind.NOT_FOUND, LookupError(
            f"tool {name!r} was not offered for this turn; the tools offered are: {_choices(known, offered)}"
        )
    if not isinstance(args, Mapping):
        return ToolErrorKind.INVALID_ARGS, TypeError(
            f"bad arguments for {name!r}: expected a JSON object, got {type(args).__name__}"
        )
    invalid = _check(validate, name, args)
    if invalid:
        return ToolErrorKind.INVALID_ARGS, TypeError(f"bad arguments for {name!r}: {invalid}")
    return None


def _choices(known: Collection[str], offered: Collection[str] | None) -> str:
    """The tools a model may call, sorted, for a not-found message."""
    return ", ".join(sorted(_available(known, offered))) or "none"


def _check(validate: Validator | None, name: str, args: Mapping[str, object]) -> str:
    """The validator's error text for `args`, or ``""`` when they fit (or there is no validator)."""
    if validate is None:
        return ""
    try:
        invalid = validate(name, args)
    except Exception as exc:  # noqa: BLE001 -- a schema check that raises reports invalid arguments
        return str(exc) or type(exc).__name__
    return "" if invalid is None else str(invalid)


def _available(known: Collection[str], offered: Collection[str] | None) -> list[str]:
    return sorted(known if offered is None else set(known) & set(offered))


def gate(  # noqa: PLR0913 -- the call's three parts and the three things a framework knows about its tools
    registry: HookRegistry,
    run: RunContext,
    tool_name: str,
    call_id: str,
    args: object,
    *,
    known: Collection[str],
    offered: Collection[str] | None = None,
    validate: Validator | None = None,
    passing: bool = False,
) -> Steps[GateResult]:
    """Decide whether one tool call runs, and with which arguments (DESIGN §8, "A tool call").

    An unknown tool (not in `known`), a tool not in `offered` (``None``: all
    known tools are offered), arguments that are not a mapping, or arguments
    `validate` rejects go to ``invalid_tool_call`` first (``args={}`` and the
    model's value as ``raw_args`` for a non-mapping): ``fail`` reports the
    call as failed (``post_tool_call_failure``, then ``on_tool_error`` with
    kind ``NOT_FOUND`` or ``INVALID_ARGS``; a ``fail`` reason is the message
    ``on_tool_error`` starts from); ``retry`` and ``skip`` hand their text
    to the model; ``repair`` renames the call, which is checked again (a
    renamed call that is still invalid fails, without asking again) and goes
    through the gate; ``stop`` raises `StopRun` with its reason. With
    `passing`, an invalid call every hook there passed on (none answered) is
    the framework's to handle as if nobody listened (DESIGN §8): the result
    is ``"passed"``, before any failure point.

    A valid call goes through ``transform_tool_input`` then
    ``pre_tool_call_decide`` on the transformed args (`resolve_tool_call`,
    which fires ``permission_denied`` on a deny). An ``ask`` goes to `ask`;
    when it is not approved, ``permission_denied`` fires. The tool runs only
    when the final verdict's ``.allowed`` is true; otherwise the model reads
    the deny's reason, or ``"Tool call denied by hook 'x'."`` when that is
    empty. Args an input transform rewrote are checked with `validate`
    again: a failure there is reported like a tool failure (``INVALID_ARGS``).

    Returns:
        A `GateResult`: ``.allowed`` and ``.call`` to run, else ``.text`` for the model.

    Example:
        From an async framework callback (from sync code: `run_flow`)::

            verdict = await arun_flow(registry, gate(registry, run, name, call_id, raw_args, known=names))
            if not verdict.allowed:
                return verdict.text  # the tool never runs
            try:
                raw = await tool(**verdict.call.args)
            except Exception as exc:
                return await arun_flow(registry, failed(registry, run, verdict.call, exc))
            return await arun_flow(registry, succeeded(registry, run, verdict.call, raw))

    Raises:
        StopRun: An ``invalid_tool_call`` hook answered ``stop``, or a hook raised it.
    """
    call = ToolCallRequest(call_id, tool_name, args if isinstance(args, Mapping) else {})
    problem = _problem(tool_name, args, known, offered, validate)
    if problem is not None:
        action = InvalidToolCallAction.fail()
        if registry.has_hooks(P.INVALID_TOOL_CALL):
            ctx = InvalidToolCallContext(
                tool_name=tool_name,
                args=call.args,
                call_id=call_id,
                available_tools=_available(known, offered),
                error=str(problem[1]),
                raw_args=args,
                run=run,
            )
            action = yield Dispatch("decide", P.INVALID_TOOL_CALL, ctx)
            if passing and action.kind == "fail" and action.decided_by is None:
                kind, error = problem
                return GateResult(status="passed", call=call, text=str(error), error=error, kind=kind)
        if action.kind == "stop":
            stop = StopRun(action.reason or f"Run stopped by {_by(action)} on an invalid call to {tool_name!r}.")
            stop.hook = action.decided_by
            log("info", "run_stopped", point=str(P.INVALID_TOOL_CALL), hook=action.decided_by, reason=stop.reason)
            raise stop
        if action.kind in ("retry", "skip"):
            text = (action.feedback if action.kind == "retry" else action.reason) or (
                f"Tool call {tool_name!r} skipped by {_by(action)}."
            )
            status: Literal["retry", "skipped"] = "retry" if action.kind == "retry" else "skipped"
            return GateResult(status=status, call=call, text=text, decided_by=action.decided_by)
        if action.kind == "repair" and action.tool_name:
            call = dataclasses.replace(call, tool_name=action.tool_name)
            problem = _problem(call.tool_name, call.args, known, offered, validate)
        if problem is not None:
            kind, error = problem
            text = yield from failed(registry, run, call, error, kind=kind, message=action.reason or None)
            return GateResult(
                status="failed", call=call, text=text, decided_by=action.decided_by, error=error, kind=kind
            )
    return (yield from _resolve(registry, run, call, validate))


def approved_copy(tool_name: str, args: object) -> Any:
    """A copy of a call's `args` that nothing changed in place later reaches (DESIGN §3).

    A mapping is copied as the tool would get it (`approved_args`: deep, a value
    that refuses a copy shared and logged); anything else a framework holds as
    args (malformed JSON text, say) deep-copied, or kept when it refuses.
    """
    if isinstance(args, Mapping):
        return approved_args(tool_name, args)
    import copy  # noqa: PLC0415 -- only for a call whose args are no mapping

    try:
        return copy.deepcopy(args)
    except Exception:  # noqa: BLE001 -- a value that cannot be copied is compared as it is
        return args


def _resolve(
    registry: HookRegistry, run: RunContext, call: ToolCallRequest, validate: Validator | None
) -> Steps[GateResult]:
    """Transform and gate a valid call; settle an ``ask``; deny unless the verdict allows."""
    verdict, rewritten = HookResult.allow(), False
    if registry.has_hooks(P.TRANSFORM_TOOL_INPUT) or registry.has_hooks(P.PRE_TOOL_CALL_DECIDE):
        ctx = PreToolCallDecideContext(tool_name=call.tool_name, args=call.args, call_id=call.call_id, run=run)
        resolution: ToolCallResolution = yield Dispatch("resolve_tool_call", P.PRE_TOOL_CALL_DECIDE, ctx)
        verdict, rewritten = resolution.result, resolution.rewritten
        # resolution.args is the deep copy resolve took before the first gate: what the gates approved, which
        # no hook, framework or caller changing a nested value in place afterwards can change
        call = ToolCallRequest(call.call_id, call.tool_name, dict(resolution.args))
    if verdict.decision is Decision.ASK:
        verdict = yield from ask(registry, run, verdict, call.tool_name)
        if not verdict.allowed:  # resolve_tool_call fired permission_denied for a deny, not for an ask
            settled = verdict
            yield from _notify(
                registry,
                P.PERMISSION_DENIED,
                lambda: PermissionDeniedContext(
                    tool_name=call.tool_name,
                    args=call.args,
                    call_id=call.call_id,
                    reason=settled.reason,
                    decided_by=settled.decided_by,
                    run=run,
                ),
            )
    if not verdict.allowed:
        text = verdict.reason or f"Tool call denied by {_by(verdict)}."
        return GateResult(status="denied", call=call, text=text, rewritten=rewritten, decided_by=verdict.decided_by)
    invalid = _check(validate, call.tool_name, call.args) if rewritten else ""
    if invalid:
        error = TypeError(f"bad arguments for {call.tool_name!r} after transform_tool_input: {invalid}")
        text = yield from failed(registry, run, call, error, kind=ToolErrorKind.INVALID_ARGS)
        return GateResult(
            status="failed", call=call, text=text, rewritten=True, error=error, kind=ToolErrorKind.INVALID_ARGS
        )
    return GateResult(status="run", call=call, rewritten=rewritten)


# --- the tool call, after it ran -------------------------------------------------------


def succeeded(  # noqa: PLR0913 -- the call, its result, and what the framework measured
    registry: HookRegistry,
    run: RunContext,
    call: ToolCallRequest,
    raw: object,
    *,
    presentation: str | None = None,
    duration_ms: float = 0.0,
    metadata: Mapping[str, object] | None = None,
) -> Steps[str]:
    """A tool returned: ``transform_tool_result`` then ``post_tool_call``; return the text the model reads.

    `presentation` is the framework's own text for `raw`; by default strings
    as they are, anything else as JSON (`present`). Each point is skipped
    when it has no hooks.
    """
    text = present(raw) if presentation is None else presentation
    if registry.has_hooks(P.TRANSFORM_TOOL_RESULT):
        shown = TransformToolResultContext(
            tool_name=call.tool_name, args=call.args, call_id=call.call_id, raw_result=raw, presentation=text, run=run
        )
        text = yield Dispatch("transform", P.TRANSFORM_TOOL_RESULT, shown)
    final = text
    yield from _notify(
        registry,
        P.POST_TOOL_CALL,
        lambda: PostToolCallContext(
            tool_name=call.tool_name,
            args=call.args,
            call_id=call.call_id,
            result=final,
            raw_result=raw,
            duration_ms=duration_ms,
            metadata=metadata or {},
            run=run,
        ),
    )
    return text


def failed(  # noqa: PLR0913 -- the call, its error, and what the framework knows about it
    registry: HookRegistry,
    run: RunContext,
    call: ToolCallRequest,
    error: BaseException,
    *,
    kind: ToolErrorKind | None = None,
    message: str | None = None,
    duration_ms: float = 0.0,
) -> Steps[str]:
    """A tool failed: ``post_tool_call_failure`` then ``on_tool_error``; return the text the model reads.

    Use it for an exception and for a failure the framework reports its own
    way (an error result: pass an exception describing it). `kind` defaults
    to ``TIMEOUT`` for a `TimeoutError`, else ``EXCEPTION``; `message`, the
    text ``on_tool_error`` starts from, defaults to ``"Error: <Type>: <text>"``.
    """
    if kind is None:
        kind = ToolErrorKind.TIMEOUT if isinstance(error, TimeoutError) else ToolErrorKind.EXCEPTION
    text = error_text(error) if message is None else message
    yield from _notify(
        registry,
        P.POST_TOOL_CALL_FAILURE,
        lambda: PostToolCallFailureContext(
            tool_name=call.tool_name,
            args=call.args,
            call_id=call.call_id,
            error=error,
            duration_ms=duration_ms,
            run=run,
        ),
    )
    if registry.has_hooks(P.ON_TOOL_ERROR):
        ctx = OnToolErrorContext(
            tool_name=call.tool_name,
            args=call.args,
            call_id=call.call_id,
            error=error,
            kind=kind,
            message=text,
            run=run,
        )
        text = yield Dispatch("transform", P.ON_TOOL_ERROR, ctx)
    return text


def error_text(error: BaseException) -> str:
    """What the model reads of a failed tool when no ``on_tool_error`` hook rewrites it: ``"Error: <Type>: <text>"``."""
    return f"Error: {describe(error)}"


def unanswered(call_ids: Iterable[str], answered: Collection[str]) -> list[tuple[str, str]]:
    """After a stop: ``(call_id, STOPPED_NOTICE)`` for each call of the batch that has no tool message yet.

    Append one tool message per pair, so the history never holds a dangling tool call.
    """
    return [(call_id, STOPPED_NOTICE) for call_id in call_ids if call_id not in answered]


# --- the run ----------------------------------------------------------------------------


def outcome_for(error: BaseException, turns: int = 0) -> RunOutcome:
    """How a run that raised `error` ended.

    `StopRun` → ``stopped`` with its reason; an `Exception` → ``failed``
    (reason: `describe`); anything else (`asyncio.CancelledError`,
    `KeyboardInterrupt`, `GeneratorExit`, `SystemExit`) → ``cancelled``.
    """
    if isinstance(error, StopRun):
        return RunOutcome(status="stopped", reason=error.reason, turns=turns)
    if isinstance(error, Exception):
        return RunOutcome(status="failed", reason=describe(error), turns=turns)
    return RunOutcome(status="cancelled", reason=describe(error), turns=turns)


@final
class RunState:
    """One run's lifecycle: session start, prompt gate, turns, the stop decision and the session end.

    Build one per run (never per wiring object: a middleware or a hooks
    object may serve several runs, concurrently). Its flows are step
    generators like every flow here: run them with `run_flow` / `arun_flow` and
    the same registry.

    Attributes:
        registry: The hooks.
        run: The run's context; `turn` replaces it with the new turn's.
        goal: The run's goal (``on_session_start``), also the prompt gated by
            ``user_prompt_submit`` and shown to ``pre_turn``.
        turns: Turns started so far (the current turn's number).
        continuations: How often ``stop`` kept the run going.
        ended: Whether `end` ran.
        outcome: The outcome `end` reported, or ``None``.
    """

    __slots__ = ("_new_turn", "_run", "_started", "continuations", "ended", "goal", "outcome", "registry", "turns")

    def __init__(self, registry: HookRegistry, run: RunContext, goal: str = "") -> None:
        """Track one run in `run` (turns counted from 1, whatever `run.turn` holds)."""
        self.registry: HookRegistry = registry
        self._run = run
        self._new_turn = False  # `turn` started one whose context nobody read yet
        self.goal: str = goal
        self.turns: int = 0
        self.continuations: int = 0
        self.ended: bool = False
        self.outcome: RunOutcome | None = None
        self._started = False

    def __repr__(self) -> str:
        return f"RunState(run_id={self._run.run_id!r}, turns={self.turns}, ended={self.ended})"

    @property
    def run(self) -> RunContext:
        """The run's context, of the current turn: built when first read in the turn (no hook listening, never)."""
        if self._new_turn:
            self._new_turn = False
            self._run = replace(self._run, turn=self.turns, turn_scratchpad=self._run.scratchpad.child())
        return self._run

    @run.setter
    def run(self, run: RunContext) -> None:
        self._run, self._new_turn = run, False

    def start(self) -> Steps[RunOutcome | None]:
        """``on_session_start`` (once), then ``user_prompt_submit`` on `goal`.

        Returns:
            ``None`` to go on, or the ``stopped`` outcome of a deny (an
            ``ask`` goes to `ask`: not approved is a deny). The caller ends
            the run with it (`end`, or raise ``StopRun(outcome.reason)``).
        """
        registry, run = self.registry, self.run
        if not self._started:
            self._started = True
            yield from _notify(
                registry,
                P.ON_SESSION_START,
                lambda: OnSessionStartContext(session_id=run.session_id, goal=self.goal, run=run),
            )
        verdict = HookResult.allow()
        if registry.has_hooks(P.USER_PROMPT_SUBMIT):
            submitted = UserPromptSubmitContext(content=self.goal, run=run)
            verdict = yield Dispatch("decide", P.USER_PROMPT_SUBMIT, submitted)
        return (yield from self._gated(verdict, "the prompt", self.turns))

    def turn(self, prompt: str | None = None) -> Steps[RunOutcome | None]:
        """Start the next turn: a new `run` (turn + 1, a fresh `turn_scratchpad`), then ``pre_turn``.

        Args:
            prompt: What ``pre_turn`` shows as the prompt (default: `goal`).

        Returns:
            ``None`` to call the model, or the ``stopped`` outcome of a deny
            (``turns`` counts the turns before this one).
        """
        self.turns += 1
        self._new_turn = True
        verdict = HookResult.allow()
        if self.registry.has_hooks(P.PRE_TURN):
            ctx = PreTurnContext(prompt=self.goal if prompt is None else prompt, turn=self.turns, run=self.run)
            verdict = yield Dispatch("decide", P.PRE_TURN, ctx)
        return (yield from self._gated(verdict, f"turn {self.turns}", self.turns - 1))

    def _gated(self, verdict: HookResult, what: str, turns: int) -> Steps[RunOutcome | None]:
        """``None`` when `verdict` (an ``ask`` settled first) lets `what` go on, else a ``stopped`` outcome."""
        if verdict.allowed:  # the common case: no context to build for `ask`
            return None
        verdict = yield from ask(self.registry, self.run, verdict)
        if verdict.allowed:
            return None
        reason = verdict.reason or f"{what[0].upper()}{what[1:]} was denied by {_by(verdict)}."
        return RunOutcome(status="stopped", reason=reason, turns=turns)

    def stop(self, response_text: str) -> Steps[str | None]:
        """The agent wants to stop: ask ``stop``.

        An allow stops. A deny keeps the run going with its reason as
        feedback. An ``ask`` asks ``on_interaction`` whether to stop: approval
        stops, anything else keeps going with the ask's reason as feedback.

        Returns:
            ``None`` to stop, or the feedback (a user message) to keep going with.
        """
        if not self.registry.has_hooks(P.STOP):
            return None
        ctx = StopContext(response_text=response_text, continuation_count=self.continuations, run=self.run)
        verdict: HookResult = yield Dispatch("decide", P.STOP, ctx)
        if verdict.allowed:
            return None
        if verdict.decision is Decision.ASK:
            answer = yield from ask(self.registry, self.run, verdict)
            if answer.allowed:
                return None
        self.continuations += 1
        return verdict.reason or f"Keep going: {_by(verdict)} did not let the run stop."

    def model_call(
        self, base: RequestPatch, default_model: str, history: Callable[[], Sequence[Message]]
    ) -> Steps[tuple[RequestPatch, str]]:
        """Before a model call of the current turn: ``pre_model_call`` merges the patch, ``model_select`` picks.

        Args:
            base: The call as the loop would make it, ``RequestPatch(active_tools=<the tools offered>)``.
            default_model: The name of the model the call would go to.
            history: Builds the messages ``pre_model_call`` shows; called only when a hook listens there.

        Returns:
            The patch for this call (`base` itself when no hook listens) and the name of the model it goes to
            (`default_model` when no hook picked another). The loop applies both to this very call.
        """
        registry, run = self.registry, self.run
        patch = base
        if registry.has_hooks(P.PRE_MODEL_CALL):
            ctx = PreModelCallContext(prompt=self.goal, history=history(), turn=run.turn, patch=base, run=run)
            patch = yield Dispatch("transform", P.PRE_MODEL_CALL, ctx)
        name = default_model
        if registry.has_hooks(P.MODEL_SELECT):
            select = ModelSelectContext(default_model=default_model, selected_model=default_model, patch=patch, run=run)
            name = yield Dispatch("transform", P.MODEL_SELECT, select)
        return patch, name

    def answered(  # noqa: PLR0913 -- what the model answered, as model_turn_finished shows it
        self,
        text: str,
        tool_calls: Sequence[ToolCallRequest],
        *,
        raw_finish_reason: str | None,
        normalised: str | None = None,
        max_tokens: int | None = None,
        usage: Mapping[str, int] | None = None,
        message_id: str | None = None,
        model: str | None = None,
    ) -> Steps[TurnAction]:
        """The model answered: ``model_turn_finished`` decides; an accepted answer then fires ``post_turn``.

        Args:
            text: The answer's text.
            tool_calls: The calls it asks for.
            raw_finish_reason: The provider's own spelling of why it stopped.
            normalised: A spelling `finish_reason` maps, when the framework normalised it already
                (default: `raw_finish_reason`).
            max_tokens: The output cap the call was made with.
            usage: Token counts.
            message_id: The provider's id of the answer.
            model: The model that answered.

        Returns:
            ``continue`` (also when no hook listens), or ``repeat`` / ``feedback`` for an answer that called no
            tool: the loop drops the answer (``repeat``) or keeps it and adds the feedback as a user message.

        Raises:
            HookValueError: A hook asked to retry an answer that called tools (they would be lost).
        """
        registry, run = self.registry, self.run
        action = _CONTINUE
        if registry.has_hooks(P.MODEL_TURN_FINISHED):
            ctx = ModelTurnFinishedContext(
                turn=run.turn,
                text=text,
                tool_calls=tool_calls,
                finish_reason=finish_reason(raw_finish_reason if normalised is None else normalised),
                raw_finish_reason=raw_finish_reason,
                max_tokens=max_tokens,
                usage=usage or {},
                message_id=message_id,
                model=model,
                run=run,
            )
            action = yield Dispatch("decide", P.MODEL_TURN_FINISHED, ctx)
            if action.kind != "continue" and tool_calls:
                raise refused_retry(run.turn, action.decided_by, [call.tool_name for call in tool_calls])
        if action.kind == "continue":
            yield from _notify(
                registry, P.POST_TURN, lambda: PostTurnContext(turn=run.turn, response_text=text, run=run)
            )
        return action

    def deltas(self) -> Deltas:
        """The delta points of one streamed model call of the current turn."""
        return Deltas(self.registry, self.run)

    def end(self, outcome: RunOutcome, error: BaseException | None = None) -> Steps[None]:
        """Fire ``on_session_end`` with `outcome`, once per run whatever the path (later calls do nothing).

        Pass the exception that is ending the run as `error`: a failure of an
        ``on_session_end`` observer (even under ``on_error="raise"``, even a
        `StopRun`) then never replaces it — dispatch has logged it, and the
        caller re-raises `error`. Without `error`, a `StopRun` from an
        observer is ignored (the run is ending already) and other failures
        propagate.
        """
        if self.ended:
            return
        self.ended, self.outcome = True, outcome
        if not self.registry.has_hooks(P.ON_SESSION_END):
            return
        ctx = OnSessionEndContext(session_id=self.run.session_id, outcome=outcome, run=self.run)
        if error is None:
            with contextlib.suppress(StopRun):
                yield Dispatch("notify", P.ON_SESSION_END, ctx)
            return
        try:
            yield Dispatch("notify", P.ON_SESSION_END, ctx)
        except GeneratorExit:
            raise
        except BaseException:  # noqa: BLE001 -- never replace the exception ending the run (DESIGN §5)
            pass

    def end_with(self, error: BaseException) -> Steps[None]:
        """`end` with the outcome of `error` (`outcome_for`); the caller re-raises `error` afterwards."""
        return self.end(outcome_for(error, self.turns), error)


_CONTINUE: Final = TurnAction.continue_run()


# --- runs paused for a human ---------------------------------------------------------

NOT_RESUMED: Final = "the run was paused and never resumed"
"""The reason of the ``cancelled`` outcome a paused run ends with when nothing resumes it."""


class _Paused(Protocol):
    """A run as an adapter keeps it while it is paused: what its `RunState` is."""

    @property
    def state(self) -> RunState: ...  # pragma: no cover -- a protocol's member is never called


def cancel_paused(states: Iterable[RunState], reason: str = NOT_RESUMED) -> None:
    """End the session of each paused run that has not ended: ``cancelled``, for `reason` (DESIGN §8).

    For code that cannot await (a finalizer, interpreter exit): an async
    ``on_session_end`` hook is awaited in an event loop of its own, in a
    thread of its own when this thread runs a loop. Nobody is left to raise
    to, so a failing hook is logged by dispatch and goes no further.
    """
    for state in states:
        if state.ended:
            continue
        steps = state.end(RunOutcome(status="cancelled", reason=reason, turns=state.turns))
        if awaits(state.registry, (P.ON_SESSION_END,)) and _loop_running():
            worker = threading.Thread(target=_end_alone, args=(state.registry, steps), name="hookreg-session-end")
            worker.start()
            worker.join()
        else:
            _end_alone(state.registry, steps)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _end_alone(registry: HookRegistry, steps: Steps[None]) -> None:
    """Run an end flow nobody awaits; a failure goes no further (dispatch logged it, nobody is left to raise to)."""
    with contextlib.suppress(Exception):
        if awaits(registry, (P.ON_SESSION_END,)):
            asyncio.run(arun_flow(registry, steps))
        else:
            run_flow(registry, steps)


def _cancel_kept(runs: Mapping[object, _Paused | None], reason: str) -> None:
    cancel_paused([run.state for run in list(runs.values()) if run is not None], reason)


def keep_paused(owner: object, runs: Mapping[Any, _Paused | None], reason: str = NOT_RESUMED) -> None:
    """Make `runs` — the runs `owner` (a wiring object) keeps, by any key, until they resume — end when it goes.

    Each run still in `runs` when `owner` is collected, or at interpreter
    exit, ends ``cancelled`` for `reason` (`cancel_paused`); ``None`` values (an
    adapter's marker for a key no run resumes) are skipped. `runs` must not
    hold `owner` itself, or it is never collected.
    """
    weakref.finalize(owner, _cancel_kept, runs, reason)


class Deltas:
    """The delta points of one streamed model call: each fires with the text aggregated so far in this call.

    Build one per model call (`RunState.deltas`); blocking calls fire none (DESIGN §1).
    """

    __slots__ = ("_reasoning", "_registry", "_run", "_text")

    def __init__(self, registry: HookRegistry, run: RunContext) -> None:
        """Aggregate from nothing, for `run`'s current turn."""
        self._registry, self._run = registry, run
        self._text = self._reasoning = ""

    def text(self, delta: str) -> Steps[None]:
        """``text_delta``: more answer text."""
        self._text += delta
        aggregated, run = self._text, self._run
        yield from _notify(
            self._registry, P.TEXT_DELTA, lambda: TextDeltaContext(delta=delta, aggregated=aggregated, run=run)
        )

    def reasoning(self, delta: str) -> Steps[None]:
        """``reasoning_delta``: more reasoning text."""
        self._reasoning += delta
        aggregated, run = self._reasoning, self._run
        yield from _notify(
            self._registry,
            P.REASONING_DELTA,
            lambda: ReasoningDeltaContext(delta=delta, aggregated=aggregated, run=run),
        )

    def tool_call(self, call_id: str, tool_name: str | None, delta: str) -> Steps[None]:
        """``tool_call_delta``: more of a tool call's arguments (`tool_name` ``None`` when not known yet)."""
        run = self._run
        yield from _notify(
            self._registry,
            P.TOOL_CALL_DELTA,
            lambda: ToolCallDeltaContext(call_id=call_id, tool_name=tool_name, delta=delta, run=run),
        )
