"""Grasp and place planning from perception: where the hand goes, not how it gets there.

A grasp is planned from one `Detection` alone (what a perception node gives): top-down at the
3-D centroid, the fingers closing across the footprint's narrow side (the detection's yaw is
the major axis), the opening from the narrow extent. A place destination follows VoLo's
phrasing ("in <container>", "on <surface>", "empty space next to <anchor>", "empty space on
the table"): container/surface centres from their detections, empty space from an occupancy
grid of every detected footprint plus a margin. Side grasps are not planned (see README).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mango.errors import InputError
from mango.perception.base import Detection, RGBDFrame
from mango.perception.geometry import back_project, to_world

GRIPPER_OPEN = 0.08  # m, the Franka Hand's full opening
FINGERTIP = 0.008  # m, pad bottoms below the TCP (as the sim's hand: sim.expert.arm)
PRE_GRASP = 0.12  # m above the grasp point: the straight approach starts there
RELEASE_CLEARANCE = 0.02  # m between the held object's bottom and the support at release
GRIP_MARGIN = 0.02  # m of opening beyond the narrow extent before closing

PlaceKind = Literal["in", "on", "next_to", "table"]
Side = Literal["any", "left", "right", "front", "behind"]

_SIDES: dict[str, Side] = {"next to": "any", "beside": "any", "near": "any",
                           "left of": "left", "to the left of": "left",
                           "right of": "right", "to the right of": "right",
                           "in front of": "front", "behind": "behind"}


@dataclass(frozen=True)
class PlaceRequest:
    """A parsed destination phrase: the kind, the phrase naming the container/surface/anchor
    (None for the bare table) and, for empty space, the side of the anchor."""

    kind: PlaceKind
    anchor: str | None
    side: Side = "any"
    text: str = ""


def parse_destination(text: str) -> PlaceRequest:
    """VoLo's place phrasing -> a `PlaceRequest`; anything else is an `InputError`."""
    t = " ".join(text.lower().strip().split())
    if re.fullmatch(r"(an? |the )?empty space on the table", t):
        return PlaceRequest("table", None, text=text)
    m = re.fullmatch(r"(?:an? |the )?empty space (?P<rel>" + "|".join(
        sorted(map(re.escape, _SIDES), key=len, reverse=True)) + r") (?P<np>.+)", t)
    if m:
        return PlaceRequest("next_to", m["np"], _SIDES[m["rel"]], text)
    m = re.fullmatch(r"(?P<rel>on top of|onto|on|into|inside|in) (?P<np>.+)", t)
    if m:
        kind: PlaceKind = "in" if m["rel"] in ("in", "into", "inside") else "on"
        return PlaceRequest(kind, m["np"], text=text)
    raise InputError(
        f"destination '{text}' does not follow the place phrasing: 'in <container>', "
        "'on <surface>', 'empty space next to <anchor>' (or left of / right of / in front "
        "of / behind) or 'empty space on the table'", field="DESTINATION")


def footprint_extents(det: Detection) -> tuple[float, float]:
    """(major, minor) extents of the footprint along the detection's yaw, recovered from its
    axis-aligned world box (a rotated rectangle's box is [[c, s], [s, c]] @ [L, W])."""
    sx, sy = det.size[0], det.size[1]
    c, s = abs(math.cos(det.yaw)), abs(math.sin(det.yaw))
    det2 = c * c - s * s
    if abs(det2) < 0.2:  # near 45 degrees the box says little: both sides are at most this
        side = min(sx, sy) / (c + s)
        return side, side
    length = (c * sx - s * sy) / det2
    width = (c * sy - s * sx) / det2
    if length <= 0 or width <= 0:
        return max(sx, sy), min(sx, sy)
    return max(length, width), min(length, width)


