"""Claude Agent SDK adapter: one hookreg registry gates, rewrites and audits the tool calls of a Claude Code query.

Runs the CLI the SDK bundles against the Anthropic API (set ANTHROPIC_API_KEY); the tests run it offline,
against a scripted fake of the API (ANTHROPIC_BASE_URL).
"""

import asyncio
from collections.abc import Mapping

from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, TextBlock

from hookreg import (
    HookRegistry,
    HookResult,
    OnInteractionContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PreToolCallDecideContext,
)
from hookreg.adapters.claude_agent_sdk import HookregHooks

registry = HookRegistry()


@registry.pre_tool_call_decide(tools="Bash")
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm -rf" in str(ctx.args.get("command", "")):
        return HookResult.deny("rm -rf is not allowed; delete files one by one")
    return HookResult.allow()


@registry.transform_tool_input(tools="Bash")
def bounded(ctx: PreToolCallDecideContext) -> Mapping[str, object]:
    """Every command the gate judges, and the CLI runs, has a timeout (milliseconds, the Bash tool's own)."""
    return {**ctx.args, "timeout": 30_000}


@registry.on_interaction
def approve_bash(ctx: OnInteractionContext) -> HookResult:
    """The CLI asks before running a tool its own rules do not allow: hookreg's gate has judged Bash already."""
    print(f"asked: {ctx.question}")
    return HookResult.allow() if ctx.tool_name == "Bash" else HookResult.deny(f"{ctx.tool_name} is not approved")


@registry.permission_denied
def report_denial(ctx: PermissionDeniedContext) -> None:
    print(f"denied {ctx.args.get('command')!r}: {ctx.reason}")


@registry.post_tool_call
def audit(ctx: PostToolCallContext) -> None:
    print(f"ran {ctx.args.get('command')!r} (timeout {ctx.args.get('timeout')} ms) -> {ctx.result!r}")


async def main() -> None:
    options = ClaudeAgentOptions(setting_sources=[], max_turns=5)  # no settings files: this script's rules only
    async for message in HookregHooks(registry).query(
        prompt="Make an out/ directory, then clean up build/", options=options
    ):
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextBlock):
                    print(f"assistant: {block.text}")
        elif isinstance(message, ResultMessage):
            print(f"result: {message.result}")


if __name__ == "__main__":
    asyncio.run(main())
