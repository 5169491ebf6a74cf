"""The lifecycle: one scenario fires every hook point, in the documented order, on all four entry points."""

from __future__ import annotations

from collections.abc import Callable

from hookreg import HookPoint
from hookreg.harness import Harness, RunResult, ScriptedModel, StreamItem

Seen = list[tuple[HookPoint, object]]
Scenario = Callable[[], tuple[Harness, ScriptedModel, Seen]]
Collect = Callable[[Harness, str, str], tuple[RunResult, list[StreamItem]]]
ENTRY_POINTS = ("run", "arun", "stream", "astream")

TOOLS_TURN = [
    "pre_turn",
    "pre_model_call",
    "model_select",
    "<deltas 1>",
    "model_turn_finished",
    "post_turn",  # the answer is accepted: before its tool calls run, as in every adapter
    # shell ls: rewritten, allowed, result shortened
    "transform_tool_input",
    "pre_tool_call_decide",
    "transform_tool_result",
    "post_tool_call",
    # shell rm -rf: denied
    "transform_tool_input",
    "pre_tool_call_decide",
    "permission_denied",
    # grep: no such tool
    "invalid_tool_call",
    "post_tool_call_failure",
    "on_tool_error",
    # read: the tool raises
    "transform_tool_input",
    "pre_tool_call_decide",
    "post_tool_call_failure",
    "on_tool_error",
    # deploy: asked, approved
    "transform_tool_input",
    "pre_tool_call_decide",
    "notification",
    "on_interaction",
    "transform_tool_result",
    "post_tool_call",
    # research: a subagent at depth 1 sharing the registry
    "transform_tool_input",
    "pre_tool_call_decide",
    "subagent_start",
    "setup",
    "on_session_start",
    "user_prompt_submit",
    "pre_turn",
    "pre_model_call",
    "model_select",
    "model_turn_finished",
    "post_turn",
    "stop",
    "on_session_end",
    "subagent_stop",
    "transform_tool_result",
    "post_tool_call",
    "pre_compact",
    "on_compaction",
]
EXPECTED = [
    "setup",
    "on_session_start",
    "user_prompt_submit",
    *TOOLS_TURN,
    # the long answer: truncated, repeated with a larger cap, then stop says "keep going"
    "pre_turn",
    "pre_model_call",
    "model_select",
    "<deltas 2>",
    "model_turn_finished",
    "pre_model_call",
    "model_select",
    "<deltas 3>",
    "model_turn_finished",
    "post_turn",
    "stop",
    "pre_turn",
    "pre_model_call",
    "model_select",
    "<deltas 4>",
    "model_turn_finished",
    "post_turn",
    "stop",
    "on_session_end",
]
DELTAS = {
    # "Survey first." / "Let me look." / six calls, two chunks each
    "<deltas 1>": ["reasoning_delta"] * 2 + ["text_delta"] * 3 + ["tool_call_delta"] * 12,
    "<deltas 2>": ["text_delta"] * 8,  # cut at max_tokens=8
    "<deltas 3>": ["text_delta"] * 14,
    "<deltas 4>": ["text_delta"],
}


def expected(*, streaming: bool) -> list[str]:
    """The exact sequence of points, with the deltas of streaming runs spliced in."""
    out: list[str] = []
    for point in EXPECTED:
        out += DELTAS[point] if point in DELTAS and streaming else [] if point in DELTAS else [point]
    return out


def test_every_point_fires_in_the_documented_order(entry: str, make_scenario: Scenario, run_through: Collect) -> None:
    """Each entry point fires exactly the documented sequence; streaming ones add the deltas in place."""
    harness, _, seen = make_scenario()
    result, _ = run_through(harness, "tidy the project", entry)
    assert result.outcome.status == "completed"
    assert [point.value for point, _ in seen] == expected(streaming=entry in ("stream", "astream"))


def test_streaming_runs_touch_every_point() -> None:
    """The scenario, streamed, fires every member of HookPoint."""
    assert set(expected(streaming=True)) == {point.value for point in HookPoint}


def test_the_four_entry_points_agree_on_outcome_and_history(make_scenario: Scenario, run_through: Collect) -> None:
    """All four entry points end with the same outcome, output and history."""
    results = [run_through(make_scenario()[0], "tidy the project", entry)[0] for entry in ENTRY_POINTS]
    assert {r.outcome for r in results} == {results[0].outcome}
    assert {r.history for r in results} == {results[0].history}
    assert results[0].output == "Checked."
    assert results[0].outcome.turns == 4
