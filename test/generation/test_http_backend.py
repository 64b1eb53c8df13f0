"""Module III through the real OpenAI-compatible client and a chat-completions server.

The server on loopback speaks the chat-completions protocol; it reads each prompt back
(`read_messages`) and answers with the offline planner. So the run proves that the prompts
carry every input the agents need, and that the pipeline works over HTTP with schema
validation on the client side, without a language model on this machine.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mango.generation.engine import load_function_library
from mango.generation.models import (
    AssessorReport,
    AtomicLibraryAnswer,
    AtomicOracle,
    AtomicOracleLibrary,
    Feedback,
    HackerReport,
    JudgeVerdict,
    OracleCandidate,
)
from mango.generation.offline.planner import OfflinePlanner
from mango.generation.pipeline import GenerationConfig, make_pipeline
from mango.generation.prompts import read_messages
from mango.llm.backend import AgentCall
from mango.llm.registry import make_backend

SCHEMAS = {
    "module1.generate": AtomicLibraryAnswer, "module1.judge": JudgeVerdict,
    "module1.interpret": Feedback, "module2.generate": AtomicOracle,
    "module2.generate_library": AtomicOracleLibrary, "module2.hack": HackerReport,
    "module2.judge": JudgeVerdict, "module2.interpret": Feedback,
    "module3.generate": OracleCandidate, "module3.judge": JudgeVerdict,
    "module3.interpret": Feedback,
}


class PlannerChatServer:
    def __init__(self) -> None:
        planner = OfflinePlanner()
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                task, ctx = read_messages(body["messages"])
                schema = SCHEMAS.get(task or "", AssessorReport)
                answer = planner.complete(AgentCall("x", task or "", body["messages"], ctx),
                                          schema)
                reply = {"id": "c1", "object": "chat.completion", "created": 0,
                         "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                             "role": "assistant", "content": answer.model_dump_json()}}],
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                   "total_tokens": 2}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    srv = PlannerChatServer()
    yield srv
    srv.close()


def test_whole_run_over_openai_compatible_http(server, libero_tasks, libero_scenes,
                                               monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = make_backend("openai", "planner-over-http", base_url=server.url)
    library, catalog = load_function_library(None)
    pipe = make_pipeline(backend, catalog, GenerationConfig(), library=library)
    try:
        lib = pipe.generate_library(libero_tasks[:4])
        scene = libero_scenes.task_objects[3]
        run = pipe.module3(scene.id, scene, lib.atomic_library, lib.oracle_library)
    finally:
        backend.close()
    assert lib.approved and run.approved
    assert [m.handle_as for _, a in run.oracle.actions() for m in a.monitoring][-1] == (
        "close(white_cabinet_1_bottom_region)")
    # every exchange went over HTTP with a structured-output request
    assert len(server.requests) == len(pipe.transcript.entries)
    assert all(r["model"] == "planner-over-http" for r in server.requests)
    assert any("response_format" in r for r in server.requests)
    assert {e.model for e in pipe.transcript.entries} == {"planner-over-http"}
