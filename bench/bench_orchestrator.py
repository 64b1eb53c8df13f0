"""Orchestrated LIBERO-10 episodes with one VLA fault each (issue #16's figures).

Every scene x seed gets one fault, the kinds spread over the episodes (wrong_object, drop,
stall, wrong_place in turn; a kind the scene's task cannot have gives way to the next), and
every system runs the same episodes with the offline decider:
`vla_only` without a monitor (the policy alone), `vla_only` + oracle, `full` + oracle,
`full` + gt, `tools_only` + oracle, and `full` + oracle with the oracle and its monitor fed
by the perception-based world-state estimate (`--estimated-seeds`). Reported per system:
task success, recovery (faulted episodes whose fault really broke something, i.e. a
ground-truth failure spell, that still ended in success), ground-truth spells recovered,
the monitor's reaction time (world event -> arm halted, p50/p95, over failures followed by
a halt; and per failure kind, split into detection, interrupt and stop), and the K.2
failure classes (`orchestrator.failures`).

Run: `python bench/bench_orchestrator.py [--seeds 5] [--workers 2] [--system NAME ...]
[--estimated-seeds N] [--json OUT]` (`make bench` runs 1 seed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from report import headline, print_table

SYSTEMS: dict[str, tuple[str, str, str]] = {  # name: (mode, monitor, world)
    "vla_only/none": ("vla_only", "none", "physics"),
    "vla_only/oracle": ("vla_only", "oracle", "physics"),
    "full/oracle": ("full", "oracle", "physics"),
    "full/gt": ("full", "gt", "physics"),
    "tools_only/oracle": ("tools_only", "oracle", "physics"),
    # the oracle and its monitor fed by the perception-based estimate, as on a real FR3
    "full/oracle-estimated": ("full", "oracle", "estimated"),
}
KINDS = ("wrong_object", "drop", "stall", "wrong_place")


def fault_for(scene, index: int) -> str:
    """The episode's fault: KINDS[index % 4], or the next kind the task can have."""
    from mango.errors import InputError
    from mango.sim.faults import FaultInjector, parse_fault

    picks = [k + 1 for k, s in enumerate(scene.expert) if s.skill == "pick_place"]
    for j in range(len(KINDS)):
        kind = KINDS[(index + j) % len(KINDS)]
        cands = {"drop": ["drop@0.5"], "stall": ["stall@5"]}.get(kind,
                                                                [f"{kind}@{k}" for k in picks])
        for spec in cands:
            try:
                FaultInjector(scene, parse_fault(spec))
                return spec
            except InputError:
                continue
    raise RuntimeError(f"no fault fits {scene.name}")


