"""Run a hookreg registry as a Strands ``HookProvider`` (``pip install 'hookreg[strands]'``).

Pass `HookregProvider` to ``strands.Agent(hooks=[...])``. A *session* is one
agent invocation (with the continuations ``stop`` asks for) and a *turn* is
one model call (turn 1 is the first); the tool calls a model answer asks for
belong to its turn. Every callback is async, so hooks run through the
registry's ``a``-methods: sync and async hooks mix freely.

Where each hook point runs:

- ``on_session_start``, ``user_prompt_submit``: ``BeforeInvocationEvent``; a
  deny cancels the invocation with its reason as the agent's answer.
- ``pre_turn``: ``BeforeModelCallEvent``; a deny cancels the model call with
  its reason as the answer, which ends the run.
- ``post_turn``: ``AfterModelCallEvent``, with the answer's text.
- ``transform_tool_input``, ``pre_tool_call_decide``, ``permission_denied``,
  ``on_interaction``: ``BeforeToolCallEvent``. The rewritten arguments replace
  the tool input; a deny (or an ``ask`` that no ``on_interaction`` hook
  allows) cancels the call with the reason as its error result, and the tool
  never runs.
- ``post_tool_call_failure``, ``on_tool_error``: ``AfterToolCallEvent`` with
  an exception; the chain starts from Strands' error text and its result is
  the text the model reads.
- ``transform_tool_result``, ``post_tool_call``: ``AfterToolCallEvent``
  without one. Strands keeps only the formatted tool result, so ``raw_result``
  is its text (the function's return value as Strands rendered it).
- ``stop``, ``on_session_end``: ``AfterInvocationEvent``. When the run ended
  normally, a ``stop`` deny resumes the agent with its reason as the next
  user message; otherwise ``on_session_end`` fires with the outcome.

A `hookreg.StopRun` raised by a hook inside the event loop (turn and tool
points) leaves the agent call as Strands' ``EventLoopException``, whose
``__cause__`` is the `hookreg.StopRun`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from hookreg._context import (
    OnSessionEndContext,
    OnSessionStartContext,
    PostTurnContext,
    PreTurnContext,
    RunContext,
    RunOutcome,
    StopContext,
    UserPromptSubmitContext,
)
from hookreg._points import HookPoint
from hookreg._results import HookResult
from hookreg._surface import HookRegistry
from hookreg.adapters import _missing_framework, _require_registry, _ToolCall

try:
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
    from strands.types.content import Message, Messages
    from strands.types.tools import ToolResult
except ImportError as _import_error:  # pragma: no cover - exercised by a test that hides the framework
    raise _missing_framework("strands", "strands", _import_error) from _import_error

__all__ = ["HookregProvider"]

_KEY = "hookreg"
"""Where the run's state lives in Strands' per-invocation ``invocation_state``."""

_COMPLETED = frozenset({"end_turn", "stop_sequence"})


@dataclass(slots=True)
class _Run:
    """One invocation as the provider tracks it."""

    run: RunContext
    continuations: int = 0
    denied: str | None = None


def _text(content: object) -> str:
    """The text blocks of a message's or tool result's content, joined."""
    blocks = cast("list[Mapping[str, object]]", content if isinstance(content, list) else [])
    return "".join(str(block["text"]) for block in blocks if "text" in block)


def _last_user_text(messages: Messages | None) -> str:
    return next((_text(m["content"]) for m in reversed(messages or []) if m["role"] == "user"), "")


def _outcome(event: AfterInvocationEvent, state: _Run) -> RunOutcome:
    result, turns = event.result, state.run.turn
    if state.denied is not None:
        return RunOutcome(status="stopped", reason=state.denied, turns=turns)
    if result is None:
        return RunOutcome(status="failed", turns=turns)
    if result.stop_reason in _COMPLETED:
        return RunOutcome(status="completed", turns=turns)
    if result.stop_reason == "cancelled":
        return RunOutcome(status="cancelled", turns=turns)
    return RunOutcome(status="stopped", reason=result.stop_reason, turns=turns)


def _with_text(result: ToolResult, text: str) -> ToolResult:
    return cast("ToolResult", {**result, "content": [{"text": text}]})


def _denial(result: HookResult) -> str:
    """The text of a refusal: never empty, since Strands ignores an empty cancel message."""
    return result.reason or f"denied by {result.decided_by or 'a hook'}"


class HookregProvider:
    """A Strands hook provider that dispatches a hookreg registry's hooks.

    Example:
        >>> from hookreg import HookRegistry
        >>> provider = HookregProvider(HookRegistry())
        >>> agent = Agent(model=model, tools=[...], hooks=[provider])  # doctest: +SKIP

    Args:
        registry: The hooks to run; later changes to it apply to the next dispatch.
    """

    def __init__(self, registry: HookRegistry) -> None:
        self.registry: HookRegistry = _require_registry(registry, "HookregProvider")

    def register_hooks(self, registry: StrandsHookRegistry, **kwargs: Any) -> None:
        """Subscribe to the Strands events the hook points map to (called by ``Agent``).

        Args:
            registry: The agent's Strands hook registry.
            **kwargs: Unused; Strands reserves them for future use.
        """
        registry.add_callback(BeforeInvocationEvent, self.before_invocation)
        registry.add_callback(BeforeModelCallEvent, self.before_model_call)
        registry.add_callback(AfterModelCallEvent, self.after_model_call)
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)
        registry.add_callback(AfterToolCallEvent, self.after_tool_call)
        registry.add_callback(AfterInvocationEvent, self.after_invocation)

    @staticmethod
    def _state(invocation_state: dict[str, Any]) -> _Run:
        """This invocation's run, created on first use (an event fired outside an invocation gets its own)."""
        state = invocation_state.get(_KEY)
        if not isinstance(state, _Run):
            state = invocation_state[_KEY] = _Run(RunContext())
        return state

    async def before_invocation(self, event: BeforeInvocationEvent) -> None:
        """Start the session and gate the prompt; a continuation asked for by ``stop`` skips both."""
        if isinstance(event.invocation_state.get(_KEY), _Run):
            return
        agent_name = getattr(event.agent, "name", None)
        state = event.invocation_state[_KEY] = _Run(RunContext(agent_name=agent_name))
        run, prompt = state.run, _last_user_text(event.messages)
        start = OnSessionStartContext(session_id=run.session_id, goal=prompt, run=run)
        await self.registry.anotify(HookPoint.ON_SESSION_START, start)
        result = await self.registry.adecide(
            HookPoint.USER_PROMPT_SUBMIT, UserPromptSubmitContext(content=prompt, run=run)
        )
        if not result.allowed:
            state.denied = event.cancel = _denial(result)

    async def before_model_call(self, event: BeforeModelCallEvent) -> None:
        """Gate the next turn with ``pre_turn``; an allowed turn becomes the run's current one."""
        state = self._state(event.invocation_state)
        run = dataclasses.replace(state.run, turn=state.run.turn + 1)
        prompt = _last_user_text(event.agent.messages)
        result = await self.registry.adecide(HookPoint.PRE_TURN, PreTurnContext(prompt=prompt, turn=run.turn, run=run))
        if result.allowed:
            state.run = run
        else:
            state.denied = event.cancel = _denial(result)

    async def after_model_call(self, event: AfterModelCallEvent) -> None:
        """Fire ``post_turn`` with the model's answer (not for a turn ``pre_turn`` denied)."""
        state = self._state(event.invocation_state)
        if event.stop_response is None or state.denied is not None:
            return
        message: Message = event.stop_response.message
        post = PostTurnContext(turn=state.run.turn, response_text=_text(message["content"]), run=state.run)
        await self.registry.anotify(HookPoint.POST_TURN, post)

    def _tool_call(self, event: BeforeToolCallEvent | AfterToolCallEvent) -> tuple[_ToolCall, Mapping[str, object]]:
        tool_use = event.tool_use
        run = self._state(event.invocation_state).run
        args = tool_use["input"] if isinstance(tool_use["input"], Mapping) else {}
        return _ToolCall(self.registry, run, tool_use["name"], str(tool_use["toolUseId"])), args

    async def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        """Rewrite the tool input and gate the call; a denial cancels it with the reason."""
        call, args = self._tool_call(event)
        effective, denial = await call.gate(args)
        if denial is not None:
            event.cancel_tool = denial or "denied by a hook"
        elif dict(effective) != args:
            event.tool_use = {**event.tool_use, "input": dict(effective)}

    async def after_tool_call(self, event: AfterToolCallEvent) -> None:
        """Observe the outcome and rewrite the text the model reads (not for a cancelled call)."""
        if event.cancel_message is not None:
            return
        call, args = self._tool_call(event)
        text = _text(event.result["content"])
        ms = (event.duration or 0.0) * 1000
        if event.exception is not None:
            shown: object = await call.failed(args, event.exception, text, ms)
        else:
            shown = await call.succeeded(args, text, ms)
        if shown is not text:
            event.result = _with_text(event.result, str(shown))

    async def after_invocation(self, event: AfterInvocationEvent) -> None:
        """Gate stopping with ``stop`` (a deny resumes the agent), else end the session."""
        state = self._state(event.invocation_state)
        result = event.result
        if result is not None and result.stop_reason in _COMPLETED and state.denied is None:
            stop = StopContext(
                response_text=_text(result.message["content"]), continuation_count=state.continuations, run=state.run
            )
            decision = await self.registry.adecide(HookPoint.STOP, stop)
            if not decision.allowed:
                state.continuations += 1
                event.resume = _denial(decision)
                return
        end = OnSessionEndContext(session_id=state.run.session_id, outcome=_outcome(event, state), run=state.run)
        del event.invocation_state[_KEY]
        await self.registry.anotify(HookPoint.ON_SESSION_END, end)
