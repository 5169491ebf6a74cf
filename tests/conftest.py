"""Loads hookreg's pytest plugin here rather than by entry point, so coverage measures hookreg from its first import.

The tests marked ``slow`` (type checkers, the docs site build, a notebook kernel, stress runs) are left out
of a plain ``pytest``, the fast loop: ``pytest --slow`` runs them too, and ``-m`` chooses for itself
(``pytest -m slow`` runs only them).

Every test also starts with structlog unconfigured, as an application that never set it up: a
``structlog.testing.capture_logs()`` in an earlier test leaves structlog marked as configured, which
would route hookreg's events through structlog in every later test.
"""

from collections.abc import Iterator

import pytest
import structlog

pytest_plugins = ["pytester", "hookreg.testing.plugin"]
# A framework's own tests, vendored for tests/transparency: runner.py runs them in their own pytest.
collect_ignore = ["transparency/vendor"]
_LEFT_OUT = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--slow``."""
    parser.addoption("--slow", action="store_true", help="also run the tests marked slow (the full suite)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the slow tests unless ``--slow`` is given or a ``-m`` expression selects by itself."""
    if config.getoption("--slow") or config.getoption("markexpr"):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    config.stash[_LEFT_OUT] = len(slow)
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    """Say that slow tests were left out, so that a run of only slow tests explains why nothing ran."""
    left_out = config.stash.get(_LEFT_OUT, 0)
    return f"{left_out} slow tests left out: pytest --slow runs them too" if left_out else None


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
