"""The perception-based world state against the physics, over LIBERO-10 expert episodes.

For every scene: the expert's pass run and faulted runs (drop, skip, wrong place, knock out;
a fault a task cannot take is replaced by a stall). Each episode runs once; at every control
step the front and wrist cameras (640x480) are rendered with the scene's markers, and the
estimator (`mango.perception.estimator`) sees only those images, depth, camera info and the
joint states. Reported (issue #14 goals): the median 3-D position error of the marked objects
(<= 1 cm), and the agreement of the oracle's verdict and failed step on the estimated trace
with the same oracle on the physics' trace (>= 0.95). Figures go to out/bench/world_state.json.

Run: python bench/bench_world_state.py [--scenes N] [--jobs J] [--faults drop@0.5,skip@1]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
from report import headline, print_table

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("MUJOCO_GL", "egl")
FAULTS = ("drop@0.5", "skip@1", "wrong_place@1", "knock_out@1")


def episode(scene: str, fault: str | None) -> dict:
    from mango.errors import InputError
    from mango.oracle.tracker import check_trace
    from mango.perception.episode import estimated_episode
    from mango.sim.expert.policy import ExpertPolicy
    from mango.sim.faults import parse_fault
    from mango.sim.markers import auto_marker_map
    from mango.sim.runner import load_oracle_json
    from mango.sim.scene import as_scene

    sc = as_scene(scene)
    try:
        f = parse_fault(fault) if fault else None
        ExpertPolicy(sc, f)
    except InputError:
        fault = "stall@5"
        f = parse_fault(fault)
    t0 = time.perf_counter()
    try:
        ep = estimated_episode(sc, 0, f)
    except Exception as exc:  # counted as a disagreement, and said: the run goes on
        return {"scene": sc.name, "fault": fault, "wall_s": time.perf_counter() - t0,
                "states": 0, "marked_error": [], "unmarked_error": [], "truth": [None, None],
                "estimated": [f"error: {type(exc).__name__}: {exc}", None], "labels": [None]}
    wall = time.perf_counter() - t0
    marked = {m.entity for m in auto_marker_map(sc).markers if m.part == "base"}
    movable = [e.id for e in sc.entities if e.movable]
    errors: dict[str, list[float]] = {e: [] for e in movable}
    for truth, est in zip(ep.result.states, ep.estimated, strict=True):
        for e in movable:
            errors[e].append(float(np.linalg.norm(np.subtract(truth.objects[e].position,
                                                              est.objects[e].position))))
    oracle, _ = load_oracle_json(sc)
    on_truth = check_trace(oracle, ep.result.states)
    on_est = check_trace(oracle, ep.estimated)
    return {
        "scene": sc.name, "fault": fault, "wall_s": wall, "states": len(ep.estimated),
        "marked_error": [x for e in movable if e in marked for x in errors[e]],
        "unmarked_error": [x for e in movable if e not in marked for x in errors[e]],
        "truth": [on_truth.verdict, on_truth.failed_step],
        "estimated": [on_est.verdict, on_est.failed_step],
        "labels": [ep.result.labels["expected_verdict"], ep.result.labels["failed_step"]],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=10, help="how many LIBERO-10 scenes")
    ap.add_argument("--jobs", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument("--out", type=Path, default=REPO / "out" / "bench" / "world_state.json")
    args = ap.parse_args()
    from rich.progress import Progress

    from mango.sim.scene import list_scenes

    scenes = [p.stem for p in list_scenes() if p.stem.startswith("libero10_")][:args.scenes]
    faults: list[str | None] = [None, *[f for f in args.faults.split(",") if f]]
    jobs = [(s, f) for s in scenes for f in faults]
    rows: list[dict] = []
    with Progress() as progress, ProcessPoolExecutor(args.jobs) as pool:
        task = progress.add_task("estimated episodes", total=len(jobs))
        futures = {pool.submit(episode, s, f): (s, f) for s, f in jobs}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.with_suffix(".jsonl").open("w") as log:  # as they finish
            for fut in as_completed(futures):
                rows.append(fut.result())
                slim = {k: v for k, v in rows[-1].items() if not k.endswith("_error")}
                log.write(json.dumps(slim) + "\n")
                log.flush()
                progress.advance(task)
    rows.sort(key=lambda r: (r["scene"], r["fault"] or ""))
    marked = [x for r in rows for x in r["marked_error"]]
    unmarked = [x for r in rows for x in r["unmarked_error"]]
    agree = [r["truth"] == r["estimated"] for r in rows]
    table = [[r["scene"].removeprefix("libero10_"), r["fault"] or "pass",
              f"{np.median(r['marked_error']) * 1000:.1f}" if r["marked_error"] else "-",
              "/".join(map(str, r["truth"])), "/".join(map(str, r["estimated"])),
              "yes" if r["truth"] == r["estimated"] else "NO", f"{r['wall_s']:.0f}"]
             for r in rows]
    print_table("world state estimated from markers vs physics (expert episodes)",
                ["scene", "run", "median err mm", "oracle on truth", "on estimate", "agree",
                 "wall s"], table)
    summary = {
        "episodes": len(rows),
        "median_marked_error_m": float(np.median(marked)) if marked else None,
        "p95_marked_error_m": float(np.percentile(marked, 95)) if marked else None,
        "median_unmarked_error_m": float(np.median(unmarked)) if unmarked else None,
        "verdict_agreement": float(np.mean(agree)),
        "disagreements": [r for r in rows if r["truth"] != r["estimated"]],
    }
    print(f"{len(rows)} episodes: median position error of marked objects "
          f"{summary['median_marked_error_m'] * 1000:.1f} mm (goal <= 10), p95 "
          f"{summary['p95_marked_error_m'] * 1000:.1f} mm; verdict + failed step agreement "
          f"{summary['verdict_agreement']:.3f} (goal >= 0.95)")
    if marked:
        headline("Perception", f"estimated world state vs physics over {len(rows)} LIBERO-10 "
                 f"expert episodes (pass + {len(faults) - 1} fault{'s' * (len(faults) != 2)} "
                 "per scene, front + wrist "
                 "640×480): median / p95 position error of marked objects; oracle verdict + "
                 "failed step agreement",
                 f"{np.median(marked) * 1000:.1f} mm / {np.percentile(marked, 95) * 1000:.1f} mm; "
                 f"{sum(agree)}/{len(agree)} ({np.mean(agree):.3f})", "≤ 1 cm; ≥ 0.95")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    slim = [{k: v for k, v in r.items() if not k.endswith("_error")} for r in rows]
    summary["disagreements"] = [r for r in slim if r["truth"] != r["estimated"]]
    args.out.write_text(json.dumps({"summary": summary, "episodes": slim}, indent=1) + "\n")


if __name__ == "__main__":
    main()
