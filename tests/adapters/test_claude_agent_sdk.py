"""Tests for hookreg.adapters.claude_agent_sdk: its callbacks as the SDK calls them, and the real CLI offline."""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (
    ClaudeAgentOptions,
    HookMatcher,
    Message,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    ToolPermissionContext,
    create_sdk_mcp_server,
    tool,
)
from external.claude_code.cli import _OFFLINE, Project, _fake_bash, find_cli
from external.claude_code.fake_api import FakeMessagesAPI, ModelCall, ModelTurn

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    HookTypeError,
    NotificationContext,
    OnCompactionContext,
    OnInteractionContext,
    OnSessionEndContext,
    OnSessionStartContext,
    OnToolErrorContext,
    PermissionDeniedContext,
    PostToolCallContext,
    PostToolCallFailureContext,
    PreCompactContext,
    PreToolCallDecideContext,
    PreTurnContext,
    RunContext,
    StopContext,
    StopRun,
    SubagentStartContext,
    SubagentStopContext,
    TransformToolResultContext,
    UserPromptSubmitContext,
)
from hookreg._lifecycle import RunState
from hookreg.adapters.claude_agent_sdk import HookregHooks, ToolFailure, _Run
from hookreg.testing.conformance import Answer, ReportedError, RunReport

# --- the callbacks, as the SDK calls them ----------------------------------------------

BASE = {"session_id": "s-1", "transcript_path": "/nonexistent/t.jsonl", "cwd": "/tmp", "permission_mode": "default"}


def wired(registry: HookRegistry, options: ClaudeAgentOptions | None = None) -> tuple[ClaudeAgentOptions, _Run]:
    """The options one query of `registry` would hand the SDK, and that query's state."""
    run = _Run(RunState(registry, RunContext(), goal="go"))
    return HookregHooks(registry)._options(options, run), run


async def call(options: ClaudeAgentOptions, event: str, data: Mapping[str, Any], tool_use_id: str | None = None) -> Any:
    """Call hookreg's callback for `event` the way the SDK does: ``(input, tool_use_id, {"signal": None})``."""
    assert options.hooks is not None
    (matcher,) = [m for m in options.hooks[event] if m.on_failure == "block"]  # type: ignore[index]
    (callback,) = matcher.hooks
    return await callback({**BASE, "hook_event_name": event, **data}, tool_use_id, {"signal": None})  # type: ignore[arg-type]


def pre(command: str, call_id: str = "toolu_1") -> dict[str, object]:
    return {"tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": call_id}


def test_an_empty_registry_hands_the_sdk_the_very_options() -> None:
    """With no hooks, the options object reaches the SDK unchanged: no callback, no can_use_tool."""
    options = ClaudeAgentOptions(permission_mode="bypassPermissions")
    assert wired(HookRegistry(), options)[0] is options


def test_a_query_nobody_listens_to_is_the_sdk_s_own_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """No hook at any point a query reaches: `query` hands back what the SDK's query returned, no layer around it."""
    import hookreg.adapters.claude_agent_sdk as adapter

    stream, asked = object(), []

    def sdk_query(**arguments: object) -> object:
        asked.append(arguments)
        return stream

    monkeypatch.setattr(adapter, "sdk_query", sdk_query)
    registry = HookRegistry()
    registry.post_turn(lambda ctx: None)  # the SDK shows no moment after a model call: no query reaches it
    options = ClaudeAgentOptions()
    assert HookregHooks(registry).query(prompt="go", options=options) is stream
    assert asked == [{"prompt": "go", "options": options, "transport": None}]
    registry.on_session_end(lambda ctx: None)
    assert HookregHooks(registry).query(prompt="go", options=options) is not stream


def test_callbacks_join_the_application_s_hooks_only_for_events_with_hooks() -> None:
    """The app's matchers stay first; hookreg adds one blocking matcher per event with hooks, and one counting turns."""
    registry = HookRegistry()
    registry.post_tool_call(lambda ctx: None)

    async def own(data: Any, tool_use_id: str | None, context: Any) -> Any:
        return {}

    mine = HookMatcher(matcher="Bash", hooks=[own])
    options, _ = wired(registry, ClaudeAgentOptions(hooks={"PostToolUse": [mine]}))
    assert options.hooks is not None
    assert list(options.hooks) == ["PostToolUse", "PostToolBatch"]
    assert options.hooks["PostToolUse"][0] is mine
    assert options.hooks["PostToolUse"][1].on_failure == "block"
    assert options.can_use_tool is None


def test_pre_tool_use_denies_with_the_reason_and_allows_with_no_decision() -> None:
    """A deny is permissionDecision deny with its reason; an allow leaves the CLI's own permission flow to decide."""
    registry = HookRegistry()
    denied: list[PermissionDeniedContext] = []
    registry.permission_denied(denied.append)

    @registry.pre_tool_call_decide
    def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("no rm") if "rm" in str(ctx.args["command"]) else HookResult.allow()

    options, _ = wired(registry)
    answer = asyncio.run(call(options, "PreToolUse", pre("rm -rf /"), "toolu_1"))
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no rm",
        }
    }
    assert [(d.tool_name, d.call_id, d.reason) for d in denied] == [("Bash", "toolu_1", "no rm")]
    assert asyncio.run(call(options, "PreToolUse", pre("ls"))) == {}


