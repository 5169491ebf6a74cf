"""Drive an OpenAI Agents SDK run from a HookRegistry (``pip install 'hookreg[openai-agents]'``).

Attach it with ``hooks = hookreg_run_hooks(registry)``, wrap the agent's tools
with ``guard_tools(tools, registry)``, and start runs with ``await hooks.run(agent, input)``.
See the adapter's docs page (docs/adapters/openai-agents.md) for where each
hook point runs, and its limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import dataclasses
import inspect
import json
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, cast, get_type_hints

from hookreg import (
    HookPoint,
    HookRegistry,
    HookTypeError,
    HookValueError,
    Message,
    RequestPatch,
    RunContext,
    RunOutcome,
    StopRun,
    ToolCallRequest,
    ToolErrorKind,
    TurnAction,
)
from hookreg._lifecycle import (
    ANSWER_POINTS,
    MODEL_CALL_POINTS,
    STOPPED_NOTICE,
    SUCCESS_POINTS,
    Deltas,
    GateResult,
    RunState,
    Steps,
    arun_flow,
    failed,
    gate,
    keep_paused,
    listens,
    missing_framework,
    present,
    require_registry,
    require_release,
    succeeded,
)

__all__ = ["HookregRunHooks", "guard_tool", "guard_tools", "hookreg_run_hooks"]

require_release("openai_agents", "openai-agents", (0, 23, 1))  # 0.23.1: evaluate_function_tool_approval

try:
    from agents import (
        Agent,
        AgentHookContext,
        FunctionTool,
        ItemHelpers,
        Model,
        ModelProvider,
        ModelResponse,
        ModelRetryAdvice,
        ModelRetryAdviceRequest,
        ModelSettings,
        RawResponsesStreamEvent,
        RunConfig,
        RunContextWrapper,
        RunHooks,
        Runner,
        RunResult,
        RunResultStreaming,
        StreamEvent,
        Tool,
        ToolApprovalItem,
        ToolErrorFormatterArgs,
        ToolTimeoutError,
        Usage,
        UserError,
    )
    from agents.lifecycle import RunHooksBase
    from agents.models import get_default_model, get_default_model_settings
    from agents.run_config import CallModelData, ModelInputData
    from agents.run_state import RunState as SavedRun
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
    raise missing_framework("openai_agents", "openai-agents", _error) from _error


# --- tools ----------------------------------------------------------------------------------

_Formatter = Callable[[ToolContext[Any], BaseException], Awaitable["str | None"]]
_Approval = Callable[[RunContextWrapper[Any], str, str], Awaitable[bool]]


def _raising_copy(tool: FunctionTool) -> tuple[FunctionTool, _Formatter, _Approval]:
    """A copy of `tool` whose invoker raises the tool's exceptions, its own error formatter, and its approval rule.

    The one use of SDK internals in this adapter, isolated here. To observe a
    failure (``post_tool_call_failure``, ``on_tool_error``) the adapter needs
    the exception, but a function tool's invoker turns it into the text of
    the tool's ``failure_error_function`` and the SDK offers no public way to
    read or unset that formatter on a built tool. ``copy.copy`` is the SDK's
    supported way to copy a `FunctionTool` (``FunctionTool.__copy__`` rebinds
    the invoker to the copy); ``set_function_tool_failure_error_function``
    and ``maybe_invoke_function_tool_failure_error_function`` (``agents.tool``,
    documented as internal) unset the copy's formatter and call the
    original's. The gate judges a call before the SDK asks a human about it,
    so the copy's ``needs_approval`` asks the SDK's own rule about the
    arguments the gate approved: ``evaluate_function_tool_approval``
    (``agents.util._approvals``) applied to the original tool, which also
    holds arguments its validation would change, whatever the tool's
    predicate says. ``test_private_sdk_seam_still_holds`` fails loudly when
    the SDK changes them.

    Returns:
        The raising copy; ``formatter(ctx, error)``: the text the SDK
        would show the model for `error` (``None`` when the tool was built
        with ``failure_error_function=None``, i.e. asks errors to propagate);
        and ``approval(context, arguments_json, call_id)``: whether the SDK
        holds that call for a human's approval.
    """
    from agents.tool import (  # noqa: PLC0415 -- internal names, imported only by this seam
        maybe_invoke_function_tool_failure_error_function,
        set_function_tool_failure_error_function,
    )
    from agents.util._approvals import evaluate_function_tool_approval  # noqa: PLC0415 -- the same seam

    raising = copy.copy(tool)
    set_function_tool_failure_error_function(raising, None)

    async def formatter(ctx: ToolContext[Any], error: BaseException) -> str | None:
        # The SDK formats a tool's own CancelledError with this very function, though it is typed for Exception.
        failure = cast("Exception", error)
        return await maybe_invoke_function_tool_failure_error_function(function_tool=tool, context=ctx, error=failure)

    async def approval(context: RunContextWrapper[Any], arguments: str, call_id: str) -> bool:
        evaluation = await evaluate_function_tool_approval(tool, context, arguments, call_id)
        return evaluation.outcome == "require_approval"

    return raising, formatter, approval


def _model_arguments(input_json: str | None) -> object:
    """The model's tool arguments: the parsed JSON value, ``{}`` for no text (or none at all), else the text itself."""
    if input_json is None or not input_json.strip():
        return {}
    try:
        return json.loads(input_json)
    except ValueError:
        return input_json


