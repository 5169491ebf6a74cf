"""The run contract (DESIGN §8) as hookreg._lifecycle drives it, on the sync and the async driver alike."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import pathlib
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, NoReturn

import pytest
import structlog

import hookreg._lifecycle as lifecycle
from hookreg import (
    FinishReason,
    HookPoint,
    HookRegistry,
    HookResult,
    HookStyle,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    InvalidToolCallContext,
    Message,
    ModelTurnFinishedContext,
    OnSessionEndContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PreToolCallDecideContext,
    RequestPatch,
    RunContext,
    RunOutcome,
    Scratchpad,
    StopRun,
    ToolCallRequest,
    ToolErrorKind,
)
from hookreg._lifecycle import (
    STOPPED_NOTICE,
    Dispatch,
    GateResult,
    RunState,
    Steps,
    arun_flow,
    bind,
    failed,
    finish_reason,
    gate,
    missing_framework,
    outcome_for,
    perform,
    present,
    refused_retry,
    require_registry,
    require_release,
    succeeded,
    unanswered,
)

P = HookPoint
Run = Callable[[HookRegistry, Steps[Any]], Any]
KNOWN = frozenset({"shell", "read"})


@pytest.fixture(params=["sync", "async"])
def run_flow(request: pytest.FixtureRequest) -> Run:
    """Run a flow with the sync driver, or with the async one inside a fresh event loop."""
    if request.param == "sync":
        return lifecycle.run_flow

    def run_async(registry: HookRegistry, steps: Steps[Any]) -> Any:
        return asyncio.run(arun_flow(registry, steps))

    return run_async


def _recorder(seen: list[tuple[HookPoint, Any]], point: HookPoint) -> Callable[[Any], None]:
    def observe(ctx: Any) -> None:
        seen.append((point, ctx))

    return observe


def collect(into: list[Any], answer: object = None) -> Callable[[Any], Any]:
    """A hook that appends its context to `into` and returns `answer`."""

    def hook(ctx: Any) -> Any:
        into.append(ctx)
        return answer

    return hook


def record(registry: HookRegistry) -> list[tuple[HookPoint, Any]]:
    """Register an observer at every observe point; return the list of (point, ctx) they fill, in order."""
    seen: list[tuple[HookPoint, Any]] = []
    for point in HookPoint:
        if point.style is HookStyle.OBSERVE:
            registry.register(point, _recorder(seen, point), name=f"record-{point}")
    return seen


def points(seen: list[tuple[HookPoint, Any]]) -> list[HookPoint]:
    """The points in `seen`, in order."""
    return [point for point, _ in seen]


def call_gate(run_flow: Run, registry: HookRegistry, name: str = "shell", args: object = None, **kw: Any) -> GateResult:
    """Gate one call to `name` (``{"command": "ls"}`` unless `args` is given) among the known tools."""
    raw = {"command": "ls"} if args is None else args
    kw.setdefault("known", KNOWN)
    result: GateResult = run_flow(registry, gate(registry, RunContext(), name, "call-1", raw, **kw))
    return result


# --- gate: transform, decide, ask, deny ------------------------------------------------


def test_no_gate_hooks_runs_the_call_as_the_model_sent_it(run_flow: Run) -> None:
    """With no hooks, a valid call runs with the model's args and nothing is dispatched."""
    verdict = call_gate(run_flow, HookRegistry())
    assert verdict.allowed
    assert (verdict.status, verdict.text, verdict.rewritten) == ("run", "", False)
    assert verdict.call == ToolCallRequest("call-1", "shell", {"command": "ls"})


def test_the_gate_judges_the_transformed_args(run_flow: Run) -> None:
    """transform_tool_input rewrites the args, pre_tool_call_decide sees the rewrite, and the call runs with it."""
    registry = HookRegistry()
    judged: list[Mapping[str, object]] = []
    registry.transform_tool_input(lambda ctx: {**ctx.args, "timeout": 5})

    @registry.pre_tool_call_decide
    def judge(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(dict(ctx.args))
        return HookResult.allow()

    verdict = call_gate(run_flow, registry)
    assert judged == [{"command": "ls", "timeout": 5}]
    assert verdict.allowed
    assert verdict.rewritten
    assert dict(verdict.call.args) == {"command": "ls", "timeout": 5}


@pytest.mark.parametrize("reason", ["", "not here"])
def test_a_deny_never_runs_the_tool_and_fires_permission_denied_once(run_flow: Run, reason: str) -> None:
    """A deny, even with an empty reason, never runs the tool; the model reads a text; permission_denied fires once."""
    registry = HookRegistry()
    seen = record(registry)
    registry.register(P.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny(reason), name="guard")
    verdict = call_gate(run_flow, registry)
    assert not verdict.allowed
    assert verdict.status == "denied"
    assert verdict.text == (reason or "Tool call denied by hook 'guard'.")
    assert verdict.decided_by == "guard"
    denied = [ctx for point, ctx in seen if point is P.PERMISSION_DENIED]
    assert len(denied) == 1
    assert isinstance(denied[0], PermissionDeniedContext)
    assert (denied[0].decided_by, denied[0].reason) == ("guard", reason)


def test_an_approved_ask_fires_notification_then_on_interaction_and_runs(run_flow: Run) -> None:
    """An ask goes to notification, then on_interaction; an allow there runs the tool with no permission_denied."""
    registry = HookRegistry()
    seen = record(registry)
    questions: list[str] = []
    registry.pre_tool_call_decide(lambda ctx: HookResult.ask("run ls?"))

    @registry.on_interaction
    def human(ctx: Any) -> HookResult:
        questions.append(ctx.question)
        assert points(seen) == [P.NOTIFICATION]  # notified before the question
        return HookResult.allow()

    verdict = call_gate(run_flow, registry)
    assert verdict.allowed
    assert questions == ["run ls?"]
    assert seen[0][1].message == "approval needed for shell: run ls?"
    assert points(seen) == [P.NOTIFICATION]


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (None, "no interaction hook"),
        (lambda ctx: HookResult.ask("and you?"), "and you?"),
        (lambda ctx: HookResult.deny("no"), "no"),
        (lambda ctx: 1 / 0, None),
    ],
    ids=["unanswered", "answered-with-ask", "denied", "failing-answer"],
)
def test_an_ask_not_approved_is_a_deny(
    run_flow: Run, answer: Callable[[Any], HookResult] | None, text: str | None
) -> None:
    """No answer, an answer that is itself an ask, a deny or a failing on_interaction hook: the tool never runs."""
    registry = HookRegistry()
    seen = record(registry)
    registry.pre_tool_call_decide(lambda ctx: HookResult.ask("run ls?"))
    if answer is not None:
        registry.register(P.ON_INTERACTION, answer, name="human")
    verdict = call_gate(run_flow, registry)
    assert not verdict.allowed
    assert verdict.status == "denied"
    assert verdict.text
    if text is not None:
        assert verdict.text == text
    assert points(seen).count(P.PERMISSION_DENIED) == 1


