"""Run a hookreg registry as a Strands ``HookProvider`` (``pip install 'hookreg[strands]'``, strands-agents 1.62+).

Attach it with ``Agent(..., hooks=[HookregProvider(registry)])``.
See the adapter's docs page (docs/adapters/strands.md) for where each hook
point runs, and its limits.
"""

from __future__ import annotations

import json
import math
import sys
import uuid
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, cast

from hookreg import (
    HookPoint,
    HookRegistry,
    HookTypeError,
    HookValueError,
    RequestPatch,
    RunContext,
    RunOutcome,
    StopRun,
    ToolCallRequest,
    ToolErrorKind,
)
from hookreg import (
    Message as HookMessage,
)
from hookreg._lifecycle import (
    ANSWER_POINTS,
    DELTA_POINTS,
    FAILURE_POINTS,
    MODEL_CALL_POINTS,
    SUCCESS_POINTS,
    Deltas,
    GateResult,
    RunState,
    approved_copy,
    arun_flow,
    cancel_paused,
    failed,
    gate,
    keep_paused,
    listens,
    log,
    missing_framework,
    outcome_for,
    require_registry,
    require_release,
    run_flow,
    succeeded,
    unanswered,
)

require_release("strands", "strands-agents", (1, 62))  # 1.62 added strands.middleware

try:
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped]  # strands-agents' dependency
    from jsonschema.validators import validator_for  # type: ignore[import-untyped]
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
    from strands.middleware import (
        ExecuteToolContext,
        ExecuteToolStage,
        InvokeModelContext,
        InvokeModelStage,
        MiddlewareNext,
    )
    from strands.models import Model
    from strands.tools.structured_output.structured_output_tool import StructuredOutputTool
    from strands.types.content import Message, Messages, SystemContentBlock, SystemPrompt
    from strands.types.events import ToolResultEvent, TypedEvent
    from strands.types.tools import ToolChoice, ToolResult, ToolSpec, ToolUse
except ImportError as _import_error:  # pragma: no cover - exercised by tests that hide the framework
    raise missing_framework("strands", "strands", _import_error) from _import_error

__all__ = ["HookregProvider", "ToolErrorResult"]

_COMPLETED = frozenset({"end_turn", "stop_sequence"})
_FILTERED = frozenset({"content_filtered", "guardrail_intervened"})
"""Strands' stop reasons for a refused answer, which `FinishReason.from_raw` does not know (its other
spellings, ``end_turn``, ``tool_use``, ``max_tokens``..., it maps)."""

_LAST: Final = math.inf
"""The order of a Strands callback that runs after all others (Strands' own ``HookOrder.SDK_LAST`` is 100)."""

_NOT_RUN: Final = "Tool call not run."
"""A cancel text of last resort: Strands ignores an empty ``cancel_tool`` and would run the tool."""


class _Invocation(Protocol):
    """What every Strands event and middleware context the provider handles says about its invocation."""

    @property
    def agent(self) -> Any: ...  # the agent running the invocation

    @property
    def invocation_state(self) -> dict[str, Any]: ...  # its per-invocation dict


class ToolErrorResult(Exception):  # noqa: N818 -- it names what Strands returned, an error result
    """A Strands tool returned a result with ``status: "error"``: the failure ``on_tool_error`` sees.

    Its message is the result's text.
    """


@dataclass(slots=True, eq=False)
class _Judged:
    """The gate's verdict on one tool call, and the call as it was judged (name, a copy of its args).

    `handed` is the copy of the approved args the callback's gate handed on
    (``None`` until then): a call reaching the innermost gate with that very
    object, unchanged, is the one approved.
    """

    seen: tuple[str, object]
    verdict: GateResult
    handed: object = None

    def covers(self, name: str, args: object) -> bool:
        """Whether the call `name(args)` is the very one judged, or the one approved: its verdict stands.

        Strands' own routing flag does not count: Strands strips it from the
        input once it has routed the call.
        """
        approved = self.verdict.call
        if (name, args) == self.seen or (name == approved.tool_name and args == approved.args):
            return True  # the common case, flag or not: the very call judged or approved
        judged = (self.seen, (approved.tool_name, approved.args))
        return (name, _unrouted(args)) in [(tool, _unrouted(judged_args)) for tool, judged_args in judged]


_ROUTING_FLAG: Final = "_background_execution"
"""The input key a model sets to run a Strands tool as a background task (``strands.background_tasks``' private
``_BACKGROUND_PROPERTY``): Strands reads and strips it before the tool runs, so it is no argument of the tool."""


def _unrouted(args: object) -> object:
    """`args` without Strands' routing flag."""
    if not isinstance(args, Mapping) or _ROUTING_FLAG not in args:
        return args
    return {key: value for key, value in args.items() if key != _ROUTING_FLAG}


