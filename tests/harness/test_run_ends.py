"""How a harness run ends: stops never leave a dangling tool call, and on_session_end never hides the real end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    Message,
    OnSessionEndContext,
    PostToolCallContext,
    StopRun,
    ToolCallRequest,
    TransformToolResultContext,
)
from hookreg._lifecycle import STOPPED_NOTICE
from hookreg.harness import (
    STOPPED_AFTER_RUN,
    Harness,
    ModelChunk,
    ModelRequest,
    RunResult,
    ScriptedModel,
    ScriptedTurn,
    TextDelta,
    Tool,
)

Drive = Callable[[Harness, str], RunResult]
BATCH = ScriptedTurn(
    tool_calls=[
        ToolCallRequest("call-a", "echo", {"text": "a"}),
        ToolCallRequest("call-b", "echo", {"text": "b"}),
        ToolCallRequest("call-c", "echo", {"text": "c"}),
    ]
)


def echo(text: str) -> str:
    """A tool that answers with its argument."""
    return text


def tool_messages(result: RunResult) -> dict[str | None, str]:
    """Call id → the tool message answering it."""
    return {m.tool_call_id: m.content for m in result.history if m.role == "tool"}


def assert_no_dangling_call(history: tuple[Message, ...]) -> None:
    """Every assistant tool call in `history` has exactly one tool message."""
    asked = [m.tool_call_id for m in history if m.role == "assistant" and m.tool_call_id]
    answered = [m.tool_call_id or "" for m in history if m.role == "tool"]
    assert sorted(asked) == sorted(answered)


def test_a_stop_after_a_result_keeps_the_result_and_answers_the_rest(drive: Drive) -> None:
    """StopRun from post_tool_call keeps the ran call's result; the calls never run get the stopped notice."""
    registry = HookRegistry()

    @registry.post_tool_call
    def halt(ctx: PostToolCallContext) -> None:
        if ctx.call_id == "call-b":
            raise StopRun("enough")

    registry.transform_tool_result(lambda ctx: ctx.presentation.upper())
    result = drive(Harness(ScriptedModel([BATCH]), [echo], registry), "go")
    assert result.outcome.status == "stopped"
    assert tool_messages(result) == {"call-a": "A", "call-b": "B", "call-c": STOPPED_NOTICE}
    assert_no_dangling_call(result.history)


def test_a_stop_from_a_gate_answers_the_stopped_call_and_the_rest(drive: Drive) -> None:
    """StopRun from pre_tool_call_decide: the gated call and the later ones read the stopped notice, none runs."""
    registry = HookRegistry()
    ran: list[str] = []

    def gate(ctx: object) -> None:
        raise StopRun("kill switch")

    def recorded(text: str) -> str:
        ran.append(text)
        return text

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, gate, tools="echo")
    result = drive(Harness(ScriptedModel([BATCH]), [Tool(recorded, name="echo")], registry), "go")
    assert ran == []
    assert set(tool_messages(result).values()) == {STOPPED_NOTICE}
    assert_no_dangling_call(result.history)


def test_a_stop_inside_the_result_transform_never_shows_the_untransformed_result(drive: Drive) -> None:
    """A run stopped by transform_tool_result says the tool ran, without the raw result its hooks never passed."""
    registry = HookRegistry()

    @registry.transform_tool_result
    def redact(ctx: TransformToolResultContext) -> str:
        raise StopRun("secret in output")

    model = ScriptedModel([ScriptedTurn.calling("echo", {"text": "hunter2"})])
    result = drive(Harness(model, [echo], registry), "go")
    assert tool_messages(result) == {"call-1": STOPPED_AFTER_RUN}
    assert "hunter2" not in STOPPED_AFTER_RUN
    assert_no_dangling_call(result.history)


def test_a_tool_raising_stop_run_is_answered(drive: Drive) -> None:
    """A tool that raises StopRun stops the run; its call and the later ones still get a tool message."""

    def quit_now(text: str) -> str:
        raise StopRun("the tool quit")

    model = ScriptedModel([BATCH])
    result = drive(Harness(model, [Tool(quit_now, name="echo")]), "go")
    assert result.outcome.reason == "the tool quit"
    assert tool_messages(result) == {"call-a": STOPPED_AFTER_RUN, "call-b": STOPPED_NOTICE, "call-c": STOPPED_NOTICE}


def test_invalid_tool_call_stop_ends_the_run_stopped(drive: Drive) -> None:
    """InvalidToolCallAction.stop ends the run `stopped` with its reason; nothing runs, no call dangles."""
    registry = HookRegistry()
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.stop("no guessing tool names"))
    model = ScriptedModel([ScriptedTurn.calling("ehco", {"text": "x"}), ScriptedTurn(text="never")])
    result = drive(Harness(model, [echo], registry), "go")
    assert (result.outcome.status, result.outcome.reason) == ("stopped", "no guessing tool names")
    assert len(model.requests) == 1
    assert tool_messages(result) == {"call-1": STOPPED_NOTICE}