def test_stop_run_from_a_gate_reaches_the_caller_as_the_same_object(run_flow: Run) -> None:
    """A StopRun raised by a gate hook propagates out of the driver unchanged."""
    registry = HookRegistry()
    stop = StopRun("enough")

    @registry.pre_tool_call_decide
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise stop

    with pytest.raises(StopRun) as caught:
        call_gate(run_flow, registry)
    assert caught.value is stop


def test_a_gate_result_has_no_truth_value() -> None:
    """bool() of a GateResult raises, naming .allowed, so `if verdict:` cannot read a deny as a go."""
    verdict = GateResult(status="denied", call=ToolCallRequest("c", "t", {}), text="no")
    with pytest.raises(TypeError, match=r"\.allowed"):
        bool(verdict)


# --- gate: invalid calls ---------------------------------------------------------------


def test_an_unknown_tool_fails_with_not_found_and_never_runs(run_flow: Run) -> None:
    """An unknown tool reaches invalid_tool_call; its default fail fires the failure points with kind NOT_FOUND."""
    registry = HookRegistry()
    seen = record(registry)
    invalid: list[InvalidToolCallContext] = []
    registry.invalid_tool_call(collect(invalid))
    errors: list[OnToolErrorContext] = []

    @registry.on_tool_error
    def explain(ctx: OnToolErrorContext) -> str:
        errors.append(ctx)
        return f"model reads: {ctx.message}"

    verdict = call_gate(run_flow, registry, name="rm")
    assert not verdict.allowed
    assert verdict.status == "failed"
    assert isinstance(verdict.error, LookupError)
    assert invalid[0].available_tools == ("read", "shell")
    assert "unknown tool 'rm'" in invalid[0].error
    assert points(seen) == [P.POST_TOOL_CALL_FAILURE]
    assert errors[0].kind is ToolErrorKind.NOT_FOUND
    assert verdict.text == f"model reads: Error: LookupError: {invalid[0].error}"


@pytest.mark.parametrize(
    ("name", "args", "kind"),
    [("rm", {}, ToolErrorKind.NOT_FOUND), ("shell", "ls", ToolErrorKind.INVALID_ARGS)],
    ids=["unknown", "not_an_object"],
)
def test_an_invalid_call_every_hook_passes_is_the_frameworks_with_passing(
    run_flow: Run, name: str, args: object, kind: ToolErrorKind
) -> None:
    """gate(passing=True): a call no invalid_tool_call hook answered is "passed", before any failure point."""
    registry = HookRegistry()
    seen = record(registry)
    registry.invalid_tool_call(lambda ctx: None)
    verdict = call_gate(run_flow, registry, name=name, args=args, passing=True)
    assert (verdict.status, verdict.kind, verdict.decided_by, verdict.allowed) == ("passed", kind, None, False)
    assert verdict.text == str(verdict.error)
    assert points(seen) == []

    # a hook that answers fail itself decides: the failure points fire, as without `passing`
    @registry.invalid_tool_call(name="answers")
    def answers(ctx: InvalidToolCallContext) -> InvalidToolCallAction:
        return InvalidToolCallAction.fail("no")

    failed_verdict = call_gate(run_flow, registry, name=name, args=args, passing=True)
    assert (failed_verdict.status, failed_verdict.kind, failed_verdict.decided_by) == ("failed", kind, "answers")
    assert points(seen) == [P.POST_TOOL_CALL_FAILURE]


def test_a_tool_not_offered_this_turn_never_runs(run_flow: Run) -> None:
    """A known tool outside the turn's offered set is an invalid call; the gate hooks never see it."""
    registry = HookRegistry()
    gated: list[Any] = []
    registry.pre_tool_call_decide(collect(gated, HookResult.allow()))
    invalid: list[InvalidToolCallContext] = []
    registry.invalid_tool_call(collect(invalid))
    verdict = call_gate(run_flow, registry, name="shell", offered={"read"})
    assert not verdict.allowed
    assert gated == []
    assert invalid[0].available_tools == ("read",)
    assert "not offered" in invalid[0].error