def guard_tool(tool: FunctionTool, registry: HookRegistry) -> FunctionTool:
    """Return a copy of `tool` whose every call runs `registry`'s tool hooks.

    The SDK has no input-rewrite point and runs its own tool guardrails on the
    model's raw arguments, so the copy wraps the tool's invoker and drives
    the run contract's tool call (`hookreg._lifecycle.gate`): arguments that
    are not a JSON object (malformed JSON, a list, a string) go to
    ``invalid_tool_call`` with ``args={}`` and ``raw_args`` the parsed value
    (the model's text when it is not JSON at all) and never reach the tool;
    then ``transform_tool_input``, ``pre_tool_call_decide`` on the rewritten
    call, an ``ask`` through ``notification`` and ``on_interaction``; a
    non-allow result returns its text as the tool output the model sees and
    the tool never runs. An exception from the tool fires
    ``post_tool_call_failure``, then ``on_tool_error`` chains over the text
    the tool's own ``failure_error_function`` would have shown (the SDK's
    default formatter unless the tool set one); a tool created with
    ``failure_error_function=None`` and no ``on_tool_error`` hook re-raises,
    as the SDK would. A call outliving the tool's ``timeout_seconds`` fails
    the same way with kind ``TIMEOUT`` over the tool's timeout text (or
    raises `ToolTimeoutError` under ``timeout_behavior="raise_exception"``);
    a `CancelledError` the tool raises itself fails the call too, as the SDK
    makes it (the run's own cancellation propagates).

    A tool that may ask a human (``needs_approval`` set) is gated before the
    SDK asks: the copy's ``needs_approval`` runs the gate, then the SDK's own
    approval rule (the tool's predicate, and the SDK's holding of arguments
    its validation would change) on the arguments the gate approved, so a
    denied call is never shown to a human and the predicate judges what will
    run. The invoker then reuses that verdict, in the same run and turn, for
    the same arguments (one gate per call, also when `HookregRunHooks.run`
    resumes the approved run); a call the SDK holds without asking the
    predicate (arguments that are not a JSON object), approves without
    asking it (a sticky ``always_approve``), or resumes in a run hookreg
    cannot tie to the paused one, is gated when it runs.
    A result passes through ``transform_tool_result`` and
    ``post_tool_call``. A `StopRun` from a hook ends the run's session as
    ``stopped`` and propagates (the SDK wraps it in ``UserError``; the entry
    points of `HookregRunHooks` unwrap it). A call inside a run driven by
    `HookregRunHooks` gets that run's `hookreg.RunContext`, else a fresh
    detached one.

    Args:
        tool: A function tool, e.g. from ``@function_tool``.
        registry: The hooks to run.

    Returns:
        A new `FunctionTool` with the same name, schema and options; `tool`
        itself when it is already guarded by `registry`.

    Raises:
        HookTypeError: `tool` is not a `FunctionTool` (also a `TypeError`),
            or `registry` is not a `HookRegistry`.
    """
    require_registry(registry, f"a guarded tool for {tool!r}")
    if not isinstance(tool, FunctionTool):
        msg = (
            f"Cannot guard {tool!r}: only FunctionTool calls pass through Python code the adapter can hook. "
            "Pass function tools, or use guard_tools() to leave hosted tools as they are."
        )
        raise HookTypeError(msg)
    if _GUARDS.get(tool.on_invoke_tool) is registry:
        return tool  # guarded already (an agent cloned with its guarded tools): gating again would judge twice
    guarded, formatter, sdk_approval = _raising_copy(tool)
    invoke = guarded.on_invoke_tool
    # The SDK enforces timeout_seconds by cancelling the invoker, which would leave the hooks no failure to see:
    # the guarded copy enforces it inside instead, as a failure with kind TIMEOUT.
    limit, guarded.timeout_seconds = tool.timeout_seconds, None
    # Verdicts given before the SDK's approval, for the invoker once the call is approved: kept per run (a resumed
    # run is the run it resumes, see _live) and turn, by call id; taken on use, and reused only for the very
    # arguments they judged. Another run, or a later turn, repeating the call id and arguments is gated afresh.
    judged: _Verdicts = {}

    async def call_tool(ctx: ToolContext[Any], input_json: str) -> Any:
        run = _live(ctx.usage)
        context = run.state.run if run else RunContext()
        try:
            verdict = await _verdict(registry, tool.name, run, ctx, input_json, judged=judged.get(id(_scope(run, ctx))))
            if not verdict.allowed:
                return verdict.text
            call = verdict.call
            arguments = json.dumps(dict(call.args)) if verdict.rewritten else input_json
            started = time.perf_counter()
            deadline = None if limit is None else asyncio.timeout(limit)  # a timeout scope costs even unbounded
            try:
                async with deadline or _UNBOUNDED:
                    raw = await invoke(ctx, arguments)
            except StopRun:
                raise
            except (Exception, asyncio.CancelledError) as exc:
                if isinstance(exc, asyncio.CancelledError) and _being_cancelled():
                    raise  # the run is cancelled; a CancelledError the tool raised itself fails the call, as in the SDK
                ms = (time.perf_counter() - started) * 1000
                if deadline is not None and limit is not None and deadline.expired():
                    return await _timed_out(tool, registry, context, call, ctx, limit=limit, ms=ms)
                base = await formatter(ctx, exc)
                if base is None and not registry.has_hooks(HookPoint.ON_TOOL_ERROR):
                    raise
                message = str(exc) if base is None else base
                text = await arun_flow(registry, failed(registry, context, call, exc, message=message, duration_ms=ms))
                if base is None and text is message:
                    raise  # the tool asks its errors to propagate, and no on_tool_error hook worded this one
                return text
            return await _returned(registry, context, call, raw, started=started)
        except StopRun as stop:
            if run is not None:
                await run.end_with(stop)
            raise

    if tool.needs_approval is not False:  # a tool that never asks a human keeps the SDK's plain path
        guarded.needs_approval = _gate_first(registry, tool.name, judged, sdk_approval)
    guarded.on_invoke_tool = _described(call_tool)
    _GUARDS[call_tool] = registry
    return guarded


async def _returned(registry: HookRegistry, run: RunContext, call: ToolCallRequest, raw: Any, *, started: float) -> Any:
    """What a guarded tool that returned `raw` hands the SDK, after the result points (when a hook listens there).

    The SDK presents a result its own way: it gets the raw value unless a hook
    rewrote the text (a transform chain that returned None hands back the very
    presentation it was given).
    """
    if not _listens(registry, SUCCESS_POINTS):
        return raw
    ms = (time.perf_counter() - started) * 1000
    shown = present(raw)
    text = await arun_flow(registry, succeeded(registry, run, call, raw, presentation=shown, duration_ms=ms))
    return raw if text is shown else text


_Invoker = Callable[[ToolContext[Any], str], Awaitable[Any]]

"""The points a tool's result fires (`hookreg._lifecycle.succeeded`)."""

_UNBOUNDED: Final = contextlib.nullcontext()
"""The scope of a tool call with no ``timeout_seconds``."""


def _described(invoker: _Invoker) -> _Invoker:
    """`invoker` with its annotations resolved and its signature kept: the SDK reads both on every call.

    The SDK picks the context an invoker gets from its first parameter's
    annotation, through ``inspect.signature`` and ``typing.get_type_hints``
    on each call; this module's annotations are strings (``from __future__
    import annotations``), which ``get_type_hints`` would evaluate every time.
    """
    invoker.__annotations__ = get_type_hints(invoker)
    invoker.__dict__["__signature__"] = inspect.signature(invoker)  # read first by inspect.signature
    return invoker


_GUARDS: weakref.WeakKeyDictionary[Callable[..., Any], HookRegistry] = weakref.WeakKeyDictionary()
"""The registry of each guarded tool, by its invoker (a `FunctionTool` is an unhashable dataclass)."""

_Verdicts = dict[int, dict[str, tuple[int, object, GateResult]]]
"""A guarded tool's verdicts given before approval: by ``id`` of their `_scope`, by call id, with turn and arguments."""


def _scope(run: _Run | None, context: RunContextWrapper[Any]) -> _Run | Usage:
    """What a verdict is kept for: its run, or the SDK run's `Usage` (which all its contexts share) when detached."""
    return context.usage if run is None else run


def _kept(judged: _Verdicts, scope: _Run | Usage) -> dict[str, tuple[int, object, GateResult]]:
    """The verdicts `judged` keeps for `scope`, for as long as it lives (a `Usage` is unhashable: kept by id)."""
    key = id(scope)
    if key not in judged:
        judged[key] = {}
        weakref.finalize(scope, judged.pop, key, None)
    return judged[key]


async def _judge(registry: HookRegistry, name: str, run: _Run | None, call_id: str, arguments: object) -> GateResult:
    """The gate's verdict on one call to the function tool `name`, in `run` (a detached one without run hooks)."""
    context = run.state.run if run else RunContext()
    offered = run.offered if run else None
    return await arun_flow(registry, gate(registry, context, name, call_id, arguments, known={name}, offered=offered))


async def _verdict(  # noqa: PLR0913 -- the hooks, the call, and the verdicts already given
    registry: HookRegistry,
    name: str,
    run: _Run | None,
    ctx: ToolContext[Any],
    input_json: str,
    *,
    judged: dict[str, tuple[int, object, GateResult]] | None,
) -> GateResult:
    """The verdict a guarded tool's invoker acts on: one already given for this call, else the gate's now.

    Already given: by `_Run.unknown_tool` to a repaired call, or by `_gate_first`
    before the SDK's approval (`judged`: this run's) — the latter only in the
    same turn and for the very arguments it judged.
    """
    call_id = ctx.tool_call_id
    gated = _GATED.get()
    if gated is not None and not gated.taken and gated.verdict.call.call_id == call_id:
        gated.taken = True
        return gated.verdict
    arguments = _model_arguments(input_json)
    earlier = None if judged is None else judged.pop(call_id, None)
    if earlier is not None and earlier[:2] == (_turn(run), arguments):
        return earlier[2]
    return await _judge(registry, name, run, call_id, arguments)


