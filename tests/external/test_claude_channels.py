"""What a loaded Claude Code config shows the model, what each hook is sent, and the entry options Claude Code reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from hookreg import (
    HookPoint,
    HookRegistry,
    HookValueError,
    OnSessionEndContext,
    OnSessionStartContext,
    RunContext,
    RunOutcome,
    ToolCallRequest,
    TransformToolResultContext,
)
from hookreg.external import load_hooks_config
from hookreg.harness import Harness, ScriptedModel, ScriptedTurn

Kit = Any  # the `kit` fixture (tests/external/conftest.py)
Surface = Any  # the `surface` fixture


def _bash_run(registry: HookRegistry, *commands: str, result: object = "ok") -> tuple[ScriptedModel, Any]:
    """A harness run whose model calls Bash once per command, then answers "done"."""

    def Bash(command: str) -> object:  # noqa: N802 -- Claude Code's tool name
        return result

    turns = [
        ScriptedTurn(tool_calls=[ToolCallRequest(f"c{i}", "Bash", {"command": c})]) for i, c in enumerate(commands)
    ]
    model = ScriptedModel([*turns, ScriptedTurn(text="done")])
    return model, Harness(model, [Bash], registry).run("go")


def _tool_texts(run: Any) -> list[str]:
    return [m.content for m in run.history if m.role == "tool"]


# --- what reaches the model (item 11) ---


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_plain_stdout_of_session_start_and_prompt_submit_is_context_for_the_model(kit: Kit, event: str) -> None:
    """Claude Code puts their plain stdout in the model's context: it reaches the next model call once."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude(event, kit.shell("echo 'the repo uses uv'")))
    model, _run = _bash_run(registry, "ls")
    first, second = model.requests[0].system, model.requests[1].system
    assert [text for text in first if "uv" in text] == [f"{event} hook additional context: the repo uses uv"]
    assert not [text for text in second if "uv" in text]


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"])
def test_additional_context_reaches_the_next_model_call(kit: Kit, event: str) -> None:
    """hookSpecificOutput.additionalContext from these four events becomes context for the next model call."""
    registry = HookRegistry()
    answer = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": "remember the tests"}}
    load_hooks_config(registry, kit.claude(event, kit.answering(answer)))
    model, _run = _bash_run(registry, "ls")
    seen = [i for i, request in enumerate(model.requests) if any("remember the tests" in t for t in request.system)]
    assert seen == ([0] if event in {"SessionStart", "UserPromptSubmit"} else [1])


@pytest.mark.parametrize(
    "command",
    [
        "echo 'line 3: unused import' >&2; exit 2",
        """echo '{"decision": "block", "reason": "line 3: unused import"}'""",
    ],
)
def test_post_tool_use_block_is_shown_to_the_model_with_the_result(kit: Kit, command: str) -> None:
    """A linter's findings after a write (block + reason, or exit 2's stderr) are appended to the tool result."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PostToolUse", kit.shell(command)))
    _model, run = _bash_run(registry, "ls")
    assert _tool_texts(run) == ["ok\n\nPostToolUse:Bash hook blocking error: line 3: unused import"]


def test_post_tool_use_commands_run_once_per_call(kit: Kit) -> None:
    """PostToolUse runs where the result is still text, and not again at post_tool_call."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PostToolUse", kit.answering({}, name="post")))
    _bash_run(registry, "ls")
    assert kit.invocations() == ["post"]


