"""The loop's rules, checked on each of the four entry points (the `drive` fixture)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import structlog

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookValueError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelTurnFinishedContext,
    NotificationContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostTurnContext,
    PreToolCallDecideContext,
    PreTurnContext,
    RequestPatch,
    RunOutcome,
    StopContext,
    StopRun,
    SubagentStopContext,
    ToolCallRequest,
    ToolErrorKind,
    TurnAction,
    UserPromptSubmitContext,
)
from hookreg.harness import Harness, RunResult, ScriptedModel, ScriptedTurn, TextDelta, Tool, TurnRetried

Drive = Callable[[Harness, str], RunResult]
Seen = list[tuple[HookPoint, object]]
Record = Callable[[HookRegistry], Seen]


def points(seen: Seen) -> list[str]:
    """The points fired, in order."""
    return [point.value for point, _ in seen]


def last(seen: Seen, point: HookPoint) -> object:
    """The last context `point` fired with."""
    return [ctx for p, ctx in seen if p is point][-1]


def echo(text: str) -> str:
    """A tool that answers with its argument."""
    return text


def test_a_denied_prompt_ends_the_run_before_any_model_call(drive: Drive, record: Record) -> None:
    """A user_prompt_submit deny stops the run with its reason; the model is never called."""
    registry = HookRegistry()
    seen = record(registry)
    registry.user_prompt_submit(lambda ctx: HookResult.deny("no secrets in prompts"))
    model = ScriptedModel([ScriptedTurn(text="never")])
    result = drive(Harness(model, registry=registry), "my password is hunter2")
    assert result.outcome == RunOutcome(status="stopped", reason="no secrets in prompts", turns=0)
    assert model.requests == ()
    assert points(seen) == ["setup", "on_session_start", "user_prompt_submit", "on_session_end"]


def test_a_denied_turn_stops_the_run(drive: Drive) -> None:
    """A pre_turn deny stops the run before that turn's model call."""
    registry = HookRegistry()

    @registry.pre_turn
    def budget(ctx: PreTurnContext) -> HookResult:
        return HookResult.deny("one turn only") if ctx.turn > 1 else HookResult.allow()

    model = ScriptedModel([ScriptedTurn.calling("echo", {"text": "hi"}), ScriptedTurn(text="never")])
    result = drive(Harness(model, [echo], registry), "go")
    assert result.outcome == RunOutcome(status="stopped", reason="one turn only", turns=1)
    assert len(model.requests) == 1


def test_stop_run_from_a_hook_stops_the_run_and_session_end_still_fires(drive: Drive, record: Record) -> None:
    """StopRun raised by a tool gate ends the run `stopped`, before the tool runs; on_session_end fires."""
    registry = HookRegistry()
    seen = record(registry)
    ran: list[str] = []

    @registry.pre_tool_call_decide
    def kill_switch(ctx: PreToolCallDecideContext) -> HookResult:
        raise StopRun("kill switch")

    def tool(text: str) -> str:
        ran.append(text)
        return text

    model = ScriptedModel([ScriptedTurn.calling("tool", {"text": "x"})])
    result = drive(Harness(model, [tool], registry), "go")
    assert result.outcome == RunOutcome(status="stopped", reason="kill switch", turns=1)
    assert ran == []
    end = last(seen, HookPoint.ON_SESSION_END)
    assert isinstance(end, OnSessionEndContext)
    assert end.outcome == result.outcome


def test_retry_with_feedback_keeps_the_answer_and_appends_the_feedback(drive: Drive) -> None:
    """retry_with_feedback asks again with the rejected answer and the feedback in the history."""
    registry = HookRegistry()

    @registry.model_turn_finished
    def want_json(ctx: ModelTurnFinishedContext) -> TurnAction:
        return TurnAction.continue_run() if ctx.text.startswith("{") else TurnAction.retry_with_feedback("JSON please")

    model = ScriptedModel([ScriptedTurn(text="plain words"), ScriptedTurn(text='{"ok": true}')])
    result = drive(Harness(model, registry=registry), "answer")
    assert result.output == '{"ok": true}'
    assert result.outcome.turns == 2
    assert [(m.role, m.content) for m in model.requests[1].messages] == [
        ("user", "answer"),
        ("assistant", "plain words"),
        ("user", "JSON please"),
    ]


