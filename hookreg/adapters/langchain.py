"""Run a hookreg registry as LangChain v1 agent middleware (``pip install 'hookreg[langchain]'``).

Attach it with ``create_agent(..., middleware=HookregMiddleware(registry).around([...]))``.

See the adapter's docs page (docs/adapters/langchain.md) for where each hook
point runs, and its limits.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, TypeVar, cast, get_origin, get_type_hints

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
    TurnAction,
)
from hookreg._lifecycle import (
    ANSWER_POINTS,
    DELTA_POINTS,
    MODEL_CALL_POINTS,
    NOT_RESUMED,
    STOPPED_NOTICE,
    Deltas,
    GateResult,
    RunState,
    Steps,
    Validator,
    approved_copy,
    arun_flow,
    describe,
    error_text,
    failed,
    gate,
    keep_paused,
    missing_framework,
    require_registry,
    require_release,
    run_flow,
    succeeded,
    unanswered,
)

__all__ = ["HookregMiddleware"]

require_release("langchain", "langchain", (1, 4, 10))  # the tested floor: HumanInTheLoopMiddleware modes

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ExtendedModelResponse,
        HumanInTheLoopMiddleware,
        ModelRequest,
        ModelResponse,
        hook_config,
    )
    from langchain.agents.middleware import ToolCallRequest as LangChainToolCall
    from langchain.tools import ToolRuntime
    from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
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
        convert_to_messages,
    )
    from langchain_core.outputs import ChatGenerationChunk, GenerationChunk
    from langchain_core.tools import BaseTool, ToolException
    from langchain_core.tracers.context import register_configure_hook
    from langgraph.config import get_config
    from langgraph.errors import GraphBubbleUp
    from langgraph.runtime import Runtime, get_runtime
    from langgraph.types import Command
    from pydantic import BaseModel, ValidationError
except ImportError as _import_error:  # pragma: no cover - exercised by a test that hides the framework
    raise missing_framework("langchain", "langchain", _import_error) from _import_error

_R = TypeVar("_R")
_ToolResponse: TypeAlias = "ToolMessage | Command[Any]"
_Update: TypeAlias = "dict[str, Any] | None"
_ModelReply: TypeAlias = "ModelResponse[Any] | ExtendedModelResponse[Any]"
_Traced: TypeAlias = "Coroutine[Any, Any, _R]"
"""What hookreg's async ``awrap_*`` layers return: their work as a coroutine, from a plain method.

LangChain traces every ``wrap_*`` layer with LangSmith's ``traceable``, whose
wrapper for a coroutine function runs its bookkeeping in a worker thread
twice per call — tracing on or off — and those two thread hops cost more
than the rest of the layer. A plain method that returns the coroutine gets
``traceable``'s inline wrapper instead; LangChain awaits what it returns as
before. Its span (when LangSmith tracing is on) then closes as the layer
hands back its coroutine, and what runs inside it is traced under the model
or tool node, as without hookreg.
"""
# The points that may change a model request: with no hook there, reading the request into a patch is skipped.
# The points of a tool call: with no hook at any of them, a call LangChain makes runs as it made it.
_TOOL_POINTS = (
    HookPoint.INVALID_TOOL_CALL,
    HookPoint.TRANSFORM_TOOL_INPUT,
    HookPoint.PRE_TOOL_CALL_DECIDE,
    HookPoint.TRANSFORM_TOOL_RESULT,
    HookPoint.POST_TOOL_CALL,
    HookPoint.POST_TOOL_CALL_FAILURE,
    HookPoint.ON_TOOL_ERROR,
)
# The points that read a model's answer (`_after_model`): with none, and no review under way, it is not read.
_ANSWER_READERS = (HookPoint.INVALID_TOOL_CALL, *ANSWER_POINTS, HookPoint.STOP)
# The points that need the model's stream: the deltas, and invalid_tool_call (malformed streamed argument text).
_OBSERVING_POINTS = (*DELTA_POINTS, HookPoint.INVALID_TOOL_CALL)
# The middleware hooks LangChain makes a graph node of around the model call, and those that may change a tool call.
_MODEL_NODES = ("before_model", "abefore_model", "after_model", "aafter_model")
_TOOL_EDITS = ("wrap_tool_call", "awrap_tool_call", "after_model", "aafter_model")
_NS_SEP: Final = "|"  # how LangGraph joins a subgraph's checkpoint namespace to its parent's
_STREAM: ContextVar[BaseCallbackHandler | None] = ContextVar("hookreg_langchain_stream", default=None)
# LangChain adds the handler this variable holds to each callback manager configured while it is set — the model
# call's own among them — so a stream is observed without copying the chat model the user passed (DESIGN §8).
register_configure_hook(_STREAM, inheritable=False)


# --- driving a flow that also calls LangChain's next handler ------------------------


@dataclass(frozen=True, slots=True)
class _Call:
    """Call LangChain's next handler (the next middleware, then the model or the tool) with `request`.

    `stream`, when set, is told each chunk the model streams during the call.
    """

    request: Any
    stream: BaseCallbackHandler | None = None


_Flow: TypeAlias = Generator[Any, Any, _R]
"""A flow that yields `Dispatch` operations and `_Call`s and returns `_R`."""


@contextlib.contextmanager
def _streaming(stream: BaseCallbackHandler | None) -> Iterator[None]:
    """While the block runs, the model calls LangChain configures report their stream to `stream` too."""
    token = _STREAM.set(stream)
    try:
        yield
    finally:
        _STREAM.reset(token)


def _drive(registry: HookRegistry, flow: _Flow[_R], handler: Callable[[Any], Any] | None = None) -> _R:
    """Run `flow` with the registry's sync methods, calling `handler` for each `_Call`."""

    if handler is None:
        return run_flow(registry, flow)

    def call(op: _Call) -> Any:
        if op.stream is None and _STREAM.get() is None:  # nothing to observe, and no stream to hide
            return handler(op.request)
        with _streaming(op.stream):
            return handler(op.request)

    return run_flow(registry, flow, call)


def _adrive(
    registry: HookRegistry, flow: _Flow[_R], handler: Callable[[Any], Awaitable[Any]] | None = None
) -> Coroutine[Any, Any, _R]:
    """Run `flow` with the registry's ``a``-methods, awaiting `handler` for each `_Call`.

    A plain function returning `arun_flow`'s coroutine, and each `_Call`
    hands on `handler`'s awaitable itself: every coroutine layer between the
    flow's driver and LangChain's handler is resumed again each time the
    model or the tool suspends, so there is none.
    """

    if handler is None:
        return arun_flow(registry, flow)

    def call(op: _Call) -> Awaitable[Any]:
        if op.stream is None and _STREAM.get() is None:  # nothing to observe, and no stream to hide
            return handler(op.request)
        return _astreamed(handler, op)

    return arun_flow(registry, flow, call)


async def _astreamed(handler: Callable[[Any], Awaitable[Any]], op: _Call) -> Any:
    """Await `handler` on the call's request while the model calls report their stream to `op.stream`."""
    with _streaming(op.stream):
        return await handler(op.request)


