"""HTTP hooks against a local server on 127.0.0.1, on the sync and the async surface."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from hookreg import HookRegistry
from hookreg._commands import Failure, Post, Ran, apost, post
from hookreg.external import load_hooks_config

Kit = Any  # the `kit` fixture (tests/external/conftest.py)
Surface = Any  # the `surface` fixture

ANSWERS: dict[str, tuple[int, bytes]] = {
    "/deny": (
        200,
        json.dumps({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "web"}}).encode(),
    ),
    "/skip": (200, json.dumps({"action": "skip", "message": "web says skip"}).encode()),
    "/empty": (200, b""),
    "/text": (200, b"fine"),
    "/broken": (200, b"{oops"),
    "/error": (500, b"{}"),
    "/missing": (404, b""),
    "/huge": (200, b"x" * 1_048_577),
}
MARGIN = 2.0  # generous: a timeout must bound the answer, not to the millisecond


class Server:
    """A threaded HTTP server recording each request and answering by path."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.release = threading.Event()
        self.redirect_to = ""  # where /redirect/<status> sends the client
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, dict(self.headers), body))
                path = self.path.partition("?")[0]
                if path == "/slow":
                    server.release.wait(10)
                    return
                if path.startswith("/trickle"):
                    self.trickle(b"HTTP/1.0 200 OK\r\nX-Padding: 1234\r\n" if path == "/trickle-head" else b"")
                    return
                if path.startswith("/redirect/"):
                    self.send_response(int(path.rpartition("/")[2]))
                    self.send_header("Location", f"{server.redirect_to}/empty")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status, answer = ANSWERS[path]
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def trickle(self, head: bytes) -> None:
                """A 200 whose status line (given `head`) or else body comes one byte every 0.4 s, for 8 s."""
                if not head:
                    self.send_response(200)
                    self.send_header("Content-Length", "20")
                    self.end_headers()
                self.wfile.flush()
                with contextlib.suppress(OSError):  # the client hung up, as it should
                    for byte in (head or b"x" * 20)[:20]:
                        if server.release.wait(0.4):
                            return
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()

            def log_message(self, format: str, *args: object) -> None:
                """Silence the per-request log line."""

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    """A server for one test, shut down after it."""
    running = Server()
    yield running
    running.close()