def test_repeats_count_against_max_turns(drive: Drive, record: Record) -> None:
    """A hook that always repeats ends the run `failed` at max_turns, with a notification."""
    registry = HookRegistry()
    seen = record(registry)
    registry.model_turn_finished(lambda ctx: TurnAction.repeat())
    model = ScriptedModel([ScriptedTurn(text=f"try {n}") for n in range(5)])
    result = drive(Harness(model, registry=registry, max_turns=3), "go")
    assert result.outcome == RunOutcome(status="failed", reason="max_turns=3 reached", turns=3)
    assert len(model.requests) == 3
    note = last(seen, HookPoint.NOTIFICATION)
    assert isinstance(note, NotificationContext)
    assert note.message == "run ended: max_turns=3 reached"


def test_retrying_a_turn_with_tool_calls_is_refused_before_any_tool_runs(drive: Drive, record: Record) -> None:
    """Repeating an answer that carries tool calls raises, no tool runs, and the run ends `failed`."""
    registry = HookRegistry()
    seen = record(registry)
    registry.register(HookPoint.MODEL_TURN_FINISHED, lambda ctx: TurnAction.repeat(), name="again")
    ran: list[str] = []
    model = ScriptedModel([ScriptedTurn.calling("tool", {"text": "x"})])
    with pytest.raises(HookValueError, match=r"Cannot retry turn 1 as hook 'again' asked: .*\['tool'\]") as info:
        drive(Harness(model, [Tool(ran.append, name="tool")], registry), "go")
    assert info.value.point == HookPoint.MODEL_TURN_FINISHED
    assert ran == []
    end = last(seen, HookPoint.ON_SESSION_END)
    assert isinstance(end, OnSessionEndContext)
    assert end.outcome.status == "failed"
    assert "Cannot retry turn 1" in end.outcome.reason


@pytest.mark.parametrize(
    ("call", "kind", "message"),
    [
        (ToolCallRequest("c1", "nope", {}), ToolErrorKind.NOT_FOUND, "Error: LookupError: unknown tool 'nope'"),
        (ToolCallRequest("c1", "echo", {"txt": "x"}), ToolErrorKind.INVALID_ARGS, "Error: TypeError: bad arguments"),
        (ToolCallRequest("c1", "echo", {"text": 3}), ToolErrorKind.INVALID_ARGS, "argument 'text' must be str"),
    ],
)
def test_invalid_calls_fail_through_the_tool_error_points(
    drive: Drive, record: Record, call: ToolCallRequest, kind: ToolErrorKind, message: str
) -> None:
    """Unknown tools and bad arguments go to invalid_tool_call, then fail with the right ToolErrorKind."""
    registry = HookRegistry()
    seen = record(registry)
    model = ScriptedModel([ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="sorry")])
    result = drive(Harness(model, [echo], registry), "go")
    fired = [p for p in points(seen) if not p.endswith("_delta")]
    assert fired[8:11] == ["invalid_tool_call", "post_tool_call_failure", "on_tool_error"]  # after post_turn
    error = last(seen, HookPoint.ON_TOOL_ERROR)
    assert isinstance(error, OnToolErrorContext)
    assert error.kind is kind
    assert message in error.message
    assert result.history[-2].role == "tool"
    assert message in result.history[-2].content


