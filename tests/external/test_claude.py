"""Claude Code hook configs run as real processes, on the sync and the async surface."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    HookResult,
    NotificationContext,
    OnInteractionContext,
    OnToolErrorContext,
    PreToolCallDecideContext,
    StopContext,
    StopRun,
    ToolCallRequest,
    ToolErrorKind,
    TransformToolResultContext,
    UserPromptSubmitContext,
)
from hookreg.external import load_hooks_config
from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

Kit = Any  # the `kit` fixture (tests/external/conftest.py)
Surface = Any  # the `surface` fixture


def test_exit_2_blocks_with_stderr_as_the_reason(kit: Kit, surface: Surface) -> None:
    """A shell hook exiting 2 denies the call; its stderr is the reason; exit 0 lets the call through."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell(kit.BLOCK_RM), matcher="Bash"))
    denied = surface.resolve(registry, kit.call(command="rm -rf /"))
    assert (denied.result.allowed, denied.result.reason) == (False, "rm -rf is not allowed")
    assert denied.result.decided_by == "claude:PreToolUse"
    assert surface.resolve(registry, kit.call(command="ls")).result.allowed


def test_stdin_carries_the_documented_fields(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """The hook reads the call as Claude Code sends it, and CLAUDE_PROJECT_DIR is the project_dir given."""
    seen = tmp_path / "seen.json"
    dump = kit.python(
        f"data = json.load(sys.stdin)\ndata['project'] = os.environ['CLAUDE_PROJECT_DIR']\n"
        f"open({str(seen)!r}, 'w').write(json.dumps(data))"
    )
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", dump), project_dir=tmp_path)
    ctx = kit.call(command="ls -la", call_id="toolu_1")
    surface.resolve(registry, ctx)
    data = json.loads(seen.read_text())
    assert data["transcript_path"] == ctx.run.scratchpad.get(_transcript_class()).path
    assert data == {
        "session_id": ctx.run.session_id,
        "transcript_path": data["transcript_path"],
        "cwd": os.getcwd(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la"},
        "tool_use_id": "toolu_1",
        "project": str(tmp_path),
    }


def test_ask_reaches_on_interaction(kit: Kit) -> None:
    """permissionDecision "ask" makes the harness ask the on_interaction hook, whose answer decides."""
    registry = HookRegistry()
    ask = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "deploy?"}}
    load_hooks_config(registry, kit.claude("PreToolUse", kit.answering(ask)))
    questions: list[str] = []

    @registry.on_interaction
    def operator(ctx: OnInteractionContext) -> HookResult:
        questions.append(ctx.question)
        return HookResult.deny("not today")

    def deploy(target: str) -> str:
        return f"deployed {target}"

    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ToolCallRequest("c1", "deploy", {"target": "prod"})]),
            ScriptedTurn(text="ok"),
        ]
    )
    result = Harness(model, [deploy], registry).run("ship")
    assert questions == ["deploy?"]
    assert [m.content for m in result.history if m.role == "tool"] == ["Permission denied: not today"]


def test_updated_input_rewrites_the_args_before_the_gate(kit: Kit, surface: Surface) -> None:
    """updatedInput replaces the arguments, and every gate judges the rewritten call."""
    registry = HookRegistry()
    rewrite = {"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls -l"}}}
    load_hooks_config(registry, kit.claude("PreToolUse", kit.answering(rewrite)))
    judged: list[object] = []

    @registry.pre_tool_call_decide
    def record(ctx: PreToolCallDecideContext) -> HookResult:
        judged.append(dict(ctx.args))
        return HookResult.allow()

    resolution = surface.resolve(registry, kit.call(command="ls"))
    assert dict(resolution.args) == {"command": "ls -l"}
    assert (resolution.rewritten, resolution.result.allowed) == (True, True)
    assert judged == [{"command": "ls -l"}]


def test_each_command_runs_once_per_call(kit: Kit, surface: Surface) -> None:
    """Transform and gate share one run of the commands: each logs one line per call."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.answering({}, name="a"), kit.answering({}, name="b")))
    surface.resolve(registry, kit.call(call_id="c1"))
    surface.resolve(registry, kit.call(call_id="c2"))
    assert sorted(kit.invocations()) == ["a", "a", "b", "b"]


def test_a_gate_dispatched_alone_runs_the_commands_itself(kit: Kit, surface: Surface) -> None:
    """Without the transform (a plain decide), the gate runs the commands, once."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell(kit.BLOCK_RM + "echo")))
    result = surface.decide(registry, HookPoint.PRE_TOOL_CALL_DECIDE, kit.call(command="rm -rf x"))
    assert result.reason == "rm -rf is not allowed"


