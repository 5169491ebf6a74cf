"""Values: no truth value, fields checked when built, pickling and copying, contexts bound to a run."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import linecache
import operator
import pickle
import re
import subprocess
import sys
import threading
import typing
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import pytest

import hookreg
from hookreg import (
    Decision,
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    InvalidToolCallAction,
    Message,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    PermissionDeniedContext,
    PreToolCallDecideContext,
    RequestPatch,
    RunContext,
    RunOutcome,
    Scratchpad,
    ToolCallRequest,
    ToolCallResolution,
    TurnAction,
)
from hookreg._results import VALUE_CLASS, value_class
from hookreg._results import field as value_field
from hookreg.testing import make_context

ROOT = Path(__file__).resolve().parent.parent


class Calls(int):
    """A scratchpad entry: how many tool calls this run has made."""


def _resolution(result: HookResult) -> ToolCallResolution:
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: result)
    return registry.resolve_tool_call(PreToolCallDecideContext(tool_name="bash", args={"a": 1}, call_id="c1"))


# --- no truth value -------------------------------------------------------------------

TRUTHLESS: list[tuple[str, Callable[[], object], str]] = [
    ("allow", HookResult.allow, ".allowed"),
    ("deny", lambda: HookResult.deny("no"), ".allowed"),
    ("ask", lambda: HookResult.ask("sure?"), ".allowed"),
    ("continue", TurnAction.continue_run, ".kind"),
    ("repeat", TurnAction.repeat, ".kind"),
    ("fail", InvalidToolCallAction.fail, ".kind"),
    ("skip", lambda: InvalidToolCallAction.skip("no"), ".kind"),
    ("resolution-allow", lambda: _resolution(HookResult.allow()), ".result.allowed"),
    ("resolution-deny", lambda: _resolution(HookResult.deny("no")), ".result.allowed"),
]


@pytest.mark.parametrize(("label", "build", "read"), TRUTHLESS, ids=[t[0] for t in TRUTHLESS])
def test_results_have_no_truth_value(label: str, build: Callable[[], object], read: str) -> None:
    """`bool()` of a result raises a TypeError naming the attribute to read instead."""
    value = build()
    with pytest.raises(HookTypeError, match=re.escape(f"Read `{read}`")) as info:
        bool(value)
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError):
        operator.not_(value)


def test_if_decide_on_a_deny_raises_instead_of_taking_the_allow_branch() -> None:
    """``if registry.decide(...):`` fails loudly rather than being true for a deny."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("no"))
    ctx = PreToolCallDecideContext(tool_name="bash", args={}, call_id="c1")
    branch = "none"

    def take_branch() -> None:
        nonlocal branch
        branch = "allow" if registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx) else "deny"

    with pytest.raises(TypeError, match="allowed"):
        take_branch()
    assert branch == "none"


# --- results: fields checked when built -----------------------------------------------


def test_a_decision_string_is_converted_to_the_decision() -> None:
    """``HookResult(decision="deny")`` is a real deny, and ``decision="allow"`` a real allow."""
    deny = HookResult(decision="deny", reason="no")  # type: ignore[arg-type]  # the value string, on purpose
    allow = HookResult(decision="allow")  # type: ignore[arg-type]  # the value string, on purpose
    assert deny.decision is Decision.DENY
    assert not deny.allowed
    assert allow.decision is Decision.ALLOW
    assert allow.allowed
    assert deny == HookResult.deny("no")


def test_a_decision_string_denies_and_fires_permission_denied() -> None:
    """A gate returning ``HookResult(decision="deny")`` is refused like any deny: `permission_denied` runs."""
    registry = HookRegistry()
    denied: list[str] = []
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult(decision="deny", reason="no"))  # type: ignore[arg-type]  # on purpose
    registry.register(HookPoint.PERMISSION_DENIED, lambda ctx: denied.append(ctx.reason))
    resolution = registry.resolve_tool_call(PreToolCallDecideContext(tool_name="bash", args={}, call_id="c1"))
    assert not resolution.result.allowed
    assert denied == ["no"]


def test_a_str_subclass_is_a_str() -> None:
    """A `str` subclass (a StrEnum member, say) is accepted wherever a result takes text."""
    reason = Decision.DENY
    message = HookPoint.STOP
    assert HookResult.deny(reason).reason == "deny"
    assert HookResult.allow(message).message == "stop"
    assert HookResult(decision=Decision.DENY, decided_by=message).decided_by == "stop"


