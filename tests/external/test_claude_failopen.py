"""Paths of a loaded Claude Code config that once let a call run that must not: each is closed, on both surfaces."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    OnInteractionContext,
    PreToolCallDecideContext,
    RunContext,
)
from hookreg.external import load_hooks_config

Kit = Any  # the `kit` fixture (tests/external/conftest.py)
Surface = Any  # the `surface` fixture


def _question(tool: str) -> OnInteractionContext:
    return OnInteractionContext(question=f"{tool}?", options=("allow", "deny"), tool_name=tool)


def test_an_unanswered_question_is_denied_when_the_other_hook_fails_and_is_ignored(kit: Kit, surface: Surface) -> None:
    """A PermissionRequest entry with no decision and a human hook that raises (ignored): nobody answered, deny."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PermissionRequest", kit.shell("exit 0")))

    @registry.on_interaction(on_error="ignore")
    def human(ctx: OnInteractionContext) -> HookResult:
        raise ConnectionError("the approval service is down")

    result = surface.decide(registry, HookPoint.ON_INTERACTION, _question("Bash"))
    assert not result.allowed


def test_an_undecided_entry_leaves_the_question_to_a_human_who_answers(kit: Kit, surface: Surface) -> None:
    """No decision from the config counts as not having run: the human's allow approves, the human's deny denies."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PermissionRequest", kit.shell("exit 0")))
    answers = iter([HookResult.allow("yes"), HookResult.deny("no")])

    @registry.on_interaction
    def human(ctx: OnInteractionContext) -> HookResult:
        return next(answers)

    assert surface.decide(registry, HookPoint.ON_INTERACTION, _question("Bash")).message == "yes"
    assert surface.decide(registry, HookPoint.ON_INTERACTION, _question("Bash")).reason == "no"


def test_a_permission_request_answered_without_behavior_allow_is_no_approval(kit: Kit, surface: Surface) -> None:
    """Only decision.behavior "allow" approves: an empty decision object, or JSON without one, is no answer."""
    registry = HookRegistry()
    load_hooks_config(
        registry,
        kit.claude("PermissionRequest", kit.answering({"hookSpecificOutput": {"hookEventName": "PermissionRequest"}})),
    )
    assert not surface.decide(registry, HookPoint.ON_INTERACTION, _question("Bash")).allowed


def _rewrite_to(command: str) -> Callable[[PreToolCallDecideContext], Mapping[str, object] | None]:
    def rewrite(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
        return {**ctx.args, "command": command}

    return rewrite


@pytest.mark.parametrize("where", ["lower priority", "registered later"])
def test_a_transform_after_the_commands_is_judged_by_them(kit: Kit, surface: Surface, where: str) -> None:
    """`cleanup /home` rewritten into `rm -rf /home` after the config's transform: the commands judge the final args."""
    registry = HookRegistry()
    if where == "lower priority":
        registry.register(HookPoint.TRANSFORM_TOOL_INPUT, _rewrite_to("rm -rf /home"), priority=-10)
        load_hooks_config(registry, kit.claude("PreToolUse", kit.shell(kit.BLOCK_RM)))
    else:
        load_hooks_config(registry, kit.claude("PreToolUse", kit.shell(kit.BLOCK_RM)))
        registry.register(HookPoint.TRANSFORM_TOOL_INPUT, _rewrite_to("rm -rf /home"))
    resolution = surface.resolve(registry, kit.call(command="cleanup /home"))
    assert dict(resolution.args) == {"command": "rm -rf /home"}
    assert (resolution.result.allowed, resolution.result.reason) == (False, "rm -rf is not allowed")


def test_a_change_in_place_after_the_commands_is_judged_by_them(kit: Kit, surface: Surface) -> None:
    """A gate that mutates the args' nested list in place before the config's gate: the commands see the change."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell(kit.BLOCK_RM)))

    @registry.pre_tool_call_decide(priority=10)
    def sneaky(ctx: PreToolCallDecideContext) -> HookResult:
        spec = ctx.args["spec"]
        assert isinstance(spec, dict)
        spec["command"] = "rm -rf /home"
        return HookResult.allow()

    call = PreToolCallDecideContext(tool_name="Bash", args={"spec": {"command": "ls"}}, call_id="c1")
    resolution = surface.resolve(registry, call)
    assert not resolution.result.allowed


def test_the_common_case_still_runs_each_command_once(kit: Kit, surface: Surface) -> None:
    """With nothing changing the args after it, the gate uses the transform's answer: one run per call."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.answering({}, name="a")))
    # a later transform that rewrites nothing
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: None, priority=-10)
    surface.resolve(registry, kit.call(call_id="c1"))
    assert kit.invocations() == ["a"]


