"""Drive Google Antigravity SDK agents from a HookRegistry via its hook classes (``pip install hookreg[antigravity]``).

Attach it with ``Agent(with_hookreg(config, registry))`` where you wrote ``Agent(config)``.

See the adapter's docs page (docs/adapters/antigravity.md) for where each hook
point runs, and its limits.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hookreg import (
    HookPoint,
    HookRegistry,
    HookValueError,
    OnCompactionContext,
    PostTurnContext,
    RunContext,
    RunOutcome,
    StopRun,
    ToolCallRequest,
)
from hookreg._lifecycle import (
    RunState,
    arun_flow,
    failed,
    gate,
    listens,
    missing_framework,
    outcome_for,
    require_registry,
    require_release,
    succeeded,
)

require_release(
    "antigravity", "google-antigravity", (0, 1, 21)
)  # 0.1.21: the oldest release the adapter's tests pass on

try:
    from google.antigravity import types as ag_types
    from google.antigravity.connections.connection import AgentConfig
    from google.antigravity.hooks import (
        HookContext,
        OnCompactionHook,
        OnSessionEndHook,
        OnToolErrorHook,
        PostToolCallHook,
        PostTurnHook,
        PreToolCallDecideHook,
        PreTurnHook,
        StopHook,
    )
except ImportError as _error:  # pragma: no cover - exercised by a test that hides the framework
    raise missing_framework("antigravity", "antigravity", _error) from _error

__all__ = ["ToolFailure", "with_hookreg"]

P = HookPoint
_ConfigT = TypeVar("_ConfigT", bound=AgentConfig)
_T = TypeVar("_T")


class ToolFailure(Exception):  # noqa: N818 -- it is the tool's failure, as the SDK reported it
    """A tool call the SDK reported as failed (``OnToolErrorHook``); its message is the SDK's error text."""


@dataclass(eq=False)
class _Session:
    """One agent session's lifecycle, and the first error a hook raised (the SDK swallows hook exceptions)."""

    state: RunState
    error: BaseException | None = None
    started: bool = False  # whether a prompt started it
    approved: dict[str, Mapping[str, object]] = field(default_factory=dict)  # call id -> the args the gate approved

    def call(self, data: ag_types.ToolResult | Exception) -> ToolCallRequest:
        """The call an outcome is about, with the args the gate approved (the SDK's outcome shows none)."""
        call_id = str(getattr(data, "id", None) or getattr(data, "call_id", None) or "")
        name = str(getattr(data, "name", None) or getattr(data, "tool_name", None) or "")
        return ToolCallRequest(call_id, name, self.approved.pop(call_id, {}))

    async def guarded(self, work: Awaitable[_T], default: _T) -> _T:
        """Await `work`; a StopRun or a hook's failure is kept for the session's end, and `default` answers the SDK.

        The SDK's hook runner would swallow it: kept, it ends the session ``stopped`` (or ``failed``).
        """
        try:
            return await work
        except Exception as exc:  # noqa: BLE001 -- kept, and re-raised as the session's outcome
            _fail(self, exc)
            return default


class _Sessions:
    """The hookreg session of each SDK session, keyed by the SDK's own session context (never stored in it)."""

    def __init__(self, registry: HookRegistry) -> None:
        self.registry = registry
        self._by_root: weakref.WeakKeyDictionary[HookContext, _Session] = weakref.WeakKeyDictionary()

    def __deepcopy__(self, memo: dict[int, object]) -> _Sessions:
        # ``Agent`` deep-copies its config, hooks included: the copy must run the same registry and sessions.
        return self

    def get(self, context: HookContext) -> _Session:
        root = context
        while root.parent is not None:  # turn and operation contexts hang off the session's
            root = root.parent
        session = self._by_root.get(root)
        if session is None:
            session = self._by_root[root] = _Session(RunState(self.registry, RunContext()))
        return session

    def started(self, context: HookContext) -> _Session | None:
        """The session of `context` if a prompt started it, else ``None``."""
        session = self.get(context)
        return session if session.started else None


def _fail(session: _Session, error: BaseException) -> None:
    """Keep the first error of the session; the SDK's answer to it is whatever the calling hook returns."""
    if session.error is None:
        session.error = error