BAD_RESULTS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("deny-none", lambda: HookResult.deny(None), HookTypeError, r"reason=None: reason must be a str.*HookResult\.deny"),  # type: ignore[arg-type]
    ("ask-bytes", lambda: HookResult.ask(b"why"), HookTypeError, "reason must be a str, not bytes"),  # type: ignore[arg-type]
    ("allow-message", lambda: HookResult.allow(message=3), HookTypeError, "message must be a str"),  # type: ignore[arg-type]
    ("allow-none", lambda: HookResult.allow(None), HookTypeError, "message=None: message must be a str"),  # type: ignore[arg-type]
    ("decided-by", lambda: HookResult(decision=Decision.DENY, decided_by=3), HookTypeError, "decided_by"),  # type: ignore[arg-type]
    ("decision-unknown", lambda: HookResult(decision="maybe"), HookValueError, "'allow', 'deny', 'ask'"),  # type: ignore[arg-type]
    ("decision-bool", lambda: HookResult(decision=True), HookTypeError, "decision must be a Decision"),  # type: ignore[arg-type]
    ("turn-kind", lambda: TurnAction(kind="stop"), HookValueError, "kind='stop'.*'continue', 'repeat', 'feedback'"),  # type: ignore[arg-type]
    ("turn-kind-type", lambda: TurnAction(kind=None), HookTypeError, "kind must be a str"),  # type: ignore[arg-type]
    ("turn-feedback-none", lambda: TurnAction.retry_with_feedback(None), HookTypeError, "no feedback"),  # type: ignore[arg-type]
    ("turn-feedback-type", lambda: TurnAction.retry_with_feedback(1), HookTypeError, "feedback must be a str or None"),  # type: ignore[arg-type]
    ("turn-decided-by", lambda: TurnAction(kind="repeat", decided_by=b"x"), HookTypeError, "decided_by"),  # type: ignore[arg-type]
    ("invalid-kind", lambda: InvalidToolCallAction(kind="explode"), HookValueError, "kind='explode'"),  # type: ignore[arg-type]
    ("invalid-retry", lambda: InvalidToolCallAction.retry(None), HookTypeError, "no feedback"),  # type: ignore[arg-type]
    ("invalid-repair", lambda: InvalidToolCallAction.repair(None), HookTypeError, "no tool_name"),  # type: ignore[arg-type]
    ("invalid-skip", lambda: InvalidToolCallAction.skip(None), HookTypeError, "reason must be a str"),  # type: ignore[arg-type]
    ("invalid-fail", lambda: InvalidToolCallAction.fail(reason=0), HookTypeError, "reason must be a str"),  # type: ignore[arg-type]
    ("invalid-fail-none", lambda: InvalidToolCallAction.fail(None), HookTypeError, "reason=None"),  # type: ignore[arg-type]
    (
        "resolution-result",
        lambda: ToolCallResolution(args={}, result=True, rewritten=False),  # type: ignore[arg-type]
        HookTypeError,
        "result must be a HookResult",
    ),
    (
        "resolution-args",
        lambda: ToolCallResolution(args=None, result=HookResult.allow(), rewritten=False),  # type: ignore[arg-type]
        HookTypeError,
        "args must be a Mapping",
    ),
]


@pytest.mark.parametrize(("label", "build", "error", "match"), BAD_RESULTS, ids=[b[0] for b in BAD_RESULTS])
def test_a_result_of_the_wrong_type_is_refused_when_built(
    label: str, build: Callable[[], object], error: type[Exception], match: str
) -> None:
    """A result field of the wrong type or value fails at construction, naming the field."""
    with pytest.raises(error, match=match) as info:
        build()
    assert isinstance(info.value, TypeError if error is HookTypeError else ValueError)


# --- RequestPatch: fields checked when built -------------------------------------------


def test_a_bare_string_is_one_item_of_a_patch() -> None:
    """``extra_context="text"`` and ``active_tools="bash"`` are one item each, never split into characters."""
    patch = RequestPatch(extra_context="keep it short", active_tools="bash")  # type: ignore[arg-type]  # a bare str, on purpose
    assert patch.extra_context == ("keep it short",)
    assert patch.active_tools == frozenset({"bash"})


def test_a_patch_converts_iterables_and_accepts_an_int_temperature() -> None:
    """Lists become tuples, sets frozensets, a dict a read-only mapping; an int temperature is a number."""
    params = {"seed": 1}
    patch = RequestPatch(
        extra_context=["a", "b"],  # type: ignore[arg-type]  # a list, converted
        active_tools={"ls"},  # type: ignore[arg-type]  # a set, converted
        additional_params=params,
        temperature=1,
        max_tokens=10,
    )
    params["seed"] = 2
    assert patch.extra_context == ("a", "b")
    assert patch.active_tools == frozenset({"ls"})
    assert patch.additional_params == {"seed": 1}
    with pytest.raises(TypeError):
        operator.setitem(cast(Any, patch.additional_params), "seed", 3)
    assert patch.temperature == 1