@pytest.mark.parametrize(
    ("action", "seen_by_model"),
    [
        (InvalidToolCallAction.retry("call echo(text=...)"), "call echo(text=...)"),
        (InvalidToolCallAction.skip("skipped"), "skipped"),
        (InvalidToolCallAction.repair("echo"), "hello"),
    ],
)
def test_invalid_tool_call_actions(drive: Drive, action: InvalidToolCallAction, seen_by_model: str) -> None:
    """retry and skip tell the model their text; repair calls the named tool with the same arguments."""
    registry = HookRegistry()

    @registry.invalid_tool_call
    def handle(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        assert ctx.available_tools == ("echo",)
        return action

    model = ScriptedModel([ScriptedTurn.calling("ehco", {"text": "hello"}), ScriptedTurn(text="ok")])
    result = drive(Harness(model, [echo], registry), "go")
    assert result.history[-2].content == seen_by_model


def test_an_ask_without_an_interaction_hook_is_denied(drive: Drive, record: Record) -> None:
    """An ask with nobody to answer it denies the call and fires permission_denied."""
    registry = HookRegistry()
    seen = record(registry)
    registry.clear(HookPoint.ON_INTERACTION)  # the recorder would answer
    registry.pre_tool_call_decide(lambda ctx: HookResult.ask("really?"))
    model = ScriptedModel([ScriptedTurn.calling("echo", {"text": "x"}), ScriptedTurn(text="ok")])
    result = drive(Harness(model, [echo], registry), "go")
    assert "notification" in points(seen)
    denied = last(seen, HookPoint.PERMISSION_DENIED)
    assert isinstance(denied, PermissionDeniedContext)
    assert denied.reason == "no interaction hook"
    assert result.history[-2].content == "Permission denied: no interaction hook"


def test_a_tool_raising_timeout_error_is_a_timeout(drive: Drive) -> None:
    """A tool that raises TimeoutError fails with kind TIMEOUT; other exceptions are EXCEPTION."""
    registry = HookRegistry()
    kinds: list[ToolErrorKind] = []

    @registry.on_tool_error
    def rewrite(ctx: OnToolErrorContext) -> str:
        kinds.append(ctx.kind)
        return f"{ctx.tool_name} failed ({ctx.kind})"

    def slow() -> str:
        raise TimeoutError

    def broken() -> str:
        raise RuntimeError("boom")

    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ToolCallRequest("a", "slow", {}), ToolCallRequest("b", "broken", {})]),
            ScriptedTurn(text="done"),
        ]
    )
    result = drive(Harness(model, [slow, broken], registry), "go")
    assert kinds == [ToolErrorKind.TIMEOUT, ToolErrorKind.EXCEPTION]
    assert [m.content for m in result.history if m.role == "tool"] == [
        "slow failed (timeout)",
        "broken failed (exception)",
    ]


def test_an_async_tool_over_its_timeout_is_a_timeout() -> None:
    """An async tool that outlives its timeout fails with kind TIMEOUT (async entry points)."""
    registry = HookRegistry()
    kinds: list[ToolErrorKind] = []
    registry.on_tool_error(lambda ctx: kinds.append(ctx.kind))

    async def wait() -> str:
        await asyncio.Event().wait()
        return "never"

    model = ScriptedModel([ScriptedTurn.calling("wait"), ScriptedTurn(text="done")])
    result = asyncio.run(Harness(model, [Tool(wait, timeout=0.01)], registry).arun("go"))
    assert kinds == [ToolErrorKind.TIMEOUT]
    assert result.outcome.status == "completed"


def test_an_input_transform_that_breaks_the_arguments_is_invalid_args(drive: Drive) -> None:
    """Arguments rewritten into a shape the tool refuses fail with INVALID_ARGS, and the tool never runs."""
    registry = HookRegistry()
    kinds: list[ToolErrorKind] = []
    registry.transform_tool_input(lambda ctx: {**ctx.args, "extra": 1})
    registry.on_tool_error(lambda ctx: kinds.append(ctx.kind))
    model = ScriptedModel([ScriptedTurn.calling("echo", {"text": "x"}), ScriptedTurn(text="done")])
    drive(Harness(model, [echo], registry), "go")
    assert kinds == [ToolErrorKind.INVALID_ARGS]


