"""The scripted expert on LIBERO itself (issue #34): LIBERO's own `check_success()` after each
episode, per suite, over init states (`get_task_init_states`), and whether our `libero_*`
predicates' verdict on the last world state (all goal atoms, symbolic) equals it.

Each episode is `mango sim run --scene libero/SUITE/TASK --seed K`'s
(`mango.sim.libero.episode.run_libero_episode`): the expert's 7-D OSC actions at 20 Hz, up to
LeRobot's step limit per suite plus 10 settling steps. Needs `.venv-libero`
(`make libero-venv`). `--out FILE` keeps one JSON line per episode.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from report import headline, print_table

from mango.sim.libero import LiberoClient, LiberoScene
from mango.sim.libero.episode import run_libero_episode

SUITES = ("libero_goal", "libero_spatial", "libero_object", "libero_10")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--suites", nargs="*", default=list(SUITES),
                    choices=[*SUITES, "libero_90"])
    ap.add_argument("--inits", nargs="*", type=int, default=[0, 1, 2, 3, 4],
                    help="LIBERO init-state indices per task")
    ap.add_argument("--tasks", nargs="*", type=int, default=None,
                    help="task indices (default: every task of the suite)")
    ap.add_argument("--out", type=Path, default=None, help="one JSON line per episode")
    args = ap.parse_args()

    rows, failures = [], []
    total = total_ok = total_agree = 0
    t0 = time.monotonic()
    out = args.out.open("w") if args.out else None
    with LiberoClient() as client:
        for suite in args.suites:
            tasks = [t["index"] for t in client.tasks(suite)]
            if args.tasks is not None:
                tasks = [t for t in tasks if t in args.tasks]
            n = ok = agree = 0
            for index in tasks:
                for init in args.inits:
                    start = time.monotonic()
                    ep = run_libero_episode(client, LiberoScene(suite, index), init)
                    lab = ep.labels
                    n += 1
                    ok += ep.libero_success
                    agree += ep.symbolic_success == ep.libero_success
                    record = {"suite": suite, "task": index, "init": init,
                              "libero_success": ep.libero_success,
                              "symbolic_success": ep.symbolic_success, "steps": lab["steps"],
                              "first_success_step": lab["libero_first_success_step"],
                              "expert_error": lab["expert_error"],
                              "wall_s": round(time.monotonic() - start, 1)}
                    if out:
                        out.write(json.dumps(record) + "\n")
                        out.flush()
                    if not ep.libero_success:
                        failures.append([f"{suite}/{index}", str(init), ep.task.language,
                                         lab["expert_error"] or "the expert finished"])
                    print(f"{suite}/{index} init {init}: LIBERO {ep.libero_success}, ours "
                          f"{ep.symbolic_success}, {lab['steps']} steps, "
                          f"{record['wall_s']} s, {lab['expert_error'] or ''}",
                          file=sys.stderr, flush=True)
            rows.append([suite, str(len(tasks)), str(n), f"{ok}/{n}", f"{ok / max(n, 1):.2f}",
                         f"{agree}/{n}"])
            total, total_ok, total_agree = total + n, total_ok + ok, total_agree + agree
    if out:
        out.close()
    inits = ",".join(map(str, args.inits))
    print_table(
        f"Scripted expert on LIBERO itself: LIBERO's check_success (init states {inits}; "
        f"{time.monotonic() - t0:.0f} s)",
        ["suite", "tasks", "episodes", "check_success", "rate", "symbolic verdict = LIBERO"],
        [*rows, ["all", "", str(total), f"{total_ok}/{total}",
                 f"{total_ok / max(total, 1):.2f}", f"{total_agree}/{total}"]],
    )
    print_table("Episodes without LIBERO's success", ["task", "init", "instruction", "why"],
                failures or [["none", "", "", ""]])
    headline("Simulation and control", "LIBERO expert success (check_success, "
             f"{'/'.join(args.suites)} x init states {inits})",
             f"{total_ok}/{total} ({total_ok / max(total, 1):.2f})", ">= 0.90")
    headline("Oracle", "LIBERO symbolic verdict = check_success per expert episode",
             f"{total_agree}/{total}", f"{total}/{total}")


if __name__ == "__main__":
    main()
