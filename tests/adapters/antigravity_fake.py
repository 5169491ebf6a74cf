"""A fake OpenAI-compatible chat-completions server on 127.0.0.1 that plays a script of model answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(name: str, args: Mapping[str, object], call_id: str) -> dict[str, Any]:
    """A scripted answer calling one tool."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(dict(args))}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def text(content: str) -> dict[str, Any]:
    """A scripted answer that is plain text."""
    return {"role": "assistant", "content": content}


class FakeModel:
    """The script, and every request body the model was sent (what it read back)."""

    def __init__(self, script: Sequence[dict[str, Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""
        self.released = threading.Event()  # set: a hanging answer returns (the server is stopping)

    def answer(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The next scripted answer as a chat completion, or ``None`` for an error answer (HTTP 500)."""
        self.requests.append(body)
        message = self.script.pop(0) if self.script else text("done")
        if message.get("hang"):
            self.released.wait()
        if message.get("error") or message.get("hang"):
            return None
        finish = message.pop("finish_reason", None) or ("tool_calls" if message.get("tool_calls") else "stop")
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def tool_messages_by_call(self) -> dict[str, str]:
        """For each tool call id, the text of the tool message the model was sent for it."""
        return {
            str(message.get("tool_call_id")): _content(message)
            for body in self.requests
            for message in body.get("messages", [])
            if message.get("role") == "tool"
        }

    def tool_messages(self) -> list[str]:
        """The text of every tool message the model was sent, in order, once each."""
        seen: list[str] = []
        for body in self.requests:
            for message in body.get("messages", []):
                if message.get("role") == "tool":
                    shown = _content(message)
                    if shown not in seen:
                        seen.append(shown)
        return seen


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def _sse(payload: dict[str, Any]) -> bytes:
    choice = payload["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    chunk = {**payload, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    done = {
        **payload,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
    }
    body = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(done)}\n\ndata: [DONE]\n\n"
    return body.encode()


@contextmanager
def serve(model: FakeModel) -> Iterator[FakeModel]:
    """Serve `model` on a free loopback port for the duration of the block."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._send(200, b'{"object": "list", "data": [{"id": "fake", "object": "model"}]}', "application/json")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("chat/completions"):
                self._send(404, b"{}", "application/json")
                return
            payload = model.answer(body)
            if payload is None:
                self._send(
                    500, b'{"error": {"message": "the model is down", "type": "server_error"}}', "application/json"
                )
            elif body.get("stream"):
                self._send(200, _sse(payload), "text/event-stream")
            else:
                self._send(200, json.dumps(payload).encode(), "application/json")

        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    model.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield model
    finally:
        model.released.set()
        server.shutdown()
        server.server_close()
        thread.join()
