"""Running a hook config's commands and HTTP hooks: what they printed, or a `Failure` saying why not."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any, Final, final

__all__ = ["Failure", "Launch", "Post", "Ran", "apost", "arun", "expand", "post", "run"]

_ENV_REFERENCE: Final = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


class Failure(Exception):  # noqa: N818 -- internal: never escapes hookreg.external
    """An entry failed: hookreg's description (never the hook's output) and the failure's kind."""

    def __init__(self, why: str, kind: str) -> None:
        super().__init__(why)
        self.why = why
        self.kind = kind


@final
@dataclasses.dataclass(frozen=True, slots=True)
class Ran:
    """What a command (or an HTTP hook, as code 0) answered."""

    code: int
    stdout: str
    stderr: str


@final
@dataclasses.dataclass(frozen=True, slots=True)
class Launch:
    """A command to run: a shell command line, or an executable and its arguments (no shell)."""

    command: str | None  # through the shell
    argv: tuple[str, ...] | None  # run directly
    timeout: float
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)  # added to os.environ


@final
@dataclasses.dataclass(frozen=True, slots=True)
class Post:
    """An HTTP hook's request: the URL and its headers, already expanded."""

    url: str
    headers: Mapping[str, str]
    timeout: float


def _kill(pid: int) -> None:
    """Kill the hook's whole process group: a shell's children too, so no pipe stays open."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _environment(launch: Launch) -> dict[str, str] | None:
    return {**os.environ, **launch.env} if launch.env else None


def run(launch: Launch, body: bytes) -> Ran:
    """The sync path: ``subprocess``; past its timeout the process group is killed."""
    try:
        process = subprocess.Popen(
            launch.command if launch.command is not None else launch.argv,  # type: ignore[arg-type]  # one is set
            shell=launch.command is not None,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_environment(launch),
            start_new_session=True,
        )
    except OSError as exc:
        raise Failure("could not be started", type(exc).__name__) from None
    with process:
        try:
            out, err = process.communicate(body, timeout=launch.timeout)
        except subprocess.TimeoutExpired:
            _kill(process.pid)
            process.communicate()
            raise Failure("timed out", "TimeoutError") from None
        except BaseException:
            _kill(process.pid)
            process.communicate()
            raise
    return Ran(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


async def arun(launch: Launch, body: bytes) -> Ran:
    """The async path: an asyncio subprocess; past its timeout (or on cancellation) the group is killed."""
    options: dict[str, Any] = {
        "stdin": subprocess.PIPE,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "env": _environment(launch),
        "start_new_session": True,
    }
    try:
        if launch.command is not None:
            process = await asyncio.create_subprocess_shell(launch.command, **options)
        else:
            process = await asyncio.create_subprocess_exec(*launch.argv or (), **options)
    except OSError as exc:
        raise Failure("could not be started", type(exc).__name__) from None
    try:
        out, err = await asyncio.wait_for(process.communicate(body), launch.timeout)
    except TimeoutError:
        _kill(process.pid)
        await asyncio.shield(process.wait())
        raise Failure("timed out", "TimeoutError") from None
    except BaseException:
        _kill(process.pid)
        await asyncio.shield(process.wait())
        raise
    return Ran(process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))


def expand(value: str, allowed: frozenset[str]) -> str:
    """``$VAR`` / ``${VAR}`` from the environment when listed in ``allowedEnvVars``; any other becomes empty."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return os.environ.get(name, "") if name in allowed else ""

    return _ENV_REFERENCE.sub(one, value)


def post(request: Post, body: bytes) -> Ran:
    """An HTTP hook: POST the JSON; a 2xx body is read as a command's stdout."""
    sent = urllib.request.Request(
        request.url, data=body, method="POST", headers={"Content-Type": "application/json", **request.headers}
    )
    try:
        with urllib.request.urlopen(sent, timeout=request.timeout) as response:
            status, text = response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        exc.close()
        raise Failure(f"answered HTTP status {exc.code}", "HTTPError") from None
    except TimeoutError:
        raise Failure("timed out", "TimeoutError") from None
    except (urllib.error.URLError, OSError) as exc:
        raise Failure("could not be reached", type(exc).__name__) from None
    if not 200 <= status < 300:
        raise Failure(f"answered HTTP status {status}", "HTTPError")
    return Ran(0, text, "")


async def apost(request: Post, body: bytes) -> Ran:
    """The async path of `post`: the request runs in a thread, bounded by its timeout."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(post, request, body), request.timeout)
    except TimeoutError:
        raise Failure("timed out", "TimeoutError") from None
