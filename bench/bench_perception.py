"""Benchmark of the classical perception backends on 640x480 sim renders, one core.

Run: `python bench/bench_perception.py` (or `make bench`). Detect latency p50/p90 for
`tabletop` (goal <= 100 ms) and `aruco` (goal <= 15 ms), the aruco pose error over the
markers seen, and tabletop's phrase-grounding accuracy on the LIBERO-10 scenes.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the goal says

import numpy as np
from report import headline, print_table


def _latency(backend, frames, phrases) -> tuple[float, float]:
    times = []
    for _ in range(3):
        for f in frames:
            t0 = time.perf_counter()
            backend.detect(f, phrases)
            times.append(time.perf_counter() - t0)
    return float(np.percentile(times, 50) * 1e3), float(np.percentile(times, 90) * 1e3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=3, help="seeds per scene for accuracy")
    args = ap.parse_args()
    import cv2

    from mango.geometry import quat_to_mat
    from mango.perception.aruco import ArucoBackend
    from mango.perception.tabletop import TabletopBackend
    from mango.perception.tabletop_eval import evaluate_grounding, sim_frame
    from mango.sim.env import SimEnv
    from mango.sim.markers import auto_marker_map
    from mango.sim.parts import part_transform
    from mango.sim.scene import as_scene, list_scenes

    cv2.setNumThreads(1)
    frames, marked, errs, angs = [], [], [], []
    backends = []
    for path in list_scenes():
        sc = as_scene(path)
        mm = auto_marker_map(sc)
        with SimEnv(sc, seed=0, cameras=("front",), image_size=(640, 480)) as env:
            frames.append(sim_frame(env, "front")[0])
        with SimEnv(sc, seed=0, cameras=("front",), image_size=(640, 480), markers=mm) as env:
            f, _ = sim_frame(env, "front")
            ws = env.world_state()
        b = ArucoBackend(mm, sc)
        backends.append((b, f, [m.entity for m in mm.markers]))
        for p in b.poses(f)[0]:
            t = ws.objects[p.entity]
            truth = np.eye(4)
            truth[:3, :3], truth[:3, 3] = quat_to_mat(t.orientation), t.position
            if p.part != "base":  # a moving part's marker gives the part's frame
                e = sc.entity(p.entity)
                truth = truth @ part_transform(e, ws.joints[e.joint.id].q)
            errs.append(float(np.linalg.norm(p.position - truth[:3, 3])))
            r = p.rotation.T @ truth[:3, :3]
            angs.append(float(np.degrees(np.arccos(np.clip((np.trace(r) - 1) / 2, -1, 1)))))
        marked.append(len(mm.markers))
    tt = TabletopBackend(as_scene(list_scenes()[0]).robot.base)
    t50, t90 = _latency(tt, frames, ["the red mug"])
    times = []
    for _ in range(3):
        for b, f, ents in backends:
            t0 = time.perf_counter()
            b.detect(f, ents)
            times.append(time.perf_counter() - t0)
    a50, a90 = float(np.percentile(times, 50) * 1e3), float(np.percentile(times, 90) * 1e3)
    tally = evaluate_grounding(list_scenes(), list(range(args.seeds)))
    n = sum(tally.asked.values())
    rows = [
        ("tabletop Detect 640x480, p50 / p90", f"{t50:.0f} / {t90:.0f} ms", "<= 100 ms p50"),
        ("aruco Detect 640x480, p50 / p90", f"{a50:.1f} / {a90:.1f} ms", "<= 15 ms p50"),
        (f"aruco entity (part) pose error, front camera, {len(errs)} markers seen of "
         f"{sum(marked)}",
         f"median {np.median(errs) * 1e3:.1f} mm, max {np.max(errs) * 1e3:.1f} mm; "
         f"median {np.median(angs):.2f} deg, max {np.max(angs):.2f} deg", "<= 10 mm, 3 deg"),
        (f"tabletop phrase grounding, 10 scenes x {args.seeds} seeds",
         f"{tally.accuracy:.2f} ({sum(tally.right.values())}/{n})", "report"),
    ]
    print_table("perception (classical backends)", ("measure", "value", "goal"), rows)
    headline("Perception", "perception Detect 640×480, one core: `tabletop` / `aruco` (p50)",
             f"{t50:.0f} / {a50:.1f} ms", "≤ 100 / ≤ 15 ms")


if __name__ == "__main__":
    main()
