"""The optional `moveit` transit backend against a stand-in of moveit_py's API
(test/support/moveit_stand_in.py: signatures from moveit/moveit2 moveit_py/moveit/planning.pyi
and moveit_py/src/moveit/moveit_ros/moveit_cpp/planning_component.cpp), on the real embedded
sim with the real `sim` perception: MoveIt plans the free-space legs (to the pre-grasp, the
carry to above the release), the ladder the straight ones, and the outcomes are measured as
with the default backend. The goal is `fr3_hand_tcp` in `fr3_link0`, group `fr3_arm`
(franka_ros2 franka_fr3_moveit_config/srdf/fr3_arm.srdf.xacro and the note
../shared/notes/references.md)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from support.moveit_stand_in import BASE, GROUP, TIP, MoveItPy, RobotState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from mango.control.robot import load_robot
from mango.errors import UnreachableError
from mango.perception.base import PerceptionConfig
from mango.perception.registry import make_backend
from mango.primitives import SimPrimitives, parse_destination
from mango.primitives.transit import MoveItTransit
from mango.sim.env import SimEnv
from mango.sim.expert.arm import DT

JOINTS = load_robot("fr3").joint_names


def _prims(moveit: MoveItPy) -> tuple[SimEnv, SimPrimitives, MoveItTransit]:
    env = SimEnv("libero10_soup_sauce_basket", 0, cameras=("front",), image_size=(640, 480))
    transit = MoveItTransit(moveit, env.robot_base_pose(), JOINTS, robot_state_type=RobotState)
    be = make_backend(PerceptionConfig(backend="sim", scene=env.scene))
    return env, SimPrimitives(env, be, transit=transit), transit


def test_grasp_and_place_with_moveit_planning_the_transit() -> None:
    moveit = MoveItPy()
    env, prims, _transit = _prims(moveit)
    with env:
        g = prims.grasp("the alphabet soup")
        assert g.status == "succeeded" and g.grasped and g.entity_id == "alphabet_soup_1", \
            g.message
        comp = moveit.components[GROUP]
        assert moveit.plans == 1 and len(comp.goals) == 1
        goal, link = comp.goals[0]
        assert link == TIP and goal.header.frame_id == BASE
        # the goal was the pre-grasp above the soup, in the base frame
        base = np.asarray(env.robot_base_pose()[0])
        soup = g.detection.centroid
        p = goal.pose.position
        assert np.hypot(p.x + base[0] - soup[0], p.y + base[1] - soup[1]) < 0.01
        assert p.z + base[2] > soup[2] + 0.1
        p = prims.place(parse_destination("in the basket"), "the alphabet soup")
        assert p.status == "succeeded" and p.satisfied and p.satisfied_truth, p.message
        assert moveit.plans == 2  # the carry


def test_no_moveit_plan_rejects_the_grasp_with_moveits_reason() -> None:
    env, prims, _ = _prims(MoveItPy(fail=True))
    with env:
        q0 = env.joint_positions().copy()
        g = prims.grasp("the alphabet soup")
        assert g.status == "rejected" and not g.grasped
        assert "MoveIt found no plan for group 'fr3_arm'" in g.message
        assert "MoveItErrorCodes -31" in g.message
        assert np.allclose(env.joint_positions(), q0)  # nothing was sent


def _traj(names: list[str], times: list[float], rows: list[list[float]]) -> SimpleNamespace:
    jt = JointTrajectory(joint_names=names)
    for t, r in zip(times, rows, strict=True):
        pt = JointTrajectoryPoint(positions=r)
        pt.time_from_start.sec, pt.time_from_start.nanosec = int(t), round((t % 1) * 1e9)
        jt.points.append(pt)
    return jt


def test_a_trajectory_is_resampled_by_joint_name_every_control_step() -> None:
    tr = MoveItTransit(MoveItPy(), ((0, 0, 0), (1, 0, 0, 0)), JOINTS, robot_state_type=RobotState)
    q0 = np.zeros(7)
    target = np.arange(1, 8) * 0.1
    rev = list(reversed(JOINTS))
    rows = tr._resample(_traj(rev, [0.5, 1.0], [list(reversed(target / 2)),
                                                list(reversed(target))]), q0, 0.08, 0.04)
    assert len(rows) == int(np.ceil(1.0 / DT))
    assert np.allclose(rows[-1][:7], target) and rows[-1][7] == pytest.approx(0.04)
    k = round(0.5 / DT) - 1  # the row at t = 0.5 s: halfway, in the project's order
    assert np.allclose(rows[k][:7], target * (k + 1) * DT, atol=1e-9)
    with pytest.raises(UnreachableError, match="lacks joints"):
        tr._resample(_traj(rev[:6], [1.0], [[0.0] * 6]), q0, 0.08, 0.08)
    with pytest.raises(UnreachableError, match="back in time"):
        tr._resample(_traj(rev, [1.0, 0.5], [[0.0] * 7, [0.0] * 7]), q0, 0.08, 0.08)