@pytest.mark.parametrize("raw", ["rm -rf /", ["ls"], None, 42], ids=["str", "list", "none", "int"])
def test_non_mapping_args_reach_invalid_tool_call_with_empty_args_and_the_raw_value(run_flow: Run, raw: object) -> None:
    """Arguments that are not a mapping are never gated as {}: invalid_tool_call gets args={} and raw_args as sent."""
    registry = HookRegistry()
    gated: list[Any] = []
    registry.pre_tool_call_decide(collect(gated, HookResult.allow()))
    invalid: list[InvalidToolCallContext] = []
    registry.invalid_tool_call(collect(invalid))
    errors: list[OnToolErrorContext] = []
    registry.on_tool_error(collect(errors))
    verdict = run_flow(registry, gate(registry, RunContext(), "shell", "call-1", raw, known=KNOWN))
    assert not verdict.allowed
    assert gated == []
    assert dict(invalid[0].args) == {}
    assert invalid[0].raw_args == raw
    assert errors[0].kind is ToolErrorKind.INVALID_ARGS


@pytest.mark.parametrize(
    "validate",
    [lambda name, args: "command must be str", lambda name, args: int("x")],
    ids=["returns-text", "raises"],
)
def test_a_schema_failure_is_an_invalid_call(
    run_flow: Run, validate: Callable[[str, Mapping[str, object]], object]
) -> None:
    """A framework validator that returns an error text, or raises, sends the call to invalid_tool_call."""
    registry = HookRegistry()
    invalid: list[InvalidToolCallContext] = []
    registry.invalid_tool_call(collect(invalid))
    verdict = call_gate(run_flow, registry, validate=validate)
    assert verdict.status == "failed"
    assert invalid[0].error.startswith("bad arguments for 'shell': ")
    assert invalid[0].error != "bad arguments for 'shell': "


def test_a_validator_passing_lets_the_call_through(run_flow: Run) -> None:
    """A validator returning None or "" accepts the args."""
    for answer in (None, ""):
        verdict = call_gate(run_flow, HookRegistry(), validate=lambda name, args, a=answer: a)
        assert verdict.allowed


@pytest.mark.parametrize(
    ("action", "status", "text"),
    [
        (InvalidToolCallAction.retry("use read"), "retry", "use read"),
        (InvalidToolCallAction.skip("skipped it"), "skipped", "skipped it"),
        (InvalidToolCallAction.skip(""), "skipped", "Tool call 'rm' skipped by hook 'fixer'."),
    ],
)
def test_retry_and_skip_send_their_text_with_no_failure_points(
    run_flow: Run, action: InvalidToolCallAction, status: str, text: str
) -> None:
    """retry and skip hand their text to the model; no failure point fires and the tool never runs."""
    registry = HookRegistry()
    seen = record(registry)
    registry.register(P.INVALID_TOOL_CALL, lambda ctx: action, name="fixer")
    verdict = call_gate(run_flow, registry, name="rm")
    assert not verdict.allowed
    assert (verdict.status, verdict.text) == (status, text)
    assert seen == []


