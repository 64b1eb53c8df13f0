"""Grasp and place primitives over the LIBERO-10 scenes (issue #15's figures).

For every object the scene's expert plan moves, per seed: grasp it knowing the destination,
as `mango primitives pick-place` does (perception-grounded, top-down or from the side where
the scene needs it; measured: width + finger contacts), then place it at the plan's
destination phrased "in/on the <container/surface>" (measured: `in`/`on` on a fresh
detection after release, and on the physics); then, from a fresh reset, the same grasp and
"empty space next to <destination>"; and, from one reset, the plan's objects one after
another, each to its destination, as a LIBERO task asks ("put both the soup and the sauce
in the basket": the second goes where the first already is).
Also the grasp planning time (detection -> first chunk). Goals: grasp >= 90 %, in/on >= 85 %.

Run: `python bench/bench_primitives.py [--seeds 10] [--perception sim|tabletop]
[--scene S ...] [--sequence-only] [--json OUT]` (`make bench` runs 1 seed). Prints a table
per scene; `--json` keeps every run as it ends (a cut run keeps what it measured),
`--from-json A B` prints the table of saved runs (B's scene+seed rows replace A's: measured
again; seeds run in parts add up).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from report import headline, print_table


def _phrase(scene, eid: str) -> str:
    e = scene.entity(eid)
    return "the " + (e.description or eid.rsplit("_", 1)[0].replace("_", " "))


def _destination_entity(scene, target: str) -> str | None:
    region = next((r for r in scene.regions if r.id == target), None)
    parent = region.parent if region is not None else target
    return None if parent == scene.table.id else parent


def _cases(scene) -> list[tuple[str, str, str, str | None]]:
    """(object id, object phrase, relation, destination phrase or None)."""
    out = []
    for k in scene.expert:
        if k.skill != "pick_place" or k.obj is None or k.target is None:
            continue
        dest = _destination_entity(scene, k.target)
        out.append((k.obj, _phrase(scene, k.obj), k.relation,
                    None if dest is None else _phrase(scene, dest)))
    return out


def _sequence(env, backend, privileged: bool, seed: int) -> list[dict]:
    """The plan's objects one after another from one reset, as a LIBERO task asks ("put both
    the soup and the sauce in the basket"): the second goes where the first already is."""
    from mango.primitives import SimPrimitives, parse_destination

    env.reset(seed)
    prims = SimPrimitives(env, backend, privileged=privileged)
    rows = []
    for obj, phrase, rel, dest in _cases(env.scene):
        if dest is None:
            continue
        req = parse_destination(f"{rel} {dest}")
        g = prims.grasp(phrase, req)
        row = {"scene": env.scene.name, "seed": seed, "object": obj, "phrase": phrase,
               "kind": "sequence", "destination": req.text, "grasp": g.status,
               "grasp_ok": g.grasped and g.entity_id == obj, "grasp_message": g.message}
        if g.grasped:
            p = prims.place(req, phrase)
            row.update(place=p.status, satisfied=p.satisfied, truth=p.satisfied_truth,
                       place_message=p.message)
        elif prims.held is not None:
            break  # something else is in the hand: the rest cannot be tried
        rows.append(row)
    return rows


def _plan_time(prims, phrase: str) -> float | None:
    """Seconds from a detection to the grasp's first chunk (planning only, nothing moves):
    the approach chosen (`grasp_options`: top-down or side) and its first leg."""
    import numpy as np

    from mango.errors import UnreachableError
    from mango.primitives.grasps import GraspScene, grasp_options
    from mango.primitives.motion import to_chunks
    from mango.sim.expert.arm import ExpertError
    from mango.sim.expert.motions import down_quat

    found, _ = prims.detect([phrase])
    det = found.get(phrase)
    if det is None:
        return None
    ex = prims.executor
    world = ex.ports.measure().world
    t0 = time.perf_counter()
    try:
        plan = grasp_options(det, GraspScene((), ex.known_fixtures(world), ex.area.base,
                                              prims.last_frame))[0]
    except ValueError:
        return None  # refused (wider than the hand): nothing to time
    arm = prims._arm(prims.width_cmd)
    if plan.approach == "top":
        goal, quat = plan.pre_grasp, down_quat(arm.grip_yaw(plan.opening_yaw))
    else:
        goal, quat = plan.pre_grasp + np.array([0.0, 0.0, 0.09]), arm.pose()[1]
    rows: list[np.ndarray] = []
    try:
        for part in arm.travel_to(goal, quat, width=plan.width):
            rows += part
            break  # the first leg gives the first chunk
    except (ExpertError, UnreachableError):
        return None  # no first chunk to time: the grasp itself says why
    to_chunks(rows)[0]
    return time.perf_counter() - t0


