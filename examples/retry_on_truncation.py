"""Retry on truncation: when an answer stops at the token cap, ask again with a larger cap."""

from hookreg import HookRegistry, ModelTurnFinishedContext, PreModelCallContext, RequestPatch, TurnAction
from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

registry = HookRegistry()


class Cap(int):
    """The output cap chosen for the rest of this run (kept in the run's scratchpad)."""


@registry.model_turn_finished
def grow_cap(ctx: ModelTurnFinishedContext) -> TurnAction:
    if ctx.finish_reason != "length" or ctx.max_tokens is None:
        return TurnAction.continue_run()
    print(f"turn {ctx.turn} cut at {ctx.max_tokens} tokens: {ctx.text!r}; retrying with {ctx.max_tokens * 2}")
    ctx.run.scratchpad.insert(Cap(ctx.max_tokens * 2))
    return TurnAction.repeat()  # counted against max_turns, so this cannot loop forever


@registry.pre_model_call
def apply_cap(ctx: PreModelCallContext) -> RequestPatch | None:
    cap = ctx.run.scratchpad.get(Cap)
    return None if cap is None else RequestPatch(max_tokens=cap)


answer = "Hooks let one registry gate, rewrite and observe every step of an agent loop, sync or async."
# ScriptedModel truncates a turn while the request's max_tokens is below its word count.
model = ScriptedModel([ScriptedTurn(text=answer)])
harness = Harness(model, registry=registry, max_tokens=4)
result = harness.run("What are hooks for?")

print(f"{result.outcome.status} after {result.outcome.turns} model calls: {result.output}")
print("caps requested:", [request.max_tokens for request in model.requests])
