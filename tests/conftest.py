"""Loads hookreg's pytest plugin here rather than by entry point, so coverage measures hookreg from its first import.

Every test also starts with structlog unconfigured, as an application that never set it up: a
``structlog.testing.capture_logs()`` in an earlier test leaves structlog marked as configured, which
would route hookreg's events through structlog in every later test.
"""

from collections.abc import Iterator

import pytest
import structlog

pytest_plugins = ["pytester", "hookreg.testing.plugin"]


@pytest.fixture(autouse=True)
def unconfigured_structlog() -> Iterator[None]:
    """Each test starts with structlog unconfigured and leaves it as it found it."""
    was_configured, config = structlog.is_configured(), structlog.get_config()
    structlog.reset_defaults()
    yield
    if was_configured:
        structlog.configure(**config)
    else:
        structlog.reset_defaults()