def test_a_stop_deny_keeps_the_run_going_until_max_turns(drive: Drive) -> None:
    """Each stop deny appends its reason as feedback and the run goes on, bounded by max_turns."""
    registry = HookRegistry()
    counts: list[int] = []

    @registry.stop
    def never_done(ctx: StopContext) -> HookResult:
        counts.append(ctx.continuation_count)
        return HookResult.deny("keep going")

    model = ScriptedModel([ScriptedTurn(text=f"answer {n}") for n in range(4)])
    result = drive(Harness(model, registry=registry, max_turns=3), "go")
    assert counts == [0, 1, 2]
    assert result.outcome == RunOutcome(status="failed", reason="max_turns=3 reached", turns=3)
    assert [m.content for m in model.requests[1].messages] == ["go", "answer 0", "keep going"]


def test_a_failing_hook_under_raise_fails_the_run_and_session_end_fires(drive: Drive, record: Record) -> None:
    """An exception escaping a hook propagates, after on_session_end reports the run `failed`."""
    registry = HookRegistry()
    seen = record(registry)

    def broken(ctx: PostTurnContext) -> None:
        raise RuntimeError("observer broke")

    registry.register(HookPoint.POST_TURN, broken, on_error="raise")
    with pytest.raises(RuntimeError, match="observer broke"):
        drive(Harness(ScriptedModel([ScriptedTurn(text="hi")]), registry=registry), "go")
    end = last(seen, HookPoint.ON_SESSION_END)
    assert isinstance(end, OnSessionEndContext)
    assert end.outcome == RunOutcome(status="failed", reason="RuntimeError: observer broke", turns=1)


def test_a_failing_subagent_is_a_tool_error(drive: Drive, record: Record) -> None:
    """A subagent that fails reports `failed` to subagent_stop and an EXCEPTION tool error to the parent."""
    registry = HookRegistry()
    seen = record(registry)
    helper = Harness(ScriptedModel([]), registry=registry, name="helper")
    model = ScriptedModel([ScriptedTurn.calling("helper", {"goal": "help"}), ScriptedTurn(text="done")])
    result = drive(Harness(model, [helper.as_tool()], registry), "go")
    stop = last(seen, HookPoint.SUBAGENT_STOP)
    assert isinstance(stop, SubagentStopContext)
    assert stop.outcome.status == "failed"
    assert "script of 0 turns is exhausted" in stop.outcome.reason
    error = last(seen, HookPoint.ON_TOOL_ERROR)
    assert isinstance(error, OnToolErrorContext)
    assert error.kind is ToolErrorKind.EXCEPTION
    assert result.outcome.status == "completed"


def test_setup_fires_once_per_harness(drive: Drive, record: Record) -> None:
    """A second run of the same harness skips setup."""
    registry = HookRegistry()
    seen = record(registry)
    harness = Harness(ScriptedModel([ScriptedTurn(text="one"), ScriptedTurn(text="two")]), registry=registry)
    drive(harness, "first")
    drive(harness, "second")
    assert points(seen).count("setup") == 1
    assert points(seen).count("on_session_start") == 2


def test_delta_points_fire_only_when_streaming(drive: Drive, record: Record, entry: str) -> None:
    """Blocking runs fire no delta point; streaming runs fire them."""
    registry = HookRegistry()
    seen = record(registry)
    drive(Harness(ScriptedModel([ScriptedTurn(text="a b", reasoning="r")]), registry=registry), "go")
    deltas = [p for p in points(seen) if p.endswith("_delta")]
    assert deltas == ([] if entry in ("run", "arun") else ["reasoning_delta", "text_delta", "text_delta"])


def test_hookreg_logs_decisions_during_a_run(drive: Drive) -> None:
    """A denied tool call is logged as hook_denied with the gate's reason."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("not today"), name="gate")
    model = ScriptedModel([ScriptedTurn.calling("echo", {"text": "x"}), ScriptedTurn(text="ok")])
    with structlog.testing.capture_logs() as logs:
        drive(Harness(model, [echo], registry), "go")
    assert {"event": "hook_denied", "point": "pre_tool_call_decide", "hook": "gate", "reason": "not today"} in [
        {k: v for k, v in entry.items() if k != "log_level"} for entry in logs
    ]


def test_the_stream_marks_retried_turns() -> None:
    """A repeated turn's deltas are followed by TurnRetried, so a consumer can discard them."""
    registry = HookRegistry()

    @registry.model_turn_finished
    def once(ctx: ModelTurnFinishedContext) -> TurnAction:
        return TurnAction.repeat() if ctx.text == "draft" else TurnAction.continue_run()

    harness = Harness(ScriptedModel([ScriptedTurn(text="draft"), ScriptedTurn(text="final")]), registry=registry)
    shown: list[str] = []
    pending: list[str] = []
    for item in harness.stream("go"):
        if isinstance(item, TurnRetried):
            assert item == TurnRetried(1, "repeat")
            pending.clear()
        elif isinstance(item, TextDelta):
            pending.append(item.text)
    shown += pending
    assert shown == ["final"]