@dataclass(slots=True, eq=False)
class _Run:
    """One invocation as the provider tracks it (kept by the provider, keyed by its ``invocation_state``).

    Its `RunState` is built when a hook first needs it (`state`): a run no
    hook reads builds no context, mints no run id, gates no prompt nobody
    judges; until then the run counts its turns itself (`turns`).
    """

    registry: HookRegistry
    agent_name: str | None = None
    prompt: Messages | None = None  # the invocation's messages: the goal, read when the state is built
    turns: int = 0  # the turns started, while the state is not built (then the state counts them)
    kept: RunState | None = None  # the state, once built
    # the latest model call's tool specs as Strands asked for it, and as hookreg passed it on (patched, when a hook
    # listened), and its model; never the call itself, which holds the agent (a paused run must not keep it alive)
    asked: list[ToolSpec] | None = None
    sent: list[ToolSpec] | None = None
    called: Model | None = None
    restricted: frozenset[str] | None = None  # what a hookreg patch left offered, when it took tools away
    model: str | None = None  # the called model's name, once a hook needed it
    malformed: dict[str, str] = field(default_factory=dict)
    results: dict[str, str | ToolResult] = field(
        default_factory=dict
    )  # call id -> the text the model read, or its result
    judged: dict[str, _Judged] = field(default_factory=dict)  # call id -> the gate's verdict, while it is under way
    refused: set[str] = field(default_factory=set)  # calls the innermost gate refused: no outcome point is theirs
    bad_args: set[str] = field(default_factory=set)  # calls whose args hookreg's check refused, left to Strands
    retrying: bool = False
    direct: bool = False  # a tool called outside an invocation (``agent.tool.x()``): the run is that one call
    dropped: weakref.finalize[Any, Any] | None = None  # while paused: ends the run if its agent is collected

    @property
    def state(self) -> RunState:
        """The run's `RunState`, built on first use: its context is of the current turn, its turns counted."""
        state = self.kept
        if state is None:
            run = RunContext(agent_name=self.agent_name, turn=self.turns)
            state = self.kept = RunState(self.registry, run, goal=_last_user_text(self.prompt))
            state.turns = self.turns
        return state

    @property
    def turn_count(self) -> int:
        """The turns started so far (read without building the state)."""
        return self.turns if self.kept is None else self.kept.turns

    # what the latest model call offered, read only when a hook needs it (building them per call would cost
    # every run the time, whoever listens)
    @property
    def specs(self) -> dict[str, ToolSpec]:
        """The tool specs of the latest model call, by name, as Strands would have offered them."""
        return {spec["name"]: spec for spec in self.asked} if self.asked is not None else {}

    @property
    def offered(self) -> frozenset[str] | None:
        """The names of the tools the latest model call offered (``None`` before any model call)."""
        return frozenset(spec["name"] for spec in self.sent) if self.sent is not None else None


def _text(content: object) -> str:
    """The text blocks of a message's or tool result's content, joined."""
    blocks = cast("list[Mapping[str, object]]", content if isinstance(content, list) else [])
    return "".join(str(block["text"]) for block in blocks if "text" in block)


_INTERNAL: dict[type, bool] = {}
"""Tool classes seen, and whether each is Strands' structured-output tool (an ABC: ``isinstance`` runs Python)."""


def _internal(tool: object) -> bool:
    """Whether `tool` is Strands' structured-output tool, which is not a user tool: no tool point judges it."""
    try:
        return _INTERNAL[type(tool)]
    except KeyError:
        internal = _INTERNAL[type(tool)] = isinstance(tool, StructuredOutputTool)
        return internal


def _last_user_text(messages: Messages | None) -> str:
    return next((_text(m["content"]) for m in reversed(messages or []) if m["role"] == "user"), "")


