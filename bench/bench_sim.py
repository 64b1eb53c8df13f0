"""Benchmark of the embedded sim: real-time factor with and without cameras, IK solves/s.

Run: `python bench/bench_sim.py` (or `make bench`). Prints a small table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from report import headline, print_table


def _rtf(scene: str, seconds: float, cameras: tuple[str, ...], hz: float, seg: bool) -> float:
    from mango.sim.env import SimEnv
    from mango.sim.expert.policy import ExpertPolicy

    env = SimEnv(scene, seed=0, cameras=cameras, image_size=(224, 224))
    policy = ExpertPolicy(env.scene)
    for cam in cameras:  # GL context creation is a one-off cost, not per-frame
        env.render(cam)
    state = env.world_state()
    next_frame = 0.0
    t0 = time.perf_counter()
    while state.t < seconds:
        for row in policy.act(state, env.joint_positions()):
            env.step(row)
            if cameras and env.time + 1e-9 >= next_frame:
                for cam in cameras:
                    env.render(cam, seg=seg)
                next_frame += 1.0 / hz
        state = env.world_state()
    wall = time.perf_counter() - t0
    env.close()
    return state.t / wall


def _ik_rate(n: int) -> tuple[float, float, float]:
    import mujoco

    from mango.sim.env import SimEnv

    env = SimEnv("soup_sauce_basket", seed=0, cameras=())
    ik = env.ik_solver()
    rng = np.random.default_rng(0)
    data = mujoco.MjData(env.model)
    targets = []
    for _ in range(n):
        q = rng.uniform(ik.lower + 0.1, ik.upper - 0.1)
        data.qpos[env.built.arm_qpos] = q
        mujoco.mj_kinematics(env.model, data)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[env.built.hand_site])
        targets.append((q, data.site_xpos[env.built.hand_site].copy(), quat))
    home = env.joint_positions()
    t0 = time.perf_counter()
    ok = sum(ik.solve(p, quat, seed=home).ok for _, p, quat in targets)
    cold = n / (time.perf_counter() - t0)
    # tracking: a nearby seed, as when following a trajectory
    t0 = time.perf_counter()
    for q, p, quat in targets:
        ik.solve(p, quat, seed=q + rng.normal(0, 0.02, 7))
    warm = n / (time.perf_counter() - t0)
    return cold, warm, ok / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per run")
    ap.add_argument("--ik", type=int, default=200, help="IK problems")
    args = ap.parse_args()

    rows = []
    scene = "soup_sauce_basket"
    rtf0 = _rtf(scene, args.seconds, (), 10, False)
    rows.append(("real-time factor, no cameras (expert running)", f"{rtf0:.1f}x", ">= 1x"))
    rtf2 = _rtf(scene, args.seconds, ("front", "wrist"), 10, False)
    rows.append(("real-time factor, 2 cameras 224x224 RGB+depth @10 Hz", f"{rtf2:.2f}x", ">= 1x"))
    rtf3 = _rtf(scene, args.seconds, ("front", "wrist"), 10, True)
    rows.append(("real-time factor, 2 cameras 224x224 RGB+depth+seg @10 Hz", f"{rtf3:.2f}x", ""))
    cold, warm, solved = _ik_rate(args.ik)
    rows.append(("IK solves/s, random pose from home seed", f"{cold:.0f}/s",
                 f"solved {solved:.0%}"))
    rows.append(("IK solves/s, nearby seed (trajectory tracking)", f"{warm:.0f}/s", ""))
    print_table("bench_sim (MuJoCo Franka, scene libero10_soup_sauce_basket)",
                ("measure", "value", "note"), rows)
    headline("Simulation and control", f"sim real-time factor (FR3 model, {scene} with the "
             "expert), two 224×224 cameras RGB+depth at 10 Hz / none",
             f"{rtf2:.1f}× / {rtf0:.1f}×", "≥ 1×")
    headline("Simulation and control", f"IK solves/s on the sim's MuJoCo arm, {args.ik} random "
             "poses, home / nearby seed",
             f"{cold:,.0f} / {warm:,.0f} ({solved:.0%} solved)".replace("%", " %"))


if __name__ == "__main__":
    main()