def _turn(run: _Run | None) -> int:
    """The current turn of `run` (``0`` for a detached call)."""
    return 0 if run is None else run.state.turns


def _gate_first(
    registry: HookRegistry, name: str, judged: _Verdicts, sdk_approval: _Approval
) -> Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]:
    """The ``needs_approval`` of a guarded tool: the gate judges first, the SDK's rule asks only about what it allowed.

    The verdict is kept in `judged`, for this run and turn, for the invoker, so a call is gated once;
    a denied call needs no approval (the invoker tells the model why), so it
    is never shown to a human.
    """

    async def needs_approval(context: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        run = _live(context.usage)
        try:
            verdict = await _judge(registry, name, run, call_id, params)
        except Exception as exc:
            if isinstance(exc, StopRun) and run is not None:
                await run.end_with(exc)
            # The SDK reads a failing approval predicate as "ask the human" when it resumes a run; its own error
            # type passes through everywhere (the entry points hand the caller the StopRun behind it).
            msg = f"Cannot decide whether {name!r} call {call_id!r} needs approval: a hook raised {exc!r}."
            raise UserError(msg) from exc
        _kept(judged, _scope(run, context))[call_id] = (_turn(run), params, verdict)
        if not verdict.allowed:
            return False
        return await sdk_approval(context, json.dumps(dict(verdict.call.args)), call_id)

    return needs_approval


async def _timed_out(  # noqa: PLR0913 -- the tool, the hooks, the call, and what the timeout was
    tool: FunctionTool,
    registry: HookRegistry,
    run: RunContext,
    call: ToolCallRequest,
    ctx: ToolContext[Any],
    *,
    limit: float,
    ms: float,
) -> str:
    """A call that outlived the tool's ``timeout_seconds``: fail it with kind TIMEOUT, as the tool asks.

    ``timeout_behavior="raise_exception"`` raises the SDK's `ToolTimeoutError`;
    otherwise ``on_tool_error`` chains over the tool's
    ``timeout_error_function`` text, or the SDK's default wording.
    """
    error = ToolTimeoutError(tool_name=tool.name, timeout_seconds=limit)
    if tool.timeout_behavior == "raise_exception":
        raise error
    if tool.timeout_error_function is None:
        base = f"Tool '{tool.name}' timed out after {limit:g} seconds."
    else:
        text = tool.timeout_error_function(ctx, error)
        base = str(await text if inspect.isawaitable(text) else text)
    steps = failed(registry, run, call, error, kind=ToolErrorKind.TIMEOUT, message=base, duration_ms=ms)
    return await arun_flow(registry, steps)


def _being_cancelled() -> bool:
    """Whether the running task has been asked to cancel (not merely seen a `CancelledError` raised in it)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


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
    require_registry(registry, "guarded tools")
    return [guard_tool(tool, registry) if isinstance(tool, FunctionTool) else tool for tool in tools]


# --- per-run state ---------------------------------------------------------------------------


class _Run:
    """One SDK run as hookreg sees it: the shared `RunState`, whether its start ran, the tools offered this turn.

    Also the agent of the current model call, the arguments of the calls it
    answered (by call id) and an exception a hook raised where the SDK would
    swallow it (`unknown_tool`), raised again before the run's next step.
    """

    __slots__ = ("__weakref__", "agent", "arguments", "hooks", "offered", "pending", "started", "state")

    def __init__(self, hooks: HookregRunHooks, state: RunState) -> None:
        self.hooks = weakref.ref(hooks)  # the hooks object keeps its paused runs: they must not keep it alive
        self.state = state
        self.started = False
        self.offered: frozenset[str] | None = None
        self.agent: Agent[Any] | None = None
        self.arguments: dict[str, str] = {}
        self.pending: Exception | None = None

    async def raise_pending(self) -> None:
        """Raise the exception `unknown_tool` kept (ending the session first for a `StopRun`), if any."""
        error, self.pending = self.pending, None
        if error is None:
            return
        if isinstance(error, StopRun):
            await self.end_with(error)
        raise error

    async def unknown_tool(
        self, name: str, call_id: str, context: RunContextWrapper[Any], sdk_text: Callable[[], Awaitable[str]]
    ) -> str:
        """A call to a tool the agent lacks, as the run contract's invalid call; return what the model reads.

        The SDK answers such a call with its ``tool_error_formatter`` (see
        `HookregRunHooks.run_config`): the call goes through
        `hookreg._lifecycle.gate` with the arguments the model sent, so
        ``invalid_tool_call`` decides (``fail`` → ``post_tool_call_failure``
        and ``on_tool_error`` with kind ``NOT_FOUND``), and a ``repair``
        runs the named function tool the agent offers (enabled, MCP tools
        included) through its invoker. When every ``invalid_tool_call`` hook
        passes, the call fails the SDK's way: ``on_tool_error`` chains over
        `sdk_text` (the app's formatter, or the SDK's own wording), as if
        nobody listened there (DESIGN §8). The SDK swallows a formatter's
        exceptions, so a `StopRun` or a failing hook is kept in `pending` and
        raised before the run's next step.
        """
        registry = self.state.registry
        try:
            enabled = await self.agent.get_all_tools(context) if self.agent else []  # MCP tools too, none disabled
            tools = {t.name: t for t in enabled if isinstance(t, FunctionTool)}
            args = _model_arguments(self.arguments.get(call_id, ""))
            known = set(tools) - {name}
            steps = gate(registry, self.state.run, name, call_id, args, known=known, offered=self.offered, passing=True)
            verdict = await arun_flow(registry, steps)
            if verdict.status == "passed":
                text = await sdk_text()
                call = ToolCallRequest(call_id, name, args if isinstance(args, Mapping) else {})
                error = LookupError(text)
                failing = failed(registry, self.state.run, call, error, kind=ToolErrorKind.NOT_FOUND, message=text)
                return await arun_flow(registry, failing)
            if not verdict.allowed:
                return verdict.text
            return await self._repaired(tools[verdict.call.tool_name], verdict, context)
        except Exception as exc:  # noqa: BLE001 -- kept for the run's next step: the SDK would swallow it here
            self.pending = exc
            return STOPPED_NOTICE

    async def _repaired(self, tool: FunctionTool, verdict: GateResult, context: RunContextWrapper[Any]) -> str:
        """Run the tool a ``repair`` named, gated already: a guarded tool takes `verdict` instead of gating again."""
        call, gated = verdict.call, _Gated(verdict)
        arguments = json.dumps(dict(call.args))
        ctx = ToolContext(
            context=context.context,
            usage=context.usage,
            tool_name=tool.name,
            tool_call_id=call.call_id,
            tool_arguments=arguments,
        )
        token = _GATED.set(gated)
        try:
            raw = await tool.on_invoke_tool(ctx, arguments)
        finally:
            _GATED.reset(token)
        if not gated.taken:  # a tool hookreg does not guard: observe its outcome here
            registry = self.state.registry
            return await arun_flow(registry, succeeded(registry, self.state.run, call, raw))
        return present(raw)

    async def end_with(self, error: BaseException) -> None:
        """End the session with the outcome of `error` (once per run)."""
        await arun_flow(self.state.registry, self.state.end_with(error))

    async def end(self, outcome: RunOutcome) -> None:
        """End the session with `outcome` (once per run)."""
        await arun_flow(self.state.registry, self.state.end(outcome))


class _Gated:
    """A gate's verdict on a repaired call, handed to the guarded tool that runs it (which then skips its gate)."""

    __slots__ = ("taken", "verdict")

    def __init__(self, verdict: GateResult) -> None:
        self.verdict = verdict
        self.taken = False


_GATED: contextvars.ContextVar[_Gated | None] = contextvars.ContextVar("hookreg_openai_gated", default=None)


_RUNS: dict[int, _Run] = {}
"""Live runs by ``id(usage)``: every hook and tool context of one SDK run shares its `Usage` object."""


def _track(usage: Usage, run: _Run) -> None:
    """Make `run` the run of every context sharing `usage`, for as long as `usage` lives."""
    key = id(usage)
    _RUNS[key] = run
    weakref.finalize(usage, _RUNS.pop, key, None)


def _live(usage: Usage) -> _Run | None:
    """The run `usage` belongs to; on first sight in an entry point resuming a paused run, that very run.

    The SDK resumes a run state with a copy of its `Usage` (in memory and
    from JSON), so the resumed run is found through the entry point
    (`HookregRunHooks.run` given a `RunState`), not by its usage.
    """
    run = _RUNS.get(id(usage))
    entry = _ENTRY.get()
    if run is None and entry is not None and entry.resumes is not None:
        run, entry.resumes = entry.resumes, None
        entry.run = run
        _track(usage, run)
    return run


_Pending = frozenset[tuple[str, str, str | None]]
"""A paused run's pending approvals: the tool name, call id and arguments of each."""


def _pending(interruptions: Iterable[ToolApprovalItem]) -> _Pending:
    """The key a paused run is kept by until it resumes: what its run state carries, also through JSON."""
    return frozenset((item.tool_name or "", item.call_id or "", item.arguments) for item in interruptions)


class _Entry:
    """What an entry point (`HookregRunHooks.run`) learns about the run it started."""

    __slots__ = ("config", "hooks", "provider", "resumes", "run")

    def __init__(
        self, hooks: HookregRunHooks, config: RunConfig | Mapping[str, Any] | None, provider: ModelProvider | None
    ) -> None:
        self.hooks = hooks
        self.run: _Run | None = None
        self.resumes: _Run | None = None  # the paused run this entry point resumes, until the SDK's run shows up
        self.config = config
        self.provider = provider

    async def close(self) -> None:
        """Close the model provider the run owns, once."""
        provider, self.provider = self.provider, None
        if provider is not None:
            await provider.aclose()


_ENTRY: contextvars.ContextVar[_Entry | None] = contextvars.ContextVar("hookreg_openai_entry", default=None)


class _Call:
    """One model call: opened by the model-input filter, filled by ``on_llm_start``, served by `_PatchedModel`.

    The filter runs in the run's own task right before each model call, so a
    context variable set there reaches ``on_llm_start`` (a child task) and the
    model call that follow, and no other run.
    """

    __slots__ = ("agent", "answered", "claimed", "model", "patch", "run", "selected", "served_by")

    def __init__(self, model: _PatchedModel, agent: Agent[Any]) -> None:
        self.model = model
        self.agent = agent
        self.claimed = False
        self.run: _Run | None = None
        self.served_by: Model | None = None
        self.answered = False  # whether the run contract's answer points fired for this call (`_turn_finished`)
        self.patch = _NO_PATCH
        self.selected: str | None = None


_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("hookreg_openai_call", default=None)


# --- the model of each call ---------------------------------------------------------------------


class _PatchedModel(Model):
    """The run's `Model`: serves each call with the model and settings hooks chose for that very call."""

    def __init__(self, base: RunConfig, models: Mapping[str, Model]) -> None:
        self.base = base
        self.models = models
        self.served: dict[int, Model] = {}  # by id: what the SDK would have resolved, told when its run ends

    async def _cleanup_on_run_end(self, owner: object) -> None:
        """Pass the SDK's end-of-run notice on to each model this one served (the SDK resolved only this one)."""
        for model in list(self.served.values()):
            await model._cleanup_on_run_end(owner)  # noqa: SLF001 -- the SDK's own protocol from a run to its models

    def default_model(self, agent: Agent[Any]) -> Model:
        """The model the SDK would call for `agent` under the run's own settings."""
        target = self.base.model if self.base.model is not None else agent.model
        return target if isinstance(target, Model) else self.base.model_provider.get_model(target)

    def default_name(self, agent: Agent[Any]) -> str:
        """The name ``model_select`` hooks see as ``default_model``."""
        return _model_name(self.base.model if self.base.model is not None else agent.model)

    def _serve(
        self, instructions: str | None, settings: ModelSettings
    ) -> tuple[_Call, Model, str | None, ModelSettings]:
        call = _CALL.get()
        if call is None or call.model is not self:
            msg = (
                f"Cannot call the model through {self!r}: no model-input filter opened this call. "
                "Pass the RunConfig that HookregRunHooks.run_config() returns, unchanged, to Runner.run."
            )
            raise HookValueError(msg, point=HookPoint.PRE_MODEL_CALL)
        patch = call.patch
        if call.selected is None:
            model = self.default_model(call.agent)
        else:
            model = self.models.get(call.selected) or self.base.model_provider.get_model(call.selected)
        agent = call.agent
        if agent.model_settings == _implicit_settings(agent.model):
            # The SDK lays the default settings of the model it resolves (a gpt-5's reasoning effort) under
            # the run's; it skips that for a Model object such as this one, so they are laid here.
            chosen = call.selected or (self.base.model if self.base.model is not None else agent.model)
            settings = _implicit_settings(chosen).resolve(settings)
        call.served_by = model
        self.served[id(model)] = model
        texts = [patch.preamble or "", instructions or "", *(patch.extra_context or ())]
        return call, model, "\n\n".join(t for t in texts if t) or None, _settings(patch, settings)

    def get_retry_advice(self, request: ModelRetryAdviceRequest) -> ModelRetryAdvice | None:
        """The retry advice of the model that served this task's current call (its provider's hints)."""
        call = _CALL.get()
        served = call.served_by if call is not None and call.model is self else None
        return None if served is None else served.get_retry_advice(request)

    async def get_response(  # forwards the SDK's arguments, whatever its version
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        """Call the chosen model with this call's patch applied; ``model_turn_finished`` may ask again."""
        call, model, instructions, settings = self._serve(system_instructions, model_settings)
        args, kwargs = _offered_only(call.patch, args, kwargs)
        input = _sent(call.patch, input)
        while True:
            response = await model.get_response(instructions, input, settings, *args, **kwargs)
            answer = _Answer(
                output=response.output, usage=response.usage, message_id=response.response_id, model=_model_name(model)
            )
            action = await _turn_finished(call, answer, settings)
            if action.kind == "continue":
                return response
            if action.kind == "feedback":
                feedback = {"role": "user", "content": action.feedback or ""}
                input = [*ItemHelpers.input_to_new_input_list(input), *response.to_input_items(), feedback]

    def stream_response(  # forwards the SDK's arguments, whatever its version
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: ModelSettings,
        *args: Any,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Stream from the chosen model with this call's patch applied; ``model_turn_finished`` observes the end."""
        call, model, instructions, settings = self._serve(system_instructions, model_settings)
        args, kwargs = _offered_only(call.patch, args, kwargs)
        sent = _sent(call.patch, input)
        return _streamed(call, model.stream_response(instructions, sent, settings, *args, **kwargs), settings)


def _offered_only(
    patch: RequestPatch, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The model call's arguments with its tools cut to the patch's ``active_tools`` (all when unset).

    The SDK passes ``tools`` by keyword in blocking runs and as the first of
    the remaining positional arguments in streamed ones.
    """
    if patch.active_tools is None:
        return args, kwargs
    active = patch.active_tools
    if "tools" in kwargs:
        return args, {**kwargs, "tools": [t for t in kwargs["tools"] if getattr(t, "name", None) in active]}
    if args:
        return ([t for t in args[0] if getattr(t, "name", None) in active], *args[1:]), kwargs
    return args, kwargs


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Answer:
    """What one model call answered, as the SDK exposes it (a blocking call has no status: no finish reason)."""

    output: list[Any]
    usage: Any
    message_id: str | None
    model: str | None
    status: str | None = None
    reason: str | None = None


async def _streamed(call: _Call, events: AsyncIterator[Any], settings: ModelSettings) -> AsyncIterator[Any]:
    """`events`, firing ``model_turn_finished`` at the response's terminal event before passing it on.

    Closing this stream closes the model's with it, in the closing task: the
    SDK closes the stream it iterates as soon as the run stops reading it.
    """
    try:
        async for event in events:
            response = getattr(event, "response", None)
            if getattr(event, "type", None) in _TERMINAL_EVENTS and response is not None:
                await _streamed_turn_finished(call, response, settings)
            yield event
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


async def _streamed_turn_finished(call: _Call, response: Any, settings: ModelSettings) -> None:
    """Fire ``model_turn_finished`` for a streamed response; refuse an action that would ask the model again."""
    incomplete = getattr(response, "incomplete_details", None)
    answer = _Answer(
        output=list(response.output),
        usage=response.usage,
        message_id=response.id,
        model=response.model,
        status=response.status,
        reason=getattr(incomplete, "reason", None),
    )
    action = await _turn_finished(call, answer, settings)
    if action.kind != "continue":
        msg = (
            f"Cannot {action.kind} turn {call.run.state.turns if call.run else 0} of a streamed OpenAI Agents "
            f"run as hook {action.decided_by!r} asked: its events already reached the caller. Continue "
            "(or let the agent stop) in streamed runs, or run blocking (hooks.run) to ask again."
        )
        raise HookValueError(msg, point=HookPoint.MODEL_TURN_FINISHED)


_TERMINAL_EVENTS: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})


_ANSWER_POINTS: Final = (HookPoint.MODEL_TURN_FINISHED, HookPoint.STOP)

_MODEL_POINTS: Final = (*MODEL_CALL_POINTS, *_ANSWER_POINTS)
"""The points that need hookreg's per-call model in the run's place (`HookregRunHooks.run_config`)."""

_NO_PATCH: Final = RequestPatch()
"""A model call as the run makes it: what `RunState.model_call` starts from, and hands back when nobody patches."""


def _listens(registry: HookRegistry, points: Iterable[HookPoint]) -> bool:
    """Whether a hook listens at any of `points` now (a dict read each: decided per event, DESIGN §8)."""
    return listens(registry, points)


async def _turn_finished(call: _Call, answer: _Answer, settings: ModelSettings) -> TurnAction:
    """The run contract's answer (``model_turn_finished``, then ``post_turn``), then ``stop`` for a final one.

    A ``stop`` hook that keeps the run going (`hookreg._lifecycle.RunState.stop`)
    becomes a retry with its feedback.
    """
    run = call.run
    if run is None:  # a call of a run whose run hooks are not hookreg's: nothing to fire
        return TurnAction.continue_run()
    requests, text, usage = _requests(answer.output), _text(answer.output), answer.usage
    raw, normalised = _ending(answer.status, answer.reason, bool(requests))
    state, registry = run.state, run.state.registry
    steps = state.answered(
        text,
        requests,
        raw_finish_reason=raw,
        normalised=normalised,
        max_tokens=settings.max_tokens,
        usage={
            "input_tokens": int(getattr(usage, "input_tokens", 0) or 0),
            "output_tokens": int(getattr(usage, "output_tokens", 0) or 0),
            "total_tokens": int(getattr(usage, "total_tokens", 0) or 0),
        },
        message_id=answer.message_id,
        model=answer.model,
    )
    try:
        action = await arun_flow(registry, steps)
        call.answered = action.kind == "continue"
        if call.answered and not requests:  # a final answer: may the agent stop?
            feedback = await arun_flow(registry, state.stop(text))
            if feedback is not None:
                action = TurnAction.retry_with_feedback(feedback)
    except StopRun as stop:
        await run.end_with(stop)
        raise
    return action


def _requests(output: Iterable[object]) -> list[ToolCallRequest]:
    """The tool calls of a model answer's output items."""
    calls = [item for item in output if isinstance(item, ResponseFunctionToolCall)]
    return [ToolCallRequest(item.call_id, item.name, _object_or_empty(item.arguments)) for item in calls]


def _text(output: Iterable[Any]) -> str:
    """The text of a model answer's output items."""
    return "".join(ItemHelpers.extract_last_text(item) or "" for item in output)


_RESPONSES_SPELLINGS: Final = {"max_output_tokens": "length"}
"""The Responses API's own words for an ending that `FinishReason.from_raw` does not know (lower case)."""


def _ending(status: str | None, reason: str | None, has_calls: bool) -> tuple[str | None, str | None]:
    """The Responses API's word for how a response ended, and the spelling `FinishReason` maps when it differs.

    An incomplete response names its reason (``max_output_tokens`` → length,
    ``content_filter``); a ``completed`` one ended on tool calls when it
    carries some, else on a stop. A blocking call exposes neither: ``None``.
    """
    if reason:
        return reason, _RESPONSES_SPELLINGS.get(reason.lower())
    if status == "completed":
        return status, "tool_calls" if has_calls else "stop"
    return status, None


def _object_or_empty(arguments: str | None) -> Mapping[str, object]:
    """A tool call's arguments as a mapping: ``{}`` when they are not a JSON object."""
    parsed = _model_arguments(arguments)
    return parsed if isinstance(parsed, Mapping) else {}


# --- the run hooks ---------------------------------------------------------------------------------


class HookregRunHooks(RunHooks[Any]):
    """SDK run hooks firing hookreg's session, turn and model points; one object may serve many runs.

    Each run gets its own `hookreg.RunContext` and lifecycle: ``on_session_start``
    when its first agent starts (``goal`` is the first user message's text),
    ``user_prompt_submit`` then, per model call, ``pre_turn`` (turns count
    from 1 in every run, each with a fresh ``turn_scratchpad``),
    ``pre_model_call`` and ``model_select`` before the call, ``post_turn``
    after it. A deny (or an unanswered ``ask``) at ``user_prompt_submit`` or
    ``pre_turn`` raises `hookreg.StopRun` with its reason before the model is
    called. ``on_session_end`` fires exactly once per run: ``completed`` when
    an agent produces the final output, ``stopped`` on a `StopRun`; the SDK
    calls no hook when a run fails or is cancelled, so ``failed`` and
    ``cancelled`` need the entry points `run` / `run_streamed` +
    `stream_events`, which also hand the caller a tool hook's `StopRun`
    instead of the SDK's ``UserError``.

    Patches, ``model_select``, ``model_turn_finished``, ``stop`` and
    ``invalid_tool_call`` for a tool the agent does not have need
    `run_config` (the entry points install it); without it a patch that
    changes anything raises `HookValueError`, and the SDK raises its own
    ``ModelBehaviorError`` for an unknown tool.

    Attributes:
        registry: The hooks to run.
        models: Models a ``model_select`` hook may pick by name.
    """

    def __init__(self, registry: HookRegistry, *, models: Mapping[str, Model] | None = None) -> None:
        """Fire `registry`'s hooks during SDK runs.

        Args:
            registry: The hooks to run.
            models: Models a ``model_select`` hook may pick by name; other
                names go to the run's model provider.

        Raises:
            HookTypeError: `registry` is not a `HookRegistry`.
        """
        self.registry: HookRegistry = require_registry(registry, "HookregRunHooks")
        self.models: Mapping[str, Model] = dict(models or {})
        # Runs paused on approvals, by their pending approvals, until an entry point resumes them (`_resuming`);
        # one never resumed ends cancelled when this object is collected, or at interpreter exit. ``None`` marks
        # pending approvals two runs paused on: neither is resumed as itself (each resume is a new session).
        self._paused: dict[_Pending, _Run | None] = {}
        keep_paused(self, self._paused)

    # --- entry points

    async def run(
        self,
        starting_agent: Agent[Any],
        input: Any,
        *,
        run_config: RunConfig | Mapping[str, Any] | None = None,
        hooks: RunHooks[Any] | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """``Runner.run`` with these hooks and their `run_config`, ending the session on every path.

        A run that raises fires ``on_session_end`` (``stopped`` for a
        `StopRun`, ``failed`` for another exception, ``cancelled`` when the
        task is cancelled) and re-raises; a `StopRun` the SDK wrapped in its
        ``UserError`` (one raised in a tool hook) reaches the caller as the
        same `StopRun` object.

        Args:
            starting_agent: The agent to run.
            input: The user input (text or input items).
            run_config: The run's own settings, see `run_config`.
            hooks: The app's own `RunHooks`, called after these at each start and before them at each end.
            **kwargs: Passed to ``Runner.run`` (``context``, ``max_turns``, ``session``...).

        Returns:
            The SDK's `RunResult`.
        """
        entry = _resuming(self._entry(run_config), input)
        token = _ENTRY.set(entry)
        try:
            config = cast("RunConfig", entry.config)  # the SDK takes None and dicts too
            result = await Runner.run(starting_agent, input, hooks=self._with(hooks), run_config=config, **kwargs)
        except BaseException as exc:
            error = await _ended(entry, exc)
            if error is exc:
                raise
            raise error  # noqa: B904 -- the hook's own StopRun; the SDK's wrapper stays as its context
        finally:
            _ENTRY.reset(token)
            await entry.close()
        await _settle(entry, result)
        return result

    def run_streamed(
        self,
        starting_agent: Agent[Any],
        input: Any,
        *,
        run_config: RunConfig | Mapping[str, Any] | None = None,
        hooks: RunHooks[Any] | None = None,
        **kwargs: Any,
    ) -> RunResultStreaming:
        """``Runner.run_streamed`` with these hooks and their `run_config`; iterate it with `stream_events`.

        Args:
            starting_agent: The agent to run.
            input: The user input (text or input items).
            run_config: The run's own settings, see `run_config`.
            hooks: The app's own `RunHooks`, as in `run`.
            **kwargs: Passed to ``Runner.run_streamed``.

        Returns:
            The SDK's `RunResultStreaming`; `stream_events` ends the session on every path.
        """
        entry = _resuming(self._entry(run_config), input)
        token = _ENTRY.set(entry)  # the run's task copies the context now
        try:
            config = cast("RunConfig", entry.config)  # the SDK takes None and dicts too
            result = Runner.run_streamed(starting_agent, input, hooks=self._with(hooks), run_config=config, **kwargs)
        finally:
            _ENTRY.reset(token)
        _STREAMS[id(result)] = entry
        weakref.finalize(result, _STREAMS.pop, id(result), None)
        return result

    async def stream_events(self, result: RunResultStreaming) -> AsyncIterator[StreamEvent]:
        """Yield `result`'s stream events unchanged, firing the delta points for the model's raw deltas.

        For a run started with `run_streamed`, the end of the stream also ends
        the session (``completed``, or ``cancelled`` after ``result.cancel()``),
        and an exception it raises ends it too (``stopped`` / ``failed``) and
        reaches the caller unwrapped, as in `run`.

        Args:
            result: What ``Runner.run_streamed(..., hooks=self)`` returned.

        Yields:
            Every event of ``result.stream_events()``, in order.
        """
        entry = _STREAMS.get(id(result))
        run = entry.run.state.run if entry is not None and entry.run is not None else RunContext()
        deltas: Deltas | None = None
        calls: dict[str, tuple[str, str]] = {}
        try:
            async for event in result.stream_events():
                if isinstance(event, RawResponsesStreamEvent):
                    if deltas is None or getattr(event.data, "type", None) == "response.created":  # a model call
                        if entry is not None and entry.run is not None:
                            run = entry.run.state.run
                        deltas = Deltas(self.registry, dataclasses.replace(run, is_streaming=True))
                    steps = _delta(deltas, event.data, calls)
                    try:
                        if steps is not None:
                            await arun_flow(self.registry, steps)
                    except BaseException:
                        result.cancel()  # a delta hook failed: the run must not go on unseen
                        raise
                yield event
        except GeneratorExit:
            raise
        except BaseException as exc:  # the SDK's own error (its run already settled it its way), or a delta hook's
            error = exc if entry is None else await _ended(entry, exc)
            if error is exc:
                raise
            raise error  # noqa: B904 -- the hook's own StopRun; the SDK's wrapper stays as its context
        finally:
            if entry is not None:
                await entry.close()
        if entry is not None:
            await _settle(entry, result)

    def _entry(self, run_config: RunConfig | Mapping[str, Any] | None) -> _Entry:
        """What an entry point hands the SDK as the run's config, and the model provider it must close.

        The SDK closes the model provider it made (no run_config, or a dict
        naming none) when the run ends. When hookreg installs nothing the
        app's own value goes to the SDK, which keeps that rule; else the
        config is hookreg's, and the entry point closes that provider.
        """
        if self._installs_nothing():
            return _Entry(self, run_config, None)
        config = self.run_config(run_config)
        owned = run_config is None or (isinstance(run_config, Mapping) and "model_provider" not in run_config)
        return _Entry(self, config, config.model_provider if owned else None)

    def _serves_calls(self) -> bool:
        """Whether a hook listens at a point that needs hookreg's per-call model (see `run_config`)."""
        return _listens(self.registry, _MODEL_POINTS)

    def _installs_nothing(self) -> bool:
        """Whether `run_config` would hand back the app's config unchanged: nobody listens where it installs anything.

        Returns:
            ``True`` when no hook listens at ``invalid_tool_call`` or at a point needing the per-call model
            (``pre_model_call``, ``model_select``, ``model_turn_finished``, ``stop``).
        """
        return not self._serves_calls() and not self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL)

    def _with(self, app: RunHooks[Any] | None) -> RunHooks[Any]:
        """These hooks, joined with the app's own; anything else the app passed goes to the SDK, which judges it."""
        if app is None:
            return self
        if not isinstance(app, RunHooksBase):
            return cast("RunHooks[Any]", app)  # the SDK's own TypeError names what is wrong with it
        return _JoinedRunHooks(self, app)

    def run_config(self, base: RunConfig | Mapping[str, Any] | None = None) -> RunConfig:
        """Return a copy of `base` that fires the turn and model points and applies their patches per call.

        The copy's ``call_model_input_filter`` opens a slot for each model
        call and its ``model`` serves the call with the model and settings the
        hooks chose for it (the run's own ``model``, or the agent's, by
        default). When an ``invalid_tool_call`` hook is registered as the
        config is built, a call to a tool the agent does not have goes to
        ``invalid_tool_call``: the copy sets ``tool_not_found_behavior`` to
        ``"return_error_to_model"`` and answers the SDK's ``tool_not_found``
        through its ``tool_error_formatter``; otherwise the SDK handles such
        a call as `base` says (by default it raises ``ModelBehaviorError``).
        Every other kind of tool error goes to `base`'s own formatter. The
        returned config may be reused across runs (`run` and `run_streamed`
        build one per run). `base`'s own ``call_model_input_filter`` still
        decides what each call sends; the patches apply to what it returns.

        Args:
            base: The run's own settings, a `RunConfig` or a dict of its
                fields as ``Runner.run`` takes; ``None`` for the SDK
                defaults.

        Returns:
            The `RunConfig` to pass as ``Runner.run(..., run_config=...)``.

        Raises:
            HookTypeError: `base` is neither a `RunConfig` nor a dict.
        """
        base = _run_config(base)
        if isinstance(base.model, _PatchedModel):
            # A config hookreg built already (the SDK hands an agent-as-tool's run its parent's): start from the
            # app's own settings again, so one filter opens each call and one model serves it.
            own = base.model.base
            base = dataclasses.replace(
                base,
                model=own.model,
                call_model_input_filter=own.call_model_input_filter,
                tool_error_formatter=own.tool_error_formatter,
                tool_not_found_behavior=own.tool_not_found_behavior,
            )
        model = _PatchedModel(base, self.models)
        own_formatter, own_filter = base.tool_error_formatter, base.call_model_input_filter

        def judges_unknown_calls() -> bool:
            return self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL)

        def open_call(data: CallModelData[Any]) -> ModelInputData | Awaitable[ModelInputData]:
            _CALL.set(_Call(model, data.agent))
            # The app's own filter decides what is sent, its result (or awaitable) handed to the SDK unchanged.
            return data.model_data if own_filter is None else own_filter(data)

        async def own_text(args: ToolErrorFormatterArgs[Any]) -> str | None:
            if own_formatter is None:
                return None
            text = own_formatter(args)
            return await text if inspect.isawaitable(text) else text

        async def format_tool_error(args: ToolErrorFormatterArgs[Any]) -> str | None:
            run = _live(args.run_context.usage)
            if args.kind == "tool_not_found" and run is not None and run.hooks() is self and judges_unknown_calls():

                async def sdk_text() -> str:
                    text = await own_text(args)
                    return args.default_message if text is None else text

                return await run.unknown_tool(args.tool_name, args.call_id, args.run_context, sdk_text)
            return await own_text(args)

        # Nobody listening: the SDK's own model, filter, formatter and unknown-tool handling (DESIGN §8). The
        # per-call model stands in the run's model only for the points that need it (see _MODEL_POINTS).
        if self._installs_nothing():
            return base
        serves = self._serves_calls()
        return dataclasses.replace(
            base,
            model=model if serves else base.model,
            call_model_input_filter=open_call if serves else own_filter,
            tool_error_formatter=format_tool_error,
            tool_not_found_behavior="return_error_to_model" if judges_unknown_calls() else base.tool_not_found_behavior,
        )

    # --- SDK hooks

    def _run(self, usage: Usage, goal: Iterable[object], *, starting: bool = False, agent: str | None = None) -> _Run:
        """The state of the run `usage` belongs to, created (and claimed by an entry point) on first sight.

        An agent or a model call `starting` after the run ended belongs to a
        new run on the same SDK context (a resumed run state): it gets a fresh
        state, turns counted from 1 again, its context naming `agent`.
        """
        run = _live(usage)
        if run is None or (starting and run.state.ended):
            run = _Run(self, RunState(self.registry, RunContext(agent_name=agent), _first_user_text(goal)))
            entry = _ENTRY.get()
            if entry is not None and entry.hooks is self and entry.run is None:
                entry.run = run
            _track(usage, run)
        return run

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        """Track the run; name its agent."""
        run = self._run(context.usage, context.turn_input, starting=True, agent=agent.name)
        if run.state.run.agent_name != agent.name:  # a handoff: the run goes on as the new agent's
            run.state.run = dataclasses.replace(run.state.run, agent_name=agent.name)

    async def on_llm_start(
        self,
        context: RunContextWrapper[Any],
        agent: Agent[Any],
        system_prompt: str | None,
        input_items: list[Any],
    ) -> None:
        """Before one model call: the run's start (once), ``pre_turn``, then the call's patch and model."""
        run = self._run(context.usage, input_items, starting=True)
        await run.raise_pending()
        run.agent = agent
        call = _CALL.get()
        if call is not None and call.claimed:
            call = None  # a slot of an earlier call: this run has no hookreg filter
        if call is not None:
            call.claimed = True
        state, registry = run.state, self.registry
        try:
            if not run.started:
                run.started = True
                if state.run.agent_name is None:
                    state.run = dataclasses.replace(state.run, agent_name=agent.name)
                await self._check(run, await arun_flow(registry, state.start()))
            await self._check(run, await arun_flow(registry, state.turn()))
            patch, selected = _NO_PATCH, None
            if _listens(registry, MODEL_CALL_POINTS):  # else no patch and no pick: the default model need not be named
                default = call.model.default_name(agent) if call else _model_name(agent.model)
                steps = state.model_call(_NO_PATCH, default, lambda: _history(input_items))
                patch, name = await arun_flow(registry, steps)
                selected = None if name == default else name
        except StopRun as stop:
            await run.end_with(stop)
            raise
        run.offered = patch.active_tools
        if call is not None:
            call.patch, call.selected, call.run = patch, selected, run
        elif patch != _NO_PATCH or selected is not None:
            msg = (
                f"Cannot apply {patch!r} (model {selected!r}) to this model call: the run has no hookreg "
                "RunConfig. Start it with hooks.run(...), or pass run_config=hooks.run_config() to Runner.run."
            )
            raise HookValueError(msg, point=HookPoint.PRE_MODEL_CALL)

    async def _check(self, run: _Run, outcome: RunOutcome | None) -> None:
        """Stop the run when a run-level gate returned a ``stopped`` outcome."""
        if outcome is not None:
            await run.end(outcome)
            raise StopRun(outcome.reason)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        """Note the arguments of the response's tool calls; the answer's points unless hookreg's model fired them.

        Without hookreg's per-call model (no `run_config`, or nobody listening
        where it is needed) the answer goes through the run contract here,
        where it can no longer be asked again.
        """
        run = self._run(context.usage, ())
        run.arguments.update(
            (item.call_id, item.arguments) for item in response.output if isinstance(item, ResponseFunctionToolCall)
        )
        call = _CALL.get()
        if (call is not None and call.run is run and call.answered) or not _listens(self.registry, ANSWER_POINTS):
            return
        answered = run.state.answered(_text(response.output), _requests(response.output), raw_finish_reason=None)
        try:
            action = await arun_flow(self.registry, answered)
        except StopRun as stop:  # an observer may end the run too
            await run.end_with(stop)
            raise
        if action.kind != "continue":
            msg = (
                f"Cannot {action.kind} turn {run.state.turns} as hook {action.decided_by!r} asked: the run has no "
                "hookreg RunConfig to ask the model again. Start it with hooks.run(...), or pass "
                "run_config=hooks.run_config() to Runner.run."
            )
            raise HookValueError(msg, point=HookPoint.MODEL_TURN_FINISHED)

    async def on_agent_end(self, context: AgentHookContext[Any], agent: Agent[Any], output: Any) -> None:
        """Fire ``on_session_end`` with a completed outcome."""
        run = self._run(context.usage, ())
        await run.raise_pending()
        await run.end(RunOutcome(status="completed", turns=run.state.turns))


def _delta(deltas: Deltas, data: object, calls: dict[str, tuple[str, str]]) -> Steps[None] | None:
    """The delta point one raw response event fires, if any; `calls` names each tool call across events."""
    if isinstance(data, ResponseOutputItemAddedEvent) and isinstance(data.item, ResponseFunctionToolCall):
        calls[data.item.id or data.item.call_id] = (data.item.call_id, data.item.name)
    elif isinstance(data, ResponseFunctionCallArgumentsDeltaEvent):
        call_id, name = calls.get(data.item_id, (data.item_id, ""))
        return deltas.tool_call(call_id, name or None, data.delta)
    elif isinstance(data, ResponseTextDeltaEvent):
        return deltas.text(data.delta)
    elif isinstance(data, (ResponseReasoningTextDeltaEvent, ResponseReasoningSummaryTextDeltaEvent)):
        return deltas.reasoning(data.delta)
    return None


class _JoinedRunHooks(RunHooks[Any]):
    """hookreg's run hooks and the app's own in one run: hookreg's first at each start, last at each end.

    hookreg's run-level points sit outermost (DESIGN §8): its gates judge a
    turn before the app's hooks see it, and its session ends after them.
    """

    def __init__(self, hookreg: HookregRunHooks, app: RunHooksBase[Any, Any]) -> None:
        self.hookreg = hookreg
        self.app = app

    async def on_agent_start(self, context: AgentHookContext[Any], agent: Agent[Any]) -> None:
        await self.hookreg.on_agent_start(context, agent)
        await self.app.on_agent_start(context, agent)

    async def on_llm_start(
        self, context: RunContextWrapper[Any], agent: Agent[Any], system_prompt: str | None, input_items: list[Any]
    ) -> None:
        await self.hookreg.on_llm_start(context, agent, system_prompt, input_items)
        await self.app.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse) -> None:
        await self.app.on_llm_end(context, agent, response)
        await self.hookreg.on_llm_end(context, agent, response)

    async def on_agent_end(self, context: AgentHookContext[Any], agent: Agent[Any], output: Any) -> None:
        await self.app.on_agent_end(context, agent, output)
        await self.hookreg.on_agent_end(context, agent, output)

    async def on_handoff(self, context: RunContextWrapper[Any], from_agent: Agent[Any], to_agent: Agent[Any]) -> None:
        await self.app.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool) -> None:
        await self.app.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: RunContextWrapper[Any], agent: Agent[Any], tool: Tool, result: object) -> None:
        await self.app.on_tool_end(context, agent, tool, result)


