"""Drive Claude Agent SDK queries from a HookRegistry via hook callbacks (``pip install 'hookreg[claude-agent-sdk]'``).

Attach it with ``HookregHooks(registry).query(prompt=..., options=...)`` where you wrote
``claude_agent_sdk.query(prompt=..., options=...)``.

See the adapter's docs page (docs/adapters/claude-agent-sdk.md) for where each hook
point runs, and its limits.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, cast

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    NotificationContext,
    OnCompactionContext,
    PermissionDeniedContext,
    PreCompactContext,
    RunContext,
    RunOutcome,
    StopRun,
    SubagentStartContext,
    SubagentStopContext,
    ToolCallRequest,
)
from hookreg._lifecycle import (
    STOPPED_NOTICE,
    Dispatch,
    RunState,
    Steps,
    arun_flow,
    ask,
    failed,
    gate,
    listens,
    missing_framework,
    present,
    require_registry,
    require_release,
    succeeded,
)

require_release("claude_agent_sdk", "claude-agent-sdk", (0, 2, 177))  # 0.2.177: the first with HookMatcher.on_failure

try:
    from claude_agent_sdk import (
        ClaudeAgentOptions,
        HookMatcher,
        Message,
        PermissionResultAllow,
        PermissionResultDeny,
        ResultMessage,
        ToolPermissionContext,
    )
    from claude_agent_sdk import (
        query as sdk_query,
    )
    from claude_agent_sdk.types import HookContext, HookEvent, HookInput, HookJSONOutput, PermissionResult
except ImportError as _error:  # pragma: no cover - exercised by a test that hides the framework
    raise missing_framework("claude_agent_sdk", "claude-agent-sdk", _error) from _error

__all__ = ["HookregHooks", "ToolFailure"]

P = HookPoint
_Callback = Callable[[Any, str | None, HookContext], Awaitable[HookJSONOutput]]

# The CLI events hookreg answers, each with the points that make it worth registering a callback.
_EVENTS: Mapping[str, tuple[HookPoint, ...]] = {
    "PreToolUse": (P.TRANSFORM_TOOL_INPUT, P.PRE_TOOL_CALL_DECIDE),
    "PostToolUse": (P.TRANSFORM_TOOL_RESULT, P.POST_TOOL_CALL),
    "PostToolUseFailure": (P.POST_TOOL_CALL_FAILURE, P.ON_TOOL_ERROR),
    "Stop": (P.STOP,),
    "PostToolBatch": (P.PRE_TURN,),
    "PreCompact": (P.PRE_COMPACT, P.ON_COMPACTION),
    "PostCompact": (P.ON_COMPACTION,),
    "Notification": (P.NOTIFICATION,),
    "SubagentStart": (P.SUBAGENT_START,),
    "SubagentStop": (P.SUBAGENT_STOP,),
}


# Every point a query can reach: with no hook at any of them when it starts, a query is the SDK's own.
_REACHED: tuple[HookPoint, ...] = tuple(
    dict.fromkeys(
        (
            P.ON_SESSION_START,
            P.USER_PROMPT_SUBMIT,
            P.PRE_TURN,
            P.ON_SESSION_END,
            P.ON_INTERACTION,
            P.PERMISSION_DENIED,
            P.NOTIFICATION,
            *(point for points in _EVENTS.values() for point in points),
        )
    )
)


class ToolFailure(Exception):  # noqa: N818 -- it is the tool's failure, as the CLI reported it
    """A tool call the CLI reported as failed (``PostToolUseFailure``); its message is the CLI's error text."""


def _mcp_text(raw: object) -> str | None:
    """The text of an MCP tool result (a list of content blocks, or ``{"content": [...]}``), else ``None``."""
    blocks = raw.get("content") if isinstance(raw, Mapping) else raw
    if not isinstance(blocks, list) or not all(isinstance(b, Mapping) and b.get("type") == "text" for b in blocks):
        return None
    return "".join(str(b.get("text", "")) for b in blocks)


def _presentation(raw: object) -> str:
    """What the model reads of a tool's raw result: a Bash result's stdout, an MCP result's text, else `present`."""
    if isinstance(raw, Mapping) and isinstance(raw.get("stdout"), str):
        return str(raw["stdout"])
    text = _mcp_text(raw)
    return present(raw) if text is None else text


def _rewritten_output(raw: object, text: str) -> dict[str, object]:
    """The ``PostToolUse`` output replacing what the model reads with `text`, in the shape of `raw`."""
    if isinstance(raw, Mapping) and isinstance(raw.get("stdout"), str):
        return {"updatedToolOutput": {**raw, "stdout": text}}
    if _mcp_text(raw) is not None:
        return {"updatedMCPToolOutput": [{"type": "text", "text": text}]}
    return {"updatedToolOutput": text}


