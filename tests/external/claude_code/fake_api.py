"""A fake Anthropic Messages API on 127.0.0.1: plays a scripted model to the Claude Code CLI and records what it sent.

The CLI streams ``POST /v1/messages`` (server-sent events: message_start,
content_block_start/delta/stop, message_delta, message_stop), probes ``GET /``,
and may make side requests (a title or a summary, with another system prompt
or a small ``max_tokens``). Requests that offer the ``Bash`` tool are the
agent's own turns: the n-th answer of the script is played to the request
that already holds n assistant messages, so a retried request gets the same
answer. Every other request gets a short harmless text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["OVER", "FakeMessagesAPI", "ModelCall", "ModelTurn"]

OVER = "(the script is over)"
"""What the scripted model answers once its script is played (hookreg's loops answer it too)."""


@dataclass(frozen=True)
class ModelCall:
    """One tool_use block the scripted model sends."""

    tool_name: str
    args: Mapping[str, object]
    call_id: str


@dataclass(frozen=True)
class ModelTurn:
    """One scripted answer: optional text, then tool calls (none: the final answer)."""

    text: str = ""
    calls: Sequence[ModelCall] = ()


@dataclass
class _Log:
    """Everything the CLI sent, in order."""

    agent_requests: list[dict[str, Any]] = field(default_factory=list)
    side_requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def _events(turn: ModelTurn, message_id: str, model: str) -> Iterator[tuple[str, dict[str, object]]]:
    """The SSE events of one answer, as the Messages API streams it."""
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    message: dict[str, object] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    yield "message_start", {"type": "message_start", "message": message}
    index = 0
    if turn.text:
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        delta = {"type": "text_delta", "text": turn.text}
        yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        index = 1
    for call in turn.calls:
        block = {"type": "tool_use", "id": call.call_id, "name": call.tool_name, "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(dict(call.args))}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    stop = "tool_use" if turn.calls else "end_turn"
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _message(turn: ModelTurn, message_id: str, model: str) -> dict[str, object]:
    """The same answer as one JSON body, for a request that does not stream."""
    content: list[dict[str, object]] = [{"type": "text", "text": turn.text}] if turn.text else []
    content += [{"type": "tool_use", "id": c.call_id, "name": c.tool_name, "input": dict(c.args)} for c in turn.calls]
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def is_agent_request(body: Mapping[str, Any]) -> bool:
    """Whether a request is one of the agent's own turns: it offers the Bash tool."""
    tools = body.get("tools") or []
    return any(isinstance(tool, Mapping) and tool.get("name") == "Bash" for tool in tools)


class FakeMessagesAPI:
    """The server, as a context manager: ``with FakeMessagesAPI(script) as api: ... api.url``."""

    SIDE_ANSWER = ModelTurn(text="Scripted run")

    def __init__(self, script: Sequence[ModelTurn]) -> None:
        self.script = tuple(script)
        self.log = _Log()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-messages-api", daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give the CLI as ``ANTHROPIC_BASE_URL``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeMessagesAPI:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def answer(self, body: Mapping[str, Any]) -> ModelTurn:
        """The answer due for one request (and log it)."""
        with self._lock:
            if not is_agent_request(body):
                self.log.side_requests.append(dict(body))
                return self.SIDE_ANSWER
            self.log.agent_requests.append(dict(body))
        answered = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if answered < len(self.script):
            return self.script[answered]
        return ModelTurn(text=OVER)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                """Keep the test output quiet."""

            def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_HEAD(self) -> None:
                with api._lock:
                    api.log.paths.append(f"HEAD {self.path}")
                self._send(200, b"")

            def do_GET(self) -> None:
                with api._lock:
                    api.log.paths.append(f"GET {self.path}")
                self._send(200, b"{}")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with api._lock:
                    api.log.paths.append(f"POST {self.path}")
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    self._send(200, b'{"input_tokens": 10}')
                    return
                if not path.endswith("/v1/messages"):
                    error = {"type": "error", "error": {"type": "not_found_error", "message": path}}
                    self._send(404, json.dumps(error).encode())
                    return
                body = json.loads(raw or b"{}")
                turn = api.answer(body)
                model = str(body.get("model", "claude-test"))
                with api._lock:
                    message_id = f"msg_{len(api.log.agent_requests) + len(api.log.side_requests):03d}"
                if not body.get("stream"):
                    self._send(200, json.dumps(_message(turn, message_id, model)).encode())
                    return
                stream = "".join(
                    f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in _events(turn, message_id, model)
                ).encode()
                self._send(200, stream, "text/event-stream")

        return Handler