def test_pre_tool_use_returns_rewritten_args_as_updated_input() -> None:
    """A transform's args go back as updatedInput, and the gate judged those args."""
    registry = HookRegistry()
    judged: list[Mapping[str, object]] = []
    registry.transform_tool_input(lambda ctx: {**ctx.args, "command": f"timeout 5 {ctx.args['command']}"})

    @registry.pre_tool_call_decide
    def record(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(ctx.args)
        return HookResult.allow()

    answer = asyncio.run(call(wired(registry)[0], "PreToolUse", pre("ls")))
    assert answer == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "timeout 5 ls"}}
    }
    assert judged == [{"command": "timeout 5 ls"}]


def test_an_ask_at_the_gate_goes_to_on_interaction() -> None:
    """An ask fires notification then on_interaction; no approval is a deny."""
    registry = HookRegistry()
    seen: list[str] = []
    registry.pre_tool_call_decide(lambda ctx: HookResult.ask("really?"))
    registry.notification(lambda ctx: seen.append(ctx.message))

    @registry.on_interaction
    def refuse(ctx: OnInteractionContext) -> HookResult:
        seen.append(f"asked {ctx.question} for {ctx.tool_name}")
        return HookResult.deny("not today")

    answer = asyncio.run(call(wired(registry)[0], "PreToolUse", pre("ls")))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert answer["hookSpecificOutput"]["permissionDecisionReason"] == "not today"
    assert seen == ["approval needed for Bash: really?", "asked really? for Bash"]


def test_turns_advance_at_each_tool_batch_and_a_pre_turn_deny_stops() -> None:
    """PostToolBatch starts the next turn (a fresh turn scratchpad); pre_turn denying it stops the run."""
    registry = HookRegistry()
    turns: list[int] = []

    @registry.pre_turn
    def two_turns(ctx: PreTurnContext) -> HookResult:
        turns.append(ctx.turn)
        return HookResult.deny("two turns is plenty") if ctx.turn > 2 else HookResult.allow()

    options, run = wired(registry)
    assert list(options.hooks or {}) == ["PostToolBatch"]
    asyncio.run(call(options, "PostToolBatch", {}))
    assert (run.state.run.turn, turns) == (1, [1])
    asyncio.run(call(options, "PostToolBatch", {}))
    assert turns == [1, 2]
    answer = asyncio.run(call(options, "PostToolBatch", {}))
    assert answer == {"continue_": False, "stopReason": "two turns is plenty"}
    assert isinstance(run.error, StopRun)


def test_hooks_see_the_tool_names_they_were_written_for() -> None:
    """tool_names maps the CLI's names (an SDK MCP tool's mcp__server__tool) onto the registry's."""
    registry = HookRegistry()
    registry.register(HookPoint.PRE_TOOL_CALL_DECIDE, lambda ctx: HookResult.deny(f"no {ctx.tool_name}"), tools="echo")
    run = _Run(RunState(registry, RunContext()), {"mcp__kit__echo": "echo"})
    options = HookregHooks(registry, tool_names={"mcp__kit__echo": "echo"})._options(None, run)
    data = {"tool_name": "mcp__kit__echo", "tool_input": {"text": "hi"}, "tool_use_id": "toolu_1"}
    answer = asyncio.run(call(options, "PreToolUse", data))
    assert answer["hookSpecificOutput"]["permissionDecisionReason"] == "no echo"
    assert asyncio.run(call(options, "PreToolUse", {**data, "tool_name": "mcp__kit__other"})) == {}


