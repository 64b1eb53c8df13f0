"""Decision latency per decider (issue #16): the same decision points, answered by each.

One orchestrated episode (soup_sauce_basket, a wrong object and a drop in turn, `full` +
oracle monitor, offline rules) yields its decision contexts, camera images included. Each
decider then answers every one of them:
- `offline`: the rules;
- `vlm`: one chat-completions request per decision to a loopback OpenAI-compatible server
  (`test/support/chat_server.py`) answering at once — what is measured is the orchestrator's
  own cost (prompt templates, two PNG data URLs, the enum schema, the HTTP round trip and the
  answer's validation), not a model's thinking;
- `local`: the llama.cpp Qwen2.5-Coder-0.5B (CPU) writing the plan and each replan (its only
  model calls; other points go to the rules).

Run: `python bench/bench_deciders.py [--plans 1] [--no-local]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from report import headline, print_table

# the scripted server the tests use (a real HTTP server speaking the protocol)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test"))


def _contexts() -> tuple[list, object]:
    from mango.orchestrator.config import OrchestratorConfig
    from mango.orchestrator.deciders import OfflineDecider
    from mango.orchestrator.loop import Orchestrator
    from mango.sim.env import as_scene
    from mango.sim.faults import parse_fault

    seen = []

    class Keeping(OfflineDecider):
        name = "offline"

        def decide(self, ctx):
            seen.append(ctx)
            return super().decide(ctx)

    class Loop(Orchestrator):
        def _decide(self, ctx):
            now = self._camera_image()
            ctx.images = {"before": self._before.setdefault(ctx.active.id, now), "now": now}
            return super()._decide(ctx)

    kept = []
    for fault in ("wrong_object@1", "drop@0.5"):
        orch = Loop(as_scene("soup_sauce_basket"), 0,
                    OrchestratorConfig(mode="full", monitor="oracle"), parse_fault(fault))
        orch.decider = Keeping()
        try:
            orch.run()
            kept.append(orch)
        finally:
            orch.close()
    return seen, kept[0]


def _stats(xs: list[float]) -> tuple[str, str, str, str]:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return (str(len(xs)), f"{statistics.median(xs) * 1000:.2f}", f"{p95 * 1000:.2f}",
            f"{xs[-1] * 1000:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--plans", type=int, default=1, help="local model plans to time")
    ap.add_argument("--no-local", action="store_true", help="skip the llama.cpp model")
    args = ap.parse_args()

    from support.chat_server import ChatServer, Reply

    from mango.orchestrator.config import OrchestratorConfig
    from mango.orchestrator.deciders import OfflineDecider
    from mango.orchestrator.vlm import LocalDecider, PlanRequest, VlmDecider

    t0 = time.perf_counter()
    contexts, orch = _contexts()
    rows = []
    lat = []
    rules = OfflineDecider()
    for ctx in contexts:
        s = time.perf_counter()
        rules.decide(ctx)
        lat.append(time.perf_counter() - s)
    rows.append(("offline (rules)", "every point", *_stats(lat)))
    p50 = {"offline": statistics.median(lat)}

    server = ChatServer()
    server.default = lambda body: Reply(json.dumps(
        {"action": "abort", "tool": "noop", "reason": "bench"}))
    vlm = VlmDecider(OrchestratorConfig(decider="vlm", model="bench", backend_opts=(
        ("base_url", server.url), ("api_key_env", ""), ("max_retries", "0"))))
    lat = []
    for ctx in contexts:
        s = time.perf_counter()
        d = vlm.decide(ctx)
        lat.append(time.perf_counter() - s)
        assert d.reason == "bench", d.reason
    vlm.close()
    server.close()
    size = sum(len(json.dumps(r.body)) for r in server.requests) / len(server.requests)
    rows.append(("vlm (loopback server)", "every point", *_stats(lat)))
    p50["vlm"] = statistics.median(lat)

    local_s: list[list[float]] = []  # the local model's plans, then its replans
    if not args.no_local:
        local = LocalDecider(OrchestratorConfig(decider="local"))
        try:
            plans, replans = [], []
            rules_plan = orch.plan
            state = orch.states[0]
            for _ in range(args.plans):
                s = time.perf_counter()
                _, meta = local.plan(PlanRequest(orch.scene, rules_plan.instruction, state,
                                                 orch.oracle, rules_plan))
                plans.append(time.perf_counter() - s)
                print(f"local plan: {meta.get('decider')} {meta.get('rejected') or 'accepted'}")
            for ctx in contexts:
                if rules.decide(ctx).action == "replan":
                    s = time.perf_counter()
                    local.decide(ctx)
                    replans.append(time.perf_counter() - s)
        finally:
            local.close()
        rows.append(("local qwen0.5b (CPU)", "plan", *_stats(plans)))
        if replans:
            rows.append(("local qwen0.5b (CPU)", "replan", *_stats(replans)))
        local_s = [plans, replans] if replans else [plans]
    print_table(f"bench_deciders: decision latency on {len(contexts)} decision points of two "
                f"faulted soup_sauce_basket episodes ({time.perf_counter() - t0:.0f} s)",
                ("decider", "points", "n", "p50 ms", "p95 ms", "max ms"), rows)
    print(f"vlm request body: {size / 1024:.0f} KiB on average (two 640x480 PNG data URLs "
          "at a recovery, one at a subgoal's start)")
    headline("Orchestration", f"decision latency per decider ({len(contexts)} decision points "
             "of two faulted soup_sauce_basket episodes): offline rules / `vlm` against a "
             "loopback server answering at once (templates, 640×480 PNG data URLs, "
             f"~{size / 1024:.0f} KiB a request, schema, HTTP, validation), p50",
             f"{p50['offline'] * 1e6:.0f} µs / {p50['vlm'] * 1e3:.0f} ms", "report")
    if local_s:
        headline("Orchestration", "… `local` Qwen2.5-Coder-0.5B on CPU: "
                 + " / ".join(["a plan", "a replan"][:len(local_s)]) + " (p50)",
                 " / ".join(f"{statistics.median(xs):.0f} s" for xs in local_s), "report")


if __name__ == "__main__":
    main()