BAD_PATCHES: list[tuple[str, dict[str, object], str]] = [
    ("temperature-bool", {"temperature": True}, "temperature must be a float, not bool"),
    ("temperature-str", {"temperature": "0.2"}, "temperature must be a float, not str"),
    ("max-tokens-float", {"max_tokens": 1.5}, "max_tokens must be an int, not float"),
    ("max-tokens-bool", {"max_tokens": False}, "max_tokens must be an int, not bool"),
    ("preamble", {"preamble": 3}, "preamble must be a str"),
    ("tool-choice", {"tool_choice": ["auto"]}, "tool_choice must be a str"),
    ("params-pairs", {"additional_params": [("seed", 1)]}, "additional_params must be a Mapping"),
    ("params-key", {"additional_params": {1: "x"}}, "a key of additional_params"),
    ("extra-context-int", {"extra_context": 3}, "extra_context must be a str or an iterable of str"),
    ("extra-context-item", {"extra_context": ["a", None]}, "an item of extra_context"),
    ("active-tools-item", {"active_tools": frozenset({1})}, "an item of active_tools"),
    ("messages-str", {"messages": "hello"}, "messages must be an iterable of Message"),
    ("messages-one", {"messages": Message("user", "hi")}, "messages must be an iterable of Message"),
    ("messages-item", {"messages": [Message("user", "hi"), {"role": "user"}]}, "an item of messages"),
]


@pytest.mark.parametrize(("label", "fields", "match"), BAD_PATCHES, ids=[b[0] for b in BAD_PATCHES])
def test_a_patch_field_of_the_wrong_type_is_refused(label: str, fields: dict[str, object], match: str) -> None:
    """Every RequestPatch field is type-checked at construction; the error names the field."""
    with pytest.raises(HookTypeError, match=match):
        RequestPatch(**fields)  # type: ignore[arg-type]  # wrong on purpose


# --- contexts: fields checked when built ---------------------------------------------

STRICT_TOOL_POINTS = [
    p for p in HookPoint if p.is_tool_scoped and p not in {HookPoint.TOOL_CALL_DELTA, HookPoint.ON_INTERACTION}
]


@pytest.mark.parametrize("point", STRICT_TOOL_POINTS, ids=str)
def test_a_context_refuses_a_tool_name_that_is_not_a_str(point: HookPoint) -> None:
    """``tool_name=None`` (which would slip past every ``tools=`` filter) fails at construction."""
    with pytest.raises(HookTypeError, match="tool_name=None: tool_name must be a str") as info:
        make_context(point, tool_name=None)
    assert isinstance(info.value, TypeError)
    with pytest.raises(HookTypeError, match="tool_name must be a str, not bytes"):
        make_context(point, tool_name=b"bash")


@pytest.mark.parametrize("point", [HookPoint.TOOL_CALL_DELTA, HookPoint.ON_INTERACTION], ids=str)
def test_an_optional_tool_name_takes_none_but_not_another_type(point: HookPoint) -> None:
    """Where `tool_name` is ``str | None``, None is accepted and any other non-str is refused."""
    ctx: Any = make_context(point, tool_name=None)
    assert ctx.tool_name is None
    with pytest.raises(HookTypeError, match="tool_name must be a str or None, not int"):
        make_context(point, tool_name=3)


def test_a_context_refuses_a_mapping_or_sequence_of_the_wrong_type() -> None:
    """`args` must be a Mapping and a sequence field a sequence (a bare str is refused, not split)."""
    with pytest.raises(HookTypeError, match="args=None: args must be a Mapping"):
        PreToolCallDecideContext(tool_name="bash", args=None, call_id="c")  # type: ignore[arg-type]
    with pytest.raises(HookTypeError, match=r"options must be a sequence, not str. .*\('yes',\)"):
        OnInteractionContext(question="go?", options="yes", tool_name=None)
    with pytest.raises(HookTypeError, match="available_tools must be a sequence, not int"):
        make_context(HookPoint.INVALID_TOOL_CALL, available_tools=3)


def test_a_session_context_takes_its_session_id_from_its_run() -> None:
    """A session context's `session_id` is its run's: filled in when left out, refused when different."""
    run = RunContext(session_id="s-1")
    assert OnSessionStartContext(goal="g", run=run).session_id == "s-1"
    assert OnSessionEndContext(outcome=RunOutcome("completed"), run=run).session_id == "s-1"
    assert OnSessionStartContext(session_id="s-1", goal="g", run=run).run is run
    with pytest.raises(HookValueError, match="session_id='other' for a run of session 's-1'"):
        OnSessionStartContext(session_id="other", goal="g", run=run)
    with pytest.raises(HookValueError, match="session_id"):
        dataclasses.replace(OnSessionEndContext(outcome=RunOutcome("completed"), run=run), session_id="other")
    with pytest.raises(HookTypeError, match="session_id must be a str"):
        OnSessionStartContext(session_id=None, goal="g", run=run)  # type: ignore[arg-type]


