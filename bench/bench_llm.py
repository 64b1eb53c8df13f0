"""LLM backend figures: local llama.cpp start-up and per-call latency, client overhead.

Schemas are unbounded like the pipeline's (bounded string lengths make llama.cpp's grammar
sampling noticeably slower per token).

Runs offline: the local model is the Qwen2.5-Coder-0.5B GGUF from the pinned PyPI parts
(requirements/extra.txt). Prints one table. `--calls N` sets the structured calls per mode.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

from pydantic import BaseModel, Field
from report import headline, print_table

from mango.llm.backend import AgentCall
from mango.llm.local import LocalBackend, LocalServer, resolve_model
from mango.llm.openai_compat import OpenAICompatBackend, OpenAICompatConfig


class Step(BaseModel):
    action: Literal["pick_up", "place", "open", "close", "turn_on", "turn_off"]
    target: str


class Plan(BaseModel):
    steps: list[Step] = Field(min_length=1)


class Report(BaseModel):
    score: int = Field(ge=0, le=10)
    issues: list[str]


INSTRUCTIONS = [
    "Open the top drawer and put the bowl inside it.",
    "Put both the alphabet soup and the tomato sauce in the basket.",
    "Turn on the stove and put the moka pot on it.",
    "Put the black bowl on the plate, then close the drawer.",
]


def plan_call(i: int) -> AgentCall:
    text = INSTRUCTIONS[i % len(INSTRUCTIONS)]
    return AgentCall(
        "generator",
        "bench.plan",
        [
            {"role": "system", "content": "You turn robot instructions into atomic steps."},
            {
                "role": "user",
                "content": f"{text} Objects: drawer_1, bowl_1, plate_1, basket_1, "
                "soup_1, sauce_1, stove_1, moka_pot_1.",
            },
        ],
    )


def report_call(i: int) -> AgentCall:
    text = INSTRUCTIONS[i % len(INSTRUCTIONS)]
    return AgentCall(
        "assessor",
        "bench.assess",
        [
            {
                "role": "user",
                "content": f"Rate 0-10 whether '{text}' is one atomic robot "
                "action; list issues briefly.",
            }
        ],
    )


def time_calls(backend, make_call, schema, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        backend.complete(make_call(i), schema)
        out.append(time.perf_counter() - t0)
    return out


def client_overhead(n: int) -> list[float]:
    """Per-call cost of the client path itself against an instant loopback server."""
    body = json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {
                        "role": "assistant",
                        "content": json.dumps(
                            {"steps": [{"action": "open", "target": "drawer_1"}]}
                        ),
                    },
                }
            ],
        }
    )

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # as real servers do; else 40 ms delayed-ACK stalls

        def log_message(self, *a):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        b = OpenAICompatBackend(
            OpenAICompatConfig(
                base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                model="m",
                api_key_env=None,
            )
        )
        time_calls(b, plan_call, Plan, 3)  # warm-up
        return time_calls(b, plan_call, Plan, n)
    finally:
        httpd.shutdown()
        httpd.server_close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # retries/repairs show up in the table

    rows: list[tuple[str, str, str]] = []
    t0 = time.perf_counter()
    resolved = resolve_model("qwen0.5b", verify=True)
    rows.append(
        ("model check (full sha256)", f"{time.perf_counter() - t0:.2f} s", resolved.path.name)
    )

    t0 = time.perf_counter()
    server = LocalServer("qwen0.5b", threads=args.threads, n_ctx=4096)
    startup = time.perf_counter() - t0
    medians: dict[tuple[str, str], float] = {}
    rows.append(
        (
            "llama.cpp start-up (load + ready)",
            f"{startup:.2f} s",
            f"{args.threads} threads, n_ctx 4096",
        )
    )
    try:
        for mode in ("json_schema", "json_object", "prompt"):
            b = LocalBackend(server=server, structured=mode, max_tokens=256)
            for kind, make_call, schema in (("plan", plan_call, Plan),
                                            ("assessor", report_call, Report)):
                before = b.openai.stats.repairs
                try:
                    lat = time_calls(b, make_call, schema, args.calls)
                except Exception as exc:  # report it, keep measuring the other rows
                    rows.append((f"{kind} call, {mode}", "no valid answer", str(exc)[-90:]))
                    continue
                medians[(kind, mode)] = statistics.median(lat)
                rows.append((f"{kind} call, {mode}", f"{statistics.median(lat):.2f} s median",
                             f"min {min(lat):.2f} / max {max(lat):.2f} s, n={len(lat)}, "
                             f"repairs {b.openai.stats.repairs - before}"))
            st = b.openai.stats
            if st.seconds:
                rows.append((f"completion throughput, {mode}",
                             f"{st.completion_tokens / st.seconds:.0f} tok/s",
                             f"{st.prompt_tokens} prompt + {st.completion_tokens} completion "
                             "tokens"))
            b.openai.close()
    finally:
        server.close()

    over = client_overhead(50)
    rows.append(
        (
            "client overhead per call (instant server)",
            f"{statistics.median(over) * 1000:.1f} ms median",
            "HTTP + validation, loopback",
        )
    )

    print_table("bench_llm: local Qwen2.5-Coder-0.5B Q4_K_M via llama.cpp (CPU)",
                ("measure", "value", "notes"), rows)
    plan = medians.get(("plan", "json_schema"))
    headline("Oracle generation", "local Qwen2.5-Coder-0.5B Q4_K_M via llama.cpp on CPU "
             f"({args.threads} threads): start-up / a structured plan call (json_schema, median)",
             f"{startup:.1f} s / " + ("no valid answer" if plan is None else f"{plan:.1f} s"),
             "report")
    headline("Oracle generation", "OpenAI-compatible client overhead per call (loopback server "
             "answering at once: HTTP + validation, median)",
             f"{statistics.median(over) * 1000:.1f} ms", "report")


if __name__ == "__main__":
    main()
