"""Tool: a plain sync or async callable with a name, whose arguments are checked against its signature."""

from __future__ import annotations

import functools
import inspect
import math
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, final

from hookreg import HookTypeError, HookValueError
from hookreg._lifecycle import is_async as _is_async

if TYPE_CHECKING:
    from hookreg.harness._loop import Harness

__all__ = ["Tool"]


def _hints(fn: object) -> dict[str, object]:
    """The resolved annotations of `fn` (or of what it wraps), or none when they cannot be resolved."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if not (inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn)):
        fn = type(fn).__call__  # a callable object: its __call__ carries the annotations
    try:
        return typing.get_type_hints(fn)
    except (TypeError, NameError):  # builtins, or forward references that do not resolve: bind-check only
        return {}


def _delegate(goal: str) -> None:
    """The signature of a subagent tool: one goal."""


@final
class Tool:
    """A tool the harness can call: a plain sync or async callable with a name.

    The model's arguments are bound to the callable's signature, and those
    annotated with a plain class (``str``, ``int``, ``float``, ``bool``,
    ``list``, ``dict``...) are checked with `isinstance` (an ``int`` passes
    for ``float``), before any hook sees the call.

    Example:
        >>> def shell(command: str, timeout: float = 10.0) -> str: ...
        >>> Tool(shell).check({"command": 42})
        "argument 'command' must be str, not int"

    Attributes:
        fn: The callable.
        name: The name the model calls it by.
        timeout: Seconds an async tool may take, or ``None``.
        is_async: Whether `fn` is async.
        subagent: The harness this tool runs at depth + 1 (see `Harness.as_tool`), or ``None``.
    """

    __slots__ = ("_hints", "_signature", "fn", "is_async", "name", "subagent", "timeout")

    def __init__(self, fn: Callable[..., object], /, *, name: str | None = None, timeout: float | None = None) -> None:
        """Wrap `fn`; `name` defaults to its ``__name__``.

        Raises:
            HookTypeError: `fn` is not callable or has no usable signature.
            HookValueError: The name is empty or missing, or `timeout` is given
                for a sync callable or is not a positive finite number.
        """
        if not callable(fn):
            msg = f"Cannot make a tool of {fn!r}: it is not callable. Pass a function."
            raise HookTypeError(msg, callback=fn)
        tool_name = name if name is not None else getattr(fn, "__name__", "")
        if not isinstance(tool_name, str) or not tool_name.isidentifier():
            msg = f"Cannot make a tool of {fn!r}: its name {tool_name!r} is not an identifier. Pass name=..."
            raise HookValueError(msg, callback=fn)
        self.fn: Callable[..., object] = fn
        self.name: str = tool_name
        self.is_async: bool = _is_async(fn)
        if timeout is not None:
            if not self.is_async:
                msg = (
                    f"Cannot give tool {tool_name!r} a timeout: it is sync, and a sync call cannot be interrupted. "
                    "Make it an async def, or enforce the limit inside the tool."
                )
                raise HookValueError(msg, callback=fn)
            if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
                msg = (
                    f"Cannot give tool {tool_name!r} the timeout {timeout!r}: it must be a positive number of seconds."
                )
                raise HookValueError(msg, callback=fn)
        self.timeout: float | None = timeout
        self.subagent: Harness | None = None
        self._hints = _hints(fn)
        try:
            self._signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            msg = f"Cannot make a tool of {fn!r}: its signature cannot be read ({exc}). Wrap it in a plain function."
            raise HookTypeError(msg, callback=fn) from exc

    @classmethod
    def for_subagent(cls, harness: Harness, /, *, name: str) -> Tool:
        """A tool taking one ``goal: str`` that runs `harness` as a subagent (see `Harness.as_tool`)."""
        tool = cls(_delegate, name=name)
        tool.subagent = harness
        return tool

    def check(self, args: Mapping[str, object], /) -> str | None:
        """Return why `args` cannot be passed to this tool, or ``None`` when they can."""
        try:
            bound = self._signature.bind(**args)
        except TypeError as exc:
            return str(exc)
        for arg, value in bound.arguments.items():
            kind = self._signature.parameters[arg].kind
            hint = self._hints.get(arg)
            if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) or not isinstance(hint, type):
                continue
            accepted: tuple[type, ...] = (int, float) if hint is float else (hint,)
            if not isinstance(value, accepted) or (isinstance(value, bool) and hint in (int, float)):
                return f"argument {arg!r} must be {hint.__name__}, not {type(value).__name__}"
        return None

    def __repr__(self) -> str:
        return f"Tool({self.name!r}{', async' if self.is_async else ''})"