def test_a_session_context_without_a_run_gets_a_detached_run_of_its_session() -> None:
    """Left out, `run` is a fresh detached run whose session is the context's (a new one per context)."""
    first = OnSessionStartContext(session_id="s-9", goal="g")
    second = OnSessionStartContext(session_id="s-9", goal="g")
    assert first.run.session_id == "s-9"
    assert first.run.run_id != second.run.run_id
    assert first.run.scratchpad is not second.run.scratchpad
    anonymous = OnSessionStartContext(goal="g")
    assert anonymous.session_id == anonymous.run.session_id == anonymous.run.run_id


@pytest.mark.parametrize("point", [HookPoint.ON_SESSION_START, HookPoint.ON_SESSION_END], ids=str)
def test_make_context_gives_a_session_context_its_run_session(point: HookPoint) -> None:
    """`make_context` with ``run=`` builds a session context of that run's session, without being told it."""
    run = RunContext(session_id="s-2")
    ctx: Any = make_context(point, run=run)
    assert ctx.session_id == "s-2"
    assert ctx.run is run


# --- the read-only mapping -----------------------------------------------------------


def _read_only() -> Any:
    return PreToolCallDecideContext(tool_name="bash", args={"a": 1, "b": 2}, call_id="c").args


WRITES: list[tuple[str, Callable[[Any], object]]] = [
    ("setitem", lambda m: operator.setitem(m, "a", 9)),
    ("delitem", lambda m: operator.delitem(m, "a")),
    ("clear", lambda m: m.clear()),
    ("pop", lambda m: m.pop("a")),
    ("popitem", lambda m: m.popitem()),
    ("setdefault", lambda m: m.setdefault("c", 3)),
    ("update", lambda m: m.update(c=3)),
    ("ior", lambda m: m.__ior__({"c": 3})),
]


@pytest.mark.parametrize(("label", "write"), WRITES, ids=[w[0] for w in WRITES])
def test_every_write_to_a_read_only_mapping_raises_type_error(label: str, write: Callable[[Any], object]) -> None:
    """Each way of changing a dict raises `TypeError` on hookreg's mapping, and leaves it unchanged."""
    mapping = _read_only()
    with pytest.raises(TypeError, match=r"does not support item assignment.*read-only"):
        write(mapping)
    assert mapping == {"a": 1, "b": 2}


def test_a_read_only_mapping_reads_as_a_dict_and_copies_into_plain_dicts() -> None:
    """It serialises as JSON, and ``dict(m)``, ``m | other`` and ``m.copy()`` give mutable plain dicts."""
    mapping = _read_only()
    assert json.loads(json.dumps(mapping)) == {"a": 1, "b": 2}
    for mutable in (dict(mapping), mapping | {"c": 3}, mapping.copy()):
        mutable["a"] = 0
        assert type(mutable) is dict
    assert mapping["a"] == 1


def test_a_read_only_mapping_is_shared_not_copied_again() -> None:
    """Passing one context's `args` to the next shares the read-only mapping; a dict is copied."""
    args = {"path": "/tmp"}
    gate = PreToolCallDecideContext(tool_name="bash", args=args, call_id="c")
    args["path"] = "/"
    assert gate.args == {"path": "/tmp"}
    post = make_context(HookPoint.POST_TOOL_CALL, args=gate.args, metadata=gate.args)
    assert post.args is gate.args
    assert post.metadata is gate.args
    assert copy.copy(gate.args) is gate.args


# --- pickling and copying ------------------------------------------------------------

COPIES: list[tuple[str, Callable[[Any], Any]]] = [
    *((f"pickle-{protocol}", lambda v, p=protocol: pickle.loads(pickle.dumps(v, p))) for protocol in range(2, 6)),
    ("copy", copy.copy),
    ("deepcopy", copy.deepcopy),
]


def _comparable(value: object) -> object:
    """A value's compared fields, with exceptions (equal only to themselves) reduced to type and args."""
    if isinstance(value, BaseException):
        return (type(value), value.args)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _comparable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare}
    return value


def _mapping_fields(ctx: object) -> list[str]:
    return [f.name for f in dataclasses.fields(ctx) if isinstance(getattr(ctx, f.name), Mapping)]  # type: ignore[arg-type]


@pytest.mark.parametrize(("how", "duplicate"), COPIES, ids=[c[0] for c in COPIES])
@pytest.mark.parametrize("point", list(HookPoint), ids=str)
def test_every_context_survives_pickling_and_copying(
    point: HookPoint, how: str, duplicate: Callable[[Any], Any]
) -> None:
    """A context pickles and copies to an equal one that is still frozen and read-only."""
    run = RunContext(agent_name="agent")
    run.scratchpad.insert(Calls(2))
    ctx: Any = make_context(point, run=run)
    again = duplicate(ctx)
    assert type(again) is type(ctx)
    assert _comparable(again) == _comparable(ctx)
    assert again.run.scratchpad.get(Calls) == 2
    for name in _mapping_fields(again):
        with pytest.raises(TypeError):
            operator.setitem(getattr(again, name), "k", "v")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(again, dataclasses.fields(again)[0].name, None)