_STREAMS: dict[int, _Entry] = {}
"""Streamed runs started by `HookregRunHooks.run_streamed`, by ``id(result)``, until their stream ends."""


def _unwrapped(error: BaseException) -> BaseException:
    """The `StopRun` behind `error` (the SDK wraps a tool's exception in ``UserError``), else `error`."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, StopRun):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__
    return error


async def _ended(entry: _Entry, error: BaseException) -> BaseException:
    """End the entry's session for `error` (once) and return the exception the caller gets."""
    error = _unwrapped(error)
    if entry.run is not None:
        await entry.run.end_with(error)
    return error


async def _settle(entry: _Entry, result: RunResult | RunResultStreaming) -> None:
    """End the session of a run that returned: ``completed``, ``cancelled`` with no final output; or keep it paused.

    A run paused on approvals stays open, kept by them, for the entry point
    that resumes its state (`_resuming`).
    """
    run = entry.run
    if run is None or run.state.ended:
        return
    if result.interruptions:
        paused = entry.hooks._paused  # noqa: SLF001 -- a HookregRunHooks, this module's own class
        key = _pending(result.interruptions)
        if key not in paused:
            paused[key] = run
            return
        other, paused[key] = paused[key], None
        if other is not None:
            await other.end(RunOutcome(status="completed", turns=other.state.turns))
        await run.end(RunOutcome(status="completed", turns=run.state.turns))
    elif result.final_output is None:
        await run.end(RunOutcome(status="cancelled", reason="the run was cancelled", turns=run.state.turns))
    else:
        await run.end(RunOutcome(status="completed", turns=run.state.turns))


