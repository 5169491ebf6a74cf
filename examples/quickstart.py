"""Quickstart: gate a tool call, rewrite its arguments, audit the result."""

from collections.abc import Mapping

from hookreg import HookPoint, HookRegistry, HookResult, PostToolCallContext, PreToolCallDecideContext

registry = HookRegistry()


@registry.pre_tool_call_decide(tools="bash")
def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
    if "rm -rf" in str(ctx.args.get("command", "")):
        return HookResult.deny("rm -rf is not allowed; delete files one by one")
    return HookResult.allow()


@registry.transform_tool_input(tools=["bash", "shell_*"])
def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
    return None if "timeout" in ctx.args else {**ctx.args, "timeout": 30}


@registry.post_tool_call
def audit(ctx: PostToolCallContext) -> None:
    print(f"audit: {ctx.tool_name} took {ctx.duration_ms:.0f} ms")


for command in ("ls -la", "rm -rf /"):
    call = PreToolCallDecideContext(tool_name="bash", args={"command": command}, call_id="call-1")
    resolution = registry.resolve_tool_call(call)  # transform, then decide on the new args
    if resolution.result.allowed:
        print(f"run {dict(resolution.args)}")
        registry.notify(
            HookPoint.POST_TOOL_CALL,
            PostToolCallContext(
                tool_name="bash",
                args=resolution.args,
                call_id="call-1",
                result="ok",
                raw_result=0,
                duration_ms=12.0,
                metadata={},
            ),
        )
    else:
        print(f"denied by {resolution.result.decided_by}: {resolution.result.reason}")
