"""A pydantic-ai run paused on calls deferred to the caller, and resumed with their answers, is one hookreg session."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from interpreter_exit import printed_until_exit
from pydantic_ai import (
    Agent,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    UserError,
    capture_run_messages,
    models,
)
from pydantic_ai.capabilities import HandleDeferredToolCalls
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    repair_messages,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.run import AgentRunResult

from hookreg import (
    HookRegistry,
    HookResult,
    OnInteractionContext,
    OnSessionEndContext,
    PreToolCallDecideContext,
    PreTurnContext,
    StopRun,
    UserPromptSubmitContext,
)
from hookreg._lifecycle import STOPPED_NOTICE
from hookreg.adapters.pydantic_ai import hookreg_capability

_Output = str | DeferredToolRequests
APPROVED = DeferredToolResults(approvals={"call-1": True})
NOT_RESUMED = "the run was paused and never resumed"


@pytest.fixture(autouse=True)
def _no_model_requests() -> Iterator[None]:
    """Forbid every real model request for the duration of a test."""
    with models.override_allow_model_requests(False):
        yield


def _call(messages: list[ModelMessage]) -> ToolCallPart | str:
    """What the model answers: the tool's result read back once it has one, else a call named by the prompt."""
    last = messages[-1]
    for part in last.parts if isinstance(last, ModelRequest) else ():
        if isinstance(part, ToolReturnPart):
            return f"tool: {part.model_response_str()}"
    prompt = next(
        str(part.content) for message in messages for part in message.parts if part.part_kind == "user-prompt"
    )
    tool = "fetch" if prompt.startswith("fetch") else "shell"
    return ToolCallPart(tool, {"command": prompt}, tool_call_id="call-1")


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    answer = _call(messages)
    return ModelResponse(parts=[TextPart(answer) if isinstance(answer, str) else answer])


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    answer = _call(messages)
    if isinstance(answer, str):
        yield answer
    else:
        yield {0: DeltaToolCall(name=answer.tool_name, json_args=answer.args_as_json_str(), tool_call_id="call-1")}


def approval_agent(
    registry: HookRegistry, ran: list[str] | None = None, answer: DeferredToolResults | None = None
) -> Agent[None, _Output]:
    """An agent whose ``shell`` needs a human's approval and whose ``fetch`` the caller runs itself.

    With `answer`, the calls are answered inside the run (pydantic-ai's ``HandleDeferredToolCalls``).
    """
    inline = [] if answer is None else [HandleDeferredToolCalls[None](handler=lambda ctx, requests: answer)]
    agent: Agent[None, _Output] = Agent(
        FunctionModel(respond, stream_function=stream),
        output_type=[str, DeferredToolRequests],
        capabilities=[hookreg_capability(registry), *inline],
    )

    @agent.tool_plain(requires_approval=True)
    async def shell(command: str) -> str:
        """Run a shell command (pretend)."""
        await asyncio.sleep(0)
        if command == "fail":
            msg = "the shell broke"
            raise RuntimeError(msg)
        if command == "hang":
            await asyncio.Event().wait()
        (ran if ran is not None else []).append(command)
        return f"ran {command}"

    @agent.tool_plain
    def fetch(command: str) -> str:
        """Fetch something: the caller does it (pydantic-ai's external call)."""
        raise CallDeferred

    return agent


def recorded(registry: HookRegistry) -> list[tuple[object, ...]]:
    """What the run points see: session start, prompt, turns and session end, each with the run's ids."""
    events: list[tuple[object, ...]] = []
    registry.on_session_start(lambda ctx: events.append(("start", ctx.goal, ctx.run.run_id, ctx.session_id)))

    @registry.user_prompt_submit
    def prompt(ctx: UserPromptSubmitContext) -> HookResult:
        events.append(("prompt", ctx.content))
        return HookResult.allow()

    @registry.pre_turn
    def turn(ctx: PreTurnContext) -> HookResult:
        events.append(("turn", ctx.turn))
        return HookResult.allow()

    @registry.on_session_end
    def end(ctx: OnSessionEndContext) -> None:
        o = ctx.outcome
        events.append(("end", o.status, o.turns, ctx.run.run_id, ctx.session_id, o.reason))

    return events