class _PreTurn(PreTurnHook):  # type: ignore[misc]  # the SDK is untyped
    def __init__(self, sessions: _Sessions) -> None:
        self.sessions = sessions

    async def run(self, context: HookContext, data: ag_types.Content) -> ag_types.HookResult:
        session = self.sessions.get(context)
        state = session.state
        state.goal, session.started = (data if isinstance(data, str) else str(data)), True
        try:
            outcome = await arun_flow(state.registry, state.start())
            if outcome is None:
                outcome = await arun_flow(state.registry, state.turn())
        except Exception as exc:  # noqa: BLE001 -- a StopRun or a hook's failure: the turn is refused, never run
            _fail(session, exc)
            return ag_types.HookResult(allow=False, message=getattr(exc, "reason", None) or f"hookreg: {exc!r}")
        if outcome is not None:
            _fail(session, StopRun(outcome.reason))
            return ag_types.HookResult(allow=False, message=outcome.reason)
        return ag_types.HookResult(allow=True)


class _SessionEnd(OnSessionEndHook):  # type: ignore[misc]  # the SDK is untyped
    def __init__(self, sessions: _Sessions) -> None:
        self.sessions = sessions

    async def run(self, context: HookContext, data: None) -> None:
        session = self.sessions.started(context)
        if session is None:  # no prompt reached the session: it never started
            return
        state = session.state
        if session.error is None:
            await arun_flow(state.registry, state.end(RunOutcome(status="completed", turns=state.turns)))
        else:
            await arun_flow(state.registry, state.end(outcome_for(session.error, state.turns), session.error))


class _Gate(PreToolCallDecideHook):  # type: ignore[misc]  # the SDK is untyped
    def __init__(self, sessions: _Sessions) -> None:
        self.sessions = sessions

    async def run(self, context: HookContext, data: ag_types.ToolCall) -> ag_types.HookResult:
        session = self.sessions.get(context)
        registry, run = self.sessions.registry, session.state.run
        # The SDK has checked the tool and its arguments already: only the gate is hookreg's here.
        flow = gate(registry, run, data.name, str(data.id or ""), data.args, known=(data.name,))
        try:
            verdict = await arun_flow(registry, flow)
        except Exception as exc:  # noqa: BLE001 -- a StopRun or a hook's failure: the call never runs
            _fail(session, exc)
            return ag_types.HookResult(allow=False, message=getattr(exc, "reason", None) or f"hookreg: {exc!r}")
        if not verdict.allowed:
            return ag_types.HookResult(allow=False, message=verdict.text)
        session.approved[verdict.call.call_id] = verdict.call.args
        if verdict.rewritten:
            return ag_types.HookResult(allow=True, modified_args=dict(verdict.call.args))
        return ag_types.HookResult(allow=True)


class _PostTool(PostToolCallHook):  # type: ignore[misc]  # the SDK is untyped
    def __init__(self, sessions: _Sessions) -> None:
        self.sessions = sessions

    async def run(self, context: HookContext, data: ag_types.ToolResult) -> None:
        if data.error:  # a failure: OnToolErrorHook reports it
            return
        session = self.sessions.get(context)
        state = session.state
        flow = succeeded(state.registry, state.run, session.call(data), data.result)
        await session.guarded(arun_flow(state.registry, flow), None)


class _ToolError(OnToolErrorHook):  # type: ignore[misc]  # the SDK is untyped
    def __init__(self, sessions: _Sessions) -> None:
        self.sessions = sessions

    async def run(self, context: HookContext, data: Exception) -> str | None:
        session = self.sessions.get(context)
        state, message, call = session.state, str(data), session.call(data)
        flow = failed(state.registry, state.run, call, ToolFailure(message), message=message)
        text = await session.guarded(arun_flow(state.registry, flow), message)
        return None if text == message else text  # None: the SDK's own error text


class _PostTurn(PostTurnHook):  # type: ignore[misc]  # the SDK is untyped
    def __init__(self, sessions: _Sessions) -> None:
        self.sessions = sessions

    async def run(self, context: HookContext, data: str) -> None:
        session = self.sessions.get(context)
        run = session.state.run
        ctx = PostTurnContext(turn=run.turn, response_text=data, run=run)
        await session.guarded(self.sessions.registry.anotify(P.POST_TURN, ctx), None)


