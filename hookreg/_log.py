"""The one logger: stdlib ``logging.getLogger("hookreg")``, through structlog only when the application configured it.

hookreg adds no handler (not even a ``NullHandler``) and configures nothing, so
with no logging set up Python's last-resort handler prints WARNING and above
to stderr: a failing gate shows in a script or a notebook by default.

When the application has not configured structlog (always the case when it
never imported it) an event is one plain stdlib record: the message is
``event key=value ...`` and the event and its fields are also attributes of
the record (``extra``), so a JSON formatter gets them as fields (hookreg's
field names never collide with a LogRecord attribute). structlog is not
imported for this. When the application has configured structlog, the
event goes through its configuration (``structlog.testing.capture_logs()``
sees it), bound to the same "hookreg" stdlib logger.

`logging` itself is imported on the first event at WARNING or above, or at
any level once the application has imported it: until then nothing can have
configured it, so its defaults hold (WARNING and above reach stderr, nothing
below is emitted), and ``import hookreg`` stays light.

Every ``hook_failed`` and ``hook_timed_out`` event is also appended, as a
`HookFailure`, to the list `collecting` installed in the current context
(whatever the log level), so a loop can tell its caller which hooks failed.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    import logging
    from collections.abc import Iterator

__all__ = ["HookFailure", "collecting", "debug_enabled", "log", "render"]

_LEVELS: Final = {"debug": 10, "info": 20, "warning": 30, "error": 40}  # logging.DEBUG ... logging.ERROR
# A value is written bare unless it is empty or holds a space, a quote, a backslash or an "=": then it is quoted.
_ESCAPES: Final = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})
_FAILURES: Final = frozenset({"hook_failed", "hook_timed_out"})  # the events `collecting` collects


class HookFailure(NamedTuple):
    """One hook failure, as logged: where, which hook, and hookreg's own description of what went wrong.

    Attributes:
        point: The hook point's value (equal to its `HookPoint`), e.g. ``"pre_tool_call_decide"``.
        hook: The hook's name.
        error: What went wrong, in hookreg's words, never the exception's text:
            ``"raised ValueError"``, ``"returned bool; expected HookResult"``, ``"timed out after 2.0 s"``.
    """

    point: str
    hook: str
    error: str


_COLLECTOR: ContextVar[list[HookFailure] | None] = ContextVar("hookreg_failures", default=None)


@contextlib.contextmanager
def collecting(into: list[HookFailure]) -> Iterator[list[HookFailure]]:
    """Append to `into` each hook failure logged in this context until exit (tasks started meanwhile included).

    A nested ``collecting`` collects on its own until it exits; the outer list gets none of its failures.
    """
    token = _COLLECTOR.set(into)
    try:
        yield into
    finally:
        _COLLECTOR.reset(token)


def _collect(event: str, fields: dict[str, Any]) -> None:
    into = _COLLECTOR.get()
    if into is not None:
        error = fields["error"] if event == "hook_failed" else f"timed out after {fields['timeout']} s"
        into.append(HookFailure(str(fields["point"]), str(fields["hook"]), error))


@functools.cache
def _logger() -> logging.Logger:
    import logging  # noqa: PLC0415 -- on first use: keeps the import light

    return logging.getLogger("hookreg")


def debug_enabled() -> bool:
    """Return whether the "hookreg" logger would emit a DEBUG record (never before the application imports logging)."""
    return "logging" in sys.modules and _logger().isEnabledFor(_LEVELS["debug"])


def _value(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    if text and not any(ch.isspace() or ch in '"\\=' for ch in text):
        return text
    return f'"{text.translate(_ESCAPES)}"'


def render(event: str, fields: dict[str, Any]) -> str:
    """The plain message of an event: ``event key=value ...``, a value quoted when it holds a space or a quote."""
    return " ".join([event, *(f"{key}={_value(value)}" for key, value in fields.items())])


def log(level: str, event: str, *, exc_info: BaseException | None = None, **fields: Any) -> None:
    """Emit `event` at `level` ("debug", "info", "warning" or "error") on the "hookreg" logger.

    structlog is used only when the application imported and configured it
    (``structlog.is_configured()``); a fresh proxy per event means no logger is
    ever cached, so configuration changes (and ``capture_logs``) apply at once.
    `exc_info`, when given, is the exception whose traceback goes with the
    event: the record's ``exc_info``, or structlog's ``exc_info`` key.
    """
    if event in _FAILURES:  # collected before any level check: silencing the logger does not hide them
        _collect(event, fields)
    number = _LEVELS[level]
    if number < _LEVELS["warning"] and "logging" not in sys.modules:
        return  # logging's defaults: below WARNING, nothing is emitted
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured():
        extra = {} if exc_info is None else {"exc_info": exc_info}  # no key at all when there is none
        getattr(structlog.wrap_logger(_logger()), level)(event, **fields, **extra)
        return
    logger = _logger()
    if logger.isEnabledFor(number):
        # stacklevel=2: the record's location is the hookreg code that logged, not this function.
        logger.log(number, render(event, fields), extra={"event": event, **fields}, exc_info=exc_info, stacklevel=2)
