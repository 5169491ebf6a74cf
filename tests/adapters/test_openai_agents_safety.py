"""The OpenAI Agents SDK's own safety machinery keeps working with hookreg attached: approvals, failures."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    ModelBehaviorError,
    RunConfig,
    RunContextWrapper,
    RunResult,
    RunState,
    Tool,
    function_tool,
    set_tracing_disabled,
)
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from interpreter_exit import printed_until_exit

from hookreg import (
    HookRegistry,
    HookResult,
    HookTypeError,
    OnInteractionContext,
    PermissionDeniedContext,
    PreToolCallDecideContext,
    StopRun,
)
from hookreg.adapters.openai_agents import HookregRunHooks, guard_tools, hookreg_run_hooks


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    """Disable the SDK's tracing (which would export to the network) for the duration of a test."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


class Shell:
    """A shell tool (pretend) that records what it ran, and a needs_approval predicate that records what it saw."""

    def __init__(self, *, holds: str | None = None, always: bool = False) -> None:
        self.ran: list[dict[str, object]] = []
        self.judged: list[dict[str, Any]] = []

        async def needs(_ctx: RunContextWrapper[Any], params: dict[str, Any], _call_id: str) -> bool:
            self.judged.append(params)
            return holds is not None and holds in str(params.get("command", ""))

        def shell(command: str, lines: int = 10) -> str:
            """Run a shell command (pretend), showing its last lines."""
            self.ran.append({"command": command, "lines": lines})
            return f"ran {command}"

        self.tool: FunctionTool = function_tool(shell, needs_approval=True if always else needs)


def calling(args: Mapping[str, object]) -> ScriptedModel:
    """A model that calls shell with `args`, then answers "done"."""
    return ScriptedModel([[function_call("shell", dict(args), call_id="c1")], [assistant_message("done")]])


def run(registry: HookRegistry, shell: Shell, args: Mapping[str, object], *, guard: bool = True) -> RunResult:
    """One run of an agent whose model calls shell with `args`, through hookreg's entry point."""
    tools: list[Tool] = guard_tools([shell.tool], registry) if guard else [shell.tool]
    agent = Agent(name="ops", model=calling(args), tools=tools)
    return asyncio.run(hookreg_run_hooks(registry).run(agent, "go"))


def tool_output(result: RunResult) -> str:
    """The output of the run's one tool call, as the model read it."""
    return next(str(item.output) for item in result.new_items if item.type == "tool_call_output_item")


@pytest.mark.parametrize("guard", [False, True])
def test_a_call_the_sdk_holds_for_approval_stays_held(guard: bool) -> None:
    """Arguments validation changes (a default filled in) are held for approval, whatever the predicate says."""
    shell = Shell()  # the predicate never asks: only the SDK's own rule can hold the call
    result = run(HookRegistry(), shell, {"command": "ls"}, guard=guard)
    assert [item.tool_name for item in result.interruptions] == ["shell"]
    assert shell.ran == []


def test_the_predicate_sees_the_arguments_that_will_run() -> None:
    """needs_approval judges the arguments transform_tool_input rewrote, not the model's."""
    registry = HookRegistry()
    registry.transform_tool_input(lambda ctx: {**ctx.args, "command": "rm -rf /"})
    shell = Shell(holds="rm")
    result = run(registry, shell, {"command": "ls", "lines": 10})
    assert shell.judged == [{"command": "rm -rf /", "lines": 10}]
    assert [item.tool_name for item in result.interruptions] == ["shell"]
    assert shell.ran == []


@pytest.mark.parametrize("always", [False, True])
def test_a_denied_call_is_never_shown_to_the_human(always: bool) -> None:
    """The gate judges before the SDK asks a human: a denied call is no interruption, and never runs."""
    registry = HookRegistry()
    denied: list[PermissionDeniedContext] = []
    registry.pre_tool_call_decide(lambda ctx: HookResult.deny("no rm"))
    registry.permission_denied(denied.append)
    shell = Shell(holds="rm", always=always)
    result = run(registry, shell, {"command": "rm -rf /", "lines": 10})
    assert result.interruptions == []
    assert tool_output(result) == "no rm"
    assert [ctx.call_id for ctx in denied] == ["c1"]
    assert shell.ran == []
    assert shell.judged == []  # the SDK's predicate never saw the denied call


