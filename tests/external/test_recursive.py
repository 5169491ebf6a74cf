"""Recursive ``hooks.json`` configs run as real processes, on the sync and the async surface."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hookreg import (
    HookPoint,
    HookRegistry,
    PostToolCallContext,
    PostToolCallFailureContext,
    StopRun,
    UserPromptSubmitContext,
)
from hookreg.external import load_hooks_config

Kit = Any  # the `kit` fixture (tests/external/conftest.py)
Surface = Any  # the `surface` fixture


def _wait_for(condition: Any, what: str) -> None:
    """Poll `condition` for a background hook's effect, failing after a generous bound."""
    for _ in range(200):
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"{what} never happened")


def test_event_keys_are_case_insensitive_and_stdin_is_camel_case(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """A "pretoolcall" key loads; the hook reads event, toolName, args, mode and depth."""
    seen = tmp_path / "seen.json"
    dump = kit.python(f"open({str(seen)!r}, 'w').write(sys.stdin.read())")
    registry = HookRegistry()
    load_hooks_config(registry, {"pretoolcall": [{"command": dump}]})
    surface.resolve(registry, kit.call(command="git status"))
    data = json.loads(seen.read_text())
    assert data == {
        "event": "PreToolCall",
        "mode": "default",
        "depth": 0,
        "toolName": "Bash",
        "args": {"command": "git status"},
    }


@pytest.mark.parametrize(
    ("answer", "allowed", "reason"),
    [
        ({"action": "continue"}, True, ""),
        ({"action": "skip", "message": "not now"}, False, "not now"),
        ({"action": "error", "message": "broken"}, False, "broken"),
        ({"permissionDecision": "deny", "message": "no"}, False, "no"),
        ({"permissionDecision": "allow"}, True, ""),
        ({"permissionDecision": "passthrough"}, True, ""),
    ],
)
def test_actions_and_permission_decisions(
    kit: Kit, surface: Surface, answer: dict[str, str], allowed: bool, reason: str
) -> None:
    """Recursive's JSON answers map onto pass, allow and deny with the message as the reason."""
    registry = HookRegistry()
    load_hooks_config(registry, {"PreToolCall": [{"command": kit.answering(answer)}]})
    result = surface.resolve(registry, kit.call()).result
    assert (result.allowed, result.reason) == (allowed, reason)


def test_any_nonzero_exit_is_a_failure_and_fail_mode_open_lets_it_pass(kit: Kit, surface: Surface) -> None:
    """Exit 2 is no block in Recursive: a failure, closed by default, open with fail_mode "open"."""
    blocking = kit.shell("echo 'reason?' >&2; exit 2")
    registry = HookRegistry()
    load_hooks_config(registry, {"PreToolCall": [{"command": blocking}]})
    result = surface.resolve(registry, kit.call()).result
    assert (result.allowed, result.reason) == (False, "hook PreToolCall[0] exited with status 2; the action was denied")
    opened = HookRegistry()
    load_hooks_config(opened, {"PreToolCall": [{"command": blocking, "fail_mode": "open"}]})
    assert surface.resolve(opened, kit.call()).result.allowed
    closed = HookRegistry()
    load_hooks_config(closed, {"PreToolCall": [{"command": blocking, "fail_mode": "closed"}]}, fail_closed=False)
    assert not surface.resolve(closed, kit.call()).result.allowed


def test_a_hanging_hook_is_killed_at_its_timeout(kit: Kit) -> None:
    """A Recursive entry's own timeout bounds it (the process is killed) and the gate fails closed."""
    registry = HookRegistry()
    load_hooks_config(registry, {"PreToolCall": [{"command": kit.shell("sleep 30"), "timeout": 0.3}]})
    assert "timed out" in registry.resolve_tool_call(kit.call()).result.reason


def test_commands_are_split_without_a_shell(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """Shell syntax in a Recursive command is passed as words, never interpreted."""
    seen = tmp_path / "argv.json"
    dump = kit.python(f"open({str(seen)!r}, 'w').write(json.dumps(sys.argv[1:]))")
    registry = HookRegistry()
    load_hooks_config(registry, {"PreToolCall": [{"command": f"{dump} 'two words' $HOME ; echo"}]})
    surface.resolve(registry, kit.call())
    assert json.loads(seen.read_text()) == ["two words", "$HOME", ";", "echo"]


@pytest.mark.parametrize(
    ("matcher", "args", "matches"),
    [
        ("Bash", {"command": "rm x"}, True),
        ("Bash(git *)", {"command": "git push"}, True),
        ("Bash(git *)", {"command": "rm -rf ."}, False),
        ("Bash(git status)", {"command": "git status"}, True),
        ("Bash(git status)", {"command": "git status -s"}, False),
        ("Bash(src/*)", {"timeout": 3, "path": "src/a.py"}, True),
        ("Bash(src/*)", {"flag": 1, "target": "src/a.py"}, True),
        ("Bash(git *)", {"command": 3, "other": "git push"}, False),
        ("Write(git *)", {"command": "git push"}, False),
    ],
)
def test_recursive_matchers(kit: Kit, surface: Surface, matcher: str, args: dict[str, object], matches: bool) -> None:
    """ "Tool" is exact; "Tool(prefix *)" also reads the first of command/path/goal/input, else the first string."""
    registry = HookRegistry()
    load_hooks_config(registry, {"PreToolCall": [{"matcher": matcher, "command": kit.shell("exit 1")}]})
    assert surface.resolve(registry, kit.call(**args)).result.allowed is not matches


def test_post_tool_call_fires_for_successes_and_failures(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """One PostToolCall entry runs at post_tool_call and post_tool_call_failure, the failure with its error."""
    seen = tmp_path / "seen.jsonl"
    dump = kit.python(f"open({str(seen)!r}, 'a').write(sys.stdin.read() + '\\n')")
    registry = HookRegistry()
    load_hooks_config(registry, {"PostToolCall": [{"command": dump}]})
    base: dict[str, Any] = {"tool_name": "Bash", "args": {"command": "ls"}, "call_id": "c1"}
    ok = PostToolCallContext(**base, result="ok", raw_result="ok", duration_ms=1.0, metadata={})
    surface.notify(registry, HookPoint.POST_TOOL_CALL, ok)
    failed = PostToolCallFailureContext(**base, error=TimeoutError(), duration_ms=1.0)
    surface.notify(registry, HookPoint.POST_TOOL_CALL_FAILURE, failed)
    lines = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [(line["event"], line.get("error")) for line in lines] == [
        ("PostToolCall", None),
        ("PostToolCall", "TimeoutError"),
    ]


def test_once_runs_once_per_loaded_config(kit: Kit, surface: Surface) -> None:
    """A `once` entry runs on the first matching call only; loading the config again starts afresh."""
    config = {"PreToolCall": [{"command": kit.answering({}, name="once"), "once": True}]}
    registry = HookRegistry()
    load_hooks_config(registry, config)
    for call_id in ("c1", "c2", "c3"):
        surface.resolve(registry, kit.call(call_id=call_id))
    assert kit.invocations() == ["once"]
    again = HookRegistry()
    load_hooks_config(again, config)
    surface.resolve(again, kit.call())
    assert kit.invocations() == ["once", "once"]


def test_async_entries_fire_and_forget(kit: Kit, surface: Surface, tmp_path: Path) -> None:
    """An `async` entry's deny and failure are ignored; it still runs to its end in the background."""
    release = tmp_path / "release"
    background = kit.python(
        f"import time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.01)\n"
        "open(LOG, 'a').write('background\\n')\nprint(json.dumps({'permissionDecision': 'deny'}))\nsys.exit(1)"
    )
    registry = HookRegistry()
    load_hooks_config(registry, {"PreToolCall": [{"command": background, "async": True}]})
    assert surface.resolve(registry, kit.call()).result.allowed  # returned while the hook still waits
    assert kit.invocations() == []
    release.write_text("go")
    _wait_for(lambda: kit.invocations() == ["background"], "the background hook's run")


def test_async_rewake_exit_2_stops_the_run(kit: Kit, surface: Surface) -> None:
    """An async_rewake entry exiting 2 makes the config's next dispatch raise StopRun."""
    registry = HookRegistry()
    config = {
        "UserPromptSubmit": [{"command": kit.shell("exit 2"), "async_rewake": True}],
        "PreToolCall": [{"command": kit.shell("exit 0")}],
    }
    load_hooks_config(registry, config)
    prompt = UserPromptSubmitContext(content="go")
    assert surface.decide(registry, HookPoint.USER_PROMPT_SUBMIT, prompt).allowed
    stopped: list[StopRun] = []

    def stops() -> bool:
        try:
            surface.resolve(registry, kit.call())
        except StopRun as stop:
            stopped.append(stop)
        return bool(stopped)

    _wait_for(stops, "the re-wake stop")
    assert stopped[0].reason == "hook UserPromptSubmit[0] asked to stop the run"
    assert surface.resolve(registry, kit.call()).result.allowed  # one stop per re-wake
