"""The hand turning a held object about the vertical (a regrasp's put-down) within the wrist's
range, on the FR3's kinematics (no simulator): the grasp's half turn chosen to leave room for
it, and the nearest turn the wrist allows when the one asked for is out of its range."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.geometry import axis_yaw
from mango.primitives.motion import WorldFrameIK
from mango.primitives.moves import (
    TURN_SLACK,
    WRIST_MARGIN,
    turn_choices,
    turnable_grip_yaw,
    turned,
)
from mango.sim.expert.arm import PlannedArm
from mango.sim.expert.motions import down_quat

ROBOT = load_robot("fr3")


def _arm(q7: float) -> PlannedArm:
    ik = WorldFrameIK(FR3Kinematics(ROBOT), (-0.56, 0.0, 0.9), (1.0, 0.0, 0.0, 0.0))
    q = np.array(ROBOT.home, float)
    q[6] = q7
    return PlannedArm(ik, q, 0.08, travel_speed=0.3, approach_speed=0.15, travel_z=1.2)


def _wrist_ok(q7: float) -> bool:
    return ROBOT.position_lower[6] + WRIST_MARGIN <= q7 <= ROBOT.position_upper[6] - WRIST_MARGIN


def test_turned_turns_about_the_vertical() -> None:
    q = down_quat(0.3)
    assert axis_yaw(turned(q, 1.0), 1) == pytest.approx(1.3)
    assert axis_yaw(turned(q, -2.0), 1) == pytest.approx(math.remainder(0.3 - 2.0, 2 * math.pi))


def test_joint_7_turns_a_downward_hand_the_other_way_about_the_vertical() -> None:
    """What the wrist's room is reckoned with (FK, not assumed)."""
    arm = _arm(0.0)
    before = arm.opening_yaw()
    arm.q[6] += 0.3
    assert arm.opening_yaw() == pytest.approx(before - 0.3)


def test_a_turn_the_wrist_has_room_for_is_made_as_asked() -> None:
    assert next(turn_choices(_arm(0.0), 1.2)) == pytest.approx(1.2)


def test_near_its_limit_the_wrist_turns_as_near_to_the_aim_as_it_can() -> None:
    arm = _arm(ROBOT.position_lower[6] + 0.5)  # a downward hand: joint 7 turns the other way
    choices = list(turn_choices(arm, 1.2))
    assert choices and all(abs(t - 1.2) <= TURN_SLACK + 1e-9 for t in choices)
    assert all(_wrist_ok(arm.q[6] - t) for t in choices)
    assert 1.2 not in choices
    assert not list(turn_choices(_arm(ROBOT.position_lower[6] + 0.35), 2.5))  # no room at all


@pytest.mark.parametrize("turn", [1.5, -1.5])
def test_the_grasps_half_turn_leaves_the_wrist_room_for_the_turn_to_come(turn: float) -> None:
    for q7 in (-2.0, 0.0, 2.0):
        arm = _arm(q7)
        yaw = turnable_grip_yaw(arm, 0.4, turn)
        assert math.remainder(yaw - 0.4, math.pi) == pytest.approx(0.0, abs=1e-9)
        after_grasp = arm.q[6] - (yaw - arm.opening_yaw())
        assert _wrist_ok(after_grasp) and _wrist_ok(after_grasp - turn), (q7, yaw)
