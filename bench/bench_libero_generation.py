"""Benchmark: fine-grained oracles for LIBERO's 130 tasks, generated offline.

For every BDDL file of libero_10, libero_goal, libero_spatial, libero_object and libero_90:
import it (`mango.bddl`: the scene with its layout, the instruction, the goal atoms), then
module III with the libraries generated once from the ten LIBERO-10 instructions
(config/tasks/libero10.json), exactly as `mango generate oracle --scene DIR/scene.json` does.
A task counts when its oracle is approved, passes the static check (Execution Reliability:
parse, types, grounding, dry run) and checks every BDDL goal atom in a valid order
(`mango.oracle.goal_order`). Failures are listed by cause; time is per oracle.

The BDDL files are LIBERO's (`libero/libero/bddl_files` of Lifelong-Robot-Learning/LIBERO),
not shipped here: pass the folder with --root or set LIBERO_BDDL_ROOT.

Run: python bench/bench_libero_generation.py [--root DIR] [--json] [--backend local ...]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from report import LIBERO_SUITES, find_libero_root, headline, print_table

from mango.bddl.convert import scene_json, task_json
from mango.bddl.parser import read_bddl
from mango.bddl.scoring import score_oracle
from mango.generation.backends import make_backend
from mango.generation.engine import load_function_library
from mango.generation.models import SceneTask, load_tasks
from mango.generation.pipeline import GenerationConfig, make_pipeline
from mango.llm.backend import Refusal

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--backend", default="offline")
    ap.add_argument("--model")
    ap.add_argument("--opt", action="append", default=[])
    ap.add_argument("--limit", type=int, default=0, help="at most this many tasks per suite")
    ap.add_argument("--max-iterations", type=int, default=25)
    ap.add_argument("--ablation", default="full",
                    help="full, or baseline (one generator call per oracle: what a small model "
                    "on a CPU can do in minutes)")
    ap.add_argument("--library-backend", default=None,
                    help="backend of modules I+II (default: --backend); 'offline' keeps a small "
                    "model's minutes for module III")
    ap.add_argument("--only", default="", help="comma-separated BDDL file stems to run")
    ap.add_argument("--save-scenes", help="write each task's scene.json here (for replay tests)")
    args = ap.parse_args()
    logging.getLogger("mango").setLevel(logging.ERROR)  # refusals are listed below
    root = find_libero_root(args.root)
    if root is None:
        print("LIBERO's bddl_files not found (pass --root or set LIBERO_BDDL_ROOT): "
              "nothing measured")
        return
    library, catalog = load_function_library(None)
    opts = dict(o.split("=", 1) for o in args.opt)
    backend = make_backend(args.backend, model=args.model, **opts)
    config = GenerationConfig(ablation=args.ablation, module3_max_iterations=args.max_iterations)
    pipe = make_pipeline(backend, catalog, config, library=library)
    lib_pipe = pipe
    if args.library_backend and args.library_backend != args.backend:
        lib_pipe = make_pipeline(make_backend(args.library_backend), catalog,
                                 GenerationConfig(), library=library)
    t0 = time.perf_counter()
    lib = lib_pipe.generate_library(load_tasks(ROOT / "config" / "tasks" / "libero10.json"))
    t_lib = time.perf_counter() - t0
    only = {o for o in args.only.split(",") if o}
    rows: list[dict[str, Any]] = []
    for suite in LIBERO_SUITES:
        files = sorted((root / suite).glob("*.bddl"))
        if only:
            files = [f for f in files if f.stem in only]
        if args.limit:
            files = files[: args.limit]
        for f in files:
            problem = read_bddl(f)
            task = task_json(problem)
            entry = scene_json(problem)
            scene = SceneTask.model_validate(entry["task_objects"][0])
            if args.save_scenes:
                Path(args.save_scenes).mkdir(parents=True, exist_ok=True)
                (Path(args.save_scenes) / f"{f.stem}.json").write_text(json.dumps(
                    {**entry, "goal_atoms": task["goal_atoms"]}, indent=1))
            oracle, approved, refusal = None, False, None
            t1 = time.perf_counter()
            try:
                run = pipe.module3(task["instruction"], scene, lib.atomic_library,
                                   lib.oracle_library)
                oracle, approved = run.oracle.to_json_dict(), run.approved
            except Refusal as exc:
                refusal = str(exc)
            seconds = time.perf_counter() - t1
            ok, cause = score_oracle(task["goal_atoms"], scene, oracle, approved, refusal)
            rows.append({"suite": suite, "file": f.name, "instruction": task["instruction"],
                         "ok": ok, "cause": cause, "seconds": seconds,
                         "goal_atoms": task["goal_atoms"]})
            if args.backend != "offline":
                print(f"{suite}/{f.stem}: {'ok' if ok else cause[:120]} ({seconds:.0f} s)",
                      flush=True)
    if args.json:
        print(json.dumps({"library_seconds": t_lib, "tasks": rows}, indent=1))
        return
    per_suite = [(s, f"{sum(r['ok'] for r in rows if r['suite'] == s)}/"
                  f"{sum(r['suite'] == s for r in rows)}") for s in LIBERO_SUITES]
    ok = sum(r["ok"] for r in rows)
    secs = [r["seconds"] for r in rows]
    per_suite += [("all", f"{ok}/{len(rows)} = {ok / max(1, len(rows)):.3f}"),
                  ("median s per oracle", f"{statistics.median(secs):.3f}"),
                  ("max s per oracle", f"{max(secs):.3f}"),
                  ("library s (once)", f"{t_lib:.2f}")]
    print_table(f"LIBERO tasks: oracle approved, statically sound, every goal atom in a valid "
                f"order ({args.backend})", ["suite", "passed"], per_suite)
    headline("Oracle generation", f"{args.backend} generation on LIBERO's {len(rows)} tasks: "
             "oracle approved, static check, every BDDL goal atom in a valid order; s per "
             "oracle (median)",
             f"{ok}/{len(rows)} ({ok / max(1, len(rows)):.3f}); {statistics.median(secs):.2f} s",
             "≥ 0.95")
    causes = Counter(r["cause"].split(":")[0] for r in rows if not r["ok"])
    print_table("failures by cause", ["cause", "tasks"],
                [(c, str(n)) for c, n in causes.most_common()])
    print_table("failures", ["suite", "instruction", "cause"],
                [(r["suite"], r["instruction"], r["cause"][:160]) for r in rows if not r["ok"]])


if __name__ == "__main__":
    main()