def test_an_approved_call_resumes_without_a_second_gate() -> None:
    """A call the gate allowed and a human approved runs on resume, with the gate's verdict (no second ask)."""
    registry = HookRegistry()
    gated: list[PreToolCallDecideContext] = []
    asked: list[OnInteractionContext] = []

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx)
        return HookResult.ask("run it?")

    @registry.on_interaction
    def human(ctx: OnInteractionContext) -> HookResult:
        asked.append(ctx)
        return HookResult.allow()

    shell = Shell(holds="rm")
    agent = Agent(name="ops", model=calling({"command": "rm x", "lines": 1}), tools=guard_tools([shell.tool], registry))
    hooks = hookreg_run_hooks(registry)
    first = asyncio.run(hooks.run(agent, "go"))
    assert [item.tool_name for item in first.interruptions] == ["shell"]
    assert shell.ran == []
    state = first.to_state()
    state.approve(first.interruptions[0])
    resumed = asyncio.run(hooks.run(agent, state))
    assert resumed.final_output == "done"
    assert shell.ran == [{"command": "rm x", "lines": 1}]
    assert len(gated) == len(asked) == 1


def test_a_rejected_call_never_runs() -> None:
    """A call the gate allowed and a human rejected does not run: the SDK's rejection stands."""
    shell = Shell(always=True)
    registry = HookRegistry()
    registry.pre_tool_call_decide(lambda ctx: HookResult.allow())
    agent = Agent(name="ops", model=calling({"command": "ls", "lines": 1}), tools=guard_tools([shell.tool], registry))
    hooks = hookreg_run_hooks(registry)
    first = asyncio.run(hooks.run(agent, "go"))
    state = first.to_state()
    state.reject(first.interruptions[0], rejection_message="not today")
    resumed = asyncio.run(hooks.run(agent, state))
    assert tool_output(resumed) == "not today"
    assert shell.ran == []


def test_a_stop_before_the_human_is_asked_reaches_the_caller() -> None:
    """A StopRun from the gate that runs before approval ends the run and reaches the caller as itself."""
    stop = StopRun("halt")
    registry = HookRegistry()

    @registry.pre_tool_call_decide
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise stop

    shell = Shell(always=True)
    with pytest.raises(StopRun) as raised:
        run(registry, shell, {"command": "ls", "lines": 1})
    assert raised.value is stop
    assert shell.ran == []


@pytest.mark.parametrize("guard", [False, True])
def test_a_tool_raising_cancelled_error_fails_the_call_not_the_run(guard: bool) -> None:
    """A tool's own CancelledError is a failed call the model reads, as the SDK makes it."""

    @function_tool
    def flaky(text: str) -> str:
        """Fail the way a cancelled client call does."""
        raise asyncio.CancelledError

    tools: list[Tool] = guard_tools([flaky], HookRegistry()) if guard else [flaky]
    model = ScriptedModel([[function_call("flaky", {"text": "x"}, call_id="c1")], [assistant_message("done")]])
    result = asyncio.run(hookreg_run_hooks(HookRegistry()).run(Agent(name="a", model=model, tools=tools), "go"))
    assert result.final_output == "done"
    assert "error" in tool_output(result).lower()


def test_an_earlier_verdict_is_reused_only_for_the_arguments_it_judged() -> None:
    """The invoker takes the verdict given before approval for the very same arguments, else gates again."""
    registry = HookRegistry()
    gated: list[dict[str, object]] = []

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(dict(ctx.args))
        return HookResult.allow()

    shell = Shell(always=True)
    (guarded,) = guard_tools([shell.tool], registry)
    assert isinstance(guarded, FunctionTool)
    needs_approval = guarded.needs_approval
    assert callable(needs_approval)
    context = RunContextWrapper(context=None)

    async def call(call_id: str, judged: dict[str, object], sent: str) -> object:
        assert await needs_approval(context, judged, call_id) is True
        tool_context = ToolContext(  # the same run: the usage every context of one SDK run shares
            context=None, usage=context.usage, tool_name="shell", tool_call_id=call_id, tool_arguments=sent
        )
        return await guarded.on_invoke_tool(tool_context, sent)

    assert asyncio.run(call("c1", {"command": "ls", "lines": 1}, '{"command": "ls", "lines": 1}')) == "ran ls"
    assert gated == [{"command": "ls", "lines": 1}]
    assert asyncio.run(call("c2", {"command": "ls", "lines": 1}, '{"command": "rm", "lines": 1}')) == "ran rm"
    assert gated[1:] == [{"command": "ls", "lines": 1}, {"command": "rm", "lines": 1}]


def unknown_tool_agent() -> tuple[Agent[Any], ScriptedModel]:
    """An agent with one tool whose model calls a tool it does not have, then answers "done"."""
    model = ScriptedModel([[function_call("nope", {"text": "x"}, call_id="c1")], [assistant_message("done")]])
    return Agent(name="a", model=model, tools=guard_tools([Shell().tool], HookRegistry())), model


