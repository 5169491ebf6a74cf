"""The limits: hand-written loops over a tuple of plain functions, the floor for any call-based API.

The timed benchmark (`dispatch.py`) and its instruction count (run in an
interpreter that imports only hookreg and this module) both use them.
"""

import dataclasses

from hookreg import Decision, HookResult

ALLOW = HookResult.allow()


def limit_decide(fns):
    def decide(ctx, fns=tuple(fns), ALLOW=Decision.ALLOW, ALLOWED=ALLOW):  # noqa: N803
        for fn in fns:
            r = fn(ctx)
            if r.decision is not ALLOW:
                return r
        return ALLOWED

    return decide


def limit_transform(fns):
    def transform(ctx, fns=tuple(fns), replace=dataclasses.replace):
        value = ctx.presentation
        for fn in fns:
            new = fn(ctx)
            if new is not None:
                value = new
                ctx = replace(ctx, presentation=new)  # the next hook sees the value so far
        return value

    return transform


def limit_async(fns):
    """The decide limit as a coroutine, awaited: what an `await` costs, for reference."""

    async def decide(ctx, fns=tuple(fns), ALLOW=Decision.ALLOW, ALLOWED=ALLOW):  # noqa: N803
        for fn in fns:
            r = fn(ctx)
            if r.decision is not ALLOW:
                return r
        return ALLOWED

    return decide


def limit_notify(fns):
    def notify(ctx, fns=tuple(fns)):
        for fn in fns:
            fn(ctx)

    return notify


def limit_notify_checked(fns):
    """The limit of an observe dispatch that tests each return, as hookreg must (DESIGN §3): a reference, no target."""

    def notify(ctx, fns=tuple(fns)):
        for fn in fns:
            result = fn(ctx)
            if result is not None:
                break

    return notify
