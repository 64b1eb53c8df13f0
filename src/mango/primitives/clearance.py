"""Finger clearance from what stands beside an object: the depth points around it.

A top-down grasp's fingers come down beside the object; a neighbour standing there (a box
next to a can in a filled basket) takes a finger on its top or its wall and the object is
not held. The points of the frame around the object (not the object's own, not the surface
it stands on, not the air far above it where the arm is) are what the hand must clear
(`grasps.clear_first` ranks a grasp's opening directions by them). A release is raised until
the opening fingers clear the points beside its spot.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mango.perception.base import Detection, RGBDFrame
from mango.perception.geometry import back_project, project, to_world
from mango.primitives.planning import footprint_extents, yaw_rot
from mango.primitives.shape import CONFLICT_POINTS, RoundBody, hand_conflicts

AROUND = 0.16  # m from the object's centre: beyond it nothing meets an open hand
ABOVE_SUPPORT = 0.005  # m above the object's bottom: lower points are what it stands on
ABOVE_TOP = 0.08  # m above the object's top: the hand's height that matters (not the arm)
OWN_MARGIN = 0.004  # m around the object's footprint counted as its own (mask edges)
DOWN = np.array([0.0, 0.0, -1.0])


def _points_near(frame: RGBDFrame, xy: Sequence[float], z_lo: float, z_hi: float,
                 skip: np.ndarray | None = None) -> np.ndarray:
    """World points of the frame within `AROUND` of `xy` between heights `z_lo` and `z_hi`,
    but the pixels of `skip`: back-projected from the image window that box projects to
    (a twentieth of the frame, not all of it)."""
    assert frame.depth is not None and frame.intrinsics is not None and frame.pose is not None
    corners = np.array([[xy[0] + dx, xy[1] + dy, z] for dx in (-AROUND, AROUND)
                        for dy in (-AROUND, AROUND) for z in (z_lo, z_hi)])
    uv, depth = project(corners, frame.pose, frame.intrinsics)
    h, w = frame.depth.shape
    window = np.zeros((h, w), bool)
    if np.all(depth > 0) and np.all(np.isfinite(uv)):
        u0, v0 = np.maximum(np.floor(uv.min(axis=0)).astype(int), 0)
        u1, v1 = np.ceil(uv.max(axis=0)).astype(int) + 1
        window[v0:min(v1, h), u0:min(u1, w)] = True
    else:  # the box reaches behind the camera: the whole frame
        window[:] = True
    if skip is not None:
        window &= ~skip
    pts = to_world(back_project(frame.depth, frame.intrinsics, window), frame.pose)
    near = (np.hypot(pts[:, 0] - xy[0], pts[:, 1] - xy[1]) < AROUND) \
        & (pts[:, 2] > z_lo) & (pts[:, 2] < z_hi)
    return pts[near]


def clutter_points(det: Detection, frame: RGBDFrame | None,
                   body: RoundBody | None = None) -> np.ndarray:
    """World points (N x 3) of what stands around `det` at the height of a top-down hand:
    the frame's depth outside the object's mask and footprint, above its support, within
    `AROUND` of its centre. Empty without depth, intrinsics or pose."""
    if frame is None or frame.depth is None or frame.intrinsics is None or frame.pose is None:
        return np.zeros((0, 3))
    skip = None
    if det.mask is not None and det.camera == frame.camera \
            and det.mask.shape == frame.depth.shape:
        skip = det.mask
    cx, cy, cz = det.centroid
    bottom, top = cz - det.size[2] / 2, cz + det.size[2] / 2
    pts = _points_near(frame, (cx, cy), bottom + ABOVE_SUPPORT, top + ABOVE_TOP, skip)
    rel = pts[:, :2] - (cx, cy)
    if body is not None:
        own = np.hypot(*(pts[:, :2] - body.centre).T) <= body.radius + OWN_MARGIN
    else:
        major, minor = footprint_extents(det)
        local = rel @ yaw_rot(det.yaw)  # (along the major axis, across it)
        own = (np.abs(local[:, 0]) <= major / 2 + OWN_MARGIN) \
            & (np.abs(local[:, 1]) <= minor / 2 + OWN_MARGIN)
    return pts[~own]


RELEASE_RAISE = 0.08  # m: the most a release is raised for the fingers to open clear
RAISE_STEP = 0.01  # m


def release_points(frame: RGBDFrame | None, release: np.ndarray, bottom: float,
                   held: tuple[Sequence[float], float, float] | None = None) -> np.ndarray:
    """World points (N x 3) around a release point at which the opening fingers must clear:
    within `AROUND` of it, above the held object's bottom there (`bottom`: the support is
    below), up to the highest hand it may be raised to. `held`: (the hand's position when
    the frame was taken, how far the held object's bottom hangs below it, its half size
    across): the hand and what it holds, seen in the frame, are left out."""
    if frame is None or frame.depth is None or frame.intrinsics is None or frame.pose is None:
        return np.zeros((0, 3))
    pts = _points_near(frame, release[:2], bottom + ABOVE_SUPPORT,
                       release[2] + RELEASE_RAISE + ABOVE_TOP)
    if held is None:
        return pts
    hand, below, half = held
    carried = (np.hypot(pts[:, 0] - hand[0], pts[:, 1] - hand[1]) < half + 0.03) \
        & (pts[:, 2] > hand[2] - below - 0.02)
    return pts[~carried]


def clear_release(release: np.ndarray, opening: np.ndarray, held_width: float,
                  open_width: float, points: np.ndarray) -> tuple[np.ndarray, float]:
    """The lowest release at most `RELEASE_RAISE` above `release` at which fingers opening
    from `held_width` to `open_width` along `opening` meet none of `points` (a neighbour
    beside the held object, a container's wall: fingers pressed against them cannot open
    and the object stays wedged between them, lifted out again with the hand), and how
    far it was raised; `release` itself when no height clears."""
    if not len(points):
        return release, 0.0
    for k in range(round(RELEASE_RAISE / RAISE_STEP) + 1):
        at = release + np.array([0.0, 0.0, k * RAISE_STEP])
        if hand_conflicts(points, at, DOWN, opening, open_width, held_width / 2,
                          palm=False) < CONFLICT_POINTS:
            return at, k * RAISE_STEP
    return release, 0.0