def test_a_hanging_hook_is_killed_at_its_timeout_and_the_gate_denies(
    kit: Kit, surface: Surface, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Past its timeout the process is killed (it never writes its mark) and the call is denied."""
    mark = tmp_path / "finished"
    pid_file = tmp_path / "pid"
    hang = kit.python(
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\nimport time\ntime.sleep(30)\n"
        f"open({str(mark)!r}, 'w').write('late')"
    )
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", hang, timeout=0.5))
    with caplog.at_level(logging.WARNING, logger="hookreg"):
        result = surface.resolve(registry, kit.call()).result
    assert not result.allowed
    assert "hooks.PreToolUse[0].hooks[0] timed out" in result.reason
    assert any("hook_timed_out" in record.getMessage() for record in caplog.records)
    if pid_file.exists():  # else it was killed before it even wrote its pid
        assert _gone(int(pid_file.read_text()))
    assert not mark.exists()


def _gone(pid: int) -> bool:
    """Whether `pid` exits within a few seconds of its kill (a zombie waiting for its reaper counts as exited).

    The kill signal is delivered asynchronously, so this polls rather than checks once.
    """
    for _ in range(100):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    "stdout",
    [
        "{not json",
        "[1, 2]",
        '{"decision": "blocked"}',
        '{"continue": "no"}',
        '{"hookSpecificOutput": {"updatedInput": "rm -rf /"}}',
        '{"hookSpecificOutput": {"permissionDecision": ["allow"]}}',
        '{"hookSpecificOutput": []}',
    ],
)
def test_bad_json_on_stdout_is_a_failure(kit: Kit, surface: Surface, stdout: str) -> None:
    """Stdout that starts like JSON but is not a valid answer fails the entry, and the gate fails closed."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.python(f"print({stdout!r})")))
    result = surface.resolve(registry, kit.call()).result
    assert not result.allowed
    assert result.reason.startswith("hook hooks.PreToolUse[0].hooks[0] ")


def test_plain_text_on_stdout_is_ignored(kit: Kit, surface: Surface) -> None:
    """Text that is not JSON on stdout with exit 0 is an allow, as in Claude Code."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("echo checked the command")))
    assert surface.resolve(registry, kit.call()).result.allowed


def test_a_nonzero_exit_other_than_2_fails_closed_and_is_logged_without_output(
    kit: Kit, surface: Surface, caplog: pytest.LogCaptureFixture
) -> None:
    """Exit 1 denies by default; the log names the entry and never the hook's output or the arguments."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("echo secret-output >&2; exit 1")))
    with caplog.at_level(logging.DEBUG, logger="hookreg"):
        result = surface.resolve(registry, kit.call(command="secret-argument")).result
    assert not result.allowed
    assert result.reason == "hook hooks.PreToolUse[0].hooks[0] exited with status 1; the action was denied"
    text = " ".join(record.getMessage() for record in caplog.records)
    assert "hook_failed" in text
    assert "hooks.PreToolUse[0].hooks[0]" in text
    assert "secret" not in text


def test_deny_beats_ask_beats_allow(kit: Kit, surface: Surface) -> None:
    """Across entries of one event the strongest answer wins, whatever the order."""

    def answer(decision: str) -> Any:
        output = {"permissionDecision": decision, "permissionDecisionReason": decision}
        return kit.answering({"hookSpecificOutput": output})

    for decisions, expected in [(["allow", "ask", "deny"], "deny"), (["ask", "allow"], "ask"), (["allow"], "allow")]:
        registry = HookRegistry()
        load_hooks_config(registry, kit.claude("PreToolUse", *map(answer, decisions)))
        assert surface.resolve(registry, kit.call()).result.decision == expected


def test_deny_from_json_and_from_top_level_block(kit: Kit, surface: Surface) -> None:
    """A JSON deny and a top-level decision "block" both deny with their reason; "defer" is no answer."""
    for answer, reason in [
        ({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "nope"}}, "nope"),
        ({"decision": "block", "reason": "blocked"}, "blocked"),
    ]:
        registry = HookRegistry()
        load_hooks_config(registry, kit.claude("PreToolUse", kit.answering(answer)))
        assert surface.resolve(registry, kit.call()).result.reason == reason
    registry = HookRegistry()
    defer = kit.answering({"hookSpecificOutput": {"permissionDecision": "defer"}})
    load_hooks_config(registry, kit.claude("PreToolUse", defer))
    assert surface.resolve(registry, kit.call()).result.allowed


