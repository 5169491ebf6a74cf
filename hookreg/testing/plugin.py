"""hookreg's pytest plugin (entry point ``pytest11``): the ``hook_registry`` and ``hook_trace`` fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hookreg import HookRegistry, Trace

__all__ = ["hook_registry", "hook_trace"]


@pytest.fixture
def hook_registry() -> HookRegistry:
    """A fresh, empty HookRegistry for one test."""
    return HookRegistry()


@pytest.fixture
def hook_trace(hook_registry: HookRegistry) -> Iterator[Trace]:
    """A trace open on `hook_registry` for the whole test: read its records in the test."""
    with hook_registry.trace() as trace:
        yield trace