def episode(job: tuple[str, str, int, str]) -> dict:
    system, scene_name, seed, fault = job
    from mango.orchestrator.config import OrchestratorConfig
    from mango.orchestrator.loop import run_task
    from mango.sim.env import as_scene
    from mango.sim.faults import parse_fault

    mode, monitor, world = SYSTEMS[system]
    t0 = time.perf_counter()
    try:
        out = run_task(as_scene(scene_name), seed,
                       OrchestratorConfig(mode=mode, monitor=monitor, world=world),
                       parse_fault(fault))
    except Exception as exc:  # a crash is a row saying so, never a silent gap
        return {"system": system, "scene": scene_name, "seed": seed, "fault": fault,
                "error": f"{type(exc).__name__}: {exc}", "success": False, "spells": 0,
                "recovered_spells": 0, "reactions": [], "unhalted": 0, "k2": {},
                "wall_s": time.perf_counter() - t0}
    reactions = [r.to_json() for r in out.reactions]
    return {"system": system, "scene": scene_name, "seed": seed, "fault": fault,
            "success": out.success, "spells": out.world["failures"],
            "recovered_spells": out.world["recovered"], "reactions": reactions,
            "unhalted": sum(1 for r in reactions if r["total_ms"] is None),
            "decisions": len(out.decisions), "robot_s": out.t_end,
            "aborted": out.aborted, "wall_s": time.perf_counter() - t0,
            "k2": out.failure_classes,
            "rules": [d["rule"] for d in out.decisions if d["phase"] == "recovery"]}


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--system", action="append", default=None, choices=list(SYSTEMS))
    ap.add_argument("--scene", action="append", default=None)
    ap.add_argument("--json", type=Path, default=None, help="write every episode's row here")
    ap.add_argument("--estimated-seeds", type=int, default=None,
                    help="run full/oracle-estimated on this many seeds (default: only when "
                         "named with --system, then on --seeds)")
    ap.add_argument("--report", type=Path, nargs="+", default=None,
                    help="only print the tables of rows an earlier --json wrote")
    args = ap.parse_args()

    from mango.sim.env import as_scene
    from mango.sim.scene import list_scenes, load_scene

    scenes = ([as_scene(s) for s in args.scene] if args.scene
              else [load_scene(p) for p in list_scenes() if p.stem.startswith("libero10_")])
    # the estimated world renders two cameras and finds markers every control period (~50x
    # an episode's cost): it runs when asked for by name or with --estimated-seeds
    systems = args.system or [s for s in SYSTEMS if not s.endswith("-estimated")
                              or args.estimated_seeds is not None]
    # a scene's faults follow its place among LIBERO-10, so a run of some scenes gives them
    # the faults the whole run does
    order = [p.stem for p in list_scenes() if p.stem.startswith("libero10_")]
    jobs = []
    for i, sc in enumerate(scenes):
        i = order.index(sc.name) if sc.name in order else i
        for seed in range(args.start, args.start + args.seeds):
            fault = fault_for(sc, i + seed)
            jobs += [(s, sc.name, seed, fault) for s in systems
                     if not (s.endswith("-estimated") and args.estimated_seeds is not None
                             and seed >= args.start + args.estimated_seeds)]
    jobs.sort(key=lambda j: j[2])  # seed by seed: a run cut short still covers every scene
    t0 = time.perf_counter()
    rows = []
    if args.report:  # tables from earlier runs' rows (a long run may be cut short)
        rows = [json.loads(ln) for f in args.report for ln in f.read_text().splitlines()
                if ln.strip()]
        names = list(dict.fromkeys(r["system"] for r in rows))
        systems = [s for s in systems if s in names] if args.system else names
        scenes = sorted({r["scene"] for r in rows})
        args.seeds = len({r["seed"] for r in rows})
    else:
        out = args.json.open("w") if args.json else None
        with ProcessPoolExecutor(max_workers=args.workers) as pool:
            for r in pool.map(episode, jobs):  # each row written as it comes
                rows.append(r)
                if out is not None:
                    out.write(json.dumps(r) + "\n")
                    out.flush()
        if out is not None:
            out.close()
    wall = time.perf_counter() - t0
    table = []
    for s in systems:
        mine = [r for r in rows if r["system"] == s]
        broke = [r for r in mine if r["spells"] > 0]
        reactions = [x["total_ms"] / 1000.0 for r in mine for x in r["reactions"]
                     if x["total_ms"] is not None]
        spells = sum(r["spells"] for r in mine)
        table.append((
            s,
            f"{sum(r['success'] for r in mine)}/{len(mine)}",
            f"{sum(r['success'] for r in broke)}/{len(broke)}",
            f"{sum(r['recovered_spells'] for r in mine)}/{spells}",
            f"{_pct(reactions, 0.5) * 1000:.0f}" if reactions else "-",
            f"{_pct(reactions, 0.95) * 1000:.0f}" if reactions else "-",
            str(sum(r["unhalted"] for r in mine)),
            str(sum(1 for r in mine if r.get("error"))),
        ))
    kinds = sorted({r["fault"].split("@")[0] for r in rows})
    print_table(f"bench_orchestrator ({len(scenes)} scenes x {args.seeds} seeds, one fault each "
                f"({', '.join(kinds)}), offline decider; {wall:.0f} s)",
                ("system", "success", "recovered", "spells", "halt p50 ms", "halt p95 ms",
                 "no halt", "errors"), table)
    print("recovered: episodes whose fault broke something (a ground-truth failure) that "
          "still succeeded; spells: ground-truth failure spells recovered; halt: world event "
          "-> hand at rest; no halt: failures never followed by a halt")
    per_kind = []
    for s in systems:
        cells = [s]
        for k in kinds:
            mine = [r for r in rows if r["system"] == s and r["fault"].startswith(k)]
            cells.append(f"{sum(r['success'] for r in mine)}/{len(mine)}")
        per_kind.append(cells)
    print_table("success per fault kind", ("system", *kinds), per_kind)
    from mango.orchestrator.failures import K2_CLASSES

    print_table("K.2 failure classes against ground truth (occurrences)",
                ("system", *(c.replace("_", " ") for c in K2_CLASSES)),
                [[s, *(str(sum(r["k2"].get(c, 0) for r in rows if r["system"] == s))
                       for c in K2_CLASSES)] for s in systems])
    lag_rows = []
    for s in systems:
        for k in sorted({x["kind"] for r in rows if r["system"] == s for x in r["reactions"]}):
            xs = [x for r in rows if r["system"] == s for x in r["reactions"] if x["kind"] == k]

            def p50(key: str, xs: list = xs) -> str:
                v = [x[key] for x in xs if x[key] is not None]
                return f"{_pct(v, 0.5):.0f}" if v else "-"

            lag_rows.append((s, k, str(len(xs)), p50("detection_ms"), p50("interrupt_ms"),
                             p50("stop_ms"), p50("total_ms"),
                             str(sum(1 for x in xs if x["total_ms"] is None))))
    print_table("reaction by failure kind (p50 ms): detection = event -> monitor signal, "
                "interrupt = signal -> tool stopped, stop = -> hand < 0.01 m/s",
                ("system", "event", "n", "detection", "interrupt", "stop", "total", "no halt"),
                lag_rows)
    print(f"mean wall per episode {statistics.mean(r['wall_s'] for r in rows):.1f} s")
    _headlines(rows, systems, len(scenes))


