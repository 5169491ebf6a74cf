"""Running a hook config's commands and HTTP hooks: what they printed, or a `Failure` saying why not."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import http.client
import io
import os
import re
import select
import selectors
import signal
import socket
import ssl
import subprocess
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import IO, Any, Final, cast, final

__all__ = ["Failure", "Launch", "Post", "Ran", "apost", "arun", "expand", "post", "run"]

_ENV_REFERENCE: Final = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_STREAMS: Final = {1: "stdout", 2: "stderr"}
_CHUNK: Final = 65_536


class Failure(Exception):  # noqa: N818 -- internal: never escapes hookreg.external
    """An entry failed: hookreg's description (never the hook's output) and the failure's kind."""

    def __init__(self, why: str, kind: str) -> None:
        super().__init__(why)
        self.why = why
        self.kind = kind


_TIMED_OUT: Final = ("timed out", "TimeoutError")


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
    timeout: float  # bounds the whole answer
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)  # added to os.environ
    shell: str | None = None  # the program running `command` with -c; None: /bin/sh, as Claude Code spawns it
    limit: int = 1_048_576  # bytes read from stdout and from stderr, each; more is a failure

    def __post_init__(self) -> None:
        if (self.command is None) == (not self.argv):
            msg = (
                f"Cannot launch {self!r}: exactly one of command and a non-empty argv must be set. "
                "Give a shell command line or the executable and its arguments."
            )
            raise ValueError(msg)

    @property
    def program(self) -> tuple[str, ...]:
        """What is executed: the shell with ``-c command``, or `argv` itself."""
        if self.command is None:
            return self.argv or ()
        return (self.shell or "/bin/sh", "-c", self.command)


@final
@dataclasses.dataclass(frozen=True, slots=True)
class Post:
    """An HTTP hook's request: the URL and its headers, already expanded."""

    url: str
    headers: Mapping[str, str]
    timeout: float  # one deadline for connecting, sending, and reading the status, headers and body
    limit: int = 1_048_576  # bytes of body read; more is a failure


def _remaining(deadline: float) -> float:
    """Seconds left before `deadline`; none left is a `TimeoutError`."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _too_much(why: str) -> Failure:
    return Failure(why, "OutputLimit")


class _Output:
    """What a command printed so far, each stream capped at the launch's limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.streams = {fd: bytearray() for fd in _STREAMS}

    def add(self, fd: int, data: bytes) -> Failure | None:
        """Keep `data` printed on `fd`; past the limit, the failure that is."""
        stream = self.streams[fd]
        stream += data
        if len(stream) > self.limit:
            return _too_much(f"printed more than {self.limit} bytes to {_STREAMS[fd]}")
        return None

    def ran(self, code: int) -> Ran:
        out, err = (bytes(self.streams[fd]).decode(errors="replace") for fd in _STREAMS)
        return Ran(code, out, err)


def _kill(pid: int) -> None:
    """Kill the hook's whole process group: a shell's children too."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


@contextlib.contextmanager
def _starting() -> Iterator[None]:
    """A hook that cannot be started is that failure."""
    try:
        yield
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the command, its arguments or its environment
        raise Failure("could not be started", type(exc).__name__) from None


def _environment(launch: Launch) -> dict[str, str] | None:
    return {**os.environ, **launch.env} if launch.env else None


def run(launch: Launch, body: bytes) -> Ran:
    """The sync path: ``subprocess``; past its timeout or limit the process group is killed, and we return."""
    with _starting():
        process = subprocess.Popen(
            launch.program,
            bufsize=0,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_environment(launch),
            start_new_session=True,
        )
    deadline = time.monotonic() + launch.timeout
    answered = False
    try:
        output = _exchange(process, body, deadline, _Output(launch.limit))
        process.wait(_remaining(deadline))  # its pipes are closed; it may still run
        answered = True
    except (TimeoutError, subprocess.TimeoutExpired):
        raise Failure(*_TIMED_OUT) from None
    finally:
        if not answered:
            _kill(process.pid)
        # Closing our ends, never reading on: a descendant out of the group (a daemon) may hold the pipes open.
        for pipe in _pipes(process):
            pipe.close()
        process.wait()  # the group leader has exited or was just killed: this reaps it at once
    return output.ran(process.returncode)


def _pipes(process: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
    """The hook's stdin, stdout and stderr: `run` asked for all three as pipes."""
    return cast("tuple[IO[bytes], IO[bytes], IO[bytes]]", (process.stdin, process.stdout, process.stderr))


def _exchange(process: subprocess.Popen[bytes], body: bytes, deadline: float, output: _Output) -> _Output:
    """Write `body` to the hook's stdin while reading its stdout and stderr, until both close."""
    stdin, stdout, stderr = _pipes(process)
    pending = memoryview(body)
    reading = {stdout, stderr}
    with selectors.DefaultSelector() as selector:
        selector.register(stdin, selectors.EVENT_WRITE)
        selector.register(stdout, selectors.EVENT_READ, 1)
        selector.register(stderr, selectors.EVENT_READ, 2)
        while reading:
            for key, _ in selector.select(_remaining(deadline)):
                if key.fileobj is stdin:
                    try:  # a write of at most PIPE_BUF to a writable pipe does not block
                        pending = pending[os.write(key.fd, pending[: select.PIPE_BUF]) :]
                    except BrokenPipeError:  # the hook stopped reading: its answer may still come
                        pending = pending[:0]
                    if not pending:
                        selector.unregister(stdin)
                        stdin.close()
                    continue
                data = os.read(key.fd, _CHUNK)
                if not data:
                    selector.unregister(key.fileobj)
                    reading.discard(key.fileobj)
                elif failure := output.add(key.data, data):
                    raise failure
    return output