class _Stop(StopHook):  # type: ignore[misc]  # the SDK is untyped
    def __init__(self, sessions: _Sessions) -> None:
        self.sessions = sessions

    async def run(self, context: HookContext, data: ag_types.StopArgs) -> ag_types.StopHookResult:
        session = self.sessions.get(context)
        state = session.state
        # A failure stops the run rather than loops it (the stop point's own rule, DESIGN §5).
        feedback = await session.guarded(arun_flow(state.registry, state.stop(data.response_text)), None)
        if feedback is None:
            return ag_types.StopHookResult(decision=ag_types.StopDecision.ALLOW_STOP)
        return ag_types.StopHookResult(decision=ag_types.StopDecision.CONTINUE, reason=feedback)


class _Compaction(OnCompactionHook):  # type: ignore[misc]  # the SDK is untyped
    def __init__(self, sessions: _Sessions) -> None:
        self.sessions = sessions

    async def run(self, context: HookContext, data: ag_types.Step) -> None:
        session = self.sessions.get(context)
        # The SDK reports the summary, not how many messages it replaced.
        ctx = OnCompactionContext(removed=0, summary_chars=len(str(data.content or "")), run=session.state.run)
        await session.guarded(self.sessions.registry.anotify(P.ON_COMPACTION, ctx), None)


_RUN_LEVEL: tuple[tuple[tuple[HookPoint, ...], type[Any]], ...] = (
    ((P.ON_SESSION_START, P.USER_PROMPT_SUBMIT, P.PRE_TURN, P.NOTIFICATION, P.ON_INTERACTION), _PreTurn),
    ((P.POST_TURN,), _PostTurn),
    ((P.STOP,), _Stop),
    ((P.ON_COMPACTION,), _Compaction),
)
_TOOL_LEVEL: tuple[tuple[tuple[HookPoint, ...], type[Any]], ...] = (
    ((P.TRANSFORM_TOOL_INPUT, P.PRE_TOOL_CALL_DECIDE, P.PERMISSION_DENIED), _Gate),
    ((P.TRANSFORM_TOOL_RESULT, P.POST_TOOL_CALL), _PostTool),
    ((P.POST_TOOL_CALL_FAILURE, P.ON_TOOL_ERROR), _ToolError),
)


def with_hookreg(config: _ConfigT, registry: HookRegistry) -> _ConfigT:
    """A copy of `config` whose ``hooks`` run `registry`'s hooks: pass it to ``Agent``.

    hookreg's run-level hooks go first and its tool gate last, after every
    hook of `config` (so the gate judges the call as they edited it). The
    config is returned unchanged when `registry` has no hooks at any point
    the SDK reaches.

    Raises:
        HookTypeError: `registry` is not a `HookRegistry`.
        HookValueError: hookreg's gate would be added to a config without
            ``policies``: the SDK counts any ``PreToolCallDecideHook`` as a safety
            policy, so the gate would silently switch off its "write tools need a
            safety policy" check.
    """
    registry = require_registry(registry, "with_hookreg")
    sessions = _Sessions(registry)

    def wanted(table: tuple[tuple[tuple[HookPoint, ...], type[Any]], ...]) -> list[Any]:
        return [cls(sessions) for points, cls in table if listens(registry, points)]

    first, last = wanted(_RUN_LEVEL), wanted(_TOOL_LEVEL)
    if not first and not last:
        return config
    if any(isinstance(hook, _Gate) for hook in last) and not config.policies:
        msg = (
            f"Cannot add hookreg's tool gate to {type(config).__name__}: the SDK treats any "
            "pre_tool_call_decide hook as a safety policy, so the gate would silently switch off its "
            '"write tools need a safety policy" check. Set policies=[policy.allow_all()] to let hookreg\'s '
            "gate judge every call alone, or the SDK policies the calls must also pass."
        )
        raise HookValueError(msg)
    if not any(isinstance(hook, _PreTurn) for hook in first):
        first.insert(0, _PreTurn(sessions))  # turns and the session start are counted whenever hookreg runs at all
    hooks = [*first, *config.hooks, *last, _SessionEnd(sessions)]
    copied: _ConfigT = config.model_copy(update={"hooks": hooks})  # the SDK's copy keeps the class
    return copied