# --- reading LangChain's state ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Judged:
    """A verdict on one tool call, and the call as it was judged and as it was approved (name, args)."""

    seen: tuple[str, object]
    verdict: GateResult

    @property
    def approved(self) -> tuple[str, object]:
        return self.verdict.call.tool_name, self.verdict.call.args


class _Where:
    """The LangGraph run a graph step belongs to: its ``RunControl``, its agent graph's namespace, its thread."""

    __slots__ = ("_thread", "control", "key", "namespace")

    def __init__(self, control: object, namespace: str) -> None:
        self.control, self.namespace = control, namespace
        self.key: tuple[int, str] = (id(control), namespace)
        self._thread: str | None = None

    @property
    def thread(self) -> str:
        """The step's thread, read only when a run is opened or resumed (every other step finds its run by key).

        Read once per step: opening a run asks for it more than once.
        """
        if self._thread is None:
            self._thread = _thread_id()
        return self._thread


def _where() -> _Where:
    """The LangGraph run of the running step (outside a graph run: a run of its own)."""
    try:
        runtime = get_runtime()
    except RuntimeError:  # not inside a graph run
        return _Where(object(), "")
    info = runtime.execution_info
    # a step's namespace is its graph's plus its own task: an agent run inside a tool keeps its own runs
    namespace = info.checkpoint_ns.rpartition(_NS_SEP)[0] if info is not None else ""
    control = runtime.control if runtime.control is not None else object()
    return _Where(control, namespace)


_LEFT_OPEN: Final = f"{NOT_RESUMED}, or LangGraph ended it where no middleware hook runs"
"""Why a run still open when the middleware goes ends: which of the two, no hook of LangChain's says."""


class _Run:
    """One agent run: its `RunState`, the tools of its latest model request, and how it stopped."""

    __slots__ = (
        "control",
        "failure",
        "judged",
        "key",
        "offered",
        "passed",
        "ran",
        "raw_args",
        "restricted",
        "rewritten",
        "state",
        "stop",
        "streamed",
        "thread",
        "tools",
        "withheld",
    )

    def __init__(self, where: _Where, state: RunState) -> None:
        self.key, self.control, self.thread = (
            where.key,
            where.control,
            where.thread,
        )  # the control kept: its id is the key
        self.state = state
        self.tools: dict[str, BaseTool] = {}
        self.offered: frozenset[str] | None = None
        self.restricted: frozenset[str] | None = None  # the offered tools, when a hookreg patch took some away
        self.raw_args: dict[str, object] = {}  # call id -> the model's argument text, when it is not an object
        self.streamed: dict[str, str] = {}  # call id -> its argument text as the latest model call streamed it
        self.stop: StopRun | None = None
        self.judged: dict[str, _Judged] = {}  # call id -> the gate's verdict, while the call is under way
        self.ran: dict[str, GateResult | None] = {}  # call id -> what the tool gate let run (None: stopped)
        self.failure: BaseException | None = None  # a tool gate hook's error, which ends the run
        self.passed: dict[str, GateResult] = {}  # call id -> an invalid call every invalid_tool_call hook passed
        self.rewritten: dict[str, str] = {}  # call id -> on_tool_error's text for LangChain's answer to such a call
        self.withheld: dict[str, list[ToolCall]] = {}  # answer id -> its calls, while denied ones are kept from review

    def forget(self, call_id: str) -> None:
        """The call is answered: drop what the gates kept about it."""
        self.judged.pop(call_id, None)
        self.ran.pop(call_id, None)
        self.passed.pop(call_id, None)


def _listening(registry: HookRegistry, points: Sequence[HookPoint]) -> bool:
    """Whether a hook listens at any of `points` now (`HookRegistry.has_hooks`: a dict read each)."""
    has = registry.has_hooks
    for point in points:  # noqa: SIM110 -- a loop: no generator built per question
        if has(point):
            return True
    return False


def _defines(middleware: AgentMiddleware[Any, Any, Any], *hooks: str) -> bool:
    """Whether `middleware`'s class overrides one of `hooks` (how LangChain decides which nodes and layers it adds)."""
    return any(getattr(type(middleware), hook) is not getattr(AgentMiddleware, hook) for hook in hooks)


def _messages(state: Mapping[str, Any]) -> list[AnyMessage]:
    return cast("list[AnyMessage]", state.get("messages", []))


def _prompt(state: Mapping[str, Any]) -> str:
    """The text of the latest user message."""
    return next((m.text for m in reversed(_messages(state)) if isinstance(m, HumanMessage)), "")


def _answer(messages: Sequence[AnyMessage]) -> tuple[AIMessage | None, set[str]]:
    """The latest model answer and the ids of the tool calls answered after it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
            return message, answered
    return None, set()


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


def _raw(args: object) -> object:
    """An invalid call's argument text as the model meant it: parsed when it is JSON, else as is."""
    if not isinstance(args, str):
        return args
    try:
        return json.loads(args)
    except ValueError:
        return args


def _object_text(text: str) -> bool:
    """Whether streamed argument text is a JSON object (or empty, which LangChain reads as no arguments)."""
    try:
        return not text or isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _thread_id() -> str:
    """The LangGraph thread the running graph belongs to (``""`` without one)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a graph run
        return ""
    thread = configurable.get("thread_id")
    return str(thread) if thread is not None else ""


def _tool_message(call_id: str, name: str, text: str) -> ToolMessage:
    """An error `ToolMessage`: what the model reads for a call that was refused, failed or never ran."""
    return ToolMessage(content=text, tool_call_id=call_id, name=name, status="error")


def _injected(tool: BaseTool) -> frozenset[str]:
    """The arguments LangChain hands `tool` its ``ToolRuntime`` in, found by its function's annotations.

    LangChain fills them in as it runs the tool, so the model never sends
    them, also when the tool's own schema names them as plain fields.
    (Arguments marked ``InjectedState`` or ``InjectedToolCallId`` are left out
    of ``tool_call_schema`` already.)
    """
    function = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    hints = get_type_hints(function) if callable(function) else {}  # LangGraph resolved them as it built the agent
    kinds = {name: get_origin(hint) or hint for name, hint in hints.items()}  # ToolRuntime[Context, State] too
    return frozenset(name for name, kind in kinds.items() if isinstance(kind, type) and issubclass(kind, ToolRuntime))


def _schema_check(tools: Callable[[str], BaseTool | None]) -> Validator:
    """Check a call's args against its tool's pydantic ``tool_call_schema`` (the schema LangChain checks)."""

    def validate(name: str, args: Mapping[str, object]) -> str | None:
        tool = tools(name)
        schema = tool.tool_call_schema if tool is not None else None
        if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            return None  # a JSON-schema tool: LangChain passes its args through unchecked
        try:
            schema.model_validate(dict(args))
        except ValidationError as exc:
            injected = _injected(tool) if tool is not None else frozenset()
            errors = [e for e in exc.errors() if not (e["loc"] and e["loc"][0] in injected)]
            return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in errors) or None
        return None

    return validate


def _sent(messages: Sequence[Message]) -> list[AnyMessage]:
    """A patch's ``messages`` as LangChain messages (roles as `_history` writes them, or user / assistant)."""
    return cast(
        "list[AnyMessage]",
        convert_to_messages(
            [
                {"role": m.role, "content": m.content}
                | ({"name": m.name} if m.name else {})
                | ({"tool_call_id": m.tool_call_id} if m.tool_call_id else {})
                for m in messages
            ]
        ),
    )


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