@pytest.mark.parametrize("point", list(HookPoint), ids=str)
def test_every_context_is_a_real_dataclass(point: HookPoint) -> None:
    """`dataclasses.fields`, `replace` and `asdict` work on every context."""
    ctx: Any = make_context(point)
    names = [f.name for f in dataclasses.fields(ctx)]
    assert names[-1] == "run"
    other = RunContext(session_id=ctx.run.session_id)
    assert dataclasses.replace(ctx, run=other).run is other
    as_dict = dataclasses.asdict(ctx)
    assert set(as_dict) == set(names)
    assert as_dict["run"]["run_id"] == ctx.run.run_id


VALUES: list[tuple[str, Callable[[], object]]] = [
    ("allow-message", lambda: HookResult.allow("ok")),
    ("deny", lambda: dataclasses.replace(HookResult.deny("no"), decided_by="gate")),
    ("ask", lambda: HookResult.ask("sure?")),
    ("turn-feedback", lambda: TurnAction.retry_with_feedback("again")),
    ("turn-continue", TurnAction.continue_run),
    ("invalid-repair", lambda: InvalidToolCallAction.repair("ls")),
    ("invalid-fail", InvalidToolCallAction.fail),
    ("resolution", lambda: _resolution(HookResult.deny("no"))),
    ("patch", lambda: RequestPatch(extra_context=("x",), additional_params={"seed": 1}, temperature=0.5)),
    ("message", lambda: Message("tool", "done", name="ls", tool_call_id="c1")),
    ("tool-call", lambda: ToolCallRequest("c1", "ls", {"path": "/"})),
    ("outcome", lambda: RunOutcome("stopped", reason="why", turns=3)),
]


@pytest.mark.parametrize(("how", "duplicate"), COPIES, ids=[c[0] for c in COPIES])
@pytest.mark.parametrize(("label", "build"), VALUES, ids=[v[0] for v in VALUES])
def test_results_and_values_survive_pickling_and_copying(
    label: str, build: Callable[[], object], how: str, duplicate: Callable[[Any], Any]
) -> None:
    """Results, patches, messages, tool calls and outcomes round-trip to equal values."""
    value = build()
    again = duplicate(value)
    assert again == value
    assert getattr(again, "decided_by", None) == getattr(value, "decided_by", None)


@pytest.mark.parametrize(("how", "duplicate"), COPIES, ids=[c[0] for c in COPIES])
def test_a_copied_plain_allow_is_still_an_allow(how: str, duplicate: Callable[[Any], Any]) -> None:
    """The shared ``HookResult.allow()``, copied or unpickled, still allows (in dispatch too)."""
    allow = duplicate(HookResult.allow())
    assert allow.decision is Decision.ALLOW
    assert allow.allowed
    assert allow == HookResult.allow()
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: allow)
    result = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, make_context(HookPoint.PRE_TOOL_CALL_DECIDE))
    assert result.allowed


@pytest.mark.parametrize(("how", "duplicate"), COPIES, ids=[c[0] for c in COPIES])
def test_a_run_context_survives_pickling_and_copying_with_its_scratchpad(
    how: str, duplicate: Callable[[Any], Any]
) -> None:
    """A RunContext keeps its ids and its scratchpad's contents; the copy's scratchpad is its own."""
    run = RunContext(session_id="s", turn=2, depth=1, agent_name="a", is_streaming=True)
    run.scratchpad.insert(Calls(1))
    again = duplicate(run)
    assert again == run
    assert again.scratchpad.get(Calls) == 1
    if how != "copy":  # a shallow copy of a RunContext shares its scratchpad, as any field
        assert again.scratchpad is not run.scratchpad
        again.scratchpad.insert(Calls(5))
        assert run.scratchpad.get(Calls) == 1


@pytest.mark.parametrize(("how", "duplicate"), COPIES, ids=[c[0] for c in COPIES])
def test_a_scratchpad_copies_its_contents_and_gets_a_fresh_lock(how: str, duplicate: Callable[[Any], Any]) -> None:
    """A copied Scratchpad holds the same entries, changes apart from the original, and has its own lock."""
    pad = Scratchpad()
    pad.insert(Calls(1))
    again = duplicate(pad)
    assert again.get(Calls) == 1
    assert again.update(Calls, lambda n: Calls(n + 1)) == 2
    assert pad.get(Calls) == 1
    assert again._lock is not pad._lock  # the lock is what must not be shared


