"""RunResult.failures: every hook that failed during a run, as logged, so a broken gate never goes unseen."""

from __future__ import annotations

import asyncio
import logging

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    NotificationContext,
    PostToolCallContext,
    PreToolCallDecideContext,
)
from hookreg.harness import Harness, HookFailure, RunResult, ScriptedModel, ScriptedTurn

from .conftest import Drive


def shell(command: str) -> str:
    return f"ran {command}"


def broken_gate_registry() -> HookRegistry:
    """A registry whose only gate raises, so every tool call is denied (fail closed)."""
    registry = HookRegistry()

    @registry.pre_tool_call_decide(name="broken")
    def broken(ctx: PreToolCallDecideContext) -> HookResult:
        raise ValueError(ctx.args["command"])  # the exception's text never reaches a HookFailure

    return registry


def two_calls() -> ScriptedModel:
    return ScriptedModel(
        [
            ScriptedTurn.calling("shell", {"command": "ls"}),
            ScriptedTurn.calling("shell", {"command": "pwd"}),
            ScriptedTurn(text="done"),
        ]
    )


def test_a_run_whose_calls_a_failing_gate_denied_lists_each_failure(drive: Drive) -> None:
    """The run completes (the gate failed closed) and its result names the point, the hook and what went wrong."""
    result = drive(Harness(two_calls(), [shell], broken_gate_registry()), "go")
    assert result.outcome.status == "completed"
    failure = HookFailure(point="pre_tool_call_decide", hook="broken", error="raised ValueError")
    assert result.failures == (failure, failure)
    assert result.failures[0].point == HookPoint.PRE_TOOL_CALL_DECIDE


def test_a_run_without_failures_lists_none(drive: Drive) -> None:
    """A run whose hooks all worked has an empty tuple."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.allow(), name="ok")
    assert drive(Harness(two_calls(), [shell], registry), "go").failures == ()


def test_failures_are_collected_when_the_hookreg_logger_is_silenced(caplog: pytest.LogCaptureFixture) -> None:
    """Silencing hookreg's log records hides nothing from the result."""
    caplog.set_level(logging.CRITICAL + 1, logger="hookreg")
    result = Harness(two_calls(), [shell], broken_gate_registry()).run("go")
    assert [f.hook for f in result.failures] == ["broken", "broken"]
    assert not caplog.records


def test_a_wrong_return_and_a_timeout_are_failures() -> None:
    """A notification observer returning a value and an async one running past its timeout are both listed."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.ask("sure?"), name="asks")
    registry.register(HookPoint.ON_INTERACTION, lambda ctx: True, name="says-true")  # type: ignore[arg-type,return-value]  # the wrong return under test

    @registry.notification(timeout=0.01, name="slow")
    async def slow(ctx: NotificationContext) -> None:
        await asyncio.sleep(10)

    model = ScriptedModel([ScriptedTurn.calling("shell", {"command": "ls"}), ScriptedTurn(text="done")])
    result = asyncio.run(Harness(model, [shell], registry).arun("go"))
    assert result.failures == (
        HookFailure("notification", "slow", "timed out after 0.01 s"),
        HookFailure("on_interaction", "says-true", "returned bool; expected HookResult"),
    )


def test_a_subagents_failures_are_its_own_and_its_parents() -> None:
    """The nested run lists its own failures; the run that called it lists them too, after its own."""
    inner = ScriptedModel([ScriptedTurn.calling("shell", {"command": "ls"}), ScriptedTurn(text="inner done")])
    helper = Harness(inner, [shell], broken_gate_registry())
    registry = HookRegistry()

    @registry.notification(name="divides")
    def divides(ctx: NotificationContext) -> None:
        1 / 0  # noqa: B018 -- the failure under test

    nested: list[object] = []

    @registry.post_tool_call
    def keep(ctx: PostToolCallContext) -> None:
        nested.append(ctx.raw_result)

    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.ask("delegate?"), name="asks")
    registry.register(HookPoint.ON_INTERACTION, lambda ctx: HookResult.allow(), name="yes")
    outer = ScriptedModel([ScriptedTurn.calling("research", {"goal": "g"}), ScriptedTurn(text="done")])
    result = Harness(outer, [helper.as_tool("research")], registry).run("go")
    [sub] = nested
    assert isinstance(sub, RunResult)
    assert sub.failures == (HookFailure("pre_tool_call_decide", "broken", "raised ValueError"),)
    assert result.failures == (HookFailure("notification", "divides", "raised ZeroDivisionError"), *sub.failures)
