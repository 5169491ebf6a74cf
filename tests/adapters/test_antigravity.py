"""Tests for hookreg.adapters.antigravity: its hooks as the SDK runs them, and the real runtime offline."""

from __future__ import annotations

import asyncio
import copy
import functools
import gc
import json
import warnings
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("google.antigravity")

from antigravity_fake import FakeModel, serve, text, tool_call
from google.antigravity import Agent, LocalOpenAIAgentConfig, types
from google.antigravity.hooks import PreToolCallDecideHook, policy
from google.antigravity.hooks.hook_runner import HookRunner

from hookreg import (
    HookRegistry,
    HookResult,
    HookTypeError,
    HookValueError,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PostToolCallContext,
    PostTurnContext,
    PreToolCallDecideContext,
    PreTurnContext,
    StopContext,
    StopRun,
    UserPromptSubmitContext,
)
from hookreg.adapters.antigravity import with_hookreg
from hookreg.testing.conformance import Answer, RunReport

ALLOW_ALL = [policy.allow_all()]


def in_loop(fn: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """Run the async test `fn` in a fresh event loop, as the SDK's hook runner would await it."""

    @functools.wraps(fn)
    def test() -> None:
        asyncio.run(fn())

    return test


def config(**fields: Any) -> LocalOpenAIAgentConfig:
    return LocalOpenAIAgentConfig(model="fake", base_url="http://127.0.0.1:9/v1", **fields)


def runner(registry: HookRegistry, **fields: Any) -> HookRunner:
    """The SDK's own HookRunner over the hooks `with_hookreg` put in the config, as ``Agent`` builds it."""
    return HookRunner(hooks=with_hookreg(config(**fields), registry).hooks)


def recording(into: list[Any], answer: HookResult | None = None) -> Callable[[Any], HookResult]:
    """A decider that keeps each context it sees in `into`, then answers `answer` (default: allow)."""

    def decide(ctx: Any) -> HookResult:
        into.append(ctx)
        return answer or HookResult.allow()

    return decide


def echo(word: str) -> str:
    """Echo a word."""
    return f"echo:{word}"


class Shout(PreToolCallDecideHook):  # type: ignore[misc]  # the SDK is untyped
    """An SDK hook of the application's that edits the call."""

    async def run(self, context: Any, data: types.ToolCall) -> types.HookResult:
        return types.HookResult(allow=True, modified_args={"word": str(data.args["word"]).upper()})


def test_empty_registry_returns_the_config_itself() -> None:
    """With no hooks anywhere the SDK reaches, the config is returned as it is."""
    cfg = config()
    assert with_hookreg(cfg, HookRegistry()) is cfg


def test_not_a_registry_is_refused() -> None:
    """Anything but a HookRegistry is refused where it is passed."""
    with pytest.raises(HookTypeError, match="with_hookreg"):
        with_hookreg(config(), object())  # type: ignore[arg-type]  # the mistake under test


def test_gate_without_policies_is_refused() -> None:
    """The SDK counts any decide hook as a safety policy: hookreg's gate never switches its check off silently."""
    reg = HookRegistry()
    reg.pre_tool_call_decide(lambda ctx: HookResult.allow())
    with pytest.raises(HookValueError, match=r"Cannot add hookreg's tool gate .*policies=\[policy.allow_all\(\)\]"):
        with_hookreg(config(policies=[]), reg)


def test_observers_leave_the_sdk_safety_check_in_place() -> None:
    """Observers add no decide hook, so the SDK still refuses write tools without a policy."""
    reg = HookRegistry()
    reg.post_tool_call(lambda ctx: None)
    cfg = with_hookreg(config(capabilities=types.CapabilitiesConfig(), policies=[]), reg)
    assert not any(isinstance(hook, PreToolCallDecideHook) for hook in cfg.hooks)

    async def start() -> None:
        async with Agent(cfg):
            pass  # pragma: no cover - the SDK refuses before the session starts

    with pytest.raises(ValueError, match="without a safety policy"):
        asyncio.run(start())


def test_agent_deep_copies_the_config_with_the_same_registry() -> None:
    """``Agent`` deep-copies its config: hookreg's hooks survive it, still running the same registry."""
    reg = HookRegistry()
    reg.pre_tool_call_decide(lambda ctx: HookResult.allow())
    cfg = with_hookreg(config(policies=ALLOW_ALL), reg)
    Agent(cfg)
    copied = copy.deepcopy(cfg.hooks)
    assert [vars(hook) for hook in copied] == [vars(hook) for hook in cfg.hooks]


@in_loop
async def test_gate_denies_with_the_text_the_model_reads() -> None:
    """A deny answers allow=False with hookreg's text; the tool never runs."""
    reg = HookRegistry()
    reg.pre_tool_call_decide(lambda ctx: HookResult.deny("no secrets"))
    hooks = runner(reg, policies=ALLOW_ALL)
    _, turn = await hooks.dispatch_pre_turn("go")
    result, _, _ = await hooks.dispatch_pre_tool_call(turn, types.ToolCall(name="echo", args={"word": "x"}, id="c1"))
    assert (result.allow, result.message) == (False, "no secrets")


@in_loop
async def test_gate_sees_other_hooks_edits_and_rewrites_args() -> None:
    """The gate runs after the application's own decide hooks, on their edit; a transform goes back as modified_args."""
    reg = HookRegistry()
    seen: list[PreToolCallDecideContext] = []
    reg.pre_tool_call_decide(recording(seen))
    reg.transform_tool_input(lambda ctx: {**ctx.args, "by": "hookreg"})
    hooks = runner(reg, policies=ALLOW_ALL, hooks=[Shout()])
    _, turn = await hooks.dispatch_pre_turn("go")
    result, call, _ = await hooks.dispatch_pre_tool_call(
        turn, types.ToolCall(name="echo", args={"word": "hi"}, id="c1")
    )
    assert dict(seen[0].args) == {"word": "HI", "by": "hookreg"}
    assert result.allow
    assert call.args == {"word": "HI", "by": "hookreg"}


@in_loop
async def test_session_starts_once_and_each_prompt_is_a_turn() -> None:
    """Session start fires on the first prompt only; each prompt is gated and starts a turn; the end fires once."""
    reg = HookRegistry()
    events: list[object] = []
    reg.on_session_start(lambda ctx: events.append(("start", ctx.goal)))
    prompts: list[UserPromptSubmitContext] = []
    turns: list[PreTurnContext] = []
    reg.user_prompt_submit(recording(prompts))
    reg.pre_turn(recording(turns))
    reg.on_session_end(lambda ctx: events.append(("end", ctx.outcome.status, ctx.outcome.turns)))
    hooks = runner(reg)
    await hooks.dispatch_pre_turn("one")
    await hooks.dispatch_pre_turn("two")
    await hooks.dispatch_session_end()
    await hooks.dispatch_session_end()
    assert events == [("start", "one"), ("end", "completed", 2)]
    assert [p.content for p in prompts] == ["one", "two"]
    assert [t.turn for t in turns] == [1, 2]


@in_loop
async def test_denied_prompt_denies_the_turn_and_ends_stopped() -> None:
    """A user_prompt_submit deny refuses the turn with its reason; the session ends stopped with it."""
    reg = HookRegistry()
    ends: list[OnSessionEndContext] = []
    reg.user_prompt_submit(lambda ctx: HookResult.deny("off topic"))
    reg.on_session_end(ends.append)
    hooks = runner(reg)
    result, _ = await hooks.dispatch_pre_turn("hello")
    await hooks.dispatch_session_end()
    assert (result.allow, result.message) == (False, "off topic")
    assert (ends[0].outcome.status, ends[0].outcome.reason) == ("stopped", "off topic")


@in_loop
async def test_stop_run_in_the_gate_denies_and_ends_stopped() -> None:
    """A StopRun from a gate hook runs no tool and ends the session stopped (the SDK lets no exception through)."""
    reg = HookRegistry()
    ends: list[OnSessionEndContext] = []

    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise StopRun("enough")

    reg.pre_tool_call_decide(halt)
    reg.on_session_end(ends.append)
    hooks = runner(reg, policies=ALLOW_ALL)
    _, turn = await hooks.dispatch_pre_turn("go")
    result, _, _ = await hooks.dispatch_pre_tool_call(turn, types.ToolCall(name="echo", args={}, id="c1"))
    await hooks.dispatch_session_end()
    assert (result.allow, result.message) == (False, "enough")
    assert (ends[0].outcome.status, ends[0].outcome.reason) == ("stopped", "enough")


@in_loop
async def test_stop_run_from_an_observer_ends_the_session_stopped() -> None:
    """The SDK swallows a hook's exception: a StopRun from post_tool_call still ends the session stopped."""
    reg = HookRegistry()
    ends: list[OnSessionEndContext] = []

    def halt(ctx: PostToolCallContext) -> None:
        raise StopRun("seen enough")

    reg.post_tool_call(halt)
    reg.on_session_end(ends.append)
    hooks = runner(reg)
    _, turn = await hooks.dispatch_pre_turn("go")
    await hooks.dispatch_post_tool_call(turn, types.ToolResult(name="echo", id="c1", result="echo:hi"))
    await hooks.dispatch_session_end()
    assert (ends[0].outcome.status, ends[0].outcome.reason) == ("stopped", "seen enough")


@in_loop
async def test_session_end_without_a_prompt_fires_nothing() -> None:
    """A session no prompt reached never started, so it does not end."""
    reg = HookRegistry()
    ends: list[OnSessionEndContext] = []
    starts: list[OnSessionStartContext] = []
    reg.on_session_end(ends.append)
    reg.on_session_start(starts.append)
    await runner(reg).dispatch_session_end()
    assert (ends, starts) == ([], [])


@in_loop
async def test_outcome_points() -> None:
    """A result fires post_tool_call; an error result does not; on_tool_error's text is the SDK's custom message."""
    reg = HookRegistry()
    posts: list[PostToolCallContext] = []
    reg.post_tool_call(posts.append)
    reg.on_tool_error(lambda ctx: f"retry later ({ctx.message})" if ctx.tool_name == "echo" else None)
    hooks = runner(reg)
    _, turn = await hooks.dispatch_pre_turn("go")
    await hooks.dispatch_post_tool_call(turn, types.ToolResult(name="echo", id="c1", result="echo:hi"))
    await hooks.dispatch_post_tool_call(turn, types.ToolResult(name="echo", id="c2", error="boom"))
    error = types.ToolExecutionError("boom", "echo", None, call_id="c2")
    shaped = await hooks.dispatch_on_tool_error(turn, error)
    default = await hooks.dispatch_on_tool_error(turn, types.ToolExecutionError("boom", "other", None))
    assert [(p.call_id, p.result) for p in posts] == [("c1", "echo:hi")]
    assert shaped[1] == "retry later (boom)"
    assert default == (types.HookResult(allow=False), None)


@in_loop
async def test_outcome_points_see_the_args_the_gate_approved() -> None:
    """The SDK's outcome hooks carry no args: post_tool_call and on_tool_error see those the gate approved."""
    reg = HookRegistry()
    posts: list[PostToolCallContext] = []
    errors: list[OnToolErrorContext] = []
    reg.pre_tool_call_decide(lambda ctx: HookResult.allow())
    reg.post_tool_call(posts.append)
    reg.on_tool_error(errors.append)
    hooks = runner(reg, policies=ALLOW_ALL)
    _, turn = await hooks.dispatch_pre_turn("go")
    for call_id in ("c1", "c2"):
        await hooks.dispatch_pre_tool_call(turn, types.ToolCall(name="echo", args={"word": call_id}, id=call_id))
    await hooks.dispatch_post_tool_call(turn, types.ToolResult(name="echo", id="c1", result="echo:c1"))
    await hooks.dispatch_on_tool_error(turn, types.ToolExecutionError("boom", "echo", None, call_id="c2"))
    assert [(p.tool_name, dict(p.args)) for p in posts] == [("echo", {"word": "c1"})]
    assert [(e.tool_name, dict(e.args), e.message) for e in errors] == [("echo", {"word": "c2"}, "boom")]


@in_loop
async def test_post_turn_and_stop() -> None:
    """post_turn sees the response; a stop deny keeps the run going with its reason as the SDK's CONTINUE."""
    reg = HookRegistry()
    turns: list[PostTurnContext] = []
    stops: list[StopContext] = []
    reg.post_turn(turns.append)

    def deny_once(ctx: StopContext) -> HookResult:
        stops.append(ctx)
        return HookResult.deny("check again") if len(stops) == 1 else HookResult.allow()

    reg.stop(deny_once)
    hooks = runner(reg)
    _, turn = await hooks.dispatch_pre_turn("go")
    await hooks.dispatch_post_turn(turn, "the answer")
    first = await hooks.dispatch_stop(turn, types.StopArgs(response_text="the answer"))
    second = await hooks.dispatch_stop(turn, types.StopArgs(response_text="the answer"))
    assert [(t.turn, t.response_text) for t in turns] == [(1, "the answer")]
    assert (first.decision, first.reason) == (types.StopDecision.CONTINUE, "check again")
    assert second.decision == types.StopDecision.ALLOW_STOP
    assert [s.continuation_count for s in stops] == [0, 1]


@in_loop
async def test_sessions_are_separate() -> None:
    """One config serves two agent sessions: each has its own turns and ends on its own."""
    reg = HookRegistry()
    turns: list[PreTurnContext] = []
    reg.pre_turn(recording(turns))
    cfg = with_hookreg(config(), reg)
    first, second = HookRunner(hooks=cfg.hooks), HookRunner(hooks=cfg.hooks)
    await first.dispatch_pre_turn("a")
    await second.dispatch_pre_turn("b")
    assert [t.turn for t in turns] == [1, 1]
    assert turns[0].run.run_id != turns[1].run.run_id


@pytest.mark.slow
def test_end_to_end_with_the_sdk_runtime() -> None:
    """The SDK's localharness runs a real tool call: hookreg denies one, allows one, then the SDK policy judges it."""
    reg = HookRegistry()
    gated: list[str] = []
    policed: list[str] = []
    ends: list[OnSessionEndContext] = []
    errors: list[OnToolErrorContext] = []

    def no_secrets(ctx: PreToolCallDecideContext) -> HookResult:
        gated.append(str(ctx.args["word"]))
        return HookResult.deny("no secrets") if ctx.args["word"] == "secret" else HookResult.allow()

    def police(args: dict[str, Any]) -> bool:
        policed.append(str(args["word"]))
        return bool(args["word"] == "blocked")

    reg.pre_tool_call_decide(no_secrets)
    reg.on_session_end(ends.append)
    reg.on_tool_error(errors.append)
    script = [
        tool_call("echo", {"word": "secret"}, "c1"),
        tool_call("echo", {"word": "hi"}, "c2"),
        tool_call("echo", {"word": "blocked"}, "c3"),
        text("bye"),
    ]

    async def main(model: FakeModel) -> str:
        policies = [policy.deny("echo", when=police), policy.allow_all()]
        cfg = LocalOpenAIAgentConfig(model="fake", base_url=model.base_url, tools=[echo], policies=policies)
        async with Agent(with_hookreg(cfg, reg)) as agent:
            response = await agent.chat("go")
            return await asyncio.wait_for(response.text(), 60)

    with serve(FakeModel(script)) as model:
        answer = asyncio.run(asyncio.wait_for(main(model), 120))
    with warnings.catch_warnings():
        # The SDK leaves its runtime's two pipes to the garbage collector; collect them here, not in pytest's teardown.
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    read = model.tool_messages()
    assert answer == "bye"
    assert "denied by pre-tool hook: no secrets" in read[0]
    assert '"result": "echo:hi"' in read[1]
    assert "Denied by policy" in read[2]
    assert gated == ["secret", "hi", "blocked"]
    assert policed == ["hi", "blocked"]  # a hookreg deny never reaches the SDK's policy
    assert [(e.outcome.status, e.outcome.turns) for e in ends] == [("completed", 1)]


@pytest.mark.slow
def test_the_example_runs_offline() -> None:
    """examples/adapter_antigravity.py on the SDK's runtime and a fake server: .git is denied, build/ is deleted."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "adapter_antigravity.py"
    script = [
        tool_call("delete_path", {"path": ".git"}, "c1"),
        tool_call("delete_path", {"path": "build"}, "c2"),
        text("cleaned up"),
    ]
    with serve(FakeModel(script)) as model:
        env = {**os.environ, "OPENAI_BASE_URL": model.base_url, "AG_MODEL": "fake"}
        done = subprocess.run(
            [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=120, check=True
        )
    assert "denied delete_path: that path holds the repository" in done.stdout
    assert "ran delete_path({'path': 'build'}) -> " in done.stdout
    assert "would delete build" in done.stdout
    assert "answer: cleaned up" in done.stdout


def test_an_older_release_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release older than the adapter's floor is refused on import, naming the release needed."""
    import importlib
    import importlib.metadata
    import sys

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.1.20")
    monkeypatch.delitem(sys.modules, "hookreg.adapters.antigravity")
    with pytest.raises(ImportError, match=r"google-antigravity 0\.1\.20 is installed.*google-antigravity>=0\.1\.21"):
        importlib.import_module("hookreg.adapters.antigravity")


# --- the SDK as a run-contract kit Framework (test_antigravity_kit.py runs it) ---


def scripted(answer: Answer) -> dict[str, Any]:
    """One kit answer as the fake chat-completions server plays it."""
    if answer.error is not None:
        return {"error": True}
    if answer.hang:
        return {"hang": True}
    calls = [
        {
            "id": call.call_id,
            "type": "function",
            "function": {
                "name": call.tool_name,
                "arguments": call.args if isinstance(call.args, str) else json.dumps(dict(call.args)),
            },
        }
        for call in answer.calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
    if calls:
        message["tool_calls"] = calls
    if answer.truncated:
        message["finish_reason"] = "length"
    return message


def sdk_tool(name: str, fn: Callable[..., str]) -> Callable[..., str]:
    """A kit tool as the SDK reads a custom tool: a named, documented function with echo's signature."""

    def tool(text: str, prefix: str = "", suffix: str = "") -> str:
        return fn(text=text, prefix=prefix, suffix=suffix)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = f"{name}: return prefix + text + suffix."
    return tool


@dataclass
class AgWiring:
    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        with serve(FakeModel([scripted(a) for a in answers])) as model:
            cfg = LocalOpenAIAgentConfig(
                model="fake",
                base_url=model.base_url,
                tools=[sdk_tool(name, fn) for name, fn in self.tools.items()],
                policies=[policy.allow_all()],
            )
            async with Agent(with_hookreg(cfg, self.registry)) as agent:
                response = await agent.chat(prompt)
                output = await response.text()
            return RunReport(tool_messages=model.tool_messages_by_call(), output=output)


class Antigravity:
    """The Antigravity SDK as a kit `Framework`: its localharness runtime on a fake chat-completions server."""

    name = "antigravity"
    streams = False  # agent.chat is the one entry point
    stop_raises = False  # the SDK's hook runner swallows every hook exception
    limits: Mapping[str, str] = {
        # The runtime checks a call's tool and arguments itself before any hook runs.
        "non_object_arguments": "the runtime refuses arguments that are not an object before any hook runs",
        "malformed_arguments": "the runtime refuses malformed arguments before any hook runs",
        "arguments_failing_the_schema": "the runtime checks arguments against the tool's schema before any hook runs",
        "unknown_tool": "the runtime answers a call to an unknown tool itself: no hook reaches hookreg",
        "tool_not_offered": "the SDK offers no per-request tool list: pre_model_call never fires",
        "finish_reasons_mapped": "the SDK has no hook after each model call: model_turn_finished never fires",
        "wiring_reused_for_a_second_run": "the SDK has no hook per model call: a turn is a prompt (agent.chat)",
        "concurrent_runs_on_one_wiring": "the SDK has no hook per model call: a turn is a prompt (agent.chat)",
        "turn_scratchpad_fresh_each_turn": "the SDK has no hook per model call: a turn is a prompt (agent.chat)",
        "observers_fire_once": "raw_result is the runtime's JSON text of the result, not the value the tool returned",
        "result_rewrite_reaches_model": "PostToolCallHook only inspects: the model reads the tool's own result",
        "tool_fails_by_exception_and_by_error_result": (
            "the SDK hands OnToolErrorHook its error text, never the tool's exception"
        ),
        "run_level_ask": "a refused turn reaches the caller as the SDK's AntigravityExecutionError, not as StopRun",
        "model_error_ends_failed": "the runtime retries a failing model call instead of ending the run",
        "cancellation_ends_cancelled": "the SDK ends a session alike on close and cancel: it ends completed",
    }

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> AgWiring:
        return AgWiring(registry, tools)
