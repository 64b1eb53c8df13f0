"""Benchmark of evaluation campaigns in-process (no DDS): a MANGO-RQ2-sized campaign (the ten
LIBERO-10 tasks, 10 executions each, MANGO-sampled: 4 passes, 2 early / 2 mid / 2 late
failures from a pool of expert runs) on local workers; throughput in episodes per hour per
core, counting the pool runs it took.

Run: `python bench/bench_campaign.py [--workers 2] [--seeds 10]` (or `make bench`). Issue
#17's goal: the campaign finishes in <= 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from report import print_table


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("out/bench/campaign.json"))
    args = ap.parse_args()

    from mango.evaluation.campaign import load_campaign
    from mango.evaluation.metrics import summarize
    from mango.evaluation.runner import STORE_FILE, run_campaign
    from mango.evaluation.store import Store
    from mango.sim.scene import list_scenes, load_scene

    tasks = [load_scene(p).name for p in list_scenes() if p.stem.startswith("libero10_")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rq2.yaml"
        path.write_text(json.dumps({
            "name": "rq2", "systems": [{"name": "expert", "kind": "policy"}],
            "tasks": tasks, "seeds": {"start": 0, "count": args.seeds},
            "sampling": "mango"}))  # JSON is YAML
        t0 = time.perf_counter()
        summary = run_campaign(load_campaign(path), Path(tmp) / "out", workers=args.workers)
        wall = time.perf_counter() - t0
        with Store(Path(tmp) / "out" / STORE_FILE) as store:
            table = summarize(list(store.results()))
    per_core_hour = summary.pool / wall * 3600 / args.workers
    fig = {"tasks": len(tasks), "episodes": summary.total, "pool_runs": summary.pool,
           "wall_s": round(wall, 1), "workers": args.workers,
           "sim_runs_per_hour_per_core": round(per_core_hour),
           "shortfall": summary.shortfall, "oracle": {
               k: table["oracle_vs_symbolic"][k] for k in ("confusion", "accuracy", "f1",
                                                           "localization_accuracy")}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fig, indent=2) + "\n")
    print_table("MANGO-RQ2-sized campaign, in-process", ["figure", "value", "goal"], [
        ("episodes (10 tasks x 10, sampled)", str(summary.total), "100"),
        ("pool runs (expert, to sample from; the episodes reuse them)", str(summary.pool), ""),
        ("wall time", f"{wall:.0f} s on {args.workers} workers", "<= 300 s on 2 cores"),
        ("sim runs per hour per core", str(round(per_core_hour)), ""),
        ("sampling shortfall", json.dumps(summary.shortfall) if summary.shortfall else "none",
         ""),
    ])


if __name__ == "__main__":
    main()
