"""The joint-state reader: arm joints in the robot's order, the gripper width from the two
fingers, messages without the arm ignored."""

from __future__ import annotations

import numpy as np
import pytest

from mango.control import JointStateReader, load_robot
from mango.control.joint_state import FINGERS

ROBOT = load_robot("fr3")
JOINTS = list(ROBOT.joint_names)


def test_none_before_the_first_state() -> None:
    assert JointStateReader(JOINTS).measured() is None


def test_reorders_joints_and_sums_the_fingers() -> None:
    reader = JointStateReader(JOINTS)
    names = [FINGERS[1], *reversed(JOINTS), FINGERS[0]]
    reader.update(names, [0.01, *range(7, 0, -1), 0.02], 12.5, received=3.0)
    m = reader.measured()
    assert m is not None
    assert np.allclose(m.q, range(1, 8))
    assert m.width == pytest.approx(0.03)
    assert (m.t, m.stamp) == (3.0, 12.5)


def test_arm_only_state_has_no_width() -> None:
    reader = JointStateReader(JOINTS)
    reader.update(JOINTS, range(7), 0.0)
    m = reader.measured()
    assert m is not None and m.width is None


def test_a_gripper_only_state_is_ignored() -> None:
    reader = JointStateReader(JOINTS)
    reader.update(JOINTS, range(7), 1.0)
    reader.update(list(FINGERS), [0.04, 0.04], 2.0)
    m = reader.measured()
    assert m is not None and m.stamp == 1.0
