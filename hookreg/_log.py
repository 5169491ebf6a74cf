"""The one logger: structlog over stdlib ``logging.getLogger("hookreg")``, imported lazily."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["debug_enabled", "log"]

_stdlib_logger = logging.getLogger("hookreg")
_stdlib_logger.addHandler(logging.NullHandler())


def debug_enabled() -> bool:
    """Return whether the "hookreg" logger would emit a DEBUG record."""
    return _stdlib_logger.isEnabledFor(logging.DEBUG)


def log(level: str, event: str, **fields: Any) -> None:
    """Emit `event` at `level` through the application's current structlog configuration.

    structlog is imported here, on the first event, so ``import hookreg`` stays
    light; a fresh proxy per event means no logger is ever cached, so
    configuration changes (and ``structlog.testing.capture_logs``) apply at once.
    """
    import structlog  # noqa: PLC0415 -- deferred: importing structlog costs ~50 ms

    getattr(structlog.wrap_logger(_stdlib_logger), level)(event, **fields)
