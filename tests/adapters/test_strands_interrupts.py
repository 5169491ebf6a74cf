"""A Strands run is one hookreg session, started and ended once: also when an interrupt pauses it and its answer
resumes it, when another extension fails the invocation before it starts, and when a Swarm times a node out."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest
from interpreter_exit import printed_until_exit
from strands import Agent
from strands.hooks import BeforeInvocationEvent, BeforeToolCallEvent
from strands.hooks import HookRegistry as StrandsHookRegistry
from strands.multiagent import Status, Swarm
from strands.types.interrupt import InterruptResponseContent
from test_strands import ScriptedModel, echo_tool

from hookreg import (
    HookRegistry,
    HookResult,
    OnSessionEndContext,
    PreToolCallDecideContext,
    PreTurnContext,
    UserPromptSubmitContext,
)
from hookreg.adapters.strands import HookregProvider
from hookreg.testing.conformance import Answer, RecordingTool


class AsksApproval:
    """A Strands hook provider asking a human (a Strands interrupt) before each tool call, after hookreg's gate."""

    def register_hooks(self, registry: StrandsHookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.ask)

    def ask(self, event: BeforeToolCallEvent) -> None:
        if event.interrupt("approval", reason="run echo?") != "yes":
            event.cancel_tool = "the human said no"


def _paused_and_resumed(registry: HookRegistry, tool: RecordingTool) -> tuple[ScriptedModel, Agent]:
    """Run an agent whose tool call a human approves through a Strands interrupt, then resume it with "yes"."""
    model = ScriptedModel([{"text": "hi"}, "done"])
    agent = Agent(
        model=model, tools=[echo_tool(tool)], hooks=[HookregProvider(registry), AsksApproval()], callback_handler=None
    )
    paused = agent("go")
    assert paused.stop_reason == "interrupt"
    [interrupt] = paused.interrupts or []
    answer: InterruptResponseContent = {"interruptResponse": {"interruptId": interrupt.id, "response": "yes"}}
    agent([answer])
    return model, agent


def test_an_interrupted_run_resumed_is_one_session() -> None:
    """Session start and the prompt gate fire once, the session ends once (completed), turns go on from the pause."""
    registry, events = HookRegistry(), list[object]()
    registry.on_session_start(lambda ctx: events.append(("start", ctx.run.run_id)))

    @registry.user_prompt_submit
    def prompt(ctx: UserPromptSubmitContext) -> HookResult:
        events.append("prompt")
        return HookResult.allow()

    @registry.pre_turn
    def turn(ctx: PreTurnContext) -> HookResult:
        events.append(("turn", ctx.turn))
        return HookResult.allow()

    @registry.on_session_end
    def end(ctx: OnSessionEndContext) -> None:
        events.append(("end", ctx.outcome.status, ctx.outcome.turns, ctx.run.run_id))

    tool = RecordingTool()
    model, _ = _paused_and_resumed(registry, tool)
    assert model.tool_outputs == ["hi"]
    [(_, run_id)] = [event for event in events if isinstance(event, tuple) and event[0] == "start"]
    assert [event for event in events if not (isinstance(event, tuple) and event[0] == "start")] == [
        "prompt",
        ("turn", 1),
        ("turn", 2),
        ("end", "completed", 2, run_id),
    ]


def test_a_resumed_call_is_judged_once() -> None:
    """Strands asks again for the paused call when it resumes: the gate's verdict on it stands, no hook runs twice."""
    registry, judged = HookRegistry(), list[str]()

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(ctx.call_id)
        return HookResult.allow()

    tool = RecordingTool()
    _paused_and_resumed(registry, tool)
    assert judged == ["call-1"]
    assert tool.calls == [{"text": "hi"}]


def test_a_paused_run_a_new_prompt_replaces_ends_cancelled() -> None:
    """A paused run that Strands drops for a new prompt ends cancelled, once, before the new session starts."""
    registry, events = HookRegistry(), list[tuple[str, str]]()
    registry.on_session_start(lambda ctx: events.append(("start", ctx.goal)))
    registry.on_session_end(lambda ctx: events.append(("end", ctx.outcome.status)))
    model = ScriptedModel([{"text": "hi"}, "fresh"])
    agent = Agent(
        model=model,
        tools=[echo_tool(RecordingTool())],
        hooks=[HookregProvider(registry), AsksApproval()],
        callback_handler=None,
    )
    assert agent("go").stop_reason == "interrupt"
    agent._interrupt_state.deactivate()  # as a restored session without the interrupt would leave it
    agent.messages.clear()
    agent("again")
    assert events == [("start", "go"), ("end", "cancelled"), ("start", "again"), ("end", "completed")]


class RaisesBeforeInvocation:
    """A Strands hook provider whose ``BeforeInvocationEvent`` callback raises, or refuses the invocation."""

    def __init__(self, *, refuse: bool = False) -> None:
        self.refuse = refuse

    def register_hooks(self, registry: StrandsHookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self.check)

    def check(self, event: BeforeInvocationEvent) -> None:
        if self.refuse:
            event.cancel = "refused by another hook"
            return
        msg = "the invocation check failed"
        raise RuntimeError(msg)


