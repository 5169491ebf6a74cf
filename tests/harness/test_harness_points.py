"""Each hook point fires from the harness with the right context fields (one streamed scenario run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

from hookreg import (
    HookPoint,
    InvalidToolCallContext,
    ModelSelectContext,
    ModelTurnFinishedContext,
    NotificationContext,
    OnCompactionContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PostTurnContext,
    PreCompactContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    PreTurnContext,
    ReasoningDeltaContext,
    RequestPatch,
    RunOutcome,
    SetupContext,
    StopContext,
    SubagentStartContext,
    SubagentStopContext,
    TextDeltaContext,
    ToolCallDeltaContext,
    ToolCallRequest,
    ToolErrorKind,
    TransformToolResultContext,
    UserPromptSubmitContext,
)
from hookreg.harness import Harness, RunResult, ScriptedModel, StreamItem

Seen = list[tuple[HookPoint, object]]
_C = TypeVar("_C")
GOAL = "tidy the project"
LONG_ANSWER = "The project is tidy: logs removed, docs found, deploy done, nothing else to do."


@pytest.fixture(scope="module")
def fired(
    make_scenario: Callable[[], tuple[Harness, ScriptedModel, Seen]],
    run_through: Callable[[Harness, str, str], tuple[RunResult, list[StreamItem]]],
) -> Seen:
    """Every dispatch of one streamed scenario run, in order."""
    harness, _, seen = make_scenario()
    run_through(harness, GOAL, "stream")
    return seen


def contexts(fired: Seen, point: HookPoint, kind: type[_C]) -> list[_C]:
    """The contexts `point` fired with, checked to be of class `kind`."""
    found = [ctx for p, ctx in fired if p is point]
    assert found, f"{point} never fired"
    assert all(isinstance(ctx, kind) for ctx in found)
    return found  # type: ignore[return-value]  # checked just above


def test_setup(fired: Seen) -> None:
    """setup fires once per harness, first, at depth 0 and turn 0."""
    ctx = contexts(fired, HookPoint.SETUP, SetupContext)[0]
    assert fired[0] == (HookPoint.SETUP, ctx)
    assert (ctx.run.depth, ctx.run.turn, ctx.run.agent_name) == (0, 0, "tidy")


def test_on_session_start(fired: Seen) -> None:
    """on_session_start carries the goal and the run's session id."""
    ctx = contexts(fired, HookPoint.ON_SESSION_START, OnSessionStartContext)[0]
    assert ctx.goal == GOAL
    assert ctx.session_id == ctx.run.session_id
    assert ctx.run.is_streaming


def test_user_prompt_submit(fired: Seen) -> None:
    """user_prompt_submit carries the user's prompt."""
    ctx = contexts(fired, HookPoint.USER_PROMPT_SUBMIT, UserPromptSubmitContext)[0]
    assert ctx.content == GOAL


def test_pre_turn(fired: Seen) -> None:
    """pre_turn numbers the turns from 1, and run.turn follows while run_id and scratchpad stay."""
    top = [c for c in contexts(fired, HookPoint.PRE_TURN, PreTurnContext) if c.run.depth == 0]
    assert [c.turn for c in top] == [1, 2, 3]
    assert [c.run.turn for c in top] == [1, 2, 3]
    assert {c.prompt for c in top} == {GOAL}
    assert len({c.run.run_id for c in top}) == 1
    assert len({id(c.run.scratchpad) for c in top}) == 1


def test_pre_model_call(fired: Seen) -> None:
    """pre_model_call sees the history and a base patch offering every tool, on every attempt."""
    top = [c for c in contexts(fired, HookPoint.PRE_MODEL_CALL, PreModelCallContext) if c.run.depth == 0]
    assert [c.turn for c in top] == [1, 2, 2, 3]
    assert top[0].history[0].content == GOAL
    assert top[0].patch == RequestPatch(active_tools=frozenset({"shell", "read", "deploy", "research"}))


def test_model_select(fired: Seen) -> None:
    """model_select offers the model's name as default and as the pick so far, with the merged patch."""
    ctx = [c for c in contexts(fired, HookPoint.MODEL_SELECT, ModelSelectContext) if c.run.depth == 0]
    assert (ctx[0].default_model, ctx[0].selected_model) == ("main-model", "main-model")
    assert ctx[2].patch.max_tokens == 16  # the grown cap, merged in by pre_model_call