def _table(runs: list[dict], scene_names: list[str]) -> list[tuple[str, ...]]:
    def rate(rows: list[dict], key: str) -> str:
        ok = sum(bool(r.get(key)) for r in rows)
        return f"{ok}/{len(rows)}" if rows else "-"

    def line(name: str, mine: list[dict]) -> tuple[str, ...]:
        rel = [r for r in mine if r["kind"] == "rel"]
        nxt = [r for r in mine if r["kind"] == "next_to"]
        seq = [r for r in mine if r["kind"] == "sequence"]
        placed_rel = [r for r in rel if r["destination"]]
        return (name, rate(rel, "grasp_ok"), rate(placed_rel, "satisfied"),
                rate(placed_rel, "truth"), rate(nxt, "satisfied"), rate(nxt, "truth"),
                rate(seq, "truth"))

    table = [line(n.removeprefix("libero10_"), [r for r in runs if r["scene"] == n])
             for n in scene_names]
    table.append(line("all", runs))
    return table


def _print(runs: list[dict], title: str) -> None:
    names = list(dict.fromkeys(r["scene"] for r in runs))
    plan = [r["plan_ms"] for r in runs if r.get("plan_ms") is not None]
    p50 = statistics.median(plan) if plan else float("nan")
    seeds = sorted({r["seed"] for r in runs})
    print_table(f"{title}, seeds {seeds[0] if seeds else '-'}..{seeds[-1] if seeds else '-'}; "
                f"grasp planning p50 {p50:.0f} ms, goal <= 200",
                ("scene", "grasp", "in/on perceived", "in/on truth", "next to perceived",
                 "next to truth", "in/on one after another, truth"), _table(runs, names))


def _headlines(runs: list[dict], perception: str) -> None:
    """The Benchmarks page's Primitives figures, from these runs."""
    if not runs:
        return

    def rate(rows: list[dict], key: str, share: bool = True) -> str:
        ok = sum(bool(r.get(key)) for r in rows)
        return f"{ok}/{len(rows)}" + (f" ({ok / len(rows):.0%})".replace("%", " %")
                                      if share else "")

    rel = [r for r in runs if r["kind"] == "rel"]
    placed = [r for r in rel if r["destination"]]
    nxt = [r for r in runs if r["kind"] == "next_to"]
    seq = [r for r in runs if r["kind"] == "sequence"]
    plan = [r["plan_ms"] for r in runs if r.get("plan_ms") is not None]
    scenes, seeds = {r["scene"] for r in runs}, sorted({r["seed"] for r in runs})
    where = (f"LIBERO-10{'' if len(scenes) == 10 else f' ({len(scenes)} of 10 scenes)'} × "
             f"{_seeds(seeds)}")
    if perception != "sim":
        if rel and placed and nxt and plan:
            headline("Primitives", f"primitives, `{perception}` perception, {where}: grasp of "
                     "the intended object / place perceived (physics) / empty space perceived "
                     "(physics); grasp planning p50",
                     f"{rate(rel, 'grasp_ok', False)} / {rate(placed, 'satisfied', False)} "
                     f"({rate(placed, 'truth', False)}) / {rate(nxt, 'satisfied', False)} "
                     f"({rate(nxt, 'truth', False)}); {statistics.median(plan):.0f} ms",
                     "report")
        return
    if rel:
        headline("Primitives", f"primitives, `sim` perception, {where}: grasp of every object "
                 "an expert plan moves", rate(rel, "grasp_ok"), "≥ 90 %")
    if placed:
        headline("Primitives", "… place in/on the plan's destination: perceived / physics",
                 f"{rate(placed, 'satisfied')} / {rate(placed, 'truth')}", "≥ 85 %")
    if seq:
        headline("Primitives", "… the plan's objects one after another from one reset, each "
                 "to its destination, physics", rate(seq, "truth"), "report")
    if nxt:
        headline("Primitives", '… place in "empty space next to <destination>": perceived / '
                 "physics", f"{rate(nxt, 'satisfied', False)} / {rate(nxt, 'truth', False)}",
                 "report")
    if plan:
        headline("Primitives", "… grasp planning, detection → approach chosen → first chunk "
                 "(p50)", f"{statistics.median(plan):.0f} ms", "≤ 200 ms")