def test_repair_sends_the_renamed_call_through_transform_and_gate(run_flow: Run) -> None:
    """A repaired call is transformed and gated under its new name; a deny there still stops it."""
    registry = HookRegistry()
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.repair("shell"))
    gated: list[tuple[str, dict[str, object]]] = []
    registry.transform_tool_input(lambda ctx: {**ctx.args, "safe": True})

    @registry.pre_tool_call_decide
    def guard(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append((ctx.tool_name, dict(ctx.args)))
        return HookResult.deny("")

    verdict = call_gate(run_flow, registry, name="bash")
    assert gated == [("shell", {"command": "ls", "safe": True})]
    assert not verdict.allowed
    assert verdict.status == "denied"
    assert verdict.call.tool_name == "shell"


def test_repair_to_another_invalid_tool_fails_without_asking_again(run_flow: Run) -> None:
    """A repair naming a tool that is still invalid fails (NOT_FOUND) instead of looping through invalid_tool_call."""
    registry = HookRegistry()
    asked: list[Any] = []
    registry.invalid_tool_call(collect(asked, InvalidToolCallAction.repair("nope")))
    verdict = call_gate(run_flow, registry, name="bash")
    assert [ctx.tool_name for ctx in asked] == ["bash"]
    assert verdict.status == "failed"
    assert verdict.call.tool_name == "nope"


def test_invalid_call_stop_raises_stop_run(run_flow: Run) -> None:
    """InvalidToolCallAction.stop ends the run: the driver raises StopRun with its reason and the deciding hook."""
    registry = HookRegistry()
    registry.register(P.INVALID_TOOL_CALL, lambda ctx: InvalidToolCallAction.stop("bad model"), name="strict")
    with pytest.raises(StopRun, match="bad model") as caught:
        call_gate(run_flow, registry, name="rm")
    assert (caught.value.reason, caught.value.hook) == ("bad model", "strict")


def test_a_fail_reason_is_what_on_tool_error_starts_from(run_flow: Run) -> None:
    """fail(reason) reports the call as failed with the reason as the model's text."""
    registry = HookRegistry()
    registry.invalid_tool_call(lambda ctx: InvalidToolCallAction.fail("no such tool, try read"))
    verdict = call_gate(run_flow, registry, name="rm")
    assert (verdict.status, verdict.text) == ("failed", "no such tool, try read")


def test_a_transform_that_breaks_the_args_fails_the_call(run_flow: Run) -> None:
    """Args an input transform made invalid are reported as an INVALID_ARGS failure, and the tool never runs."""
    registry = HookRegistry()
    registry.transform_tool_input(lambda ctx: {"command": 3})
    errors: list[OnToolErrorContext] = []
    registry.on_tool_error(collect(errors))

    def validate(name: str, args: Mapping[str, object]) -> str | None:
        return None if isinstance(args.get("command"), str) else "command must be str"

    verdict = call_gate(run_flow, registry, validate=validate)
    assert verdict.status == "failed"
    assert errors[0].kind is ToolErrorKind.INVALID_ARGS
    assert "after transform_tool_input" in verdict.text


# --- outcomes ----------------------------------------------------------------------------

CALL = ToolCallRequest("call-1", "shell", {"command": "ls"})


def test_success_rewrites_then_observes_and_returns_the_text(run_flow: Run) -> None:
    """transform_tool_result rewrites the JSON presentation; post_tool_call sees the final text and the raw result."""
    registry = HookRegistry()
    seen = record(registry)
    registry.transform_tool_result(lambda ctx: ctx.presentation.upper())
    text = run_flow(registry, succeeded(registry, RunContext(), CALL, {"files": ["a"]}, duration_ms=2.0))
    assert text == '{"FILES": ["A"]}'
    post = seen[0][1]
    assert isinstance(post, PostToolCallContext)
    assert (post.result, post.raw_result, post.duration_ms) == (text, {"files": ["a"]}, 2.0)


def test_outcome_flows_dispatch_nothing_without_hooks() -> None:
    """With no hooks, the outcome flows build no context and yield no dispatch."""
    registry = HookRegistry()
    for steps in (succeeded(registry, RunContext(), CALL, "ok"), failed(registry, RunContext(), CALL, OSError("x"))):
        with pytest.raises(StopIteration):
            next(steps)


@pytest.mark.parametrize(
    ("error", "kind"), [(ValueError("boom"), ToolErrorKind.EXCEPTION), (TimeoutError(), ToolErrorKind.TIMEOUT)]
)
def test_failure_observes_then_returns_on_tool_errors_text(
    run_flow: Run, error: Exception, kind: ToolErrorKind
) -> None:
    """A failure fires post_tool_call_failure then on_tool_error (kind from the error), never post_tool_call."""
    registry = HookRegistry()
    seen = record(registry)
    errors: list[OnToolErrorContext] = []

    @registry.on_tool_error
    def explain(ctx: OnToolErrorContext) -> str:
        errors.append(ctx)
        return f"[{ctx.message}]"

    text = run_flow(registry, failed(registry, RunContext(), CALL, error, duration_ms=1.0))
    assert points(seen) == [P.POST_TOOL_CALL_FAILURE]
    assert isinstance(seen[0][1], PostToolCallFailureContext)
    assert seen[0][1].error is error
    assert errors[0].kind is kind
    prefix = "Error: ValueError: boom" if kind is ToolErrorKind.EXCEPTION else "Error: TimeoutError"
    assert text == f"[{prefix}]"


def test_unanswered_calls_get_the_stopped_notice() -> None:
    """After a stop, every call of the batch without a tool message gets the one constant notice."""
    assert unanswered(["a", "b", "c"], {"b"}) == [("a", STOPPED_NOTICE), ("c", STOPPED_NOTICE)]
    assert STOPPED_NOTICE == "Not run: the run was stopped."


# --- the run ---------------------------------------------------------------------------


def test_start_fires_session_start_once_and_gates_the_prompt(run_flow: Run) -> None:
    """on_session_start fires once per RunState, and user_prompt_submit sees the goal."""
    registry = HookRegistry()
    seen = record(registry)
    prompts: list[Any] = []
    registry.user_prompt_submit(collect(prompts, HookResult.allow()))
    state = RunState(registry, RunContext(), goal="list files")
    assert run_flow(registry, state.start()) is None
    assert run_flow(registry, state.start()) is None
    assert points(seen) == [P.ON_SESSION_START]
    assert seen[0][1].goal == "list files"
    assert [ctx.content for ctx in prompts] == ["list files", "list files"]


def test_a_turns_run_context_is_built_when_read_and_an_assigned_one_is_kept(run_flow: Run) -> None:
    """With nobody listening a turn builds no RunContext; reading `run` gives the turn's (its number, a fresh
    turn scratchpad of the run's); a context an adapter assigns mid-turn (a handoff's agent name) is kept."""
    registry = HookRegistry()
    first = RunContext()
    state = RunState(registry, first)
    assert run_flow(registry, state.turn()) is None
    assert state._run is first  # nothing built: no hook read the turn's context
    turn = state.run
    assert (turn.turn, turn.run_id, turn.scratchpad) == (1, first.run_id, first.scratchpad)
    assert turn.turn_scratchpad is not first.turn_scratchpad
    assert state.run is turn  # built once per turn
    renamed = dataclasses.replace(turn, agent_name="billing")
    state.run = renamed
    assert state.run is renamed
    assert run_flow(registry, state.turn()) is None
    assert (state.run.turn, state.run.agent_name) == (2, "billing")


@pytest.mark.parametrize("point", [P.USER_PROMPT_SUBMIT, P.PRE_TURN])
def test_a_run_level_deny_stops_the_run_with_its_reason(run_flow: Run, point: HookPoint) -> None:
    """A deny at user_prompt_submit or pre_turn gives a stopped outcome carrying the reason."""
    registry = HookRegistry()
    registry.register(point, lambda ctx: HookResult.deny("over budget"))
    state = RunState(registry, RunContext(), goal="g")
    steps = state.start() if point is P.USER_PROMPT_SUBMIT else state.turn()
    assert run_flow(registry, steps) == RunOutcome(status="stopped", reason="over budget", turns=0)


@pytest.mark.parametrize("approve", [True, False])
def test_a_run_level_ask_goes_to_on_interaction(run_flow: Run, approve: bool) -> None:
    """A pre_turn ask fires notification and on_interaction; approval goes on, anything else stops the run."""
    registry = HookRegistry()
    seen = record(registry)
    registry.pre_turn(lambda ctx: HookResult.ask("another turn?"))
    registry.on_interaction(lambda ctx: HookResult.allow() if approve else HookResult.deny("no"))
    state = RunState(registry, RunContext(), goal="g")
    outcome = run_flow(registry, state.turn())
    assert points(seen) == [P.NOTIFICATION]
    assert outcome == (None if approve else RunOutcome(status="stopped", reason="no", turns=0))


def test_turns_count_from_one_with_a_fresh_turn_scratchpad(run_flow: Run) -> None:
    """Each turn is numbered from 1 in every run and gets a new turn scratchpad; the run's scratchpad persists."""
    registry = HookRegistry()

    class Note(str):
        """A value kept in a scratchpad."""

    resumed = RunContext(turn=7)
    state = RunState(registry, resumed)
    run_flow(registry, state.turn())
    first = state.run
    first.scratchpad.insert(Note("run"))
    first.turn_scratchpad.insert(Note("turn"))
    assert first.turn_scratchpad.get(Note) == "turn"
    run_flow(registry, state.turn())
    second = state.run
    assert (first.turn, second.turn, state.turns) == (1, 2, 2)
    assert second.scratchpad is resumed.scratchpad
    assert second.turn_scratchpad is not first.turn_scratchpad
    assert second.turn_scratchpad.get(Note) == "run"  # the turn scope reads through to the run's


def test_pre_turn_deny_counts_only_the_turns_before(run_flow: Run) -> None:
    """A pre_turn deny at turn 3 reports the 2 turns the model was called for."""
    registry = HookRegistry()
    registry.pre_turn(lambda ctx: HookResult.deny("stop") if ctx.turn == 3 else HookResult.allow())
    state = RunState(registry, RunContext())
    outcomes = [run_flow(registry, state.turn()) for _ in range(3)]
    assert outcomes == [None, None, RunOutcome(status="stopped", reason="stop", turns=2)]


def test_a_prompt_denied_on_a_resumed_run_counts_every_turn_it_had(run_flow: Run) -> None:
    """A run resumed with a new prompt after 2 turns (a paused run's answers sent with one) that the prompt gate
    denies reports the 2 turns the model was called for, not 1."""
    registry = HookRegistry()
    registry.user_prompt_submit(lambda ctx: HookResult.deny("no") if ctx.content == "more" else HookResult.allow())
    state = RunState(registry, RunContext(), goal="list")
    assert run_flow(registry, state.start()) is None
    for _ in range(2):
        assert run_flow(registry, state.turn()) is None
    state.goal = "more"
    assert run_flow(registry, state.start()) == RunOutcome(status="stopped", reason="no", turns=2)


def test_stop_allow_stops_and_deny_keeps_going_with_its_reason(run_flow: Run) -> None:
    """At stop, an allow stops; a deny returns its reason as feedback and counts a continuation."""
    registry = HookRegistry()
    counts: list[int] = []

    @registry.stop
    def once_more(ctx: Any) -> HookResult:
        counts.append(ctx.continuation_count)
        return HookResult.deny("check the tests") if ctx.continuation_count == 0 else HookResult.allow()

    state = RunState(registry, RunContext())
    assert run_flow(registry, state.stop("done")) == "check the tests"
    assert run_flow(registry, state.stop("done")) is None
    assert counts == [0, 1]


@pytest.mark.parametrize("approve", [True, False])
def test_stop_ask_asks_whether_to_stop(run_flow: Run, approve: bool) -> None:
    """An ask at stop: approval stops; anything else keeps going with the ask's reason as feedback."""
    registry = HookRegistry()
    registry.stop(lambda ctx: HookResult.ask("stop now?"))
    registry.on_interaction(lambda ctx: HookResult.allow() if approve else HookResult.deny("no"))
    state = RunState(registry, RunContext())
    assert run_flow(registry, state.stop("done")) == (None if approve else "stop now?")


def test_end_fires_once_even_if_called_twice(run_flow: Run) -> None:
    """on_session_end fires once per run, with the first outcome, however often end is called."""
    registry = HookRegistry()
    seen = record(registry)
    state = RunState(registry, RunContext())
    run_flow(registry, state.end(RunOutcome(status="completed", turns=1)))
    run_flow(registry, state.end_with(ValueError("late")))
    assert points(seen) == [P.ON_SESSION_END]
    assert seen[0][1].outcome == RunOutcome(status="completed", turns=1)
    assert state.ended
    assert state.outcome == RunOutcome(status="completed", turns=1)


@pytest.mark.parametrize(
    "error", [asyncio.CancelledError(), KeyboardInterrupt(), StopRun("halt"), ValueError("boom")], ids=type
)
def test_a_failing_session_end_observer_never_replaces_the_exception_ending_the_run(
    run_flow: Run, error: BaseException
) -> None:
    """An on_session_end observer raising under on_error="raise" while a run ends by an exception is swallowed."""
    registry = HookRegistry()
    ended: list[RunOutcome] = []

    @registry.on_session_end(on_error="raise")
    def audit(ctx: Any) -> None:
        ended.append(ctx.outcome)
        raise RuntimeError("audit down")

    state = RunState(registry, RunContext())
    assert run_flow(registry, state.end_with(error)) is None
    assert ended == [outcome_for(error)]


def test_a_failing_session_end_observer_propagates_on_a_normal_end(run_flow: Run) -> None:
    """With no exception ending the run, a raising on_session_end observer's error reaches the caller."""
    registry = HookRegistry()
    registry.register(P.ON_SESSION_END, _broken, on_error="raise")
    with pytest.raises(ZeroDivisionError):
        run_flow(registry, RunState(registry, RunContext()).end(RunOutcome(status="completed")))


def test_stop_run_from_a_session_end_observer_is_ignored_on_a_normal_end(run_flow: Run) -> None:
    """The run is ending already: a StopRun from on_session_end does not escape."""
    registry = HookRegistry()

    @registry.on_session_end
    def halt(ctx: Any) -> None:
        raise StopRun("again")

    assert run_flow(registry, RunState(registry, RunContext()).end(RunOutcome(status="completed"))) is None


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        (StopRun("enough"), "stopped", "enough"),
        (asyncio.CancelledError(), "cancelled", "CancelledError"),
        (KeyboardInterrupt(), "cancelled", "KeyboardInterrupt"),
        (GeneratorExit(), "cancelled", "GeneratorExit"),
        (ValueError("bad"), "failed", "ValueError: bad"),
    ],
)
def test_outcome_for_maps_the_exception_ending_a_run(error: BaseException, status: str, reason: str) -> None:
    """StopRun is stopped with its reason, cancellation and interrupts are cancelled, anything else failed."""
    assert outcome_for(error, turns=3) == RunOutcome(status=status, reason=reason, turns=3)  # type: ignore[arg-type]