@dataclass(frozen=True)
class GraspPlan:
    """Where a top-down grasp goes (world frame): hand at `grasp` with the fingers opening
    along `opening_yaw` (mod pi), `width` open before closing, approach from `pre_grasp`."""

    entity_id: str | None
    grasp: np.ndarray
    pre_grasp: np.ndarray
    opening_yaw: float
    width: float
    narrow: float  # m, the object's extent across the fingers
    bottom: float  # m, the object's bottom (z) as perceived

    @property
    def hand_above_bottom(self) -> float:
        """Hand height above the object's bottom once grasped: what a release keeps."""
        return float(self.grasp[2] - self.bottom)


def plan_grasp(det: Detection) -> GraspPlan:
    """Top-down grasp of a detected object; refuses one too wide for the hand."""
    _major, minor = footprint_extents(det)
    if minor > GRIPPER_OPEN - 0.005:
        raise ValueError(f"'{det.phrase}' is {minor * 100:.1f} cm across its narrow side: "
                         f"wider than the hand opens ({GRIPPER_OPEN * 100:.0f} cm)")
    cx, cy, cz = det.centroid
    top, bottom = cz + det.size[2] / 2, cz - det.size[2] / 2
    # pads 2.2 cm below the top, but never below the table (a low object: near its bottom)
    z = max(top - 0.022, bottom + FINGERTIP + 0.003)
    # the detection's yaw is the major axis: the fingers open across it, unless the
    # footprint is round (then any direction; keep the major axis' normal)
    opening = det.yaw + math.pi / 2
    grasp = np.array([cx, cy, z])
    # the opening from the world box, which bounds the narrow side from above whatever the
    # shape (the recovered `minor` assumes a rectangle: a mug's handle fools it)
    opening_width = min(GRIPPER_OPEN, min(det.size[0], det.size[1]) + GRIP_MARGIN)
    return GraspPlan(det.entity_id, grasp, grasp + np.array([0.0, 0.0, PRE_GRASP]),
                     opening, opening_width, minor, bottom)


@dataclass(frozen=True)
class PlaceTarget:
    """Release point: the held object's bottom goes to `support_z` + clearance under `xy`."""

    xy: np.ndarray
    support_z: float
    entity_id: str | None  # the container/surface/anchor as perceived

    def release_hand(self, hand_above_bottom: float) -> np.ndarray:
        return np.array([self.xy[0], self.xy[1],
                         self.support_z + RELEASE_CLEARANCE + hand_above_bottom])


def container_target(det: Detection, floor: float = 0.012) -> PlaceTarget:
    """In a container: over its centre, the support its floor (just above the box bottom)."""
    cx, cy, cz = det.centroid
    return PlaceTarget(np.array([cx, cy]), cz - det.size[2] / 2 + floor, det.entity_id)


def surface_target(det: Detection, frame: RGBDFrame | None = None) -> PlaceTarget:
    """On a surface or object: over its centre, the support the surface's height there
    (`surface_height`), or its box top without depth."""
    cx, cy, cz = det.centroid
    top = surface_height(det, frame, (cx, cy), 0.0, 0.04) if frame is not None else None
    return PlaceTarget(np.array([cx, cy]), cz + det.size[2] / 2 if top is None else top,
                       det.entity_id)


def surface_height(det: Detection, frame: RGBDFrame, xy: Sequence[float], inner: float,
                   outer: float) -> float | None:
    """Median height of the detection's depth points between `inner` and `outer` (m) of
    `xy`: the surface an object stands on there. A box's top is its highest part (a stove's
    knobs and rim, 5 cm above its plate); None without a mask, depth or points there."""
    if det.mask is None or frame.depth is None or frame.intrinsics is None or frame.pose is None:
        return None
    pts = to_world(back_project(frame.depth, frame.intrinsics, det.mask), frame.pose)
    d = np.hypot(pts[:, 0] - xy[0], pts[:, 1] - xy[1])
    near = pts[(d >= inner) & (d <= outer), 2]
    return float(np.median(near)) if near.size >= 20 else None


@dataclass(frozen=True)
class TableArea:
    """The free table plane to search: centre, size (m), top height and the arm's base."""

    centre: tuple[float, float]
    size: tuple[float, float]
    height: float
    base: tuple[float, float]
    reach: tuple[float, float] = (0.35, 0.72)  # m from the base: comfortably reachable