def test_a_failing_gate_denies() -> None:
    """A gate that raises denies (fail closed), and the CLI is told so."""
    registry = HookRegistry()

    @registry.pre_tool_call_decide(name="broken")
    def broken(ctx: PreToolCallDecideContext) -> HookResult:
        raise ConnectionError

    answer = asyncio.run(call(wired(registry)[0], "PreToolUse", pre("ls")))
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_stop_run_in_a_callback_stops_the_cli_and_is_kept_for_the_caller() -> None:
    """StopRun: the CLI gets continue false with the reason (and a deny at PreToolUse); later callbacks do nothing."""
    registry = HookRegistry()
    stop = StopRun("enough")

    @registry.pre_tool_call_decide
    def halt(ctx: PreToolCallDecideContext) -> HookResult:
        raise stop

    registry.post_tool_call(lambda ctx: None)
    options, run = wired(registry)
    answer = asyncio.run(call(options, "PreToolUse", pre("ls")))
    assert answer["continue_"] is False
    assert answer["stopReason"] == "enough"
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert run.error is stop
    later = asyncio.run(call(options, "PostToolUse", {**pre("ls"), "tool_response": "x"}))
    assert later == {"continue_": False, "stopReason": "enough"}
    other = asyncio.run(call(options, "PreToolUse", pre("pwd", "toolu_2")))  # a later call of the same batch
    assert other["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_post_tool_use_fires_the_result_points_and_rewrites_what_the_model_reads() -> None:
    """PostToolUse: transform_tool_result on the Bash stdout, post_tool_call with it; the rewrite goes back."""
    registry = HookRegistry()
    seen: list[PostToolCallContext] = []

    @registry.transform_tool_result
    def shout(ctx: TransformToolResultContext) -> str:
        return ctx.presentation.upper()

    registry.post_tool_call(seen.append)
    bash = {"stdout": "hi", "stderr": "", "interrupted": False}
    answer = asyncio.run(call(wired(registry)[0], "PostToolUse", {**pre("echo hi"), "tool_response": bash}))
    assert answer == {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": {**bash, "stdout": "HI"}}
    }
    assert [(c.tool_name, c.call_id, c.result, c.raw_result) for c in seen] == [("Bash", "toolu_1", "HI", bash)]


@pytest.mark.parametrize(
    ("raw", "shown", "rewritten"),
    [
        ([{"type": "text", "text": "hi"}], "hi", {"updatedMCPToolOutput": [{"type": "text", "text": "HI"}]}),
        (
            {"content": [{"type": "text", "text": "hi"}]},
            "hi",
            {"updatedMCPToolOutput": [{"type": "text", "text": "HI"}]},
        ),
        ("hi", "hi", {"updatedToolOutput": "HI"}),
        ({"n": 1}, '{"n": 1}', {"updatedToolOutput": '{"N": 1}'}),
    ],
)
def test_each_result_shape_is_presented_and_rewritten_in_its_own_shape(
    raw: object, shown: str, rewritten: dict[str, object]
) -> None:
    """MCP content blocks show their text, other results their JSON; a rewrite keeps the shape the CLI accepts."""
    registry = HookRegistry()
    presented: list[str] = []

    @registry.transform_tool_result
    def shout(ctx: TransformToolResultContext) -> str:
        presented.append(ctx.presentation)
        return ctx.presentation.upper()

    answer = asyncio.run(call(wired(registry)[0], "PostToolUse", {**pre("x"), "tool_response": raw}))
    assert presented == [shown]
    assert answer == {"hookSpecificOutput": {"hookEventName": "PostToolUse", **rewritten}}


def test_an_unchanged_result_answers_nothing() -> None:
    """Observers only: the CLI's own result stands."""
    registry = HookRegistry()
    registry.post_tool_call(lambda ctx: None)
    assert asyncio.run(call(wired(registry)[0], "PostToolUse", {**pre("x"), "tool_response": "x"})) == {}


def test_post_tool_use_failure_fires_the_failure_points() -> None:
    """PostToolUseFailure: post_tool_call_failure, then on_tool_error, whose text is added as context."""
    registry = HookRegistry()
    failures: list[PostToolCallFailureContext] = []
    registry.post_tool_call_failure(failures.append)

    @registry.on_tool_error
    def explain(ctx: OnToolErrorContext) -> str:
        return f"{ctx.message} (try again)"

    data = {**pre("false"), "error": "Exit code 1", "duration_ms": 7}
    answer = asyncio.run(call(wired(registry)[0], "PostToolUseFailure", data))
    assert answer == {
        "hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": "Exit code 1 (try again)"}
    }
    (failure,) = failures
    assert isinstance(failure.error, ToolFailure)
    assert (str(failure.error), failure.duration_ms) == ("Exit code 1", 7.0)
    registry.clear(HookPoint.ON_TOOL_ERROR)
    assert asyncio.run(call(wired(registry)[0], "PostToolUseFailure", data)) == {}


def test_stop_keeps_the_run_going_with_the_deny_s_reason() -> None:
    """Stop: a deny is decision block with its reason (the CLI goes on); an allow lets it stop."""
    registry = HookRegistry()
    seen: list[StopContext] = []

    @registry.stop
    def once_more(ctx: StopContext) -> HookResult:
        seen.append(ctx)
        return HookResult.deny("check the tests") if ctx.continuation_count == 0 else HookResult.allow()

    options, _ = wired(registry)
    data = {"stop_hook_active": False, "last_assistant_message": "done"}
    assert asyncio.run(call(options, "Stop", data)) == {"decision": "block", "reason": "check the tests"}
    assert asyncio.run(call(options, "Stop", data)) == {}
    assert [(c.response_text, c.continuation_count) for c in seen] == [("done", 0), ("done", 1)]


