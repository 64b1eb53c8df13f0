"""Perception figures: Detect latency per backend at 640x480.

For each of the ten LIBERO-10 scenes (seed 0), the front camera's frame is rendered once
(RGB, depth, segmentation) and `detect` is timed on it: one phrase (the first object's
description) and every object of the scene in one call. The first call of a backend grounds
the phrases (the generator's grounder), later calls reuse the grounding; both are shown.
Rendering is reported apart: it is the simulator's cost, not the backend's. Goal: sim <= 20 ms
p50 (issue #14).

Run: python bench/bench_perception_sim.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))] if s else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=20, help="timed calls per scene and case")
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    from mango.perception.base import PerceptionConfig
    from mango.perception.registry import make_backend
    from mango.perception.sim_frames import sim_frame
    from mango.sim.env import SimEnv
    from mango.sim.scene import list_scenes

    render, first, one, every = [], [], [], []
    n_objects = []
    for path in list_scenes():
        with SimEnv(path, 0, cameras=("front",), image_size=(640, 480)) as env:
            env.reset(0)
            sim_frame(env, "front")  # the first render makes the GL context
            t = time.perf_counter()
            frame = sim_frame(env, "front")
            render.append(time.perf_counter() - t)
            backend = make_backend(PerceptionConfig(backend="sim", scene=env.scene))
            phrases = [e.description or e.id for e in env.scene.entities]
            n_objects.append(len(phrases))
            t = time.perf_counter()
            backend.detect(frame, phrases, 1)
            first.append(time.perf_counter() - t)
            for case, out in ((phrases[:1], one), (phrases, every)):
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    backend.detect(frame, case, 1)
                    out.append(time.perf_counter() - t)
    ms = 1000.0
    rows = [
        ("sim: Detect, one phrase", f"{pct(one, 50) * ms:.1f} ms", f"p90 {pct(one, 90) * ms:.1f}",
         "<= 20 ms p50"),
        (f"sim: Detect, every object ({min(n_objects)}-{max(n_objects)} phrases)",
         f"{pct(every, 50) * ms:.1f} ms", f"p90 {pct(every, 90) * ms:.1f}", ""),
        ("sim: first Detect of a scene (grounds the phrases)", f"{pct(first, 50) * ms:.1f} ms",
         f"max {max(first) * ms:.1f}", ""),
        ("render front 640x480 RGB+depth+seg (simulator)", f"{pct(render, 50) * ms:.1f} ms",
         f"max {max(render) * ms:.1f}", "not in Detect"),
    ]
    table = Table(title=f"bench_perception_sim (10 scenes x {args.repeats} calls, 640x480)")
    for col in ("measure", "p50", "spread", "goal"):
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    Console().print(table)


if __name__ == "__main__":
    main()
