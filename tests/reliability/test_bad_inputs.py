"""The bad-input catalogue: wrong uses of registration, dispatch, contexts, results and policies.

Each row is one mistake a user can make, the hookreg error class it must
raise, the builtin the same error must also be (DESIGN §4, Errors), and
fragments its message must hold: the point and the callable's name wherever
one is involved, and what went wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from hookreg import (
    AsyncHookError,
    HookPoint,
    HookRegError,
    HookRegistry,
    HookResult,
    HookReturnError,
    HookSignatureError,
    HookTypeError,
    HookValueError,
    IncludeError,
    PreToolCallDecideContext,
    PreTurnContext,
    RequestPatch,
    StopContext,
    TurnAction,
)

from ._support import make_context


def my_gate(ctx: Any) -> HookResult:
    """A well-formed gate."""
    return HookResult.allow()


def two_params(ctx: Any, extra: Any) -> HookResult:
    """A hook that wants two arguments."""
    return HookResult.allow()


def no_params() -> HookResult:
    """A hook that takes no context."""
    return HookResult.allow()


def needs_keyword(ctx: Any, *, flag: bool) -> HookResult:
    """A hook with a required keyword-only parameter."""
    return HookResult.allow()


async def slow_gate(ctx: Any) -> HookResult:
    """A well-formed async gate."""
    return HookResult.allow()


def forgets_return(ctx: Any) -> HookResult:
    """A gate whose author forgot ``return``."""
    return None  # type: ignore[return-value]  # the mistake under test


def returns_coroutine(ctx: Any) -> Any:
    """A sync callable that hands back an awaitable."""
    return slow_gate(ctx)


def dyn(value: object) -> Any:
    """`value`, typed as Any: the catalogue makes the wrong calls a dynamic caller can make."""
    return value


class Bad(NamedTuple):
    """One wrong use: what to do, what it raises, and what the message says."""

    id: str
    action: Callable[[HookRegistry], object]
    error: type[HookRegError]
    builtin: type[Exception]
    fragments: tuple[str, ...]


def register(point: object, fn: object, **options: Any) -> Callable[[HookRegistry], object]:
    """An action registering `fn` at `point` with `options`, bypassing static types as a dynamic caller would."""
    return lambda registry: dyn(registry).register(point, fn, **options)


def with_hooks(
    *hooks: tuple[HookPoint, object], then: Callable[[HookRegistry], object]
) -> Callable[[HookRegistry], object]:
    """An action that registers `hooks`, then does `then`."""

    def action(registry: HookRegistry) -> object:
        for point, fn in hooks:
            dyn(registry).register(point, fn)
        return then(registry)

    return action


def include_diamond(registry: HookRegistry) -> object:
    """Include one registry through two paths."""
    shared, left, right = HookRegistry(), HookRegistry(), HookRegistry()
    left.include(shared)
    right.include(shared)
    registry.include(left)
    return registry.include(right)


def include_cycle(registry: HookRegistry) -> object:
    """Include a registry that already includes this one."""
    child = HookRegistry()
    child.include(registry)
    return registry.include(child)


def include_via_parent(registry: HookRegistry) -> object:
    """Include a registry that a parent of this registry already reaches."""
    parent, shared = HookRegistry(), HookRegistry()
    parent.include(registry)
    parent.include(shared)
    return registry.include(shared)


def async_with_policy(registry: HookRegistry) -> object:
    """Dispatch a wrong context through the async surface, where async hooks are present."""
    registry.register(HookPoint.PRE_TURN, slow_gate)
    return asyncio.run(dyn(registry).adecide(HookPoint.PRE_TURN, make_context(HookPoint.STOP)))


D = HookPoint.PRE_TOOL_CALL_DECIDE
T = HookPoint.TRANSFORM_TOOL_INPUT
O = HookPoint.POST_TOOL_CALL  # noqa: E741 -- O for observe, next to D and T
GATE_CTX = make_context(D)

CATALOGUE = [
    # --- registration: the callable ---
    Bad("not-callable", register(D, 42), HookSignatureError, TypeError, ("42", "pre_tool_call_decide", "not callable")),
    Bad(
        "two-params",
        register(D, two_params),
        HookSignatureError,
        TypeError,
        ("two_params", "pre_tool_call_decide", "one positional"),
    ),
    Bad(
        "no-params",
        register(D, no_params),
        HookSignatureError,
        TypeError,
        ("no_params", "pre_tool_call_decide", "one positional"),
    ),
    Bad(
        "required-keyword",
        register(D, needs_keyword),
        HookSignatureError,
        TypeError,
        ("needs_keyword", "one positional"),
    ),
    Bad(
        "async-two-params",
        register(D, lambda a, b: None),
        HookSignatureError,
        TypeError,
        ("<lambda>", "one positional"),
    ),
    # --- registration: the point ---
    Bad("point-int", register(3, my_gate), HookTypeError, TypeError, ("my_gate", "HookPoint", "int")),
    Bad("point-none", register(None, my_gate), HookTypeError, TypeError, ("my_gate", "HookPoint", "NoneType")),
    Bad(
        "point-typo",
        register("pre_tool_call", my_gate),
        HookValueError,
        ValueError,
        ("my_gate", "'pre_tool_call'", "pre_tool_call_decide"),
    ),
    Bad(
        "point-name-not-value",
        register("PRE_TURN", my_gate),
        HookValueError,
        ValueError,
        ("my_gate", "'PRE_TURN'", "not a hook point"),
    ),
    # --- registration: options ---
    Bad(
        "on-error-int",
        register(D, my_gate, on_error=3),
        HookTypeError,
        TypeError,
        ("my_gate", "pre_tool_call_decide", "on_error="),
    ),
    Bad(
        "on-error-unknown",
        register(D, my_gate, on_error="fail"),
        HookValueError,
        ValueError,
        ("my_gate", "'fail'", "decide"),
    ),
    Bad(
        "on-error-deny-observer",
        register(O, my_gate, on_error="deny"),
        HookValueError,
        ValueError,
        ("my_gate", "post_tool_call", "observe"),
    ),
    Bad(
        "on-error-deny-transform",
        register(T, my_gate, on_error="deny"),
        HookValueError,
        ValueError,
        ("my_gate", "transform_tool_input", "'deny'"),
    ),
    Bad(
        "priority-str",
        register(D, my_gate, priority="x"),
        HookTypeError,
        TypeError,
        ("my_gate", "pre_tool_call_decide", "priority="),
    ),
    Bad(
        "priority-bool", register(D, my_gate, priority=True), HookTypeError, TypeError, ("my_gate", "priority=", "bool")
    ),
    Bad(
        "priority-float",
        register(D, my_gate, priority=1.5),
        HookTypeError,
        TypeError,
        ("my_gate", "priority=", "float"),
    ),
    Bad(
        "name-empty",
        register(D, my_gate, name=""),
        HookValueError,
        ValueError,
        ("my_gate", "pre_tool_call_decide", "name="),
    ),
    Bad("name-int", register(D, my_gate, name=7), HookTypeError, TypeError, ("my_gate", "name=", "int")),
    Bad(
        "tools-unscoped",
        register(HookPoint.PRE_TURN, my_gate, tools="bash"),
        HookValueError,
        ValueError,
        ("my_gate", "pre_turn", "tools="),
    ),
    Bad(
        "tools-empty-str",
        register(D, my_gate, tools=""),
        HookValueError,
        ValueError,
        ("my_gate", "pre_tool_call_decide", "tools="),
    ),
    Bad("tools-empty-list", register(D, my_gate, tools=[]), HookValueError, ValueError, ("my_gate", "tools=")),
    Bad(
        "tools-empty-pattern",
        register(D, my_gate, tools=["bash", ""]),
        HookValueError,
        ValueError,
        ("my_gate", "tools="),
    ),
    # An option of the wrong type is a TypeError (DESIGN §4), for tools= as for on_error= and priority=.
    Bad(
        "tools-int",
        register(D, my_gate, tools=3),
        HookTypeError,
        TypeError,
        ("my_gate", "pre_tool_call_decide", "tools="),
    ),
    Bad("tools-int-pattern", register(D, my_gate, tools=["bash", 3]), HookTypeError, TypeError, ("my_gate", "tools=")),
    Bad(
        "timeout-sync",
        register(D, my_gate, timeout=1.0),
        HookValueError,
        ValueError,
        ("my_gate", "pre_tool_call_decide", "async"),
    ),
    Bad(
        "timeout-zero",
        register(D, slow_gate, timeout=0),
        HookValueError,
        ValueError,
        ("slow_gate", "timeout=", "positive"),
    ),
    Bad(
        "timeout-negative", register(D, slow_gate, timeout=-1.0), HookValueError, ValueError, ("slow_gate", "positive")
    ),
    Bad(
        "timeout-inf", register(D, slow_gate, timeout=float("inf")), HookValueError, ValueError, ("slow_gate", "finite")
    ),
    Bad(
        "timeout-nan", register(D, slow_gate, timeout=float("nan")), HookValueError, ValueError, ("slow_gate", "finite")
    ),
    Bad(
        "timeout-huge-int",
        register(D, slow_gate, timeout=10**400),
        HookValueError,
        ValueError,
        ("slow_gate", "timeout=", "at most 1e9"),
    ),
    Bad(
        "timeout-past-1e9",
        register(D, slow_gate, timeout=1e9 + 1),
        HookValueError,
        ValueError,
        ("slow_gate", "timeout=1000000001.0", "at most 1e9"),
    ),
    Bad(
        "timeout-huge-float", register(D, slow_gate, timeout=1e300), HookValueError, ValueError, ("slow_gate", "1e+300")
    ),
    Bad("timeout-str", register(D, slow_gate, timeout="1"), HookTypeError, TypeError, ("slow_gate", "timeout=", "str")),
    Bad(
        "timeout-bool",
        register(D, slow_gate, timeout=True),
        HookTypeError,
        TypeError,
        ("slow_gate", "timeout=", "bool"),
    ),
    # --- registration through decorators: validated when applied, naming the function ---
    Bad(
        "decorator-bad-policy",
        lambda r: dyn(r).pre_turn(on_error="nope")(my_gate),
        HookValueError,
        ValueError,
        ("my_gate", "pre_turn", "'nope'"),
    ),
    Bad(
        "decorator-tools-unscoped",
        lambda r: dyn(r).stop(tools=["bash"])(my_gate),
        HookValueError,
        ValueError,
        ("my_gate", "stop", "tools="),
    ),
    Bad(
        "decorator-unknown-option",
        lambda r: dyn(r).pre_turn(prio=3)(my_gate),
        HookTypeError,
        TypeError,
        ("pre_turn", "prio"),
    ),
    Bad(
        "decorator-timeout-sync",
        lambda r: dyn(r).pre_turn(timeout=2.0)(my_gate),
        HookValueError,
        ValueError,
        ("my_gate", "pre_turn", "async"),
    ),
    # --- dispatch ---
    Bad(
        "decide-wrong-context",
        lambda r: dyn(r).decide(D, make_context(HookPoint.STOP)),
        HookTypeError,
        TypeError,
        ("pre_tool_call_decide", "StopContext", "PreToolCallDecideContext"),
    ),
    Bad(
        "decide-none-context",
        lambda r: dyn(r).decide(D, None),
        HookTypeError,
        TypeError,
        ("pre_tool_call_decide", "NoneType"),
    ),
    Bad(
        "decide-observer-point",
        lambda r: dyn(r).decide(O, make_context(O)),
        HookTypeError,
        TypeError,
        ("post_tool_call", "observe", "notify"),
    ),
    Bad(
        "transform-decide-point",
        lambda r: dyn(r).transform(D, GATE_CTX),
        HookTypeError,
        TypeError,
        ("pre_tool_call_decide", "decide"),
    ),
    Bad(
        "notify-transform-point",
        lambda r: dyn(r).notify(T, GATE_CTX),
        HookTypeError,
        TypeError,
        ("transform_tool_input", "transform"),
    ),
    Bad(
        "anotify-decide-point",
        lambda r: asyncio.run(dyn(r).anotify(D, GATE_CTX)),
        HookTypeError,
        TypeError,
        ("pre_tool_call_decide", "adecide"),
    ),
    Bad(
        "decide-unknown-point",
        lambda r: dyn(r).decide("pre_tool", GATE_CTX),
        HookValueError,
        ValueError,
        ("'pre_tool'", "not a hook point"),
    ),
    Bad("decide-point-int", lambda r: dyn(r).decide(7, GATE_CTX), HookTypeError, TypeError, ("HookPoint", "int")),
    Bad(
        "adecide-wrong-context",
        async_with_policy,
        HookTypeError,
        TypeError,
        ("pre_turn", "StopContext", "PreTurnContext"),
    ),
    Bad(
        "sync-dispatch-async-hook",
        with_hooks((D, slow_gate), then=lambda r: dyn(r).decide(D, GATE_CTX)),
        AsyncHookError,
        TypeError,
        ("slow_gate", "pre_tool_call_decide", "adecide"),
    ),
    Bad(
        "sync-dispatch-filtered-async-hook",
        lambda r: (dyn(r).register(D, slow_gate, tools="other"), dyn(r).decide(D, GATE_CTX)),
        AsyncHookError,
        TypeError,
        ("slow_gate", "adecide"),
    ),
    Bad(
        "resolve-async-observer",
        with_hooks((HookPoint.PERMISSION_DENIED, slow_gate), then=lambda r: dyn(r).resolve_tool_call(GATE_CTX)),
        AsyncHookError,
        TypeError,
        ("slow_gate", "permission_denied", "aresolve_tool_call"),
    ),
    Bad(
        "resolve-wrong-context",
        lambda r: dyn(r).resolve_tool_call(make_context(HookPoint.STOP)),
        HookTypeError,
        TypeError,
        ("StopContext", "PreToolCallDecideContext"),
    ),
    # --- results: wrong returns under on_error="raise" ---
    Bad(
        "forgotten-return",
        lambda r: (dyn(r).register(D, forgets_return, on_error="raise"), dyn(r).decide(D, GATE_CTX)),
        HookReturnError,
        TypeError,
        ("forgets_return", "pre_tool_call_decide", "NoneType"),
    ),
    Bad(
        "bool-return",
        lambda r: (dyn(r).register(D, lambda ctx: True, on_error="raise"), dyn(r).decide(D, GATE_CTX)),
        HookReturnError,
        TypeError,
        ("<lambda>", "pre_tool_call_decide", "bool"),
    ),
    Bad(
        "awaitable-return",
        lambda r: (dyn(r).register(D, returns_coroutine, on_error="raise"), dyn(r).decide(D, GATE_CTX)),
        HookReturnError,
        TypeError,
        ("returns_coroutine", "awaitable"),
    ),
    Bad(
        "turn-action-at-gate",
        lambda r: (dyn(r).register(D, lambda ctx: TurnAction.repeat(), on_error="raise"), dyn(r).decide(D, GATE_CTX)),
        HookReturnError,
        TypeError,
        ("pre_tool_call_decide", "TurnAction"),
    ),
    Bad(
        "str-args-transform",
        lambda r: (dyn(r).register(T, lambda ctx: "rm -rf"), dyn(r).transform(T, GATE_CTX)),
        HookReturnError,
        TypeError,
        ("transform_tool_input", "str", "Mapping"),
    ),
    Bad(
        "dict-patch-transform",
        lambda r: (
            dyn(r).register(HookPoint.PRE_MODEL_CALL, lambda ctx: {"preamble": "x"}),
            dyn(r).transform(HookPoint.PRE_MODEL_CALL, make_context(HookPoint.PRE_MODEL_CALL)),
        ),
        HookReturnError,
        TypeError,
        ("pre_model_call", "dict", "RequestPatch"),
    ),
    Bad(
        "observer-returns-value",
        lambda r: (dyn(r).register(O, lambda ctx: "done", on_error="raise"), dyn(r).notify(O, make_context(O))),
        HookReturnError,
        TypeError,
        ("post_tool_call", "str", "None"),
    ),
    # --- inclusion, removal, introspection ---
    Bad("include-self", lambda r: dyn(r).include(r), IncludeError, ValueError, ("itself",)),
    Bad("include-cycle", include_cycle, IncludeError, ValueError, ("cycle",)),
    Bad("include-diamond", include_diamond, IncludeError, ValueError, ("twice",)),
    Bad("include-via-parent", include_via_parent, IncludeError, ValueError, ("twice",)),
    Bad(
        "include-twice",
        lambda r: (r.include(child := HookRegistry()), r.include(child)),
        IncludeError,
        ValueError,
        ("twice",),
    ),
    Bad("include-not-registry", lambda r: dyn(r).include(object()), HookTypeError, TypeError, ("HookRegistry",)),
    Bad(
        "include-priority-str",
        lambda r: dyn(r).include(HookRegistry(), priority="1"),
        HookTypeError,
        TypeError,
        ("priority=", "str"),
    ),
    Bad(
        "unregister-unknown-point",
        lambda r: dyn(r).unregister(my_gate, "pre_tool"),
        HookValueError,
        ValueError,
        ("'pre_tool'", "my_gate"),
    ),
    Bad("clear-unknown-point", lambda r: dyn(r).clear("bogus"), HookValueError, ValueError, ("'bogus'", "clear")),
    Bad("callbacks-point-int", lambda r: dyn(r).callbacks(3), HookTypeError, TypeError, ("HookPoint", "int")),
    Bad("has-hooks-unhashable", lambda r: dyn(r).has_hooks([]), HookTypeError, TypeError, ("HookPoint", "list")),
]


def test_catalogue_is_large_and_distinct() -> None:
    """The catalogue holds at least 40 distinct wrong uses."""
    ids = [bad.id for bad in CATALOGUE]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 40


@pytest.mark.parametrize("bad", CATALOGUE, ids=[bad.id for bad in CATALOGUE])
def test_bad_input(bad: Bad) -> None:
    """The wrong use raises its hookreg error, which is also the builtin, and the message names what matters."""
    registry = HookRegistry()
    with pytest.raises(bad.error, match=re.escape(bad.fragments[0])) as raised:
        bad.action(registry)
    assert isinstance(raised.value, bad.builtin)
    message = str(raised.value)
    for fragment in bad.fragments:
        assert fragment in message
    assert message.startswith(("Cannot ", "Hook ")), message


def test_failed_registration_leaves_no_trace() -> None:
    """A refused registration registers nothing, even when an earlier option was valid."""
    registry = HookRegistry()
    for bad in CATALOGUE[:35]:
        with pytest.raises(HookRegError, match="Cannot"):
            bad.action(registry)
    assert len(registry) == 0


VALUE_MISUSES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    (
        "context-args-item",
        lambda: operator.setitem(GATE_CTX.args, "path", "/"),
        TypeError,
        "does not support item assignment",
    ),
    ("context-field", lambda: setattr(GATE_CTX, "tool_name", "rm"), dataclasses.FrozenInstanceError, "tool_name"),
    ("context-positional", lambda: dyn(PreTurnContext)("hi", 1), TypeError, "positional"),
    ("context-missing-field", lambda: dyn(PreToolCallDecideContext)(tool_name="bash", call_id="1"), TypeError, "args"),
    (
        "context-history-append",
        lambda: make_context(HookPoint.PRE_MODEL_CALL).history.append(None),
        AttributeError,
        "append",
    ),
    (
        "result-field",
        lambda: setattr(HookResult.allow(), "decision", "deny"),
        dataclasses.FrozenInstanceError,
        "decision",
    ),
    ("deny-without-reason", lambda: dyn(HookResult).deny(), TypeError, "reason"),
    ("patch-field", lambda: setattr(RequestPatch(), "preamble", "x"), dataclasses.FrozenInstanceError, "preamble"),
    (
        "patch-params-item",
        lambda: operator.setitem(dyn(RequestPatch(additional_params={})).additional_params, "k", 1),
        TypeError,
        "item assignment",
    ),
    (
        "turn-action-field",
        lambda: setattr(TurnAction.repeat(), "kind", "continue"),
        dataclasses.FrozenInstanceError,
        "kind",
    ),
    (
        "stop-context-field",
        lambda: setattr(StopContext(response_text="", continuation_count=0), "continuation_count", 9),
        dataclasses.FrozenInstanceError,
        "continuation_count",
    ),
    (
        "registration-field",
        lambda: setattr(HookRegistry().register(D, my_gate), "priority", 5),
        AttributeError,
        "read-only",
    ),
]


@pytest.mark.parametrize(("case", "action", "error", "fragment"), VALUE_MISUSES, ids=[m[0] for m in VALUE_MISUSES])
def test_value_misuse(case: str, action: Callable[[], object], error: type[Exception], fragment: str) -> None:
    """Contexts, results, patches and handles refuse in-place changes with the builtin a caller expects."""
    with pytest.raises(error, match=re.escape(fragment)):
        action()
