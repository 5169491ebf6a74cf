"""What the harness sends the model and what it reports of the answer: patches, finish reasons, raw arguments."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator

import pytest

from hookreg import (
    FinishReason,
    HookRegistry,
    HookResult,
    InvalidToolCallAction,
    InvalidToolCallContext,
    Message,
    ModelTurnFinishedContext,
    PreCompactContext,
    PreTurnContext,
    RequestPatch,
    ToolCallRequest,
    ToolErrorKind,
    TurnAction,
)
from hookreg.harness import (
    Harness,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunResult,
    ScriptedModel,
    ScriptedTurn,
    ToolCallDelta,
)

Drive = Callable[[Harness, str], RunResult]


def echo(text: str) -> str:
    """A tool that answers with its argument."""
    return text


def finished_turns(registry: HookRegistry) -> list[ModelTurnFinishedContext]:
    """Record every model_turn_finished context (and accept every answer)."""
    seen: list[ModelTurnFinishedContext] = []

    @registry.model_turn_finished
    def record(ctx: ModelTurnFinishedContext) -> TurnAction:
        seen.append(ctx)
        return TurnAction.continue_run()

    return seen


def test_a_finished_turn_reports_the_normalised_finish_reason_the_answer_id_and_the_model(drive: Drive) -> None:
    """model_turn_finished gets FinishReason, the provider's spelling, the answer's id and the model that answered."""
    registry = HookRegistry()
    seen = finished_turns(registry)
    registry.model_select(lambda ctx: "big-model")
    model = ScriptedModel([ScriptedTurn(text="cut", finish_reason="MAX_TOKENS")])
    drive(Harness(model, registry=registry), "go")
    [ctx] = seen
    assert (ctx.finish_reason, ctx.raw_finish_reason, ctx.truncated) == (FinishReason.LENGTH, "MAX_TOKENS", True)
    assert (ctx.message_id, ctx.model) == ("msg-1", "big-model")


class _PlainModel:
    """A model whose answers carry no message id and no model name."""

    name = "plain"

    def stream(self, request: ModelRequest, /) -> Iterator[ModelChunk]:
        yield ModelResponse(text="hi", finish_reason="end_turn")

    async def astream(self, request: ModelRequest, /) -> AsyncIterator[ModelChunk]:
        for chunk in self.stream(request):
            yield chunk


def test_an_answer_without_a_model_name_reports_the_model_asked(drive: Drive) -> None:
    """When the answer does not name its model, model_turn_finished reports the one the request asked for."""
    registry = HookRegistry()
    seen = finished_turns(registry)
    drive(Harness(_PlainModel(), registry=registry), "go")
    [ctx] = seen
    assert (ctx.finish_reason, ctx.raw_finish_reason) == (FinishReason.STOP, "end_turn")
    assert (ctx.message_id, ctx.model) == (None, "plain")


def test_patched_messages_are_sent_for_one_call_and_leave_the_transcript_alone(drive: Drive) -> None:
    """RequestPatch.messages replaces what the model is sent on that call only; the history keeps every message."""
    registry = HookRegistry()
    short = (Message("user", "the gist"),)

    @registry.pre_model_call
    def trim(ctx: object) -> RequestPatch | None:
        return RequestPatch(messages=short) if len(model.requests) == 0 else None

    model = ScriptedModel([ScriptedTurn.calling("echo", {"text": "x"}), ScriptedTurn(text="done")])
    result = drive(Harness(model, [echo], registry), "the whole long prompt")
    assert model.requests[0].messages == short
    assert model.requests[1].messages[0] == Message("user", "the whole long prompt")
    assert result.history[0] == Message("user", "the whole long prompt")
    assert len(result.history) == 4


def test_a_feedback_retry_of_an_empty_answer_adds_no_empty_assistant_message(drive: Drive) -> None:
    """Retrying an empty answer with feedback sends the feedback alone, not an empty assistant message before it."""
    registry = HookRegistry()

    @registry.model_turn_finished
    def want_text(ctx: ModelTurnFinishedContext) -> TurnAction:
        return TurnAction.continue_run() if ctx.text else TurnAction.retry_with_feedback("say something")

    model = ScriptedModel([ScriptedTurn(text=""), ScriptedTurn(text="something")])
    result = drive(Harness(model, registry=registry), "go")
    assert [(m.role, m.content) for m in model.requests[1].messages] == [("user", "go"), ("user", "say something")]
    assert result.output == "something"


def test_each_turn_gets_a_fresh_turn_scratchpad_under_the_run_scratchpad(drive: Drive) -> None:
    """pre_turn sees an empty turn scope every turn, while the run scope keeps what earlier turns stored."""
    registry = HookRegistry()
    seen: list[tuple[int, str | None, str | None]] = []

    @registry.pre_turn
    def mark(ctx: PreTurnContext) -> HookResult:
        seen.append((ctx.turn, ctx.run.turn_scratchpad.get(str), ctx.run.scratchpad.get(str)))
        ctx.run.turn_scratchpad.insert(f"turn {ctx.turn}")
        if ctx.turn == 1:
            ctx.run.scratchpad.insert("run")
        return HookResult.allow()

    model = ScriptedModel([ScriptedTurn.calling("echo", {"text": "x"}), ScriptedTurn(text="done")])
    drive(Harness(model, [echo], registry), "go")
    assert seen == [(1, None, None), (2, "run", "run")]


def test_pre_compact_counts_characters_and_messages(drive: Drive) -> None:
    """pre_compact's transcript_len is the history's length in characters; message_count its number of messages."""
    registry = HookRegistry()
    compacted: list[PreCompactContext] = []
    registry.pre_compact(compacted.append)
    turn = ScriptedTurn(
        text="x",
        tool_calls=[ToolCallRequest("a", "echo", {"text": "abc"}), ToolCallRequest("b", "echo", {"text": "de"})],
    )
    drive(Harness(ScriptedModel([turn, ScriptedTurn(text="done")]), [echo], registry, compact_after=4), "go")
    contents = ["go", "x", '{"text": "abc"}', '{"text": "de"}', "abc", "de"]
    assert [(c.transcript_len, c.message_count) for c in compacted] == [(sum(map(len, contents)), len(contents))]


@pytest.mark.parametrize("raw", ['{"text": "hi', '["hi"]', ["hi"], 42])
def test_raw_arguments_reach_invalid_tool_call_and_never_run(drive: Drive, raw: object) -> None:
    """Arguments that are not a JSON object reach invalid_tool_call as raw_args with args={}, and fail INVALID_ARGS."""
    registry = HookRegistry()
    invalid: list[InvalidToolCallContext] = []
    kinds: list[ToolErrorKind] = []
    registry.invalid_tool_call(invalid.append)
    registry.on_tool_error(lambda ctx: kinds.append(ctx.kind))
    ran: list[str] = []

    def recorded(text: str) -> str:
        ran.append(text)
        return text

    model = ScriptedModel([ScriptedTurn.calling_raw("recorded", raw), ScriptedTurn(text="sorry")])
    result = drive(Harness(model, [recorded], registry), "go")
    assert ran == []
    [ctx] = invalid
    assert (dict(ctx.args), ctx.raw_args, ctx.call_id) == ({}, raw, "raw-1")
    assert kinds == [ToolErrorKind.INVALID_ARGS]
    call = next(m for m in result.history if m.role == "assistant" and m.tool_call_id == "raw-1")
    assert call.content == (raw if isinstance(raw, str) else json.dumps(raw))


def test_raw_arguments_can_be_repaired_or_skipped_like_any_invalid_call(drive: Drive) -> None:
    """An invalid_tool_call hook's skip text is what the model reads for a call with raw arguments."""
    registry = HookRegistry()
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.skip(f"send JSON objects, not {ctx.raw_args!r}"))
    model = ScriptedModel([ScriptedTurn.calling_raw("echo", "hi"), ScriptedTurn(text="ok")])
    result = drive(Harness(model, [echo], registry), "go")
    assert [m.content for m in result.history if m.role == "tool"] == ["send JSON objects, not 'hi'"]


def test_a_streamed_raw_call_shows_the_model_text_in_its_deltas() -> None:
    """The tool-call deltas of a call with raw arguments carry the model's own text."""
    model = ScriptedModel([ScriptedTurn.calling_raw("echo", '{"text": "hi')])
    deltas = [c for c in model.stream(ModelRequest(model="m", messages=())) if isinstance(c, ToolCallDelta)]
    assert "".join(d.args for d in deltas) == '{"text": "hi'


@pytest.mark.parametrize("build", [ModelResponse, ScriptedTurn])
def test_raw_arguments_must_name_a_call(build: Callable[..., object]) -> None:
    """Raw arguments keyed by an id no call has are refused where the answer is built."""
    with pytest.raises(ValueError, match=r"raw arguments for call 'nope': no tool call has that id"):
        build(tool_calls=(ToolCallRequest("c1", "echo", {}),), raw_arguments={"nope": "x"})