def test_the_observed_events_reach_their_points(tmp_path: Path) -> None:
    """PreCompact (with the transcript's size), Notification, SubagentStart and SubagentStop fire their namesakes."""
    registry = HookRegistry()
    seen: list[object] = []
    for point in (HookPoint.PRE_COMPACT, HookPoint.NOTIFICATION, HookPoint.SUBAGENT_START, HookPoint.SUBAGENT_STOP):
        registry.register(point, seen.append)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"a": 1}\n{"b": 2}\n')
    options, _ = wired(registry)
    compact = {"trigger": "auto", "custom_instructions": None, "transcript_path": str(transcript)}
    asyncio.run(call(options, "PreCompact", compact))
    asyncio.run(call(options, "PreCompact", {"trigger": "manual", "custom_instructions": None}))
    asyncio.run(call(options, "Notification", {"message": "waiting", "notification_type": "idle_prompt"}))
    asyncio.run(call(options, "SubagentStart", {"agent_id": "a1", "agent_type": "general-purpose"}))
    stop = {"agent_id": "a1", "agent_type": "general-purpose", "stop_hook_active": False, "agent_transcript_path": ""}
    asyncio.run(call(options, "SubagentStop", {**stop, "last_assistant_message": "found it"}))
    compacted, unreadable, note, start, end = seen
    assert isinstance(compacted, PreCompactContext)
    assert (compacted.transcript_len, compacted.message_count) == (18, 2)
    assert isinstance(unreadable, PreCompactContext)
    assert (unreadable.transcript_len, unreadable.message_count) == (0, 0)
    assert isinstance(note, NotificationContext)
    assert note.message == "waiting"
    assert isinstance(start, SubagentStartContext)
    assert (start.goal, start.depth) == ("general-purpose", 1)
    assert isinstance(end, SubagentStopContext)
    assert (end.outcome.status, end.outcome.reason, end.depth) == ("completed", "found it", 1)


def test_a_compaction_fires_on_compaction_with_what_the_summary_replaced(tmp_path: Path) -> None:
    """PostCompact: on_compaction with the entries PreCompact counted and the summary's length, even alone."""
    registry = HookRegistry()
    seen: list[OnCompactionContext] = []
    registry.on_compaction(seen.append)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"a": 1}\n{"b": 2}\n{"c": 3}\n')
    options, _ = wired(registry)
    assert set(options.hooks or {}) == {"PreCompact", "PostCompact", "PostToolBatch"}
    compact = {"trigger": "auto", "custom_instructions": None, "transcript_path": str(transcript)}
    assert asyncio.run(call(options, "PreCompact", compact)) == {}
    asyncio.run(call(options, "PostCompact", {"trigger": "auto", "compact_summary": "we listed files"}))
    assert [(c.removed, c.summary_chars) for c in seen] == [(3, 15)]


def test_permission_requests_go_to_on_interaction_when_the_app_has_no_can_use_tool() -> None:
    """can_use_tool asks on_interaction: approval allows; a deny denies and fires permission_denied."""
    registry = HookRegistry()
    denied: list[PermissionDeniedContext] = []
    registry.permission_denied(denied.append)

    @registry.on_interaction
    def only_ls(ctx: OnInteractionContext) -> HookResult:
        return HookResult.allow() if "ls" in ctx.question else HookResult.deny("no")

    assert wired(registry, ClaudeAgentOptions(permission_mode="bypassPermissions"))[0].can_use_tool is None
    options, _ = wired(registry)
    assert options.can_use_tool is not None
    can_use_tool = options.can_use_tool

    async def asked(args: dict[str, Any], context: ToolPermissionContext) -> object:
        return await can_use_tool("Bash", args, context)

    allow = asyncio.run(asked({"command": "ls"}, ToolPermissionContext(title="Run ls?")))
    assert isinstance(allow, PermissionResultAllow)
    deny = asyncio.run(asked({"command": "rm"}, ToolPermissionContext(tool_use_id="toolu_9")))
    assert isinstance(deny, PermissionResultDeny)
    assert deny.message == "no"
    assert [(d.call_id, d.args, d.reason) for d in denied] == [("toolu_9", {"command": "rm"}, "no")]


def test_the_application_s_can_use_tool_is_kept() -> None:
    """An app's can_use_tool stays the one the CLI asks (hookreg's gate ran before, at PreToolUse)."""
    registry = HookRegistry()
    registry.on_interaction(lambda ctx: HookResult.allow())

    async def own(tool_name: str, args: dict[str, Any], context: ToolPermissionContext) -> PermissionResultAllow:
        return PermissionResultAllow()

    options, _ = wired(registry, ClaudeAgentOptions(can_use_tool=own))
    assert options.can_use_tool is own


def test_a_denied_prompt_stops_before_the_cli_starts() -> None:
    """user_prompt_submit denies: StopRun, session ended stopped, and no CLI is spawned (no cli_path is needed)."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)

    @registry.user_prompt_submit
    def no_secrets(ctx: UserPromptSubmitContext) -> HookResult:
        return HookResult.deny("no secrets in prompts")

    async def consume() -> None:
        options = ClaudeAgentOptions(cli_path="/nonexistent/claude")
        async for _ in HookregHooks(registry).query(prompt="my password is x", options=options):
            pass

    with pytest.raises(StopRun, match="no secrets in prompts"):
        asyncio.run(consume())
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "no secrets in prompts")]


def test_a_cli_that_cannot_start_ends_the_session_failed() -> None:
    """The SDK's error reaches the caller as itself; the session started and ended once, failed."""
    registry = HookRegistry()
    seen: list[object] = []
    registry.on_session_start(seen.append)
    registry.on_session_end(seen.append)

    async def consume() -> None:
        options = ClaudeAgentOptions(cli_path="/nonexistent/claude")
        async for _ in HookregHooks(registry).query(prompt="go", options=options):
            pass

    with pytest.raises(Exception, match="nonexistent"):
        asyncio.run(consume())
    start, end = seen
    assert isinstance(start, OnSessionStartContext)
    assert start.goal == "go"
    assert isinstance(end, OnSessionEndContext)
    assert end.outcome.status == "failed"