def test_reasoning_delta(fired: Seen) -> None:
    """reasoning_delta carries each chunk and the reasoning so far."""
    ctx = contexts(fired, HookPoint.REASONING_DELTA, ReasoningDeltaContext)
    assert [(c.delta, c.aggregated) for c in ctx] == [("Survey ", "Survey "), ("first.", "Survey first.")]


def test_text_delta(fired: Seen) -> None:
    """text_delta carries each chunk and the text of the attempt so far."""
    ctx = contexts(fired, HookPoint.TEXT_DELTA, TextDeltaContext)
    assert [c.delta for c in ctx[:3]] == ["Let ", "me ", "look."]
    assert ctx[2].aggregated == "Let me look."
    assert ctx[3].aggregated == "The "  # a new attempt starts afresh


def test_tool_call_delta(fired: Seen) -> None:
    """tool_call_delta carries the call id, the name on the first chunk only, and JSON pieces."""
    ctx = [c for c in contexts(fired, HookPoint.TOOL_CALL_DELTA, ToolCallDeltaContext) if c.call_id == "c-ls"]
    assert [c.tool_name for c in ctx] == ["shell", None]
    assert "".join(c.delta for c in ctx) == '{"command": "ls"}'


def test_model_turn_finished(fired: Seen) -> None:
    """model_turn_finished carries the answer, its tool calls, finish reason, cap and usage."""
    ctx = [c for c in contexts(fired, HookPoint.MODEL_TURN_FINISHED, ModelTurnFinishedContext) if c.run.depth == 0]
    first, cut, whole = ctx[0], ctx[1], ctx[2]
    assert (first.turn, first.text, first.finish_reason) == (1, "Let me look.", "tool_calls")
    assert first.tool_calls[0] == ToolCallRequest("c-ls", "shell", {"command": "ls"})
    assert (cut.finish_reason, cut.max_tokens, cut.text) == ("length", 8, " ".join(LONG_ANSWER.split()[:8]))
    assert (whole.finish_reason, whole.max_tokens, whole.text) == ("stop", 16, LONG_ANSWER)
    assert whole.usage["output_tokens"] == 14


def test_invalid_tool_call(fired: Seen) -> None:
    """invalid_tool_call names the unknown tool, its args, the tools offered and the error."""
    ctx = contexts(fired, HookPoint.INVALID_TOOL_CALL, InvalidToolCallContext)[0]
    assert (ctx.tool_name, dict(ctx.args), ctx.call_id) == ("grep", {"pattern": "TODO"}, "c-grep")
    assert list(ctx.available_tools) == ["deploy", "read", "research", "shell"]
    assert "unknown tool 'grep'" in ctx.error


def test_transform_tool_input(fired: Seen) -> None:
    """transform_tool_input sees the model's own arguments."""
    ctx = contexts(fired, HookPoint.TRANSFORM_TOOL_INPUT, PreToolCallDecideContext)[0]
    assert (ctx.tool_name, dict(ctx.args), ctx.call_id) == ("shell", {"command": "ls"}, "c-ls")


def test_pre_tool_call_decide(fired: Seen) -> None:
    """pre_tool_call_decide judges the transformed arguments."""
    ctx = contexts(fired, HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext)[0]
    assert dict(ctx.args) == {"command": "ls", "timeout": 30.0}


def test_permission_denied(fired: Seen) -> None:
    """permission_denied names the call, the effective args, the reason and the deciding hook."""
    ctx = contexts(fired, HookPoint.PERMISSION_DENIED, PermissionDeniedContext)[0]
    assert (ctx.tool_name, ctx.call_id, ctx.decided_by) == ("shell", "c-rm", "scenario_registry.<locals>.gate")
    assert ctx.reason == "rm -rf is not allowed; delete files one by one"
    assert ctx.args["timeout"] == 30.0


def test_post_tool_call_failure(fired: Seen) -> None:
    """post_tool_call_failure carries the exception the tool raised and how long it ran."""
    ctx = contexts(fired, HookPoint.POST_TOOL_CALL_FAILURE, PostToolCallFailureContext)
    assert [c.tool_name for c in ctx] == ["grep", "read"]
    assert isinstance(ctx[1].error, FileNotFoundError)
    assert ctx[1].duration_ms >= 0.0


def test_on_tool_error(fired: Seen) -> None:
    """on_tool_error carries the error, its kind and the message the model would see."""
    ctx = contexts(fired, HookPoint.ON_TOOL_ERROR, OnToolErrorContext)
    assert [c.kind for c in ctx] == [ToolErrorKind.NOT_FOUND, ToolErrorKind.EXCEPTION]
    assert ctx[1].message == "Error: FileNotFoundError: notes.txt"
    assert dict(ctx[1].args) == {"path": "notes.txt"}


