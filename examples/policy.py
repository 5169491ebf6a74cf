"""Tool policy: allow reads, ask before writes, deny rm in bash, deny everything else."""

from hookreg import HookPoint, HookRegistry, PreToolCallDecideContext
from hookreg.policy import allow, ask, deny

registry = HookRegistry()


def removes_files(ctx: PreToolCallDecideContext) -> bool:
    return "rm " in str(ctx.args.get("command", ""))


registry.use_policy(
    allow("read_*"),
    allow("bash"),
    deny("bash", when=removes_files, reason="rm is not allowed; delete files one by one"),  # specific deny wins
    ask("write_*"),
    default="deny",
)

calls = [
    ("read_file", {"path": "notes.md"}),
    ("bash", {"command": "ls -la"}),
    ("bash", {"command": "rm -rf build"}),
    ("write_file", {"path": "notes.md"}),
    ("deploy", {}),
]
for tool, args in calls:
    ctx = PreToolCallDecideContext(tool_name=tool, args=args, call_id="call-1")
    result = registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, ctx)
    why = f" ({result.reason})" if result.reason else ""
    print(f"{tool}: {result.decision}{why}")