def test_drivers_perform_dispatches_with_the_registrys_methods(run_flow: Run) -> None:
    """A hand-written flow's Dispatch reaches the registry and the result is sent back."""
    registry = HookRegistry()
    registry.register(P.PRE_TURN, lambda ctx: HookResult.deny("x"), name="d")

    def flow() -> Steps[str | None]:
        from hookreg import PreTurnContext

        result = yield Dispatch("decide", P.PRE_TURN, PreTurnContext(prompt="p", turn=1))
        return result.decided_by  # type: ignore[no-any-return]

    assert run_flow(registry, flow()) == "d"


# --- values ----------------------------------------------------------------------------

SPELLINGS = {
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "MAX_TOKENS": FinishReason.LENGTH,
    "stop": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "STOP": FinishReason.STOP,
    "tool_calls": FinishReason.TOOL_CALLS,
    "tool_use": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "error": FinishReason.ERROR,
    "Error": FinishReason.ERROR,
    "whatever": FinishReason.OTHER,
    "": FinishReason.OTHER,
}


@pytest.mark.parametrize(("raw", "expected"), SPELLINGS.items())
def test_finish_reasons_map_case_insensitively(raw: str, expected: FinishReason) -> None:
    """Every spelling DESIGN §2 lists maps to its FinishReason; anything else is OTHER."""
    assert FinishReason.from_raw(raw) is expected
    assert finish_reason(raw) is expected


