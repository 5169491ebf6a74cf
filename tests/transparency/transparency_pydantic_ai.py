"""pydantic-ai's own tests with hookreg attached to every agent (see runner.py for what each name means).

pydantic-ai's sdist ships no tests: ``HOOKREG_PYDANTIC_AI_TESTS`` names a checkout of its repository (see
docs/adapters/pydantic-ai.md, "Its own tests with hookreg attached").
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hookreg import HookRegistry

# Loaded as a pytest plugin in every mode (PYTEST_ARGS), so that the off run sets this too: pydantic-ai's
# blocking-call detector (BlockBuster) scans pydantic_evals and clai, which no release matching the installed
# pydantic-ai-slim provides, and its own CI runs it on one lane only.
os.environ["BLOCKBUSTER_ENABLED"] = "false"

DIST = "pydantic-ai-slim"
TESTS_FROM = "HOOKREG_PYDANTIC_AI_TESTS"
# The SUBSET files (with the conftest and helpers they import, the repository's pytest settings and its license),
# from the checkout of 2026-08-22 (commit 4fda38988f29), so that .ci/run judges pydantic-ai too: CI reaches only
# package registries. vendor/pydantic-ai/README.md says how to refresh them.
VENDORED = "vendor/pydantic-ai"
# What tests/conftest.py and the files below import beyond pydantic-ai-slim itself.
TEST_REQUIREMENTS = [
    "anyio>=4.7",
    "httpx>=0.27",
    "dirty-equals>=0.9",
    "inline-snapshot>=0.32.5",
    "pytest-mock>=3.14",
    "pytest-recording>=0.13.2",
    "opentelemetry-sdk>=1.30",
    "pyyaml>=6",
]
# The agent loop (test_agent), tools, their validation, retry budgets, deferred tools and human approval (test_tools,
# test_toolsets, test_tool_failed_wire), streaming (test_streaming), capabilities — pydantic-ai's middleware, among
# which hookreg's own sits — around event streams (test_capability_*), cancelled runs (test_run_cancellation),
# concurrency limits (test_concurrency), history processors (test_history_processor).
# test_capabilities.py and test_usage_limits.py are left out: at the snapshot they import names 2.68 no longer has.
FILES = [
    "tests/test_agent.py",
    "tests/test_tools.py",
    "tests/test_toolsets.py",
    "tests/test_tool_failed_wire.py",
    "tests/test_streaming.py",
    "tests/test_capability_process_event_stream.py",
    "tests/test_capability_stream_teardown.py",
    "tests/test_run_cancellation.py",
    "tests/test_concurrency.py",
    "tests/test_history_processor.py",
]
# What .ci/run runs (its three runs take about 2 minutes on 2 cores; FILES 7 to 18, as loaded). No file has diverged,
# so the subset is the tool path — tools with their validation, retry budgets, deferred calls and human approval,
# toolsets, tool failures on the wire —, cancelled runs, where a hooked run once hung, and streaming with the
# capabilities around it (hookreg's delta points). test_agent.py alone takes longer than the whole subset.
SUBSET = [
    "tests/test_tools.py",
    "tests/test_toolsets.py",
    "tests/test_tool_failed_wire.py",
    "tests/test_run_cancellation.py",
    "tests/test_streaming.py",
    "tests/test_capability_stream_teardown.py",
]
PYTEST_ARGS = ["-p", "transparency_pydantic_ai"]
KNOWN: dict[str, str] = {}


def inject(registry: HookRegistry) -> None:
    """Every `Agent` gets a `hookreg_capability` for `registry` after the capabilities the test passes."""
    # imported here, not above: the off run loads this module too, and must run without hookreg
    from pydantic_ai import Agent

    from hookreg.adapters.pydantic_ai import hookreg_capability

    original = Agent.__init__

    @functools.wraps(original)
    def init(self: Agent[Any, Any], *args: Any, capabilities: Any = None, **kwargs: Any) -> None:
        original(self, *args, capabilities=[*(capabilities or []), hookreg_capability(registry)], **kwargs)

    Agent.__init__ = init  # type: ignore[method-assign]  # the injection itself
