"""Transform tool input: redact secrets before a tool (or a log) sees them; transforms chain."""

from collections.abc import Mapping

from hookreg import HookPoint, HookRegistry, HookResult, PreToolCallDecideContext

registry = HookRegistry()
SECRET_KEYS = {"api_key", "password", "token"}


@registry.transform_tool_input(priority=10)
def redact(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
    """Replace secret values; return None when there is nothing to change."""
    if not SECRET_KEYS & ctx.args.keys():
        return None
    return {key: "***" if key in SECRET_KEYS else value for key, value in ctx.args.items()}


@registry.transform_tool_input(tools="http_*")
def default_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
    """Runs after `redact` (lower priority) and sees its result."""
    return None if "timeout" in ctx.args else {**ctx.args, "timeout": 10}


@registry.pre_tool_call_decide
def gate_sees_redacted(ctx: PreToolCallDecideContext) -> HookResult:
    """Gates judge the rewritten arguments: what will actually execute."""
    assert "hunter2" not in ctx.args.values()
    return HookResult.allow()


call = PreToolCallDecideContext(
    tool_name="http_get", args={"url": "https://example.test", "token": "hunter2"}, call_id="c1"
)
resolution = registry.resolve_tool_call(call)
print("original:", dict(call.args))
print("executed:", dict(resolution.args), "rewritten:", resolution.rewritten)
plain = PreToolCallDecideContext(tool_name="ls", args={"path": "."}, call_id="c2")
print("nothing to change, same object back:", registry.transform(HookPoint.TRANSFORM_TOOL_INPUT, plain) is plain.args)
