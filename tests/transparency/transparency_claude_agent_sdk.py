"""The Claude Agent SDK's own tests with hookreg attached to every query (see runner.py for what each name means)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import claude_agent_sdk
from claude_agent_sdk import ClaudeAgentOptions, Message

from hookreg import HookRegistry
from hookreg.adapters.claude_agent_sdk import HookregHooks

DIST = "claude-agent-sdk"
TEST_REQUIREMENTS = ["anyio[trio]>=4,<5"]
# The one-shot query (the entry point hookreg wraps) against the SDK's mocked CLI transports: its messages,
# errors and results, hooks and can_use_tool in the initialize request and the control protocol, SDK MCP tools,
# closing and cancellation, prompt streams.
FILES = [
    "tests/test_query.py",
    "tests/test_integration.py",
    "tests/test_tool_callbacks.py",
    "tests/test_sdk_mcp_integration.py",
    "tests/test_close_cancellation.py",
    "tests/test_verbatim_prompts.py",
    "tests/test_option_warnings.py",
]
SUBSET = ["tests/test_query.py", "tests/test_integration.py", "tests/test_tool_callbacks.py"]
PYTEST_ARGS: list[str] = []
_BLOCKING = (
    'hooked mode registers hook callbacks, whose matchers carry on_failure="block" (a callback that fails never '
    "lets a call through); the test's fake CLI answers initialize without hook_on_failure_supported, so the SDK "
    "refuses to connect (CLIConnectionError), as it would with a Claude Code too old to honour it"
)
# Each divergence has one cause: the tests' fake CLI does not say it honours on_failure (see _BLOCKING).
KNOWN: dict[str, str] = {
    **{
        f"tests/test_query.py::test_forward_subagent_text_option_reaches_initialize[{enabled}]": _BLOCKING
        for enabled in ("False", "True")
    },
    **{
        f"tests/test_verbatim_prompts.py::TestQueryFunction::{test}[{backend}]": _BLOCKING
        for test in (
            "test_streamed_prompt_is_untouched_by_default",
            "test_streamed_prompt_marks_every_message",
            "test_string_prompt_is_marked_client_composed",
            "test_string_prompt_is_unmarked_by_default",
        )
        for backend in ("asyncio", "trio")
    },
}


def inject(registry: HookRegistry) -> None:
    """`claude_agent_sdk.query` runs through `HookregHooks(registry).query` (test modules import it afterwards)."""
    hooks = HookregHooks(registry)
    original = claude_agent_sdk.query

    @functools.wraps(original)
    def query(
        *,
        prompt: str | AsyncIterable[dict[str, Any]],
        options: ClaudeAgentOptions | None = None,
        transport: Any = None,
    ) -> AsyncIterator[Message]:
        return hooks.query(prompt=prompt, options=options, transport=transport)

    claude_agent_sdk.query = query  # the injection itself
