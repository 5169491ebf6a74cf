"""The Antigravity SDK's own tests with hookreg attached to every agent (see runner.py for what each name means)."""

from __future__ import annotations

import functools
from typing import Any, cast

from google.antigravity import agent as sdk_agent

from hookreg import HookPoint, HookRegistry
from hookreg.adapters.antigravity import with_hookreg

DIST = "google-antigravity"
TESTS_IN_PACKAGE = "google.antigravity"  # its wheel ships its tests (its sdist is not published)
TEST_REQUIREMENTS: list[str] = []
_TESTS = "shipped-tests/google/antigravity"
# Every test file that builds an `Agent`, where a config's hooks run (the SDK runs them nowhere else): the agent's
# session, chat and tool loop, its hook runner and policies, the connections' agent-level tests (local, OpenAI-
# compatible, Interactions, LiteRT) and the interactive front end. The SDK's tests of HookRunner, its hook classes
# and its event processors drive those directly, without an Agent: hookreg cannot be attached there, so they are
# not run (they would pass three times over, telling nothing).
FILES = [
    f"{_TESTS}/agent_test.py",
    f"{_TESTS}/hooks/policy_test.py",
    f"{_TESTS}/connections/connection_test.py",
    f"{_TESTS}/connections/local/local_connection_test.py",
    f"{_TESTS}/connections/local/local_openai_connection_test.py",
    f"{_TESTS}/connections/local/interactions_connection_test.py",
    f"{_TESTS}/connections/local/litert_connection_test.py",
    f"{_TESTS}/utils/interactive_test.py",
]
# The agent itself and its policies (what with_hookreg's hooks join), and the OpenAI-compatible connection.
SUBSET = [
    f"{_TESTS}/agent_test.py",
    f"{_TESTS}/hooks/policy_test.py",
    f"{_TESTS}/connections/local/local_openai_connection_test.py",
]
PYTEST_ARGS = ["--import-mode=importlib"]  # the files sit under their import path, without the package's __init__
KNOWN: dict[str, str] = {}

# with_hookreg refuses to add its tool gate to a config without policies (the SDK would count the gate as a safety
# policy and silently skip its "write tools need a safety policy" check), as it refuses a user: such an agent gets
# every other pass-through hook.
_GATE_POINTS = frozenset({HookPoint.TRANSFORM_TOOL_INPUT, HookPoint.PRE_TOOL_CALL_DECIDE, HookPoint.PERMISSION_DENIED})


def _without_gate(registry: HookRegistry) -> HookRegistry:
    """A registry holding `registry`'s hooks but those of the tool gate."""
    ungated = HookRegistry()
    for point in HookPoint:
        if point not in _GATE_POINTS:
            for hook in registry.callbacks(point):
                ungated.register(point, cast("Any", hook.callback))  # a hook of that very point
    return ungated


def inject(registry: HookRegistry) -> None:
    """`Agent(config)` runs `with_hookreg(config, registry)` (the SDK's hooks run only inside an `Agent`)."""
    ungated = _without_gate(registry)
    original = sdk_agent.Agent.__init__

    @functools.wraps(original)
    def init(self: sdk_agent.Agent, config: Any, *args: Any, **kwargs: Any) -> None:
        original(self, with_hookreg(config, registry if config.policies else ungated), *args, **kwargs)

    sdk_agent.Agent.__init__ = init  # the injection itself
