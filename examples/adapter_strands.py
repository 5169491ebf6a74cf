"""Strands adapter: one hookreg registry patches model calls and gates and rewrites tool calls, offline."""

import json
from collections.abc import AsyncIterator
from typing import Any

from strands import Agent, tool
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent

from hookreg import (
    HookRegistry,
    HookResult,
    PermissionDeniedContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    RequestPatch,
    TextDeltaContext,
)
from hookreg import TransformToolResultContext as ResultContext
from hookreg.adapters.strands import HookregProvider

registry = HookRegistry()


@registry.pre_tool_call_decide(tools="bash")
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm -rf" in str(ctx.args.get("command", "")):
        return HookResult.deny("rm -rf is not allowed; delete files one by one")
    return HookResult.allow()


@registry.transform_tool_result(tools="bash")
def with_exit_code(ctx: ResultContext) -> str:
    return f"{ctx.presentation} (exit 0)"


@registry.permission_denied
def report(ctx: PermissionDeniedContext) -> None:
    print(f"denied: {ctx.reason}")


@registry.pre_model_call
def house_rules(ctx: PreModelCallContext) -> RequestPatch:
    return RequestPatch(extra_context=("Prefer read-only commands.",))


@registry.text_delta
def show(ctx: TextDeltaContext) -> None:
    print(f"streamed: {ctx.aggregated}")


@tool
def bash(command: str) -> str:
    """Run a shell command (this one only pretends).

    Args:
        command: The command line.
    """
    return command


class ScriptedModel(Model):
    """A model that calls bash once, prints the tool output it gets back, then answers: no network, no key."""

    def __init__(self, command: str) -> None:
        self.command = command

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def stream(self, messages: Messages, *args: Any, **kwargs: Any) -> AsyncIterator[StreamEvent]:
        results = [block["toolResult"] for block in messages[-1]["content"] if "toolResult" in block]
        print(f"system prompt: {kwargs['system_prompt_content']}")
        yield {"messageStart": {"role": "assistant"}}
        if results:
            print(f"tool output seen by the model: {results[0]['content'][0].get('text')}")
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": "done"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
            return
        yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "call-1", "name": "bash"}}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"command": self.command})}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


for command in ("ls -la", "rm -rf /"):
    agent = Agent(model=ScriptedModel(command), tools=[bash], hooks=[HookregProvider(registry)], callback_handler=None)
    agent(f"run {command}")
