"""Fixtures for the harness tests: the four entry points, and a scenario that touches every hook point."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookReturn,
    ModelTurnFinishedContext,
    OnInteractionContext,
    OnToolErrorContext,
    PreModelCallContext,
    PreToolCallDecideContext,
    RequestPatch,
    StopContext,
    ToolCallRequest,
    TransformToolResultContext,
    TurnAction,
)
from hookreg.harness import Harness, RunFinished, RunResult, ScriptedModel, ScriptedTurn, StreamItem, Tool

ENTRY_POINTS = ("run", "arun", "stream", "astream")
Drive = Callable[[Harness, str], RunResult]


def collect(harness: Harness, goal: str, entry: str) -> tuple[RunResult, list[StreamItem]]:
    """Run `harness` through `entry`; return the result and every stream item (none for blocking runs)."""
    if entry == "run":
        return harness.run(goal), []
    if entry == "arun":
        return asyncio.run(harness.arun(goal)), []
    if entry == "stream":
        items = list(harness.stream(goal))
    else:

        async def consume() -> list[StreamItem]:
            return [item async for item in harness.astream(goal)]

        items = asyncio.run(consume())
    last = items[-1]
    assert isinstance(last, RunFinished)
    return last.result, items


@pytest.fixture(params=ENTRY_POINTS)
def entry(request: pytest.FixtureRequest) -> str:
    """Each of the four entry points in turn."""
    name: str = request.param
    return name


@pytest.fixture
def drive(entry: str) -> Drive:
    """Run a harness to the end through each of the four entry points in turn."""
    return lambda harness, goal: collect(harness, goal, entry)[0]


@pytest.fixture(scope="session")
def run_through() -> Callable[[Harness, str, str], tuple[RunResult, list[StreamItem]]]:
    """The `collect` function: run a harness through a named entry point."""
    return collect


def pass_value(point: HookPoint) -> HookReturn:
    """What a hook returns at `point` to let everything through unchanged."""
    if point is HookPoint.MODEL_TURN_FINISHED:
        return TurnAction.continue_run()
    if point.style == "decide" and point is not HookPoint.INVALID_TOOL_CALL:
        return HookResult.allow()
    return None


Seen = list[tuple[HookPoint, object]]


def install_recorder(registry: HookRegistry) -> Seen:
    """Register a recording hook at every point, ahead of any other; return the list it fills in order."""
    seen: Seen = []
    for point in HookPoint:

        def record(ctx: object, point: HookPoint = point) -> HookReturn:
            seen.append((point, ctx))
            return pass_value(point)

        registry.register(point, record, priority=100, name=f"record-{point.value}")
    return seen


def shell(command: str, timeout: float = 10.0) -> str:
    """A pretend shell."""
    return f"$ {command}\nok"


def read(path: str) -> str:
    """A file reader that never finds anything."""
    raise FileNotFoundError(path)


def deploy(target: str) -> str:
    """A pretend deployment."""
    return f"deployed to {target}"


LONG_ANSWER = "The project is tidy: logs removed, docs found, deploy done, nothing else to do."


def scenario_registry() -> HookRegistry:
    """A registry steering the scenario through every hook point."""
    registry = HookRegistry()

    @registry.transform_tool_input(tools="shell")
    def add_timeout(ctx: PreToolCallDecideContext) -> Mapping[str, object] | None:
        return {**ctx.args, "timeout": 30.0}

    @registry.pre_tool_call_decide
    def gate(ctx: PreToolCallDecideContext) -> HookResult:
        if "rm -rf" in str(ctx.args.get("command", "")):
            return HookResult.deny("rm -rf is not allowed; delete files one by one")
        if ctx.tool_name == "deploy":
            return HookResult.ask(f"deploy to {ctx.args['target']}?")
        return HookResult.allow()

    @registry.on_interaction
    def approve(ctx: OnInteractionContext) -> HookResult:
        return HookResult.allow("approved by ops")

    @registry.on_tool_error
    def explain(ctx: OnToolErrorContext) -> str | None:
        if isinstance(ctx.error, FileNotFoundError):
            return f"{ctx.args['path']} does not exist"
        return None

    @registry.transform_tool_result(tools="shell")
    def shorten(ctx: TransformToolResultContext) -> str | None:
        return ctx.presentation.splitlines()[-1]

    @registry.model_turn_finished
    def grow_cap(ctx: ModelTurnFinishedContext) -> TurnAction:
        if ctx.finish_reason == "length" and ctx.max_tokens is not None:
            ctx.run.scratchpad.insert(RequestPatch(max_tokens=ctx.max_tokens * 2))
            return TurnAction.repeat()
        return TurnAction.continue_run()

    @registry.pre_model_call
    def apply_cap(ctx: PreModelCallContext) -> RequestPatch | None:
        return ctx.run.scratchpad.get(RequestPatch)

    @registry.stop
    def double_check(ctx: StopContext) -> HookResult:
        if ctx.run.depth == 0 and ctx.continuation_count == 0:
            return HookResult.deny("double-check that nothing is left")
        return HookResult.allow()

    return registry


def scenario() -> tuple[Harness, ScriptedModel, Seen]:
    """A harness, its model and its recorded dispatches; the run touches every hook point (deltas when streaming)."""
    registry = scenario_registry()
    seen = install_recorder(registry)
    first = ScriptedTurn(
        reasoning="Survey first.",
        text="Let me look.",
        tool_calls=[
            ToolCallRequest("c-ls", "shell", {"command": "ls"}),
            ToolCallRequest("c-rm", "shell", {"command": "rm -rf build"}),
            ToolCallRequest("c-grep", "grep", {"pattern": "TODO"}),
            ToolCallRequest("c-read", "read", {"path": "notes.txt"}),
            ToolCallRequest("c-deploy", "deploy", {"target": "staging"}),
            ToolCallRequest("c-research", "research", {"goal": "find the docs"}),
        ],
    )
    model = ScriptedModel([first, ScriptedTurn(text=LONG_ANSWER), ScriptedTurn(text="Checked.")], name="main-model")
    helper = Harness(ScriptedModel([ScriptedTurn(text="docs are in docs/")]), registry=registry, name="researcher")
    tools: list[Tool | Callable[..., object]] = [shell, read, deploy, helper.as_tool("research")]
    harness = Harness(model, tools, registry, name="tidy", max_turns=8, max_tokens=8, compact_after=12)
    return harness, model, seen


@pytest.fixture
def record() -> Callable[[HookRegistry], Seen]:
    """The `install_recorder` function: record every dispatch of a registry."""
    return install_recorder


@pytest.fixture(scope="session")
def make_scenario() -> Callable[[], tuple[Harness, ScriptedModel, Seen]]:
    """The `scenario` factory: a harness whose run touches every hook point."""
    return scenario