async def run(
    agent: Agent[None, _Output],
    prompt: str | None = None,
    *,
    mode: str = "blocking",
    history: list[ModelMessage] | None = None,
    results: DeferredToolResults | None = None,
) -> tuple[_Output, list[ModelMessage]]:
    """Run `agent` in `mode` (``blocking``, ``streamed``, ``iterated``); return its output and its whole history."""
    if mode == "iterated":
        async with agent.iter(prompt, message_history=history, deferred_tool_results=results) as steps:
            async for _ in steps:
                pass
        assert steps.result is not None
        return steps.result.output, steps.result.all_messages()
    if mode == "blocking":
        done: AgentRunResult[_Output] = await agent.run(prompt, message_history=history, deferred_tool_results=results)
        return done.output, done.all_messages()
    async with agent.run_stream(prompt, message_history=history, deferred_tool_results=results) as response:
        output = await response.get_output()
    return output, response.all_messages()


def ids(events: list[tuple[object, ...]]) -> tuple[object, object]:
    """The run and session id of the one session `events` started."""
    [start] = [event for event in events if event[0] == "start"]
    return start[2], start[3]


@pytest.mark.parametrize("mode", ["blocking", "streamed", "iterated"])
@pytest.mark.parametrize("prompt", ["ls", "fetch it"], ids=["approval", "external-call"])
def test_a_paused_run_resumed_is_one_session(prompt: str, mode: str) -> None:
    """Session start and the prompt gate fire once, turns go on from the pause, the session ends once (completed)."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)
    results = APPROVED if prompt == "ls" else DeferredToolResults(calls={"call-1": "fetched"})

    async def both() -> _Output:
        paused, history = await run(agent, prompt, mode=mode)
        assert isinstance(paused, DeferredToolRequests)
        assert events[-1] == ("turn", 1)  # no end: the run is paused
        output, _ = await run(agent, mode=mode, history=history, results=results)
        return output

    output = asyncio.run(both())
    assert output == ("tool: ran ls" if prompt == "ls" else "tool: fetched")
    run_id, session_id = ids(events)
    assert events == [
        ("start", prompt, run_id, session_id),
        ("prompt", prompt),
        ("turn", 1),
        ("turn", 2),
        ("end", "completed", 2, run_id, session_id, ""),
    ]


def test_a_prompt_given_with_the_answers_is_gated_in_the_same_session() -> None:
    """A new prompt sent with the answers reaches user_prompt_submit (the model reads it); no second session start."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)

    async def both() -> None:
        _, history = await run(agent, "ls")
        await run(agent, "and then?", history=history, results=APPROVED)

    asyncio.run(both())
    run_id, session_id = ids(events)
    assert events == [
        ("start", "ls", run_id, session_id),
        ("prompt", "ls"),
        ("turn", 1),
        ("prompt", "and then?"),
        ("turn", 2),
        ("end", "completed", 2, run_id, session_id, ""),
    ]


def test_a_prompt_denied_on_resume_stops_the_session_once() -> None:
    """A user_prompt_submit deny of the prompt sent with the answers ends the paused session, stopped, once,
    counting the turn the paused run had."""
    registry, ends = HookRegistry(), list[tuple[str, str, int]]()
    registry.user_prompt_submit(lambda ctx: HookResult.deny("no") if ctx.content == "bad" else HookResult.allow())
    registry.on_session_end(lambda ctx: ends.append((ctx.outcome.status, ctx.outcome.reason, ctx.outcome.turns)))
    agent = approval_agent(registry)

    async def both() -> None:
        _, history = await run(agent, "ls")
        with pytest.raises(StopRun, match="no"):
            await run(agent, "bad", history=history, results=APPROVED)

    asyncio.run(both())
    assert ends == [("stopped", "no", 1)]


