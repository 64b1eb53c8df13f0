"""Benchmark of the IK ladder on the real FR3's kinematics (`FR3Kinematics`, pure Python):
solve rate and time per solve on reachable random poses (FK of random joints).

Run: `python bench/bench_ik.py [--poses 1000]` (or `make bench`). Issue #15's goal: >= 99 %.
Two draws are reported: joints uniform within 0.1 rad of the limits (as bench_sim's MuJoCo
IK figure) and uniform over the whole range; the seed is the home pose, as for a first
solve, and a nearby seed, as when following a path. Times are CPU time per solve: the
machine is shared, and wall time would measure its load as much as the ladder.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from report import headline, print_table


def _run(n: int, margin: float, near: bool) -> tuple[float, float, float, float]:
    from mango.control import FR3Kinematics, load_robot

    robot = load_robot("fr3")
    kin = FR3Kinematics(robot)
    rng = np.random.default_rng(0)
    home = np.asarray(robot.home, float)
    times, ok, starts = [], 0, []
    for _ in range(n):
        q = rng.uniform(kin.lower + margin, kin.upper - margin)
        pos, rot = kin.pose_matrix(q)
        seed = q + rng.normal(0.0, 0.02, 7) if near else home
        t0 = time.process_time()
        sol = kin.ladder.solve(pos, rot, seed)
        times.append(time.process_time() - t0)
        ok += sol.ok
        starts.append(sol.starts)
    ms = np.asarray(times) * 1000
    return ok / n, float(np.median(ms)), float(np.mean(ms)), float(np.mean(starts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--poses", type=int, default=1000, help="random reachable poses per row")
    args = ap.parse_args()
    rows, runs = [], []
    for label, margin, near in (("home seed, joints 0.1 rad inside limits", 0.1, False),
                                ("home seed, joints anywhere in range", 0.0, False),
                                ("nearby seed (path following)", 0.1, True)):
        rate, p50, mean, starts = _run(args.poses, margin, near)
        runs.append((rate, p50, mean))
        rows.append((label, f"{rate:.1%}", f"{p50:.2f} ms", f"{mean:.2f} ms", f"{starts:.2f}"))
    print_table(f"bench_ik (IK ladder on FR3Kinematics, {args.poses} poses per row; goal >= 99 %)",
                ("poses", "solved", "p50 CPU / solve", "mean CPU / solve", "starts used"), rows)
    (inside, p50, mean), (anywhere, _, _) = runs[0], runs[1]
    headline("Simulation and control", f"IK ladder on the FR3's DH kinematics, {args.poses} "
             "reachable random poses, home seed: solved with joints 0.1 rad inside the limits / "
             "anywhere", f"{inside:.1%} / {anywhere:.1%}".replace("%", " %"), "≥ 99 %")
    headline("Simulation and control", "… CPU time per solve, p50 / mean (home seed, joints "
             "0.1 rad inside the limits)", f"{p50:.1f} / {mean:.1f} ms")


if __name__ == "__main__":
    main()
