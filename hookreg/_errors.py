"""The exceptions and warnings hookreg raises, and the `StopRun` signal hooks raise.

Every error hookreg raises is a `HookRegError` and also the builtin a caller
would catch::

    HookRegError(Exception)
    ├── HookTypeError(HookRegError, TypeError)
    │   ├── HookSignatureError   not callable, wrong number of parameters
    │   ├── HookReturnError      a hook returned the wrong type
    │   └── AsyncHookError       an async hook met a sync dispatch
    └── HookValueError(HookRegError, ValueError)
        └── IncludeError         include() of self, a cycle, or a double reach

    DuplicateHookWarning(UserWarning)
    StopRun(Exception)           raised by hooks to end the run; not a HookRegError
"""

from __future__ import annotations

from collections.abc import Mapping
from types import FrameType
from typing import Any

__all__ = [
    "AsyncHookError",
    "DuplicateHookWarning",
    "HookRegError",
    "HookReturnError",
    "HookSignatureError",
    "HookTypeError",
    "HookValueError",
    "IncludeError",
    "StopRun",
]


class HookRegError(Exception):
    """Base class of every error hookreg raises.

    Attributes:
        point: The hook point involved, when there is one.
        callback: The callable involved, when there is one.
    """

    def __init__(self, message: str, *, point: str | None = None, callback: object = None) -> None:
        super().__init__(message)
        self.point = point
        self.callback = callback

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and copy without calling ``__init__``, whose keyword-only attributes come back as state."""
        return type(self).__new__, (type(self), *self.args), vars(self)


class HookTypeError(HookRegError, TypeError):
    """Something of the wrong type: a point, an option, a context, a style."""


class HookSignatureError(HookTypeError):
    """A hook that is not callable, or cannot be called with one context."""


class HookReturnError(HookTypeError):
    """A hook returned something its point does not accept.

    Attributes:
        returned_type: The type of the value the hook returned.
    """

    def __init__(self, message: str, *, point: str | None = None, callback: object = None, returned_type: type) -> None:
        super().__init__(message, point=point, callback=callback)
        self.returned_type = returned_type


class AsyncHookError(HookTypeError):
    """A sync dispatch met an async hook; the `a`-method must be used."""


class HookValueError(HookRegError, ValueError):
    """A value hookreg does not accept: an unknown point, an option out of range."""


class IncludeError(HookValueError):
    """An inclusion that would run some registry's hooks twice, or forever."""


class DuplicateHookWarning(UserWarning):
    """The very same callable was registered again at a point without `name=`: it will run twice."""


class StopRun(Exception):  # noqa: N818 -- a signal, named for what it does, like StopIteration
    """Raised by any hook to end the agent run.

    Dispatch never wraps it and applies no failure policy to it: it sets
    `hook`, logs ``run_stopped`` and re-raises the same object. The marks
    describe the dispatch that raised it: an instance raised again by a later
    dispatch (a module-level constant) is marked and logged afresh, while one
    coming out of a dispatch nested inside a hook call keeps that dispatch's
    marks. A `StopRun` inside an exception group a hook raised (an
    ``asyncio.TaskGroup``) is a stop too: dispatch raises the first one.

    Attributes:
        reason: Why the run stops.
        hook: The name of the hook that raised it (set by dispatch).
        effective_args: The tool arguments rewritten by input transforms
            before the stop, or ``None`` when nothing rewrote them.
    """

    # Set by the dispatch that marked it: its context, and the hook calls it was nested in.
    _hookreg_mark: tuple[object, tuple[FrameType, ...]] = (None, ())

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hook: str | None = None
        self.effective_args: Mapping[str, object] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and copy without dispatch's bookkeeping (it holds frames)."""
        state = {key: value for key, value in vars(self).items() if key != "_hookreg_mark"}
        return type(self), self.args, state


# Tracebacks and reprs name each class the way users import it (``hookreg.HookReturnError``), and pickle
# finds it there; the package re-exports every name of this module.
for _name in __all__:
    globals()[_name].__module__ = "hookreg"
del _name
