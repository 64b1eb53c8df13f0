"""The franka_ros2 backend's logic against a stand-in controller and gripper at its transport:
the goal it sends, when it moves or grasps, what each failure reads as, and a preemption that
replaces the trajectory instead of stopping the arm."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from support.arm import FakeFrankaTransport

from mango.control import GoalRun, JointStateReader, JointTrajectory, load_robot
from mango.control.backends import FrankaRos2Backend, FrankaSettings
from mango.control.backends.franka_ros2 import TrajectoryGoal
from mango.control.goals import PREEMPTED

ROBOT = load_robot("fr3")
SETTINGS = FrankaSettings("/fr3_arm_controller/follow_joint_trajectory", "/franka_gripper",
                          20.0, 0.1, 1.0)


def _rig(**kw: object) -> tuple[FakeFrankaTransport, FrankaRos2Backend]:
    reader = JointStateReader(ROBOT.joint_names)
    fake = FakeFrankaTransport(ROBOT, reader, **kw)  # type: ignore[arg-type]
    return fake, FrankaRos2Backend(ROBOT, 0.01, reader, fake, SETTINGS)


def _traj(q0: np.ndarray, deltas: list[float], widths: list[float] | None = None,
          rate: float = 15.0) -> JointTrajectory:
    times = np.arange(1, len(deltas) + 1) / rate
    pos = np.array([q0 + np.eye(7)[0] * d for d in deltas])
    return JointTrajectory(ROBOT.joint_names, times, pos,
                           None if widths is None else np.asarray(widths, float))


def test_trajectory_goal_fields() -> None:
    traj = _traj(np.asarray(ROBOT.home), [0.1, 0.2, 0.3], rate=2.0)
    goal = TrajectoryGoal.from_trajectory(traj)
    assert goal.joint_names == ROBOT.joint_names
    assert [(p.sec, p.nanosec) for p in goal.points] == [(0, 500_000_000), (1, 0),
                                                         (1, 500_000_000)]
    assert goal.points[2].positions[0] == pytest.approx(ROBOT.home[0] + 0.3)
    assert goal.goal_time_tolerance == (0, 500_000_000)


def test_goal_points_carry_velocities_and_accelerations() -> None:
    """ros2_controllers joint_trajectory_controller/doc/trajectory.rst: points with positions
    only are interpolated linearly, with velocities and accelerations quintically; the
    retimed trajectory's derivatives reach the goal's points."""
    fake, backend = _rig()
    traj = _traj(fake.q.copy(), [0.01, 0.02, 0.03])
    m = backend.measured()
    assert m is not None
    played = backend.prepare(traj, m)
    goal = TrajectoryGoal.from_trajectory(played)
    assert all(len(p.velocities) == 7 and len(p.accelerations) == 7 for p in goal.points)
    assert goal.points[-1].velocities == (0.0,) * 7
    assert goal.points[-1].accelerations == (0.0,) * 7
    assert goal.points[1].velocities[0] == pytest.approx(0.15, rel=0.2)  # 0.01 rad per 1/15 s
    out = backend.execute(played, GoalRun(None), lambda *_: None)
    assert out.ok, out.message
    assert fake.goals[-1].points[0].velocities == goal.points[0].velocities


def test_closing_grasps_opening_moves_unchanged_sends_nothing() -> None:
    fake, backend = _rig(object_width=0.03)
    q0 = fake.q.copy()
    out = backend.execute(_traj(q0, [0.02, 0.04, 0.06, 0.08], [0.08, 0.08, 0.02, 0.02]),
                          GoalRun(None), lambda *_: None)
    assert out.ok, out.message
    assert out.points_executed == 4 and out.max_error < 0.05
    (grasp,) = fake.gripper_goals
    assert (grasp.kind, grasp.width, grasp.force) == ("grasp", 0.02, 20.0)
    # franka_gripper config/franka_gripper_node.yaml: default_grasp_epsilon 0.005; the
    # window reaches up to where the fingers started (0.08)
    assert grasp.epsilon_inner == 0.005 and grasp.epsilon_outer == pytest.approx(0.065)
    assert grasp.window == pytest.approx((0.015, 0.085))
    fake.gripper_goals.clear()
    out = backend.execute(_traj(fake.q.copy(), [0.0, 0.0], [0.08, 0.08]), GoalRun(None),
                          lambda *_: None)
    assert out.ok, out.message
    assert [(g.kind, g.width, g.speed) for g in fake.gripper_goals] == [("move", 0.08, 0.1)]


def test_widths_still_due_when_the_arm_finishes_early_are_sent() -> None:
    """A controller may report the trajectory done before the gripper's points come due (it
    did under load): the widths still to come are sent, not dropped."""
    fake, backend = _rig(mode="instant")
    out = backend.execute(_traj(fake.q.copy(), [0.0, 0.0, 0.0], [0.08, 0.02, 0.02]),
                          GoalRun(None), lambda *_: None)
    assert out.ok, out.message
    assert [(g.kind, g.width) for g in fake.gripper_goals] == [("grasp", 0.02)]


@pytest.mark.parametrize(("mode", "message"), [
    ("path_error", "arm controller failed with PATH_TOLERANCE_VIOLATED: fr3_joint2 path error "
                   "0.21 > 0.1"),
    ("reject", "arm controller /fr3_arm_controller/follow_joint_trajectory rejected the "
               "trajectory"),
    ("absent", "arm controller /fr3_arm_controller/follow_joint_trajectory is not available"),
])
def test_controller_failures_read_clearly(mode: str, message: str) -> None:
    fake, backend = _rig(mode=mode)
    out = backend.execute(_traj(fake.q.copy(), [0.01, 0.02, 0.03]), GoalRun(None),
                          lambda *_: None)
    assert not out.ok and not out.stopped
    assert out.message == message


def test_a_closing_ramp_is_one_grasp_that_holds_what_it_meets() -> None:
    """Policies close towards 0 over a few points ("on whatever is there"): one grasp to the
    ramp's end, sent when it starts; an object anywhere on the way is held."""
    fake, backend = _rig(object_width=0.031)
    out = backend.execute(_traj(fake.q.copy(), [0.0] * 5, [0.06, 0.04, 0.02, 0.0, 0.0]),
                          GoalRun(None), lambda *_: None)
    assert out.ok, out.message
    assert [(g.kind, g.width) for g in fake.gripper_goals] == [("grasp", 0.0)]
    assert fake.width == pytest.approx(0.031)