def test_a_human_edit_is_judged_on_resume_in_the_same_session() -> None:
    """Arguments a human edits (ToolApproved(override_args=...)) are judged when the run resumes; one session."""
    registry, ran = HookRegistry(), list[str]()
    events = recorded(registry)

    @registry.pre_tool_call_decide
    def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("rm is not allowed") if "rm" in str(ctx.args["command"]) else HookResult.allow()

    agent = approval_agent(registry, ran)
    edited = DeferredToolResults(approvals={"call-1": ToolApproved(override_args={"command": "rm -rf /"})})

    async def both() -> _Output:
        _, history = await run(agent, "ls")
        output, _ = await run(agent, history=history, results=edited)
        return output

    assert "rm is not allowed" in str(asyncio.run(both()))
    assert ran == []
    assert [event[0] for event in events] == ["start", "prompt", "turn", "turn", "end"]


@pytest.mark.parametrize("where", ["resumed", "in-run"])
@pytest.mark.parametrize(
    "edit",
    [None, {"command": "ls"}, {"command": "ls -a"}, {"command": "pwd"}],
    ids=["as-asked", "same", "as-approved", "edited"],
)
def test_a_call_the_human_approved_unchanged_is_judged_once(edit: dict[str, str] | None, where: str) -> None:
    """The gate judges before pydantic-ai asks the human; the approved call is judged again only when the human
    changed it: a transform, a gate and an ask's on_interaction run once for a call approved as the model asked
    it or as the gate approved it (the transform's rewrite), twice for an edit, and the tool runs what the gate
    approved last. The same whether the caller answers in a run on the history or inside the run
    (``HandleDeferredToolCalls``), where pydantic-ai validates the approved call a second time."""
    registry, ran, judged, asked = HookRegistry(), list[str](), list[str](), list[str]()
    registry.transform_tool_input(lambda ctx: {"command": f"{ctx.args['command']} -a"})

    @registry.pre_tool_call_decide
    def ask_first(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(str(ctx.args["command"]))
        return HookResult.ask("run it?")

    @registry.on_interaction
    def human(ctx: OnInteractionContext) -> HookResult:
        asked.append(ctx.question)
        return HookResult.allow()

    answer = DeferredToolResults(approvals={"call-1": True if edit is None else ToolApproved(override_args=edit)})
    agent = approval_agent(registry, ran, answer if where == "in-run" else None)

    async def both() -> None:
        _, history = await run(agent, "ls")
        if where == "resumed":
            await run(agent, history=history, results=answer)

    asyncio.run(both())
    edited = edit == {"command": "pwd"}
    assert judged == (["ls -a", "pwd -a"] if edited else ["ls -a"])
    assert len(asked) == len(judged)
    assert ran == (["pwd -a"] if edited else ["ls -a"])


@pytest.mark.parametrize("edit", ["rm -rf /", "pwd"])
def test_a_human_edit_answered_inside_the_run_is_judged_and_runs_as_edited(edit: str) -> None:
    """An edit answered inside the run (``HandleDeferredToolCalls``) is what the gate judges and the tool runs:
    a denied edit never runs, an allowed one runs as the human wrote it, as it would without hookreg."""
    registry, ran, judged = HookRegistry(), list[str](), list[str]()

    @registry.pre_tool_call_decide
    def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(str(ctx.args["command"]))
        return HookResult.deny("rm is not allowed") if "rm" in str(ctx.args["command"]) else HookResult.allow()

    answer = DeferredToolResults(approvals={"call-1": ToolApproved(override_args={"command": edit})})
    output, _ = asyncio.run(run(approval_agent(registry, ran, answer), "ls"))
    assert judged == ["ls", edit]
    if edit == "pwd":
        assert (output, ran) == ("tool: ran pwd", ["pwd"])
    else:
        assert ("rm is not allowed" in str(output), ran) == (True, [])


def test_a_verdict_kept_for_an_approval_is_not_reused_on_a_later_turn() -> None:
    """A call the human denied leaves no verdict behind: the model asking the same call, same id, on the next
    turn is judged again (a gate's answer holds for the call it judged, not for a later one that looks alike)."""
    registry, judged = HookRegistry(), list[str]()

    @registry.pre_tool_call_decide
    def count(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(str(ctx.args["command"]))
        return HookResult.allow()

    asks = iter([True, True, False])

    def again(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if next(asks):
            return ModelResponse(parts=[ToolCallPart("shell", {"command": "ls"}, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart("done")])

    agent: Agent[None, _Output] = Agent(
        FunctionModel(again), output_type=[str, DeferredToolRequests], capabilities=[hookreg_capability(registry)]
    )

    @agent.tool_plain(requires_approval=True)
    def shell(command: str) -> str:
        """Run a shell command (pretend)."""
        return f"ran {command}"

    async def both() -> tuple[_Output, list[ModelMessage]]:
        _, history = await run(agent, "ls")
        return await run(agent, history=history, results=DeferredToolResults(approvals={"call-1": False}))

    output, _ = asyncio.run(both())
    assert isinstance(output, DeferredToolRequests)
    assert judged == ["ls", "ls"]


def test_a_stop_in_a_resumed_run_leaves_no_call_without_a_result() -> None:
    """A StopRun from the gate judging a resumed call ends the session stopped; the call gets its "not run" notice."""
    registry, ends = HookRegistry(), list[tuple[str, str]]()
    registry.on_session_end(lambda ctx: ends.append((ctx.outcome.status, ctx.outcome.reason)))
    judged: list[str] = []

    @registry.pre_tool_call_decide
    def halt_on_resume(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(ctx.call_id)
        if len(judged) == 2:  # the call as it comes back with the human's edit
            raise StopRun("halt")
        return HookResult.allow()

    ran: list[str] = []
    agent = approval_agent(registry, ran)
    edited = DeferredToolResults(approvals={"call-1": ToolApproved(override_args={"command": "pwd"})})

    async def both() -> list[ModelMessage]:
        _, history = await run(agent, "ls")
        with capture_run_messages() as messages, pytest.raises(StopRun, match="halt"):
            await run(agent, history=history, results=edited)
        return messages

    messages = asyncio.run(both())
    answered = {p.tool_call_id: p.content for m in messages for p in m.parts if isinstance(p, ToolReturnPart)}
    assert answered == {"call-1": STOPPED_NOTICE}
    assert ran == []
    assert ends == [("stopped", "halt")]


def test_a_history_resumed_twice_continues_the_session_once() -> None:
    """The first run on the paused history goes on with its session; a second on the same history is a new one."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)

    async def three() -> None:
        _, history = await run(agent, "ls")
        await run(agent, history=history, results=APPROVED)
        await run(agent, history=history, results=APPROVED)

    asyncio.run(three())
    starts = [event for event in events if event[0] == "start"]
    ends = [event for event in events if event[0] == "end"]
    assert [(start[0], start[1]) for start in starts] == [("start", "ls"), ("start", "")]
    assert [(end[1], end[2], end[3]) for end in ends] == [
        ("completed", 2, starts[0][2]),
        ("completed", 1, starts[1][2]),
    ]


def test_a_run_on_the_history_without_answers_pauses_again_in_the_same_session() -> None:
    """pydantic-ai runs the waiting calls again and pauses again; the answers given later still end one session."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)

    async def three() -> None:
        _, history = await run(agent, "ls")
        again, history = await run(agent, history=history)
        assert isinstance(again, DeferredToolRequests)
        await run(agent, history=history, results=APPROVED)

    asyncio.run(three())
    assert [event[:3] for event in events if event[0] in ("start", "end")] == [
        ("start", "ls", ids(events)[0]),
        ("end", "completed", 2),
    ]


def test_two_runs_on_one_history_pausing_at_the_same_point_leave_one_paused() -> None:
    """Run twice at once without answers, a paused history pauses twice where it did: the earlier pause gives way."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)

    async def four() -> None:
        _, history = await run(agent, "ls")
        await asyncio.gather(run(agent, history=history), run(agent, history=history))
        await run(agent, history=history, results=APPROVED)

    asyncio.run(four())
    starts = [event[2] for event in events if event[0] == "start"]
    ends = [(event[1], event[3], event[5]) for event in events if event[0] == "end"]
    assert len(starts) == 2  # the paused session, and the run that could not go on with it
    assert [(status, reason) for status, _, reason in ends] == [
        ("cancelled", "another run paused at the same point of the same history took its place"),
        ("completed", ""),
    ]
    assert {run_id for _, run_id, _ in ends} == set(starts)


def test_a_new_prompt_pydantic_ai_refuses_on_the_paused_history_ends_the_session_failed_once() -> None:
    """A new prompt without the answers: pydantic-ai refuses it (UserError); the paused session ends failed, once."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)

    async def both(agent: Agent[None, _Output]) -> None:
        _, history = await run(agent, "ls")
        with pytest.raises(UserError, match="unprocessed tool calls"):
            await run(agent, "something else", history=history)

    asyncio.run(both(agent))
    ends = [event for event in events if event[0] == "end"]
    assert [event[0] for event in events if event[0] == "start"] == ["start"]
    assert [(end[1], end[3]) for end in ends] == [("failed", ids(events)[0])]
    del agent
    gc.collect()
    assert len([event for event in events if event[0] == "end"]) == 1


def test_a_new_prompt_on_the_repaired_history_is_a_new_session() -> None:
    """A history closed out with repair_messages() then given a new prompt is a new session; nothing resumes the old."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)

    async def both(agent: Agent[None, _Output]) -> None:
        _, history = await run(agent, "ls")
        await run(agent, "something else", history=repair_messages(history))

    asyncio.run(both(agent))
    starts = [(event[1], event[2]) for event in events if event[0] == "start"]
    assert [goal for goal, _ in starts] == ["ls", "something else"]
    assert [(event[1], event[3]) for event in events if event[0] == "end"] == [("completed", starts[1][1])]
    del agent
    gc.collect()
    assert [(event[1], event[3], event[5]) for event in events if event[0] == "end"][1:] == [
        ("cancelled", starts[0][1], NOT_RESUMED)
    ]


def test_two_paused_runs_resumed_in_the_other_order_keep_their_sessions() -> None:
    """Two runs paused on one capability (the same call ids) are resumed last first: each goes on with its own."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)

    async def four() -> None:
        _, first = await run(agent, "one")
        _, second = await run(agent, "two")
        await run(agent, history=second, results=APPROVED)
        await run(agent, history=first, results=APPROVED)

    asyncio.run(four())
    starts = {event[1]: event[2] for event in events if event[0] == "start"}
    assert list(starts) == ["one", "two"]
    assert [(event[1], event[2], event[3]) for event in events if event[0] == "end"] == [
        ("completed", 2, starts["two"]),
        ("completed", 2, starts["one"]),
    ]


@pytest.mark.parametrize("command", ["fail", "hang"])
def test_a_resumed_run_that_fails_or_is_cancelled_ends_its_session_once(command: str) -> None:
    """A resumed run whose tool raises ends the paused session failed; one cancelled ends it cancelled; once."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)

    async def both(agent: Agent[None, _Output]) -> None:
        _, history = await run(agent, command)
        resumed = asyncio.ensure_future(run(agent, history=history, results=APPROVED))
        if command == "hang":
            for _ in range(20):  # until the tool waits
                await asyncio.sleep(0)
            resumed.cancel()
        with pytest.raises(asyncio.CancelledError if command == "hang" else RuntimeError):
            await resumed

    asyncio.run(both(agent))
    del agent
    gc.collect()
    status = "cancelled" if command == "hang" else "failed"
    assert [(event[1], event[2], event[3]) for event in events if event[0] == "end"] == [(status, 1, ids(events)[0])]


def _paused(registry: HookRegistry) -> Agent[None, _Output]:
    """An agent over `registry` whose run is paused on a call awaiting approval."""
    agent = approval_agent(registry)
    output, _ = asyncio.run(run(agent, "ls"))
    assert isinstance(output, DeferredToolRequests)
    return agent


def test_a_paused_run_whose_agent_is_dropped_ends_cancelled_once() -> None:
    """Nothing resumes it and its agent (with the capability) is collected: the session ends cancelled, once."""
    registry, ends = HookRegistry(), list[tuple[str, str, int]]()
    registry.on_session_end(lambda ctx: ends.append((ctx.outcome.status, ctx.outcome.reason, ctx.outcome.turns)))
    agent = _paused(registry)
    gc.collect()
    assert ends == []
    del agent
    gc.collect()
    assert ends == [("cancelled", NOT_RESUMED, 1)]


def test_a_resumed_run_is_not_ended_again_when_its_agent_goes() -> None:
    registry, ends = HookRegistry(), list[str]()
    registry.on_session_end(lambda ctx: ends.append(ctx.outcome.status))
    agent = approval_agent(registry)

    async def both(agent: Agent[None, _Output]) -> None:
        _, history = await run(agent, "ls")
        await run(agent, history=history, results=APPROVED)

    asyncio.run(both(agent))
    del agent
    gc.collect()
    assert ends == ["completed"]


def test_a_paused_run_ends_cancelled_at_interpreter_exit(tmp_path: Path) -> None:
    """Nothing dropped it: the interpreter exits with the agent alive; an async end hook is awaited."""
    printed = printed_until_exit(
        tmp_path,
        """
        import asyncio
        from test_pydantic_ai_deferred import _paused
        from hookreg import HookRegistry

        registry = HookRegistry()

        @registry.on_session_end
        async def end(ctx):
            await asyncio.sleep(0)
            print("end", ctx.outcome.status, ctx.outcome.reason, flush=True)

        agent = _paused(registry)
        print("paused", flush=True)
        """,
    )
    assert printed == ["paused", f"end cancelled {NOT_RESUMED}"]


def test_a_run_paused_with_no_hook_registered_keeps_nothing() -> None:
    """With no hook at the pause hookreg is not in the run: a resume after hooks were added is a session of its own."""
    registry = HookRegistry()
    agent = approval_agent(registry)

    async def both() -> tuple[_Output, list[tuple[object, ...]]]:
        _, history = await run(agent, "ls")
        events = recorded(registry)
        output, _ = await run(agent, history=history, results=APPROVED)
        return output, events

    output, events = asyncio.run(both())
    assert output == "tool: ran ls"
    assert [event[:2] for event in events] == [("start", ""), ("prompt", ""), ("turn", 1), ("end", "completed")]


def test_concurrent_paused_runs_resumed_concurrently_in_another_order_are_one_session_each() -> None:
    """Eight runs pause at once on one capability and resume at once, in reverse order: eight sessions, each whole."""
    registry = HookRegistry()
    events = recorded(registry)
    agent = approval_agent(registry)
    prompts = [f"job {n}" for n in range(8)]

    async def all_of_them() -> list[_Output]:
        paused = await asyncio.gather(
            *(run(agent, prompt, mode=("blocking", "streamed")[n % 2]) for n, prompt in enumerate(prompts))
        )
        resumed = [run(agent, history=history, results=APPROVED) for _, history in reversed(paused)]
        return [output for output, _ in await asyncio.gather(*resumed)]

    assert asyncio.run(all_of_them()) == [f"tool: ran {prompt}" for prompt in reversed(prompts)]
    starts = {event[2]: event[1] for event in events if event[0] == "start"}
    assert sorted(str(goal) for goal in starts.values()) == prompts
    ends = [event for event in events if event[0] == "end"]
    assert sorted(str(end[3]) for end in ends) == sorted(str(run_id) for run_id in starts)
    assert {(end[1], end[2]) for end in ends} == {("completed", 2)}