def _import_adapter_with(monkeypatch: pytest.MonkeyPatch, installed: str) -> None:
    """Execute the adapter module afresh (under another name) while claude-agent-sdk reports `installed`."""
    import importlib.metadata
    import importlib.util
    import sys

    import hookreg.adapters.claude_agent_sdk as adapter

    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: installed if name == "claude-agent-sdk" else real(name)
    )
    spec = importlib.util.spec_from_file_location("hookreg_claude_agent_sdk_probe", adapter.__file__)
    assert spec is not None
    assert spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, probe)  # dataclasses look their module up while it executes
    spec.loader.exec_module(probe)


def test_a_too_old_sdk_is_refused_naming_the_version_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing the adapter over claude-agent-sdk 0.2.176 (no HookMatcher.on_failure) names 0.2.177."""
    with pytest.raises(ImportError, match=r"claude-agent-sdk 0\.2\.176 is installed, but .*>=0\.2\.177"):
        _import_adapter_with(monkeypatch, "0.2.176")


@pytest.mark.parametrize("installed", ["0.2.177", "0.2.189", "0.3.0"])
def test_the_floor_and_newer_releases_import(monkeypatch: pytest.MonkeyPatch, installed: str) -> None:
    """The floor release and newer ones import without complaint."""
    _import_adapter_with(monkeypatch, installed)


def test_refuses_what_is_not_a_registry() -> None:
    """HookregHooks needs a HookRegistry."""
    with pytest.raises(HookTypeError, match=r"Cannot build HookregHooks from 3: it is not a HookRegistry"):
        HookregHooks(3)  # type: ignore[arg-type]


# --- the real CLI, offline -----------------------------------------------------------------


@dataclass
class Offline:
    """One offline CLI run's options, the fake API's log, and the commands the recording Bash got."""

    options: ClaudeAgentOptions
    api: FakeMessagesAPI
    project: Project

    def tool_results(self) -> dict[str, str]:
        """What the model read for each tool call, by call id."""
        return tool_messages(self.api)

    def prompts(self) -> list[str]:
        """The user texts the model was sent, in order (feedback from a Stop hook among them)."""
        texts = []
        for message in self.api.log.agent_requests[-1]["messages"]:
            if message["role"] != "user":
                continue
            content = message["content"]
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            texts += [p["text"] for p in parts if p.get("type") == "text"]
        return texts


@pytest.fixture(scope="module")
def claude_cli() -> str:
    cli, why = find_cli()
    if cli is None:
        pytest.skip(why)
    return cli


@asynccontextmanager
async def offline(cli: str, root: Path, script: Sequence[ModelTurn]) -> AsyncIterator[Offline]:
    """Options running the pinned CLI against the fake API, its Bash tool recording commands instead of running them."""
    project = Project(root)
    project.dir.mkdir(parents=True)
    (root / "home").mkdir()
    with FakeMessagesAPI(script) as api:
        env = {
            "HOME": str(root / "home"),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-offline-test",
            "CLAUDE_CODE_SHELL": str(_fake_bash(project)),
            "RECORD_BASH_LOG": str(project.bash_log),
            **_OFFLINE,
        }
        options = ClaudeAgentOptions(
            cli_path=cli, cwd=str(project.dir), env=env, permission_mode="bypassPermissions", setting_sources=[]
        )
        yield Offline(options, api, project)


def tool_messages(api: FakeMessagesAPI) -> dict[str, str]:
    """What the model read for each call id, in the last request it was sent."""
    results: dict[str, str] = {}
    for request in api.log.agent_requests[-1:]:
        for message in request["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else ():
                if part.get("type") == "tool_result":
                    content = part["content"]
                    text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
                    results[part["tool_use_id"]] = text
    return results


def bash(call_id: str, command: str) -> ModelCall:
    return ModelCall("Bash", {"command": command, "description": "scripted"}, call_id)


async def collect(hooks: HookregHooks, prompt: str, options: ClaudeAgentOptions) -> list[Message]:
    return [message async for message in hooks.query(prompt=prompt, options=options)]


def test_the_real_cli_runs_what_the_gate_allows_and_the_model_reads_the_denial(claude_cli: str, tmp_path: Path) -> None:
    """Two Bash calls: the gate denies one (the model reads why); the other runs with the args a transform wrote."""
    registry = HookRegistry()
    events: list[str] = []
    registry.on_session_start(lambda ctx: events.append("start"))
    registry.on_session_end(lambda ctx: events.append(f"end {ctx.outcome.status} after {ctx.outcome.turns} turns"))
    registry.post_tool_call(lambda ctx: events.append(f"ran {ctx.call_id}: {ctx.result}"))
    registry.transform_tool_input(lambda ctx: {**ctx.args, "command": f"{ctx.args['command']} --checked"})

    @registry.pre_tool_call_decide
    def no_rm(ctx: PreToolCallDecideContext) -> HookResult:
        return HookResult.deny("rm is not allowed here") if "rm " in str(ctx.args["command"]) else HookResult.allow()

    script = [ModelTurn(calls=[bash("toolu_1", "rm -rf build"), bash("toolu_2", "ls")]), ModelTurn(text="done")]

    async def main() -> tuple[Offline, list[Message]]:
        async with offline(claude_cli, tmp_path, script) as run:
            return run, await collect(HookregHooks(registry), "clean up", run.options)

    run, messages = asyncio.run(main())
    assert run.project.commands() == ["ls --checked"]
    read = run.tool_results()
    assert "rm is not allowed here" in read["toolu_1"]
    assert read["toolu_2"] == "recorded: ls --checked"
    assert events == ["start", "ran toolu_2: recorded: ls --checked", "end completed after 2 turns"]
    result = messages[-1]
    assert isinstance(result, ResultMessage)
    assert result.result == "done"


def test_the_real_cli_shows_the_model_a_rewritten_result_and_goes_on_after_a_stop_deny(
    claude_cli: str, tmp_path: Path
) -> None:
    """transform_tool_result reaches the model through updatedToolOutput; a stop deny's reason becomes feedback."""
    registry = HookRegistry()
    registry.transform_tool_result(lambda ctx: f"[{ctx.presentation}]")

    @registry.stop
    def once_more(ctx: StopContext) -> HookResult:
        return HookResult.deny("run the tests too") if ctx.continuation_count == 0 else HookResult.allow()

    script = [ModelTurn(calls=[bash("toolu_1", "ls")]), ModelTurn(text="first"), ModelTurn(text="second")]

    async def main() -> Offline:
        async with offline(claude_cli, tmp_path, script) as run:
            await collect(HookregHooks(registry), "go", run.options)
            return run

    run = asyncio.run(main())
    assert run.tool_results() == {"toolu_1": "[recorded: ls]"}
    assert any("run the tests too" in text for text in run.prompts())
    assert len(run.api.log.agent_requests) == 3