class _Collector(asyncio.SubprocessProtocol):
    """The async path's reader: keeps what the hook prints, and says when it has answered or printed too much."""

    def __init__(self, limit: int) -> None:
        self.output = _Output(limit)
        self.failure: Failure | None = None
        self.finished = asyncio.get_running_loop().create_future()  # every pipe closed, the process exited
        self.answered = asyncio.get_running_loop().create_future()  # finished, or printed past the limit

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.failure = self.failure or self.output.add(fd, data)  # past the limit, the rest is dropped
        if self.failure is not None:
            _settle(self.answered)

    def connection_lost(self, exc: Exception | None) -> None:
        _settle(self.answered)
        _settle(self.finished)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def arun(launch: Launch, body: bytes) -> Ran:
    """The async path: an asyncio subprocess; past its timeout or limit (or on cancellation) the group is killed."""
    loop = asyncio.get_running_loop()
    collector = _Collector(launch.limit)
    with _starting():
        transport, _ = await loop.subprocess_exec(
            lambda: collector,
            *launch.program,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_environment(launch),
            start_new_session=True,
        )
    try:
        stdin = cast("asyncio.WriteTransport", transport.get_pipe_transport(0))
        stdin.write(body)
        stdin.close()  # after the body is flushed; a hook that stops reading only drops the rest
        try:
            async with asyncio.timeout(launch.timeout):
                await collector.answered
        except TimeoutError:
            raise Failure(*_TIMED_OUT) from None
        if collector.failure is not None:
            raise collector.failure
        code = transport.get_returncode()
        assert code is not None  # connection_lost comes after the exit
        return collector.output.ran(code)
    finally:
        if not collector.finished.done():
            _kill(transport.get_pid())
        # Closing our ends, never reading on: a descendant out of the group (a daemon) may hold the pipes open.
        transport.close()
        await asyncio.shield(collector.finished)  # at once: the group leader has exited or was just killed


def expand(value: str, allowed: frozenset[str]) -> str:
    """``$VAR`` / ``${VAR}`` from the environment when listed in ``allowedEnvVars``; any other becomes empty."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return os.environ.get(name, "") if name in allowed else ""

    return _ENV_REFERENCE.sub(one, value)


@functools.cache
def _tls() -> ssl.SSLContext:
    """The default context (system CAs, hostname checks), built once: loading the CAs costs."""
    return ssl.create_default_context()


class _DeadlineSocket:
    """A connected socket as `http.client` talks through it: every send and receive ends by one deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(_remaining(self._deadline))
        self._sock.sendall(data)

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))

    def close(self) -> None:
        """Nothing: `post` closes the socket after reading (http.client closes first when the server will)."""


class _DeadlineReader(io.RawIOBase):
    """A socket's reader giving each read only the time left, so a trickling server cannot stretch the deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(_remaining(self._deadline))
        return self._sock.recv_into(buffer)


def _connect(parts: urllib.parse.SplitResult, deadline: float) -> socket.socket:
    """A socket connected to the URL's host (TLS for https) by `deadline`."""
    host, port = parts.hostname, parts.port  # a bad port raises here
    if not host:
        raise http.client.InvalidURL(parts.geturl())
    port = port or (443 if parts.scheme == "https" else 80)
    sock = socket.create_connection((host, port), timeout=_remaining(deadline))
    if parts.scheme == "https":
        sock.settimeout(_remaining(deadline))  # the handshake's bound
        sock = _tls().wrap_socket(sock, server_hostname=host)
    return sock


def post(request: Post, body: bytes) -> Ran:
    """An HTTP hook: POST the JSON to the URL only (a redirect is a failure); a 2xx body is read as stdout."""
    deadline = time.monotonic() + request.timeout
    parts = urllib.parse.urlsplit(request.url)
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    headers = {"Host": parts.netloc.rpartition("@")[2], "Content-Type": "application/json", **request.headers}
    try:
        with contextlib.closing(_connect(parts, deadline)) as sock:
            # http.client only writes the request and parses the answer: it never connects, its socket is given.
            connection = http.client.HTTPConnection(parts.hostname or "")
            connection.sock = _DeadlineSocket(sock, deadline)
            connection.request("POST", target, body, headers)
            response = connection.getresponse()
            if not 200 <= response.status < 300:
                redirect = "; redirects are not followed" if 300 <= response.status < 400 else ""
                raise Failure(f"answered HTTP status {response.status}{redirect}", "HTTPError")
            text = response.read(request.limit + 1)
    except TimeoutError:
        raise Failure(*_TIMED_OUT) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise Failure("could not be reached", type(exc).__name__) from None
    if len(text) > request.limit:
        raise _too_much(f"answered more than {request.limit} bytes")
    return Ran(0, text.decode(errors="replace"), "")


async def apost(request: Post, body: bytes) -> Ran:
    """The async path of `post`: the request runs in a thread, which its own deadline ends."""
    return await asyncio.to_thread(post, request, body)
