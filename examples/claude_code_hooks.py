"""Claude Code hooks in any agent loop: a block-rm.sh PreToolUse hook from a settings file denies rm -rf.

The hook runs in hookreg's reference loop (sync and async), then in a pydantic-ai agent through its adapter.
"""

import asyncio
import json
import logging
import shutil
import tempfile
from pathlib import Path

from hookreg import HookRegistry, PermissionDeniedContext, ToolCallRequest
from hookreg.external import load_hooks_config
from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

logging.basicConfig(format="%(name)s: %(message)s")
logger = logging.getLogger("claude_code_hooks_example")
logger.setLevel(logging.INFO)

# A hook as a Claude Code project has it: the call as JSON on stdin; exit 2 with a reason on stderr blocks it.
BLOCK_RM = """#!/bin/sh
input=$(cat)
case "$input" in
  *"rm -rf"*) echo "rm -rf is blocked in this project; delete files one by one" >&2; exit 2 ;;
esac
exit 0
"""

project = Path(tempfile.mkdtemp(prefix="hookreg-example-"))
hook = project / ".claude" / "hooks" / "block-rm.sh"
hook.parent.mkdir(parents=True)
hook.write_text(BLOCK_RM)
hook.chmod(0o755)
settings = project / ".claude" / "settings.json"
entry = {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/block-rm.sh'}
settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [entry]}]}}))

registry = HookRegistry()
inclusion = load_hooks_config(registry, settings, project_dir=project)


@registry.permission_denied
def report(ctx: PermissionDeniedContext) -> None:
    logger.info("denied %s by %s: %s", ctx.tool_name, ctx.decided_by, ctx.reason)


def Bash(command: str) -> str:  # noqa: N802 -- the tool name Claude Code hooks match
    """Stands in for a shell tool: this example never runs the model's commands."""
    return f"(would run) {command}"


def script() -> ScriptedModel:
    return ScriptedModel(
        [
            ScriptedTurn(
                text="Listing, then cleaning up.",
                tool_calls=[
                    ToolCallRequest("c1", "Bash", {"command": "ls"}),
                    ToolCallRequest("c2", "Bash", {"command": "rm -rf /"}),
                ],
            ),
            ScriptedTurn(text="I listed the files; the cleanup was refused."),
        ]
    )


# The sync loop runs the hook with subprocess; the async loop with an asyncio subprocess, never blocking.
for label, result in [
    ("run", Harness(script(), [Bash], registry).run("Tidy the project.")),
    ("arun", asyncio.run(Harness(script(), [Bash], registry).arun("Tidy the project."))),
]:
    for message in result.history:
        if message.role == "tool":
            print(f"{label} {message.tool_call_id}: {message.content}")
    print(f"{label} -> {result.outcome.status}: {result.output}")


def in_pydantic_ai() -> None:
    """The same hooks inside a pydantic-ai agent, through its adapter, when pydantic-ai is installed."""
    # Imported here, so the example runs (and says what to install) without the extra.
    try:
        from pydantic_ai import Agent, models  # noqa: PLC0415
        from pydantic_ai.messages import (  # noqa: PLC0415
            ModelMessage,
            ModelRequest,
            ModelResponse,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
        )
        from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: PLC0415

        from hookreg.adapters.pydantic_ai import hookreg_capability  # noqa: PLC0415
    except ImportError:
        print("pydantic-ai is not installed: pip install 'hookreg[pydantic-ai]' to run the hook in an agent")
        return
    models.ALLOW_MODEL_REQUESTS = False  # an offline stand-in model, never a real one

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        for part in last.parts if isinstance(last, ModelRequest) else ():
            if isinstance(part, ToolReturnPart):
                return ModelResponse(parts=[TextPart(f"the tool said: {part.model_response_str()}")])
        return ModelResponse(parts=[ToolCallPart("Bash", {"command": "rm -rf /"})])

    agent = Agent(FunctionModel(respond), capabilities=[hookreg_capability(registry)])
    agent.tool_plain(Bash)
    print(f"pydantic-ai -> {agent.run_sync('Tidy the project.').output}")


in_pydantic_ai()
inclusion.remove()  # unloads every hook of the settings file
print(f"after remove(): {registry!r}")
shutil.rmtree(project)