def test_an_unknown_tool_raises_as_in_the_sdk_when_nobody_listens() -> None:
    """With no invalid_tool_call hook, a call to an unknown tool raises the SDK's own error, as without hookreg."""
    agent, _ = unknown_tool_agent()
    with pytest.raises(ModelBehaviorError, match="Tool nope not found in agent a"):
        asyncio.run(hookreg_run_hooks(HookRegistry()).run(agent, "go"))


def test_the_apps_formatter_answers_an_unknown_tool_when_nobody_listens() -> None:
    """The app's own tool_error_formatter words an unknown tool's error, as without hookreg."""
    agent, model = unknown_tool_agent()
    config = RunConfig(
        tool_not_found_behavior="return_error_to_model", tool_error_formatter=lambda args: f"app: no {args.tool_name}"
    )
    result = asyncio.run(hookreg_run_hooks(HookRegistry()).run(agent, "go", run_config=config))
    assert result.final_output == "done"
    assert tool_output(result) == "app: no nope"
    assert model.calls  # the model was called through the app's config


def test_a_dict_run_config_is_taken_as_the_sdk_takes_it() -> None:
    """A run_config given as a dict of RunConfig fields works, as Runner.run takes it; anything else is refused."""
    model = ScriptedModel([[assistant_message("from the config's model")]])
    agent = Agent(name="a", tools=[])
    hooks = hookreg_run_hooks(HookRegistry())
    assert asyncio.run(hooks.run(agent, "go", run_config={"model": model})).final_output == "from the config's model"
    with pytest.raises(HookTypeError, match="Cannot build hookreg's run config from 3: it is neither a RunConfig"):
        hooks.run_config(3)  # type: ignore[arg-type]  # the mistake under test


def toggling_gate(registry: HookRegistry) -> list[str]:
    """A pre_tool_call_decide hook that allows its first call and denies every later one; returns its log."""
    gated: list[str] = []

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx.call_id)
        return HookResult.allow() if len(gated) == 1 else HookResult.deny("not again")

    return gated


def test_a_verdict_is_never_reused_by_another_run() -> None:
    """A verdict given before approval in one run never lets another run's call with the same id and arguments pass."""
    registry = HookRegistry()
    gated = toggling_gate(registry)
    shell = Shell(always=True)
    (guarded,) = guard_tools([shell.tool], registry)
    assert isinstance(guarded, FunctionTool)
    needs_approval = guarded.needs_approval
    assert callable(needs_approval)
    sent = '{"command": "ls", "lines": 1}'

    async def two_runs() -> object:
        first = RunContextWrapper(context=None)  # a run held for approval, then abandoned
        assert await needs_approval(first, {"command": "ls", "lines": 1}, "c1") is True
        other = ToolContext(context=None, tool_name="shell", tool_call_id="c1", tool_arguments=sent)  # another run
        return await guarded.on_invoke_tool(other, sent)

    assert asyncio.run(two_runs()) == "not again"
    assert gated == ["c1", "c1"]
    assert shell.ran == []


def test_a_verdict_is_never_reused_by_a_later_run_of_the_same_hooks() -> None:
    """A run paused on an approval and abandoned leaves no verdict a later run reusing its call ids could take."""
    registry = HookRegistry()
    gated = toggling_gate(registry)
    shell = Shell(always=True)
    agent = Agent(name="ops", model=calling({"command": "ls", "lines": 1}), tools=guard_tools([shell.tool], registry))
    hooks = hookreg_run_hooks(registry)
    paused = asyncio.run(hooks.run(agent, "go"))
    assert [item.tool_name for item in paused.interruptions] == ["shell"]
    # A second run with the same call id and arguments, which the app pre-approves for good.
    later = Agent(name="ops", model=calling({"command": "ls", "lines": 1}), tools=agent.tools)
    context: RunContextWrapper[Any] = RunContextWrapper(context=None)
    context.approve_tool(paused.interruptions[0], always_approve=True)
    result = asyncio.run(hooks.run(later, "go", context=context))
    assert tool_output(result) == "not again"
    assert gated == ["c1", "c1"]
    assert shell.ran == []


def allowing_gate(registry: HookRegistry) -> list[str]:
    """A pre_tool_call_decide hook that allows every call; returns the call ids it judged."""
    gated: list[str] = []

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(ctx.call_id)
        return HookResult.allow()

    return gated


async def final_output(run: Awaitable[RunResult]) -> object:
    """The final output of a blocking run."""
    return (await run).final_output


