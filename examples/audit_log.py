"""Observe: an audit trail of tool calls, and hookreg's own events through structlog.

hookreg never configures logging; an application does, as here.
"""

import logging

import structlog

from hookreg import HookPoint, HookRegistry, HookResult, PostToolCallContext, PreToolCallDecideContext

logging.basicConfig(level=logging.INFO, format="%(message)s")
structlog.configure(
    processors=[structlog.processors.add_log_level, structlog.processors.KeyValueRenderer(sort_keys=True)],
    logger_factory=structlog.stdlib.LoggerFactory(),
)
audit_log = structlog.get_logger("audit")
registry = HookRegistry()


@registry.post_tool_call(name="audit")
def audit(ctx: PostToolCallContext) -> None:
    audit_log.info("tool_called", tool=ctx.tool_name, call_id=ctx.call_id, ms=round(ctx.duration_ms))


@registry.post_tool_call(name="flaky-metrics")
def flaky_metrics(ctx: PostToolCallContext) -> None:
    raise ConnectionError("metrics backend down")  # logged as hook_failed; the next observer still runs


@registry.post_tool_call(name="counter")
def counter(ctx: PostToolCallContext) -> None:
    ctx.run.scratchpad.update(int, lambda n: n + 1)


@registry.pre_tool_call_decide
def no_network(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.deny("no network in this sandbox") if ctx.tool_name == "curl" else HookResult.allow()


finished = PostToolCallContext(
    tool_name="ls", args={}, call_id="c1", result="a b c", raw_result=["a", "b", "c"], duration_ms=3.2, metadata={}
)
registry.notify(HookPoint.POST_TOOL_CALL, finished)
registry.decide(HookPoint.PRE_TOOL_CALL_DECIDE, PreToolCallDecideContext(tool_name="curl", args={}, call_id="c2"))
print("calls counted:", finished.run.scratchpad.get(int))
