"""Finger clearance from what stands beside: a top-down grasp's fingers come down where no
neighbour stands, and a release is raised until the opening fingers clear what is beside
the spot (synthetic depth seen from above; `test_sim.py` has both in the real sim)."""

from __future__ import annotations

import math

import numpy as np
from support.depth_scenes import down_frame

from mango.perception.base import Detection
from mango.primitives.clearance import (
    RELEASE_RAISE,
    clear_release,
    clutter_points,
    release_points,
)
from mango.primitives.grasps import MAX_PLANS, GraspScene, conflicts, grasp_options
from mango.primitives.shape import CLEARANCE, CONFLICT_POINTS, TIP_AHEAD

BASE = (-0.56, 0.0)
CAN = (0.0, 0.0, 0.0265, 0.99)  # a can 2.65 cm in radius, 9 cm tall on the table (0.9)


def _can(frame_masks) -> Detection:
    _frame, (mask,) = frame_masks
    return Detection(phrase="the can", entity_id="can_1", label="can", score=1.0,
                     box_2d=(0, 0, 400, 400), mask=mask, centroid=(0.0, 0.0, 0.945),
                     size=(0.053, 0.053, 0.09), yaw=0.0, camera="down", stamp=0.0)


def _scene(neighbour: tuple[float, ...] | None):
    surfaces = [CAN] + ([neighbour] if neighbour else [])
    frame, masks = down_frame(surfaces, [lambda u, v, d: np.hypot(u - 200, v - 200) <= 18],
                              n=400, f=700.0)
    return frame, _can((frame, masks))


def _axis_deg(yaw: float) -> float:
    """The opening axis's angle from the y axis, in [0, 90] (an axis: mod 180 degrees)."""
    return math.degrees(abs(math.remainder(yaw - math.pi / 2, math.pi)))


def test_a_can_with_nothing_beside_it_is_grasped_as_preferred() -> None:
    frame, can = _scene(None)
    plans = grasp_options(can, GraspScene(base=BASE, frame=frame))
    assert plans[0].approach == "top" and plans[0].body is not None
    assert _axis_deg(plans[0].opening_yaw) < 1.0  # across the footprint's first axis
    assert "beside" not in plans[0].reason
    assert len(clutter_points(can, frame, plans[0].body)) == 0  # the can's own points are not


def test_a_box_beside_a_can_turns_the_fingers_away_from_it() -> None:
    """A box standing 4 mm from the can on its +y side, where the preferred opening puts a
    finger: the fingers come down turned clear of it, and the plan says why."""
    box = (-0.025, 0.0305, 0.025, 0.09, 0.96)
    frame, can = _scene(box)
    scene = GraspScene(base=BASE, frame=frame)
    plans = grasp_options(can, scene)
    around = clutter_points(can, frame, plans[0].body)
    assert len(around) > 100  # the box's top and the wall the camera sees
    first = plans[0]
    assert conflicts(first, around) < CONFLICT_POINTS
    assert _axis_deg(first.opening_yaw) > 45  # the fingers' axis turned away from +y
    assert "fingers meet what stands beside it" in first.reason
    # the fall-backs (the arm may not reach the first): those that clear it first, then the
    # others by how much they meet
    met = [conflicts(p, around) for p in plans]
    clear = [m < CONFLICT_POINTS for m in met]
    assert sum(clear) >= 3 and clear == sorted(clear, reverse=True), met
    assert met[sum(clear):] == sorted(met[sum(clear):]) and len(plans) <= MAX_PLANS


def _release_case(wall_top: float):
    """A held box 4.5 cm wide let go 2 cm above a floor at 0.9, its fingers opening along x;
    a neighbour's top `wall_top` high stands 5 mm off its +x side."""
    frame, _ = down_frame([(0.0275, -0.05, 0.08, 0.05, wall_top)], n=400, f=700.0)
    release = np.array([0.0, 0.0, 0.95])
    bottom = 0.92
    return frame, release, bottom


def test_a_release_beside_a_taller_neighbour_is_raised_until_the_fingers_open_clear() -> None:
    frame, release, bottom = _release_case(0.98)
    pts = release_points(frame, release, bottom)
    assert len(pts) > 100
    at, raised = clear_release(release, np.array([1.0, 0.0, 0.0]), 0.045, 0.07, pts)
    assert 0.0 < raised <= RELEASE_RAISE and at[2] == release[2] + raised
    assert at[:2].tolist() == release[:2].tolist()
    # the lowest such height: the tips above the neighbour's top (with the hand's clearance),
    # one step lower they are not
    assert at[2] - TIP_AHEAD - CLEARANCE > 0.98
    assert at[2] - 0.01 - TIP_AHEAD - CLEARANCE < 0.98


def test_a_release_with_nothing_beside_or_no_height_that_clears_stays() -> None:
    frame, release, bottom = _release_case(0.90)  # only the table: below the object's bottom
    assert clear_release(release, np.array([1.0, 0.0, 0.0]), 0.045, 0.07,
                         release_points(frame, release, bottom))[1] == 0.0
    # a wall's face 5 mm off, from below the release to higher than any raise clears
    z, y = np.meshgrid(np.arange(0.93, 1.2, 0.003), np.arange(-0.05, 0.05, 0.003))
    wall = np.column_stack((np.full(z.size, 0.028), y.ravel(), z.ravel()))
    at, raised = clear_release(release, np.array([1.0, 0.0, 0.0]), 0.045, 0.07, wall)
    assert raised == 0.0 and at.tolist() == release.tolist()


def test_the_hand_and_what_it_holds_in_the_frame_are_not_obstacles() -> None:
    """Perceived while carrying: the held box under the hand over the release spot is not
    something beside it."""
    frame, _ = down_frame([(-0.03, -0.03, 0.03, 0.03, 1.10)], n=400, f=700.0)
    release = np.array([0.0, 0.0, 0.95])
    assert len(release_points(frame, release, 0.92)) > 100
    assert len(release_points(frame, release, 0.92, ((0.0, 0.0, 1.17), 0.05, 0.03))) == 0