def _answered(state: RunState, answer: AIMessage) -> Steps[TurnAction]:
    """``model_turn_finished`` and ``post_turn`` on `answer`: its text, calls, finish reason, usage, id and model."""
    if not _listening(state.registry, (HookPoint.MODEL_TURN_FINISHED, HookPoint.POST_TURN)):
        return TurnAction.continue_run()  # nobody reads the answer: nothing is built from it
    metadata = answer.response_metadata or {}
    reason = metadata.get("finish_reason") or metadata.get("stop_reason")
    model = metadata.get("model_name") or metadata.get("model")
    calls = [
        ToolCallRequest(c["id"] or "", c["name"], c["args"] if isinstance(c["args"], Mapping) else {})
        for c in answer.tool_calls
    ]
    return (
        yield from state.answered(
            answer.text,
            calls,
            raw_finish_reason=reason if isinstance(reason, str) else None,
            usage={k: v for k, v in (answer.usage_metadata or {}).items() if isinstance(v, int)},
            message_id=answer.id,
            model=model if isinstance(model, str) else None,
        )
    )


def _updated(result: list[AnyMessage], update: _Update) -> list[AnyMessage]:
    """A model node's `result` with a state update's messages applied as LangChain's reducer would (by id)."""
    if not update or not update.get("messages"):
        return result
    messages = list(result)
    for message in update["messages"]:
        index = next((i for i, m in enumerate(messages) if message.id is not None and m.id == message.id), None)
        if isinstance(message, RemoveMessage):
            del messages[cast("int", index)]  # hookreg removes only the answer of this very call
        elif index is not None:
            messages[index] = message
        else:
            messages.append(message)
    return messages


def _response(messages: list[AnyMessage], structured: Any) -> ModelResponse[Any]:
    return ModelResponse(result=cast("list[Any]", messages), structured_response=structured)


def _ends(state: Sequence[AnyMessage], result: Sequence[AnyMessage], response: ModelResponse[Any]) -> bool:
    """Whether LangChain's edge after the model node ends the run on `state` + `result` (its ``model_to_tools`` rules).

    The latest answer is the model node's own (in `result`) but for a node
    that answered nothing: only then is the whole conversation read.
    """
    answer, answered = _answer(result)
    if answer is None:
        answer, answered = _answer([*state, *result])
    if answer is None or not answer.tool_calls:
        return True
    if any(call["id"] not in answered for call in answer.tool_calls):
        return False  # the tools run next
    return response.structured_response is not None  # every call answered: the model is asked again, unless done


# --- streamed deltas ----------------------------------------------------------------


class _Stream:
    """One model call's stream, turned into the delta flows of `hookreg._lifecycle.Deltas` (which aggregate).

    It also keeps each tool call's argument text as streamed, in `args` (call
    id -> text): LangChain parses it leniently when it joins the chunks
    (truncated JSON is completed), so only the streamed text tells a
    malformed argument text apart.
    """

    def __init__(self, points: Deltas, args: dict[str, str]) -> None:
        self.points, self.args = points, args
        self.calls: dict[object, tuple[str, str | None]] = {}  # a chunk's index -> its call's id and name

    def deltas(self, chunk: GenerationChunk | ChatGenerationChunk | None) -> Iterator[Steps[None]]:
        """The delta flows one streamed chunk carries, in order (drive each before asking for the next)."""
        message = chunk.message if isinstance(chunk, ChatGenerationChunk) else None
        if not isinstance(message, AIMessageChunk):
            return
        for block in message.content_blocks:
            if block["type"] == "text" and block["text"]:
                yield self.points.text(block["text"])
            elif block["type"] == "reasoning" and block.get("reasoning"):
                yield self.points.reasoning(block.get("reasoning", ""))
        for piece in message.tool_call_chunks:  # read here: content_blocks drops them from a last chunk
            known = self.calls.get(piece["index"], ("", None))
            call = self.calls[piece["index"]] = (piece["id"] or known[0], piece["name"] or known[1])
            if call[0]:
                self.args[call[0]] = self.args.get(call[0], "") + (piece["args"] or "")
            yield self.points.tool_call(call[0], call[1], piece["args"] or "")


class _Deltas(BaseCallbackHandler):
    """Fires the delta points for a streaming model call (sync dispatch)."""

    raise_error = True

    def __init__(self, registry: HookRegistry, points: Deltas, args: dict[str, str]) -> None:
        self.registry, self.stream = registry, _Stream(points, args)

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        **kwargs: Any,
    ) -> None:
        for flow in self.stream.deltas(chunk):
            run_flow(self.registry, flow)


class _AsyncDeltas(AsyncCallbackHandler):
    """Fires the delta points for a streaming model call (async dispatch)."""

    raise_error = True

    def __init__(self, registry: HookRegistry, points: Deltas, args: dict[str, str]) -> None:
        self.registry, self.stream = registry, _Stream(points, args)

    async def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        **kwargs: Any,
    ) -> None:
        for flow in self.stream.deltas(chunk):
            await arun_flow(self.registry, flow)


# --- the middleware ------------------------------------------------------------------


class HookregMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """LangChain agent middleware that dispatches a hookreg registry's hooks; put it first in ``middleware=``.

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
        super().__init__()
        self.registry: HookRegistry = require_registry(registry, "HookregMiddleware")
        self.models: Mapping[str, BaseChatModel] = dict(models or {})
        for name, model in self.models.items():
            if not isinstance(model, BaseChatModel):
                msg = (
                    f"Cannot build HookregMiddleware with model {name!r} = {model!r}: it is not a chat model. "
                    "Pass models={name: chat_model} with BaseChatModel instances, e.g. init_chat_model(...)."
                )
                raise HookTypeError(msg)
        # the live runs, by their LangGraph run (`_Where.key`); one an interrupt paused and nothing resumes, or one
        # LangGraph ended where no middleware hook runs, ends cancelled when this middleware is collected, or at exit
        self._runs: dict[tuple[int, str], _Run] = {}
        keep_paused(self, self._runs, _LEFT_OPEN)
        self._threads: dict[tuple[str, str], _Run] = {}  # the live run of each thread (and namespace)
        self._tool_gate = _ToolGate(self)
        self._reviewed_gate = _ReviewedToolGate(self)  # the tool gate `around` lists when a human reviews calls
        # The same middleware with graph nodes, for `around` to list among middleware that has nodes: one object's
        # state (registry, runs, gates) under two shapes, since LangChain reads a middleware's nodes off its class.
        self._staged: HookregMiddleware = _StagedMiddleware.__new__(_StagedMiddleware)
        self._staged.__dict__ = self.__dict__

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph: ``"hookreg"``."""
        return "hookreg"

    def _idle(self) -> bool:
        """Whether a step is LangChain's alone: no hook at any point, no run under way, no stream to hide.

        One read of the registry's length (it counts the hooks of included
        registries) stands for every ``has_hooks`` the flows would ask, and
        the step skips them, the run lookup and the flow driver: LangChain's
        next handler is called as without hookreg. A run that starts so is
        not tracked; a hook registered during it is picked up at the run's
        next step (a model call starts its session there, a tool call is
        gated as in a run resumed in another process).
        """
        return not len(self.registry) and not self._runs and _STREAM.get() is None

    @property
    def tool_gate(self) -> AgentMiddleware[Any, Any, Any]:
        """This middleware's tool gate, to be listed last (innermost): `around` places it.

        It judges each tool call as it will run — after a human's edit
        (``HumanInTheLoopMiddleware``) or another middleware's rewrite — reusing
        this middleware's verdict when the call comes to it unchanged.
        """
        return self._tool_gate

    def around(self, middleware: Sequence[AgentMiddleware[Any, Any, Any]]) -> list[AgentMiddleware[Any, Any, Any]]:
        """The agent's ``middleware=`` list: this middleware first, `middleware` in its order, the `tool_gate` last.

        The tool gate is listed only when one of `middleware` may change a
        tool call after this middleware judged it (a ``wrap_tool_call``, an
        ``after_model`` node); and this middleware in its staged shape (the
        same object's state, with graph nodes) when one of them has a
        ``before_model`` / ``after_model`` node, which may end the run or send
        it back to the model around hookreg's call.

        Example:
            >>> from hookreg import HookRegistry
            >>> from langchain.agents.middleware import ToolRetryMiddleware
            >>> hookreg = HookregMiddleware(HookRegistry())
            >>> tuple(m.name for m in hookreg.around([]))
            ('hookreg',)
            >>> tuple(m.name for m in hookreg.around([ToolRetryMiddleware()]))
            ('hookreg', 'ToolRetryMiddleware', 'hookreg_tool_gate')

        Args:
            middleware: The agent's other middleware, in the order LangChain
                should run them; this middleware and its tool gate may be
                among them, anywhere: each is placed once, where it belongs.

        Raises:
            HookTypeError: An item of `middleware` is not LangChain agent middleware.
        """
        for item in middleware:
            if not isinstance(item, AgentMiddleware):
                msg = (
                    f"Cannot build the agent's middleware with {item!r}: it is not LangChain agent middleware. "
                    "Pass AgentMiddleware instances, e.g. HumanInTheLoopMiddleware(...)."
                )
                raise HookTypeError(msg)
        ours = (self, self._staged, self._tool_gate, self._reviewed_gate)
        others = [item for item in middleware if all(item is not mine for mine in ours)]
        # Each layer and node costs every run (LangChain adds them as the agent is built), so only what the other
        # middleware needs is listed: the staged shape when a node of theirs runs around the model call, the gate
        # when one of them may change a tool call after hookreg judged it.
        first = self._staged if any(_defines(m, *_MODEL_NODES) for m in others) else self
        if any(isinstance(m, HumanInTheLoopMiddleware) for m in others):
            return [first, *others, self._reviewed_gate]
        edits = any(_defines(m, *_TOOL_EDITS) for m in others)
        return [first, *others, self._tool_gate] if edits else [first, *others]

    # --- runs --------------------------------------------------------------------

    def _open(self, where: _Where, run: RunContext, goal: str = "") -> _Run:
        opened = self._runs[where.key] = _Run(where, RunState(self.registry, run, goal))
        if opened.thread:
            self._threads[opened.thread, where.namespace] = opened
        return opened

    def _find(self, where: _Where) -> _Run | None:
        """The run of the step at `where`: its own, or a paused run of its thread it resumes (``None``: neither)."""
        run = self._runs.get(where.key)
        if run is not None:
            return run
        resumed = self._threads.get((where.thread, where.namespace)) if where.thread else None
        if resumed is None:
            return None
        self._runs.pop(resumed.key, None)  # the paused invocation is over: the resuming one goes on with the run
        resumed.key, resumed.control = where.key, where.control
        self._runs[where.key] = resumed
        return resumed

    def _run(self) -> _Run:
        """The run the running step belongs to: its own, a paused run of its thread it resumes, else a new one."""
        where = _where()
        # a run this middleware did not start (resumed in another process) starts here
        return self._find(where) or self._open(where, RunContext())

    def _close(self, run: _Run) -> None:
        """The run ended: forget it."""
        self._runs.pop(run.key, None)
        if self._threads.get((run.thread, run.key[1])) is run:
            del self._threads[run.thread, run.key[1]]

    def _fail(self, run: _Run, error: BaseException) -> _Flow[None]:
        """The run ends with `error` (``failed``, ``stopped`` or ``cancelled``); an interrupt only pauses it."""
        if isinstance(error, GraphBubbleUp):
            return
        self._close(run)
        yield from run.state.end_with(error)

    def _stopped(self, run: _Run, stop: StopRun) -> _Flow[None]:
        """A hook stopped the run: end its session now; ``after_agent`` raises the first stop."""
        if run.stop is None:
            run.stop = stop
        yield from run.state.end_with(stop)

    def _halt(
        self, run: _Run, stop: StopRun, messages: Sequence[AnyMessage], update: dict[str, Any] | None = None
    ) -> _Flow[dict[str, Any]]:
        """The state update that ends a stopped run: a notice for each unanswered call, then the end."""
        yield from self._stopped(run, stop)
        answer, answered = _answer(messages)
        calls = {c["id"] or "": c["name"] for c in (answer.tool_calls if answer is not None else [])}
        notices = [_tool_message(i, calls[i], text) for i, text in unanswered(calls, answered)]
        update = dict(update or {})
        update["messages"] = [*update.get("messages", []), *notices]
        return {**update, "jump_to": "end"}

    def _denied(self, run: _Run, outcome: RunOutcome, state: Mapping[str, Any]) -> _Flow[dict[str, Any]]:
        """A ``user_prompt_submit`` or ``pre_turn`` deny: the reason is the agent's answer, the run stops."""
        stop = StopRun(outcome.reason)
        run.stop = stop
        yield from run.state.end(outcome, stop)
        update = yield from self._halt(run, stop, _messages(state))
        update["messages"] = [*update["messages"], AIMessage(content=outcome.reason)]
        return update

    # --- before_agent: on_session_start, user_prompt_submit ---------------------

    def _begin(self, where: _Where, state: AgentState[Any]) -> _Run:
        """Open the run of the step at `where` (its session id: the thread's, else the run's own).

        Its goal, the latest user message, is read only for the points that
        show it at the start (``pre_turn`` and ``pre_model_call`` read their
        prompt at their own call).
        """
        shown = _listening(self.registry, (HookPoint.ON_SESSION_START, HookPoint.USER_PROMPT_SUBMIT))
        return self._open(where, RunContext(session_id=where.thread), goal=_prompt(state) if shown else "")

    def _start(self, run: _Run, state: AgentState[Any]) -> _Flow[_Update]:
        try:
            outcome = yield from run.state.start()
        except StopRun as stop:
            return (yield from self._halt(run, stop, _messages(state)))
        except BaseException as error:
            yield from self._fail(run, error)
            raise
        if outcome is not None:
            return (yield from self._denied(run, outcome, state))
        return None

    # --- before_model: pre_turn ---------------------------------------------------

    def _before_model(self, run: _Run, state: AgentState[Any]) -> _Flow[_Update]:
        if run.stop is not None:  # a tool hook stopped the run: end it now
            return {"jump_to": "end"}
        try:
            # pre_turn shows the latest user message: read only when a hook listens there
            prompt = _prompt(state) if self.registry.has_hooks(HookPoint.PRE_TURN) else None
            outcome = yield from run.state.turn(prompt)
        except StopRun as stop:
            return (yield from self._halt(run, stop, _messages(state)))
        except BaseException as error:
            yield from self._fail(run, error)
            raise
        if outcome is not None:
            return (yield from self._denied(run, outcome, state))
        return None

    # --- wrap_model_call: pre_model_call, model_select ---------------------------

    def _default_model(self, model: BaseChatModel) -> str:
        named = next((name for name, chat in self.models.items() if chat is model), None)
        attribute = getattr(model, "model_name", None) or getattr(model, "model", None)
        return named or (attribute if isinstance(attribute, str) else model.get_name())

    def _patched(self, run: _Run, request: ModelRequest[Any], offered: frozenset[str]) -> _Flow[ModelRequest[Any]]:
        """`request` with the merged ``pre_model_call`` patch applied and the ``model_select`` pick swapped in."""
        base = RequestPatch(active_tools=offered)
        default = self._default_model(request.model)
        # pre_model_call shows the latest user message as the prompt (after a stop's feedback, that feedback)
        run.state.goal = _prompt(request.state)
        patch, pick = yield from run.state.model_call(base, default, lambda: _history(request.messages))
        if patch is base and pick == default:  # no hook changed the call
            return request
        model = request.model
        if pick != default:
            if pick not in self.models:
                msg = (
                    f"Cannot call model {pick!r} picked by a model_select hook: HookregMiddleware has no chat model "
                    f"of that name (it has {sorted(self.models)}). Pass it as HookregMiddleware(registry, "
                    f"models={{{pick!r}: chat_model}}), or return one of those names."
                )
                raise HookValueError(msg, point=HookPoint.MODEL_SELECT)
            model = self.models[pick]
        active = patch.active_tools
        messages = request.messages if patch.messages is None else _sent(patch.messages)
        return request.override(
            model=model,
            messages=messages,
            system_message=_system(request, patch),
            tools=request.tools if active is None else [t for t in request.tools if _tool_name(t) in active],
            tool_choice=request.tool_choice if patch.tool_choice is None else patch.tool_choice,
            model_settings=_settings(request, patch),
        )

    def _reported(self, run: _Run, request: ModelRequest[Any]) -> _Flow[ModelRequest[Any]]:
        """`request` once the failure points saw LangChain's answer to each invalid call every hook passed.

        LangChain answers a model's malformed calls (``invalid_tool_calls``)
        in the request it sends next, not in the state: that answer is the
        failure ``post_tool_call_failure`` and ``on_tool_error`` see, once;
        an ``on_tool_error`` rewrite is what the model reads from then on.
        """
        messages = list(request.messages)
        for index, message in enumerate(messages):
            if not isinstance(message, ToolMessage):
                continue
            passed = run.passed.pop(message.tool_call_id, None)
            if passed is not None:
                default = message.text
                error = passed.error or LookupError(passed.text)  # a passed call always has its error
                text = yield from failed(
                    self.registry, run.state.run, passed.call, error, kind=passed.kind, message=default
                )
                if text is not default:
                    run.rewritten[message.tool_call_id] = text
            if message.tool_call_id in run.rewritten:
                messages[index] = message.model_copy(update={"content": run.rewritten[message.tool_call_id]})
        return request.override(messages=messages) if run.rewritten else request

    def _model_call(self, run: _Run, request: ModelRequest[Any], *, asynchronous: bool) -> _Flow[Any]:
        run.tools = {t.name: t for t in request.tools if isinstance(t, BaseTool)}
        try:
            if run.passed or run.rewritten:
                request = yield from self._reported(run, request)
            if _listening(self.registry, MODEL_CALL_POINTS):
                asked = frozenset(_tool_name(t) for t in request.tools)
                request = yield from self._patched(run, request, asked)
                run.offered = frozenset(_tool_name(t) for t in request.tools)
                run.restricted = run.offered if run.offered != asked else None
            else:  # the request goes as it is: each of its tools is offered
                run.offered = run.restricted = None
            run.streamed = {}
            stream: BaseCallbackHandler | None = None
            if _listening(self.registry, _OBSERVING_POINTS):
                stream = (_AsyncDeltas if asynchronous else _Deltas)(self.registry, run.state.deltas(), run.streamed)
            return (yield _Call(request, stream))
        except BaseException as error:
            yield from self._fail(run, error)
            raise

    def _turn(self, request: ModelRequest[Any], *, asynchronous: bool) -> _Flow[_ModelReply]:
        """One whole turn inside the model call: what the staged middleware's graph nodes do, with no node.

        The run's first model call starts its session; each call gates its
        turn, calls the model, then judges the answer. A state update the
        flows ask for is the model node's own: added to its messages (by id),
        and a jump is a `Command` beside the response, which LangChain's edge
        after the model node reads. A stopped run is raised from the next
        model call, once the state holds what the stop wrote; a run whose
        answer LangChain will end on ends its session here (``completed``).
        """
        state, where = request.state, _where()
        run = self._find(where)
        if run is None:  # the run's first model call
            run = self._begin(where, state)
            update = yield from self._start(run, state)
            if update is not None:
                return self._stopping(run, [], update)
        update = yield from self._before_model(run, state)
        if update is not None:
            return self._stopping(run, [], update)
        response: ModelResponse[Any] = yield from self._model_call(run, request, asynchronous=asynchronous)
        result = cast("list[AnyMessage]", response.result)
        update = None
        if self._reads_answer(run):  # else the state and the answer are not even joined
            update = yield from self._after_model(run, {"messages": [*_messages(state), *result]})
        if update is not None and "jump_to" in update:
            return self._stopping(run, result, update, response.structured_response)
        messages = _updated(result, update)
        if _ends(_messages(state), messages, response):
            yield from self._after_agent(run)
        return response if messages is result else _response(messages, response.structured_response)

    def _stopping(
        self, run: _Run, result: list[AnyMessage], update: dict[str, Any], structured: Any = None
    ) -> _ModelReply:
        """The model node's reply for an update that jumps: back to the model, where a stopped run is raised.

        A stop (``jump_to: end``) with nothing to write is raised at once;
        one with messages to write (notices, a deny's reason) goes back to
        the model first, so the state holds them when the caller gets the stop.
        """
        messages = _updated(result, update)
        if update["jump_to"] == "end" and not messages:
            self._close(run)
            raise cast("StopRun", run.stop)  # its session ended when it stopped
        return ExtendedModelResponse(_response(messages, structured), Command(update={"jump_to": "model"}))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> _ModelReply:
        """The turn: start the run, gate it, patch and call the model, then judge and observe its answer."""
        if self._idle():
            return handler(request)
        return _drive(self.registry, self._turn(request, asynchronous=False), handler)

    def awrap_model_call(  # a plain method returning its coroutine (see `_Traced`)
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> _Traced[_ModelReply]:
        """Async twin of `wrap_model_call`."""
        if self._idle():
            return cast("_Traced[_ModelReply]", handler(request))  # LangChain's async handler: a coroutine
        return _adrive(self.registry, self._turn(request, asynchronous=True), handler)

    # --- after_model: model_turn_finished, post_turn, stop -----------------------

    def _reads_answer(self, run: _Run) -> bool:
        """Whether `_after_model` has anything to do: a hook reads the answer, or a review kept calls from it."""
        return bool(run.withheld) or _listening(self.registry, _ANSWER_READERS)

    def _after_model(self, run: _Run, state: Mapping[str, Any]) -> _Flow[_Update]:
        messages = _messages(state)
        stored, _ = _answer(messages)
        if stored is None:
            return None
        # the calls the tool gate kept from a batched review (`_withhold`) go back into the answer, answered
        withheld = run.withheld.pop(stored.id, None) if stored.id else None
        original = stored if withheld is None else stored.model_copy(update={"tool_calls": withheld})
        moved: AIMessage | None = None
        try:
            # Only an invalid_tool_call hook's answer replaces LangChain's handling of invalid calls (DESIGN §8).
            if self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL):
                moved = yield from self._with_invalid_calls(original, run)
            answer = moved or original
            update: dict[str, Any] = {"messages": [answer]} if answer is not stored else {}
            action = yield from _answered(run.state, answer)
            if action.kind == "repeat" and answer.id is not None:
                return {"messages": [RemoveMessage(id=answer.id)], "jump_to": "model"}
            if action.kind == "feedback":
                return {"messages": [HumanMessage(content=action.feedback or "")], "jump_to": "model"}
            if not answer.tool_calls:
                feedback = yield from run.state.stop(answer.text)
                if feedback is not None:
                    return {"messages": [HumanMessage(content=feedback)], "jump_to": "model"}
        except StopRun as stop:
            changed = moved or original
            current = [changed if m is stored else m for m in messages]
            return (
                yield from self._halt(run, stop, current, {"messages": [changed]} if changed is not stored else None)
            )
        except BaseException as error:
            yield from self._fail(run, error)
            raise
        return update or None

    # --- after_agent: on_session_end ---------------------------------------------

    def _after_agent(self, run: _Run) -> _Flow[None]:
        self._close(run)
        if run.stop is not None:
            raise run.stop  # its session ended when it stopped; the caller gets the hook's own StopRun
        yield from run.state.end(RunOutcome(status="completed", turns=run.state.turns))

    # --- wrap_tool_call: the tool points -----------------------------------------

    def _judging(self) -> bool:
        """Whether any hook judges a call's arguments (with none, nothing is recorded or copied)."""
        return self.registry.has_hooks(HookPoint.TRANSFORM_TOOL_INPUT) or self.registry.has_hooks(
            HookPoint.PRE_TOOL_CALL_DECIDE
        )

    def _invalid_gate(
        self, run: _Run, name: str, call_id: str, args: object, tool: BaseTool | None
    ) -> _Flow[GateResult]:
        """hookreg's checks of a call, for an ``invalid_tool_call`` hook to answer; ``"passed"``: every hook passed.

        A user tool a hookreg patch took out of this turn is refused whatever
        the hooks answer; any other invalid call is LangChain's to handle when
        every hook passes.
        """
        known, offered = {*run.tools, *([tool.name] if tool is not None else [])}, run.offered
        validate: Validator = _schema_check(
            lambda wanted: tool if tool is not None and tool.name == wanted else run.tools.get(wanted)
        )
        refused = run.restricted is not None and name in run.tools and name not in run.restricted
        return (
            yield from gate(
                self.registry,
                run.state.run,
                name,
                call_id,
                args,
                known=known,
                offered=offered,
                validate=validate,
                passing=not refused,
            )
        )

    def _with_invalid_calls(self, answer: AIMessage, run: _Run) -> _Flow[AIMessage | None]:
        """`answer` with the ``invalid_tool_calls`` a hook answered turned into tool calls, or ``None`` for none.

        LangChain's agent loop runs only ``tool_calls``; as calls, the ones a
        hook answered reach ``wrap_tool_call``, which hands on the verdict kept
        here. Those every hook passed stay LangChain's, as it made them: the
        next model call reports LangChain's answer to them (`_reported`). A call
        whose streamed argument text is not a JSON object (LangChain completed
        truncated JSON) is gated on that text in ``wrap_tool_call``.
        """
        for parsed in answer.tool_calls:
            text = run.streamed.get(parsed["id"] or "")
            if text is not None and not _object_text(text):
                run.raw_args[parsed["id"] or ""] = _raw(text)
        calls: list[ToolCall] = list(answer.tool_calls)
        kept = []
        for invalid in answer.invalid_tool_calls:
            call_id, name, raw = invalid.get("id"), invalid.get("name") or "", _raw(invalid.get("args"))
            if not call_id:  # LangChain answers only a call with an id; nor can hookreg
                kept.append(invalid)
                continue
            verdict = yield from self._invalid_gate(run, name, call_id, raw, None)
            if verdict.status == "passed":
                run.passed[call_id] = verdict
                kept.append(invalid)
                continue
            run.judged[call_id] = _Judged((name, {}), verdict)
            calls.append(ToolCall(name=name, args={}, id=call_id, type="tool_call"))
        if len(kept) == len(answer.invalid_tool_calls):
            return None
        return answer.model_copy(update={"tool_calls": calls, "invalid_tool_calls": kept})

    def _judged(self, run: _Run, call: ToolCall, tool: BaseTool | None, args: object) -> _Flow[GateResult]:
        """The gate's verdict on `request` with `args`: an earlier verdict on this very call, else a new one.

        An earlier verdict is reused only when the call comes back identical —
        as it was judged (LangGraph runs the tool node again when a paused
        review resumes) or as it was approved (the tool gate, innermost, sees
        what the outer gate handed on) — so no hook runs twice for one call.
        Anything else (a human's edit, another middleware's rewrite) is
        judged again.
        """
        call_id, name = call.get("id") or "", call["name"]
        earlier = run.judged.get(call_id)
        if earlier is not None and (name, call["args"]) in (earlier.seen, earlier.approved):
            return earlier.verdict
        verdict: GateResult | None = None
        if self.registry.has_hooks(HookPoint.INVALID_TOOL_CALL):
            verdict = yield from self._invalid_gate(run, name, call_id, args, tool)
        if verdict is not None and verdict.status == "passed":
            run.passed[call_id] = verdict  # LangChain's answer to it is reported as a failure of that kind
        if verdict is None or verdict.status == "passed":
            # LangChain checks names and arguments its own way, with its own messages, and a middleware may serve a
            # tool the agent does not have. Only a user tool a hookreg patch took out of this turn never runs
            # (DESIGN §8, "A tool call").
            offered = run.restricted if run.restricted is not None and name in run.tools else None
            verdict = yield from gate(
                self.registry, run.state.run, name, call_id, call["args"], known={*run.tools, name}, offered=offered
            )
        if self._judging():
            run.judged[call_id] = _Judged((name, approved_copy(name, call["args"])), verdict)
        return verdict

    def _withhold(self, state: AgentState[Any]) -> _Flow[_Update]:
        """Before a batched human review: judge each call of the answer; a denied one is answered, never shown.

        ``HumanInTheLoopMiddleware`` asks about the answer's tool calls in its
        ``after_model``, which LangChain runs after the tool gate's (the last
        middleware's runs first). A call the gate denies is taken out of the
        answer the reviewer sees and answered with the deny's reason; the
        outer middleware's ``after_model`` puts it back. The verdicts are
        kept: a call that reaches the tool as judged is not judged again.
        """
        if not self._judging():
            return None
        run = self._run()
        messages = _messages(state)
        answer, answered = _answer(messages)
        if answer is None or not answer.tool_calls or not answer.id:
            return None
        kept: list[ToolCall] = []
        notices: list[ToolMessage] = []
        try:
            for call in answer.tool_calls:
                call_id = call.get("id") or ""
                if call_id and call_id not in answered:
                    args = run.raw_args.get(call_id, call["args"])
                    verdict = yield from self._judged(run, call, run.tools.get(call["name"]), args)
                    if not verdict.allowed:
                        notices.append(_tool_message(call_id, call["name"], verdict.text))
                        continue
                kept.append(call)
        except StopRun as stop:
            return (yield from self._halt(run, stop, messages))
        except BaseException as error:
            yield from self._fail(run, error)
            raise
        if not notices:
            return None
        run.withheld[answer.id] = list(answer.tool_calls)
        return {"messages": [answer.model_copy(update={"tool_calls": kept}), *notices]}

    def _redirected(self, run: _Run, request: LangChainToolCall, effective: ToolCallRequest) -> LangChainToolCall:
        """`request` for the gated call: its effective name (and tool, after a ``repair``) and a copy of its args.

        The copy keeps the approved args private to hookreg: what a middleware,
        a human or the tool changes in place is told apart from what was judged.
        """
        call, tool = request.tool_call, request.tool
        if effective.tool_name != call["name"]:  # repaired: a known tool, so the agent has it
            tool = run.tools.get(effective.tool_name, tool)
        args = approved_copy(effective.tool_name, effective.args) if self._judging() else dict(effective.args)
        rewritten = ToolCall(name=effective.tool_name, args=args, id=call.get("id"), type="tool_call")
        return request.override(tool_call=rewritten, tool=tool) if tool else request.override(tool_call=rewritten)

    def _tool_call(self, request: LangChainToolCall) -> _Flow[_ToolResponse]:
        run, call = self._run(), request.tool_call
        call_id, name = call.get("id") or "", call["name"]
        if run.stop is not None:
            return _tool_message(call_id, name, STOPPED_NOTICE)
        if run.restricted is None and not _listening(self.registry, _TOOL_POINTS):
            return (yield from self._untouched(run, request))
        paused = False
        try:
            verdict = yield from self._judged(run, call, request.tool, run.raw_args.get(call_id, call["args"]))
            if not verdict.allowed:
                return _tool_message(call_id, name, verdict.text)
            return (yield from self._execute(run, request, verdict.call))
        except StopRun as stop:
            yield from self._stopped(run, stop)
            return _tool_message(call_id, name, STOPPED_NOTICE)
        except GraphBubbleUp:
            paused = True  # a human reviews the call: its verdict waits for the resume
            raise
        except BaseException as error:
            yield from self._fail(run, error)
            raise
        finally:
            if not paused:
                run.forget(call_id)

    def _untouched(self, run: _Run, request: LangChainToolCall) -> _Flow[_ToolResponse]:
        """No hook listens at a tool point: the call runs as LangChain made it; an error leaving it ends the run."""
        try:
            response: _ToolResponse = yield _Call(request)
        except GraphBubbleUp:
            raise  # a human reviews the call: the run goes on when it resumes
        except BaseException as error:
            yield from self._fail(run, error)
            raise
        return response

    def _gate_inside(self, request: LangChainToolCall) -> _Flow[_ToolResponse]:
        """The tool gate, innermost: judge the call as it will run, after every other middleware edited it."""
        if not self._judging():
            unjudged: _ToolResponse = yield _Call(request)  # no hook judges arguments: an edit changes no verdict
            return unjudged
        run, call = self._run(), request.tool_call
        call_id, name = call.get("id") or "", call["name"]
        try:
            verdict = yield from self._judged(run, call, request.tool, call["args"])
        except StopRun as stop:
            run.ran[call_id] = None
            yield from self._stopped(run, stop)
            return _tool_message(call_id, name, STOPPED_NOTICE)
        except BaseException as error:
            run.failure = error  # the outer middleware ends the run with it; it is no failure of the tool
            raise
        run.ran[call_id] = verdict
        if not verdict.allowed:
            return _tool_message(call_id, name, verdict.text)
        response: _ToolResponse = yield _Call(self._redirected(run, request, verdict.call))
        return response

    def _execute(self, run: _Run, request: LangChainToolCall, effective: ToolCallRequest) -> _Flow[_ToolResponse]:
        """Run the gated call (its effective name and args), then its outcome points."""
        call_id = request.tool_call.get("id") or ""
        started = time.perf_counter()
        try:
            response: _ToolResponse = yield _Call(self._redirected(run, request, effective))
        except GraphBubbleUp:
            raise  # LangGraph's interrupts are control flow, not failures
        except Exception as error:  # every failure of the tool goes to the failure points
            if error is run.failure:  # a hook of the tool gate failed, not the tool
                raise
            inner = run.ran.get(call_id)
            return (yield from self._tool_raised(run, inner.call if inner is not None else effective, error, started))
        if call_id in run.ran:  # the tool gate judged the call as it ran
            inner = run.ran[call_id]
            if inner is None or not inner.allowed:
                return response  # it never ran: the model reads why
            effective = inner.call
        if not isinstance(response, ToolMessage):
            return response  # a Command steers the graph; there is no text to rewrite
        ms = (time.perf_counter() - started) * 1000
        try:
            if response.status == "error":  # LangChain's own failure report: handle_tool_error, argument check
                passed = run.passed.get(call_id)  # a call hookreg found invalid, which LangChain answered
                found = passed.error if passed is not None else None
                text = yield from failed(
                    self.registry,
                    run.state.run,
                    effective,
                    found or ToolException(response.text),
                    kind=passed.kind if passed is not None else None,
                    message=response.text,
                    duration_ms=ms,
                )
            else:
                raw = response.artifact if response.artifact is not None else response.content
                text = yield from succeeded(
                    self.registry,
                    run.state.run,
                    effective,
                    raw,
                    presentation=response.text,
                    duration_ms=ms,
                    metadata={"status": response.status},
                )
        except StopRun as stop:
            yield from self._stopped(run, stop)
            return response  # the call ran: the model reads its result
        return response if text == response.text else response.model_copy(update={"content": text})

    def _tool_raised(self, run: _Run, call: ToolCallRequest, error: Exception, started: float) -> _Flow[ToolMessage]:
        """The tool raised: the failure points; unless an ``on_tool_error`` hook wrote the text, it goes on raising."""
        ms = (time.perf_counter() - started) * 1000
        default = error_text(error)
        try:
            text = yield from failed(self.registry, run.state.run, call, error, message=default, duration_ms=ms)
        except StopRun as stop:
            yield from self._stopped(run, stop)
            return _tool_message(call.call_id, call.tool_name, f"Error: {describe(error)}")
        except BaseException as failure:
            yield from self._fail(run, failure)
            raise
        if text is default:  # no on_tool_error hook, or every one passed: LangChain's own error path (DESIGN §8)
            yield from self._fail(run, error)
            raise error
        return _tool_message(call.call_id, call.tool_name, text)

    def wrap_tool_call(
        self, request: LangChainToolCall, handler: Callable[[LangChainToolCall], _ToolResponse]
    ) -> _ToolResponse:
        """Check and gate the call, run the tool, then rewrite and observe its result or failure."""
        if self._idle():
            return handler(request)
        return _drive(self.registry, self._tool_call(request), handler)

    def awrap_tool_call(  # a plain method returning its coroutine (see `_Traced`)
        self, request: LangChainToolCall, handler: Callable[[LangChainToolCall], Awaitable[_ToolResponse]]
    ) -> _Traced[_ToolResponse]:
        """Async twin of `wrap_tool_call`."""
        if self._idle():
            return cast("_Traced[_ToolResponse]", handler(request))  # LangChain's async handler: a coroutine
        return _adrive(self.registry, self._tool_call(request), handler)