@pytest.mark.parametrize(
    ("matcher", "runs_for"),
    [
        ("Bash", {"Bash"}),
        ("Write|Edit", {"Write", "Edit"}),
        ("Write, Edit", set()),  # not a list: a regex, as Claude Code reads it
        ("^(Bash|Read)$", {"Bash", "Read"}),
        ("mcp__.*", {"mcp__fs__read"}),
        ("*", {"Bash", "Write", "Edit", "Read", "BashOutput", "mcp__fs__read"}),
    ],
)
def test_matchers(kit: Kit, surface: Surface, matcher: str, runs_for: set[str]) -> None:
    """Plain names match exactly (one or a list), anything else is an unanchored regex, "*" matches all."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("exit 2"), matcher=matcher))
    tools = ["Bash", "Write", "Edit", "Read", "BashOutput", "mcp__fs__read"]
    denied = {tool for tool in tools if not surface.resolve(registry, kit.call(tool=tool)).result.allowed}
    assert denied == runs_for


def test_continue_false_stops_the_run(kit: Kit, surface: Surface) -> None:
    """continue: false raises StopRun with the stopReason, from the transform that ran the command."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.answering({"continue": False, "stopReason": "enough"})))
    with pytest.raises(StopRun) as info:
        surface.resolve(registry, kit.call())
    assert (info.value.reason, info.value.hook) == ("enough", "claude:PreToolUse")


def test_continue_false_stops_the_harness_run(kit: Kit) -> None:
    """In the harness, a stop from a PostToolUse hook ends the run as "stopped"."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PostToolUse", kit.answering({"continue": False, "stopReason": "done"})))

    def Bash(command: str) -> str:  # noqa: N802 -- Claude Code's tool name
        return "ok"

    turn = ScriptedTurn(tool_calls=[ToolCallRequest("c1", "Bash", {"command": "ls"})])
    model = ScriptedModel([turn, ScriptedTurn(text="never")])
    result = Harness(model, [Bash], registry).run("go")
    assert (result.outcome.status, result.outcome.reason) == ("stopped", "done")


@pytest.mark.parametrize(
    ("options", "fail_closed", "allowed"),
    [
        ({}, True, False),
        ({}, False, True),
        ({"onFailure": "allow"}, True, True),
        ({"onFailure": "block"}, False, False),
    ],
)
def test_failure_modes(kit: Kit, surface: Surface, options: dict[str, str], fail_closed: bool, allowed: bool) -> None:
    """fail_closed= sets the default; an entry's onFailure overrides it either way."""
    registry = HookRegistry()
    config = kit.claude("PreToolUse", kit.shell("exit 1"), **options)
    load_hooks_config(registry, config, fail_closed=fail_closed)
    assert surface.resolve(registry, kit.call()).result.allowed is allowed


def test_user_prompt_submit_blocks_a_prompt(kit: Kit, surface: Surface) -> None:
    """UserPromptSubmit gets the prompt on stdin and exit 2 denies it with stderr."""
    registry = HookRegistry()
    check = kit.python(
        "p = json.load(sys.stdin)['prompt']\nif 'password' in p:\n    sys.stderr.write('no secrets')\n    sys.exit(2)"
    )
    load_hooks_config(registry, kit.claude("UserPromptSubmit", check))
    point = HookPoint.USER_PROMPT_SUBMIT
    assert surface.decide(registry, point, UserPromptSubmitContext(content="my password is x")).reason == "no secrets"
    assert surface.decide(registry, point, UserPromptSubmitContext(content="hello")).allowed


def test_stop_block_keeps_the_run_going_and_a_failure_lets_it_stop(kit: Kit, surface: Surface) -> None:
    """At Stop, decision "block" is a deny (feedback); a failing Stop hook lets the run stop."""
    registry = HookRegistry()
    check = kit.python(
        "d = json.load(sys.stdin)\nblock = {'decision': 'block', 'reason': 'run tests'}\n"
        "print(json.dumps({} if d['stop_hook_active'] else block))"
    )
    load_hooks_config(registry, kit.claude("Stop", check))
    first, again = (StopContext(response_text="done", continuation_count=n) for n in (0, 1))
    assert surface.decide(registry, HookPoint.STOP, first).reason == "run tests"
    assert surface.decide(registry, HookPoint.STOP, again).allowed
    failing = HookRegistry()
    load_hooks_config(failing, kit.claude("Stop", kit.shell("exit 1")))
    assert surface.decide(failing, HookPoint.STOP, first).allowed


def _question(tool: str) -> OnInteractionContext:
    return OnInteractionContext(question=f"{tool}?", options=(), tool_name=tool)