# --- contexts bound to a run ---------------------------------------------------------


def test_run_context_builds_a_context_bound_to_the_run() -> None:
    """``run.context(Class, ...)`` and ``run.context(HookPoint.X, ...)`` build the point's context with ``run=run``."""
    run = RunContext(session_id="s")
    by_class = run.context(PreToolCallDecideContext, tool_name="bash", args={"a": 1}, call_id="c")
    # A HookPoint is accepted at runtime; type checkers want the class (or ``point.context``).
    by_point: Any = run.context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="bash", args={"a": 1}, call_id="c")  # type: ignore[arg-type]
    assert by_class == by_point == PreToolCallDecideContext(tool_name="bash", args={"a": 1}, call_id="c", run=run)
    assert by_class.run is run
    assert by_point.run is run
    start = run.context(OnSessionStartContext, goal="g")
    assert start.session_id == "s"
    assert start.run is run


@pytest.mark.parametrize("point", list(HookPoint), ids=str)
def test_run_context_builds_every_point_context(point: HookPoint) -> None:
    """Every point's context can be built through its run, from the point or the class."""
    fields = {f.name: getattr(make_context(point), f.name) for f in dataclasses.fields(point.context)}
    del fields["run"]
    fields.pop("session_id", None)
    run = RunContext()
    assert run.context(point, **fields).run is run  # type: ignore[arg-type]  # a HookPoint, accepted at runtime
    assert type(run.context(point.context, **fields)) is point.context


def test_run_context_refuses_a_second_run_and_what_is_not_a_context() -> None:
    """Passing ``run=`` again, or something other than a context class or a HookPoint, is a HookTypeError."""
    run = RunContext()
    with pytest.raises(HookTypeError, match="binds the run itself"):
        run.context(PreToolCallDecideContext, tool_name="bash", args={}, call_id="c", run=RunContext())
    for wrong in ("pre_tool_call_decide", dict, RunContext, Message, None):
        with pytest.raises(HookTypeError, match="neither a context class nor a HookPoint"):
            run.context(wrong)  # type: ignore[arg-type]  # wrong on purpose


def test_contexts_built_through_the_run_share_per_run_state() -> None:
    """A "two calls per run" gate counts across every context a run builds, and not across runs."""
    registry = HookRegistry()

    @registry.pre_tool_call_decide
    def two_per_run(ctx: PreToolCallDecideContext) -> HookResult:
        calls = ctx.run.scratchpad.update(Calls, lambda n: Calls(n + 1))
        return HookResult.allow() if calls <= 2 else HookResult.deny("two calls per run")

    def run_four_calls(run: RunContext) -> list[bool]:
        return [
            registry.decide(
                HookPoint.PRE_TOOL_CALL_DECIDE,
                run.context(PreToolCallDecideContext, tool_name="ls", args={}, call_id=f"c{i}"),
            ).allowed
            for i in range(4)
        ]

    assert run_four_calls(RunContext()) == [True, True, False, False]
    assert run_four_calls(RunContext()) == [True, True, False, False]


def test_contexts_built_in_a_chain_keep_the_caller_run() -> None:
    """A transform's rewritten context and the `permission_denied` context carry the caller's run object."""
    registry = HookRegistry()
    seen: list[RunContext] = []
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: {"path": "/safe"})

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        seen.append(ctx.run)
        return HookResult.deny("no")

    @registry.permission_denied
    def denied(ctx: PermissionDeniedContext) -> None:
        seen.append(ctx.run)

    run = RunContext()
    resolution = registry.resolve_tool_call(run.context(PreToolCallDecideContext, tool_name="ls", args={}, call_id="c"))
    assert resolution.args == {"path": "/safe"}
    assert seen == [run, run]
    assert all(r is run for r in seen)


# --- value classes: dataclasses whose methods are written out ------------------------------

VALUE_CLASSES = sorted(
    (
        obj
        for obj in vars(hookreg).values()
        if isinstance(obj, type)
        and dataclasses.is_dataclass(obj)
        and obj.__module__ in ("hookreg._results", "hookreg._context")
    ),
    key=lambda cls: cls.__name__,
)


