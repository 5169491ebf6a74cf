"""Tests for hookreg.testing.conformance: a correct in-process driver passes, broken ones fail the right scenario."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    OnInteractionContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PreToolCallDecideContext,
    ToolErrorKind,
    TransformToolResultContext,
)
from hookreg.testing.conformance import (
    SCENARIOS,
    TOOL_NAME,
    AgentRun,
    Driver,
    RecordingTool,
    Scenario,
    echo,
    run_conformance,
)


def loop_driver(
    *, gate: bool = True, chain: bool = True, error_hook: bool = True, observe_twice: bool = False
) -> Driver:
    """Return an in-process agent loop built on the registry; each flag breaks one duty when False/True."""

    def drive(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> AgentRun:
        ctx = PreToolCallDecideContext(tool_name=TOOL_NAME, args=args, call_id="call-1")
        if chain:
            resolution = registry.resolve_tool_call(ctx)
            effective, result = resolution.args, resolution.result
        else:  # each transform sees the original args; only the last one counts
            effective = args
            for reg in registry.callbacks(HookPoint.TRANSFORM_TOOL_INPUT):
                effective = reg.callback(ctx) or effective  # type: ignore[assignment]  # a transform
            result = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx)
            if not result.allowed:
                denied = PermissionDeniedContext(
                    tool_name=TOOL_NAME, args=args, call_id="call-1", reason=result.reason, decided_by=result.decided_by
                )
                registry.notify(HookPoint.PERMISSION_DENIED, denied)
        if result.decision == "ask":
            question = OnInteractionContext(question=result.reason, options=["allow", "deny"], tool_name=TOOL_NAME)
            result = registry.decide(HookPoint.ON_INTERACTION, question)
        if gate and not result.allowed:
            return AgentRun(tool_output_seen_by_model=result.reason)
        started = time.perf_counter()
        try:
            raw = tool(**effective)
        except Exception as exc:  # noqa: BLE001  # a loop reports every tool failure to the model
            elapsed = (time.perf_counter() - started) * 1000
            message = str(exc)
            registry.notify(
                HookPoint.POST_TOOL_CALL_FAILURE,
                PostToolCallFailureContext(
                    tool_name=TOOL_NAME, args=effective, call_id="call-1", error=exc, duration_ms=elapsed
                ),
            )
            if error_hook:
                message = registry.transform(
                    HookPoint.ON_TOOL_ERROR,
                    OnToolErrorContext(
                        tool_name=TOOL_NAME,
                        args=effective,
                        call_id="call-1",
                        error=exc,
                        kind=ToolErrorKind.EXCEPTION,
                        message=message,
                    ),
                )
            return AgentRun(tool_output_seen_by_model=message)
        shown = registry.transform(
            HookPoint.TRANSFORM_TOOL_RESULT,
            TransformToolResultContext(
                tool_name=TOOL_NAME, args=effective, call_id="call-1", raw_result=raw, presentation=raw
            ),
        )
        post = PostToolCallContext(
            tool_name=TOOL_NAME,
            args=effective,
            call_id="call-1",
            result=shown,
            raw_result=raw,
            duration_ms=(time.perf_counter() - started) * 1000,
            metadata={},
        )
        for _ in range(2 if observe_twice else 1):
            registry.notify(HookPoint.POST_TOOL_CALL, post)
        return AgentRun(tool_output_seen_by_model=shown)

    return drive


def test_scenarios_are_the_documented_duties_in_order() -> None:
    """The kit exposes the documented scenarios in their documented order."""
    assert [s.name for s in SCENARIOS] == [
        "deny_reaches_model",
        "input_transforms_chain",
        "error_text_from_on_tool_error",
        "observers_fire_once",
        "raising_gate_denies",
        "ask_goes_to_on_interaction",
        "result_rewrite_reaches_model",
    ]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_correct_driver_passes(scenario: Scenario) -> None:
    """A loop that honours every hook passes each scenario."""
    scenario.check(loop_driver())


def test_run_conformance_runs_every_scenario() -> None:
    """run_conformance passes a correct driver and reports the first scenario a broken one fails."""
    run_conformance(loop_driver())
    with pytest.raises(AssertionError, match="'deny_reaches_model' failed: the denied tool ran"):
        run_conformance(loop_driver(gate=False))


@pytest.mark.parametrize(
    ("driver", "failing"),
    [
        (loop_driver(gate=False), {"deny_reaches_model", "raising_gate_denies", "ask_goes_to_on_interaction"}),
        (loop_driver(chain=False), {"input_transforms_chain"}),
        (loop_driver(error_hook=False), {"error_text_from_on_tool_error"}),
        (loop_driver(observe_twice=True), {"observers_fire_once", "result_rewrite_reaches_model"}),
    ],
    ids=["ignores-gate", "unchained-transforms", "ignores-error-hook", "double-observer"],
)
def test_broken_driver_fails_exactly_the_right_scenarios(driver: Driver, failing: set[str]) -> None:
    """A loop that breaks one duty fails the scenarios that check that duty and passes the others."""
    for scenario in SCENARIOS:
        if scenario.name in failing:
            with pytest.raises(AssertionError, match=f"conformance scenario {re.escape(repr(scenario.name))} failed"):
                scenario.check(driver)
        else:
            scenario.check(driver)


def test_driver_exception_is_reported_with_the_scenario() -> None:
    """A driver that raises fails the scenario with a message naming it and the exception."""

    def crashing(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> AgentRun:
        raise RuntimeError("no model")

    with pytest.raises(
        AssertionError,
        match=r"'observers_fire_once' failed: the driver raised RuntimeError\('no model'\)",
    ):
        SCENARIOS[3].check(crashing)


def test_driver_must_return_an_agent_run() -> None:
    """A driver returning a bare string fails with a message saying what it returned."""

    def bare(registry: HookRegistry, tool: Callable[..., str], args: Mapping[str, object]) -> AgentRun:
        return "hello"  # type: ignore[return-value]  # the mistake under test

    with pytest.raises(AssertionError, match="returned 'hello', not an AgentRun"):
        SCENARIOS[3].check(bare)


def test_reference_tool_echoes_records_and_fails_on_fail() -> None:
    """echo wraps text in prefix and suffix, raises on 'fail', and RecordingTool records each call."""
    assert echo("b", prefix="a", suffix="c") == "abc"
    tool = RecordingTool()
    assert tool(text="x") == "x"
    with pytest.raises(RuntimeError, match="echo failed"):
        tool(text="fail")
    assert tool.calls == [{"text": "x"}, {"text": "fail"}]
