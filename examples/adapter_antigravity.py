"""Antigravity SDK adapter: one hookreg registry gates and audits the tool calls of an Antigravity agent.

Runs the SDK's local runtime against an OpenAI-compatible chat-completions server: OPENAI_BASE_URL
(default http://127.0.0.1:8000/v1) and AG_MODEL; the tests run it offline against a scripted fake server.
"""

import asyncio
import os

from google.antigravity import Agent, LocalOpenAIAgentConfig
from google.antigravity.hooks import policy

from hookreg import HookRegistry, HookResult, PermissionDeniedContext, PostToolCallContext, PreToolCallDecideContext
from hookreg.adapters.antigravity import with_hookreg

registry = HookRegistry()


@registry.pre_tool_call_decide(tools="delete_path")
def keep_the_repo(ctx: PreToolCallDecideContext) -> HookResult:
    if str(ctx.args.get("path", "")).strip("/") in {"", ".", ".git"}:
        return HookResult.deny("that path holds the repository; delete a build directory instead")
    return HookResult.allow()


@registry.permission_denied
def log_denial(ctx: PermissionDeniedContext) -> None:
    print(f"denied {ctx.tool_name}: {ctx.reason}")


@registry.post_tool_call
def audit(ctx: PostToolCallContext) -> None:
    print(f"ran {ctx.tool_name}({dict(ctx.args)}) -> {ctx.result}")


def delete_path(path: str) -> str:
    """Delete a path (this example only says it would)."""
    return f"would delete {path}"


async def main() -> None:
    config = LocalOpenAIAgentConfig(
        model=os.environ.get("AG_MODEL", "local"),
        base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
        tools=[delete_path],
        policies=[policy.allow_all()],  # hookreg's gate judges every call first; the SDK's policy then allows
    )
    async with Agent(with_hookreg(config, registry)) as agent:
        response = await agent.chat("Clean up the repository")
        print("answer:", await response.text())


if __name__ == "__main__":
    asyncio.run(main())
