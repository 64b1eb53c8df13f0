"""The sim backend against a stand-in simulator at its joint-command port: targets follow the
simulator's time, a stop holds at once (a preemption hands its last target to the next goal),
stalled or restarted joint states end the goal."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from support.arm import FakeSim

from mango.control import GoalRun, JointStateReader, JointTrajectory, load_robot
from mango.control.backends import SimBackend
from mango.control.goals import PREEMPTED

ROBOT = load_robot("fr3")
PERIOD = 0.005


def _ramp(delta: float, duration: float, q0: np.ndarray, n: int = 10,
          widths: bool = False) -> JointTrajectory:
    times = np.linspace(duration / n, duration, n)
    pos = np.array([q0 + np.eye(7)[0] * delta * (k + 1) / n for k in range(n)])
    return JointTrajectory(ROBOT.joint_names, times, pos,
                           np.linspace(0.08, 0.02, n) if widths else None)


def _rig(**kw: float) -> tuple[FakeSim, SimBackend]:
    reader = JointStateReader(ROBOT.joint_names)
    sim = FakeSim(ROBOT, reader, period=PERIOD, sim_step=kw.get("sim_step", PERIOD))
    return sim, SimBackend(ROBOT, PERIOD, reader, sim.send)


def test_streams_the_trajectory_and_reports_every_point() -> None:
    sim, backend = _rig()
    with sim.running_thread():
        q0 = sim.q.copy()
        seen: list[int] = []
        out = backend.execute(_ramp(0.1, 0.2, q0, widths=True), GoalRun(None),
                              lambda i, _e: seen.append(i))
    assert out.ok and not out.stopped
    assert out.points_executed == 10 and seen == list(range(10))
    assert out.max_error < 0.05
    names, last = sim.commands[-1]
    assert names == [*ROBOT.joint_names, "gripper"]
    assert last[0] == pytest.approx(q0[0] + 0.1) and last[7] == pytest.approx(0.02)


def test_a_slow_simulator_sees_the_trajectory_at_its_own_speed() -> None:
    sim, backend = _rig(sim_step=PERIOD / 2)
    with sim.running_thread():
        t0 = time.monotonic()
        out = backend.execute(_ramp(0.1, 0.3, sim.q.copy()), GoalRun(None), lambda *_: None)
        wall = time.monotonic() - t0
    assert out.ok
    assert wall > 0.5  # 0.3 s of simulator time is 0.6 s of wall time


def test_stop_holds_the_measured_position_with_the_reason() -> None:
    sim, backend = _rig()
    run = GoalRun(None)
    with sim.running_thread():
        threading.Timer(0.1, run.halt, args=("cancelled",)).start()
        out = backend.execute(_ramp(0.2, 2.0, sim.q.copy(), n=30), run, lambda *_: None)
    assert out.stopped and not out.ok and out.message == "cancelled"
    assert 0 < out.points_executed < 30
    names, hold = sim.commands[-1]
    assert names == list(ROBOT.joint_names) and len(hold) == 7


def test_a_held_target_is_kept_by_another_hold() -> None:
    """A halt after a stop or after a finished trajectory keeps the target the arm holds (as
    franka_ros2's trajectory controller does): re-targeting to the measured position would
    step the arm by the servo's lag each time (a ROS run's wrist moved 5 mrad on the halt
    that followed a cancel)."""
    sim, backend = _rig()
    run = GoalRun(None)
    with sim.running_thread():
        threading.Timer(0.1, run.halt, args=("cancelled",)).start()
        backend.execute(_ramp(0.2, 2.0, sim.q.copy(), n=30), run, lambda *_: None)
        n = len(sim.commands)
        time.sleep(5 * PERIOD)
        backend.hold()
        assert len(sim.commands) == n  # the stop's hold stays the target
        out = backend.execute(_ramp(0.05, 0.1, sim.q.copy()), GoalRun(None), lambda *_: None)
        assert out.ok
        n = len(sim.commands)
        backend.hold()
        assert len(sim.commands) == n  # so does a finished trajectory's last point
    fresh_sim, fresh = _rig()
    fresh_sim.publish()
    fresh.hold()  # nothing held yet: the measured position becomes the target
    assert fresh_sim.commands[-1][0] == list(ROBOT.joint_names)


def test_stalled_joint_states_end_the_goal() -> None:
    sim, backend = _rig()
    with sim.running_thread():
        def stall() -> None:
            sim.running = False

        threading.Timer(0.1, stall).start()
        out = backend.execute(_ramp(0.1, 4.0, sim.q.copy(), n=40), GoalRun(None),
                              lambda *_: None)
    assert not out.ok and not out.stopped
    assert out.message == "no joint state for 2 s: the simulation stopped"


def test_simulator_time_going_back_ends_the_goal() -> None:
    sim, backend = _rig()
    with sim.running_thread():
        def reset() -> None:
            sim.t -= 50.0

        threading.Timer(0.1, reset).start()
        out = backend.execute(_ramp(0.1, 2.0, sim.q.copy(), n=20), GoalRun(None),
                              lambda *_: None)
    assert not out.ok
    assert "the simulation restarted" in out.message


def test_a_reset_just_before_the_goal_is_not_a_restart_during_it() -> None:
    # The reader still holds a state from before a scene reset when the goal starts (the
    # reset's first joint state is on its way): the goal starts from the first new state.
    sim, backend = _rig()
    with sim.running_thread():
        sim.running = False  # the simulator pauses for its reset
        time.sleep(5 * PERIOD)
        sim.t = 100.0
        sim.publish()  # the last state from before the reset
        sim.t = 0.0

        def resume() -> None:
            sim.running = True

        threading.Timer(0.05, resume).start()
        out = backend.execute(_ramp(0.1, 0.3, sim.q.copy(), n=5), GoalRun(None),
                              lambda *_: None)
    assert out.ok, out.message


def test_a_closed_gripper_stays_commanded_closed_on_an_object() -> None:
    # Fingers closed on a can measure the can's width; ramping the next chunk's gripper from
    # that measured width would command them open to it, and the squeeze would let go.
    sim, backend = _rig()
    with sim.running_thread():
        q0 = sim.q.copy()
        n = 5
        closing = JointTrajectory(ROBOT.joint_names, np.linspace(0.02, 0.1, n),
                                  np.tile(q0, (n, 1)), np.linspace(0.06, 0.0, n))
        assert backend.execute(closing, GoalRun(None), lambda *_: None).ok
        sim.width = 0.05  # what the fingers measure around the object
        time.sleep(5 * PERIOD)
        assert backend.measured() is not None
        assert backend.measured().width == pytest.approx(0.05)
        k = len(sim.commands)
        holding = JointTrajectory(ROBOT.joint_names, np.linspace(0.02, 0.1, n),
                                  np.tile(q0, (n, 1)), np.zeros(n))
        assert backend.execute(holding, GoalRun(None), lambda *_: None).ok
    widths = [pos[7] for names, pos in sim.commands[k:] if len(names) == 8]
    assert widths and max(widths) == 0.0


def test_a_preempting_trajectory_takes_over_without_a_stop() -> None:
    """An asynchronous policy run replaces the tail of its queue with a new goal: the arm
    must not stop at the boundary (no hold at the measured position, no gap while the next
    goal is checked: the old trajectory goes on until the new one takes over from its last
    target)."""
    sim, backend = _rig()
    run = GoalRun(None)
    with sim.running_thread():
        q0 = sim.q.copy()
        threading.Timer(0.1, run.halt, args=(PREEMPTED,)).start()
        first = backend.execute(_ramp(0.2, 1.0, q0, n=20, widths=True), run, lambda *_: None)
        stopped = len(sim.commands)
        time.sleep(0.03)  # the control node checking the next goal
        coasted = len(sim.commands) - stopped
        base = sim.q.copy()
        second = backend.execute(_ramp(0.05, 0.2, base, n=4, widths=True), GoalRun(None),
                                 lambda *_: None)
    assert first.stopped and first.message == PREEMPTED
    assert second.ok
    names = [c[0] for c in sim.commands]
    assert all(n == [*ROBOT.joint_names, "gripper"] for n in names), "a hold was sent"
    q = np.array([c[1][:7] for c in sim.commands])
    assert coasted > 0  # commands kept coming while the next goal was on its way
    assert np.all(np.diff(q[:, 0]) >= -1e-12)  # joint 1 only ever moves forward
    np.testing.assert_allclose(q[:, 1:], np.tile(q0[1:], (len(q), 1)))
    assert q[-1, 0] == pytest.approx(base[0] + 0.05)


def test_a_hold_ends_a_preempted_trajectorys_motion_at_once() -> None:
    """A halt between a preemption and the next goal: the arm stops where it was sent."""
    sim, backend = _rig()
    run = GoalRun(None)
    with sim.running_thread():
        threading.Timer(0.1, run.halt, args=(PREEMPTED,)).start()
        backend.execute(_ramp(0.2, 1.0, sim.q.copy(), n=20), run, lambda *_: None)
        backend.hold()
        n = len(sim.commands)
        time.sleep(0.05)
        assert len(sim.commands) == n