def session_log(registry: HookRegistry) -> list[str]:
    """Record each session start and end (with its status) as they fire."""
    log: list[str] = []
    registry.on_session_start(lambda ctx: log.append(f"start {ctx.run.run_id}"))
    registry.on_session_end(lambda ctx: log.append(f"end {ctx.outcome.status} {ctx.run.run_id}"))
    return log


async def resume_streamed(hooks: HookregRunHooks, agent: Agent[Any], state: RunState[Any]) -> object:
    """Resume `state` through hooks.run_streamed, consuming its events; return the final output."""
    result = hooks.run_streamed(agent, state)
    async for _ in hooks.stream_events(result):
        pass
    return result.final_output


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize("saved", [False, True], ids=["in_memory", "json"])
def test_a_paused_and_resumed_run_is_one_session(saved: bool, streamed: bool) -> None:
    """A run paused on an approval stays open; its resume (in memory or from JSON) is the same session, gated once."""
    registry = HookRegistry()
    log = session_log(registry)
    gated = allowing_gate(registry)
    shell = Shell(always=True)
    agent = Agent(name="ops", model=calling({"command": "ls", "lines": 1}), tools=guard_tools([shell.tool], registry))
    hooks = hookreg_run_hooks(registry)
    first = asyncio.run(hooks.run(agent, "go"))
    (start,) = log
    state = first.to_state()
    if saved:
        state = asyncio.run(RunState.from_json(agent, state.to_json()))
    state.approve(state.get_interruptions()[0])
    resumed = resume_streamed(hooks, agent, state) if streamed else final_output(hooks.run(agent, state))
    assert asyncio.run(resumed) == "done"
    assert shell.ran == [{"command": "ls", "lines": 1}]
    assert gated == ["c1"]
    assert log == [start, start.replace("start", "end completed")]


def test_two_runs_paused_on_the_same_approvals_are_not_resumed_as_either() -> None:
    """Runs paused on identical pending approvals end at the pause; a resume is a new session that gates again."""
    registry = HookRegistry()
    log = session_log(registry)
    gated = allowing_gate(registry)
    shell = Shell(always=True)
    tools = guard_tools([shell.tool], registry)
    hooks = hookreg_run_hooks(registry)
    results = [
        asyncio.run(hooks.run(Agent(name="ops", model=calling({"command": "ls", "lines": 1}), tools=tools), "go"))
        for _ in range(2)
    ]
    assert [entry.rsplit(" ", 1)[0] for entry in log] == ["start", "start", "end completed", "end completed"]
    state = results[0].to_state()
    state.approve(state.get_interruptions()[0])
    agent = Agent(name="ops", model=calling({"command": "ls", "lines": 1}), tools=tools)
    assert asyncio.run(hooks.run(agent, state)).final_output == "done"
    assert gated == ["c1", "c1", "c1"]
    assert len(log) == 6


def test_a_paused_run_nothing_resumes_ends_cancelled_when_its_hooks_object_goes() -> None:
    """Hooks object, agent and paused result dropped: the paused session ends, cancelled, once (DESIGN §8)."""
    registry = HookRegistry()
    log = session_log(registry)
    shell = Shell(always=True)
    hooks = hookreg_run_hooks(registry)
    agent = Agent(name="ops", model=calling({"command": "ls", "lines": 1}), tools=guard_tools([shell.tool], registry))
    paused = asyncio.run(hooks.run(agent, "go"))
    assert paused.interruptions
    (start,) = log
    del hooks, agent, paused
    gc.collect()
    assert log == [start, start.replace("start", "end cancelled")]
    assert shell.ran == []


def test_a_paused_run_nothing_resumes_ends_cancelled_at_interpreter_exit(tmp_path: Path) -> None:
    """The interpreter exits with the paused run's hooks object alive: its session ends cancelled."""
    printed = printed_until_exit(
        tmp_path,
        """
        import asyncio
        from agents import Agent, set_tracing_disabled
        from test_openai_agents_safety import Shell, calling
        from hookreg import HookRegistry
        from hookreg.adapters.openai_agents import guard_tools, hookreg_run_hooks

        set_tracing_disabled(True)
        registry = HookRegistry()
        registry.on_session_end(lambda ctx: print("end", ctx.outcome.status, ctx.outcome.reason, flush=True))
        hooks = hookreg_run_hooks(registry)
        shell = Shell(always=True)
        agent = Agent(name="ops", model=calling({"command": "ls"}), tools=guard_tools([shell.tool], registry))
        paused = asyncio.run(hooks.run(agent, "go"))
        print("paused", len(paused.interruptions), flush=True)
        """,
    )
    assert printed == ["paused 1", "end cancelled the run was paused and never resumed"]
