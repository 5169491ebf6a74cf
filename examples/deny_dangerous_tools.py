"""Gate tool calls: deny destructive shell commands, fail closed when a gate crashes."""

import re

from hookreg import HookPoint, HookRegistry, HookResult, PreToolCallDecideContext

registry = HookRegistry()
DANGEROUS = re.compile(r"\brm\s+-[a-z]*r[a-z]*f|\bmkfs\b|\bdd\s+if=|>\s*/dev/sd")


@registry.pre_tool_call_decide(tools=["bash", "shell_*"], name="no-destruction")
def no_destruction(ctx: PreToolCallDecideContext) -> HookResult:
    command = str(ctx.args.get("command", ""))
    if DANGEROUS.search(command):
        return HookResult.deny(f"{command!r} could destroy data; remove files one at a time instead")
    return HookResult.allow()


@registry.pre_tool_call_decide(tools="write_*")
def no_writes_outside_project(ctx: PreToolCallDecideContext) -> HookResult:
    path = str(ctx.args["path"])  # a KeyError here is a failure: the gate fails closed
    return HookResult.allow() if path.startswith("project/") else HookResult.deny(f"{path} is outside project/")


calls = [
    ("bash", {"command": "ls -la"}),
    ("bash", {"command": "rm -rf /"}),
    ("shell_exec", {"command": "dd if=/dev/zero of=/dev/sda"}),
    ("write_file", {"path": "project/notes.md"}),
    ("write_file", {"path": "/etc/passwd"}),
    ("write_file", {"text": "no path given"}),
]
for tool, args in calls:
    result = registry.decide(
        HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(tool_name=tool, args=args, call_id="c")
    )
    verdict = "allow" if result.allowed else f"deny ({result.decided_by}): {result.reason}"
    print(f"{tool:<11} {args} -> {verdict}")