def _http(url: str, **options: object) -> dict[str, Any]:
    return {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": url, **options}]}]}}


def test_the_hook_posts_the_call_and_its_answer_decides(kit: Kit, surface: Surface, server: Server) -> None:
    """The POST carries the same JSON a command reads; a 2xx JSON answer is read like stdout."""
    registry = HookRegistry()
    load_hooks_config(registry, _http(f"{server.url}/deny"))
    result = surface.resolve(registry, kit.call(command="rm -rf /", call_id="toolu_9")).result
    assert (result.allowed, result.reason) == (False, "web")
    [(path, headers, body)] = server.requests
    assert (path, headers["Content-Type"]) == ("/deny", "application/json")
    assert (body["hook_event_name"], body["tool_name"], body["tool_input"], body["tool_use_id"]) == (
        "PreToolUse",
        "Bash",
        {"command": "rm -rf /"},
        "toolu_9",
    )


@pytest.mark.parametrize(
    ("path", "allowed"), [("/empty", True), ("/text", True), ("/broken", False), ("/error", False)]
)
def test_status_and_body_rules(kit: Kit, surface: Surface, server: Server, path: str, allowed: bool) -> None:
    """2xx empty or plain text passes; a broken JSON body or a non-2xx status is a failure, denied."""
    registry = HookRegistry()
    load_hooks_config(registry, _http(f"{server.url}{path}"))
    assert surface.resolve(registry, kit.call()).result.allowed is allowed


def test_a_non_2xx_status_fails_open_when_asked(kit: Kit, surface: Surface, server: Server) -> None:
    """onFailure "allow" restores Claude Code's non-blocking HTTP errors for that entry."""
    registry = HookRegistry()
    load_hooks_config(registry, _http(f"{server.url}/missing", onFailure="allow"))
    assert surface.resolve(registry, kit.call()).result.allowed


def test_an_unreachable_server_is_a_failure(kit: Kit, surface: Surface, server: Server) -> None:
    """A connection error fails the entry and the gate denies, naming the entry, not the URL."""
    url = server.url
    server.close()
    registry = HookRegistry()
    load_hooks_config(registry, _http(f"{url}/deny"))
    result = surface.resolve(registry, kit.call()).result
    assert result.reason == "hook hooks.PreToolUse[0].hooks[0] could not be reached; the action was denied"


def test_a_slow_server_times_out(kit: Kit, surface: Surface, server: Server) -> None:
    """A server answering after the hook's timeout is a failure: the gate denies."""
    registry = HookRegistry()
    load_hooks_config(registry, _http(f"{server.url}/slow", timeout=0.3))
    result = surface.resolve(registry, kit.call()).result
    assert "timed out" in result.reason


def test_header_variables_expand_only_from_allowed_env_vars(
    kit: Kit, surface: Surface, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$VAR and ${VAR} in headers expand when listed in allowedEnvVars; any other reference becomes empty."""
    monkeypatch.setenv("HOOK_TOKEN", "t0k")
    monkeypatch.setenv("HOOK_SECRET", "s3cret")
    headers = {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "[${HOOK_SECRET}]", "X-Braced": "${HOOK_TOKEN}!"}
    registry = HookRegistry()
    load_hooks_config(registry, _http(f"{server.url}/empty", headers=headers, allowedEnvVars=["HOOK_TOKEN"]))
    surface.resolve(registry, kit.call())
    [(_, sent, _)] = server.requests
    assert (sent["Authorization"], sent["X-Other"], sent["X-Braced"]) == ("Bearer t0k", "[]", "t0k!")


def test_recursive_http_hooks_use_recursive_answers(kit: Kit, surface: Surface, server: Server) -> None:
    """A Recursive http entry posts the camelCase body and reads Recursive's action."""
    registry = HookRegistry()
    load_hooks_config(registry, {"PreToolCall": [{"type": "http", "url": f"{server.url}/skip"}]})
    result = surface.resolve(registry, kit.call())
    assert result.result.reason == "web says skip"
    [(_, _, body)] = server.requests
    assert (body["event"], body["toolName"]) == ("PreToolCall", "Bash")


def answer(surface: Surface, request: Post, body: bytes = b"{}") -> Ran:
    """Post `request` through the surface's function."""
    if surface.name == "sync":
        return post(request, body)
    return asyncio.run(apost(request, body))


@pytest.fixture
def elsewhere() -> Iterator[Server]:
    """A second server, on another port: where a redirect points."""
    running = Server()
    yield running
    running.close()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failure_and_is_never_followed(
    kit: Kit, surface: Surface, server: Server, elsewhere: Server, status: int
) -> None:
    """A 3xx denies; the request and its secret header go to the configured URL only, never where it points."""
    server.redirect_to = elsewhere.url
    registry = HookRegistry()
    url, headers = f"{server.url}/redirect/{status}", {"Authorization": "Bearer $HOOK_TOKEN"}
    load_hooks_config(registry, _http(url, headers=headers, allowedEnvVars=["HOOK_TOKEN"]))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HOOK_TOKEN", "t0k")
        result = surface.resolve(registry, kit.call()).result
    assert (result.allowed, result.reason) == (
        False,
        f"hook hooks.PreToolUse[0].hooks[0] answered HTTP status {status}; redirects are not followed; "
        "the action was denied",
    )
    assert [(path, sent["Authorization"]) for path, sent, _ in server.requests] == [
        (f"/redirect/{status}", "Bearer t0k")
    ]
    assert elsewhere.requests == []


def test_the_request_goes_to_the_urls_host_path_and_query(surface: Surface, server: Server) -> None:
    """The Host header is the URL's, and the path keeps its query."""
    assert answer(surface, Post(f"{server.url}/empty?a=1&b=2", {"X-Extra": "e"}, 10)) == Ran(0, "", "")
    [(path, headers, body)] = server.requests
    assert (path, headers["Host"], headers["X-Extra"], body) == ("/empty?a=1&b=2", server.url[7:], "e", {})


def test_a_body_up_to_the_limit_is_read(surface: Surface, server: Server) -> None:
    """Exactly `limit` bytes of body is an answer."""
    assert answer(surface, Post(f"{server.url}/text", {}, 10, limit=4)).stdout == "fine"


def test_a_body_past_the_limit_is_a_failure(surface: Surface, server: Server) -> None:
    """One byte more than `limit` is a failure, not read on."""
    with pytest.raises(Failure, match=r"^answered more than 3 bytes$") as caught:
        answer(surface, Post(f"{server.url}/text", {}, 10, limit=3))
    assert caught.value.kind == "OutputLimit"


def test_a_huge_body_fails_the_gate(kit: Kit, surface: Surface, server: Server) -> None:
    """End to end: a 2xx body past the default 1 MiB limit denies."""
    registry = HookRegistry()
    load_hooks_config(registry, _http(f"{server.url}/huge"))
    result = surface.resolve(registry, kit.call()).result
    assert result.reason == "hook hooks.PreToolUse[0].hooks[0] answered more than 1048576 bytes; the action was denied"


@pytest.mark.parametrize("path", ["/trickle-head", "/trickle-body"])
def test_a_trickling_server_cannot_stretch_the_timeout(kit: Kit, surface: Surface, server: Server, path: str) -> None:
    """One byte every 0.4 s is within any per-read timeout, but the timeout bounds the whole request: denied."""
    registry = HookRegistry()
    load_hooks_config(registry, _http(f"{server.url}{path}", timeout=1))
    started = time.monotonic()
    result = surface.resolve(registry, kit.call()).result
    assert time.monotonic() - started < 1 + MARGIN
    assert result.reason == "hook hooks.PreToolUse[0].hooks[0] timed out; the action was denied"


def test_https_speaks_tls(surface: Surface, server: Server) -> None:
    """An https URL is spoken to with TLS: a plain HTTP server there cannot be reached."""
    with pytest.raises(Failure, match=r"^could not be reached$") as caught:
        answer(surface, Post(f"https{server.url[4:]}/empty", {}, 10))
    assert caught.value.kind == "SSLError"
    assert server.requests == []


@pytest.mark.parametrize(
    ("url", "kind"), [("http:///empty", "InvalidURL"), ("http://127.0.0.1:99999/", "ValueError")], ids=["host", "port"]
)
def test_a_url_without_a_host_or_with_a_bad_port_is_a_failure(surface: Surface, url: str, kind: str) -> None:
    """What the URL cannot say is the entry's failure, not an exception out of the hook."""
    with pytest.raises(Failure, match=r"^could not be reached$") as caught:
        answer(surface, Post(url, {}, 10))
    assert caught.value.kind == kind