def _seeds(seeds: list[int]) -> str:
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}–{seeds[-1]}"


def _load(paths: list[Path]) -> list[dict]:
    """Rows of saved runs; a later file's rows replace an earlier one's for the same scene
    and seed (measured again)."""
    runs: list[dict] = []
    for path in paths:
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        again = {(r["scene"], r["seed"]) for r in rows}
        runs = [r for r in runs if (r["scene"], r["seed"]) not in again] + rows
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--perception", default="sim")
    ap.add_argument("--scene", action="append", default=None)
    ap.add_argument("--no-empty", action="store_true", help="skip 'empty space next to X'")
    ap.add_argument("--sequence-only", action="store_true",
                    help="only the plan's objects one after another from one reset")
    ap.add_argument("--json", type=Path, default=None,
                    help="write every run's outcome here, one line each as it ends")
    ap.add_argument("--from-json", type=Path, nargs="+", default=None,
                    help="print the table of saved runs (later files replace scene+seed; "
                    "--perception as they were measured)")
    args = ap.parse_args()
    if args.from_json:
        runs = _load(args.from_json)
        _print(runs, f"bench_primitives (saved runs: "
               f"{', '.join(p.name for p in args.from_json)})")
        _headlines(runs, args.perception)
        return

    from mango.perception.base import PerceptionConfig
    from mango.perception.registry import backend_entry, make_backend
    from mango.primitives import SimPrimitives, parse_destination
    from mango.sim.env import SimEnv, as_scene
    from mango.sim.scene import list_scenes, load_scene

    scenes = ([as_scene(s) for s in args.scene] if args.scene
              else [load_scene(p) for p in list_scenes() if p.stem.startswith("libero10_")])
    entry = backend_entry(args.perception)
    runs: list[dict] = []
    out = args.json.open("w") if args.json else None
    t_start = time.perf_counter()
    for sc in scenes:
        env = SimEnv(sc, args.start, cameras=("front", "wrist"), image_size=(640, 480))
        be = make_backend(PerceptionConfig(backend=args.perception, scene=sc))
        try:
            for seed in range(args.start, args.start + args.seeds):
                for row in _sequence(env, be, entry.privileged, seed):
                    runs.append(row)
                    if out is not None:
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                for obj, phrase, rel, dest in [] if args.sequence_only else _cases(sc):
                    kinds = [("rel", f"{rel} {dest}" if dest else None)]
                    if not args.no_empty and dest:
                        kinds.append(("next_to", f"empty space next to {dest}"))
                    for kind, text in kinds:
                        env.reset(seed)
                        prims = SimPrimitives(env, be, privileged=entry.privileged)
                        t = _plan_time(prims, phrase) if kind == "rel" else None
                        req = parse_destination(text) if text is not None else None
                        g = prims.grasp(phrase, req)
                        row = {"scene": sc.name, "seed": seed, "object": obj, "phrase": phrase,
                               "kind": kind, "destination": text, "grasp": g.status,
                               "grasp_entity": g.entity_id, "grasp_ok": g.grasped and
                               g.entity_id == obj, "grasp_message": g.message,
                               "approach": g.approach,
                               "plan_ms": None if t is None else round(t * 1000, 2)}
                        if g.grasped and text is not None:
                            p = prims.place(req, phrase)
                            row.update(place=p.status, satisfied=p.satisfied,
                                       truth=p.satisfied_truth, place_message=p.message)
                        runs.append(row)
                        if out is not None:
                            out.write(json.dumps(row) + "\n")
                            out.flush()
        finally:
            be.close()
            env.close()
    if out is not None:
        out.close()
    wall = time.perf_counter() - t_start
    _print(runs, f"bench_primitives ({args.perception} perception; {wall:.0f} s)")
    _headlines(runs, args.perception)


if __name__ == "__main__":
    main()
