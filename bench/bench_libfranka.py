"""The `libfranka` control backend against franky-sim's FR3 through libfranka (issue #37): no
stand-in between the controller and the protocol a real FR3 speaks. Every figure is the
robot's reported state (its clock, its joints), read by the backend's state stream:
- command -> first motion: from handing libfranka a chunk to the first state whose joints have
  moved 0.5 mrad (the robot's clock; and wall time);
- tracking at 15 Hz chunks: the joint error at each point's time (max over joints), p50/p99,
  and at rest after each chunk;
- cancel -> at rest: from the cancel to the arm staying within 0.5 mrad for 0.1 s; and to
  the commanded joints (libfranka's q_d) staying so: what the backend and libfranka's stop
  take, without the simulated arm's settling;
- the state stream's rate (the robot's clock).
franky-sim's arm trails its commands through its joint impedance (~0.1 s): the tracking and
rest figures are the simulator's as much as the backend's. Figures go to
out/bench/libfranka.json.

Run: python bench/bench_libfranka.py [--chunks 10] [--cancels 5]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

import numpy as np
from report import headline, print_table

from mango.control import ArmController, ChunkGoal, load_robot
from mango.control.backends.franky_arm import FrankyOptions, libfranka_backend
from mango.control.backends.libfranka import LibfrankaSettings
from mango.policy.kinematics import make_kinematics
from mango.sim.franky_server import free_loopback_address, spawn

REPO = Path(__file__).resolve().parents[1]
ROBOT = load_robot("fr3")
RATE, PERIOD, REST_TOL, REST_WINDOW = 15.0, 0.01, 0.0005, 0.1


class Bench:
    def __init__(self, address: str) -> None:
        # (wall, robot stamp, q, q_d: the commanded joints, libfranka's own)
        self.states: list[tuple[float, float, np.ndarray, np.ndarray | None]] = []

        def publish(_names, positions, _velocities, stamp) -> None:
            latest = self.backend.stream.latest if hasattr(self, "backend") else None
            q_d = None if latest is None or latest.q_d is None else np.asarray(latest.q_d)
            self.states.append((time.monotonic(), stamp, np.asarray(positions[:7]), q_d))

        self.backend = libfranka_backend(ROBOT, PERIOD, address,
                                         LibfrankaSettings(dynamics_factor=1.0),
                                         FrankyOptions(realtime=False), publish=publish)
        self.controller = ArmController(ROBOT, make_kinematics(ROBOT), self.backend, PERIOD)
        assert self.controller.wait_measured(10.0) is not None, self.backend.stream.error

    def q(self) -> np.ndarray:
        return self.backend.reader.measured().q

    def rest(self, since: float, commanded: bool = False) -> float:
        """The robot time from which the arm (or what it is commanded) stayed within REST_TOL
        for REST_WINDOW s."""
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            window: list[tuple[float, np.ndarray]] = []
            for _w, stamp, measured, q_d in list(self.states):
                q = q_d if commanded else measured
                if stamp < since or q is None:
                    continue
                window.append((stamp, q))
                while np.max(np.abs(q - window[0][1])) > REST_TOL:
                    window.pop(0)
                if stamp - window[0][0] >= REST_WINDOW:
                    return window[0][0]
            time.sleep(0.02)
        raise RuntimeError("the arm did not come to rest")

    def chunk(self, rng: np.random.Generator, n: int = 15) -> ChunkGoal:
        """A policy's reach: smooth, 0.05-0.15 rad on each of four joints, back and forth."""
        amplitude = rng.uniform(0.05, 0.15, 7) * rng.choice([-1, 1], 7)
        amplitude[[2, 4]] = 0.0
        s = np.arange(1, n + 1) / n
        q0 = self.q()
        return ChunkGoal(ROBOT.joint_names, list(s * n / RATE),
                         [list(q0 + (0.5 - 0.5 * np.cos(np.pi * k)) * amplitude) for k in s], [])

    def run(self, goal: ChunkGoal, errors: list[float] | None = None, key: object = None):
        slot = self.controller.goals
        run = slot.begin(key if key is not None else object())
        try:
            return self.controller.run_chunk(
                run, goal, lambda _i, e: errors.append(e) if errors is not None else None)
        finally:
            slot.end(run)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--cancels", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    address = free_loopback_address()
    server = spawn(address)
    try:
        b = Bench(address)
        latency_robot, latency_wall, errors, at_rest, rests, stops = [], [], [], [], [], []
        for _ in range(args.chunks):
            b.rest(b.states[-1][1])
            goal = b.chunk(rng)
            n0, q0, t_wall, t_robot = len(b.states), b.q(), time.monotonic(), b.states[-1][1]
            out = b.run(goal, errors)
            assert out.status.name == "SUCCEEDED", out.message
            moved = next(s for s in b.states[n0:] if np.max(np.abs(s[2] - q0)) > REST_TOL)
            latency_wall.append(moved[0] - t_wall)
            latency_robot.append(moved[1] - t_robot)
            at_rest.append(float(np.max(np.abs(b.q() - np.asarray(goal.positions[-1])))))
        for k in range(args.cancels):
            b.rest(b.states[-1][1])
            step = np.zeros(7)
            step[3 if k % 2 else 0] = 0.02 * (1 if k % 4 < 2 else -1)
            q0 = b.q()
            goal = ChunkGoal(ROBOT.joint_names, [(i + 1) / RATE for i in range(30)],
                             [list(q0 + step * (i + 1)) for i in range(30)], [])
            key = f"cancel{k}"
            worker = threading.Thread(target=b.run, args=(goal, None, key))
            worker.start()
            time.sleep(0.6)
            t_cancel = b.states[-1][1]
            b.controller.goals.cancel(key, at_boundary=False)
            worker.join(10.0)
            rests.append(b.rest(t_cancel) - t_cancel)
            stops.append(b.rest(t_cancel, commanded=True) - t_cancel)
        stamps = np.asarray([s[1] for s in b.states[-400:]])
        rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
        b.backend.stream.close()
    finally:
        server.kill()
        server.wait()

    def ms(v: float) -> str:
        return f"{v * 1e3:.0f} ms"

    e = np.asarray(errors)
    figures = {
        "command_to_motion_robot_s": {"p50": float(np.median(latency_robot)),
                                      "max": float(np.max(latency_robot))},
        "command_to_motion_wall_s": {"p50": float(np.median(latency_wall)),
                                     "max": float(np.max(latency_wall))},
        "tracking_error_rad": {"p50": float(np.percentile(e, 50)),
                               "p99": float(np.percentile(e, 99)), "points": len(e)},
        "at_rest_error_rad": {"max": float(np.max(at_rest))},
        "cancel_to_rest_robot_s": {"p50": float(np.median(rests)), "max": float(np.max(rests))},
        "cancel_to_commanded_rest_robot_s": {"p50": float(np.median(stops)),
                                             "max": float(np.max(stops))},
        "state_rate_hz": rate,
    }
    print_table("libfranka backend on franky-sim (the robot's reported state)",
                ["figure", "value"], [
                    ["command -> first motion (robot clock)",
                     f"p50 {ms(figures['command_to_motion_robot_s']['p50'])}, "
                     f"max {ms(figures['command_to_motion_robot_s']['max'])}"],
                    ["command -> first motion (wall)",
                     f"p50 {ms(figures['command_to_motion_wall_s']['p50'])}, "
                     f"max {ms(figures['command_to_motion_wall_s']['max'])}"],
                    [f"tracking error at 15 Hz chunks ({len(e)} points)",
                     f"p50 {np.percentile(e, 50) * 1e3:.1f} mrad, "
                     f"p99 {np.percentile(e, 99) * 1e3:.1f} mrad"],
                    ["after each chunk, at rest", f"max {max(at_rest) * 1e3:.2f} mrad"],
                    ["cancel -> at rest (robot clock)",
                     f"p50 {ms(figures['cancel_to_rest_robot_s']['p50'])}, "
                     f"max {ms(figures['cancel_to_rest_robot_s']['max'])}"],
                    ["cancel -> commanded joints at rest (q_d, robot clock)",
                     f"p50 {ms(figures['cancel_to_commanded_rest_robot_s']['p50'])}, "
                     f"max {ms(figures['cancel_to_commanded_rest_robot_s']['max'])}"],
                    ["joint states (robot clock)", f"{rate:.0f} Hz"]])
    headline("Simulation and control", "libfranka backend on franky-sim's FR3: tracking error "
             "at 15 Hz chunks, p50 / p99 (at rest after each chunk, max)",
             f"{np.percentile(e, 50) * 1e3:.1f} / {np.percentile(e, 99) * 1e3:.1f} mrad "
             f"({max(at_rest) * 1e3:.1f} mrad)")
    headline("Simulation and control", "libfranka backend on franky-sim: cancel → arm at rest "
             "(0.5 mrad for 0.1 s), robot clock, p50",
             ms(figures["cancel_to_rest_robot_s"]["p50"]), "100 ms (issue #37)")
    headline("Simulation and control", "libfranka backend on franky-sim: cancel → commanded "
             "joints at rest (libfranka's q_d, 0.5 mrad for 0.1 s), robot clock, p50",
             ms(figures["cancel_to_commanded_rest_robot_s"]["p50"]), "100 ms (issue #37)")
    headline("Simulation and control", "libfranka backend on franky-sim: command → first "
             "motion (p50, robot clock), joint states rate",
             f"{ms(figures['command_to_motion_robot_s']['p50'])}; {rate:.0f} Hz",
             "joint states ≥ 100 Hz")
    out = REPO / "out" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "libfranka.json").write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