def test_a_grasp_that_closes_on_nothing_is_reported_missed() -> None:
    fake, backend = _rig(object_width=None)
    out = backend.execute(_traj(fake.q.copy(), [0.0, 0.0], [0.0, 0.0]), GoalRun(None),
                          lambda *_: None)
    assert not out.ok
    assert out.message == ("gripper grasp to 0.000 m missed: the fingers closed to 0.000 m with "
                           "nothing between them")
    assert out.points_executed == 2


def test_gripper_plan_one_goal_per_run() -> None:
    _, backend = _rig()
    plan = backend.gripper_plan(np.array([0.08, 0.06, 0.03, 0.03, 0.05, 0.08, 0.08]), 0.08)
    assert [(k, c.kind, c.width) for k, c in plan] == [(1, "grasp", 0.03), (4, "move", 0.08)]
    # from an unknown width the first goal is a move
    assert [(k, c.kind) for k, c in backend.gripper_plan(np.array([0.0, 0.0]), None)] == [
        (0, "move")]


def test_stop_cancels_the_controller_goal() -> None:
    fake, backend = _rig(mode="hang")
    run = GoalRun(None)
    threading.Timer(0.2, run.halt, args=("cancelled",)).start()
    out = backend.execute(_traj(fake.q.copy(), [0.01, 0.02]), run, lambda *_: None)
    assert out.stopped and out.message == "cancelled"
    assert fake.cancels == 1
    backend.hold()  # nothing left to cancel
    assert fake.cancels == 1


def test_a_preempting_goal_replaces_the_trajectory_without_a_stop() -> None:
    """An asynchronous policy run replaces the tail of its queue: the controller's goal is
    not cancelled (which holds the arm) but replaced by the next trajectory."""
    fake, backend = _rig()
    run = GoalRun(None)
    threading.Timer(0.1, run.halt, args=(PREEMPTED,)).start()
    q0 = fake.q.copy()
    first = backend.execute(_traj(q0, [0.01 * k for k in range(1, 16)]), run, lambda *_: None)
    assert first.stopped and first.message == PREEMPTED
    second = backend.execute(_traj(fake.q.copy(), [0.01, 0.02, 0.03]), GoalRun(None),
                             lambda *_: None)
    assert second.ok
    assert fake.cancels == 0 and fake.replaced == 1 and len(fake.goals) == 2
    assert fake.q[0] == pytest.approx(q0[0] + 0.03, abs=0.011)


def test_a_preemption_nothing_replaces_is_cancelled() -> None:
    """The next goal was refused: the preempted trajectory must not run on to its end."""
    fake, backend = _rig(mode="hang")
    run = GoalRun(None)
    threading.Timer(0.1, run.halt, args=(PREEMPTED,)).start()
    out = backend.execute(_traj(fake.q.copy(), [0.01, 0.02]), run, lambda *_: None)
    assert out.stopped and fake.cancels == 0
    deadline = time.monotonic() + 5.0
    while fake.cancels == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.cancels == 1
