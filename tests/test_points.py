"""HookPoint table and the values of DESIGN §1-2."""

from __future__ import annotations

import dataclasses
import types

import pytest

import hookreg
from hookreg import (
    HookPoint,
    HookResult,
    HookStyle,
    InvalidToolCallAction,
    Message,
    PreToolCallDecideContext,
    RunContext,
    Scratchpad,
    ToolCallRequest,
    TurnAction,
)

EXPECTED_STYLES = {
    HookStyle.DECIDE: {"user_prompt_submit", "pre_turn", "model_turn_finished", "invalid_tool_call"}
    | {"pre_tool_call_decide", "on_interaction", "stop"},
    HookStyle.TRANSFORM: {"pre_model_call", "model_select", "transform_tool_input", "on_tool_error"}
    | {"transform_tool_result"},
}


def test_every_point_is_named_for_its_decorator() -> None:
    """Each of the 27 points' value is the name of a registry decorator."""
    assert len(HookPoint) == 27
    registry = hookreg.HookRegistry()
    for point in HookPoint:
        assert point.value == point.name.lower()
        assert callable(getattr(registry, point.value))


@pytest.mark.parametrize("point", list(HookPoint), ids=str)
def test_style_context_and_tool_scope(point: HookPoint) -> None:
    """Each point reports its style, its context class and whether tools= applies."""
    expected = next((style for style, names in EXPECTED_STYLES.items() if point.value in names), HookStyle.OBSERVE)
    assert point.style is expected
    names = {f.name for f in dataclasses.fields(point.context)}
    assert "run" in names
    assert point.is_tool_scoped == ("tool_name" in names)


def test_shared_context_class() -> None:
    """The input transform and the gate share one context class."""
    assert HookPoint.TRANSFORM_TOOL_INPUT.context is HookPoint.PRE_TOOL_CALL_DECIDE.context


def test_point_string_lookups() -> None:
    """A value string finds its point in dict lookups, as the registry relies on."""
    assert {HookPoint.STOP: 1}["stop"] == 1  # type: ignore[index]  # mypy does not know StrEnum hashing
    assert HookPoint("stop") is HookPoint.STOP


def test_a_string_naming_no_point_is_refused_with_the_points_it_may_mean() -> None:
    """HookPoint("pre_tool") raises a HookValueError (a ValueError) suggesting points, as registering does."""
    with pytest.raises(hookreg.HookValueError, match=r"'pre_tool' is not a hook point\. Did you mean") as raised:
        HookPoint("pre_tool")
    assert raised.value.point == "pre_tool"
    assert isinstance(raised.value, ValueError)
    with pytest.raises(hookreg.HookValueError, match=r"'zzz' is not a hook point\. See `list\(HookPoint\)`"):
        HookPoint("zzz")
    with pytest.raises(ValueError, match="3 is not a valid HookPoint"):
        HookPoint(3)  # type: ignore[arg-type]  # refused at run time, as by any enum


@pytest.mark.parametrize("point", list(HookPoint), ids=str)
def test_a_point_says_what_its_hooks_return(point: HookPoint) -> None:
    """expected_return writes the accepted return; is_valid_return accepts a pass, refuses other types."""
    if point.style is HookStyle.OBSERVE:
        assert point.expected_return == "None"
    assert point.is_valid_return(None) == (point.expected_return.endswith("None"))
    assert not point.is_valid_return(object())


def test_is_valid_return_matches_result_types_exactly() -> None:
    """A decider's result type is matched exactly (a subclass is refused); a transform's str may be any str."""

    class Sneaky(str):
        pass

    gate = HookPoint.PRE_TOOL_CALL_DECIDE
    assert gate.expected_return == "HookResult"
    assert gate.is_valid_return(HookResult.deny("no"))
    assert not gate.is_valid_return(False)
    assert HookPoint.ON_TOOL_ERROR.expected_return == "str | None"
    assert HookPoint.ON_TOOL_ERROR.is_valid_return(Sneaky("text"))
    assert HookPoint.TRANSFORM_TOOL_INPUT.is_valid_return({"a": 1})
    assert HookPoint.MODEL_TURN_FINISHED.is_valid_return(TurnAction.repeat())
    assert not HookPoint.MODEL_TURN_FINISHED.is_valid_return(None)
    assert HookPoint.INVALID_TOOL_CALL.is_valid_return(None)


def test_contexts_copy_and_freeze_mappings() -> None:
    """A context copies its mappings and exposes them read-only."""
    args = {"command": "ls"}
    ctx = PreToolCallDecideContext(tool_name="bash", args=args, call_id="c1")
    args["command"] = "rm -rf /"
    assert ctx.args["command"] == "ls"
    with pytest.raises(TypeError):
        ctx.args["command"] = "x"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.tool_name = "x"  # type: ignore[misc]


def test_contexts_are_keyword_only_and_carry_a_detached_run() -> None:
    """Contexts refuse positional construction; omitted, `run` is a fresh detached run."""
    with pytest.raises(TypeError):
        PreToolCallDecideContext("bash", {}, "c1")  # type: ignore[call-arg]
    a = PreToolCallDecideContext(tool_name="bash", args={}, call_id="c1")
    b = PreToolCallDecideContext(tool_name="bash", args={}, call_id="c1")
    assert a.run.run_id != b.run.run_id
    assert a.run.session_id == a.run.run_id
    assert a.run.scratchpad is not b.run.scratchpad