def _box_of(det: Detection) -> tuple[float, float, float, float]:
    cx, cy, _ = det.centroid
    return cx - det.size[0] / 2, cy - det.size[1] / 2, cx + det.size[0] / 2, cy + det.size[1] / 2


class OccupancyGrid:
    """Table cells (1 cm) covered by a detected footprint grown by the held object's radius
    plus a margin: a free cell is a spot where the object fits without touching anything."""

    def __init__(self, area: TableArea, footprints: Sequence[tuple[float, float, float, float]],
                 radius: float, margin: float = 0.02, cell: float = 0.01) -> None:
        self.area, self.cell = area, cell
        x0 = area.centre[0] - area.size[0] / 2 + radius + margin
        y0 = area.centre[1] - area.size[1] / 2 + radius + margin
        x1 = area.centre[0] + area.size[0] / 2 - radius - margin
        y1 = area.centre[1] + area.size[1] / 2 - radius - margin
        xs, ys = np.arange(x0, x1 + 1e-9, cell), np.arange(y0, y1 + 1e-9, cell)
        self.x, self.y = np.meshgrid(xs, ys, indexing="ij")
        free = np.ones(self.x.shape, bool)
        grow = radius + margin
        for bx0, by0, bx1, by1 in footprints:
            free &= ~((self.x > bx0 - grow) & (self.x < bx1 + grow)
                      & (self.y > by0 - grow) & (self.y < by1 + grow))
        d = np.hypot(self.x - area.base[0], self.y - area.base[1])
        free &= (d >= area.reach[0]) & (d <= area.reach[1])
        self.free = free

    def nearest(self, to: Sequence[float], side: Side = "any",
                anchor_box: tuple[float, float, float, float] | None = None) -> np.ndarray | None:
        """The free cell nearest `to` on `side` of the anchor's box; None if none is free."""
        mask = self.free & self.side_mask(side, anchor_box)
        if not mask.any():
            return None
        d = np.hypot(self.x - to[0], self.y - to[1])
        d = np.where(mask, d, np.inf)
        i = np.unravel_index(int(np.argmin(d)), d.shape)
        return np.array([self.x[i], self.y[i]])

    def side_mask(self, side: Side,
                  box: tuple[float, float, float, float] | None) -> np.ndarray:
        """Cells on `side` of the box as the robot sees it: its base sits at -x looking +x,
        so left is +y (the oracle's default `left_axis`) and front is toward the base. A cell
        is on a side when it lies beyond that face and within the box's extent along it
        (straight to the left, not diagonally)."""
        if side == "any" or box is None:
            return np.ones(self.x.shape, bool)
        x0, y0, x1, y1 = box
        along_x = (self.x >= x0) & (self.x <= x1)
        along_y = (self.y >= y0) & (self.y <= y1)
        return {"left": (self.y > y1) & along_x, "right": (self.y < y0) & along_x,
                "front": (self.x < x0) & along_y, "behind": (self.x > x1) & along_y}[side]


def empty_space_target(area: TableArea, obstacles: Sequence[Detection], held_radius: float,
                       anchor: Detection | None, side: Side = "any") -> PlaceTarget:
    """The nearest free table cell to the anchor (on `side`), or to the table's reachable
    middle without one; `ValueError` with the reason when no cell is free."""
    boxes = [_box_of(d) for d in obstacles]
    grid = OccupancyGrid(area, boxes, held_radius)
    if anchor is None:
        reach = (area.reach[0] + area.reach[1]) / 2
        to = (area.base[0] + reach, area.base[1])
        spot = grid.nearest(to)
    else:
        spot = grid.nearest(anchor.centroid[:2], side, _box_of(anchor))
    if spot is None:
        where = "on the table" if anchor is None else f"{side} of '{anchor.phrase}'"
        raise ValueError(f"no free table space {where} for an object of radius "
                         f"{held_radius * 100:.1f} cm (occupancy grid of {len(boxes)} "
                         "footprints + 2 cm margin, within reach)")
    return PlaceTarget(spot, area.height, anchor.entity_id if anchor else None)