def test_the_real_cli_stops_on_stop_run_and_the_caller_gets_it(claude_cli: str, tmp_path: Path) -> None:
    """A StopRun from a post_tool_call observer ends the query with that very StopRun; the session ends stopped."""
    registry = HookRegistry()
    stop = StopRun("seen enough")
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)

    @registry.post_tool_call
    def halt(ctx: PostToolCallContext) -> None:
        raise stop

    script = [ModelTurn(calls=[bash("toolu_1", "ls")]), ModelTurn(calls=[bash("toolu_2", "pwd")]), ModelTurn(text="x")]

    async def main() -> Offline:
        async with offline(claude_cli, tmp_path, script) as run:
            with pytest.raises(StopRun) as raised:
                await collect(HookregHooks(registry), "go", run.options)
            assert raised.value is stop
            return run

    run = asyncio.run(main())
    assert run.project.commands() == ["ls"]
    assert [(e.outcome.status, e.outcome.reason) for e in ends] == [("stopped", "seen enough")]


def test_a_model_error_ends_the_session_failed(claude_cli: str, tmp_path: Path) -> None:
    """The API refusing every request: the CLI reports an error result and the session ends failed."""
    registry = HookRegistry()
    ends: list[OnSessionEndContext] = []
    registry.on_session_end(ends.append)

    async def main() -> None:
        async with offline(claude_cli, tmp_path, []) as run:
            env = {**run.options.env, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "CLAUDE_CODE_MAX_RETRIES": "0"}
            options = ClaudeAgentOptions(**{**run.options.__dict__, "env": env})
            with pytest.raises(Exception, match="error result") as raised:  # the SDK's own error, as itself
                await collect(HookregHooks(registry), "go", options)
            assert type(raised.value).__module__.startswith("claude_agent_sdk")

    asyncio.run(main())
    assert [e.outcome.status for e in ends] == ["failed"]
    assert "Connection refused" in ends[0].outcome.reason


def test_a_json_tool_result_is_what_post_tool_call_sees(claude_cli: str, tmp_path: Path) -> None:
    """post_tool_call's raw_result is the CLI's own tool_response (Bash: an object), its result the stdout."""
    registry = HookRegistry()
    seen: list[PostToolCallContext] = []
    registry.post_tool_call(seen.append)

    async def main() -> None:
        async with offline(
            claude_cli, tmp_path, [ModelTurn(calls=[bash("toolu_1", "ls")]), ModelTurn(text="ok")]
        ) as run:
            await collect(HookregHooks(registry), "go", run.options)

    asyncio.run(main())
    (ctx,) = seen
    assert ctx.result == "recorded: ls"
    assert isinstance(ctx.raw_result, Mapping)
    assert ctx.raw_result["stdout"] == "recorded: ls"
    assert json.dumps(dict(ctx.args)) == json.dumps({"command": "ls", "description": "scripted"})