def test_run_context_next_turn_keeps_scratchpad() -> None:
    """`dataclasses.replace(run, turn=n)` keeps the run's identity and scratchpad."""
    run = RunContext(agent_name="a")
    later = dataclasses.replace(run, turn=3)
    assert (later.turn, later.run_id, later.session_id) == (3, run.run_id, run.session_id)
    assert later.scratchpad is run.scratchpad


def test_scratchpad_api() -> None:
    """The scratchpad stores by exact class: get, insert, update from T(), contains, remove."""

    class Count(int):
        pass

    pad = Scratchpad()
    assert pad.get(Count) is None
    assert Count not in pad
    assert pad.update(Count, lambda n: Count(n + 1)) == 1
    assert pad.update(Count, lambda n: Count(n + 1)) == 2
    pad.insert(Count(7))
    assert pad.get(Count) == 7
    assert Count in pad
    assert pad.get(int) is None  # exact class only
    assert pad.remove(Count) == 7
    assert pad.remove(Count) is None
    assert repr(pad) == "Scratchpad()"


def test_hook_result_constructors() -> None:
    """allow/deny/ask set decision, allowed, reason and message; the plain allow is shared."""
    assert HookResult.allow() is HookResult.allow()
    assert HookResult.allow("ok").message == "ok"
    deny = HookResult.deny("no")
    assert (deny.decision, deny.allowed, deny.reason, deny.decided_by) == ("deny", False, "no", None)
    ask = HookResult.ask("sure?")
    assert (ask.decision, ask.allowed) == ("ask", False)


def test_actions_equal_by_value_ignoring_decided_by() -> None:
    """TurnAction and InvalidToolCallAction compare by value; decided_by takes no part."""
    assert TurnAction.retry_with_feedback("x") == dataclasses.replace(
        TurnAction.retry_with_feedback("x"), decided_by="h"
    )
    assert TurnAction.repeat().kind == "repeat"
    assert TurnAction.continue_run() is TurnAction.continue_run()
    assert InvalidToolCallAction.repair("ls").tool_name == "ls"
    assert InvalidToolCallAction.retry("again").feedback == "again"
    assert InvalidToolCallAction.skip("later").reason == "later"
    assert InvalidToolCallAction.fail() == InvalidToolCallAction(kind="fail")
    assert InvalidToolCallAction.fail("bad").reason == "bad"


def test_message_and_tool_call_values() -> None:
    """Messages and tool-call requests are frozen values; tool args are copied read-only."""
    msg = Message("user", "hi")
    assert (msg.role, msg.content, msg.name, msg.tool_call_id) == ("user", "hi", None, None)
    args = {"a": 1}
    call = ToolCallRequest("c1", "echo", args)
    args["a"] = 2
    assert call.args == {"a": 1}


def test_public_api_sorted_and_complete() -> None:
    """`hookreg.__all__` is sorted and names every public object the package exports (the lazy ones loaded)."""
    assert hookreg.__all__ == sorted(hookreg.__all__)
    for name in hookreg.__all__:  # loads the trace records, which `import hookreg` leaves for their first use
        getattr(hookreg, name)
    # Submodules (testing, policy, harness, ...) appear once imported; isidentifier(): pytest rewrites
    # the package of an installed plugin (hookreg's pytest11 entry point), adding "@py_builtins" etc.
    public = {
        name
        for name, value in vars(hookreg).items()
        if name.isidentifier() and not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(hookreg.__all__)


def test_import_is_light() -> None:
    """`import hookreg` imports neither structlog, the harness, testing or adapters, nor tracing and its tables.

    Nor inspect, ast or dis (a third of the import): registration imports inspect on first use.
    """
    import subprocess
    import sys

    code = (
        "import sys, hookreg; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('structlog', 'inspect', 'ast', 'dis') "
        "or m.startswith(('hookreg.harness', 'hookreg.testing', 'hookreg.adapters', 'hookreg._trace', "
        "'hookreg._display'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_trace_records_load_on_first_use() -> None:
    """hookreg.Trace, DispatchRecord and HookCall: tracing's own classes, in dir(), loaded when first named."""
    import subprocess
    import sys

    code = (
        "import sys, hookreg; loaded = 'hookreg._trace' in sys.modules; "
        "listed = {'Trace', 'DispatchRecord', 'HookCall'} <= set(dir(hookreg)); "
        "loaded = loaded or 'hookreg._trace' in sys.modules or not listed; "
        "from hookreg import Trace, DispatchRecord, HookCall; "
        "from hookreg._trace import Trace as T, DispatchRecord as D, HookCall as H; "
        "print(loaded, (Trace, DispatchRecord, HookCall) == (T, D, H), type(hookreg.HookRegistry().trace()) is Trace)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True"]


def test_dir_of_the_package_lists_every_public_name() -> None:
    """``dir(hookreg)`` (what a notebook completes from) holds all of ``__all__``, the lazy trace records too."""
    assert set(hookreg.__all__) <= set(dir(hookreg))


def test_an_unknown_attribute_of_the_package_is_an_attribute_error() -> None:
    """Only the trace records load lazily: any other missing name raises AttributeError."""
    with pytest.raises(AttributeError, match="module 'hookreg' has no attribute 'Tracer'"):
        _ = hookreg.Tracer  # type: ignore[attr-defined]  # what a typo meets at run time
