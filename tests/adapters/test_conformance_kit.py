"""Tests for hookreg.testing.conformance: the reference loop passes, a loop with one planted bug fails its rows."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import structlog

from hookreg import (
    Decision,
    HookPoint,
    HookRegistry,
    HookResult,
    PermissionDeniedContext,
    PreToolCallDecideContext,
    ToolCallRequest,
    ToolCallResolution,
)
from hookreg._lifecycle import Dispatch, aperform, succeeded
from hookreg.harness import Harness, ModelChunk, ModelRequest, ModelResponse, RunFinished, TextDelta, _loop
from hookreg.testing.conformance import (
    RUN_SCENARIOS,
    Answer,
    RecordingTool,
    RunReport,
    echo,
    is_limit,
    run_contract_cases,
)

ROWS = {scenario.name: scenario for scenario in RUN_SCENARIOS}


@dataclass
class KitModel:
    """A harness model playing the kit's scripted answers."""

    answers: tuple[Answer, ...]
    name: str = "kit-model"
    calls: int = 0

    def stream(self, request: ModelRequest, /) -> Iterator[ModelChunk]:
        answer = self.answers[self.calls]
        self.calls += 1
        if answer.error is not None:
            raise answer.error
        calls = tuple(
            ToolCallRequest(c.call_id, c.tool_name, {} if isinstance(c.args, str) else c.args) for c in answer.calls
        )
        raw = {c.call_id: c.args for c in answer.calls if isinstance(c.args, str)}
        finish = "MAX_TOKENS" if answer.truncated else ("tool_calls" if calls else "stop")
        if answer.text:
            yield TextDelta(answer.text)
        yield ModelResponse(text=answer.text, tool_calls=calls, finish_reason=finish, raw_arguments=raw)

    async def astream(self, request: ModelRequest, /) -> AsyncIterator[ModelChunk]:
        if self.answers[self.calls].hang:
            await asyncio.Event().wait()  # until the kit cancels the run
        for chunk in self.stream(request):
            yield chunk


@dataclass
class HarnessWiring:
    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]
    crash: bool = False
    retries: int = 0

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        if self.crash:
            raise RuntimeError("no model")
        tools = [_named(n, fn, self.retries) for n, fn in self.tools.items()]
        harness = Harness(KitModel(answers), tools, self.registry)
        if streamed:
            items = [item async for item in harness.astream(prompt)]
            result = next(item.result for item in items if isinstance(item, RunFinished))
        else:
            result = await harness.arun(prompt)
        messages = {m.tool_call_id: m.content for m in result.history if m.role == "tool" and m.tool_call_id}
        return RunReport(tool_messages=messages, output=result.output)


def _named(name: str, fn: Callable[..., str], retries: int = 0) -> Callable[..., str]:
    def tool(text: str, prefix: str = "", suffix: str = "") -> str:
        for _ in range(retries):  # a planted bug: a failing tool is run again behind the model's back
            with contextlib.suppress(Exception):
                return fn(text=text, prefix=prefix, suffix=suffix)
        return fn(text=text, prefix=prefix, suffix=suffix)

    tool.__name__ = name
    return tool


@dataclass
class HarnessFramework:
    """The reference loop as a kit `Framework`."""

    name: str = "kit-harness"
    streams: bool = True
    stop_raises: bool = False
    limits: Mapping[str, str] = field(default_factory=dict)
    crash: bool = False
    retries: int = 0

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> HarnessWiring:
        return HarnessWiring(registry, tools, self.crash, self.retries)


# A planted bug: the harness with one kind of dispatch done wrong. Each gets the real dispatch, the registry
# and the operation, and does what a buggy loop would do instead.
Perform = Callable[[HookRegistry, Dispatch], Awaitable[object]]
Bug = Callable[[Perform, HookRegistry, Dispatch], Awaitable[object]]


async def no_permission_denied_after_an_ask(perform: Perform, registry: HookRegistry, op: Dispatch) -> object:
    """Never fires permission_denied for an ask that was not approved (resolve_tool_call fires it for a deny)."""
    return None if op.point is HookPoint.PERMISSION_DENIED else await perform(registry, op)


async def ignores_the_gate(perform: Perform, registry: HookRegistry, op: Dispatch) -> object:
    """Transforms the call and asks the gate, then runs the tool whatever the gate said."""
    reply = await perform(registry, op)
    if isinstance(reply, ToolCallResolution):
        return ToolCallResolution(args=reply.args, result=HookResult.allow(), rewritten=reply.rewritten)
    return reply