def test_transform_tool_result(fired: Seen) -> None:
    """transform_tool_result sees the raw result and its default presentation."""
    ctx = contexts(fired, HookPoint.TRANSFORM_TOOL_RESULT, TransformToolResultContext)[0]
    assert (ctx.raw_result, ctx.presentation) == ("$ ls\nok", "$ ls\nok")


def test_post_tool_call(fired: Seen) -> None:
    """post_tool_call carries what the model saw, the raw result, the duration and metadata."""
    ctx = contexts(fired, HookPoint.POST_TOOL_CALL, PostToolCallContext)
    assert (ctx[0].result, ctx[0].raw_result, dict(ctx[0].metadata)) == ("ok", "$ ls\nok", {"rewritten": True})
    assert ctx[1].tool_name == "deploy"
    research = ctx[2]
    assert isinstance(research.raw_result, RunResult)
    assert research.result == "docs are in docs/"


def test_post_turn(fired: Seen) -> None:
    """post_turn carries the turn number and the accepted answer."""
    ctx = [c for c in contexts(fired, HookPoint.POST_TURN, PostTurnContext) if c.run.depth == 0]
    assert [(c.turn, c.response_text) for c in ctx] == [(1, "Let me look."), (2, LONG_ANSWER), (3, "Checked.")]


def test_pre_compact(fired: Seen) -> None:
    """pre_compact carries the history's size (messages, and characters) once it outgrows compact_after."""
    ctx = contexts(fired, HookPoint.PRE_COMPACT, PreCompactContext)
    assert [c.message_count for c in ctx] == [14]
    assert ctx[0].transcript_len > 14 * 2


def test_on_compaction(fired: Seen) -> None:
    """on_compaction counts the messages folded into the summary and the summary's size."""
    ctx = contexts(fired, HookPoint.ON_COMPACTION, OnCompactionContext)[0]
    assert ctx.removed == 7
    assert ctx.summary_chars > 0


def test_notification(fired: Seen) -> None:
    """notification tells the user an approval is needed, and why."""
    ctx = contexts(fired, HookPoint.NOTIFICATION, NotificationContext)[0]
    assert ctx.message == "approval needed for deploy: deploy to staging?"


def test_on_interaction(fired: Seen) -> None:
    """on_interaction carries the gate's question, the options and the tool."""
    ctx = contexts(fired, HookPoint.ON_INTERACTION, OnInteractionContext)[0]
    assert (ctx.question, tuple(ctx.options), ctx.tool_name) == ("deploy to staging?", ("allow", "deny"), "deploy")


def test_subagent_start(fired: Seen) -> None:
    """subagent_start carries the goal and the nested depth, and the nested run fires at that depth."""
    ctx = contexts(fired, HookPoint.SUBAGENT_START, SubagentStartContext)[0]
    assert (ctx.goal, ctx.depth, ctx.run.depth) == ("find the docs", 1, 0)
    nested = [c for c in contexts(fired, HookPoint.ON_SESSION_START, OnSessionStartContext) if c.run.depth == 1]
    assert [(c.goal, c.run.agent_name, c.run.is_streaming) for c in nested] == [("find the docs", "researcher", False)]


def test_subagent_stop(fired: Seen) -> None:
    """subagent_stop carries the nested run's outcome and depth."""
    ctx = contexts(fired, HookPoint.SUBAGENT_STOP, SubagentStopContext)[0]
    assert (ctx.outcome, ctx.depth) == (RunOutcome(status="completed", turns=1), 1)


def test_stop(fired: Seen) -> None:
    """stop carries the answer and how many times the run was already kept going."""
    ctx = [c for c in contexts(fired, HookPoint.STOP, StopContext) if c.run.depth == 0]
    assert [(c.response_text, c.continuation_count) for c in ctx] == [(LONG_ANSWER, 0), ("Checked.", 1)]


def test_on_session_end(fired: Seen) -> None:
    """on_session_end fires last, with the outcome and the number of model calls."""
    ctx = contexts(fired, HookPoint.ON_SESSION_END, OnSessionEndContext)
    assert fired[-1] == (HookPoint.ON_SESSION_END, ctx[-1])
    assert ctx[-1].outcome == RunOutcome(status="completed", turns=4)
    assert ctx[-1].session_id == ctx[-1].run.session_id
