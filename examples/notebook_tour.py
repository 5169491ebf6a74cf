"""Notebook tour: build a registry, look at it, trace a tool call and read the trace.

In a notebook, end a cell with `registry` or `trace` to see them as HTML tables;
as a script, this prints the same tables as text.
"""

import asyncio
from collections.abc import Mapping

from hookreg import HookRegistry, HookResult, PreToolCallDecideContext
from hookreg.policy import allow, deny

registry = HookRegistry()


@registry.transform_tool_input(tools="bash")
def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
    return None if "timeout" in ctx.args else {**ctx.args, "timeout": 30}


@registry.pre_tool_call_decide(priority=10)
def budget(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.allow()


@registry.pre_tool_call_decide(tools=["bash", "shell_*"])
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm -rf" in str(ctx.args.get("command", "")):
        return HookResult.deny("rm -rf is not allowed; delete files one by one")
    return HookResult.allow()


@registry.post_tool_call
async def audit(ctx: object) -> None:
    await asyncio.sleep(0)


registry.use_policy(allow("bash"), deny("curl", reason="no network access"))

# A notebook cell ending in `registry` shows this table as HTML.
print(registry.describe())
print()

# Trace a tool call: every hook called, what it returned, which one decided.
with registry.trace() as trace:
    call = PreToolCallDecideContext(tool_name="bash", args={"command": "rm -rf /"}, call_id="call-1")
    resolution = registry.resolve_tool_call(call)

# A notebook cell ending in `trace` shows this table as HTML, the decider highlighted.
print(trace)
print()
gate = trace[1]
print(f"{gate.point}: {gate.summary}, decided by {gate.decided_by}")
print(f"hooks called: {', '.join(gate.hooks)}")