@pytest.mark.parametrize("refuse", [False, True])
def test_another_before_invocation_callback_failing_leaves_no_session_open(refuse: bool) -> None:
    """A raise (or a refusal) from another BeforeInvocationEvent callback leaves no session started and not ended."""
    registry, events = HookRegistry(), list[str]()
    registry.on_session_start(lambda ctx: events.append("start"))
    registry.on_session_end(lambda ctx: events.append("end"))
    model = ScriptedModel(["hello", "hello"])
    hooks: list[Any] = [HookregProvider(registry), RaisesBeforeInvocation(refuse=refuse)]
    agent = Agent(model=model, tools=[echo_tool(RecordingTool())], hooks=hooks, callback_handler=None)
    if refuse:
        assert "refused by another hook" in str(agent("go"))
    else:
        with pytest.raises(RuntimeError, match="the invocation check failed"):
            agent("go")
    assert events.count("start") == events.count("end")


def test_a_swarm_node_that_times_out_ends_its_session() -> None:
    """A Swarm node whose model hangs past the node timeout ends its session once, cancelled."""
    registry, ends = HookRegistry(), list[str]()
    registry.on_session_end(lambda ctx: ends.append(ctx.outcome.status))
    model = ScriptedModel([Answer(hang=True)])
    node = Agent(name="slow", model=model, hooks=[HookregProvider(registry)], callback_handler=None)
    assert Swarm([node], node_timeout=0.2, execution_timeout=30)("go").status is Status.FAILED
    assert ends == ["cancelled"]


# --- a paused run nothing resumes (DESIGN §8: it ends cancelled when its agent or provider goes, or at exit) ---------


def _paused(registry: HookRegistry, provider: HookregProvider | None = None) -> Agent:
    """An agent whose run an interrupt paused, through `provider` (a new one on `registry` by default)."""
    agent = Agent(
        model=ScriptedModel([{"text": "hi"}, "done"]),
        tools=[echo_tool(RecordingTool())],
        hooks=[provider or HookregProvider(registry), AsksApproval()],
        callback_handler=None,
    )
    assert agent("go").stop_reason == "interrupt"
    return agent


def _ends(registry: HookRegistry) -> list[tuple[str, str, int]]:
    ends: list[tuple[str, str, int]] = []
    registry.on_session_end(lambda ctx: ends.append((ctx.outcome.status, ctx.outcome.reason, ctx.outcome.turns)))
    return ends


def test_a_paused_run_whose_agent_is_dropped_ends_cancelled() -> None:
    """The provider lives on (serving other agents); the paused agent is collected: its run ends, once."""
    registry = HookRegistry()
    ends = _ends(registry)
    provider = HookregProvider(registry)
    agent = _paused(registry, provider)
    assert ends == []
    del agent
    gc.collect()
    assert ends == [("cancelled", "the run was paused and never resumed", 1)]
    del provider
    gc.collect()
    assert len(ends) == 1


def test_a_paused_run_whose_provider_and_agent_are_dropped_ends_cancelled() -> None:
    registry = HookRegistry()
    ends = _ends(registry)
    agent = _paused(registry)
    del agent
    gc.collect()
    assert ends == [("cancelled", "the run was paused and never resumed", 1)]


def test_a_resumed_run_is_not_ended_again_when_its_agent_goes() -> None:
    registry = HookRegistry()
    ends = _ends(registry)
    _, agent = _paused_and_resumed(registry, RecordingTool())
    del agent
    gc.collect()
    assert [status for status, _, _ in ends] == ["completed"]


def test_an_async_end_hook_is_awaited_when_the_agent_goes_inside_a_running_loop() -> None:
    """Collected while an event loop runs in this thread, the run ends in a loop of its own; the hook is awaited."""
    registry, ends = HookRegistry(), list[str]()

    @registry.on_session_end
    async def end(ctx: OnSessionEndContext) -> None:
        await asyncio.sleep(0)
        ends.append(ctx.outcome.status)

    agent = _paused(registry)

    async def drop() -> None:
        nonlocal agent
        del agent
        gc.collect()

    asyncio.run(drop())
    assert ends == ["cancelled"]


def test_a_paused_run_ends_cancelled_at_interpreter_exit(tmp_path: Path) -> None:
    """Nothing dropped it: the interpreter exits with the agent and its provider alive; an async hook is awaited."""
    printed = printed_until_exit(
        tmp_path,
        """
        import asyncio
        from test_strands_interrupts import _paused
        from hookreg import HookRegistry

        registry = HookRegistry()

        @registry.on_session_end
        async def end(ctx):
            await asyncio.sleep(0)
            print("end", ctx.outcome.status, ctx.outcome.reason, flush=True)

        @registry.on_session_end
        def fails(ctx):
            raise RuntimeError("an end hook failing at exit")

        agent = _paused(registry)
        print("paused", flush=True)
        """,
    )
    assert printed == ["paused", "end cancelled the run was paused and never resumed"]