def test_a_reason_the_model_reads_is_cut_at_8_kib_with_a_note(kit: Kit, surface: Surface) -> None:
    """A long stderr of an exit-2 hook does not become one huge tool message (past 1 MiB it is a failure)."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.python("sys.stderr.write('x' * 500_000); sys.exit(2)")))
    reason = surface.resolve(registry, kit.call()).result.reason
    assert reason.startswith("x" * 8192)
    assert reason.endswith("[cut by hookreg: 491808 more characters]")


@pytest.mark.parametrize(
    "stdout",
    ["[" * 100_000 + "]" * 100_000, '{"n": ' + "9" * 5000 + "}", "{" * 100_000],
    ids=["nested-list", "5000-digits", "nested-object"],
)
def test_every_way_of_reading_an_answer_going_wrong_is_that_entrys_failure(
    kit: Kit, surface: Surface, stdout: str, tmp_path: Path
) -> None:
    """Nesting past the stack or a number past the digit limit denies through the failure policy, never raises."""
    out = tmp_path / "out.txt"
    out.write_text(stdout)
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", f"cat {out}"))
    assert not surface.resolve(registry, kit.call()).result.allowed
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", f"cat {out}", onFailure="allow"))
    assert surface.resolve(registry, kit.call()).result.allowed  # its onFailure applies


# --- what a hook is sent (item 14) ---


def test_tool_response_is_the_tools_object(kit: Kit, tmp_path: Path) -> None:
    """A tool returning a mapping is sent as a JSON object: hooks read tool_response.filePath."""
    seen = tmp_path / "seen.json"
    registry = HookRegistry()
    load_hooks_config(
        registry, kit.claude("PostToolUse", kit.python(f"open({str(seen)!r}, 'w').write(sys.stdin.read())"))
    )
    _bash_run(registry, "ls", result={"filePath": "/tmp/a.py", "success": True})
    assert json.loads(seen.read_text())["tool_response"] == {"filePath": "/tmp/a.py", "success": True}


def test_permission_mode_source_and_reason_come_from_the_config_and_the_run(
    kit: Kit, tmp_path: Path, surface: Surface
) -> None:
    """permission_mode is the config's defaultMode; SessionStart's source says resume; SessionEnd's the outcome."""
    seen = tmp_path / "seen.jsonl"
    dump = kit.python(f"open({str(seen)!r}, 'a').write(sys.stdin.read() + '\\n')")
    config = {
        "permissions": {"defaultMode": "acceptEdits"},
        "hooks": {
            event: [{"hooks": [{"type": "command", "command": dump}]}] for event in ("SessionStart", "SessionEnd")
        },
    }
    registry = HookRegistry()
    load_hooks_config(registry, config)
    run = RunContext(session_id="s1")
    for _ in range(2):
        surface.notify(registry, HookPoint.ON_SESSION_START, OnSessionStartContext(goal="go", run=run))
    outcome = RunOutcome(status="stopped", reason="budget", turns=1)
    surface.notify(registry, HookPoint.ON_SESSION_END, OnSessionEndContext(outcome=outcome, run=run))
    lines = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [line.get("source", line.get("reason")) for line in lines] == ["startup", "resume", "stopped"]
    assert all("permission_mode" not in line for line in lines)  # Claude Code sends none with these two events
    registry = HookRegistry()
    load_hooks_config(registry, {**kit.claude("PreToolUse", dump), "permissions": {"defaultMode": "acceptEdits"}})
    surface.resolve(registry, kit.call())
    assert json.loads(seen.read_text().splitlines()[-1])["permission_mode"] == "acceptEdits"