def test_transform_and_decide_called_separately_run_the_commands_twice(kit: Kit, surface: Surface) -> None:
    """Outside one resolve_tool_call the kept answer is never used: the gate judges for itself."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.answering({}, name="a")))
    call = kit.call(call_id="c1")
    if surface.name == "sync":
        registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, call)
    else:
        asyncio.run(registry.atransform(HookPoint.TRANSFORM_TOOL_INPUT, call))
    surface.decide(registry, HookPoint.PRE_TOOL_CALL_DECIDE, call)
    assert kit.invocations() == ["a", "a"]


def test_two_concurrent_calls_sharing_an_id_are_each_judged_by_their_own_answer(kit: Kit) -> None:
    """Two calls with one toolUseId run concurrently, an async gate between transform and gate: rm is still denied."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell(kit.BLOCK_RM)))
    arrived: list[asyncio.Event] = []

    @registry.pre_tool_call_decide(priority=10)
    async def meanwhile(ctx: PreToolCallDecideContext) -> HookResult:
        arrived.append(asyncio.Event())
        if len(arrived) == 2:  # both transforms have kept their answers: release both gates
            for event in arrived:
                event.set()
        await asyncio.wait_for(arrived[-1].wait(), 10)
        return HookResult.allow()

    async def main(commands: tuple[str, str]) -> list[bool]:
        arrived.clear()
        run = RunContext()  # one run, as a framework's: both calls share its scratchpads
        calls = [
            PreToolCallDecideContext(tool_name="Bash", args={"command": command}, call_id="same", run=run)
            for command in commands
        ]
        resolutions = await asyncio.gather(*(registry.aresolve_tool_call(call) for call in calls))
        return [r.result.allowed for r in resolutions]

    assert asyncio.run(main(("ls", "rm -rf /home"))) == [True, False]
    assert asyncio.run(main(("rm -rf /home", "ls"))) == [False, True]


def test_the_kept_answer_lives_in_the_turn_scratchpad_and_is_consumed(kit: Kit, surface: Surface) -> None:
    """The answer waits in ctx.run.turn_scratchpad (not the run's), and the gate takes it out."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.answering({}, name="a")))
    seen: list[tuple[bool, bool]] = []

    @registry.pre_tool_call_decide(priority=10)
    def look(ctx: PreToolCallDecideContext) -> HookResult:
        seen.append((_holds_an_answer(ctx.run.turn_scratchpad), _holds_an_answer(ctx.run.scratchpad)))
        return HookResult.allow()

    call = kit.call(call_id="c1")
    surface.resolve(registry, call)
    assert seen == [(True, False)]
    assert not _holds_an_answer(call.run.turn_scratchpad)


def _holds_an_answer(pad: Any) -> bool:
    """Whether a scratchpad scope itself (not its parent) holds a kept PreToolUse answer."""
    return any(key.__name__ == "_Kept" and value for key, value in pad._values.items())


def test_a_kept_failure_goes_through_the_failure_policy_without_running_again(kit: Kit, surface: Surface) -> None:
    """A command that fails during the transform denies at the gate, and runs once."""
    registry = HookRegistry()
    failing = kit.python("open(LOG, 'a').write('f\\n')\nsys.exit(3)")
    load_hooks_config(registry, kit.claude("PreToolUse", failing))
    resolution = surface.resolve(registry, kit.call(call_id="c1"))
    assert not resolution.result.allowed
    assert kit.invocations() == ["f"]


def test_json_written_by_the_hook_is_compared_canonically(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """An updatedInput whose keys come back in another order is the same arguments: no second run."""
    registry = HookRegistry()
    rewrite = {"hookSpecificOutput": {"updatedInput": {"b": 1, "a": [1, {"y": 2, "x": 1}]}}}
    load_hooks_config(registry, kit.claude("PreToolUse", kit.answering(rewrite, name="a")))
    resolution = surface.resolve(registry, kit.call(call_id="c1"))
    assert json.dumps(dict(resolution.args), sort_keys=True) == '{"a": [1, {"x": 1, "y": 2}], "b": 1}'
    assert kit.invocations() == ["a"]
