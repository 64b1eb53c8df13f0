"""The orchestrator's own clock (issue #16, `make bench`): monitor reaction time, decision
latency per decider, and the loop's overhead per control cycle.

One faulted episode per fault kind (wrong_object, drop, stall, wrong_place on LIBERO-10
scenes that take it), run with `full` and each monitor:

- **reaction** (per monitor): ground-truth failure event -> the hand at rest
  (`orchestrator.failures.reactions`), p50/p95, with its detection part (event -> signal);
- **decision latency** (per decider): the wall time of `Decider.decide`, as the episode
  record logs it (`latency_s`); `--decider NAME` adds a decider (e.g. `vlm` once built,
  with `--opt` for its options), each run on the same episodes;
- **overhead per cycle**: wall time the loop spends on one control period outside the
  physics and the ground truth: the monitor's update and poll, the oracle's verdict
  tracker, and the loop's bookkeeping (`Orchestrator._observe` less the ground-truth
  detector). The sim's stepping and rendering are excluded. Counted in CPU time of the
  loop's thread (`time.thread_time`), so a machine busy with other work does not add the
  time this process waited for a core.

Run: `python bench/bench_orchestrator_timing.py [--decider NAME ...] [--monitor NAME ...]`.
Timings are wall clock on this machine (a loaded machine reads slower).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from report import headline, print_table

EPISODES = (("libero10_book_caddy", "wrong_object@1"), ("libero10_bowl_drawer", "drop@0.5"),
            ("libero10_cheese_butter_basket", "stall@5"),
            ("libero10_soup_sauce_basket", "wrong_place@1"))


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))] if xs else float("nan")


def timed_episode(scene: str, fault: str, monitor: str, decider: str,
                  opts: dict[str, Any]) -> dict[str, Any]:
    """One episode with the loop's parts timed per control cycle."""
    from mango.orchestrator.config import OrchestratorConfig
    from mango.orchestrator.loop import Orchestrator
    from mango.sim.env import as_scene
    from mango.sim.faults import parse_fault

    cycles: list[dict[str, float]] = []
    cur: dict[str, float] = {}  # this cycle's parts

    def timed(fn: Any, key: str, acc: dict[str, float]) -> Any:
        def call(*a: Any, **k: Any) -> Any:
            t0 = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                acc[key] = acc.get(key, 0.0) + time.thread_time() - t0
        return call

    class Timed(Orchestrator):
        def _make_monitor(self) -> Any:
            mon = super()._make_monitor()
            mon.update = timed(mon.update, "monitor", cur)  # type: ignore[method-assign]
            mon.poll = timed(mon.poll, "monitor", cur)  # type: ignore[method-assign]
            self.detector.update = timed(  # type: ignore[method-assign]
                self.detector.update, "truth", cur)
            self.verdict_tracker.update = timed(  # type: ignore[method-assign]
                self.verdict_tracker.update, "oracle", cur)
            self.world.observe = timed(  # type: ignore[method-assign]
                self.world.observe, "world", cur)
            return mon

        def _observe(self, state: Any) -> None:
            cur.clear()
            t0 = time.thread_time()
            try:
                super()._observe(state)
            finally:
                total = time.thread_time() - t0
                c = dict(cur)
                c["loop"] = total - sum(c.values())
                cycles.append(c)

    cfg = OrchestratorConfig(mode="full", monitor=monitor, decider=decider, **opts)
    orch = Timed(as_scene(scene), 0, cfg, parse_fault(fault))
    try:
        out = orch.run()
    finally:
        orch.close()
    return {"reactions": out.reactions, "cycles": cycles[1:],  # the first builds caches
            "latency": [d["latency_s"] for d in out.decisions],
            "success": out.success}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--monitor", action="append", default=None, help="oracle, gt (default both)")
    ap.add_argument("--decider", action="append", default=None, help="offline (default)")
    ap.add_argument("--opt", action="append", default=[],
                    help="KEY=VALUE OrchestratorConfig field for every run")
    args = ap.parse_args()
    opts: dict[str, Any] = {}
    for kv in args.opt:
        k, _, v = kv.partition("=")
        opts[k] = float(v) if v.replace(".", "", 1).isdigit() else v
    monitors = args.monitor or ["oracle", "gt"]
    deciders = args.decider or ["offline"]
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    t0 = time.perf_counter()
    for mon in monitors:
        for dec in deciders:
            rows[(mon, dec)] = [timed_episode(s, f, mon, dec, opts) for s, f in EPISODES]
    wall = time.perf_counter() - t0
    react = []
    for mon in monitors:
        rs = [r for ep in rows[(mon, deciders[0])] for r in ep["reactions"]]
        tot = [r.total_s for r in rs if r.total_s is not None]
        det = [r.detection_s for r in rs if r.detection_s is not None]
        react.append((mon, str(len(rs)), f"{_pct(tot, 0.5) * 1e3:.0f}",
                      f"{_pct(tot, 0.95) * 1e3:.0f}", f"{_pct(det, 0.5) * 1e3:.0f}",
                      str(len(rs) - len(tot))))
    print_table(f"monitor reaction: world failure -> hand at rest (ms; {len(EPISODES)} "
                f"faulted episodes, one per kind; {wall:.0f} s)",
                ("monitor", "failures", "p50", "p95", "detection p50", "no halt"), react)
    lat = []
    for dec in deciders:
        xs = [x for mon in monitors for ep in rows[(mon, dec)] for x in ep["latency"]]
        lat.append((dec, str(len(xs)), f"{_pct(xs, 0.5) * 1e6:.0f}",
                    f"{_pct(xs, 0.95) * 1e6:.0f}", f"{max(xs) * 1e6:.0f}" if xs else "-"))
    print_table("decision latency per decider (µs, Decider.decide)",
                ("decider", "decisions", "p50", "p95", "max"), lat)
    over = []
    for mon in monitors:
        cs = [c for ep in rows[(mon, deciders[0])] for c in ep["cycles"]]

        def part(key: str, cs: list = cs) -> list[float]:
            return [c.get(key, 0.0) * 1e6 for c in cs]

        own = [c.get("monitor", 0.0) + c.get("oracle", 0.0) + c["loop"] for c in cs]
        own = [x * 1e6 for x in own]
        over.append((mon, str(len(cs)), f"{_pct(own, 0.5):.0f}", f"{_pct(own, 0.95):.0f}",
                     f"{_pct(part('monitor'), 0.5):.0f}", f"{_pct(part('oracle'), 0.5):.0f}",
                     f"{_pct(part('loop'), 0.5):.0f}", f"{_pct(part('truth'), 0.5):.0f}"))
    print_table("orchestrator overhead per control cycle (CPU µs; sim physics excluded)",
                ("monitor", "cycles", "own p50", "own p95", "monitor p50", "oracle p50",
                 "loop p50", "(ground truth p50)"), over)
    headline("Orchestration", "orchestrator per control cycle, CPU time outside the physics, "
             f"{' / '.join(monitors)} monitor (p50 / p95)",
             " / ".join(f"{p50} / {p95} µs" for _, _, p50, p95, *_ in over) + " (of 66.7 ms)",
             "report")
    headline("Orchestration", f"{' / '.join(deciders)} decider decision latency (p50 / p95)",
             " / ".join(f"{p50} / {p95} µs" for _, _, p50, p95, _ in lat), "report")
    print("own = monitor update+poll + oracle verdict tracker + the loop's bookkeeping; the "
          "ground-truth detector is the measurement's, shown apart; the control period is "
          "66.7 ms")


if __name__ == "__main__":
    main()
