"""Strands' own tests with hookreg attached to every agent (see runner.py for what each name means)."""

from __future__ import annotations

import functools
from typing import Any

from strands import Agent

from hookreg import HookRegistry
from hookreg.adapters.strands import HookregProvider

DIST = "strands-agents"
TEST_REQUIREMENTS = ["pytest-asyncio>=1.0,<1.5", "moto>=5.1,<6", "tenacity>=9,<10"]
# The agent loop, its tools, streaming, interrupts and hooks, and the middleware hookreg's gate sits among.
FILES = ["tests/strands/agent", "tests/strands/event_loop", "tests/strands/tools", "tests/strands/hooks"]
SUBSET = FILES
PYTEST_ARGS: list[str] = []
KNOWN: dict[str, str] = {}


def inject(registry: HookRegistry) -> None:
    """Every `Agent` gets a `HookregProvider` for `registry` after the hooks the test passes."""
    original = Agent.__init__

    @functools.wraps(original)
    def init(self: Agent, *args: Any, hooks: list[Any] | None = None, **kwargs: Any) -> None:
        original(self, *args, hooks=[*(hooks or []), HookregProvider(registry)], **kwargs)

    Agent.__init__ = init  # type: ignore[method-assign]  # the injection itself
