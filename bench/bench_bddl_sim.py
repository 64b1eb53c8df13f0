"""LIBERO's BDDL tasks in the embedded sim: build, expert run, BDDL goal and generated oracle.

For every task file of the suites asked for: `mango bddl scene`'s build (or what it cannot
build), then per seed the scripted expert's run, its BDDL goal checked on the trace
(`oracle symbolic`) and the fine-grained oracle generated for the task (offline planner,
libraries from the ten LIBERO-10 instructions, scene objects from `mango bddl import`)
checked on the same trace (`oracle check`). Prints a row per task and a table per suite.

Run: `nice -n 10 python bench/bench_bddl_sim.py --root LIBERO/libero/libero/bddl_files
--suites libero_goal libero_spatial libero_object --seeds 5 [--jobs 2] [--json out.json]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from report import find_libero_root, headline, print_table

REPO = Path(__file__).resolve().parents[1]
_LIBS: Path | None = None


def _libraries() -> Path:
    """The LIBERO-10 libraries, generated once per process (offline planner)."""
    global _LIBS
    if _LIBS is None:
        from mango.generation.backends import make_backend
        from mango.generation.engine import load_function_library
        from mango.generation.models import load_tasks
        from mango.generation.runner import Session, run_library

        library, catalog = load_function_library(None)
        session = Session(make_backend("offline", None), library, catalog)
        out = Path(tempfile.mkdtemp(prefix="bddl_libs_"))
        run_library(session, load_tasks(REPO / "config" / "tasks" / "libero10.json"), out)
        _LIBS = out
    return _LIBS


def _oracle(problem: Any) -> tuple[dict[str, Any] | None, str]:
    """The generated oracle for a task (None and why when it is not approved)."""
    from mango.bddl.convert import scene_json
    from mango.generation.backends import make_backend
    from mango.generation.engine import load_function_library
    from mango.generation.models import parse_scene_file, select_scene
    from mango.generation.runner import Session, load_libraries, run_oracle

    library, catalog = load_function_library(None)
    session = Session(make_backend("offline", None), library, catalog)
    entry = select_scene(parse_scene_file(scene_json(problem), "scene.json"), problem.language)
    out = Path(tempfile.mkdtemp(prefix="bddl_oracle_")) / "oracle.json"
    try:
        run = run_oracle(session, problem.language, entry, load_libraries(_libraries()), out)
    except Exception as exc:  # a refusal of the generator is a result of this bench
        return None, f"generation: {exc}"
    if not run.approved:
        return None, f"not approved: {run.module3.reason}"
    return json.loads(out.read_text()), ""


def run_task(path: str, seeds: list[int]) -> dict[str, Any]:
    """One task file: build, and per seed the expert's run and both verdicts."""
    from mango.bddl.parser import read_bddl
    from mango.bddl.scene import sim_scene
    from mango.oracle.predicates import EvaluationError
    from mango.oracle.symbolic import SymbolicOracle
    from mango.oracle.tracker import check_trace
    from mango.sim.runner import run_episode

    f = Path(path)
    problem = read_bddl(f)
    row: dict[str, Any] = {"suite": f.parent.name, "task": f.stem, "seeds": {}}
    built = sim_scene(problem, f"bddl_{f.stem}")
    if built.scene is None:
        row["build"] = built.missing
        return row
    row["build"] = []
    oracle, why = _oracle(problem)
    row["oracle"] = why or "ok"
    symbolic = SymbolicOracle(built.scene.goal)
    for seed in seeds:
        t0 = time.perf_counter()
        try:
            res = run_episode(built.scene, seed)
        except Exception as exc:  # a crash of the sim on one seed is a result, not the end
            row["seeds"][seed] = {"goal": False, "oracle": None, "error": f"crash: {exc}"}
            continue
        goal = symbolic.check(res.states).verdict == "pass"
        verdict = None
        failed = None
        if oracle is not None:
            try:
                rep = check_trace(oracle, res.states)
                verdict = rep.verdict == "pass"
                failed = None if verdict else rep.failed_step
            except EvaluationError as exc:  # names what the sim's world state lacks
                verdict, failed = False, exc.message
        row["seeds"][seed] = {"goal": goal, "oracle": verdict, "failed_step": failed,
                              "error": res.error, "wall_s": round(time.perf_counter() - t0, 1)}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=None,
                    help="LIBERO's bddl_files folder (default: $LIBERO_BDDL_ROOT)")
    ap.add_argument("--suites", nargs="+",
                    default=["libero_goal", "libero_spatial", "libero_object"])
    ap.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--task", default=None, help="only tasks whose name contains this")
    ap.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = ap.parse_args()
    root = find_libero_root(args.root)
    if root is None:
        print("LIBERO's bddl_files not found (pass --root or set LIBERO_BDDL_ROOT): "
              "nothing measured")
        return
    files = [str(p) for s in args.suites for p in sorted((root / s).glob("*.bddl"))
             if args.task is None or args.task in p.stem]
    if not files:
        sys.exit(f"no .bddl files under {root} for {args.suites}")
    seeds = list(range(args.seeds))
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []

    def done(row: dict[str, Any]) -> None:
        # one line per task as it finishes (a long run shows progress, a killed one keeps it)
        rows.append(row)
        v = row["seeds"].values()
        what = "not built" if row["build"] else \
            f"goal {sum(x['goal'] for x in v)}/{len(v)} oracle {sum(bool(x['oracle']) for x in v)}"
        print(f"[{len(rows)}/{len(files)}] {row['suite']} {row['task']}: {what}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")

    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for fut in as_completed([pool.submit(run_task, f, seeds) for f in files]):
                done(fut.result())
    else:
        for f in files:
            done(run_task(f, seeds))
    order = {f: i for i, f in enumerate(files)}
    rows.sort(key=lambda r: order[str(root / r["suite"] / (r["task"] + ".bddl"))])
    wall = time.perf_counter() - t0
    per_task = []
    for r in rows:
        if r["build"]:
            per_task.append([r["suite"], r["task"][:60], "not built", "",
                             "; ".join(r["build"])[:110]])
            continue
        s = r["seeds"].values()
        goal = sum(v["goal"] for v in s)
        orc = sum(bool(v["oracle"]) for v in s)
        errs = Counter((v.get("error") or (f"oracle: {v['failed_step']}"
                                            if v["oracle"] is False else "")) for v in s)
        note = "; ".join(f"{k} x{n}" for k, n in errs.items() if k)
        if r["oracle"] != "ok":
            note = f"{r['oracle'][:60]}; {note}"
        per_task.append([r["suite"], r["task"][:60], f"{goal}/{len(s)}", f"{orc}/{len(s)}",
                         note[:110]])
    print_table("per task", ["suite", "task", "goal", "oracle", "notes"], per_task)
    suites = []
    for s in args.suites:
        rs = [r for r in rows if r["suite"] == s]
        built = [r for r in rs if not r["build"]]
        n = sum(len(r["seeds"]) for r in built)
        goal = sum(v["goal"] for r in built for v in r["seeds"].values())
        both = sum(v["goal"] and bool(v["oracle"]) for r in built for v in r["seeds"].values())
        suites.append([s, f"{len(built)}/{len(rs)}", f"{goal}/{len(rs) * len(seeds)}",
                       f"{both}/{len(rs) * len(seeds)}", str(n)])
    print_table("per suite", ["suite", "built", "goal passes", "goal+oracle passes", "runs"],
                suites)
    built = [r for r in rows if not r["build"]]
    runs = [v for r in built for v in r["seeds"].values()]
    goal = sum(bool(v["goal"]) for v in runs)
    both = sum(bool(v["goal"] and v["oracle"]) for v in runs)
    headline("Simulation and control", f"LIBERO's BDDL tasks in the embedded sim "
             f"({', '.join(args.suites)}; seeds 0–{args.seeds - 1}): tasks built / the scripted "
             "expert's runs reaching the BDDL goal",
             f"{len(built)}/{len(rows)} / {goal}/{len(runs)}", "report")
    headline("Oracle generation", "generated fine-grained oracle (offline) passing on the "
             f"expert's runs in LIBERO's BDDL tasks that reach the goal ({', '.join(args.suites)})",
             f"{both}/{goal}", "report")
    missing = Counter(m.split("'")[1] for r in rows for m in r["build"]
                      if m.startswith("category '"))
    if missing:
        print("categories not built:",
              ", ".join(f"{k} ({n} tasks)" for k, n in missing.most_common()))
    print(f"wall {wall:.0f} s (niced, on a shared 2-core machine)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
