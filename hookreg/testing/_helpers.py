"""Build contexts with sensible defaults, and call one hook or one point in isolation."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from hookreg import (
    AsyncHookError,
    DispatchRecord,
    FinishReason,
    HookPoint,
    HookRegistry,
    HookTypeError,
    Message,
    Registration,
    RequestPatch,
    RunOutcome,
    ToolErrorKind,
)

__all__ = ["acall_hook", "acall_point", "call_hook", "call_point", "make_context"]

_CtxT = TypeVar("_CtxT")
_ResultT = TypeVar("_ResultT")

# A default for every context field but ``run``, by field name (``error`` depends on the point).
_DEFAULTS: Final[dict[str, Callable[[], object]]] = {
    "session_id": lambda: "",  # a session context fills in its run's
    "goal": lambda: "test goal",
    "content": lambda: "hello",
    "prompt": lambda: "hello",
    "turn": lambda: 1,
    "history": lambda: (Message(role="user", content="hello"),),
    "patch": RequestPatch,
    "default_model": lambda: "test-model",
    "selected_model": lambda: "test-model",
    "delta": lambda: "",
    "aggregated": lambda: "",
    "call_id": lambda: "call-1",
    "tool_name": lambda: "test_tool",
    "text": lambda: "",
    "tool_calls": tuple,
    "finish_reason": lambda: FinishReason.STOP,
    "raw_finish_reason": lambda: None,
    "message_id": lambda: None,
    "model": lambda: None,
    "raw_args": lambda: None,
    "max_tokens": lambda: None,
    "usage": dict,
    "args": dict,
    "available_tools": lambda: ("test_tool",),
    "error": lambda: RuntimeError("test error"),
    "reason": lambda: "test reason",
    "decided_by": lambda: None,
    "duration_ms": lambda: 0.0,
    "kind": lambda: ToolErrorKind.EXCEPTION,
    "message": lambda: "test message",
    "raw_result": lambda: "ok",
    "presentation": lambda: "ok",
    "result": lambda: "ok",
    "metadata": dict,
    "response_text": lambda: "done",
    "transcript_len": lambda: 0,
    "message_count": lambda: 0,
    "removed": lambda: 0,
    "summary_chars": lambda: 0,
    "question": lambda: "Proceed?",
    "options": lambda: ("yes", "no"),
    "depth": lambda: 1,
    "outcome": lambda: RunOutcome(status="completed"),
    "continuation_count": lambda: 0,
}


def make_context(point: HookPoint | str, /, **fields: object) -> object:
    """Build `point`'s context: every field you leave out gets a plain default.

    Tools are called ``"test_tool"`` with ``call_id="call-1"`` and empty
    ``args``; texts are short placeholders; counts are 0 (``turn`` and
    ``depth`` are 1); ``run`` is a fresh detached RunContext.

    Example:
        >>> make_context(HookPoint.PRE_TOOL_CALL_DECIDE, tool_name="bash").tool_name
        'bash'

    Raises:
        HookTypeError: A field the context does not have.
    """
    hook_point = HookPoint(point)
    context = hook_point.context
    names = [f.name for f in dataclasses.fields(context)]
    unknown = sorted(set(fields) - set(names))
    if unknown:
        msg = (
            f"Cannot make a {context.__name__} for {hook_point}: it has no field(s) {unknown}. Its fields are {names}."
        )
        raise HookTypeError(msg, point=hook_point)
    kinds = {f.name: f.type for f in dataclasses.fields(context)}
    values = {name: fields[name] if name in fields else _default(name, kinds[name]) for name in names if name != "run"}
    if "run" in fields:
        values["run"] = fields["run"]
    return context(**values)


def _default(name: str, kind: object) -> object:
    if name == "error" and kind == "str":  # what went wrong, in words (invalid_tool_call), not an exception
        return "unknown tool"
    return _DEFAULTS[name]()


def _context(point: HookPoint, ctx: object, fields: dict[str, object]) -> object:
    if ctx is None:
        return make_context(point, **fields)
    if fields:
        msg = f"Cannot call a hook at {point} with both ctx= and fields {sorted(fields)}. Pass one or the other."
        raise HookTypeError(msg, point=point)
    return ctx


def _hook(point: HookPoint | str, fn: Callable[..., object]) -> Registration:
    """`fn` as registering it at `point` makes it, on a registry of its own: checked, named, sync or async.

    So call_hook takes a hook as dispatch would: registration's own signature check, name and async test.
    """
    return HookRegistry().register(HookPoint(point), fn)  # type: ignore[arg-type]  # any callable: registering checks it


def _hook_context(hook: Registration, ctx: object, fields: dict[str, object]) -> object:
    """The context to call `hook` with; one of another class is refused, as dispatch refuses it."""
    context = _context(hook.point, ctx, fields)
    expected = hook.point.context
    if context.__class__ is not expected:
        msg = (
            f"Cannot call hook {hook.name!r} at {hook.point} with {type(context).__name__}: this point takes a "
            f"{expected.__name__}. Build a {expected.__name__}(...) for it, or pass its fields instead."
        )
        raise HookTypeError(msg, point=hook.point, callback=hook.callback)
    return context


def _checked(hook: Registration, value: object) -> object:
    """`value`, when `hook`'s point accepts it; else the HookReturnError dispatch raises (dispatch's own check)."""
    hook.check_return(value)
    return value


def call_hook(
    point: HookPoint | str, fn: Callable[[_CtxT], _ResultT], /, ctx: _CtxT | None = None, **fields: object
) -> _ResultT:
    """Call the sync hook `fn` alone, as `point` would, and return what it returned.

    The context is `ctx`, or ``make_context(point, **fields)``. What the hook
    raises propagates unchanged (no failure policy applies), so a test sees
    the real error. A return the point does not accept raises.

    Example:
        >>> from hookreg import HookResult
        >>> call_hook(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny("no"), tool_name="bash").reason
        'no'

    Raises:
        HookReturnError: The hook returned something `point` does not accept.
        AsyncHookError: `fn` is async: use `acall_hook`.
        HookSignatureError: `fn` cannot be registered at `point` (it must take the one context).
        HookTypeError: `ctx` is not `point`'s context class, or came with fields.
        HookValueError: `point` names no hook point.
    """
    hook = _hook(point, fn)
    if hook.is_async:
        msg = (
            f"Cannot call hook {hook.name!r} at {hook.point} synchronously: it is async. "
            "Call `await acall_hook(...)` instead."
        )
        raise AsyncHookError(msg, point=hook.point, callback=fn)
    value = fn(_hook_context(hook, ctx, fields))  # type: ignore[arg-type]  # built for the point
    return _checked(hook, value)  # type: ignore[return-value]  # checked for the point


async def acall_hook(
    point: HookPoint | str, fn: Callable[[_CtxT], Awaitable[_ResultT]], /, ctx: _CtxT | None = None, **fields: object
) -> _ResultT:
    """The async twin of `call_hook`: await the async hook `fn` alone and return what it returned."""
    hook = _hook(point, fn)
    value: object = await fn(_hook_context(hook, ctx, fields))  # type: ignore[arg-type]  # built for the point
    return _checked(hook, value)  # type: ignore[return-value]  # checked for the point


def _prepare(
    registry: HookRegistry, point: HookPoint | str, ctx: object, fields: dict[str, object]
) -> tuple[HookPoint, object]:
    hook_point = HookPoint(point)
    return hook_point, _context(hook_point, ctx, fields)  # dispatch itself refuses a context of another class


def call_point(
    registry: HookRegistry, point: HookPoint | str, /, ctx: object = None, **fields: object
) -> DispatchRecord:
    """Dispatch `point` on `registry` alone, traced, and return the dispatch's record.

    The context is `ctx`, or ``make_context(point, **fields)``. The record
    holds the result (``record.result``), the hooks called in order
    (``record.hooks``) and the decider (``record.decided_by``). What the
    dispatch raises propagates.

    Example:
        >>> from hookreg import HookResult
        >>> registry = HookRegistry()
        >>> _ = registry.register(HookPoint.PRE_TURN, lambda ctx: HookResult.deny("later"), name="wait")
        >>> call_point(registry, HookPoint.PRE_TURN).decided_by
        'wait'
    """
    hook_point, context = _prepare(registry, point, ctx, fields)
    dispatch: Callable[[HookPoint, object], object] = getattr(registry, hook_point.style.method)
    with registry.trace() as trace:
        dispatch(hook_point, context)
    return trace[0]


async def acall_point(
    registry: HookRegistry, point: HookPoint | str, /, ctx: object = None, **fields: object
) -> DispatchRecord:
    """The async twin of `call_point`: awaits async hooks, calls sync ones inline."""
    hook_point, context = _prepare(registry, point, ctx, fields)
    dispatch: Callable[[HookPoint, object], Awaitable[object]] = getattr(registry, hook_point.style.amethod)
    with registry.trace() as trace:
        await dispatch(hook_point, context)
    return trace[0]