def test_no_finish_reason_is_none() -> None:
    """No reason stays None."""
    assert FinishReason.from_raw(None) is None


def test_turn_finished_context_keeps_the_raw_reason_and_says_truncated() -> None:
    """A raw string is normalised and kept as raw_finish_reason; truncated is finish_reason is LENGTH."""
    ctx = ModelTurnFinishedContext(
        turn=1,
        text="",
        tool_calls=(),
        finish_reason="MAX_TOKENS",  # type: ignore[arg-type]  # a provider's spelling, normalised at construction
        max_tokens=8,
        usage={},
    )
    assert (ctx.finish_reason, ctx.raw_finish_reason, ctx.truncated) == (FinishReason.LENGTH, "MAX_TOKENS", True)
    done = ModelTurnFinishedContext(
        turn=1, text="", tool_calls=(), finish_reason=FinishReason.STOP, max_tokens=None, usage={}, model="m"
    )
    assert (done.truncated, done.raw_finish_reason, done.message_id, done.model) == (False, None, None, "m")


def test_a_child_scratchpad_reads_through_and_writes_only_to_itself() -> None:
    """get/in fall back to the parent; insert, remove and update act on the child; the parent never sees them."""

    class Count(int):
        """A counter kept in a scratchpad."""

    parent = Scratchpad()
    parent.insert(Count(5))
    child = parent.child()
    assert child.get(Count) == 5
    assert Count in child
    assert child.update(Count, lambda n: Count(n + 1)) == 6  # starts from the parent's value
    assert (child.get(Count), parent.get(Count)) == (6, 5)
    assert child.remove(Count) == 6
    assert child.get(Count) == 5  # the parent's shows again
    assert child.remove(Count) is None
    assert parent.get(Count) == 5
    fresh = Scratchpad().child()
    assert fresh.update(Count, lambda n: Count(n + 1)) == 1
    assert Count not in Scratchpad()