def test_tool_names_map_the_hosts_tools_onto_claude_codes(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """With tool_names={"Bash": "shell"}, a "Bash" matcher gates the host's shell tool, and hooks read "Bash"."""
    seen = tmp_path / "seen.json"
    registry = HookRegistry()
    record = kit.python(f"open({str(seen)!r}, 'w').write(sys.stdin.read()); sys.exit(2)")
    load_hooks_config(registry, kit.claude("PreToolUse", record, matcher="Bash"), tool_names={"Bash": "shell"})
    assert not surface.resolve(registry, kit.call(tool="shell")).result.allowed
    assert json.loads(seen.read_text())["tool_name"] == "Bash"
    with pytest.raises(TypeError, match="tool_names"):
        load_hooks_config(registry, kit.claude("PreToolUse", record), tool_names=["Bash"])  # type: ignore[arg-type]


# --- entry options (items 5, 12, 13) ---


def test_if_filters_the_calls_a_hook_runs_for(kit: Kit, surface: Surface) -> None:
    """ "if": "Bash(git commit:*)" runs the hook for git commit only: an ls is not denied by it."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("exit 2"), **{"if": "Bash(git commit:*)"}))
    assert surface.resolve(registry, kit.call(command="ls")).result.allowed
    assert not surface.resolve(registry, kit.call(command="git commit -m x")).result.allowed
    assert not surface.resolve(registry, kit.call(command="FOO=1 git  commit -m x")).result.allowed  # as a deny rule
    with pytest.raises(HookValueError, match=r"hooks\.PreToolUse\[0\]\.hooks\[0\]\.if"):
        load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("exit 2"), **{"if": "Bash(unclosed"}))


def test_a_comma_matcher_is_a_regex_as_in_claude_code(kit: Kit, surface: Surface) -> None:
    """Read,Grep is not a list: Claude Code reads it as a regex, which matches neither tool."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("exit 2"), matcher="Read,Grep"))
    assert surface.resolve(registry, kit.call(tool="Read")).result.allowed
    assert not surface.resolve(registry, kit.call(tool="Read,Grep")).result.allowed


def test_identical_commands_of_one_event_run_once(kit: Kit, surface: Surface) -> None:
    """The same command in two matching groups runs once per call, as in Claude Code."""
    registry = HookRegistry()
    command = kit.answering({}, name="once")
    groups = [{"matcher": m, "hooks": [{"type": "command", "command": command}]} for m in ("Bash", "*")]
    load_hooks_config(registry, {"hooks": {"PreToolUse": groups}})
    surface.resolve(registry, kit.call())
    assert kit.invocations() == ["once"]


def test_matching_commands_run_concurrently_on_the_sync_surface_too(kit: Kit, tmp_path: Path) -> None:
    """Two hooks that each wait for the other's mark finish: they run at the same time."""
    marks = [tmp_path / "a", tmp_path / "b"]
    wait = (
        "import pathlib, time\n{mine}.touch()\n"
        "for _ in range(200):\n    if {theirs}.exists(): break\n    time.sleep(0.05)\nelse: sys.exit(2)"
    )
    commands = [
        kit.python(wait.format(mine=f"pathlib.Path({str(a)!r})", theirs=f"pathlib.Path({str(b)!r})"))
        for a, b in (marks, marks[::-1])
    ]
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", *commands))
    assert registry.resolve_tool_call(kit.call()).result.allowed


def test_async_hooks_never_wait_and_never_decide(kit: Kit, surface: Surface) -> None:
    """ "async": true runs in the background: its exit 2 denies nothing."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", kit.shell("exit 2"), **{"async": True}))
    assert surface.resolve(registry, kit.call()).result.allowed


def test_async_rewake_feedback_keeps_the_run_going(kit: Kit, tmp_path: Path) -> None:
    """asyncRewake: an exit 2 from the background wakes the agent: its stderr is feedback the model reads."""
    registry = HookRegistry()
    load_hooks_config(
        registry, kit.claude("PostToolUse", kit.shell("echo 'tests failed' >&2; exit 2"), asyncRewake=True)
    )

    def Bash(command: str) -> str:  # noqa: N802 -- Claude Code's tool name
        return "ok"

    def finish(request: Any) -> ScriptedTurn:
        import time

        time.sleep(0.5)  # the background hook answers meanwhile
        return ScriptedTurn(text="done")

    model = ScriptedModel(
        [
            ScriptedTurn(tool_calls=[ToolCallRequest("c1", "Bash", {"command": "ls"})]),
            finish,
            ScriptedTurn(text="fixed"),
        ]
    )
    Harness(model, [Bash], registry).run("go")
    assert len(model.requests) == 3  # the run was about to stop: the feedback made it continue
    last = model.requests[-1]
    told = [text for text in (*last.system, *(m.content for m in last.messages)) if "tests failed" in text]
    assert told == ["PostToolUse hook feedback: tests failed"]


def test_shell_bash_runs_bash_and_bash_syntax_without_it_is_reported(kit: Kit, surface: Surface) -> None:
    """[[ ]] under "shell": "bash" works; without it the config warns at load (refused under strict=True)."""
    guard = 'if [[ "$(cat)" == *rm* ]]; then echo "no rm" >&2; exit 2; fi'
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", guard, shell="bash"))
    assert surface.resolve(registry, kit.call(command="rm -rf x")).result.reason == "no rm"
    with capture_logs() as logs:
        load_hooks_config(HookRegistry(), kit.claude("PreToolUse", guard))
    assert [(e["event"], e["entry"]) for e in logs if e["event"] == "config_entry_shell"] == [
        ("config_entry_shell", "hooks.PreToolUse[0].hooks[0]")
    ]
    with pytest.raises(HookValueError, match=r"hooks\.PreToolUse\[0\]\.hooks\[0\].*bash-only"):
        load_hooks_config(HookRegistry(), kit.claude("PreToolUse", guard), strict=True)
    with pytest.raises(HookValueError, match=r"\.shell: it must be one of"):
        load_hooks_config(HookRegistry(), kit.claude("PreToolUse", guard, shell="zsh"))


def test_exec_form_runs_the_executable_with_its_args_and_no_shell(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """ "args" makes the command an executable: a `;` in an argument is a plain string, never a shell's."""
    script = tmp_path / "argv.py"
    script.write_text("import sys, json\nprint(json.dumps({'reason': ' '.join(sys.argv[1:]), 'decision': 'block'}))")
    registry = HookRegistry()
    config = kit.claude("PreToolUse", sys.executable, args=[str(script), "a; exit 0", "${CLAUDE_PROJECT_DIR}"])
    load_hooks_config(registry, config, project_dir=tmp_path)
    assert surface.resolve(registry, kit.call()).result.reason == f"a; exit 0 {tmp_path}"
    with pytest.raises(HookValueError, match=r"\.args: it must be a list of strings"):
        load_hooks_config(registry, kit.claude("PreToolUse", sys.executable, args="x"))


def test_plugin_hooks_get_claude_plugin_root(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """A plugin's hooks/hooks.json runs with CLAUDE_PLUGIN_ROOT; outside a plugin such a command is skipped."""
    plugin = tmp_path / "guard-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "guard"}')
    (plugin / "hooks").mkdir()
    (plugin / "hooks" / "check.py").write_text("import sys\nsys.stderr.write('plugin says no')\nsys.exit(2)")
    command = f"{sys.executable} ${{CLAUDE_PLUGIN_ROOT}}/hooks/check.py"
    hooks_json = plugin / "hooks" / "hooks.json"
    hooks_json.write_text(json.dumps(kit.claude("PreToolUse", command)))
    registry = HookRegistry()
    load_hooks_config(registry, hooks_json)
    assert surface.resolve(registry, kit.call()).result.reason == "plugin says no"
    with capture_logs() as logs:
        inclusion = load_hooks_config(HookRegistry(), kit.claude("PreToolUse", command))
    assert [e["event"] for e in logs] == ["config_entry_skipped"]
    assert len(inclusion.registry) == 0
    explicit = HookRegistry()
    load_hooks_config(explicit, kit.claude("PreToolUse", command), plugin_root=plugin)
    assert surface.resolve(explicit, kit.call()).result.reason == "plugin says no"


def test_output_limit_is_checked_when_loading(kit: Kit) -> None:
    """output_limit must be a positive number of bytes."""
    for bad in (0, -1, True, 1.5):
        with pytest.raises(HookValueError, match="output_limit"):
            load_hooks_config(HookRegistry(), kit.claude("PreToolUse", "exit 0"), output_limit=bad)  # type: ignore[arg-type]


def test_transform_tool_result_without_block_leaves_the_result(kit: Kit) -> None:
    """A PostToolUse hook that allows changes nothing the model reads."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PostToolUse", kit.shell("exit 0")))
    ctx = TransformToolResultContext(tool_name="Bash", args={}, call_id="c1", raw_result="ok", presentation="ok")
    assert registry.transform(HookPoint.TRANSFORM_TOOL_RESULT, ctx) == "ok"


# --- the transcript (item 10) ---

# A stop loop in the style of the popular ones: read the transcript, keep going until the last answer says DONE.
STOP_LOOP = """
data = json.load(sys.stdin)
open(LOG, 'a').write(json.dumps(data['transcript_path']) + '\\n')
lines = [json.loads(line) for line in open(data['transcript_path'])]
last = [l for l in lines if l['type'] == 'assistant' and l['message']['content'][0]['type'] == 'text'][-1]
if 'DONE' not in last['message']['content'][0]['text']:
    print(json.dumps({'decision': 'block', 'reason': 'not done yet: keep going'}))
"""


def test_stop_hooks_read_the_transcript_and_keep_the_run_going(kit: Kit) -> None:
    """transcript_path is a JSONL file in Claude Code's line format: a stop loop reads the last answer from it."""
    registry = HookRegistry()
    load_hooks_config(
        registry, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": kit.python(STOP_LOOP)}]}]}}
    )

    def Bash(command: str) -> str:  # noqa: N802 -- Claude Code's tool name
        return "file.txt"

    model = ScriptedModel(
        [
            ScriptedTurn(text="looking", tool_calls=[ToolCallRequest("c1", "Bash", {"command": "ls"})]),
            ScriptedTurn(text="half way"),
            ScriptedTurn(text="DONE"),
        ]
    )
    run = Harness(model, [Bash], registry).run("finish the job")
    assert run.output == "DONE"
    assert len(model.requests) == 3  # the hook blocked the first stop
    paths = {json.loads(line) for line in kit.calls.read_text().splitlines()}
    assert len(paths) == 1
    path = Path(paths.pop())
    assert not path.exists()  # deleted at on_session_end


def test_the_transcript_holds_the_prompt_the_tool_call_its_result_and_the_answers(kit: Kit, tmp_path: Path) -> None:
    """Lines as Claude Code writes them: user prompt, assistant tool_use, user tool_result, assistant text; 0600."""
    copy = tmp_path / "copy.jsonl"
    snapshot = kit.python(
        f"import shutil, stat\ndata = json.load(sys.stdin)\nshutil.copy(data['transcript_path'], {str(copy)!r})\n"
        f"open(LOG, 'a').write(oct(stat.S_IMODE(os.stat(data['transcript_path']).st_mode)) + '\\n')"
    )
    registry = HookRegistry()
    load_hooks_config(registry, {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": snapshot}]}]}})
    _model, _run = _bash_run(registry, "ls")
    lines = [json.loads(line) for line in copy.read_text().splitlines()]
    parts = [(line["type"], line["message"]["content"]) for line in lines]
    assert parts == [
        ("user", "go"),
        ("assistant", [{"type": "tool_use", "id": "c0", "name": "Bash", "input": {"command": "ls"}}]),
        ("user", [{"type": "tool_result", "tool_use_id": "c0", "content": "ok", "is_error": False}]),
        ("assistant", [{"type": "text", "text": "done"}]),
    ]
    assert kit.invocations() == ["0o600"]


def test_no_command_hook_no_transcript() -> None:
    """Only configs with a command hook keep a transcript; an HTTP-only config sends transcript_path null."""
    registry = HookRegistry()
    load_hooks_config(registry, {"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:9/x"}]}]}})
    assert "claude:transcript" not in registry.describe()