class _ToolGate(AgentMiddleware[AgentState[Any], Any, Any]):
    """A `HookregMiddleware`'s tool gate, listed last (innermost): it judges a call as it will run."""

    def __init__(self, outer: HookregMiddleware) -> None:
        super().__init__()
        self.outer = outer

    @property
    def name(self) -> str:
        """The gate's name in the agent graph: ``"hookreg_tool_gate"``."""
        return "hookreg_tool_gate"

    def _passes(self) -> bool:
        """No hook judges arguments (an edit changes no verdict) and no stream to hide: the call goes on as it is."""
        return not self.outer._judging() and _STREAM.get() is None  # noqa: SLF001 -- its own outer

    def wrap_tool_call(
        self, request: LangChainToolCall, handler: Callable[[LangChainToolCall], _ToolResponse]
    ) -> _ToolResponse:
        """Judge the call as the other middleware left it, then run the tool."""
        if self._passes():
            return handler(request)
        return _drive(self.outer.registry, self.outer._gate_inside(request), handler)  # noqa: SLF001 -- its own outer

    def awrap_tool_call(  # a plain method returning its coroutine (see `_Traced`)
        self, request: LangChainToolCall, handler: Callable[[LangChainToolCall], Awaitable[_ToolResponse]]
    ) -> _Traced[_ToolResponse]:
        """Async twin of `wrap_tool_call`."""
        if self._passes():
            return cast("_Traced[_ToolResponse]", handler(request))  # LangChain's async handler: a coroutine
        return _adrive(self.outer.registry, self.outer._gate_inside(request), handler)  # noqa: SLF001 -- its own outer


