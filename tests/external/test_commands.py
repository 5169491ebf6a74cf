"""hookreg._commands: a hook's answer is bounded in time and size, on the sync and the async surface."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from hookreg import HookRegistry
from hookreg._commands import Failure, Launch, Ran, arun, run
from hookreg.external import load_hooks_config

Kit = Any  # the `kit` fixture (tests/external/conftest.py)
Surface = Any  # the `surface` fixture

MIB = 1_048_576
MARGIN = 2.0  # generous: a timeout must bound the answer, not to the millisecond


def answer(surface: Surface, launch: Launch, body: bytes = b"") -> Ran:
    """Run `launch` through the surface's function."""
    if surface.name == "sync":
        return run(launch, body)
    return asyncio.run(arun(launch, body))


def shell(command: str, *, timeout: float = 30, **options: Any) -> Launch:
    return Launch(command, None, timeout, **options)


def python(code: str, *, timeout: float = 30, **options: Any) -> Launch:
    """Exec form: this interpreter running `code`."""
    return Launch(None, (sys.executable, "-c", textwrap.dedent(code)), timeout, **options)


def _dead(pid: int) -> bool:
    """Whether process `pid` has died (gone, or a zombie its new parent has yet to reap), waiting up to 5 s."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True, check=False)
        if state.stdout.strip()[:1] in {"", "Z"}:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    """A file a test's process writes its pid to; that process's group is killed after the test whatever happened."""
    path = tmp_path / "pid"
    yield path
    deadline = time.monotonic() + 5
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    if path.exists():
        pid = int(path.read_text())
        for kill in (os.killpg, os.kill):  # its group if it leads one (a daemon's session), else itself
            with contextlib.suppress(ProcessLookupError):
                kill(pid, signal.SIGKILL)


def daemon(pidfile: Path) -> str:
    """A shell line starting a daemon in a session of its own (out of reach of a process-group kill) that keeps
    the hook's stdout and stderr open for 20 s."""
    return f"setsid sh -c 'echo $$ > {shlex.quote(str(pidfile))}; exec sleep 20' &"


# -- what a command answers --------------------------------------------------------------------------------------


def test_a_command_answers_its_code_stdout_and_stderr(surface: Surface) -> None:
    """The shell command reads the body on stdin; its exit code and both streams come back decoded."""
    ran = answer(surface, shell("cat; echo oops >&2; exit 3"), b'{"a": 1}')
    assert ran == Ran(3, '{"a": 1}', "oops\n")


def test_undecodable_output_is_replaced(surface: Surface) -> None:
    """Bytes that are not UTF-8 become U+FFFD rather than an error."""
    ran = answer(surface, shell(r"printf 'a\377b'"))
    assert ran.stdout == "a\ufffdb"


def test_a_body_larger_than_a_pipe_holds_reaches_the_hook_whole(surface: Surface) -> None:
    """The body is written in pieces as the hook reads them: every byte arrives, none twice."""
    ran = answer(surface, shell("wc -c"), b"x" * MIB)
    assert ran.stdout.strip() == str(MIB)


def test_a_hook_that_does_not_read_its_stdin_still_answers(surface: Surface) -> None:
    """A body larger than a pipe holds, sent to a hook that closes its stdin unread, is no failure."""
    ran = answer(surface, shell("exec 0<&-; echo done"), b"x" * MIB)
    assert ran == Ran(0, "done\n", "")


# -- shell and exec form -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("shell_name", "zero"), [(None, "/bin/sh"), ("bash", "bash")])
def test_a_command_runs_in_the_shell_it_names(surface: Surface, shell_name: str | None, zero: str) -> None:
    """No shell runs `/bin/sh -c command`, as Claude Code does; `shell="bash"` runs `bash -c command`."""
    ran = answer(surface, shell('echo "$0"', shell=shell_name))
    assert ran.stdout == f"{zero}\n"


