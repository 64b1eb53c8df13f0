"""Benchmark of evaluation campaigns: throughput in episodes per hour per core in-process and
as ROS stacks, the Ray overhead per episode, and a MANGO-RQ2-sized campaign (the ten LIBERO-10
tasks, 10 executions each, MANGO-sampled: 4 passes, 2 early / 2 mid / 2 late failures from a
pool of expert runs) on local workers.

Per core means per core of this machine (`os.cpu_count()`): a stack episode is five node
processes, an in-process one a worker process, so both are normalised by what they had.
The Ray overhead is (Ray wall - local workers' wall) / episodes for the same episodes and the
same worker count, on a loopback head (every listener on 127.0.0.1) started here; the head's
own start-up is given apart.

Run: `python bench/bench_campaign.py [--workers 2] [--seeds 10] [--ros 2] [--ray 8]` (or
`make bench`); `--ros 0` / `--ray 0` leave those parts out. Issue #17's goal: the RQ2-sized
campaign finishes in <= 5 minutes on 2 cores in-process.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from report import headline, print_table

LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}


def _campaign(tmp: Path, name: str, body: dict[str, Any]) -> Any:
    from mango.evaluation.campaign import load_campaign

    path = tmp / f"{name}.yaml"
    path.write_text(json.dumps({"name": name, **body}))  # JSON is YAML
    return load_campaign(path)


def _timed(campaign: Any, out: Path, **kw: Any) -> tuple[Any, float]:
    from mango.evaluation.runner import run_campaign

    t0 = time.perf_counter()
    summary = run_campaign(campaign, out, **kw)
    return summary, time.perf_counter() - t0


def _grid(seeds: int) -> dict[str, Any]:
    return {"systems": [{"name": "vla", "kind": "policy"}], "tasks": ["libero10_stove_moka"],
            "seeds": {"start": 0, "count": seeds}, "faults": ["none", "drop@0.3"]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_overhead(tmp: Path, episodes: int, workers: int) -> dict[str, Any]:
    ray = str(Path(sys.executable).with_name("ray"))
    env = dict(os.environ, **LOOPBACK)
    os.environ.update(LOOPBACK)
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's unix socket paths
    t0 = time.perf_counter()
    subprocess.run([ray, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                    "--dashboard-host=127.0.0.1", "--include-dashboard=false",
                    "--disable-usage-stats", f"--num-cpus={workers}",
                    "--object-store-memory=200000000", f"--temp-dir={temp}"],
                   env=env, check=True, capture_output=True, timeout=180)
    head_s = time.perf_counter() - t0
    try:
        body = _grid(max(1, episodes // 2))
        local, t_local = _timed(_campaign(tmp, "ray_local", body), tmp / "ray_local",
                                workers=workers)
        on_ray, t_ray = _timed(_campaign(tmp, "ray_ray", body), tmp / "ray_ray",
                               ray_address=f"127.0.0.1:{port}")
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=120)
    n = on_ray.ran
    return {"episodes": n, "head_start_s": round(head_s, 1), "local_wall_s": round(t_local, 1),
            "ray_wall_s": round(t_ray, 1), "errors": on_ray.errors + local.errors,
            "overhead_s_per_episode": round((t_ray - t_local) / max(n, 1), 2)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=10, help="RQ2 campaign: seeds per task")
    ap.add_argument("--ros", type=int, default=2, help="stack episodes to time (0: none)")
    ap.add_argument("--ray", type=int, default=8, help="episodes on Ray (0: none)")
    ap.add_argument("--out", type=Path, default=Path("out/bench/campaign.json"))
    args = ap.parse_args()

    from mango.evaluation.metrics import summarize
    from mango.evaluation.runner import STORE_FILE
    from mango.evaluation.sampling import QUOTA
    from mango.evaluation.store import Store
    from mango.sim.scene import list_scenes, load_scene

    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    tasks = [load_scene(p).name for p in list_scenes() if p.stem.startswith("libero10_")]
    fig: dict[str, Any] = {"cores": cores, "workers": args.workers,
                           "load_average_1min_at_start": round(load, 1)}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        summary, wall = _timed(_campaign(tmp, "rq2", {
            "systems": [{"name": "expert", "kind": "policy"}], "tasks": tasks,
            "seeds": {"start": 0, "count": args.seeds}, "sampling": "mango"}), tmp / "rq2",
            workers=args.workers)
        with Store(tmp / "rq2" / STORE_FILE) as store:
            table = summarize(list(store.results()))
        sim_runs = summary.pool + summary.ran - summary.errors
        fig["rq2"] = {"tasks": len(tasks), "episodes": summary.total, "pool_runs": summary.pool,
                      "wall_s": round(wall, 1), "shortfall": summary.shortfall,
                      "episodes_per_hour_per_core": round(summary.pool / wall * 3600 / cores),
                      "sim_runs": sim_runs, "oracle": {
                          k: table["oracle_vs_symbolic"][k] for k in
                          ("confusion", "accuracy", "f1", "localization_accuracy")}}
        if args.ros > 0:
            body = _grid(max(1, args.ros // 2))
            local, t_local = _timed(_campaign(tmp, "in_process", body), tmp / "in_process",
                                    workers=1)
            ros, t_ros = _timed(_campaign(tmp, "ros", {**body, "runner": "ros"}), tmp / "ros",
                                workers=1)
            fig["per_episode"] = {
                "episodes": ros.ran, "errors": ros.errors, "workers": 1,
                "in_process_s": round(t_local / max(local.ran, 1), 1),
                "ros_stack_s": round(t_ros / max(ros.ran, 1), 1),
                "in_process_episodes_per_hour_per_core": round(local.ran / t_local * 3600
                                                               / cores),
                "ros_episodes_per_hour_per_core": round(ros.ran / t_ros * 3600 / cores)}
        if args.ray > 0:
            fig["ray"] = ray_overhead(tmp, args.ray, args.workers)
    fig["load_average_1min_at_end"] = round(os.getloadavg()[0], 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(fig, indent=2) + "\n")
    rq2 = fig["rq2"]
    rows = [
        ("RQ2 episodes (10 tasks x 10, sampled)", str(rq2["episodes"]), "100"),
        ("RQ2 pool runs (expert; the episodes reuse them)", str(rq2["pool_runs"]), ""),
        ("RQ2 wall time", f"{wall:.0f} s on {args.workers} workers", "<= 300 s on 2 cores"),
        ("RQ2 sim runs per hour per core", str(rq2["episodes_per_hour_per_core"]), ""),
        ("RQ2 sampling shortfall", json.dumps(rq2["shortfall"]) if rq2["shortfall"] else
         "none", ""),
    ]
    if "per_episode" in fig:
        pe = fig["per_episode"]
        rows += [("in-process: s per episode (1 worker)", str(pe["in_process_s"]), ""),
                 ("in-process: episodes / hour / core",
                  str(pe["in_process_episodes_per_hour_per_core"]), ""),
                 ("ROS stack: s per episode (1 worker)", str(pe["ros_stack_s"]), ""),
                 ("ROS stack: episodes / hour / core", str(pe["ros_episodes_per_hour_per_core"]),
                  "")]
    if "ray" in fig:
        r = fig["ray"]
        rows += [("Ray: loopback head start", f"{r['head_start_s']} s", ""),
                 ("Ray: overhead per episode", f"{r['overhead_s_per_episode']} s "
                  f"({r['episodes']} episodes, {r['ray_wall_s']} s vs {r['local_wall_s']} s "
                  "local)", "")]
    rows.append(("load average (1 min) start / end",
                 f"{fig['load_average_1min_at_start']} / {fig['load_average_1min_at_end']} "
                 f"on {cores} cores", ""))
    print_table("Evaluation campaigns", ["figure", "value", "goal"], rows)
    headline("Evaluation campaigns", f"MANGO-RQ2-sized campaign in-process ({len(tasks)} "
             f"LIBERO-10 tasks × {sum(QUOTA.values())} MANGO-sampled episodes from a pool of "
             f"{args.seeds} seed{'s' * (args.seeds != 1)}, {args.workers} workers on {cores} "
             "cores)", f"{wall:.0f} s ({rq2['episodes']} episodes, {rq2['pool_runs']} pool runs)",
             "≤ 300 s on 2 cores")
    if "per_episode" in fig:
        pe = fig["per_episode"]
        headline("Evaluation campaigns", "campaign episodes per hour per core (stove_moka, "
                 "1 worker): in-process / as ROS stacks (`runner: ros`)",
                 f"{pe['in_process_episodes_per_hour_per_core']} ({pe['in_process_s']} s each) "
                 f"/ {pe['ros_episodes_per_hour_per_core']} ({pe['ros_stack_s']} s each)",
                 "report")
    if "ray" in fig:
        r = fig["ray"]
        headline("Evaluation campaigns", f"… Ray overhead per episode (loopback head, "
                 f"{args.workers} workers, {r['episodes']} episodes; head start "
                 f"{r['head_start_s']:.0f} s)", f"{r['overhead_s_per_episode']} s", "report")


if __name__ == "__main__":
    main()