async def gates_the_model_s_arguments(perform: Perform, registry: HookRegistry, op: Dispatch) -> object:
    """Asks the gate about the arguments the model sent, not the ones the transforms made."""
    if op.method != "resolve_tool_call":
        return await perform(registry, op)
    ctx = op.ctx
    assert isinstance(ctx, PreToolCallDecideContext)
    verdict = await perform(registry, Dispatch("decide", HookPoint.PRE_TOOL_CALL_DECIDE, ctx, op.registry))
    args = await perform(registry, Dispatch("transform", HookPoint.TRANSFORM_TOOL_INPUT, ctx, op.registry))
    assert isinstance(verdict, HookResult)
    assert isinstance(args, Mapping)
    if verdict.decision is Decision.DENY:
        denied = PermissionDeniedContext(
            tool_name=ctx.tool_name,
            args=args,
            call_id=ctx.call_id,
            reason=verdict.reason,
            decided_by=verdict.decided_by,
            run=ctx.run,
        )
        await perform(registry, Dispatch("notify", HookPoint.PERMISSION_DENIED, denied, op.registry))
    return ToolCallResolution(args=args, result=verdict, rewritten=args is not ctx.args)


async def observes_twice(perform: Perform, registry: HookRegistry, op: Dispatch) -> object:
    """Fires post_tool_call twice for one call."""
    if op.point is HookPoint.POST_TOOL_CALL:
        await perform(registry, op)
    return await perform(registry, op)


async def keeps_the_tool_s_own_text(perform: Perform, registry: HookRegistry, op: Dispatch) -> object:
    """Runs on_tool_error and transform_tool_result, then shows the model the text they started from."""
    reply = await perform(registry, op)
    if op.point is HookPoint.ON_TOOL_ERROR:
        return getattr(op.ctx, "message")  # noqa: B009  # every on_tool_error context has one
    if op.point is HookPoint.TRANSFORM_TOOL_RESULT:
        return getattr(op.ctx, "presentation")  # noqa: B009  # every transform_tool_result context has one
    return reply


@pytest.fixture
def plant(monkeypatch: pytest.MonkeyPatch) -> Callable[[Bug], None]:
    """Plant a bug in the harness's async dispatch for the rest of the test."""

    def planting(bug: Bug) -> None:
        async def planted(registry: HookRegistry, op: Dispatch) -> object:
            return await bug(aperform, registry, op)

        monkeypatch.setattr(_loop, "aperform", planted)

    return planting


def failing_rows(framework: HarnessFramework) -> set[str]:
    """The rows `framework` fails, blocking."""
    failed = set()
    for scenario in RUN_SCENARIOS:
        try:
            scenario.check(framework)
        except AssertionError:
            failed.add(scenario.name)
    return failed


def test_the_rows_are_the_documented_contract_in_order() -> None:
    """The kit's rows, in the order the docs' adapter pages list them."""
    assert list(ROWS) == [
        "parallel_calls_one_denied",
        "deny_with_empty_reason",
        "raising_gate_denies",
        "input_transforms_chain",
        "observers_fire_once",
        "result_rewrite_reaches_model",
        "interaction_answers_do_not_fail_open",
        "interaction_deny_fires_permission_denied",
        "tool_ask_notifies_first",
        "non_object_arguments",
        "malformed_arguments",
        "arguments_failing_the_schema",
        "unknown_tool",
        "tool_not_offered",
        "tool_fails_by_exception_and_by_error_result",
        "stop_run_from_a_gate",
        "stop_run_from_an_observer",
        "stop_run_from_a_tool_hook",
        "model_error_ends_failed",
        "cancellation_ends_cancelled",
        "wiring_reused_for_a_second_run",
        "concurrent_runs_on_one_wiring",
        "run_level_ask",
        "finish_reasons_mapped",
        "turn_scratchpad_fresh_each_turn",
    ]


@pytest.mark.parametrize(
    ("bug", "failing"),
    [
        (None, set()),
        (no_permission_denied_after_an_ask, {"interaction_deny_fires_permission_denied"}),
        (
            ignores_the_gate,
            {
                "parallel_calls_one_denied",
                "deny_with_empty_reason",
                "raising_gate_denies",
                "interaction_answers_do_not_fail_open",
                "interaction_deny_fires_permission_denied",
                "tool_ask_notifies_first",
                "wiring_reused_for_a_second_run",
            },
        ),
        (gates_the_model_s_arguments, {"input_transforms_chain"}),
        (observes_twice, {"observers_fire_once", "result_rewrite_reaches_model", "parallel_calls_one_denied"}),
        (keeps_the_tool_s_own_text, {"result_rewrite_reaches_model", "tool_fails_by_exception_and_by_error_result"}),
    ],
    ids=lambda value: "intact" if value is None else (value.__name__ if callable(value) else ""),
)
def test_a_planted_bug_fails_exactly_the_rows_that_check_that_duty(
    plant: Callable[[Bug], None], bug: Bug | None, failing: set[str]
) -> None:
    """The harness passes every row; with one duty broken, it fails the rows checking that duty and passes the rest."""
    if bug is not None:
        plant(bug)
    assert failing_rows(HarnessFramework()) == failing


def test_a_loop_running_a_failed_tool_again_fails_the_tool_failure_row() -> None:
    """A loop that runs a failing tool a second time before reporting the failure fails that row only."""
    assert failing_rows(HarnessFramework(retries=1)) == {"tool_fails_by_exception_and_by_error_result"}


