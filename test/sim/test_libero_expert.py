"""The LIBERO expert's planning core without LIBERO: the order of a goal's skills and the 7-D
OSC action it servos with.

The action convention is robosuite 1.4.0's (`robosuite/controllers/config/osc_pose.json`:
±1 scales to ±0.05 m and ±0.5 rad per control step; `controllers/osc.py` `OSC.set_goal`: the
position goal is the grip site's position plus the delta, the orientation goal the delta's
rotation (world frame) applied to the current one).
"""

from __future__ import annotations

import numpy as np
import pytest

from mango.sim.libero.expert import plan_goal
from mango.sim.libero.hand import Hand, rotation_vector, servo


def test_the_plan_opens_before_putting_in_and_closes_after() -> None:
    # LIBERO-10 task 3's BDDL lists Close before In
    goal = (("Close", "white_cabinet_1_bottom_region"),
            ("In", "akita_black_bowl_1", "white_cabinet_1_bottom_region"))
    assert [(m.kind, m.subject) for m in plan_goal(goal)] == [
        ("pick", "akita_black_bowl_1"), ("place", "akita_black_bowl_1"),
        ("close", "white_cabinet_1_bottom_region")]
    opened = plan_goal((("In", "bowl", "drawer"), ("Open", "drawer")))
    assert [m.kind for m in opened] == ["open", "pick", "place"]
    with pytest.raises(ValueError, match="no skill"):
        plan_goal((("Stack", "a", "b"),))


def _hand(yaw: float) -> Hand:
    closing = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    return Hand(np.zeros(3), np.array([0.0, 0.0, -1.0]), closing, 0.08)


def test_servo_scales_to_oscs_units() -> None:
    a = servo(_hand(0.0), np.array([0.01, 0.0, -0.02]), 1.0, closing=np.array([1.0, 0, 0]))
    assert a == pytest.approx([0.2, 0.0, -0.4, 0.0, 0.0, 0.0, 1.0])
    # far targets are approached at most max_step per step
    far = servo(_hand(0.0), np.array([1.0, 0.0, 0.0]), -1.0, max_step=0.03)
    assert far[:3] == pytest.approx([0.6, 0.0, 0.0])


def test_servo_turns_the_fingers_the_short_way_round() -> None:
    # fingers closing along x turned 0.1 rad about z: turned back by -0.1 rad (world z)
    a = servo(_hand(0.1), np.zeros(3), 0.0, closing=np.array([1.0, 0.0, 0.0]))
    assert a[3:6] == pytest.approx([0.0, 0.0, -0.2], abs=1e-9)
    # a parallel gripper is symmetric: 0.1 rad short of the opposite direction is 0.1 rad
    b = servo(_hand(np.pi - 0.1), np.zeros(3), 0.0, closing=np.array([1.0, 0.0, 0.0]))
    assert b[3:6] == pytest.approx([0.0, 0.0, 0.2], abs=1e-9)


def test_rotation_vector_of_a_half_turn() -> None:
    r = np.diag([1.0, -1.0, -1.0])  # pi about x
    assert np.abs(rotation_vector(r)) == pytest.approx([np.pi, 0.0, 0.0])