def test_bash_syntax_works_under_bash_and_fails_under_sh_as_it_does_there(surface: Surface) -> None:
    """`[[ ]]` works under `shell="bash"`; without a shell it answers what `/bin/sh -c` answers (dash: no `[[`)."""
    command = "[[ x == x ]] && echo yes"
    assert answer(surface, shell(command, shell="bash")) == Ran(0, "yes\n", "")
    expected = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=False)
    ran = answer(surface, shell(command))
    assert (ran.code, ran.stdout) == (expected.returncode, expected.stdout)


def test_the_exec_form_runs_the_program_without_a_shell(surface: Surface) -> None:
    """`argv` runs directly: its words reach the program as given, with no shell expansion."""
    ran = answer(surface, Launch(None, ("printf", "%s|", "a b", "$HOME", "*"), 30))
    assert ran == Ran(0, "a b|$HOME|*|", "")


def test_the_environment_adds_to_the_parents(surface: Surface, monkeypatch: pytest.MonkeyPatch) -> None:
    """`env` is added to os.environ, which the hook also sees."""
    monkeypatch.setenv("HOOKREG_PARENT", "p")
    ran = answer(surface, shell('echo "$HOOKREG_PARENT $HOOKREG_ADDED"', env={"HOOKREG_ADDED": "a"}))
    assert ran.stdout == "p a\n"


@pytest.mark.parametrize(
    ("command", "argv", "shell_name", "kind"),
    [
        (None, ("/no/such/program",), None, "FileNotFoundError"),
        ("true", None, "/no/such/shell", "FileNotFoundError"),
        ("echo \0", None, None, "ValueError"),
    ],
    ids=["argv", "shell", "null-byte"],
)
def test_a_program_that_cannot_start_is_a_failure(
    surface: Surface, command: str | None, argv: tuple[str, ...] | None, shell_name: str | None, kind: str
) -> None:
    """A missing executable, a missing shell, or a command no process can be given, is "could not be started"."""
    with pytest.raises(Failure, match=r"^could not be started$") as caught:
        answer(surface, Launch(command, argv, 30, shell=shell_name))
    assert caught.value.kind == kind


@pytest.mark.parametrize(("command", "argv"), [(None, None), ("true", ("true",)), (None, ())])
def test_a_launch_sets_exactly_one_of_command_and_argv(command: str | None, argv: tuple[str, ...] | None) -> None:
    """Neither, both, or an empty argv is refused where the Launch is built."""
    with pytest.raises(ValueError, match=r"^Cannot launch .*: exactly one of command and a non-empty argv"):
        Launch(command, argv, 30)


# -- output is read up to the limit ------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_output_up_to_the_limit_is_read(surface: Surface, stream: str) -> None:
    """Exactly `limit` bytes on a stream is an answer."""
    ran = answer(surface, python(f"import sys; sys.{stream}.write('x' * 1000)", limit=1000))
    assert getattr(ran, stream) == "x" * 1000


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_output_past_the_limit_is_a_failure_and_kills_the_group(surface: Surface, stream: str, pidfile: Path) -> None:
    """One byte more than `limit` fails the hook at once: its process group is killed, not waited for."""
    launch = python(
        f"""
        import os, sys, time
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        sys.{stream}.write("x" * 1001)
        sys.{stream}.flush()
        time.sleep(600)
        """,
        timeout=600,
        limit=1000,
    )
    with pytest.raises(Failure, match=rf"^printed more than 1000 bytes to {stream}$") as caught:
        answer(surface, launch)
    assert caught.value.kind == "OutputLimit"
    assert _dead(int(pidfile.read_text()))


def test_a_huge_stderr_fails_the_gate(kit: Kit, surface: Surface) -> None:
    """End to end: a hook printing 10 MB to stderr is refused at the default limit, and the gate denies."""
    registry = HookRegistry()
    hook = kit.python("sys.stderr.write('e' * 10_000_000)\nsys.exit(2)")
    load_hooks_config(registry, kit.claude("PreToolUse", hook))
    result = surface.resolve(registry, kit.call()).result
    assert result.reason == (
        "hook hooks.PreToolUse[0].hooks[0] printed more than 1048576 bytes to stderr; the action was denied"
    )


# -- a timeout bounds the whole answer ---------------------------------------------------------------------------