def test_a_loop_losing_an_approved_call_s_result_fails_the_ask_row(
    plant: Callable[[Bug], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop that runs a call on_interaction approved but shows the model an empty result fails the ask row only."""
    approvals: list[bool] = []

    async def note_approvals(perform: Perform, registry: HookRegistry, op: Dispatch) -> object:
        reply = await perform(registry, op)
        if op.point is HookPoint.ON_INTERACTION:
            approvals.append(isinstance(reply, HookResult) and reply.allowed)
        return reply

    real = succeeded  # what the harness calls for a tool that returned

    def forgetting(*args: Any, **kwargs: Any) -> Generator[Any, Any, str]:
        text = yield from real(*args, **kwargs)
        return "" if approvals and approvals.pop() else text

    plant(note_approvals)
    monkeypatch.setattr(_loop, "succeeded", forgetting)
    assert failing_rows(HarnessFramework()) == {"tool_ask_notifies_first"}


def test_a_failed_row_names_itself_the_mode_and_the_framework(plant: Callable[[Bug], None]) -> None:
    """The AssertionError says which row failed, blocking or streamed, on which framework, and what went wrong."""
    plant(no_permission_denied_after_an_ask)
    with pytest.raises(
        AssertionError,
        match=re.escape(
            "run-contract scenario 'interaction_deny_fires_permission_denied' (streamed) failed on kit-harness: "
            "permission_denied fired 0 times after an unanswered ask, expected once"
        ),
    ):
        ROWS["interaction_deny_fires_permission_denied"].check(HarnessFramework(), streamed=True)


def test_a_wiring_that_raises_fails_the_row_saying_what_it_raised() -> None:
    """An exception out of the wiring (not the contract's own) fails the row, naming the exception."""
    with pytest.raises(AssertionError, match=r"'observers_fire_once' \(blocking\) failed on kit-harness: it raised "):
        ROWS["observers_fire_once"].check(HarnessFramework(crash=True))


def test_the_failing_gate_row_keeps_its_expected_failure_off_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    """The row's own exploding gate logs nothing an application sees; another hook's failure afterwards still does."""
    caplog.set_level(logging.WARNING, logger="hookreg")
    ROWS["raising_gate_denies"].check(HarnessFramework())
    assert [r.getMessage() for r in caplog.records] == []

    registry = HookRegistry()

    @registry.pre_tool_call_decide(name="kit-exploding-gate")
    def exploding_gate(ctx: PreToolCallDecideContext) -> HookResult:
        raise ConnectionError

    ctx = PreToolCallDecideContext(tool_name="echo", args={}, call_id="call-1")
    assert not registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx).allowed
    assert [getattr(r, "event", None) for r in caplog.records] == ["hook_failed"]


@pytest.mark.parametrize("streams", [True, False])
def test_limits_leave_out_a_row_or_one_mode_of_it(streams: bool) -> None:
    """A limit named for a row leaves out both modes; ``<row>/streamed`` leaves out that mode only."""
    framework = HarnessFramework(
        streams=streams, limits={"run_level_ask": "no run-level ask", "finish_reasons_mapped/streamed": "no reasons"}
    )
    cases = {(scenario.name, streamed) for scenario, streamed in run_contract_cases(framework)}
    modes = {False, True} if streams else {False}
    assert cases == {(name, mode) for name in ROWS for mode in modes} - {
        ("run_level_ask", False),
        ("run_level_ask", True),
        ("finish_reasons_mapped", True),
    }
    assert is_limit(framework, "run_level_ask", streamed=False)
    assert is_limit(framework, "finish_reasons_mapped", streamed=True)
    assert not is_limit(framework, "finish_reasons_mapped", streamed=False)


def test_reference_tool_echoes_records_and_fails_on_fail() -> None:
    """echo wraps text in prefix and suffix, raises on 'fail', and RecordingTool records each call."""
    assert echo("b", prefix="a", suffix="c") == "abc"
    tool = RecordingTool()
    assert tool(text="x") == "x"
    with pytest.raises(RuntimeError, match="echo failed"):
        tool(text="fail")
    assert tool.calls == [{"text": "x"}, {"text": "fail"}]


@pytest.mark.parametrize("through_structlog", [False, True], ids=["stdlib", "structlog"])
def test_a_passing_run_prints_nothing_where_logging_is_not_set_up(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, through_structlog: bool
) -> None:
    """With no log handler, a passing kit run prints nothing, also through structlog; another failure still prints."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # no handler: Python's last resort prints to stderr
    if through_structlog:
        structlog.configure()  # the conftest fixture resets it after the test
    for scenario, streamed in run_contract_cases(HarnessFramework()):
        scenario.check(HarnessFramework(), streamed=streamed)
    assert capsys.readouterr() == ("", "")

    registry = HookRegistry()

    @registry.pre_tool_call_decide(name="app-gate")
    def app_gate(ctx: PreToolCallDecideContext) -> HookResult:
        raise ConnectionError

    registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(tool_name="echo", args={}, call_id="c"))
    assert "hook_failed" in capsys.readouterr().err
