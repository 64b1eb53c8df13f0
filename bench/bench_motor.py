"""Mode motor (MotorMind's roles, offline rules, oracle monitor) over LIBERO-10 scenes: task
success per scene, and with `--fault drop@0.5` the drops recovered (ground-truth spells).

Run: `python bench/bench_motor.py [--seeds 5] [--scene NAME ...] [--fault drop@0.5]
[--json OUT]` (the README's mode-motor figures: all ten scenes, then the three basket scenes
with the drop).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from report import headline, print_table

SCENES = ("soup_sauce_basket", "cheese_butter_basket", "soup_cheese_basket", "mugs_plates",
          "mug_pudding_plate", "book_caddy", "two_moka_stove", "stove_moka", "bowl_drawer",
          "mug_microwave")


def episode(scene: str, seed: int, fault: str | None) -> dict[str, object]:
    from mango.orchestrator.config import OrchestratorConfig
    from mango.orchestrator.motor import run_motor_task
    from mango.sim.env import as_scene
    from mango.sim.faults import parse_fault

    out = run_motor_task(as_scene(scene), seed, OrchestratorConfig(mode="motor",
                                                                   monitor="oracle"),
                         parse_fault(fault) if fault else None).to_json()
    return {k: out[k] for k in ("scene", "seed", "fault", "success", "recovered",
                                "unrecovered", "robot_s", "wall_s")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--scene", action="append", help="a LIBERO-10 scene (default: all ten)")
    ap.add_argument("--fault", default=None, help="KIND@WHEN (motor: drop only)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    rows, results = [], []
    t0 = time.perf_counter()
    for scene in args.scene or SCENES:
        eps = [episode(scene, seed, args.fault) for seed in range(args.seeds)]
        results += eps
        rows.append((scene, f"{sum(bool(e['success']) for e in eps)}/{len(eps)}",
                     str(sum(int(e["recovered"]) for e in eps)),  # type: ignore[call-overload]
                     str(sum(int(e["unrecovered"]) for e in eps)),  # type: ignore[call-overload]
                     f"{sorted(float(e['robot_s']) for e in eps)[len(eps) // 2]:.1f}"))  # type: ignore[arg-type]
    print_table(f"mode motor (offline, oracle monitor), fault {args.fault or 'none'}, "
                f"{time.perf_counter() - t0:.0f} s", ["scene", "success", "recovered",
                                                      "unrecovered", "robot s (median)"], rows)
    scenes = args.scene or SCENES
    where = "LIBERO-10" if len(scenes) == len(SCENES) else f"LIBERO-10 ({len(scenes)} of 10 scenes)"
    headline("Orchestration", f"mode motor (MotorMind's roles, offline rules, oracle monitor), "
             f"{where} × {args.seeds} seed{'s' * (args.seeds != 1)}, fault "
             f"{args.fault or 'none'}: task success",
             f"{sum(bool(e['success']) for e in results)}/{len(results)}", "report")
    if args.fault:
        headline("Orchestration", "… ground-truth failure spells recovered / not recovered",
                 f"{sum(int(e['recovered']) for e in results)} / "  # type: ignore[call-overload]
                 f"{sum(int(e['unrecovered']) for e in results)}",  # type: ignore[call-overload]
                 "report")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
