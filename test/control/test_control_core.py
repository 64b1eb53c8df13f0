"""Control core without ROS: robot files, validation reasons, trajectories, motion planning."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mango.control import (
    FR3Kinematics,
    GoalRejected,
    MotionCommand,
    MotionPlanner,
    chunk_to_trajectory,
    load_robot,
    validate_trajectory,
)
from mango.errors import InputError
from mango.ik import LadderSettings
from mango.policy.kinematics import make_kinematics

FR3 = load_robot("fr3")
KIN = make_kinematics(FR3)


def test_fr3_datasheet_limits() -> None:
    assert FR3.joint_names == tuple(f"fr3_joint{i}" for i in range(1, 8))
    assert FR3.position_lower[3] == -3.0421 and FR3.position_upper[3] == -0.1518
    assert FR3.position_lower[5] == 0.5445 and FR3.position_upper[5] == 4.5169
    assert FR3.velocity_limits == (2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26)


def test_sim_arm_joint_ranges_are_the_fr3_robot_files() -> None:
    from mango.sim.build import build_robot
    from mango.sim.scene import load_scene, resolve_scene

    kin = build_robot(load_scene(resolve_scene("book_caddy")))
    ranges = [kin.model.jnt_range[kin.model.actuator_trnid[a, 0]] for a in kin.arm_actuators]
    assert np.allclose([r[0] for r in ranges], FR3.position_lower, atol=1e-4)
    assert np.allclose([r[1] for r in ranges], FR3.position_upper, atol=1e-4)


def test_fr3_kinematics_ready_pose_and_ik_round_trip() -> None:
    kin = FR3Kinematics(FR3)
    p, q = kin.fk(FR3.home)
    assert np.allclose(p, [0.3069, 0.0, 0.4869], atol=1e-3)  # gripper down in front of base
    assert abs(abs(q[1]) - 1.0) < 1e-6  # 180 deg about x
    target = p + np.array([0.05, -0.1, 0.08])
    sol = kin.ik(target, q, FR3.home)
    # the ladder's convergence tolerance (VoLo App. B.2: 5e-4 m)
    assert np.linalg.norm(kin.fk(sol)[0] - target) < LadderSettings().pos_tol


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: x\n", "joint_names"),
        ("name: x\njoint_names: [a,b,c,d,e,f,g]\nposition_lower: [0,0,0,0,0,0,0]\n"
         "position_upper: [1,1,1,1,1,1,1]\nvelocity_limits: [1,1,1,1,1,1,-1]\n"
         "home: [0,0,0,0,0,0,0]\nworkspace: {min: [0,0,0], max: [1,1,1]}\n",
         "velocity_limits[6]"),
    ],
)
def test_bad_robot_file_names_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_robot(path)
    assert err.value.file == str(path) and err.value.field == field


def test_unknown_robot_lists_known() -> None:
    with pytest.raises(InputError, match=r"known robots: fr3\)"):
        load_robot("ur5")


def _pts(n: int = 4, step: float = 0.01) -> np.ndarray:
    return np.array([np.asarray(FR3.home) + step * (k + 1) * np.array([1, 0, 0, 0, 0, 0, 0])
                     for k in range(n)])


def _times(n: int = 4, rate: float = 15.0) -> list[float]:
    return [(k + 1) / rate for k in range(n)]


def test_valid_goal_is_reordered_to_robot_order() -> None:
    names = list(reversed(FR3.joint_names))
    pts = _pts()[:, ::-1]
    traj = validate_trajectory(names, _times(), pts, [0.04] * 4, FR3, np.asarray(FR3.home),
                               KIN)
    assert traj.joint_names == FR3.joint_names
    assert np.allclose(traj.positions, _pts())


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"times": [0.1, 0.1, 0.2, 0.3]}, "strictly increasing"),
        ({"times": [0.0, 0.1, 0.2, 0.3]}, "strictly increasing"),
        ({"gripper": [0.04, 0.2, 0.04, 0.04]}, "point 1: gripper width 0.2000 m outside"),
        ({"gripper": [0.04]}, "one value per point"),
        ({"gripper": [0.04, math.inf, 0.04, 0.04]}, "point 1: gripper width is not finite"),
        ({"current": None}, "no joint state"),
        ({"points": []}, "no points"),
        ({"names": [*FR3.joint_names[:6], FR3.joint_names[0]]}, "duplicate names"),
    ],
)
def test_invalid_goals_name_the_reason(kwargs: dict, reason: str) -> None:
    pts = kwargs.get("points", _pts())
    times = kwargs.get("times", _times(len(pts)))
    with pytest.raises(GoalRejected) as err:
        validate_trajectory(kwargs.get("names", FR3.joint_names), times, pts,
                            kwargs.get("gripper"), FR3,
                            kwargs.get("current", np.asarray(FR3.home)))
    assert reason in err.value.reason


def test_velocity_is_checked_from_the_measured_position() -> None:
    far = np.asarray(FR3.home) + np.array([0, 0, 0, 0, 0, 0, 0.5])
    with pytest.raises(GoalRejected, match=r"point 0, fr3_joint7: velocity 7\.5.. rad/s from "
                                           r"measured position"):
        validate_trajectory(FR3.joint_names, _times(1), [FR3.home], None, FR3, far)


def test_a_first_point_slightly_too_soon_starts_the_chunk_late() -> None:
    # The arm is 0.21 rad from where the sender timed the first point on joint 1:
    # 0.21 rad in 1/15 s is 3.15 rad/s, over the FR3 joint 1's 2.62 rad/s.
    pts = _pts(4, step=0.05)
    here = np.asarray(pts[0]) - np.array([0.21, 0, 0, 0, 0, 0, 0])
    times = _times(4)
    traj = validate_trajectory(FR3.joint_names, times, pts, None, FR3, here,
                               max_start_delay=0.05)
    delay = 0.21 / FR3.vmax[0] - times[0]
    assert 0 < delay < 0.05
    assert np.allclose(traj.times, np.asarray(times) + delay)  # every point moves by as much
    assert np.allclose(traj.positions, pts)
    # The same goal with less allowed delay, or none, is refused, saying by how much it is off.
    with pytest.raises(GoalRejected, match=r"point 0, fr3_joint1: velocity 3\.150 rad/s from "
                                           r"measured position .* delay the chunk by 0\.013 s, "
                                           r"more than the 0\.01 s allowed"):
        validate_trajectory(FR3.joint_names, times, pts, None, FR3, here, max_start_delay=0.01)
    with pytest.raises(GoalRejected, match=r"exceeds the limit 2\.620 rad/s$"):
        validate_trajectory(FR3.joint_names, times, pts, None, FR3, here)
    # A too-fast segment between two points is the sender's, and no delay makes it slower.
    fast = [list(q) for q in pts]
    fast[2][0] += 0.2
    with pytest.raises(GoalRejected, match=r"point 2, fr3_joint1: velocity .* from point 1"):
        validate_trajectory(FR3.joint_names, times, fast, None, FR3, here, max_start_delay=1.0)


def test_chunk_timing_and_slowdown_for_velocity_limits() -> None:
    chunk = np.column_stack([_pts(4, step=0.05), np.full(4, 0.08)])
    traj = chunk_to_trajectory(chunk, 15.0, FR3.joint_names)
    assert np.allclose(traj.times, _times())
    # 0.3 rad in one row at 15 Hz is 4.5 rad/s: slowed to 90 % of the FR3 joint 1's 2.62 rad/s
    chunk[1, 0] += 0.25
    slowed = chunk_to_trajectory(chunk, 15.0, FR3.joint_names, np.asarray(FR3.home), FR3.vmax)
    seg = slowed.times[1] - slowed.times[0]
    assert seg == pytest.approx(0.30 / (0.9 * 2.62))
    validate_trajectory(FR3.joint_names, slowed.times, slowed.positions, slowed.gripper, FR3,
                        np.asarray(FR3.home))


def test_sample_interpolates_from_the_start() -> None:
    chunk = np.column_stack([_pts(2, step=0.1), [0.0, 0.0]])
    traj = chunk_to_trajectory(chunk, 10.0, FR3.joint_names)
    start = np.asarray(FR3.home)
    q, w = traj.sample(0.05, start, 0.08)
    assert q[0] == pytest.approx(start[0] + 0.05) and w == pytest.approx(0.04)
    q, w = traj.sample(5.0, start, 0.08)
    assert np.allclose(q, chunk[-1, :7]) and w == 0.0
    assert traj.point_index(0.0) == -1 and traj.point_index(0.1) == 0


def test_motion_batch_is_planned_up_front() -> None:
    planner = MotionPlanner(FR3, KIN)
    q0 = np.asarray(FR3.home)
    p0, _ = KIN.fk(q0)
    plans = planner.plan_all([MotionCommand("move", (0, 0, -1), 80.0),
                              MotionCommand("rotate", axis=(0, 0, 1), angle_deg=-45),
                              MotionCommand("gripper_close"), MotionCommand("home")], q0, 0.08)
    assert np.allclose(KIN.fk(plans[0].end_q)[0], p0 + np.array([0, 0, -0.08]), atol=1e-3)
    assert np.allclose(KIN.fk(plans[1].end_q)[0], p0 + np.array([0, 0, -0.08]), atol=1e-3)
    assert plans[2].end_width == 0.0
    assert np.allclose(plans[3].end_q, FR3.home)
    start = q0
    for p in plans:  # every planned segment respects the limits, chained from the last
        validate_trajectory(FR3.joint_names, p.trajectory.times, p.trajectory.positions,
                            p.trajectory.gripper, FR3, start, KIN)
        start = p.end_q


@pytest.mark.parametrize(
    ("cmd", "reason"),
    [
        (MotionCommand("move", (0, 0, 0), 10.0), "direction must be a non-zero"),
        (MotionCommand("move", (1, 0, 0), 3000.0), "outside the workspace box"),
        (MotionCommand("move", (0, 0, -1), 600.0), "outside the workspace box"),
        (MotionCommand("rotate", axis=(0, 0, 0), angle_deg=10), "axis must be a non-zero"),
        (MotionCommand("gripper_width", width=0.5), "gripper width 0.5 m outside"),
        (MotionCommand("wait", duration=-1), "wait duration"),
    ],
)
def test_bad_commands_rejected_with_index(cmd: MotionCommand, reason: str) -> None:
    planner = MotionPlanner(FR3, KIN)
    with pytest.raises(GoalRejected) as err:
        planner.plan_all([MotionCommand("wait", duration=0.1), cmd], np.asarray(FR3.home), 0.08)
    assert err.value.reason.startswith("command 1 (")
    assert reason in err.value.reason