def test_every_public_value_class_is_counted() -> None:
    """The contexts, the results and the small values: 35 classes, each a dataclass."""
    assert len(VALUE_CLASSES) == 35
    assert {HookResult, RunContext, Message, PreToolCallDecideContext} <= set(VALUE_CLASSES)


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda cls: cls.__name__)
def test_a_value_class_takes_exactly_its_fields(cls: type) -> None:
    """Its ``__init__`` takes each field, keyword-only where the field is, with the field's default or factory."""
    parameters = list(inspect.signature(cls).parameters.values())
    fields = dataclasses.fields(cls)
    assert [p.name for p in parameters] == [f.name for f in fields]
    for parameter, field in zip(parameters, fields, strict=True):
        kind = inspect.Parameter.KEYWORD_ONLY if field.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        assert parameter.kind is kind
        if field.default_factory is not dataclasses.MISSING:
            assert repr(parameter.default) == "<factory>"
        elif field.default is not dataclasses.MISSING:
            assert parameter.default == field.default
        else:
            assert parameter.default is inspect.Parameter.empty
        assert parameter.annotation == field.type


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda cls: cls.__name__)
def test_a_value_class_is_frozen_slotted_and_compares_its_compared_fields(cls: type) -> None:
    """Assigning or deleting a field raises FrozenInstanceError; no __dict__; repr and == as a dataclass's."""
    value: Any = next(v for v in _instances() if type(v) is cls)
    first = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{first}'"):
        setattr(value, first, None)
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot delete field '{first}'"):
        delattr(value, first)
    assert not hasattr(value, "__dict__")
    shown = ", ".join(f"{f.name}={getattr(value, f.name)!r}" for f in dataclasses.fields(value) if f.repr)
    assert repr(value) == f"{cls.__qualname__}({shown})"
    assert value == dataclasses.replace(value)
    assert value != object()
    ignored = [f.name for f in dataclasses.fields(value) if not f.compare]
    if ignored == ["decided_by"]:
        assert value == dataclasses.replace(value, decided_by="someone else")


def _instances() -> list[object]:
    """One of every value class: each point's context, the results, the small values."""
    return [
        *(make_context(point) for point in HookPoint),
        *(build() for _, build in VALUES),
        HookResult.allow(),
        RunContext(),
    ]


def test_a_value_is_hashable_when_its_compared_fields_are() -> None:
    """Equal values hash equal; a field that ``==`` ignores is left out of the hash too."""
    deny = HookResult.deny("no")
    assert hash(deny) == hash(dataclasses.replace(deny, decided_by="gate"))
    assert hash(Message("user", "hi")) == hash(Message("user", "hi"))
    assert len({RunOutcome("completed"), RunOutcome("completed"), RunOutcome("stopped")}) == 2


def test_value_classes_keep_what_a_dataclass_offers_at_run_time() -> None:
    """Frozen params, type hints, positional pattern matching and astuple, as `dataclass` would give."""
    assert PreToolCallDecideContext.__dataclass_params__.frozen  # type: ignore[attr-defined]  # a dataclass
    assert typing.get_type_hints(PreToolCallDecideContext)["args"] == Mapping[str, object]
    match Message("user", "hi"):
        case Message(role, content):
            assert (role, content) == ("user", "hi")
    assert PreToolCallDecideContext.__match_args__ == ()  # keyword-only fields do not match by position
    assert dataclasses.astuple(RunOutcome("completed")) == ("completed", "", 0)


