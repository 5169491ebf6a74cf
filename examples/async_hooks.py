"""Async hooks: an async allowlist, a scanner with a timeout that fails closed, and a sync rewrite, awaited together."""

import asyncio
from collections.abc import Mapping
from urllib.parse import urlsplit

from hookreg import AsyncHookError, HookRegistry, HookResult, PermissionDeniedContext, PreToolCallDecideContext

registry = HookRegistry()
denied: list[str] = []


async def fetch_allowlist() -> frozenset[str]:
    await asyncio.sleep(0)  # stands in for a policy service call
    return frozenset({"docs.python.org", "slow.example"})


@registry.transform_tool_input(tools="http_get")
def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
    # A sync hook in an async dispatch: called inline, no thread.
    return None if "timeout" in ctx.args else {**ctx.args, "timeout": 10}


@registry.pre_tool_call_decide(tools="http_get", name="allowlist")
async def allowlist(ctx: PreToolCallDecideContext) -> HookResult:
    host = urlsplit(str(ctx.args["url"])).hostname or ""
    if host not in await fetch_allowlist():
        return HookResult.deny(f"{host} is not on the allowlist")
    return HookResult.allow()


@registry.pre_tool_call_decide(tools="http_get", name="scanner", timeout=0.05)
async def scanner(ctx: PreToolCallDecideContext) -> HookResult:
    if "slow.example" in str(ctx.args["url"]):
        await asyncio.Event().wait()  # a scan that never answers: the timeout denies the call
    return HookResult.allow()


@registry.permission_denied
async def audit(ctx: PermissionDeniedContext) -> None:
    denied.append(ctx.call_id)


async def main() -> None:
    for index, url in enumerate(("https://docs.python.org/3/", "https://evil.example/", "https://slow.example/")):
        call = PreToolCallDecideContext(tool_name="http_get", args={"url": url}, call_id=f"call-{index}")
        resolution = await registry.aresolve_tool_call(call)
        if resolution.result.allowed:
            print(f"run http_get {dict(resolution.args)}")
        else:
            print(f"denied by {resolution.result.decided_by}: {resolution.result.reason}")
    print(f"audit: {len(denied)} denied call(s)")
    try:
        registry.resolve_tool_call(call)  # the sync surface refuses async hooks
    except AsyncHookError as error:
        print(f"sync dispatch refused: {error}")


if __name__ == "__main__":
    asyncio.run(main())