def test_permission_request_decision_behavior(kit: Kit, surface: Surface) -> None:
    """PermissionRequest answers the on_interaction question with decision.behavior, matched on the tool."""
    registry = HookRegistry()
    answers = {
        "deploy": {"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "not prod"}}},
        "Read": {"hookSpecificOutput": {"decision": {"behavior": "allow"}}},
    }
    config = {
        "hooks": {
            "PermissionRequest": [
                {"matcher": tool, "hooks": [{"type": "command", "command": kit.answering(answer)}]}
                for tool, answer in answers.items()
            ]
        }
    }
    load_hooks_config(registry, config)
    assert surface.decide(registry, HookPoint.ON_INTERACTION, _question("deploy")).reason == "not prod"
    assert surface.decide(registry, HookPoint.ON_INTERACTION, _question("Read")).allowed


def test_an_undecided_permission_request_is_never_an_approval(kit: Kit, surface: Surface) -> None:
    """A question no entry decides is denied, unless another on_interaction hook answers it."""
    registry = HookRegistry()
    approve_reads = {"hookSpecificOutput": {"decision": {"behavior": "allow"}}}
    load_hooks_config(registry, kit.claude("PermissionRequest", kit.answering(approve_reads), matcher="Read"))
    undecided = surface.decide(registry, HookPoint.ON_INTERACTION, _question("Bash"))
    assert (undecided.allowed, undecided.decided_by) == (False, None)  # nobody answered
    humans: list[str] = []

    @registry.on_interaction(tools="Bash")
    def human(ctx: OnInteractionContext) -> HookResult:
        humans.append(ctx.question)
        return HookResult.allow("approved by a person")

    assert surface.decide(registry, HookPoint.ON_INTERACTION, _question("Bash")).message == "approved by a person"
    assert not surface.decide(registry, HookPoint.ON_INTERACTION, _question("Write")).allowed  # the human won't run
    assert humans == ["Bash?"]


def test_observers_get_their_fields_and_their_failures_are_ignored(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """PostToolUse sends tool_response, PostToolUseFailure the error, Notification the message; failures pass.

    PostToolUse(Failure) run where what the model reads is still text (transform_tool_result, on_tool_error).
    """
    seen = tmp_path / "seen.jsonl"
    dump = kit.python(f"open({str(seen)!r}, 'a').write(sys.stdin.read() + '\\n')")
    config = {
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": command} for command in (dump, kit.shell("exit 1"))]}]
            for event in ("PostToolUse", "PostToolUseFailure", "Notification")
        }
    }
    registry = HookRegistry()
    load_hooks_config(registry, config)
    base: dict[str, Any] = {"tool_name": "Bash", "args": {"command": "ls"}, "call_id": "c1"}
    done = TransformToolResultContext(**base, raw_result="a.txt", presentation="a.txt")
    assert surface.transform(registry, HookPoint.TRANSFORM_TOOL_RESULT, done) == "a.txt"
    error = OSError("disk full")
    failed = OnToolErrorContext(**base, error=error, kind=ToolErrorKind.EXCEPTION, message="disk full")
    assert surface.transform(registry, HookPoint.ON_TOOL_ERROR, failed) == "disk full"
    surface.notify(registry, HookPoint.NOTIFICATION, NotificationContext(message="waiting"))
    lines = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [line["hook_event_name"] for line in lines] == ["PostToolUse", "PostToolUseFailure", "Notification"]
    fields = (lines[0]["tool_response"], lines[1]["error"], lines[2]["message"])
    assert fields == ("a.txt", "OSError: disk full", "waiting")


def test_remove_unloads_everything(kit: Kit) -> None:
    """The returned Inclusion's remove() takes every loaded hook out of the registry."""
    registry = HookRegistry()
    config = kit.claude("PreToolUse", kit.shell("exit 2"))
    config["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": kit.shell("exit 0")}]}]
    inclusion = load_hooks_config(registry, config)
    # PreToolUse's transform and gate, Stop, the hook that delivers added context, the transcript's six recorders
    assert len(registry) == 10
    assert inclusion.remove()
    assert len(registry) == 0
    assert registry.resolve_tool_call(kit.call()).result.allowed
    assert kit.invocations() == []


def test_arguments_that_are_not_json_reach_the_hook_as_text(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """A tool argument JSON cannot encode is sent as its str(), rather than failing the call."""
    seen = tmp_path / "seen.json"
    registry = HookRegistry()
    load_hooks_config(
        registry, kit.claude("PreToolUse", kit.python(f"open({str(seen)!r}, 'w').write(sys.stdin.read())"))
    )
    assert surface.resolve(registry, kit.call(command="ls", size=1 + 2j)).result.allowed
    assert json.loads(seen.read_text())["tool_input"] == {"command": "ls", "size": "(1+2j)"}


def _transcript_class() -> Any:
    """The class the transcript is kept under in the run's scratchpad (hookreg.external's own)."""
    import hookreg.external

    return hookreg.external._Transcript