def test_invalid_call_stop_is_a_value() -> None:
    """InvalidToolCallAction.stop has kind "stop" and carries its reason."""
    action = InvalidToolCallAction.stop("bad")
    assert (action.kind, action.reason) == ("stop", "bad")
    assert action == InvalidToolCallAction.stop("bad")


def test_request_patch_messages_merge_last_set_wins_logging_a_conflict() -> None:
    """messages take the last patch that sets them; two different values log patch_conflict."""
    one = (Message("user", "a"),)
    two = [Message("user", "b")]
    patch = RequestPatch(messages=two)  # type: ignore[arg-type]  # any sequence is stored as a tuple
    assert patch.messages == tuple(two)
    with structlog.testing.capture_logs() as logs:
        merged = RequestPatch(messages=one).merge(patch)
    assert merged.messages == tuple(two)
    assert [entry["field"] for entry in logs if entry["event"] == "patch_conflict"] == ["messages"]
    assert RequestPatch(messages=one).merge(RequestPatch()).messages == one


def test_adapters_never_decide_on_a_missing_reason() -> None:
    """Backstop: no adapter decides whether a tool runs from whether a reason or denial text is None."""
    adapters = pathlib.Path(__file__).parent.parent / "hookreg" / "adapters"
    pattern = re.compile(r"\b(reason|denial)\s+is\s+(not\s+)?None")
    offenders = [
        f"{path.name}:{number}"
        for path in sorted(adapters.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


def test_flows_skip_points_nobody_listens_to(run_flow: Run) -> None:
    """With no hooks, an invalid call still fails (NOT_FOUND), and start, turn, stop and end go on without dispatch."""
    registry = HookRegistry()
    verdict = call_gate(run_flow, registry, name="rm")
    assert (verdict.status, verdict.text) == ("failed", f"Error: LookupError: {verdict.error}")
    state = RunState(registry, RunContext(), goal="g")
    for steps in (state.start(), state.turn(), state.stop("done"), state.end(RunOutcome(status="completed"))):
        with pytest.raises(StopIteration) as done:
            next(steps)
        assert done.value.value is None
    assert state.ended
    assert repr(state) == f"RunState(run_id={state.run.run_id!r}, turns=1, ended=True)"


def test_closing_an_ending_flow_is_not_swallowed() -> None:
    """A flow closed while it waits for on_session_end lets GeneratorExit through, so close() works."""
    registry = HookRegistry()
    registry.on_session_end(collect([]))
    steps = RunState(registry, RunContext()).end_with(ValueError("boom"))
    assert isinstance(next(steps), Dispatch)
    steps.close()


def test_present_shows_strings_as_is_and_the_rest_as_json() -> None:
    """Strings stay as they are; JSON-able values become JSON; anything else its str()."""
    assert present("plain") == "plain"
    assert present({"a": [1]}) == '{"a": [1]}'
    loop: list[object] = []
    loop.append(loop)  # JSON refuses a circular value
    assert present(loop) == "[[...]]"


def test_shared_adapter_errors_read_as_the_house_style() -> None:
    """require_registry, refused_retry and missing_framework build the documented errors."""
    registry = HookRegistry()
    assert require_registry(registry, "a thing") is registry
    with pytest.raises(HookTypeError, match=r"Cannot build a thing from 42: it is not a HookRegistry"):
        require_registry(42, "a thing")
    error = refused_retry(2, "judge", ["shell"])
    assert isinstance(error, HookValueError)
    assert error.point is P.MODEL_TURN_FINISHED
    assert "Cannot retry turn 2 as hook 'judge' asked" in str(error)
    cause = ImportError("no module", name="strands")
    missing = missing_framework("strands", "strands", cause)
    assert missing.__cause__ is cause
    assert missing.name == "strands"
    assert "pip install 'hookreg[strands]'" in str(missing)


def test_bind_routes_a_flow_to_its_own_registry() -> None:
    """A bound flow's dispatches carry their registry, results and exceptions reach the flow, and close() closes it."""
    outer, inner = HookRegistry(), HookRegistry()
    inner.pre_tool_call_decide(lambda ctx: HookResult.deny("inner says no"))
    assert (
        lifecycle.run_flow(outer, bind(inner, gate(inner, RunContext(), "shell", "c", {}, known=KNOWN))).text
        == "inner says no"
    )
    inner.register(P.ON_SESSION_END, _broken, on_error="raise")
    ending = bind(inner, RunState(inner, RunContext()).end_with(KeyError("k")))
    op = next(ending)
    assert op.registry is inner
    with pytest.raises(StopIteration):
        ending.throw(ZeroDivisionError())  # the observer's failure, swallowed by end_with
    closing = bind(inner, RunState(inner, RunContext()).end(RunOutcome(status="completed")))
    with pytest.raises(ZeroDivisionError):  # performed with the op's own registry, whose observer raises
        perform(outer, next(closing))
    closing.close()
    with pytest.raises(StopIteration):
        next(closing)


def _broken(ctx: object) -> NoReturn:
    """A hook that fails with ZeroDivisionError."""
    raise ZeroDivisionError


def test_a_framework_flow_mixes_its_own_operations_with_dispatches() -> None:
    """`other` performs the flow's own operations (not a `Dispatch`), on both drivers; a failure is thrown back in."""
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.deny("no"))
    ctx = PreToolCallDecideContext(tool_name="shell", args={}, call_id="c")

    def flow() -> Any:
        verdict = yield Dispatch("decide", P.PRE_TOOL_CALL_DECIDE, ctx)
        answer = yield ("next-handler", verdict.reason)
        try:
            yield ("next-handler", "boom")
        except KeyError as exc:
            return answer, exc.args

    def handle(op: tuple[str, str]) -> str:
        if op[1] == "boom":
            raise KeyError("handler failed")
        return f"handled {op[1]}"

    async def ahandle(op: tuple[str, str]) -> str:
        return handle(op)

    assert lifecycle.run_flow(registry, flow(), handle) == ("handled no", ("handler failed",))
    assert asyncio.run(arun_flow(registry, flow(), ahandle)) == ("handled no", ("handler failed",))


@pytest.mark.parametrize(
    ("installed", "refused"),
    [("1.61.1", True), ("0.9", True), ("1.62.0", False), ("2.0", False), ("1.62.0.dev3", False), ("nightly", False)],
)
def test_a_framework_older_than_the_floor_is_refused_naming_the_release(
    monkeypatch: pytest.MonkeyPatch, installed: str, *, refused: bool
) -> None:
    """require_release names the installed and the needed release; newer, development and odd versions pass."""
    monkeypatch.setattr(importlib.metadata, "version", lambda name: installed)
    if refused:
        with pytest.raises(ImportError, match=rf"fw-dist {re.escape(installed)} is installed, but .*fw-dist>=1\.62"):
            require_release("fw", "fw-dist", (1, 62))
    else:
        require_release("fw", "fw-dist", (1, 62))


def test_a_framework_not_installed_is_left_to_the_import() -> None:
    """A distribution that is not installed raises nothing here: the adapter's import names the extra."""
    require_release("fw", "surely-not-an-installed-distribution-hookreg", (1, 0))


# --- runs paused for a human and never resumed (DESIGN §8) ---------------------------


class _Kept:
    """A paused run as an adapter keeps it: its RunState."""

    def __init__(self, state: lifecycle.RunState) -> None:
        self.state = state


class _Owner:
    """A wiring object."""


def test_paused_runs_end_cancelled_once_when_their_owner_goes() -> None:
    """Each run left in the mapping ends cancelled when the owner is collected; a resumed or ended one does not."""
    registry, ends = HookRegistry(), list[tuple[str, str, int]]()
    registry.on_session_end(lambda ctx: ends.append((ctx.outcome.status, ctx.outcome.reason, ctx.outcome.turns)))
    owner, runs = _Owner(), dict[str, _Kept | None]()
    lifecycle.keep_paused(owner, runs)
    paused = lifecycle.RunState(registry, RunContext())
    paused.turns = 2
    ended = lifecycle.RunState(registry, RunContext())
    lifecycle.run_flow(registry, ended.end(RunOutcome(status="completed", turns=1)))
    runs.update(paused=_Kept(paused), ended=_Kept(ended), clash=None)
    resumed = _Kept(lifecycle.RunState(registry, RunContext()))
    runs["resumed"] = resumed
    del runs["resumed"]
    del owner
    assert ends == [("completed", "", 1), ("cancelled", lifecycle.NOT_RESUMED, 2)]
    assert not resumed.state.ended
    lifecycle.cancel_paused([paused])  # ended already: nothing fires twice
    assert len(ends) == 2


@pytest.mark.parametrize("on_error", ["ignore", "raise"])
def test_a_failing_end_hook_of_a_paused_run_goes_no_further(
    on_error: Literal["ignore", "raise"], capsys: pytest.CaptureFixture[str]
) -> None:
    """Nobody awaits a paused run's end: a hook's failure is logged and dropped (under "raise", where it stops)."""
    registry, ends = HookRegistry(), list[str]()

    @registry.on_session_end(on_error=on_error)
    def fails(ctx: OnSessionEndContext) -> None:
        raise ZeroDivisionError

    registry.on_session_end(lambda ctx: ends.append(ctx.outcome.status))
    lifecycle.cancel_paused([lifecycle.RunState(registry, RunContext())])
    assert ends == (["cancelled"] if on_error == "ignore" else [])
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("inside_a_loop", [False, True])
def test_an_async_end_hook_of_a_paused_run_is_awaited(inside_a_loop: bool) -> None:
    """Outside a loop the end is awaited here; inside one (collected in a coroutine), in a thread of its own."""
    registry, ends = HookRegistry(), list[str]()

    @registry.on_session_end
    async def end(ctx: OnSessionEndContext) -> None:
        await asyncio.sleep(0)
        ends.append(ctx.outcome.status)

    state = lifecycle.RunState(registry, RunContext())
    if inside_a_loop:

        async def cancel() -> None:
            lifecycle.cancel_paused([state])

        asyncio.run(cancel())
    else:
        lifecycle.cancel_paused([state])
    assert ends == ["cancelled"]


def test_an_adapter_names_why_its_kept_runs_end() -> None:
    """keep_paused(reason=...): an adapter that cannot tell a pause from a run ended out of its sight says so."""
    registry, reasons = HookRegistry(), list[str]()
    registry.on_session_end(lambda ctx: reasons.append(ctx.outcome.reason))
    owner = _Owner()
    lifecycle.keep_paused(owner, {"run": _Kept(lifecycle.RunState(registry, RunContext()))}, "left open")
    del owner
    assert reasons == ["left open"]