def _transcript(path: object) -> tuple[int, int]:
    """The CLI transcript's length in characters and its number of entries (one JSON line each); 0, 0 if unreadable."""
    try:
        text = Path(str(path)).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return 0, 0
    return len(text), sum(1 for line in text.splitlines() if line.strip())


@dataclasses.dataclass(eq=False)
class _Run:
    """One query's state: its lifecycle, the tool names hooks see, and the first exception to hand the caller."""

    state: RunState
    tool_names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    error: BaseException | None = None
    started: bool = False  # whether a prompt started the session
    compacting: int = 0  # the transcript entries a compaction under way replaces

    def call(self, data: Mapping[str, Any]) -> ToolCallRequest:
        """The tool call an event's input is about, named as hooks know it (``{}`` for args that are no mapping)."""
        args = data.get("tool_input")
        name = str(data["tool_name"])
        return ToolCallRequest(
            str(data.get("tool_use_id", "")), self.tool_names.get(name, name), args if isinstance(args, Mapping) else {}
        )


class HookregHooks:
    """Run a `HookRegistry`'s hooks inside Claude Agent SDK queries.

    One object may serve many queries, also concurrently: each `query` gets
    its own `hookreg.RunContext` and callbacks bound to it.
    """

    def __init__(self, registry: HookRegistry, *, tool_names: Mapping[str, str] | None = None) -> None:
        """Wrap `registry`.

        Args:
            registry: The hooks to run.
            tool_names: The CLI's tool name → the name hooks see (``{"mcp__tools__echo": "echo"}``,
                ``{"Bash": "shell"}``); a tool not named here keeps the CLI's name.

        Raises:
            HookTypeError: `registry` is not a `HookRegistry`.
        """
        self.registry: HookRegistry = require_registry(registry, "HookregHooks")
        self.tool_names: Mapping[str, str] = dict(tool_names or {})

    def __repr__(self) -> str:
        return f"HookregHooks({self.registry!r})"

    def query(
        self,
        *,
        prompt: str | AsyncIterable[dict[str, Any]],
        options: ClaudeAgentOptions | None = None,
        transport: Any = None,
    ) -> AsyncIterator[Message]:
        """`claude_agent_sdk.query` with the registry's hooks: one hookreg session per call.

        With no hook at any point a query reaches when it is called, the SDK's own message stream comes back, with
        nothing of hookreg's around it: a hook registered during that query takes effect from the next one.

        Args:
            prompt: The prompt, gated before the CLI starts; or the SDK's stream of user messages, each
                gated before it reaches the CLI (a deny ends the stream, and the run).
            options: The application's options; hookreg's callbacks join its
                ``hooks`` and, for ``on_interaction``, fill in ``can_use_tool``.
            transport: Passed to `claude_agent_sdk.query` as is.

        Returns:
            The SDK's messages, unchanged, as an async iterator.

        Raises:
            StopRun: A hook stopped the run (the same object).
        """
        if not listens(self.registry, _REACHED):
            return sdk_query(prompt=prompt, options=options, transport=transport)
        return self._session(prompt, options, transport)

    async def _session(
        self, prompt: str | AsyncIterable[dict[str, Any]], options: ClaudeAgentOptions | None, transport: Any
    ) -> AsyncIterator[Message]:
        """`query` as one hookreg session: the prompt gated, the callbacks joined, the session ended once."""
        registry = self.registry
        run = _Run(RunState(registry, RunContext()), self.tool_names)
        state = run.state
        inner: AsyncIterator[Message] | None = None
        try:
            if isinstance(prompt, str):
                await _submit(run, prompt)
                sent: str | AsyncIterable[dict[str, Any]] = prompt
            else:
                sent = _gated(run, prompt)
            inner = sdk_query(prompt=sent, options=self._options(options, run), transport=transport)
            failure: str | None = None
            async for message in inner:
                if run.error is not None:
                    # The CLI was told to stop (continue: false), or its input ended: let it finish, so the SDK
                    # closes everything it opened, and show nothing it says after the stop.
                    continue
                if isinstance(message, ResultMessage) and message.is_error:
                    failure = message.result or "; ".join(message.errors or ()) or message.subtype
                yield message
            if run.error is not None:
                raise run.error
            outcome = (
                RunOutcome(status="completed", turns=state.turns)
                if failure is None
                else RunOutcome(status="failed", reason=failure, turns=state.turns)
            )
        except BaseException as exc:
            if inner is not None:
                with contextlib.suppress(Exception):
                    await cast("Any", inner).aclose()
            if run.started:
                await arun_flow(registry, state.end_with(exc))
            raise
        if run.started:  # a stream that sent no message started no session
            await arun_flow(registry, state.end(outcome))

    def _options(self, options: ClaudeAgentOptions | None, run: _Run) -> ClaudeAgentOptions:
        """A copy of `options` with this run's callbacks added to its ``hooks`` (and ``can_use_tool``)."""
        options = options or ClaudeAgentOptions()
        registry = self.registry
        hooks: dict[HookEvent, list[HookMatcher]] = {k: list(v) for k, v in (options.hooks or {}).items()}
        listened = {event for event, points in _EVENTS.items() if listens(registry, points)}
        if listened:  # hooks read the turn in their contexts: count turns whenever a callback runs at all
            listened.add("PostToolBatch")
        for event in _EVENTS:
            if event in listened:
                # "block": a callback that fails (or times out) stops the action; a failure is never an approval.
                matcher = HookMatcher(hooks=[_callback(event, run)], on_failure="block")
                hooks.setdefault(cast("HookEvent", event), []).append(matcher)
        changes: dict[str, object] = {}
        if hooks != (options.hooks or {}):
            changes["hooks"] = hooks
        # The CLI asks nobody in bypassPermissions mode, nor over stdio when a permission prompt tool is set.
        asks = options.permission_mode != "bypassPermissions" and options.permission_prompt_tool_name is None
        if asks and options.can_use_tool is None and registry.has_hooks(P.ON_INTERACTION):
            changes["can_use_tool"] = _permission(run)
        return dataclasses.replace(options, **changes) if changes else options  # type: ignore[arg-type]  # fields by name