# --- the run-contract kit's framework (its rows run in test_claude_agent_sdk_kit.py) -------------------

SERVER = "kit"
_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "prefix": {"type": "string"}, "suffix": {"type": "string"}},
    "required": ["text"],
}


def cli_name(name: str) -> str:
    """What the CLI calls an SDK MCP tool of the kit's server."""
    return f"mcp__{SERVER}__{name}"


class KitAPI(FakeMessagesAPI):
    """The fake Messages API playing the kit's answers; a hanging answer waits until the run is over."""

    def __init__(self, script: Sequence[ModelTurn], hang_at: int | None) -> None:
        super().__init__(script)
        self.hang_at = hang_at
        self.released = threading.Event()

    def answer(self, body: Mapping[str, Any]) -> ModelTurn:
        turn = super().answer(body)
        answered = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if answered == self.hang_at:
            self.released.wait(timeout=60)
        return turn


def script(answers: tuple[Answer, ...]) -> list[ModelTurn]:
    """The kit's answers as the fake API's turns, the tools named as the CLI names them."""
    return [
        ModelTurn(
            text=answer.text,
            calls=[ModelCall(cli_name(c.tool_name), dict(c.args), c.call_id) for c in answer.calls],  # type: ignore[arg-type]
        )
        for answer in answers
    ]


def mcp_tool(name: str, fn: Callable[..., str]) -> Any:
    """An SDK MCP tool running `fn` (a ReportedError is reported as an error result, other exceptions raise)."""

    async def handler(args: dict[str, Any]) -> dict[str, Any]:
        try:
            text = fn(**args)
        except ReportedError as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "is_error": True}
        return {"content": [{"type": "text", "text": text}]}

    return tool(name, f"The kit's {name} tool.", _SCHEMA)(handler)