def _stop_in(error: BaseException) -> StopRun | None:
    """The `StopRun` behind `error`: itself, or the cause Strands wrapped in ``EventLoopException``."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        if isinstance(current, StopRun):
            return current
        seen.append(current)
        current = current.__cause__
    return None


_STREAM_POINTS = (*DELTA_POINTS, HookPoint.INVALID_TOOL_CALL)
"""What reads a model call's raw chunks: the delta points, and ``invalid_tool_call`` (the raw text of malformed
tool input)."""
_CALL_READERS = (*MODEL_CALL_POINTS, *_STREAM_POINTS, HookPoint.MODEL_TURN_FINISHED)
"""What needs the provider's model-call middleware: the points it dispatches, and what reads the call it notes (the
tools offered, for ``invalid_tool_call``; the model called, for ``model_turn_finished``)."""
_START_POINTS = (HookPoint.ON_SESSION_START, HookPoint.USER_PROMPT_SUBMIT)
"""What `RunState.start` fires."""
_GATE_POINTS = (HookPoint.TRANSFORM_TOOL_INPUT, HookPoint.PRE_TOOL_CALL_DECIDE)
_CALL_POINTS = (*_GATE_POINTS, HookPoint.INVALID_TOOL_CALL)
"""Where a hook can refuse or rewrite a call: with none there, the gate lets every offered call run as it is."""
_OUTCOME_POINTS = (*SUCCESS_POINTS, *FAILURE_POINTS)
_UNSUPPORTED = ("temperature", "max_tokens", "additional_params", "messages")
_CHOICES = {"auto": "auto", "any": "any", "required": "any"}


def _escaping() -> BaseException | None:
    """The exception ending an invocation pass (a hook's `StopRun` unwrapped), read in ``AfterInvocationEvent``.

    Strands fires that event in the ``finally`` of the pass, while the
    exception is being handled.
    """
    error = sys.exception()
    return None if error is None else _stop_in(error) or error


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
    """The tool specs offered and the tool choice, after the patch (``active_tools`` restricts user tools only)."""
    active, choice = patch.active_tools, patch.tool_choice
    if active is not None:  # Strands' structured-output tool stays offered
        internal = context.agent.tool_registry.dynamic_tools.items()
        active = active | {name for name, tool in internal if isinstance(tool, StructuredOutputTool)}
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


def _schema_error(spec: ToolSpec | None, args: Mapping[str, object]) -> str | None:
    """Why `args` do not fit the tool's JSON input schema (Strands' own dependency ``jsonschema``), or ``None``."""
    schema = spec.get("inputSchema", {}).get("json") if spec else None
    if not isinstance(schema, Mapping):
        return None
    error = best_match(validator_for(schema)(schema).iter_errors(cast("Any", dict(args))))
    return None if error is None else str(error.message)


# --- Strands' private API, each use in one function ----------------------------------------


async def _append(agent: Any, *messages: Message) -> None:
    """Add `messages` to the conversation as Strands' own loop does, firing ``MessageAddedEvent``.

    Private API: Strands 1.62 has no public way to add a message that session
    managers persist (they listen to ``MessageAddedEvent``; writing
    ``agent.messages`` bypasses them), so this calls ``Agent._append_messages``,
    the one function its event loop appends through. A test pins it.
    """
    await agent._append_messages(*messages)  # noqa: SLF001 -- Strands private, isolated here: see the docstring


def _resume(event: AfterInvocationEvent, prompt: str, on_abandoned: Callable[[object], Awaitable[None]]) -> None:
    """Resume the agent after this pass with `prompt` as the next user message; `on_abandoned` if it never runs.

    Private API: the public ``AfterInvocationEvent.resume`` says nothing when
    the resumed pass never starts (a later ``AfterInvocationEvent`` callback
    or the next pass's ``BeforeInvocationEvent`` raises), which would leave the
    session without its end; Strands 1.62's own continuation inputs
    (``strands.agent._continuation``, as its background tasks use them) call
    `on_abandoned` with a reason then. A test pins it.
    """
    from strands.agent import _continuation  # noqa: PLC0415 -- private, see the docstring

    _continuation.add_input(event, _continuation._ContinuationInput(args=prompt, on_abandoned=on_abandoned))  # noqa: SLF001


def _tool_named(agent: Any, name: str) -> Any:
    """The agent's tool called `name` (a dynamic tool first, as Strands looks tools up), or ``None``."""
    registry = agent.tool_registry
    return registry.dynamic_tools.get(name) or registry.registry.get(name)


# --- the provider ---------------------------------------------------------------------------


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
        self.registry: HookRegistry = require_registry(registry, "HookregProvider")
        self.models: Mapping[str, Model] = dict(models or {})
        for name, model in self.models.items():
            if not isinstance(model, Model):
                msg = (
                    f"Cannot build HookregProvider with model {name!r} = {model!r}: it is not a Strands model. "
                    "Pass models={name: model} with strands.models.Model instances, e.g. BedrockModel(...)."
                )
                raise HookTypeError(msg)
        # agent -> the layers the provider added to it (`_layer`): each is added the first time a hook needs it
        self._layers: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
        # (id(agent), id(invocation_state)) -> (agent, that dict, its run): the key is both because Strands
        # multi-agent orchestrators hand one invocation_state to every node, concurrently; they are held so
        # their ids are not reused while the run lives
        self._runs: dict[tuple[int, int], tuple[Any, dict[str, Any], _Run]] = {}
        # agent -> its run paused by a Strands interrupt: resuming it (a new invocation) goes on with that run; one
        # never resumed ends cancelled when its agent or this provider is collected, or at interpreter exit
        self._paused: weakref.WeakKeyDictionary[Any, _Run] = weakref.WeakKeyDictionary()
        keep_paused(self, self._paused)
        self._pausing = False  # whether an interrupt ever paused a run (until then, no paused run is looked for)
        # whether a patch ever took a tool away from a call (until then, a call nobody judges skips the gate at once)
        self._restricts = False

    def register_hooks(self, registry: StrandsHookRegistry, **kwargs: Any) -> None:
        """Subscribe to the Strands events the hook points map to (called by ``Agent``).

        Args:
            registry: The agent's Strands hook registry.
            **kwargs: Unused; Strands reserves them for future use.
        """
        # after every other BeforeInvocationEvent callback: one that raises or refuses the invocation leaves no
        # session behind (Strands tells nobody), and the prompt gate judges the messages as they will be sent
        registry.add_callback(BeforeInvocationEvent, self.before_invocation, order=_LAST)
        registry.add_callback(BeforeModelCallEvent, self.before_model_call)
        registry.add_callback(AfterModelCallEvent, self.after_model_call)
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)
        registry.add_callback(AfterToolCallEvent, self.after_tool_call)
        registry.add_callback(AfterInvocationEvent, self.after_invocation)
        # after every other AfterInvocationEvent callback: each sees the pass end as without hookreg
        registry.add_callback(AfterInvocationEvent, self.unwrap_stop, order=_LAST)

    def _layer(self, agent: Any, layer: str) -> None:
        """Add the provider's middleware `layer` (``"model"``, ``"tool"``) to `agent`, once.

        Each is added the first time a hook needs it, just before Strands
        composes that stage's chain (an agent nobody hooks gets none): so each
        sits inside every middleware of its stage added before it, and the
        tool gate innermost, after every middleware the agent's plugins added.
        """
        added = self._layers.setdefault(agent, set())
        if layer in added:
            return
        added.add(layer)
        if layer == "model":
            agent.add_middleware(InvokeModelStage, self.invoke_model)
        else:
            agent.add_middleware(ExecuteToolStage, self.execute_tool)

    def _current(self, where: _Invocation) -> _Run | None:
        """The run of the invocation `where` belongs to, or ``None`` outside an invocation."""
        agent, state = where.agent, where.invocation_state
        entry = self._runs.get((id(agent), id(state)))
        return entry[2] if entry is not None and entry[0] is agent and entry[1] is state else None

    def _run(self, where: _Invocation) -> _Run:
        """This invocation's run (a tool called outside an invocation gets a run of its own, not kept)."""
        return self._current(where) or _Run(self.registry)

    def _tool_run(self, where: _Invocation) -> _Run:
        """The run of a tool call: its invocation's, else (``agent.tool.x()``) one kept until the call is answered.

        A direct call's run is kept so that its two gates (the callback and the
        innermost middleware) share the verdict; `_answered` drops it.
        """
        run = self._current(where)
        if run is None:
            run = _Run(self.registry, direct=True)
            self._runs[id(where.agent), id(where.invocation_state)] = (where.agent, where.invocation_state, run)
        return run

    def _answered(self, where: _Invocation) -> _Run:
        """The run of a tool call that was answered; a direct call's run is forgotten with it."""
        run = self._tool_run(where)
        if run.direct:
            del self._runs[id(where.agent), id(where.invocation_state)]
        return run

    async def _end(self, where: _Invocation, outcome: RunOutcome, error: BaseException | None) -> None:
        """Fire ``on_session_end`` once and forget the run."""
        run = self._current(where)
        if run is not None:
            del self._runs[id(where.agent), id(where.invocation_state)]
            await self._ended(run, outcome, error)

    async def _ended(self, run: _Run, outcome: RunOutcome, error: BaseException | None) -> None:
        """Fire ``on_session_end`` for `run`, once (a run no hook read, with no end hook: nothing to fire)."""
        if run.kept is not None or self.registry.has_hooks(HookPoint.ON_SESSION_END):
            await arun_flow(self.registry, run.state.end(outcome, error))

    async def _abandoned(self, where: _Invocation, reason: object) -> None:
        """End the session of a run whose resumed pass never started (Strands abandoned the resume)."""
        run = self._current(where)
        if run is None:
            return
        # Strands calls this while handling the error that stopped the resume; its reason is only a summary
        error = sys.exception() or (reason if isinstance(reason, BaseException) else RuntimeError(str(reason)))
        await self._end(where, outcome_for(error, run.turn_count), error)

    async def before_invocation(self, event: BeforeInvocationEvent) -> None:
        """Start the session and gate the prompt; a continuation asked for by ``stop`` skips both.

        Raises:
            StopRun: The prompt was denied, or a hook stopped the run.
        """
        if event.messages is None or event.cancel or self._current(event) is not None:
            return  # the deprecated structured_output_async (no messages), refused by another callback, a continuation
        key = id(event.agent), id(event.invocation_state)
        paused = self._paused.pop(event.agent, None) if self._pausing else None
        if paused is not None and paused.dropped is not None:
            paused.dropped.detach()
        if paused is not None and not event.messages:  # Strands takes an interrupt's answers as no new message
            self._runs[key] = (event.agent, event.invocation_state, paused)  # the paused run goes on
            return
        if paused is not None:  # Strands dropped the interrupt (a new prompt): the paused run never goes on
            reason = "the run paused by an interrupt was not resumed: a new prompt started a new run"
            await self._ended(paused, RunOutcome(status="cancelled", reason=reason, turns=paused.turn_count), None)
        # the prompt's content as sent (a guardrail's redaction replaces it in the history later)
        prompt: Messages = []
        for message in reversed(event.messages):
            if message["role"] == "user":
                prompt = [{"role": "user", "content": message["content"]}]
                break
        run = _Run(self.registry, agent_name=getattr(event.agent, "name", None), prompt=prompt)
        self._runs[key] = (event.agent, event.invocation_state, run)
        if not listens(self.registry, _START_POINTS):
            return  # the session starts with no context built: a hook registered later builds it (`_Run.state`)
        try:
            outcome = await arun_flow(self.registry, run.state.start())
        except BaseException as error:
            await self._end(event, outcome_for(error), error)
            raise
        if outcome is not None:
            stop = StopRun(outcome.reason)
            await self._end(event, outcome, stop)
            raise stop

    async def before_model_call(self, event: BeforeModelCallEvent) -> None:
        """Start the next turn and gate it with ``pre_turn``; a retried call stays in its turn.

        Raises:
            StopRun: The turn was denied (the run ends ``stopped``).
        """
        registry = self.registry
        if listens(registry, _CALL_READERS):
            self._layer(event.agent, "model")
        run = self._current(event) or _Run(registry)
        if run.retrying:
            run.retrying = False
            return
        gated = registry.has_hooks(HookPoint.PRE_TURN)
        if run.kept is None and not gated:
            run.turns += 1  # no hook reads the run yet: the state, once built, starts from this count
            return
        # with no pre_turn hook the flow dispatches nothing: driven in place, with no coroutine around it
        outcome = await arun_flow(registry, run.state.turn()) if gated else run_flow(registry, run.state.turn())
        if outcome is not None:
            stop = StopRun(outcome.reason)
            await arun_flow(self.registry, run.state.end(outcome, stop))
            raise stop

    def _default_model(self, model: object) -> str:
        """The model's name: its key in ``models``, else its config's ``model_id``, else its class name.

        Asked only when a hook needs the name: Strands calls a model through
        ``stream`` alone, so a duck-typed model may have no ``get_config``.
        """
        named = next((name for name, known in self.models.items() if known is model), None)
        if named is not None:
            return named
        get_config = getattr(model, "get_config", None)
        config = get_config() if callable(get_config) else None
        model_id = config.get("model_id") if isinstance(config, Mapping) else None
        return model_id if isinstance(model_id, str) else type(model).__name__

    async def _patched(self, context: InvokeModelContext, run: _Run) -> InvokeModelContext:
        """The model call with the ``pre_model_call`` patch applied and the ``model_select`` pick swapped in."""
        base = RequestPatch(active_tools=frozenset(spec["name"] for spec in context.tool_specs))
        default = self._default_model(context.model)
        flow = run.state.model_call(base, default, lambda: _history(context.messages))
        patch, pick = await arun_flow(self.registry, flow)
        run.model = pick
        unsupported = [name for name in _UNSUPPORTED if getattr(patch, name) is not None]
        if unsupported:
            log("warning", "patch_field_unsupported", framework="strands", fields=unsupported)
        model = context.model if pick == default else self._model_named(pick)
        specs, choice = _tools(context, patch)
        offered = frozenset(spec["name"] for spec in specs)
        run.restricted = offered if offered != frozenset(spec["name"] for spec in context.tool_specs) else None
        self._restricts = self._restricts or run.restricted is not None
        return context.replace(
            system_prompt=_system(context.system_prompt, patch), tool_specs=specs, tool_choice=choice, model=model
        )

    def _model_named(self, name: str) -> Model:
        """The model of ``models`` a ``model_select`` hook picked by `name`."""
        if name not in self.models:
            msg = (
                f"Cannot call model {name!r} picked by a model_select hook: HookregProvider has no model of "
                f"that name (it has {sorted(self.models)}). Pass it as HookregProvider(registry, "
                f"models={{{name!r}: model}}), or return one of those names."
            )
            raise HookValueError(msg, point=HookPoint.MODEL_SELECT)
        return self.models[name]

    async def _observe(self, chunk: Mapping[str, Any], deltas: Deltas, call: dict[str, str], run: _Run) -> None:
        """Fire the delta point for one raw model chunk; note the raw argument text of the `call` under way."""
        start = chunk.get("contentBlockStart", {}).get("start", {}).get("toolUse")
        if start is not None:
            call.update(call_id=str(start["toolUseId"]), tool=start["name"], args="")
        delta = chunk.get("contentBlockDelta", {}).get("delta", {})
        if "text" in delta:
            await arun_flow(self.registry, deltas.text(delta["text"]))
        reasoning = delta.get("reasoningContent", {}).get("text")
        if reasoning is not None:
            await arun_flow(self.registry, deltas.reasoning(reasoning))
        piece = delta.get("toolUse", {}).get("input")
        if piece is not None and "call_id" in call:
            call["args"] += piece
            await arun_flow(self.registry, deltas.tool_call(call["call_id"], call["tool"], piece))
        if "contentBlockStop" in chunk and "call_id" in call:
            raw, call_id = call.pop("args"), call.pop("call_id")
            call.pop("tool")
            if raw.strip():
                try:
                    json.loads(raw)
                except ValueError:  # Strands gives the tool {} instead: keep what the model sent
                    run.malformed[call_id] = raw

    def invoke_model(
        self, context: InvokeModelContext, next_fn: MiddlewareNext[InvokeModelContext, TypedEvent]
    ) -> AsyncGenerator[TypedEvent, None]:
        """Strands ``InvokeModelStage`` middleware: patch and route the call, note what it offers, observe it.

        Chosen per call: with no hook at ``pre_model_call``, ``model_select``,
        a delta point or ``invalid_tool_call``, the call is Strands' own
        stream, with no layer of hookreg's around it.

        Args:
            context: The model call Strands is about to make.
            next_fn: The rest of the middleware chain, ending in the model.

        Returns:
            The model call's events, unchanged.
        """
        run = self._run(context)
        run.asked = run.sent = context.tool_specs
        run.called = context.model
        run.model = run.restricted = None
        patching, observing = listens(self.registry, MODEL_CALL_POINTS), listens(self.registry, _STREAM_POINTS)
        if not patching and not observing:
            return next_fn(context)  # Strands' own stream: no generator of hookreg's re-yields its events
        return self._invoke_model(context, next_fn, run, patching=patching, observing=observing)

    async def _invoke_model(
        self,
        context: InvokeModelContext,
        next_fn: MiddlewareNext[InvokeModelContext, TypedEvent],
        run: _Run,
        *,
        patching: bool,
        observing: bool,
    ) -> AsyncGenerator[TypedEvent, None]:
        """The model call with the patch applied (`patching`), its raw chunks observed (`observing`)."""
        if patching:
            context = await self._patched(context, run)
            run.sent = context.tool_specs
        if not observing:
            async for event in next_fn(context):
                yield event
            return
        deltas, call = run.state.deltas(), dict[str, str]()
        async for event in next_fn(context):
            chunk = event.get("event")  # documented stream event "event": the model's raw chunk (a StreamEvent)
            if isinstance(chunk, Mapping):
                await self._observe(chunk, deltas, call, run)
            yield event

    async def _settle_history(self, agent: Any, run: _Run, stop: StopRun) -> None:
        """Leave the conversation whole after a stop.

        Each tool call of the stopped answer gets a tool result (its result if
        it ran, else `STOPPED_NOTICE`), and a conversation that would end on a
        user message gets an assistant message saying the run stopped, so the
        next invocation's prompt keeps the roles alternating.
        """
        messages: Messages = agent.messages
        last = messages[-1] if messages else None
        if last is None:
            return
        added: list[Message] = []
        pending = [str(block["toolUse"]["toolUseId"]) for block in last["content"] if "toolUse" in block]
        if last["role"] == "assistant" and pending:
            ran = {
                call_id: text if isinstance(text, str) else _text(text["content"])
                for call_id, text in run.results.items()
                if call_id in pending
            }
            notices = dict(unanswered(pending, ran))
            results = [
                ToolResult(toolUseId=call_id, status="error", content=[{"text": notices[call_id]}])
                if call_id in notices
                else ToolResult(toolUseId=call_id, status="success", content=[{"text": ran[call_id]}])
                for call_id in pending
            ]
            added.append({"role": "user", "content": [{"toolResult": result} for result in results]})
        if added or last["role"] == "user":
            closing = f"Run stopped: {stop.reason}" if stop.reason else "Run stopped."
            added.append({"role": "assistant", "content": [{"text": closing}]})
        await _append(agent, *added)

    async def after_model_call(self, event: AfterModelCallEvent) -> None:
        """Judge the answer (``model_turn_finished``), then observe the kept one (``post_turn``).

        Not for a failed model call.
        """
        if event.stop_response is None or not listens(self.registry, ANSWER_POINTS):
            return
        run = self._run(event)
        if run.kept is not None and run.kept.ended:
            return
        message: Message = event.stop_response.message
        raw, text = event.stop_response.stop_reason, _text(message["content"])
        calls = _tool_use(message)
        usage = cast("Mapping[str, object]", message.get("metadata", {}).get("usage", {}))
        model = message_id = None
        if self.registry.has_hooks(HookPoint.MODEL_TURN_FINISHED):  # asking a model its name, minting an id: for a hook
            if not message.get("tracking_id"):  # Strands keeps a caller's UUID v4 as the message's id
                message["tracking_id"] = str(uuid.uuid4())
            message_id, model = message.get("tracking_id"), run.model or self._default_model(run.called)
        answered = run.state.answered(
            text,
            calls,
            raw_finish_reason=raw,
            normalised="content_filter" if raw in _FILTERED else None,
            usage={key: value for key, value in usage.items() if isinstance(value, int)},
            message_id=message_id,
            model=model,
        )
        action = await arun_flow(self.registry, answered)
        if action.kind == "feedback":
            feedback: Message = {"role": "user", "content": [{"text": action.feedback or ""}]}
            await _append(event.agent, {"role": "assistant", "content": message["content"]}, feedback)
        if action.kind != "continue":
            event.retry = run.retrying = True

    def _judging(self) -> bool:
        """Whether any hook judges a call's arguments (with none, nothing is recorded, copied or judged again)."""
        return listens(self.registry, _GATE_POINTS)

    async def _verdict(self, run: _Run, agent: Any, tool: Any, use: ToolUse, *, judging: bool) -> GateResult:
        """The gate's verdict on the call `use` (`tool`: what Strands resolved it to): an earlier one, else a new one.

        An earlier verdict on this call stands only when the call comes back
        identical, as it was judged or as it was approved (Strands fires
        ``BeforeToolCallEvent`` again when an interrupted call resumes; the
        innermost gate sees what the first one handed on), so no hook runs
        twice for one call. Anything else (another callback's or middleware's
        edit, an interrupt answer) is judged again.

        hookreg's own checks (unknown tool, malformed input, schema) run only
        when an ``invalid_tool_call`` hook listens, and decide only when one
        returns an action; otherwise the call is Strands' to look up and
        validate (a tool middleware may serve a name the agent lacks), and
        only a tool a hookreg patch took away is refused. `judging`: whether a
        hook judges the call's arguments (then the verdict is kept for this call).
        """
        call_id, name = str(use["toolUseId"]), use["name"]
        earlier = run.judged.get(call_id)
        if earlier is not None and earlier.covers(name, use["input"]):
            return earlier.verdict
        raw = run.malformed.pop(call_id, None)
        checking = self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL)
        # the agent's tools (Strands validates every spec to list them) only where they count: for hookreg's checks,
        # or the text of a call a patch refused
        names = {name}
        if checking or run.restricted is not None:
            names = {*agent.tool_names, *([tool.tool_name] if tool is not None else [])}
        verdict: GateResult | None = None
        if checking:
            specs = run.specs
            if tool is not None:
                specs.setdefault(tool.tool_name, tool.tool_spec)
            # when every invalid_tool_call hook passes, an invalid call is Strands' own to handle (a tool middleware
            # may serve a name the agent lacks; Strands runs or refuses arguments its own way) unless it calls a
            # user tool a hookreg patch took away, which never runs
            steps = gate(
                self.registry,
                run.state.run,
                name,
                call_id,
                raw if raw is not None else use["input"],
                known=names,
                offered=run.offered,
                validate=lambda tool_name, tool_args: _schema_error(specs.get(tool_name), tool_args),
                passing=run.restricted is None or name in run.restricted,
            )
            verdict = await arun_flow(self.registry, steps)
            if verdict.status == "passed" and verdict.kind is ToolErrorKind.INVALID_ARGS:
                run.bad_args.add(call_id)  # the tool exists and was offered: the problem was its arguments
        if verdict is None or verdict.status == "passed":
            # Strands looks the tool up and validates its args its own way (a tool middleware may serve a name the
            # agent lacks); only a user tool a hookreg patch took away never runs
            args = use["input"] if isinstance(use["input"], Mapping) else {}
            steps = gate(
                self.registry, run.state.run, name, call_id, args, known={*names, name}, offered=run.restricted
            )
            verdict = await arun_flow(self.registry, steps)
        if judging:
            # the call as judged: the approved args themselves (hookreg's own deep copy) when they are equal to it
            judged = verdict.call.args if verdict.call.tool_name == name and use["input"] == verdict.call.args else None
            seen = approved_copy(name, use["input"]) if judged is None else judged
            run.judged[call_id] = _Judged((name, seen), verdict)
        return verdict

    async def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        """Gate the call (`_verdict`) before any other extension asks a human; one that may not run is cancelled.

        The tool gets a copy of the approved args, judged again innermost
        (`execute_tool`) if another extension edits them on the way.
        """
        if not (self.registry or self._restricts):
            return  # no hook, and no patch ever took a tool away: the call is Strands' own
        judging, checking = self._judging(), self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL)
        if not (judging or checking or self._restricts):
            return  # nothing can refuse or rewrite the call (no patch ever took a tool away): it is Strands' own
        if _internal(event.selected_tool):
            return  # Strands' own structured-output tool: not a user tool call, no tool point judges it
        run = self._tool_run(event)
        use: ToolUse = event.tool_use
        if not (judging or checking) and (run.restricted is None or use["name"] in run.restricted):
            return  # nothing can refuse or rewrite the call: it is Strands' own to run or refuse
        if judging:
            self._layer(event.agent, "tool")  # the innermost gate, for edits made after this callback
        verdict = await self._verdict(run, event.agent, event.selected_tool, use, judging=judging)
        if not verdict.allowed:
            event.cancel_tool = verdict.text or _NOT_RUN
            run.results[str(use["toolUseId"])] = event.cancel_tool
            return
        call = verdict.call
        # the args handed on are a copy, private to hookreg's verdict: an edit in place is told apart from it
        if call.tool_name != use["name"] or judging:
            handed = approved_copy(call.tool_name, call.args)
            event.tool_use = cast("ToolUse", {**use, "name": call.tool_name, "input": handed})
            if judging:
                run.judged[str(use["toolUseId"])].handed = handed

    def execute_tool(
        self, context: ExecuteToolContext, next_fn: MiddlewareNext[ExecuteToolContext, TypedEvent]
    ) -> AsyncGenerator[TypedEvent, None]:
        """Strands ``ExecuteToolStage`` middleware, innermost: judge the call as it will run, after every edit.

        A call the gate refuses here gets the refusal as its error result and
        never runs; one it approves runs with a copy of the approved args.
        Chosen per call: with no hook judging arguments, the call is Strands'
        own, with no layer of hookreg's around it.

        Args:
            context: The tool call Strands is about to run.
            next_fn: The rest of the middleware chain, ending in the tool.

        Returns:
            The tool's events.
        """
        if not self._judging() or _internal(context.tool) or self._as_handed(context):
            return next_fn(context)
        return self._execute_judged(context, next_fn)

    def _as_handed(self, context: ExecuteToolContext) -> bool:
        """Whether the call arrives as the callback's gate handed it on: its own copy of the approved args, unchanged.

        Then it is the call approved, and runs with no layer of hookreg's around it.
        """
        run, use = self._current(context), context.tool_use
        judged = None if run is None else run.judged.get(str(use["toolUseId"]))
        if judged is None or judged.handed is None or use["input"] is not judged.handed:
            return False
        call = judged.verdict.call
        return use["name"] == call.tool_name and judged.handed == call.args

    async def _execute_judged(
        self, context: ExecuteToolContext, next_fn: MiddlewareNext[ExecuteToolContext, TypedEvent]
    ) -> AsyncGenerator[TypedEvent, None]:
        """Judge the call again, as it will run; run the approved call, or answer with the refusal."""
        run, use = self._tool_run(context), context.tool_use
        call_id = str(use["toolUseId"])
        verdict = await self._verdict(run, context.agent, context.tool, use, judging=True)
        if not verdict.allowed:
            run.refused.add(call_id)
            run.results[call_id] = text = verdict.text or _NOT_RUN
            yield ToolResultEvent(ToolResult(toolUseId=call_id, status="error", content=[{"text": text}]))
            return
        call = verdict.call
        tool = context.tool if call.tool_name == use["name"] else _tool_named(context.agent, call.tool_name)
        args = call.args if _ROUTING_FLAG in use["input"] else _unrouted(call.args)  # as Strands routed the call
        approved = cast("ToolUse", {**use, "name": call.tool_name, "input": approved_copy(call.tool_name, args)})
        async for event in next_fn(context.replace(tool=tool, tool_use=approved)):
            yield event

    async def after_tool_call(self, event: AfterToolCallEvent) -> None:
        """Report the outcome and rewrite the text the model reads (not for a call the gate cancelled).

        Raises:
            StopRun: A hook stopped the run here (Strands turns an exception of
                this callback into an error result and calls it again with it).
        """
        if isinstance(event.exception, StopRun):
            raise event.exception
        if _internal(event.selected_tool):
            return
        run, use = self._answered(event), event.tool_use
        call_id = str(use["toolUseId"])
        bad_args = call_id in run.bad_args
        run.bad_args.discard(call_id)
        if event.cancel_message is not None:
            return
        judged = run.judged.pop(call_id, None)  # the call is answered: a retry is judged anew
        if call_id in run.refused:
            run.refused.discard(call_id)  # the innermost gate refused it: permission_denied was its outcome
            return
        if not listens(self.registry, _OUTCOME_POINTS):
            run.results[call_id] = event.result  # its text is read only if the run stops before the batch is answered
            return
        text = run.results[call_id] = _text(event.result["content"])
        if judged is not None:
            call = judged.verdict.call  # the approved call, as the tool got it
        else:
            call = ToolCallRequest(call_id, use["name"], use["input"] if isinstance(use["input"], Mapping) else {})
        ms = (event.duration or 0.0) * 1000
        if event.exception is not None or event.result.get("status") == "error":
            error = event.exception or ToolErrorResult(text)
            kind = None
            if bad_args:  # Strands refused arguments hookreg's schema check had found wrong
                kind = ToolErrorKind.INVALID_ARGS
            elif event.selected_tool is None:  # Strands has no such tool
                kind = ToolErrorKind.NOT_FOUND
            steps = failed(self.registry, run.state.run, call, error, kind=kind, message=text, duration_ms=ms)
        else:
            steps = succeeded(self.registry, run.state.run, call, text, presentation=text, duration_ms=ms)
        shown = await arun_flow(self.registry, steps)
        if shown != text:
            run.results[call.call_id] = shown
            event.result = cast("ToolResult", {**event.result, "content": [{"text": shown}]})

    def unwrap_stop(self, event: AfterInvocationEvent) -> None:
        """Hand a hook's `StopRun` to the caller as itself, not inside Strands' ``EventLoopException`` around it.

        The last ``AfterInvocationEvent`` callback (Strands fires the event in
        the ``finally`` of the pass, while its exception is handled): what it
        raises replaces that exception, once every other callback has run. A
        sync callback: Strands calls it without a coroutine.

        Raises:
            StopRun: The one a hook raised inside the pass.
        """
        error = sys.exception() if event.result is None else None  # with a result, the pass did not raise
        stop = None if error is None or isinstance(error, StopRun) else _stop_in(error)
        if stop is not None:
            raise stop from None

    async def after_invocation(self, event: AfterInvocationEvent) -> None:
        """Ask ``stop`` when the agent finished (a deny resumes it), else end the session with its outcome.

        Raises:
            StopRun: A ``stop`` hook stopped the run.
        """
        run = self._current(event)
        if run is None:
            return
        result, turns = event.result, run.turn_count
        if run.kept is None and not self.registry and (result is None or result.stop_reason != "interrupt"):
            del self._runs[id(event.agent), id(event.invocation_state)]  # no hook read the run, none is left to
            return
        escaped = _escaping() if result is None else None  # the pass raised (or its caller closed the stream)
        if isinstance(escaped, StopRun):
            await self._settle_history(event.agent, run, escaped)
        if escaped is not None:
            await self._end(event, outcome_for(escaped, turns), escaped)
            return
        if result is None:  # Strands ends the pass before its middleware sees why: the caller closed the stream
            reason = "the invocation ended without a result or an error: the caller closed its stream"
            await self._end(event, RunOutcome(status="cancelled", reason=reason, turns=turns), None)
            return
        # a run Strands' structured-output tool ended stops on "tool_use" with the output: it completed
        if result.stop_reason in _COMPLETED:
            try:  # the answer's text only for a stop hook
                asked = self.registry.has_hooks(HookPoint.STOP)
                feedback = (
                    await arun_flow(self.registry, run.state.stop(_text(result.message["content"]))) if asked else None
                )
            except BaseException as error:
                await self._end(event, outcome_for(error, turns), error)
                raise
            if feedback is not None:
                _resume(event, feedback, lambda reason: self._abandoned(event, reason))
                return
            outcome = RunOutcome(status="completed", turns=turns)
        elif result.structured_output is not None:  # Strands' structured-output tool ended it (on "tool_use")
            outcome = RunOutcome(status="completed", turns=turns)
        elif result.stop_reason == "interrupt":  # paused for a human: the run goes on when the agent resumes
            del self._runs[id(event.agent), id(event.invocation_state)]
            self._paused[event.agent] = run
            run.dropped = weakref.finalize(event.agent, cancel_paused, [run.state])
            self._pausing = True
            return
        elif result.stop_reason == "cancelled":
            outcome = RunOutcome(status="cancelled", reason="cancelled by agent.cancel()", turns=turns)
        else:
            outcome = RunOutcome(status="stopped", reason=str(result.stop_reason), turns=turns)
        await self._end(event, outcome, None)