def failing_end(registry: HookRegistry, ends: list[OnSessionEndContext]) -> None:
    """Register an on_session_end observer that records, then raises, under on_error="raise"."""

    def broken(ctx: OnSessionEndContext) -> None:
        ends.append(ctx)
        raise RuntimeError("audit sink down")

    registry.register(HookPoint.ON_SESSION_END, broken, on_error="raise")


def test_a_raising_session_end_observer_never_replaces_the_error_ending_the_run(drive: Drive) -> None:
    """A model error reaches the caller even when an on_session_end observer under on_error="raise" fails."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    failing_end(registry, ends)
    with pytest.raises(ValueError, match="script of 0 turns is exhausted"):
        drive(Harness(ScriptedModel([]), registry=registry), "go")
    assert [end.outcome.status for end in ends] == ["failed"]


@pytest.mark.parametrize("entry", ["run", "stream"])
def test_a_raising_session_end_observer_never_replaces_keyboard_interrupt(entry: str) -> None:
    """Ctrl-C inside a tool reaches the caller as KeyboardInterrupt, though on_session_end's observer fails."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    failing_end(registry, ends)

    def interrupted(text: str) -> str:
        raise KeyboardInterrupt

    model = ScriptedModel([ScriptedTurn.calling("echo", {"text": "x"})])
    harness = Harness(model, [Tool(interrupted, name="echo")], registry)
    run: Callable[[str], object] = harness.run if entry == "run" else lambda goal: list(harness.stream(goal))
    with pytest.raises(KeyboardInterrupt):
        run("go")
    assert [end.outcome.status for end in ends] == ["cancelled"]


@pytest.mark.parametrize("streamed", [False, True])
def test_a_raising_session_end_observer_never_replaces_cancellation(streamed: bool) -> None:
    """A cancelled run raises CancelledError to its awaiter, though on_session_end's observer fails."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    failing_end(registry, ends)
    started = asyncio.Event()

    async def wait(text: str) -> str:
        started.set()
        await asyncio.Event().wait()
        return text

    harness = Harness(ScriptedModel([ScriptedTurn.calling("wait", {"text": "x"})]), [wait], registry)

    async def consume() -> None:
        if streamed:
            async for _ in harness.astream("go"):
                pass
        else:
            await harness.arun("go")

    async def main() -> None:
        task = asyncio.ensure_future(consume())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert [end.outcome.status for end in ends] == ["cancelled"]


def test_a_stop_after_a_subagent_ran_answers_its_call(drive: Drive) -> None:
    """StopRun from subagent_stop: the subagent's call reads that it ran, and the run ends stopped."""
    registry = HookRegistry()

    def halt(ctx: object) -> None:
        raise StopRun("subagent budget spent")

    registry.register(HookPoint.SUBAGENT_STOP, halt)
    helper = Harness(ScriptedModel([ScriptedTurn(text="found it")]), name="helper")
    model = ScriptedModel([ScriptedTurn.calling("helper", {"goal": "look"})])
    result = drive(Harness(model, [helper.as_tool()], registry), "go")
    assert result.outcome.reason == "subagent budget spent"
    assert tool_messages(result) == {"call-1": STOPPED_AFTER_RUN}


def test_a_subagent_that_did_not_complete_says_how_it_ended(drive: Drive) -> None:
    """The parent's model reads a stopped subagent's status and reason, not an empty answer."""
    inner = HookRegistry()
    inner.user_prompt_submit(lambda ctx: HookResult.deny("no nested research today"))
    helper = Harness(ScriptedModel([]), registry=inner, name="helper")
    model = ScriptedModel([ScriptedTurn.calling("helper", {"goal": "look"}), ScriptedTurn(text="ok")])
    result = drive(Harness(model, [helper.as_tool()]), "go")
    assert tool_messages(result) == {"call-1": "subagent stopped: no nested research today"}


class _SilentModel:
    """A model whose stream ends without a ModelResponse."""

    name = "silent"

    def stream(self, request: ModelRequest, /) -> Iterator[ModelChunk]:
        yield TextDelta("hm")

    async def astream(self, request: ModelRequest, /) -> AsyncIterator[ModelChunk]:
        yield TextDelta("hm")


def test_a_stream_without_a_response_fails_the_run(drive: Drive) -> None:
    """A model stream that ends without its ModelResponse is an error naming the model; the run ends failed."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)
    with pytest.raises(ValueError, match=r"Cannot finish turn 1: the stream of .* ended without a ModelResponse"):
        drive(Harness(_SilentModel(), registry=registry), "go")
    assert [end.outcome.status for end in ends] == ["failed"]