@dataclass
class SdkWiring:
    cli: str
    registry: HookRegistry
    tools: Mapping[str, Callable[..., str]]

    async def run(self, answers: tuple[Answer, ...], *, prompt: str, streamed: bool) -> RunReport:
        hang_at = next((i for i, a in enumerate(answers) if a.hang), None)
        names = {cli_name(name): name for name in self.tools}
        hooks = HookregHooks(self.registry, tool_names=names)
        server = create_sdk_mcp_server(SERVER, tools=[mcp_tool(n, fn) for n, fn in self.tools.items()])
        api = KitAPI(script(answers), hang_at)
        with tempfile.TemporaryDirectory() as scratch, api:
            home = Path(scratch) / "home"
            home.mkdir()
            env = {"HOME": str(home), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-offline", **_OFFLINE}
            options = ClaudeAgentOptions(
                cli_path=self.cli,
                cwd=scratch,
                env=env,
                permission_mode="bypassPermissions",
                setting_sources=[],
                mcp_servers={SERVER: server},
                include_partial_messages=streamed,
            )
            output = ""
            try:
                async for message in hooks.query(prompt=prompt, options=options):
                    if isinstance(message, ResultMessage):
                        output = message.result or ""
            finally:
                api.released.set()
            return RunReport(tool_messages=tool_messages(api), output=output)


class ClaudeAgentSdk:
    """The Claude Agent SDK as a kit `Framework`: the pinned CLI, the kit's tools as an SDK MCP server."""

    name = "claude-agent-sdk"
    streams = True
    stop_raises = True
    limits: Mapping[str, str] = {
        # The CLI checks a call's tool and arguments itself before any hook runs and answers an invalid call
        # on its own: no hook event reaches hookreg.
        "non_object_arguments": "the CLI refuses arguments that are not an object before any hook runs",
        "malformed_arguments": "the CLI refuses malformed arguments before any hook runs",
        "arguments_failing_the_schema": "the CLI checks arguments against the tool's schema before any hook runs",
        "unknown_tool": "the CLI answers a call to an unknown tool itself: no hook event reaches hookreg",
        "tool_not_offered": "the SDK offers no per-request tool list: pre_model_call never fires",
        "model_error_ends_failed": (
            "the model is called in the CLI's process: the caller gets the SDK's error result, never the "
            "model's own exception (the session still ends failed)"
        ),
        "finish_reasons_mapped": "the SDK shows no event after each model call: model_turn_finished never fires",
        "observers_fire_once": (
            "raw_result is the CLI's tool_response (an MCP tool's content blocks), not the Python value the "
            "tool returned (the rest of the row holds: see test_claude_agent_sdk.py)"
        ),
        "tool_fails_by_exception_and_by_error_result": (
            "the model reads the CLI's own error text; on_tool_error's text reaches it as additionalContext "
            "beside the tool result, not in it"
        ),
    }

    def __init__(self, cli: str) -> None:
        self.cli = cli

    def wire(self, registry: HookRegistry, tools: Mapping[str, Callable[..., str]]) -> SdkWiring:
        return SdkWiring(self.cli, registry, tools)


def test_the_real_cli_reports_a_failing_tool_and_the_model_reads_on_tool_error_s_text(
    claude_cli: str, tmp_path: Path
) -> None:
    """An SDK MCP tool raising: the failure points fire once, never post_tool_call; on_tool_error's text reaches
    the model (beside the CLI's own error text)."""
    registry = HookRegistry()
    seen: list[str] = []
    registry.post_tool_call(lambda ctx: seen.append("post_tool_call"))
    registry.post_tool_call_failure(lambda ctx: seen.append(f"failure {ctx.tool_name}: {ctx.error}"))
    registry.on_tool_error(lambda ctx: "the echo tool is down: answer without it")

    def broken(**kwargs: object) -> str:
        raise RuntimeError("echo broke")

    server = create_sdk_mcp_server(SERVER, tools=[mcp_tool("echo", broken)])
    script = [ModelTurn(calls=[ModelCall(cli_name("echo"), {"text": "hi"}, "toolu_1")]), ModelTurn(text="ok")]

    async def main() -> Offline:
        async with offline(claude_cli, tmp_path, script) as run:
            options = ClaudeAgentOptions(**{**run.options.__dict__, "mcp_servers": {SERVER: server}})
            hooks = HookregHooks(registry, tool_names={cli_name("echo"): "echo"})
            await collect(hooks, "go", options)
            return run

    run = asyncio.run(main())
    assert seen == ["failure echo: echo broke"]
    assert "echo broke" in run.tool_results()["toolu_1"]
    sent = json.dumps(run.api.log.agent_requests[-1]["messages"])
    assert "the echo tool is down: answer without it" in sent


def test_the_example_runs_offline(tmp_path: Path) -> None:
    """examples/adapter_claude_agent_sdk.py, the SDK's bundled CLI on the fake API: mkdir runs with a
    timeout (the CLI asked, on_interaction approved), rm -rf is denied."""
    import os
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "examples" / "adapter_claude_agent_sdk.py"
    project = Project(tmp_path)
    project.dir.mkdir(parents=True)
    (tmp_path / "home").mkdir()
    script = [ModelTurn(calls=[bash("toolu_1", "mkdir out")]), ModelTurn(calls=[bash("toolu_2", "rm -rf build")])]
    with FakeMessagesAPI([*script, ModelTurn(text="cleaned up")]) as api:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-offline-test",
            "CLAUDE_CODE_SHELL": str(_fake_bash(project)),
            "RECORD_BASH_LOG": str(project.bash_log),
            **_OFFLINE,
        }
        done = subprocess.run(
            [sys.executable, str(example)],
            check=False,
            cwd=project.dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert "asked: " in done.stdout
    assert "ran 'mkdir out' (timeout 30000 ms) -> 'recorded: mkdir out'" in done.stdout
    assert "denied 'rm -rf build': rm -rf is not allowed; delete files one by one" in done.stdout
    assert "result: cleaned up" in done.stdout
    assert project.commands() == ["mkdir out"]


async def user_messages(*texts: str) -> AsyncIterator[dict[str, Any]]:
    """The SDK's input stream: one user message per text (the second with its text in parts)."""
    for n, text in enumerate(texts):
        content: object = text if n % 2 == 0 else [{"type": "text", "text": text}]
        yield {"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None}


def test_a_prompt_stream_gates_each_message_before_the_cli_gets_it(claude_cli: str, tmp_path: Path) -> None:
    """A stream of prompts: one session; each message is gated; a denied one never reaches the model and ends the
    run with StopRun."""
    registry = HookRegistry()
    seen: list[str] = []
    registry.on_session_start(lambda ctx: seen.append(f"start {ctx.goal}"))
    registry.on_session_end(lambda ctx: seen.append(f"end {ctx.outcome.status}"))

    @registry.user_prompt_submit
    def no_secrets(ctx: UserPromptSubmitContext) -> HookResult:
        seen.append(f"prompt {ctx.content}")
        return HookResult.deny("no secrets") if "secret" in ctx.content else HookResult.allow()

    async def main() -> Offline:
        async with offline(claude_cli, tmp_path, [ModelTurn(text="hello")]) as run:
            stream = user_messages("hi", "the secret is 42", "bye")
            with pytest.raises(StopRun, match="no secrets"):
                async for _ in HookregHooks(registry).query(prompt=stream, options=run.options):
                    pass
            return run

    run = asyncio.run(main())
    assert seen == ["start hi", "prompt hi", "prompt the secret is 42", "end stopped"]
    sent = json.dumps([request["messages"] for request in run.api.log.agent_requests])
    assert "hi" in sent
    assert "secret" not in sent


def test_an_empty_prompt_stream_starts_no_session() -> None:
    """A stream that sends nothing starts no session, so none ends (the SDK's own outcome reaches the caller)."""
    registry = HookRegistry()
    seen: list[object] = []
    registry.on_session_start(seen.append)
    registry.on_session_end(seen.append)

    async def consume() -> None:
        options = ClaudeAgentOptions(cli_path="/nonexistent/claude")
        async for _ in HookregHooks(registry).query(prompt=user_messages(), options=options):
            pass

    with pytest.raises(Exception, match="nonexistent"):
        asyncio.run(consume())
    assert seen == []
