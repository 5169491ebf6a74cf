"""Observers whose code can return only None skip the return test; every other observer's return is tested (DESIGN §3).

The observe loop calls a hook proven by its bytecode to return nothing but
``None`` without testing what it returned. These tests try to break that
proof: every shape by which a function can return a value must still be a
wrong return, whether it is alone or next to proven hooks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import warnings
from collections.abc import Callable
from typing import Any, Final

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from hookreg import HookPoint, HookRegistry, PostTurnContext
from hookreg._registration import CO_VARARGS, CO_YIELDS, returns_only_none

POINT: Final = HookPoint.POST_TURN


def compiled(source: str) -> Callable[[Any], Any]:
    """The function `f` that `source` defines (compiled as a module would be)."""
    namespace: dict[str, Any] = {"contextlib": contextlib}
    exec(compile(source, "<hook>", "exec"), namespace)
    return namespace["f"]  # type: ignore[no-any-return]


def wrong_returns(fn: Callable[[Any], Any], turn: int) -> list[str]:
    """Notify `fn` alone and the failures it logs (their exception types)."""
    registry = HookRegistry()
    registry.register(POINT, fn, name="hook")
    with capture_logs() as logs:
        registry.notify(POINT, PostTurnContext(turn=turn, response_text="r"))
    return [entry["exc_type"] for entry in logs]


# --- which callables are proven -----------------------------------------------------

PROVEN = {
    "no return": "def f(ctx):\n    ctx.turn\n",
    "bare returns in branches": "def f(ctx):\n    if ctx.turn:\n        return\n    for _ in range(2):\n        pass\n",
    "return None": "def f(ctx):\n    return None\n",
    "raises": "def f(ctx):\n    raise ValueError(ctx)\n",
    "lambda returning None": "f = lambda ctx: None\n",
    "a loop that breaks": "def f(ctx):\n    while ctx.turn:\n        break\n",
}

REFUSED = {
    "returns its argument": "def f(ctx):\n    return ctx\n",
    "or None": "def f(ctx):\n    return ctx.turn or None\n",
    "and None": "def f(ctx):\n    return ctx.turn and None\n",
    "conditional with None": "def f(ctx):\n    return ctx.turn if ctx.turn else None\n",
    "None in one branch only": "def f(ctx):\n    if ctx.turn:\n        return None\n    return 1\n",
    "lambda returning a call's value": "f = lambda ctx: str(ctx)\n",
    "generator": "def f(ctx):\n    yield\n",
    "async def": "async def f(ctx):\n    return None\n",
    "async generator": "async def f(ctx):\n    yield\n",
    "types.coroutine": "import types\n@types.coroutine\ndef f(ctx):\n    yield\n",
    "a constant that is not None": "def f(ctx):\n    return 0\n",
}


@pytest.mark.parametrize("source", PROVEN.values(), ids=PROVEN.keys())
def test_functions_whose_every_return_is_none_are_proven(source: str) -> None:
    assert returns_only_none(compiled(source))


@pytest.mark.parametrize("source", REFUSED.values(), ids=REFUSED.keys())
def test_functions_that_can_return_a_value_are_not_proven(source: str) -> None:
    assert not returns_only_none(compiled(source))


def test_only_functions_and_their_bound_methods_are_read() -> None:
    class Watcher:
        def note(self, ctx: object) -> None:
            pass

        def __call__(self, ctx: object) -> None:
            pass

    def note(ctx: object) -> None:
        pass

    assert returns_only_none(Watcher().note)
    assert not returns_only_none(Watcher())  # its __call__ could be replaced on the class
    assert not returns_only_none(functools.partial(note))
    assert not returns_only_none(print)
    assert not returns_only_none(Watcher)


def test_the_code_flags_written_out_are_the_ones_inspect_names() -> None:
    """hookreg writes the code flags out (`import hookreg` does not import inspect); they must be inspect's."""
    import inspect

    assert CO_VARARGS == inspect.CO_VARARGS
    assert CO_YIELDS == (
        inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | inspect.CO_ASYNC_GENERATOR
    )


def test_a_try_block_is_proven_where_python_returns_none_in_one_instruction() -> None:
    fn = compiled("def f(ctx):\n    try:\n        ctx.turn\n    except ValueError:\n        return\n")
    # 3.11 returns None in two instructions, where an exception handler could land: not read further.
    assert returns_only_none(fn) is (sys.version_info >= (3, 12))


# --- what dispatch does with them -----------------------------------------------------


SYNC_REFUSED = {shape: source for shape, source in REFUSED.items() if shape != "async def"}


@pytest.mark.parametrize("source", SYNC_REFUSED.values(), ids=SYNC_REFUSED.keys())
def test_an_observer_that_returns_a_value_is_a_wrong_return_whatever_its_shape(source: str) -> None:
    fn = compiled(source)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine left unclosed would warn
        failures = wrong_returns(fn, turn=1)
    returned = fn(PostTurnContext(turn=1, response_text="r"))
    assert failures == ([] if returned is None else ["HookReturnError"])


