"""RecordingObserver: an observer hook that keeps every context it is called with."""

from __future__ import annotations

from typing import Generic, final

from typing_extensions import TypeVar

__all__ = ["RecordingObserver"]

_CtxT = TypeVar("_CtxT", default=object)


@final
class RecordingObserver(Generic[_CtxT]):
    """An observer that records the contexts it is called with, for assertions.

    Register it at any observe point (or several): it returns ``None`` like any
    observer. Parametrise it for a typed `last`: ``RecordingObserver[PostToolCallContext]()``.

    Example:
        >>> from hookreg import HookPoint, HookRegistry
        >>> from hookreg.testing import make_context
        >>> registry, seen = HookRegistry(), RecordingObserver()
        >>> _ = registry.register(HookPoint.NOTIFICATION, seen)
        >>> registry.notify(HookPoint.NOTIFICATION, make_context(HookPoint.NOTIFICATION, message="hi"))
        >>> seen.count
        1

    Attributes:
        contexts: The contexts received, in order.
    """

    __slots__ = ("contexts",)

    def __init__(self) -> None:
        self.contexts: list[_CtxT] = []

    def __call__(self, ctx: _CtxT, /) -> None:
        """Record `ctx`."""
        self.contexts.append(ctx)

    @property
    def count(self) -> int:
        """How many times it was called."""
        return len(self.contexts)

    @property
    def last(self) -> _CtxT:
        """The last context received.

        Raises:
            AssertionError: It was never called.
        """
        if not self.contexts:
            msg = "RecordingObserver was never called: no dispatch reached it."
            raise AssertionError(msg)
        return self.contexts[-1]

    def clear(self) -> None:
        """Forget what was recorded."""
        self.contexts.clear()

    def assert_called(self, times: int | None = None) -> None:
        """Assert it was called (exactly `times` times, when given).

        Raises:
            AssertionError: It was not.
        """
        if self.count == 0 or (times is not None and self.count != times):
            expected = "at least once" if times is None else f"{times} time(s)"
            msg = f"RecordingObserver was called {self.count} time(s); expected {expected}."
            raise AssertionError(msg)

    def assert_not_called(self) -> None:
        """Assert it was never called.

        Raises:
            AssertionError: It was, with the first context it received.
        """
        if self.contexts:
            msg = f"RecordingObserver was called {self.count} time(s), first with {self.contexts[0]!r}."
            raise AssertionError(msg)

    def __repr__(self) -> str:
        return f"<RecordingObserver: {self.count} call(s)>"