def test_closing_a_stream_early_cancels_the_run(record: Record) -> None:
    """Breaking out of a stream ends the run `cancelled`, and on_session_end fires."""
    registry = HookRegistry()
    seen = record(registry)
    stream = Harness(ScriptedModel([ScriptedTurn(text="a b c")]), registry=registry).stream("go")
    next(stream)
    stream.close()
    end = last(seen, HookPoint.ON_SESSION_END)
    assert isinstance(end, OnSessionEndContext)
    assert end.outcome.status == "cancelled"


def test_sync_entry_points_refuse_async_tools() -> None:
    """run() and stream() refuse a harness holding an async tool and name the async method."""

    async def fetch(url: str) -> str:
        return url

    harness = Harness(ScriptedModel([]), [fetch])
    with pytest.raises(TypeError, match=r"tool 'fetch' is async\. Call `await harness\.arun"):
        harness.run("go")
    with pytest.raises(TypeError, match=r"Call `await harness\.astream"):
        harness.stream("go")


def test_async_entry_points_await_async_tools() -> None:
    """arun awaits async tools and returns what they return to the model."""

    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"<html>{url}</html>"

    model = ScriptedModel([ScriptedTurn.calling("fetch", {"url": "x.org"}), ScriptedTurn(text="ok")])
    result = asyncio.run(Harness(model, [fetch]).arun("go"))
    assert result.history[-2].content == "<html>x.org</html>"


def test_patches_shape_the_request(drive: Drive) -> None:
    """pre_model_call patches and the model_select pick reach the model's request."""
    registry = HookRegistry()
    registry.pre_model_call(lambda ctx: RequestPatch(extra_context=("be brief",), active_tools=frozenset({"echo"})))
    registry.model_select(lambda ctx: "big-model")
    model = ScriptedModel([ScriptedTurn(text="ok")])
    drive(Harness(model, [echo, Tool(len, name="size")], registry, max_tokens=50), "go")
    request = model.requests[0]
    assert (request.model, request.tools, request.system, request.max_tokens) == (
        "big-model",
        ("echo",),
        ("be brief",),
        50,
    )


def test_harness_options_are_checked() -> None:
    """Bad limits and duplicate tool names are refused when the harness is built."""
    with pytest.raises(ValueError, match=r"max_turns=0: it must be an int of at least 1"):
        Harness(ScriptedModel([]), max_turns=0)
    with pytest.raises(ValueError, match=r"compact_after=2"):
        Harness(ScriptedModel([]), compact_after=2)
    with pytest.raises(ValueError, match=r"a tool named 'echo' is already there"):
        Harness(ScriptedModel([]), [echo, Tool(echo)])


def test_user_prompt_ask_goes_to_on_interaction(drive: Drive) -> None:
    """An ask from user_prompt_submit is settled by on_interaction."""
    registry = HookRegistry()
    questions: list[str] = []

    @registry.user_prompt_submit
    def check(ctx: UserPromptSubmitContext) -> HookResult:
        return HookResult.ask("send this prompt?")

    @registry.on_interaction
    def human(ctx: OnInteractionContext) -> HookResult:
        questions.append(ctx.question)
        return HookResult.allow()

    result = drive(Harness(ScriptedModel([ScriptedTurn(text="hi")]), registry=registry), "hello")
    assert questions == ["send this prompt?"]
    assert result.outcome.status == "completed"