def test_a_sync_observer_returning_a_coroutine_through_a_merge_is_closed_and_fails() -> None:
    """`return make() if ctx.turn else None` can return a coroutine: it is tested, closed, and a failure."""
    fn = compiled("async def later():\n    pass\ndef f(ctx):\n    return later() if ctx.turn else None\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would fail here
        assert wrong_returns(fn, turn=1) == ["HookReturnError"]
        assert wrong_returns(fn, turn=0) == []


def test_proven_observers_next_to_one_that_returns_a_value() -> None:
    """A plan mixing proven and tested hooks tests every return; the proven hooks still all run."""
    registry = HookRegistry()
    seen: list[str] = []

    def first(ctx: object) -> None:
        seen.append("first")

    def last(ctx: object) -> None:
        seen.append("last")

    registry.register(POINT, first)
    chatty = registry.register(POINT, lambda ctx: "oops", name="chatty")
    registry.register(POINT, last)
    with capture_logs() as logs:
        registry.notify(POINT, PostTurnContext(turn=1, response_text="r"))
    assert seen == ["first", "last"]
    assert [(entry["hook"], entry["exc_type"]) for entry in logs] == [("chatty", "HookReturnError")]
    # Removing the chatty hook leaves only proven ones: they all still run, and nothing fails.
    chatty.remove()
    seen.clear()
    with capture_logs() as logs:
        registry.notify(POINT, PostTurnContext(turn=1, response_text="r"))
    assert (seen, logs) == (["first", "last"], [])


@pytest.mark.parametrize("policy", ["ignore", "raise"])
def test_a_proven_observer_that_raises_meets_the_policy(policy: str) -> None:
    registry = HookRegistry()
    seen: list[str] = []

    def boom(ctx: object) -> None:
        raise RuntimeError("boom")

    def after(ctx: object) -> None:
        seen.append("after")

    registry.register(POINT, boom, on_error=policy)
    registry.register(POINT, after)
    ctx = PostTurnContext(turn=1, response_text="r")
    with capture_logs() as logs:
        if policy == "raise":
            with pytest.raises(RuntimeError, match="boom"):
                registry.notify(POINT, ctx)
        else:
            registry.notify(POINT, ctx)
            asyncio.run(registry.anotify(POINT, ctx))
    assert seen == ([] if policy == "raise" else ["after", "after"])
    assert [entry["event"] for entry in logs] == ["hook_failed"] * (1 if policy == "raise" else 2)


# --- any function: proven means it returns None -------------------------------------------

VALUES = ["None", "v", "v or None", "v and None", "None if v else v", "v if v else None", "(v, None)[1]", "0"]
CONDITIONS = ["v", "not v", "v is None", "v == 1"]


def _block(depth: int) -> st.SearchStrategy[list[str]]:
    """A block of statements (lines, indented relative to the block), nested up to `depth`."""
    simple = st.one_of(
        st.just(["pass"]),
        st.just(["return"]),
        st.sampled_from(VALUES).map(lambda value: [f"return {value}"]),
        st.sampled_from(VALUES).map(lambda value: [f"v = {value}"]),
    )
    if depth == 0:
        return st.lists(simple, min_size=1, max_size=3).map(lambda parts: [line for part in parts for line in part])
    inner = _block(depth - 1)
    indented = inner.map(lambda lines: ["    " + line for line in lines])
    compound = st.one_of(
        st.tuples(st.sampled_from(CONDITIONS), indented, indented).map(
            lambda t: [f"if {t[0]}:", *t[1], "else:", *t[2]]
        ),
        indented.map(lambda body: ["for _ in range(2):", *body]),
        st.tuples(st.sampled_from(CONDITIONS), indented).map(lambda t: [f"while {t[0]}:", *t[1], "    break"]),
        st.tuples(indented, indented).map(lambda t: ["try:", *t[0], "except ZeroDivisionError:", *t[1]]),
        indented.map(lambda body: ["with contextlib.nullcontext():", *body]),
    )
    return st.lists(st.one_of(simple, compound), min_size=1, max_size=3).map(
        lambda parts: [line for part in parts for line in part]
    )


@given(body=_block(2))
def test_a_proven_function_returns_none_and_a_tested_one_fails_when_it_does_not(body: list[str]) -> None:
    """Random functions: whatever dispatch does matches what the function really returned."""
    fn = compiled("\n".join(["def f(ctx):", "    v = ctx.turn", *("    " + line for line in body)]))
    for turn in (0, 1, 2):
        returned = fn(PostTurnContext(turn=turn, response_text="r"))
        if returns_only_none(fn):
            assert returned is None
        assert wrong_returns(fn, turn) == ([] if returned is None else ["HookReturnError"])
