"""A round body and what sticks out of it, from a detection's depth points; the hand's
volume, to tell whether a grasp's fingers and palm would meet that protrusion.

A mug's box, as perception gives it, includes its handle: a grasp planned on the box centres
the hand off the body and may close across body and handle (wider than the hand, and it
slips). Here the footprint itself is read: a disc (the body, seen around its whole rim from
a camera above it) plus points outside that disc (a handle, a spout). Nothing here knows
what the object is: any footprint that is a round body with a protrusion qualifies, and
anything else (a box, a half-seen body) is not read as one, so the caller plans on the box.

The hand is the Franka Hand (the FR3's collision geometry, in its TCP frame: z along the
fingers, y the opening axis): the fingertips reach 1 cm past the TCP, each finger is 2.7 cm
thick outward of its pad and 2.1 cm wide, the palm starts 3.25 cm behind the TCP and spans
21 cm along the opening and 6.4 cm across it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree

from mango.perception.base import Detection, RGBDFrame
from mango.perception.geometry import back_project, to_world

TIP_AHEAD = 0.0098  # m the fingertips reach past the TCP
FINGER_OUT = 0.0267  # m a finger reaches outward of its pad (the opening axis)
FINGER_HALF_WIDTH = 0.0105  # m, half a finger's width (the axis normal to opening and z)
PALM_BEHIND = 0.0325  # m from the TCP back to the palm's face
PALM_HALF_SPAN = 0.105  # m, half the palm along the opening axis
PALM_HALF_WIDTH = 0.032  # m, half the palm across it
CLEARANCE = 0.005  # m kept between the hand and a protrusion
MIN_POINTS = 80  # fewer depth points tell no shape
BINS = 36  # 10-degree sectors around the centre
MIN_COVER = 0.75  # of the sectors must hold points: the rim seen all around
ROUND_SPREAD = 0.06  # the body sectors' outer radii may stray by this fraction of the radius
MAX_PROTRUSIONS = 2  # a handle and a spout; more is a polygon's corners
MIN_PROTRUSION = 10  # points outside the disc that count as a protrusion (not noise)
CONFLICT_POINTS = 5  # protrusion points inside the hand's volume that block a grasp


@dataclass(frozen=True)
class RoundBody:
    """The round body (axis at `centre`, `radius`, `bottom`..`top`) and the points (world,
    N x 3) outside its cylinder: what sticks out; `directions` are the horizontal unit
    directions from the centre of each separate protrusion (angular gap > 30 degrees)."""

    centre: np.ndarray
    radius: float
    bottom: float
    top: float
    protrusion: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    directions: tuple[np.ndarray, ...] = ()

    @property
    def handle(self) -> np.ndarray | None:
        """The direction of the one protrusion, None when there is none or several."""
        return self.directions[0] if len(self.directions) == 1 else None

    @property
    def reach(self) -> float:
        """How far the protrusion reaches from the body's axis (the radius without one)."""
        if not len(self.protrusion):
            return self.radius
        return float(np.max(np.hypot(*(self.protrusion[:, :2] - self.centre).T)))

    def describe(self) -> str:
        if self.handle is not None:
            yaw = math.degrees(math.atan2(self.handle[1], self.handle[0]))
            return (f"a round body {2 * self.radius * 100:.1f} cm across with a protrusion "
                    f"toward {yaw:.0f} deg reaching {self.reach * 100:.1f} cm from its axis")
        if self.directions:
            return (f"a round body {2 * self.radius * 100:.1f} cm across with "
                    f"{len(self.directions)} protrusions")
        return f"a round body {2 * self.radius * 100:.1f} cm across"


def object_points(det: Detection, frame: RGBDFrame | None) -> np.ndarray | None:
    """The detection's visible points (world, N x 3) from the frame its mask is of; None
    without a mask, depth, intrinsics or pose, or when the mask is another camera's."""
    if det.mask is None or frame is None or frame.depth is None or frame.intrinsics is None \
            or frame.pose is None or det.camera != frame.camera \
            or det.mask.shape != frame.depth.shape:
        return None
    return to_world(back_project(frame.depth, frame.intrinsics, det.mask), frame.pose)


def _circle(xy: np.ndarray) -> tuple[np.ndarray, float]:
    """Least-squares circle through points (Kasa's algebraic fit): centre, radius."""
    a = np.column_stack((2 * xy, np.ones(len(xy))))
    b = (xy ** 2).sum(axis=1)
    sol, *_ = np.linalg.lstsq(a, b, rcond=None)
    c = sol[:2]
    return c, float(math.sqrt(max(sol[2] + c @ c, 0.0)))


