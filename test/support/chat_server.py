"""A small but real HTTP server on loopback that speaks the OpenAI chat-completions protocol
and answers from a script, so the real client's error paths and the orchestrator's VLM
deciders are exercised over the wire (tests check what was asked, answer what they script).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import cv2
import numpy as np


def decode_data_url(url: str) -> np.ndarray:
    """An image content part's `data:image/png|jpeg;base64,...` URL, decoded (BGR); asserts
    the declared format is what the bytes are."""
    m = re.fullmatch(r"data:image/(png|jpeg);base64,(.+)", url)
    assert m, url[:40]
    raw = base64.b64decode(m.group(2), validate=True)
    assert raw[:4] == b"\x89PNG" if m.group(1) == "png" else raw[:2] == b"\xff\xd8"
    img = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR)
    assert img is not None
    return img


def message_parts(message: dict[str, Any]) -> tuple[str, list[tuple[str, np.ndarray]]]:
    """A chat message's text and its (label, decoded image) pairs: each image part follows
    a text part naming it ("NOW:"), as `orchestrator.prompts.user_message` writes them."""
    content = message["content"]
    if isinstance(content, str):
        return content, []
    text = content[0]["text"] if content and content[0]["type"] == "text" else ""
    images, label = [], ""
    for part in content[1:]:
        if part["type"] == "text":
            label = part["text"].rstrip(":")
        elif part["type"] == "image_url":
            images.append((label, decode_data_url(part["image_url"]["url"])))
    return text, images


@dataclass
class Reply:
    """One scripted HTTP answer: a chat completion with `content`, or an error `status`."""

    content: str | None = None
    status: int = 200
    error: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    finish_reason: str = "stop"


@dataclass
class Received:
    body: dict[str, Any]
    headers: dict[str, str]
    t: float


class ChatServer:
    """Answers POST /v1/chat/completions from `script` (in order), then from `default`."""

    Reply = Reply  # tests cannot import conftest (importlib mode); they use this

    def __init__(self) -> None:
        self.script: deque[Reply] = deque()
        self.default: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[Received] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def formats(self) -> list[str | None]:
        """The response_format type of every request received, in order."""
        return [(r.body.get("response_format") or {}).get("type") for r in self.requests]

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self.script:
                return self.script.popleft()
        if self.default is not None:
            return self.default(body)
        return Reply(status=500, error="test server: no reply scripted")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as real servers do (no delayed-ACK stalls)

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list",
                                     "data": [{"id": "test-model", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(raw)
                with server._lock:
                    server.requests.append(Received(body, dict(self.headers), time.monotonic()))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server._next(body)
                    if reply.delay:
                        time.sleep(reply.delay)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                if reply.status != 200:
                    self._send(reply.status, {"error": {"message": reply.error,
                                                        "type": "server_error",
                                                        "code": reply.status}},
                               reply.headers)
                    return
                self._send(200, {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", ""),
                    "choices": [{"index": 0,
                                 "message": {"role": "assistant", "content": reply.content},
                                 "finish_reason": reply.finish_reason}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }, reply.headers)

        return Handler