def test_a_hook_past_its_timeout_is_killed_with_its_group(surface: Surface, pidfile: Path) -> None:
    """The shell and its children are killed at the timeout."""
    command = f"sh -c 'echo $$ > {shlex.quote(str(pidfile))}; exec sleep 600'; echo late"
    started = time.monotonic()
    with pytest.raises(Failure, match=r"^timed out$") as caught:
        answer(surface, shell(command, timeout=1))
    assert time.monotonic() - started < 1 + MARGIN
    assert caught.value.kind == "TimeoutError"
    assert _dead(int(pidfile.read_text()))


def test_a_daemon_holding_the_pipes_does_not_hold_the_answer(surface: Surface, pidfile: Path) -> None:
    """A hook that exits leaving a daemon (its own session) on its stdout: the timeout still bounds the answer."""
    started = time.monotonic()
    with pytest.raises(Failure, match=r"^timed out$"):
        answer(surface, shell(f"{daemon(pidfile)} echo started", timeout=1))
    assert time.monotonic() - started < 1 + MARGIN


def test_a_hook_that_closes_its_pipes_and_runs_on_times_out(surface: Surface) -> None:
    """Closed stdout and stderr are not an answer while the hook still runs: it is killed at the timeout."""
    started = time.monotonic()
    with pytest.raises(Failure, match=r"^timed out$"):
        answer(surface, shell("exec >&- 2>&- <&-; exec sleep 600", timeout=1))
    assert time.monotonic() - started < 1 + MARGIN


def test_a_daemon_hook_times_out_at_the_gate(kit: Kit, surface: Surface, pidfile: Path) -> None:
    """End to end: a 1-second gate whose hook leaves a daemon behind denies within its timeout."""
    registry = HookRegistry()
    load_hooks_config(registry, kit.claude("PreToolUse", f"{daemon(pidfile)} echo started", timeout=1))
    started = time.monotonic()
    with structlog.testing.capture_logs() as logs:
        result = surface.resolve(registry, kit.call()).result
    assert time.monotonic() - started < 1 + MARGIN
    assert result.reason == "hook hooks.PreToolUse[0].hooks[0] timed out; the action was denied"
    assert [log["hook"] for log in logs if log["event"] == "hook_timed_out"] == ["hooks.PreToolUse[0].hooks[0]"]


def test_the_async_surface_leaves_no_transport_behind(pidfile: Path) -> None:
    """After a timed-out async hook whose daemon holds its pipes, closing the loop warns of nothing."""
    code = f"""
        import asyncio, gc
        from hookreg._commands import Failure, Launch, arun
        try:
            asyncio.run(arun(Launch({daemon(pidfile) + " echo started"!r}, None, 1), b""))
        except Failure as failure:
            print(failure.why)
        gc.collect()
    """
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "timed out\n", "")


def test_a_cancelled_async_hook_is_killed_with_its_group(pidfile: Path) -> None:
    """Cancelling the task running a hook kills its process group, and the cancellation propagates."""

    async def main() -> None:
        task = asyncio.ensure_future(arun(python(_writes_pid_then_sleeps(pidfile), timeout=600), b""))
        while not (pidfile.exists() and pidfile.read_text()):
            await asyncio.sleep(0.02)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert _dead(int(pidfile.read_text()))


def test_an_interrupted_sync_hook_is_killed_with_its_group(pidfile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception while waiting (a KeyboardInterrupt) kills the hook's process group and propagates."""
    import selectors

    real = selectors.DefaultSelector.select

    def interrupted(self: selectors.BaseSelector, timeout: float | None = None) -> Any:
        if pidfile.exists() and pidfile.read_text():
            raise KeyboardInterrupt
        return real(self, min(timeout or 0.05, 0.05))  # type: ignore[arg-type]  # the real method, unbound

    monkeypatch.setattr(selectors.DefaultSelector, "select", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(python(_writes_pid_then_sleeps(pidfile), timeout=600), b"")
    assert _dead(int(pidfile.read_text()))


def _writes_pid_then_sleeps(pidfile: Path) -> str:
    return f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)"