def _sector_radii(xy: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each point's distance and sector from `c`, and each sector's outer radius (NaN where
    empty): its 95th percentile (nearest rank), so a stray edge pixel does not set it."""
    rel = xy - c
    r = np.hypot(rel[:, 0], rel[:, 1])
    sector = ((np.arctan2(rel[:, 1], rel[:, 0]) + math.pi) / (2 * math.pi) * BINS).astype(int)
    sector = np.clip(sector, 0, BINS - 1)
    ranked = r[np.lexsort((r, sector))]  # by sector, then distance
    counts = np.bincount(sector, minlength=BINS)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    at = starts + np.ceil(0.95 * np.maximum(counts - 1, 0)).astype(int)
    outer = np.where(counts > 0, ranked[np.minimum(at, len(r) - 1)], np.nan)
    return r, sector, outer


def _spacing(points: np.ndarray) -> float:
    """The points' typical spacing (m): the median distance to the nearest other point
    (about a camera pixel where the object is)."""
    d, _ = cKDTree(points).query(points, k=2)
    return float(np.median(d[:, 1]))


def round_body(points: np.ndarray | None, bottom: float, top: float) -> RoundBody | None:
    """The round body of a footprint and its protrusions, None when the footprint is not
    one: too few points, the rim not seen all around, or sectors whose outer radii vary
    like a box's rather than a disc's (the 80th percentile of their distance to the radius
    beyond `ROUND_SPREAD` of it or, on a coarse image, 3/4 of the points' spacing), or more
    than `MAX_PROTRUSIONS` things sticking out (a box's corners).

    The centre starts at the middle of the points near the top; then, a few times over:
    each 10-degree sector's outer radius, the body's radius their median, sectors reaching
    past it by more than max(4 mm, 10 %, 1.5 points' spacing) set aside as protrusion, and
    a circle fitted to the outermost points of the others."""
    if points is None or len(points) < MIN_POINTS:
        return None
    xy = points[:, :2]
    pixel = _spacing(points)
    # seeded at the middle of the top (a lid or a rim, seen all around from above); the
    # median of all points leans toward the side wall the camera faces
    near_top = points[:, 2] >= top - max(0.01, 0.15 * (top - bottom))
    c = np.median(xy[near_top] if near_top.sum() >= MIN_POINTS // 2 else xy, axis=0)
    radius = 0.0
    body = np.zeros(BINS, bool)
    for _ in range(4):
        r, sector, outer = _sector_radii(xy, c)
        seen = ~np.isnan(outer)
        if seen.sum() < MIN_COVER * BINS:
            return None
        radius = float(np.median(outer[seen]))
        tol = max(0.004, 0.1 * radius, 1.5 * pixel)
        body = seen & (outer <= radius + tol)
        rim = body[sector] & (r >= outer[sector] - max(0.003, pixel))
        if rim.sum() < 10:
            return None
        c, radius = _circle(xy[rim])
    r, sector, outer = _sector_radii(xy, c)
    seen = ~np.isnan(outer)
    tol = max(0.004, 0.1 * radius, 1.5 * pixel)
    body = seen & (outer <= radius + tol)
    spread = float(np.percentile(np.abs(outer[body] - radius), 80))
    if body.sum() < MIN_COVER * seen.sum() or spread > max(ROUND_SPREAD * radius, 0.75 * pixel):
        return None
    out = r > radius + tol
    if out.sum() < max(MIN_PROTRUSION, 0.005 * len(points)):
        return RoundBody(c, radius, bottom, top)
    protrusion = points[out]
    directions = _directions(protrusion[:, :2] - c)
    if len(directions) > MAX_PROTRUSIONS or not directions:  # a box's corners; a flange
        return None
    return RoundBody(c, radius, bottom, top, protrusion, directions)


def _directions(rel: np.ndarray) -> tuple[np.ndarray, ...]:
    """Unit directions of the angular clusters of points around the centre (a gap of more
    than 30 degrees separates two); none when the points go all around."""
    ang = np.sort(np.arctan2(rel[:, 1], rel[:, 0]))
    n = len(ang)
    gaps = np.diff(np.r_[ang, ang[0] + 2 * math.pi])  # gaps[i]: ang[i] to the next one
    cut = np.flatnonzero(gaps > math.radians(30))
    out = []
    for k, i in enumerate(cut):
        j = cut[k - 1]  # the previous gap (cyclic): this cluster runs from after it to i
        group = ang[np.arange(j + 1, j + 1 + ((i - j) % n or n)) % n]
        v = np.array([np.cos(group).sum(), np.sin(group).sum()])
        out.append(v / max(float(np.linalg.norm(v)), 1e-12))
    return tuple(out)


def hand_conflicts(points: np.ndarray, tcp: np.ndarray, axis: np.ndarray,
                   opening: np.ndarray, width: float, closes_to: float,
                   palm: bool = True) -> int:
    """How many of `points` (world, N x 3) the hand meets on a straight approach along
    `axis` to `tcp` (the TCP there, the fingers opening along `opening`, `width` apart)
    and closing to `closes_to` from its axis (the half width the pads stop at): the fingers
    sweep everything behind their tips from their pads outward, the palm everything behind
    its face within its span (not `palm`: the fingers alone, what moves as the hand
    opens)."""
    if not len(points):
        return 0
    a = np.asarray(axis, float) / float(np.linalg.norm(axis))
    o = np.asarray(opening, float) / float(np.linalg.norm(opening))
    v = np.cross(a, o)
    rel = np.asarray(points, float) - np.asarray(tcp, float)
    along, side, across = rel @ a, np.abs(rel @ o), np.abs(rel @ v)
    m = CLEARANCE
    fingers = (along <= TIP_AHEAD + m) & (side >= closes_to - m) & \
        (side <= width / 2 + FINGER_OUT + m) & (across <= FINGER_HALF_WIDTH + m)
    if not palm:  # the fingers' own length, tips to the palm's face
        return int((fingers & (along >= -PALM_BEHIND - m)).sum())
    behind = (along <= -PALM_BEHIND + m) & (side <= PALM_HALF_SPAN + m) & \
        (across <= PALM_HALF_WIDTH + m)
    return int((fingers | behind).sum())


def blocks(points: np.ndarray, tcp: np.ndarray, axis: np.ndarray, opening: np.ndarray,
           width: float, closes_to: float) -> bool:
    """Whether the protrusion is in the hand's way (`hand_conflicts` beyond noise)."""
    return hand_conflicts(points, tcp, axis, opening, width, closes_to) >= CONFLICT_POINTS