async def _submit(run: _Run, text: str) -> None:
    """A prompt goes to the CLI: the session starts (on the first), ``user_prompt_submit`` gates it, a turn starts.

    Raises:
        StopRun: The prompt or its turn was denied (or an ``ask`` about it not approved).
    """
    state = run.state
    state.goal, run.started = text, True
    outcome = await arun_flow(state.registry, state.start())
    if outcome is None:
        outcome = await arun_flow(state.registry, state.turn())
    if outcome is not None:
        raise StopRun(outcome.reason)


def _prompt_text(message: Mapping[str, Any]) -> str:
    """The text of one user message of the SDK's input stream (its text parts, joined)."""
    content = (message.get("message") or {}).get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else ()
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and p.get("type") == "text")


async def _gated(run: _Run, prompts: AsyncIterable[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
    """The user messages of `prompts`, each gated before the SDK sends it; a deny (or a stop) ends the stream."""
    async for message in prompts:
        if run.error is not None:
            return
        try:
            await _submit(run, _prompt_text(message))
        except Exception as exc:  # noqa: BLE001 -- a StopRun or a hook's own failure: query hands it to the caller
            run.error = exc
            return
        yield message


def _callback(event: str, run: _Run) -> _Callback:
    """The SDK hook callback answering `event` for `run`."""
    handle = _HANDLERS[event]

    async def callback(data: HookInput, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if run.error is None:
            try:
                return cast("HookJSONOutput", await handle(run, cast("Mapping[str, Any]", data)))
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller by query; the CLI is told to stop
                run.error = exc
        return cast("HookJSONOutput", _stopped(event, run.error))

    return callback


def _stopped(event: str, error: BaseException) -> dict[str, object]:
    """The answer to every event once the run is over: stop, and run no tool (a later call of the batch too)."""
    reason = error.reason if isinstance(error, StopRun) else f"hookreg: {type(error).__name__}"
    answer: dict[str, object] = {"continue_": False, "stopReason": reason}
    if event == "PreToolUse":
        output = {"hookEventName": event, "permissionDecision": "deny", "permissionDecisionReason": STOPPED_NOTICE}
        answer["hookSpecificOutput"] = output
    return answer


async def _pre_tool_use(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    registry, state = run.state.registry, run.state
    call = run.call(data)
    # The CLI has checked the tool and its input already: only the gate is hookreg's here.
    flow = gate(registry, state.run, call.tool_name, call.call_id, data.get("tool_input"), known=(call.tool_name,))
    verdict = await arun_flow(registry, flow)
    output: dict[str, object] = {"hookEventName": "PreToolUse"}
    if not verdict.allowed:
        output |= {"permissionDecision": "deny", "permissionDecisionReason": verdict.text}
    elif verdict.rewritten:
        output["updatedInput"] = dict(verdict.call.args)
    return {"hookSpecificOutput": output} if len(output) > 1 else {}


async def _post_tool_use(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    registry, state = run.state.registry, run.state
    raw = data.get("tool_response")
    shown = _presentation(raw)
    duration = float(data.get("duration_ms") or 0)
    text = await arun_flow(
        registry, succeeded(registry, state.run, run.call(data), raw, presentation=shown, duration_ms=duration)
    )
    if text == shown:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PostToolUse", **_rewritten_output(raw, text)}}


async def _post_tool_use_failure(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    registry, state = run.state.registry, run.state
    error = str(data.get("error", ""))
    duration = float(data.get("duration_ms") or 0)
    flow = failed(registry, state.run, run.call(data), ToolFailure(error), message=error, duration_ms=duration)
    text = await arun_flow(registry, flow)
    if text == error:
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": text}}


async def _next_turn(run: _Run) -> None:
    """The CLI is about to call the model again: the next turn starts; a ``pre_turn`` deny stops the run."""
    outcome = await arun_flow(run.state.registry, run.state.turn())
    if outcome is not None:
        raise StopRun(outcome.reason)


async def _post_tool_batch(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    await _next_turn(run)
    return {}


async def _stop(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    feedback = await arun_flow(run.state.registry, run.state.stop(str(data.get("last_assistant_message") or "")))
    if feedback is None:
        return {}
    await _next_turn(run)  # the CLI goes on with the feedback: one more model call
    return {"decision": "block", "reason": feedback}


async def _observe(registry: HookRegistry, point: HookPoint, ctx: object) -> dict[str, object]:
    await registry.anotify(point, ctx)  # type: ignore[call-overload]  # the point's own context, built by the caller
    return {}


async def _pre_compact(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    chars, run.compacting = _transcript(data.get("transcript_path"))
    if not run.state.registry.has_hooks(P.PRE_COMPACT):  # registered for on_compaction only
        return {}
    ctx = PreCompactContext(transcript_len=chars, message_count=run.compacting, run=run.state.run)
    return await _observe(run.state.registry, P.PRE_COMPACT, ctx)


async def _post_compact(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    # Claude Code's compaction replaces the whole conversation with its summary.
    summary = str(data.get("compact_summary") or "")
    ctx = OnCompactionContext(removed=run.compacting, summary_chars=len(summary), run=run.state.run)
    return await _observe(run.state.registry, P.ON_COMPACTION, ctx)


async def _notification(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    ctx = NotificationContext(message=str(data.get("message", "")), run=run.state.run)
    return await _observe(run.state.registry, P.NOTIFICATION, ctx)


async def _subagent_start(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    ctx = SubagentStartContext(goal=str(data.get("agent_type", "")), depth=run.state.run.depth + 1, run=run.state.run)
    return await _observe(run.state.registry, P.SUBAGENT_START, ctx)


async def _subagent_stop(run: _Run, data: Mapping[str, Any]) -> dict[str, object]:
    outcome = RunOutcome(status="completed", reason=str(data.get("last_assistant_message") or ""))
    ctx = SubagentStopContext(outcome=outcome, depth=run.state.run.depth + 1, run=run.state.run)
    return await _observe(run.state.registry, P.SUBAGENT_STOP, ctx)


_HANDLERS: Mapping[str, Callable[[_Run, Mapping[str, Any]], Awaitable[dict[str, object]]]] = {
    "PreToolUse": _pre_tool_use,
    "PostToolUse": _post_tool_use,
    "PostToolUseFailure": _post_tool_use_failure,
    "Stop": _stop,
    "PostToolBatch": _post_tool_batch,
    "PreCompact": _pre_compact,
    "PostCompact": _post_compact,
    "Notification": _notification,
    "SubagentStart": _subagent_start,
    "SubagentStop": _subagent_stop,
}


def _permission(run: _Run) -> Callable[[str, dict[str, Any], ToolPermissionContext], Awaitable[PermissionResult]]:
    """A ``can_use_tool`` answering the CLI's permission requests through ``on_interaction``."""

    async def can_use_tool(tool_name: str, args: dict[str, Any], context: ToolPermissionContext) -> PermissionResult:
        registry, state = run.state.registry, run.state
        question = context.title or context.decision_reason or f"Allow {tool_name}?"
        call = run.call({"tool_name": tool_name, "tool_input": args, "tool_use_id": context.tool_use_id or ""})
        answer = await arun_flow(registry, _asked(registry, state.run, question, call))
        if answer.allowed:
            return PermissionResultAllow()
        return PermissionResultDeny(message=answer.reason or f"{call.tool_name} was not approved.")

    return can_use_tool


def _asked(registry: HookRegistry, run: RunContext, question: str, call: ToolCallRequest) -> Steps[HookResult]:
    """The CLI asks permission: `ask`; an answer that is not an approval fires ``permission_denied``."""
    answer = yield from ask(registry, run, HookResult.ask(question), call.tool_name)
    if not answer.allowed and registry.has_hooks(P.PERMISSION_DENIED):
        denied = PermissionDeniedContext(
            tool_name=call.tool_name,
            args=call.args,
            call_id=call.call_id,
            reason=answer.reason,
            decided_by=answer.decided_by,
            run=run,
        )
        yield Dispatch("notify", P.PERMISSION_DENIED, denied)
    return answer
