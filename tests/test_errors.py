"""Bad registrations and dispatches fail where the mistake is made, with clear errors (DESIGN §4)."""

from __future__ import annotations

import asyncio
import pickle
import traceback
from collections.abc import Callable
from typing import Any, Final

import pytest

import hookreg
from hookreg import (
    AsyncHookError,
    HookPoint,
    HookRegError,
    HookRegistry,
    HookResult,
    HookReturnError,
    HookSignatureError,
    PostTurnContext,
    PreToolCallDecideContext,
    PreTurnContext,
    StopRun,
    ToolCallRequest,
)

GATE: Final = HookPoint.PRE_TOOL_CALL_DECIDE


def gate(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow()


def two_params(ctx: object, other: object) -> HookResult:
    return HookResult.allow()


def no_params() -> HookResult:
    return HookResult.allow()


def keyword_only(*, ctx: object) -> HookResult:
    return HookResult.allow()


async def async_gate(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow()


def ctx() -> PreToolCallDecideContext:
    return PreToolCallDecideContext(tool_name="bash", args={}, call_id="c1")


def register(point: object, fn: object, **options: object) -> Callable[[HookRegistry], object]:
    return lambda registry: registry.register(point, fn, **options)  # type: ignore[call-overload]


def dispatch(method: str, point: object, context: object) -> Callable[[HookRegistry], object]:
    """A dispatch made dynamically, as a harness with a computed point would (the type tests cover mypy)."""
    return lambda registry: getattr(registry, method)(point, context)


def decorate(point: str, fn: object, **options: object) -> Callable[[HookRegistry], object]:
    return lambda registry: getattr(registry, point)(**options)(fn)


def adispatch(method: str, point: object, context: object) -> Callable[[HookRegistry], object]:
    return lambda registry: asyncio.run(getattr(registry, method)(point, context))


def with_gate(action: Callable[[HookRegistry], object]) -> Callable[[HookRegistry], object]:
    def run(registry: HookRegistry) -> object:
        registry.register(GATE, gate)
        return action(registry)

    return run


def with_async(action: Callable[[HookRegistry], object]) -> Callable[[HookRegistry], object]:
    def run(registry: HookRegistry) -> object:
        registry.register(GATE, async_gate)
        return action(registry)

    return run


CASES: list[tuple[str, Callable[[HookRegistry], object], type[Exception], list[str]]] = [
    ("not callable", register(GATE, 42), TypeError, ["42", "pre_tool_call_decide", "not callable"]),
    ("two parameters", register(GATE, two_params), TypeError, ["two_params", "pre_tool_call_decide", "one positional"]),
    ("no parameters", register(GATE, no_params), TypeError, ["no_params", "pre_tool_call_decide"]),
    ("keyword-only", register(GATE, keyword_only), TypeError, ["keyword_only", "pre_tool_call_decide"]),
    ("unknown point string", register("pre_tool_call", gate), ValueError, ["pre_tool_call", "pre_tool_call_decide"]),
    ("point of wrong type", register(3, gate), TypeError, ["HookPoint", "int", "gate"]),
    ("priority a string", register(GATE, gate, priority="x"), TypeError, ["priority", "gate", "pre_tool_call_decide"]),
    ("priority a bool", register(GATE, gate, priority=True), TypeError, ["priority", "gate"]),
    ("on_error a number", register(GATE, gate, on_error=3), TypeError, ["on_error", "gate", "pre_tool_call_decide"]),
    ("on_error unknown", register(GATE, gate, on_error="skip"), ValueError, ["skip", "gate", "'deny'"]),
    (
        "deny on a transform",
        register(HookPoint.MODEL_SELECT, gate, on_error="deny"),
        ValueError,
        ["deny", "model_select", "gate"],
    ),
    (
        "deny on an observer",
        register(HookPoint.POST_TURN, gate, on_error="deny"),
        ValueError,
        ["deny", "post_turn", "gate"],
    ),
    ("tools on a turn point", register(HookPoint.PRE_TURN, gate, tools="bash"), ValueError, ["tools=", "pre_turn"]),
    ("empty tools list", register(GATE, gate, tools=[]), ValueError, ["tools=", "gate", "pre_tool_call_decide"]),
    ("empty tools string", register(GATE, gate, tools=""), ValueError, ["tools=", "gate"]),
    ("timeout on a sync hook", register(GATE, gate, timeout=1.0), ValueError, ["timeout=", "async", "gate"]),
    ("timeout zero", register(GATE, async_gate, timeout=0), ValueError, ["timeout=0", "async_gate"]),
    ("timeout infinite", register(GATE, async_gate, timeout=float("inf")), ValueError, ["timeout=inf"]),
    ("timeout a string", register(GATE, async_gate, timeout="1"), TypeError, ["timeout=", "async_gate"]),
    ("empty name", register(GATE, gate, name=""), ValueError, ["name=", "gate", "pre_tool_call_decide"]),
    ("name not a string", register(GATE, gate, name=3), TypeError, ["name=", "gate"]),
    ("decorator bad option", decorate("pre_tool_call_decide", gate, priority=None), TypeError, ["priority", "gate"]),
    ("decorator unknown option", decorate("post_turn", gate, nmae="x"), TypeError, ["nmae", "post_turn"]),
    ("decorator non-callable", decorate("stop", "text"), TypeError, ["'text'", "stop", "not callable"]),
    ("decide on an observe point", dispatch("decide", HookPoint.POST_TURN, ctx()), TypeError, ["post_turn", "notify"]),
    ("transform on a decide point", dispatch("transform", GATE, ctx()), TypeError, ["pre_tool_call_decide", "decide"]),
    ("notify on a transform point", dispatch("notify", "transform_tool_input", ctx()), TypeError, ["transform"]),
    ("atransform on a decide point", adispatch("atransform", GATE, ctx()), TypeError, ["adecide"]),
    ("anotify on a transform point", adispatch("anotify", "model_select", ctx()), TypeError, ["atransform"]),
    (
        "adecide on an observe point",
        adispatch("adecide", "post_turn", ctx()),
        TypeError,
        ["anotify"],
    ),
    (
        "wrong context",
        dispatch("decide", GATE, PreTurnContext(prompt="p", turn=1)),
        TypeError,
        ["PreTurnContext", "PreToolCallDecideContext"],
    ),
    (
        "wrong context, hooked",
        with_gate(dispatch("decide", GATE, PostTurnContext(turn=1, response_text=""))),
        TypeError,
        ["PostTurnContext", "pre_tool_call_decide"],
    ),
    ("unknown point in dispatch", dispatch("decide", "gate", ctx()), ValueError, ["'gate'", "decide"]),
    ("unhashable point in dispatch", dispatch("notify", ["post_turn"], ctx()), TypeError, ["HookPoint", "list"]),
    ("unknown point in has_hooks", lambda r: r.has_hooks("nope"), ValueError, ["'nope'", "hook point"]),
    ("unknown point in callbacks", lambda r: r.callbacks("nope"), ValueError, ["'nope'"]),
    ("unknown point in unregister", lambda r: r.unregister(gate, point="nope"), ValueError, ["'nope'", "unregister"]),
    ("include a non-registry", lambda r: r.include(object()), TypeError, ["include", "HookRegistry"]),  # type: ignore[type-var]
    ("include priority a string", lambda r: r.include(HookRegistry(), priority="1"), TypeError, ["priority"]),  # type: ignore[arg-type]
    ("sync decide of an async hook", with_async(lambda r: r.decide(GATE, ctx())), TypeError, ["async_gate", "adecide"]),
    (
        "sync resolve of an async hook",
        with_async(lambda r: r.resolve_tool_call(ctx())),
        TypeError,
        ["async_gate", "aresolve_tool_call"],
    ),
]


@pytest.mark.parametrize(("action", "builtin", "fragments"), [case[1:] for case in CASES], ids=[c[0] for c in CASES])
def test_bad_use_raises_a_clear_error(
    action: Callable[[HookRegistry], Any], builtin: type[Exception], fragments: list[str]
) -> None:
    """Each wrong use raises a HookRegError that is also the fitting builtin, naming what was wrong."""
    registry = HookRegistry()
    with pytest.raises(HookRegError) as info:
        action(registry)
    assert isinstance(info.value, builtin)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert message.startswith("Cannot ")


def test_errors_carry_point_and_callable() -> None:
    """Registration errors carry the point and the callable as attributes."""
    with pytest.raises(HookSignatureError) as info:
        HookRegistry().register(GATE, two_params)  # type: ignore[arg-type]
    assert (info.value.point, info.value.callback) == (GATE, two_params)


def test_async_error_names_the_hook_before_running_anything() -> None:
    """A sync dispatch of a point holding an async hook runs nothing and names the a-method."""
    registry = HookRegistry()
    calls: list[str] = []
    registry.register(GATE, lambda c: HookResult.deny(str(calls.append("sync"))))  # type: ignore[func-returns-value]
    registry.register(GATE, async_gate, tools="other")  # filtered or not, it refuses
    with pytest.raises(AsyncHookError, match=r"await registry\.adecide") as info:
        registry.decide(GATE, ctx())
    assert calls == []
    assert info.value.callback is async_gate


def test_failed_registration_leaves_the_registry_unchanged() -> None:
    """A refused registration adds nothing."""
    registry = HookRegistry()
    with pytest.raises(HookRegError):
        registry.register(GATE, gate, tools=[])
    assert len(registry) == 0


PUBLIC_ERRORS: Final = sorted(
    name
    for name in hookreg.__all__
    if isinstance(getattr(hookreg, name), type) and issubclass(getattr(hookreg, name), BaseException)
)


def make(name: str) -> BaseException:
    """An instance of the public exception `name`, with the message "m"."""
    return HookReturnError("m", returned_type=list) if name == "HookReturnError" else getattr(hookreg, name)("m")


@pytest.mark.parametrize("name", PUBLIC_ERRORS)
def test_public_exceptions_show_under_the_package(name: str) -> None:
    """A traceback names each public exception as `hookreg.X`, the name users import, not its private module."""
    cls = getattr(hookreg, name)
    assert cls.__module__ == "hookreg"
    assert traceback.format_exception_only(make(name)) == [f"hookreg.{name}: m\n"]


def test_public_exceptions_survive_a_pickle_round_trip() -> None:
    """Each public exception pickles by its public name and comes back with its message and attributes."""
    errors: list[BaseException] = [
        HookReturnError("wrong", point="stop", callback=None, returned_type=list),
        HookRegError("base", point="pre_turn"),
        StopRun("enough"),
        *(make(name) for name in PUBLIC_ERRORS),
    ]
    for error in errors:
        error.add_note("a note")
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert (copy.args, vars(copy)) == (error.args, vars(error))


def test_a_transform_returning_a_list_ends_the_run_in_a_clear_hookreg_error() -> None:
    """A tool-input transform returning a list ends `Harness.run` in `hookreg.HookReturnError` naming what to fix."""
    from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

    registry = HookRegistry()
    registry.register(HookPoint.TRANSFORM_TOOL_INPUT, lambda ctx: ["x"], name="listy")  # type: ignore[arg-type,return-value]  # the mistake under test
    call = ToolCallRequest(tool_name="echo", args={"text": "a"}, call_id="1")
    model = ScriptedModel([ScriptedTurn(tool_calls=[call]), ScriptedTurn(text="done")])
    harness = Harness(model, [echo], registry)
    with pytest.raises(HookReturnError) as info:
        harness.run("go")
    shown = traceback.format_exception_only(info.value)[0]
    assert shown == (
        "hookreg.HookReturnError: Cannot use what hook 'listy' returned at transform_tool_input: "
        "it returned list; expected Mapping[str, object] | None. "
        "Return a value of type Mapping[str, object] | None instead.\n"
    )
    assert (info.value.point, info.value.returned_type) == (HookPoint.TRANSFORM_TOOL_INPUT, list)


def echo(text: str) -> str:
    """A tool that returns its input."""
    return text