class _ReviewedToolGate(_ToolGate):
    """The tool gate of an agent with ``HumanInTheLoopMiddleware``: it also judges each call before a batched review.

    A separate class: LangChain adds a graph node for every middleware whose
    class has ``after_model``, so an agent without a review pays no step.
    """

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Judge the answer's calls before a human reviews them; a denied call is answered and not shown."""
        if not self.outer._judging():  # noqa: SLF001 -- its own outer
            return None
        return _drive(self.outer.registry, self.outer._withhold(state))  # noqa: SLF001 -- its own outer

    @hook_config(can_jump_to=["end"])
    async def aafter_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `after_model`."""
        if not self.outer._judging():  # noqa: SLF001 -- its own outer
            return None
        return await _adrive(self.outer.registry, self.outer._withhold(state))  # noqa: SLF001 -- its own outer


class _StagedMiddleware(HookregMiddleware):
    """A `HookregMiddleware` whose run-level points are graph nodes, for an agent whose other middleware has nodes.

    Another middleware's ``before_model`` / ``after_model`` node may end the
    run or send it back to the model after hookreg's model call (a call
    limit, a human review): hookreg's own nodes then start and end the run
    around theirs, outermost, and judge the answer after theirs. `around`
    lists it in place of its `HookregMiddleware`, whose state it shares.
    """

    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Start the run: ``on_session_start``, then gate the prompt with ``user_prompt_submit``."""
        if self._idle():
            return None
        return _drive(self.registry, self._start(self._begin(_where(), state), state))

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `before_agent`."""
        if self._idle():
            return None
        return await _adrive(self.registry, self._start(self._begin(_where(), state), state))

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Start a turn and gate the coming model call with ``pre_turn``."""
        if self._idle():
            return None
        return _drive(self.registry, self._before_model(self._run(), state))

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `before_model`."""
        if self._idle():
            return None
        return await _adrive(self.registry, self._before_model(self._run(), state))

    def _staged_call(self, request: ModelRequest[Any], *, asynchronous: bool) -> _Flow[Any]:
        return (yield from self._model_call(self._run(), request, asynchronous=asynchronous))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        """Patch the request (``pre_model_call``), pick its model (``model_select``), observe its stream, call it."""
        if self._idle():
            return handler(request)
        return _drive(self.registry, self._staged_call(request, asynchronous=False), handler)

    def awrap_model_call(  # a plain method returning its coroutine (see `_Traced`)
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> _Traced[_ModelReply]:
        """Async twin of `wrap_model_call`."""
        if self._idle():
            return cast("_Traced[_ModelReply]", handler(request))  # LangChain's async handler: a coroutine
        return _adrive(self.registry, self._staged_call(request, asynchronous=True), handler)

    @hook_config(can_jump_to=["model", "end"])
    def after_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Judge the answer (``model_turn_finished``), observe it (``post_turn``), and gate stopping (``stop``)."""
        if self._idle():
            return None
        run = self._run()
        return _drive(self.registry, self._after_model(run, state)) if self._reads_answer(run) else None

    @hook_config(can_jump_to=["model", "end"])
    async def aafter_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `after_model`."""
        if self._idle():
            return None
        run = self._run()
        return await _adrive(self.registry, self._after_model(run, state)) if self._reads_answer(run) else None

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """End the run: ``on_session_end`` (``completed``), or raise the `StopRun` that stopped it."""
        if self._idle():
            return None
        _drive(self.registry, self._after_agent(self._run()))
        return None

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> _Update:
        """Async twin of `after_agent`."""
        if self._idle():
            return None
        await _adrive(self.registry, self._after_agent(self._run()))
        return None