def _seeds(seeds: list[int]) -> str:
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]}"


LABELS = {"vla_only/none": "`vla_only` no monitor (the policy alone)",
          "vla_only/oracle": "`vla_only` + oracle", "full/oracle": "`full` + oracle",
          "full/gt": "`full` + gt", "tools_only/oracle": "`tools_only` + oracle"}


def _headlines(rows: list[dict], systems: list[str], n_scenes: int) -> None:
    """The Benchmarks page's Orchestration figures, from these episodes."""
    def mine(s: str) -> list[dict]:
        return [r for r in rows if r["system"] == s]

    def halts(rs: list[dict]) -> list[float]:
        return [x["total_ms"] for r in rs for x in r["reactions"] if x["total_ms"] is not None]

    def k2(s: str) -> str:
        from mango.orchestrator.failures import K2_CLASSES

        counts = {c: sum(r["k2"].get(c, 0) for r in mine(s)) for c in K2_CLASSES}
        return ", ".join(f"{c.replace('_', ' ').replace(' qa', ' QA')} {n}"
                         for c, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n) or "none"

    shown = [s for s in LABELS if s in systems and mine(s)]
    seeds = sorted({r["seed"] for r in rows})
    if not seeds:
        return
    where = (f"LIBERO-10{'' if n_scenes == 10 else f' ({n_scenes} of 10 scenes)'} × "
             f"{_seeds(seeds)}")
    if shown:
        kinds = sorted({r["fault"].split("@")[0] for r in rows})
        headline("Orchestration", f"orchestrated {where}, one VLA fault each "
                 f"({', '.join(kinds)}), offline decider: task success — "
                 + " / ".join(LABELS[s] for s in shown),
                 " / ".join(f"{sum(r['success'] for r in mine(s))}/{len(mine(s))}"
                            for s in shown), "report")
        cells = []
        for s in shown:
            broke = [r for r in mine(s) if r["spells"] > 0]
            ok = sum(r["success"] for r in broke)
            cells.append(f"{ok}/{len(broke)}" + (f" ({ok / len(broke):.0%})".replace("%", " %")
                                                 if s == "full/oracle" and broke else ""))
        headline("Orchestration", "… recovered: faulted episodes whose fault broke something "
                 "(a ground-truth failure spell) that still succeeded, same order",
                 " / ".join(cells), "`full` + oracle ≥ 80 %")
    if "full/oracle" in shown and "full/gt" in shown:
        def p50_p95(s: str) -> str:
            xs = halts(mine(s))
            return f"{_pct(xs, 0.5):.0f} / {_pct(xs, 0.95):.0f} ms" if xs else "no halt"

        headline("Orchestration", "… failure → arm halted (world event → hand below 1 cm/s, "
                 "p50 / p95): oracle monitor (`full`) / gt monitor",
                 f"{p50_p95('full/oracle')} / {p50_p95('full/gt')}", "p50 ≤ 100 ms")
    if "full/oracle" in shown and "vla_only/none" in shown:
        headline("Orchestration", "… K.2 failure classes (`orchestrator.failures`): `full` + "
                 "oracle / the policy alone", f"{k2('full/oracle')} / {k2('vla_only/none')}",
                 "report")
    est = mine("full/oracle-estimated")
    if est:
        same = {(r["scene"], r["seed"]) for r in est}
        fed = [r for r in mine("full/oracle") if (r["scene"], r["seed"]) in same]
        kinds = sorted({x["kind"] for r in est for x in r["reactions"]})
        per_kind = ", ".join(
            f"{k} {_pct(xs, 0.5):.0f}" for k in kinds
            if (xs := [x["total_ms"] for r in est for x in r["reactions"]
                       if x["kind"] == k and x["total_ms"] is not None]))
        value = f"{sum(r['success'] for r in est)}/{len(est)} succeed"
        if fed:
            value += (f" (physics-fed, same episodes: {sum(r['success'] for r in fed)}/"
                      f"{len(fed)})")
        if halts(est):
            value += f"; halt p50 {_pct(halts(est), 0.5):.0f} ms ({per_kind})"
        est_seeds, n = sorted({r["seed"] for r in est}), len({r["scene"] for r in est})
        lead = "… " if shown else "orchestrated LIBERO-10, one VLA fault each: "
        headline("Orchestration", f"{lead}`full` + oracle fed by the estimated world (markers "
                 f"on the front and wrist cameras; {n} scene{'s' * (n != 1)}, "
                 f"{_seeds(est_seeds)})", value, "report")


if __name__ == "__main__":
    main()
