"""HTTP hooks against a local server on 127.0.0.1, on the sync and the async surface."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from hookreg import HookRegistry
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
}


class Server:
    """A threaded HTTP server recording each request and answering by path."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, dict(self.headers), body))
                if self.path == "/slow":
                    server.release.wait(10)
                    return
                status, answer = ANSWERS[self.path]
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

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