def _resuming(entry: _Entry, given: object) -> _Entry:
    """`entry`, resuming the paused run whose approvals the run state `given` carries (none for other input)."""
    if isinstance(given, SavedRun):
        paused = entry.hooks._paused  # noqa: SLF001 -- a HookregRunHooks, this module's own class
        key = _pending(given.get_interruptions())
        if paused.get(key) is not None:
            entry.resumes = paused.pop(key)
    return entry


def _run_config(base: object) -> RunConfig:
    """`base` as a `RunConfig`: itself, one built from a dict of its fields (``Runner.run`` takes both), or defaults."""
    if base is None:
        return RunConfig()
    if isinstance(base, RunConfig):
        return base
    if isinstance(base, Mapping):
        return RunConfig(**base)
    msg = (
        f"Cannot build hookreg's run config from {base!r}: it is neither a RunConfig nor a dict of its settings. "
        "Pass RunConfig(...), a dict, or None."
    )
    raise HookTypeError(msg)


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


def _sent(patch: RequestPatch, items: Any) -> Any:
    """The input items a call sends: the patch's ``messages`` as SDK items, else `items` (the inverse of `_history`)."""
    if patch.messages is None:
        return items
    sent: list[dict[str, object]] = []
    for message in patch.messages:
        if message.role == "tool":
            sent.append(
                {"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.content}
            )
        elif message.role == "assistant" and message.name and message.tool_call_id:
            call = {"name": message.name, "arguments": message.content}
            sent.append({"type": "function_call", "call_id": message.tool_call_id, **call})
        else:
            sent.append({"role": message.role, "content": message.content})
    return sent


def _settings(patch: RequestPatch, base: ModelSettings) -> ModelSettings:
    """The call's model settings with the patch's per-call settings laid over them."""
    override = ModelSettings(
        temperature=patch.temperature,
        max_tokens=patch.max_tokens,
        tool_choice=patch.tool_choice,
        extra_body=dict(patch.additional_params) if patch.additional_params else None,
    )
    if override == ModelSettings():
        return base
    return base.resolve(override)


def _implicit_settings(model: str | Model | None) -> ModelSettings:
    """The settings the SDK implies for `model`: a named model's defaults, none for a `Model` object."""
    return ModelSettings() if isinstance(model, Model) else get_default_model_settings(model)


def _model_name(model: object) -> str:
    """A model's name: the string itself, the SDK's default for none, a model object's ``model``, else its class."""
    if model is None:
        return get_default_model()
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__


def hookreg_run_hooks(registry: HookRegistry, *, models: Mapping[str, Model] | None = None) -> HookregRunHooks:
    """Return run hooks firing `registry`'s session, turn and model points; start runs with ``hooks.run(...)``.

    Args:
        registry: The hooks to run.
        models: Models a ``model_select`` hook may pick by name.

    Returns:
        A `HookregRunHooks`, reusable across runs.

    Raises:
        HookTypeError: `registry` is not a `HookRegistry`.
    """
    return HookregRunHooks(require_registry(registry, "OpenAI Agents run hooks"), models=models)
