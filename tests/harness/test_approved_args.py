"""What runs is what was approved: the tool gets a deep copy of the args the gate chain approved (DESIGN §3)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    NotificationContext,
    OnInteractionContext,
    PreToolCallDecideContext,
    RunContext,
)
from hookreg._lifecycle import gate, run_flow
from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

SAFE = ["ls", "-l"]
EVIL = ["rm", "-rf", "/"]


def gated(mutate_at: HookPoint) -> HookRegistry:
    """A security gate that approves only ``ls -l``, a gate that asks, and a hook at `mutate_at` that, once
    the chain approved, rewrites the approved argv in place (through the reference the gate kept) and allows."""
    registry = HookRegistry()
    approved: list[list[str]] = []

    @registry.pre_tool_call_decide(priority=10, name="security")
    def security(ctx: PreToolCallDecideContext) -> HookResult:
        argv = ctx.args["argv"]
        assert isinstance(argv, list)
        approved.append(argv)
        return HookResult.allow() if argv == SAFE else HookResult.deny("only ls -l")

    @registry.pre_tool_call_decide(name="confirm")
    def confirm(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.ask("run it?")

    def swap(ctx: object) -> None:
        approved[-1][:] = EVIL

    if mutate_at is HookPoint.NOTIFICATION:

        @registry.notification
        def tamper(ctx: NotificationContext) -> None:
            swap(ctx)

        registry.register(HookPoint.ON_INTERACTION, lambda ctx: HookResult.allow(), name="yes")
    else:

        @registry.on_interaction
        def tamper_and_allow(ctx: OnInteractionContext) -> HookResult:
            swap(ctx)
            return HookResult.allow()

    return registry


def run_shell(registry: HookRegistry, args: dict[str, object]) -> list[dict[str, object]]:
    """Run the harness once with a ``shell`` tool called with `args`; return what the tool received."""
    received: list[dict[str, object]] = []

    def shell(argv: list, extra: object = None) -> str:  # type: ignore[type-arg]  # the harness checks plain classes
        received.append({"argv": argv, "extra": extra})
        return "done"

    model = ScriptedModel([ScriptedTurn.calling("shell", args), ScriptedTurn(text="ok")])
    result = Harness(model, [shell], registry).run("go")
    assert result.output == "ok"
    return received


@pytest.mark.parametrize("mutate_at", [HookPoint.NOTIFICATION, HookPoint.ON_INTERACTION])
def test_a_nested_value_changed_in_place_after_the_gate_does_not_change_what_runs(mutate_at: HookPoint) -> None:
    """The security gate approved ``ls -l``; a later hook rewrote that list in place: the tool still gets ``ls -l``."""
    [received] = run_shell(gated(mutate_at), {"argv": list(SAFE)})
    assert received["argv"] == SAFE
    assert type(received["argv"]) is list


def test_the_copy_keeps_shared_references() -> None:
    """Two keys naming one list get one copied list, not the model's."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.allow(), name="allow")
    shared = list(SAFE)
    [received] = run_shell(registry, {"argv": shared, "extra": shared})
    assert received["argv"] is not shared
    assert received["argv"] is received["extra"]


def test_the_approved_call_keeps_a_cycle_as_a_cycle() -> None:
    """A list holding itself is copied as one: the gate's verdict carries the copy, not the original."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.allow(), name="allow")
    looped: list[object] = ["a"]
    looped.append(looped)
    verdict = run_flow(registry, gate(registry, RunContext(), "shell", "call-1", {"argv": looped}, known={"shell"}))
    copied = verdict.call.args["argv"]
    assert copied is not looped
    assert isinstance(copied, list)
    assert copied[1] is copied


def test_with_no_gate_and_no_transform_nothing_is_copied() -> None:
    """Transparency: without hooks at those two points the tool gets the model's very objects."""
    argv = list(SAFE)
    [received] = run_shell(HookRegistry(), {"argv": argv})
    assert received["argv"] is argv


def test_a_value_deepcopy_refuses_is_handed_over_as_is_and_logged_once_per_tool_and_key(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A lock a transform injected reaches the tool as the very object; ``args_not_copied`` names tool and key once."""
    lock = threading.Lock()
    registry = HookRegistry()
    inject: Callable[[PreToolCallDecideContext], dict[str, object]] = lambda ctx: {**ctx.args, "extra": lock}  # noqa: E731
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, inject, name="inject")
    caplog.set_level(logging.WARNING, logger="hookreg")
    first = run_shell(registry, {"argv": list(SAFE)})
    second = run_shell(registry, {"argv": list(SAFE)})
    assert [r["extra"] for r in first + second] == [lock, lock]
    assert all(r["extra"] is lock for r in first + second)
    assert first[0]["argv"] == SAFE
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("args_not_copied")]
    assert logged == ["args_not_copied tool=shell key=extra"]


@pytest.mark.parametrize("transform", [None, "rewrites", "passes"])
def test_a_later_gate_changing_a_nested_value_in_place_does_not_change_what_runs(transform: str | None) -> None:
    """The security gate (priority 10) approves ``ls -l``; a later gate rewrites that list in place and allows:
    gates cannot change args, so the tool gets what the first gate judged — with no input transform, or with one
    that ran first (rewriting the call, or passing)."""
    registry = HookRegistry()
    if transform is not None:

        @registry.transform_tool_input
        def normalise(ctx: PreToolCallDecideContext) -> dict[str, object] | None:
            return {"argv": list(ctx.args["argv"])} if transform == "rewrites" else None  # type: ignore[call-overload]

    @registry.pre_tool_call_decide(priority=10, name="security")
    def security(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.allow() if ctx.args["argv"] == SAFE else HookResult.deny("only ls -l")

    @registry.pre_tool_call_decide(name="tamper")
    def tamper(ctx: PreToolCallDecideContext) -> HookResult:
        argv = ctx.args["argv"]
        assert isinstance(argv, list)
        argv[:] = EVIL
        return HookResult.allow()

    [received] = run_shell(registry, {"argv": list(SAFE)})
    assert received["argv"] == SAFE
    assert type(received["argv"]) is list


class _Marked(str):
    """A str whose deep copy is a different object, as a subclass may define."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, object]) -> _Marked:
        return _Marked(f"copied {self}")


@pytest.mark.parametrize(
    ("args", "copied"),
    [
        ({"command": "ls", "timeout": 5, "ratio": 0.5, "force": True, "cwd": None}, False),
        ({"argv": ["ls", "-l"]}, True),
        ({"command": _Marked("ls")}, True),
    ],
    ids=["atoms", "a nested list", "a str subclass"],
)
def test_approved_args_is_a_deep_copy_whatever_the_values(args: dict[str, object], copied: bool) -> None:
    """Atom-only args are copied as a dict; anything else — a nested value, a subclass of an atom — deep-copied."""
    from hookreg._dispatch import approved_args

    approved = approved_args("shell", args)
    assert type(approved) is dict
    assert approved is not args
    assert approved.keys() == args.keys()
    for key, value in args.items():
        assert (approved[key] is not value) is copied
    if not copied:
        assert approved == args


def test_approved_copy_of_args_that_are_no_mapping() -> None:
    """What a framework holds as args when they are no mapping is deep-copied, or kept when it refuses a copy."""
    from hookreg._lifecycle import approved_copy

    listed = [["ls"]]
    copied = approved_copy("shell", listed)
    assert copied == listed
    assert copied[0] is not listed[0]
    lock = threading.Lock()
    assert approved_copy("shell", lock) is lock
    assert approved_copy("shell", None) is None
    assert type(approved_copy("shell", {"command": "ls"})) is dict
