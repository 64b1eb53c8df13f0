"""The `libfranka` backend against franky-sim's FR3 through libfranka itself (franky-control
bundles libfranka 0.21; franky-sim serves libfranka's TCP/UDP protocol with MuJoCo behind it):
no stand-in of ours between the controller and the wire protocol a real FR3 speaks.

Every figure is the robot's own reported state, read by the backend's state stream."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest
from franky_sim import (
    DEFAULT_HAND_INITIAL_WIDTH,
    DEFAULT_INITIAL_JOINT_POS,
    FRANKA_HAND_MAX_WIDTH,
)

from mango.control import ArmController, ChunkGoal, GoalStatus, JointStateReader, load_robot
from mango.control.backends.franky_arm import FrankyArm, FrankyOptions, libfranka_backend
from mango.control.backends.libfranka import LibfrankaBackend, LibfrankaSettings, StateStream
from mango.control.goals import GoalRun
from mango.control.motion import MotionCommand
from mango.policy.kinematics import make_kinematics
from mango.sim.franky_server import free_loopback_address, spawn

# franky-sim's 1 kHz loop is Python and libfranka's is real-time: alone on the machine (the
# serial pass), as a real FR3's client is alone on its real-time kernel
pytestmark = [pytest.mark.serial, pytest.mark.slow]

ROBOT = load_robot("fr3")
KIN = make_kinematics(ROBOT)
RATE = 15.0  # Hz, the policy rate chunks come at
PERIOD = 0.01  # s, the control node's period
LEAD = 3  # points a chunk sent mid-motion starts ahead of the one due (0.2 s at 15 Hz)


@dataclass
class Rig:
    address: str
    server: subprocess.Popen[str]
    arm: FrankyArm
    stream: StateStream
    backend: LibfrankaBackend
    controller: ArmController
    reader: JointStateReader
    # (stamp: the robot's clock, offset onto time.time; q; dq) as the stream read them
    states: list[tuple[float, np.ndarray, np.ndarray]] = field(default_factory=list)

    def measured(self) -> np.ndarray:
        m = self.reader.measured()
        assert m is not None
        return m.q

    def chunk(self, deltas: np.ndarray, start: np.ndarray | None = None,
              widths: list[float] | None = None, late: float = 0.0) -> ChunkGoal:
        """Points at the policy rate, offsets `deltas` (n x 7) from `start` (default: now),
        the first one `late` s sooner than a period from now."""
        q0 = self.measured() if start is None else start
        n = len(deltas)
        return ChunkGoal(ROBOT.joint_names, [(k + 1) / RATE - late for k in range(n)],
                         [list(q0 + d) for d in deltas], widths or [])

    def run(self, goal: ChunkGoal, run: GoalRun | None = None):
        slot = self.controller.goals
        run = slot.begin(object()) if run is None else run
        try:
            return self.controller.run_chunk(run, goal, lambda _i, _e: None)
        finally:
            slot.end(run)

    def start(self, goal: ChunkGoal, key: str) -> tuple[threading.Thread, dict[str, object]]:
        """The goal running in a thread under `key` (what a cancel names); its result lands
        in the dict under "out" once the thread ends."""
        run = self.controller.goals.begin(key)
        results: dict[str, object] = {}
        thread = threading.Thread(target=lambda: results.update(out=self.run(goal, run)))
        thread.start()
        return thread, results

    def at_rest(self, since: float | None = None, timeout: float = 5.0) -> float:
        """Wait until the arm is at rest; the robot time it came to rest at. At rest: no joint
        moved more than REST_TOL over REST_WINDOW s of the robot's clock (velocities alone
        would not do: the simulated wrist chatters at +-0.08 rad/s over +-0.1 mrad)."""
        deadline = time.monotonic() + timeout
        since = self.states[-1][0] if since is None else since
        while time.monotonic() < deadline:
            t = rest_time(self.states, since)
            if t is not None:
                return t
            time.sleep(0.02)
        raise AssertionError("the arm did not come to rest")


REST_TOL = 0.0005  # rad
REST_WINDOW = 0.1  # s


def rest_time(states: list[tuple[float, np.ndarray, np.ndarray]], since: float = 0.0
              ) -> float | None:
    """The first robot time after `since` from which the arm stayed within REST_TOL for
    REST_WINDOW s, if the states read so far show one."""
    window: list[tuple[float, np.ndarray]] = []
    for stamp, q, _v in states:
        if stamp < since:
            continue
        window.append((stamp, q))
        while window and np.max(np.abs(q - window[0][1])) > REST_TOL:
            window.pop(0)
        if window and stamp - window[0][0] >= REST_WINDOW:
            return window[0][0]
    return None


def _rig(address: str, server: subprocess.Popen[str]) -> Rig:
    states: list[tuple[float, np.ndarray, np.ndarray]] = []

    def publish(names, positions, velocities, stamp) -> None:
        states.append((stamp, np.asarray(positions[:7]), np.asarray(velocities[:7])))

    backend = libfranka_backend(ROBOT, PERIOD, address, LibfrankaSettings(dynamics_factor=1.0),
                                FrankyOptions(realtime=False), publish=publish)
    controller = ArmController(ROBOT, KIN, backend, PERIOD)
    rig = Rig(address, server, backend.arm, backend.stream, backend, controller, backend.reader,
              states)
    assert controller.wait_measured(10.0) is not None, backend.stream.error
    return rig


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    address = free_loopback_address()
    server = spawn(address)
    r = _rig(address, server)
    yield r
    r.stream.close()
    server.kill()
    server.wait()


def _smooth(n: int, amplitude: np.ndarray) -> np.ndarray:
    """Offsets rising smoothly from 0 to `amplitude` over n points (a policy's reach)."""
    s = np.arange(1, n + 1) / n
    return np.outer(0.5 - 0.5 * np.cos(np.pi * s), amplitude)


def test_a_chunk_is_followed_and_its_tracking_error_reported(rig: Rig) -> None:
    rig.at_rest()
    amplitude = np.array([0.15, -0.1, 0.0, 0.12, 0.0, 0.1, 0.0])
    goal = rig.chunk(_smooth(15, amplitude))
    out = rig.run(goal)
    assert out.status == GoalStatus.SUCCEEDED, out.message
    assert out.points_executed == 15
    rig.at_rest()
    end_error = np.max(np.abs(rig.measured() - np.asarray(goal.positions[-1])))
    print(f"\nchunk tracking: max error at the points {out.max_error * 1e3:.1f} mrad, "
          f"at rest {end_error * 1e3:.2f} mrad from the last point")
    assert end_error < 0.003
    assert 0 < out.max_error < 0.1  # measured at each point's time, while moving


def test_two_chunks_back_to_back_do_not_stop_the_arm(rig: Rig) -> None:
    rig.at_rest()
    q0 = rig.measured()
    step = np.zeros(7)
    step[0] = 0.02  # rad per point: 0.3 rad/s on joint 1
    first = rig.chunk(np.outer(np.arange(1, 16), step), q0)
    t_start = rig.states[-1][0]
    thread, results = rig.start(first, "a")
    # switch once the arm cruises (by its own report: a loaded machine slows the simulated
    # robot's clock, and a first chunk still starting would have nothing to keep going)
    deadline = time.monotonic() + 10.0  # a hang guard
    while abs(rig.states[-1][2][0]) < 0.25:
        assert time.monotonic() < deadline, "the first chunk never reached its speed"
        time.sleep(0.005)
    # the next chunk goes on with the first one's path, timed as the first chunk timed it by
    # the robot's clock: what a policy asked again mid-chunk answers, aligned to its
    # observation's time (as asynchronous inference aligns it). It starts LEAD points ahead of
    # the point due now: the goal reaches the robot some time after this line (validation,
    # the first goal handing the arm over; more on a loaded machine), and a first point the
    # arm has already passed would turn it back
    t_switch = rig.states[-1][0]
    elapsed = t_switch - t_start
    due = int(elapsed * RATE) + LEAD
    second = rig.chunk(np.outer(np.arange(due + 1, due + 16), step), q0,
                       late=elapsed - due / RATE)
    b = rig.run(second)
    thread.join(5.0)
    a = results["out"]
    assert a.status == GoalStatus.PREEMPTED and b.status == GoalStatus.SUCCEEDED, b.message
    # joint 1 from the switch to well into the second chunk (1 s long at 0.3 rad/s)
    speeds = [abs(v[0]) for t, _q, v in rig.states if t_switch <= t <= t_switch + 0.6]
    print(f"\nback to back: the measured joint 1 at least {min(speeds):.3f} rad/s across the "
          f"switch (0.3 rad/s asked)")
    # a stop between the chunks (the first one held, then the second started from rest) dips
    # to 0.002-0.011 rad/s; taken over, the arm keeps above 0.19. Both 1 kHz loops (franky-
    # sim's, libfranka's) must get the CPU on time - on a real FR3 libfranka insists on a
    # real-time kernel - which is why this module runs alone (serial): two busy processes on
    # two cores starved them into dips of 0.02-0.07 rad/s
    assert len(speeds) > 50 and min(speeds) > 0.1


def test_a_cancel_mid_chunk_brings_the_arm_to_rest(rig: Rig) -> None:
    rig.at_rest()
    step = np.zeros(7)
    step[3] = -0.02
    goal = rig.chunk(np.outer(np.arange(1, 31), step))
    thread, results = rig.start(goal, "c")
    time.sleep(0.6)
    t_cancel = rig.states[-1][0]  # the robot's time, as the stream last read it
    rig.controller.goals.cancel("c", at_boundary=False)
    thread.join(5.0)
    assert results["out"].status == GoalStatus.CANCELLED
    rest = rig.at_rest(since=t_cancel) - t_cancel
    q_rest = rig.measured()
    time.sleep(0.3)
    drift = np.max(np.abs(rig.measured() - q_rest))
    print(f"\ncancel: the measured arm at rest (within {REST_TOL * 1e3:g} mrad for "
          f"{REST_WINDOW:g} s) {rest * 1e3:.0f} ms (robot clock) after the cancel, "
          f"then still within {drift * 1e3:.2f} mrad")
    assert drift < 0.002
    assert np.max(np.abs(rig.measured() - np.asarray(goal.positions[-1]))) > 0.1  # stopped


def test_a_50_mm_move_measures_50_mm(rig: Rig) -> None:
    rig.at_rest()
    before = KIN.fk(rig.measured())[0]
    slot = rig.controller.goals
    run = slot.begin("m")
    try:
        out = rig.controller.run_motion(
            run, lambda: [MotionCommand("move", (0.0, 1.0, 0.0), 50.0)], lambda _i, _p: None)
    finally:
        slot.end(run)
    assert out.status == GoalStatus.SUCCEEDED, out.message
    moved = out.poses[0][0] - before
    print(f"\nmove 50 mm along y: measured {moved * 1e3} mm")
    assert abs(moved[1] - 0.050) < 0.001 and np.max(np.abs(moved[[0, 2]])) < 0.001


def test_a_target_beyond_the_joint_limits_is_refused_before_anything_moves(
        rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    rig.at_rest()
    sent: list[object] = []
    monkeypatch.setattr(rig.arm, "follow", lambda *a: sent.append(a))
    q = rig.measured().copy()
    q[6] = ROBOT.upper[6] + 0.05
    out = rig.run(ChunkGoal(ROBOT.joint_names, [2.0], [list(q)], []))
    assert out.status == GoalStatus.REJECTED and "limit" in out.message, out.message
    assert sent == []


def test_the_hand_moves_and_a_grasp_on_nothing_is_a_miss(rig: Rig) -> None:
    rig.at_rest()
    hold = np.zeros((8, 7))
    out = rig.run(rig.chunk(hold, widths=[0.06] * 8))
    assert out.status == GoalStatus.SUCCEEDED, out.message
    time.sleep(0.2)
    width = rig.reader.measured().width
    print(f"\nhand: opened to {width:.4f} m (0.06 asked)")
    assert abs(width - 0.06) < 0.002
    out = rig.run(rig.chunk(hold, widths=list(np.linspace(0.05, 0.0, 8))))
    assert out.status == GoalStatus.FAILED and "missed" in out.message, out.message
    out = rig.run(rig.chunk(hold, widths=[0.08] * 8))  # open again for the next test
    assert out.status == GoalStatus.SUCCEEDED, out.message


def test_a_killed_robot_fails_the_goal_within_a_second_and_a_restarted_one_is_found() -> None:
    address = free_loopback_address()
    server = spawn(address)
    rig = _rig(address, server)
    try:
        step = np.zeros(7)
        step[0] = 0.01
        goal = rig.chunk(np.outer(np.arange(1, 46), step))
        thread, results = rig.start(goal, "k")
        time.sleep(0.5)
        server.kill()
        t_kill = time.monotonic()
        thread.join(10.0)
        failed_after = time.monotonic() - t_kill
        out = results["out"]
        print(f"\nrobot killed mid-goal: FAILED after {failed_after * 1e3:.0f} ms: {out.message}")
        assert out.status == GoalStatus.FAILED and "connection is lost" in out.message
        assert failed_after < 1.0
        # the same robot comes back: the stream reconnects, the next goal runs
        server.wait()
        # a goal now is refused: the robot's state stopped coming
        refused = rig.run(rig.chunk(_smooth(8, step * 5)))
        assert refused.status == GoalStatus.FAILED and "connection is lost" in refused.message
        server = spawn(address)
        restarted = time.monotonic()
        deadline = restarted + 10.0
        while (m := rig.reader.measured()) is None or m.t < restarted:
            assert time.monotonic() < deadline, rig.stream.error
            time.sleep(0.05)
        out = rig.run(rig.chunk(_smooth(8, step * 5)))
        assert out.status == GoalStatus.SUCCEEDED, out.message
    finally:
        rig.stream.close()
        server.kill()
        server.wait()


def _doctor(address: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mango.cli.main", "doctor", "--robot", address],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "COLUMNS": "250"})  # one table row per check


def test_the_doctor_reads_the_robot_through_libfranka() -> None:
    address = free_loopback_address()
    server = spawn(address)  # its own robot: libfranka serves one client at a time
    try:
        proc = _doctor(address)
    finally:
        server.kill()
        server.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = " ".join(proc.stdout.split())
    assert "libfranka connection │ ok │ robot mode Idle" in out
    assert "robot errors │ ok │ none" in out
    # franky-sim's start pose (its DEFAULT_INITIAL_JOINT_POS), as libfranka reads it
    q = ", ".join(f"{v:.3f}" for v in DEFAULT_INITIAL_JOINT_POS)
    assert f"joints [{q}] rad" in out.replace("-0.000", "0.000")


def test_the_doctor_says_when_nothing_answers() -> None:
    proc = _doctor(address := free_loopback_address())
    assert proc.returncode == 1
    assert f"nothing answers at {address}:1337" in " ".join(proc.stderr.split())


def test_the_hand_is_homed_on_connecting_when_asked() -> None:
    address = free_loopback_address()
    server = spawn(address)
    try:
        arm = FrankyArm(address, FrankyOptions(realtime=False, home_hand=True))
        arm.reconnect()  # opens fully, measures its stroke, comes back
        assert abs(arm.hand_stroke() - FRANKA_HAND_MAX_WIDTH) < 0.002
        assert abs(arm.hand_width() - DEFAULT_HAND_INITIAL_WIDTH) < 0.002
    finally:
        server.kill()
        server.wait()


def test_a_robot_on_loopback_needs_no_real_time_kernel() -> None:
    # libfranka refuses `realtime` on a kernel without PREEMPT_RT; a loopback address is a
    # simulated FR3 on this machine, which the fr3_libfranka stack drives as it is
    address = free_loopback_address()
    server = spawn(address)
    try:
        arm = FrankyArm(address, FrankyOptions(realtime=True))
        arm.reconnect()
        assert arm.read(with_width=False).q.shape == (7,)
    finally:
        server.kill()
        server.wait()
