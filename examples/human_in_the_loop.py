"""Human in the loop: a gate asks before deploying; an interaction hook answers for the human."""

from hookreg import HookRegistry, HookResult, OnInteractionContext, PreToolCallDecideContext, ToolCallRequest
from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

registry = HookRegistry()


def deploy(target: str) -> str:
    return f"deployed to {target}"


@registry.pre_tool_call_decide(tools="deploy")
def ask_before_deploy(ctx: PreToolCallDecideContext) -> HookResult:
    return HookResult.ask(f"Deploy to {ctx.args['target']}?")


@registry.on_interaction
def operator(ctx: OnInteractionContext) -> HookResult:
    # A real app would prompt a person here (input(), a chat message, a web form).
    approve = "staging" in ctx.question
    print(f"operator asked {ctx.question!r} -> {'yes' if approve else 'no'}")
    return HookResult.allow("approved") if approve else HookResult.deny("production deploys need a change ticket")


model = ScriptedModel(
    [
        ScriptedTurn(
            text="Deploying to both environments.",
            tool_calls=[
                ToolCallRequest("c1", "deploy", {"target": "staging"}),
                ToolCallRequest("c2", "deploy", {"target": "production"}),
            ],
        ),
        ScriptedTurn(text="Staging is live; production is waiting for a change ticket."),
    ]
)
result = Harness(model, [deploy], registry).run("Ship the release.")

for message in result.history:
    if message.role == "tool":
        print(f"{message.tool_call_id}: {message.content}")
print(result.output)