def test_import_and_dispatch_do_not_load_dataclasses_which_loads_when_asked_for() -> None:
    """`import hookreg`, building values and a denying dispatch load neither dataclasses nor copy nor weakref.

    A value class's ``field()`` and ``replace`` are hookreg's own at run time; asking for the dataclass
    attributes (as `dataclasses.fields` does) loads dataclasses then, and they describe the fields as
    written, ``compare=False`` included.
    """
    probe = (
        # Registration imports inspect on first use, which itself imports weakref on Python 3.13: not ours.
        "import sys, inspect\n"
        "theirs = set(sys.modules)\n"
        "import hookreg\n"
        "from hookreg import HookPoint, HookRegistry, HookResult, PreToolCallDecideContext, RequestPatch, RunContext\n"
        "loaded = lambda: sorted({'dataclasses', 'copy', 'weakref'} & set(sys.modules) - theirs)\n"
        "print(loaded())\n"
        "registry = HookRegistry()\n"
        "registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny('no'))\n"
        "ctx = PreToolCallDecideContext(tool_name='t', args={}, call_id='c')\n"
        "assert registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx).decided_by\n"
        "assert RequestPatch(preamble='a').merge(RequestPatch(temperature=0.5)).temperature == 0.5\n"
        "print(loaded())\n"
        "import dataclasses\n"
        "print([f.name for f in dataclasses.fields(RunContext) if not f.compare])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["[]", "[]", "['scratchpad', 'turn_scratchpad']"]


def test_the_dataclass_attributes_are_made_once_whichever_thread_reads_first() -> None:
    """A fresh value class's fields, read by eight threads at once, are one and the same description."""

    def init(set_x: Callable[..., None], set_y: Callable[..., None]) -> Callable[..., None]:
        def __init__(self: object, *, x: int, y: int = 0) -> None:  # noqa: N807 -- what a generated block writes
            set_x(self, x)
            set_y(self, y)

        return __init__

    namespace = {
        "__annotations__": {"x": "int", "y": "int"},
        "__module__": __name__,
        "__slots__": ("x", "y"),
        "_defaults": {"y": 0},
        **VALUE_CLASS,
        "_init": init,
    }
    point: Any = value_class(frozen=True, slots=True, kw_only=True)(type("Point", (), namespace))
    start = threading.Barrier(8)

    def read(_: int) -> tuple[dataclasses.Field[Any], ...]:
        start.wait()
        return dataclasses.fields(point)

    with ThreadPoolExecutor(8) as pool:
        seen = list(pool.map(read, range(8)))
    assert [[f.name for f in fields] for fields in seen] == [["x", "y"]] * 8
    assert dataclasses.replace(point(x=1), y=2) == point(x=1, y=2)
    assert point.__dataclass_params__.frozen
    assert [f.name for f in dataclasses.fields(type("Sub", (point,), {}))] == ["x", "y"]  # a subclass, as dataclass's


def test_a_value_class_is_built_from_its_declaration_alone() -> None:
    """Fields, defaults and a factory declared in the class statement give slots, __init__ and the shared methods."""
    namespace = {
        "__annotations__": {"x": "int", "y": "int", "tags": "list[str]", "limit": "ClassVar[int]"},
        "__module__": __name__,
        "__qualname__": "Point",
        "y": 2,
        "tags": value_field(default_factory=list, compare=False),
        "limit": 9,
    }
    point: Any = value_class(frozen=True, slots=True)(type("Point", (), namespace))
    assert point.__slots__ == ("x", "y", "tags")
    assert point.__match_args__ == ("x", "y", "tags")
    assert point.limit == 9  # a ClassVar stays a class attribute, not a field
    built = point(1)
    assert (built.x, built.y, built.tags) == (1, 2, [])
    assert point(1, tags=["a"]) == built  # compare=False
    assert repr(built) == "Point(x=1, y=2, tags=[])"
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.x = 3
    # The compiled __init__ has source a debugger and a traceback can show.
    filename = point.__init__.__code__.co_filename
    assert linecache.getline(filename, 2).strip() == "set_x(self, x)"
    assert inspect.signature(point.__init__).parameters["y"].default == 2


def test_a_value_class_refuses_a_field_option_it_does_not_honour() -> None:
    """``field(repr=False)`` (or init=, hash=, ...) is refused when the class is built, naming class, field, option."""
    namespace = {"__annotations__": {"x": "int"}, "__module__": __name__, "x": value_field(default=0, repr=False)}
    with pytest.raises(TypeError, match=r"Cannot build Point: field 'x' asks for repr, .* Use only compare, default"):
        value_class(frozen=True, slots=True, kw_only=True)(type("Point", (), namespace))


def test_the_scripts_write_only_whole_generated_files() -> None:
    """Every file a script in scripts/ writes says so at its top; no hand-written module holds a generated block."""
    marker = re.compile(r"generated by (scripts/\w+\.py)", re.IGNORECASE)
    generators = {f"scripts/{path.name}" for path in (ROOT / "scripts").glob("generate_*.py")}
    written: set[str] = set()
    for path in [*(ROOT / "hookreg").rglob("*.py"), *(ROOT / "docs").rglob("*.md")]:
        lines = path.read_text().splitlines()
        found = [marker.search(line) for line in lines]
        where = [i for i, match in enumerate(found) if match is not None]
        assert all(i < 5 for i in where), f"{path}: a generated block inside a hand-written file"
        written |= {match.group(1) for match in found if match is not None}
        assert not any("written out from the fields" in line for line in lines), path
    assert written == generators  # each generator writes whole files, which name it at their top


def test_a_scratchpad_takes_its_lock_from_the_thread_module_when_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock is looked up when a scratchpad is made, so a thread module patched after import (gevent) applies."""
    import _thread

    made: list[object] = []

    def patched() -> object:
        made.append(lock := threading.RLock())
        return lock

    monkeypatch.setattr(_thread, "RLock", patched)
    pad = Scratchpad()
    assert made == [pad._lock]


@pytest.mark.parametrize("cls", [TurnAction, InvalidToolCallAction])
def test_an_action_accepts_exactly_the_kinds_its_annotation_declares(cls: type[Any]) -> None:
    """The kinds are read off the annotation's text at import; evaluated, the annotation names the same ones."""
    declared = typing.get_args(typing.get_type_hints(cls)["kind"])
    assert len(declared) >= 3
    for kind in declared:
        try:
            cls(kind=kind)
        except HookTypeError as exc:  # a kind that needs a text asks for it; the kind itself is accepted
            assert f"kind={kind!r} and no" in str(exc)  # noqa: PT017 -- one kind of several raises
    bad = "".join(declared)
    with pytest.raises(HookValueError, match=re.escape(f"Use one of {declared}")):
        cls(kind=bad)
