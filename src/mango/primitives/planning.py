"""Place planning from perception, the fixtures a place or a grasp must know, and the
hand's sizes both use: where the hand goes, not how it gets there.

A place destination follows VoLo's phrasing ("in <container>", "on <surface>", "empty space
next to <anchor>", "empty space on the table"): container/surface centres from their
detections, empty space from an occupancy grid of every detected footprint plus a margin.
Known fixtures (`KnownFixture`) are the scene file's microwaves and drawer cabinets at their
measured (or nominal) pose: where their roof, opening and (for a drawer) exposed interior
are; "in" one of them is a horizontal insertion (a roof overhead) or top down into the open
drawer. Grasps are planned in `grasps`.
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
from mango.primitives.shape import object_points
from mango.sim.parts import DRAWER_FRAC, WALL, drawer_half, drawer_local
from mango.sim.scene import EntitySpec

GRIPPER_OPEN = 0.08  # m, the Franka Hand's full opening
RELEASE_CLEARANCE = 0.02  # m between the held object's bottom and the support at release
HAND_HALF_SPAN = 0.11  # m: the Franka Hand's half width along its opening axis, plus margin

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
    at: tuple[float, float] | None = None  # table: this spot, known free (where it stood)
    turn: float = 0.0  # rad about the vertical to turn the held object on the way (a regrasp)


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


def yaw_rot(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


@dataclass(frozen=True)
class KnownFixture:
    """A scene file's microwave or drawer cabinet where it stands: its box centre (world),
    yaw (rad), full size, and for a cabinet the drawer's joint value (q < 0 pulls it out
    toward -x of the cabinet) where it was measured. Geometry is the sim builder's
    (`sim.parts`): a microwave is open at its -x face, a cabinet's drawer slides along x."""

    entity_id: str
    shape: Literal["microwave", "drawer_cabinet"]
    centre: np.ndarray
    yaw: float
    size: tuple[float, float, float]
    drawer_q: float | None = None
    spec: EntitySpec | None = None  # the scene file's entry (the builder's geometry reads it)

    @classmethod
    def from_entity(cls, e: EntitySpec, position: Sequence[float], yaw: float | None = None,
                    drawer_q: float | None = None) -> KnownFixture | None:
        """The fixture for a scene entity (None for other shapes) with its box centre at
        `position` and heading `yaw` (rad; the scene file's when None)."""
        if e.shape not in ("microwave", "drawer_cabinet"):
            return None
        return cls(e.id, e.shape, np.asarray(position, float),  # type: ignore[arg-type]
                   math.radians(e.yaw) if yaw is None else yaw,
                   (float(e.size[0]), float(e.size[1]), float(e.size[2])), drawer_q, e)

    def local(self, xy: Sequence[float]) -> np.ndarray:
        """A world xy point in the fixture's frame."""
        return yaw_rot(-self.yaw) @ (np.asarray(xy[:2], float) - self.centre[:2])

    def world(self, local_xy: Sequence[float]) -> np.ndarray:
        return self.centre[:2] + yaw_rot(self.yaw) @ np.asarray(local_xy, float)

    @property
    def into(self) -> np.ndarray:
        """Horizontal world direction into the fixture's opening (its +x axis)."""
        return np.array([math.cos(self.yaw), math.sin(self.yaw), 0.0])

    @property
    def _half(self) -> tuple[float, float, float]:
        return self.size[0] / 2, self.size[1] / 2, self.size[2] / 2

    def roof_over(self, xy: Sequence[float]) -> float | None:
        """Underside height of the fixture's part over `xy` (its roof; a cabinet's shelf
        over the bottom drawer), None when nothing of it is overhead there."""
        lx, ly = self.local(xy)
        hx, hy, hz = self._half
        if abs(lx) >= hx or abs(ly) >= hy:
            return None
        if self.shape == "microwave":
            return float(self.centre[2] + hz - WALL)
        return float(self.centre[2] - hz + WALL + self.size[2] * DRAWER_FRAC + 0.004)

    def interior_floor(self) -> float:
        """Height of the surface an object inside stands on (the cavity's or drawer's floor)."""
        hz = self._half[2]
        if self.shape == "microwave":
            return float(self.centre[2] - hz + WALL)
        e = self._spec()
        return float(self.centre[2] + drawer_local(e)[2] - drawer_half(e)[2] + WALL)

    def _spec(self) -> EntitySpec:
        if self.spec is not None:
            return self.spec
        return EntitySpec.model_validate({
            "id": self.entity_id, "kind": "fixture", "shape": self.shape, "size": self.size,
            "position": (0.0, 0.0), "joint": {"id": f"{self.entity_id}_joint", "q_open": -0.1,
                                               "q_closed": 0.0, "q_init": 0.0,
                                               "range": (-0.3, 0.0)}})

    def interior_box(self) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned box (centre, size) of the inside: the microwave's cavity, the
        cabinet's bottom drawer where it is (pulled out by -`drawer_q`)."""
        hx, hy, hz = self._half
        if self.shape == "microwave":
            lo = np.array([-hx, -hy + WALL, -hz + WALL])
            hi = np.array([hx - WALL, hy - WALL, hz - WALL])
        else:
            e = self._spec()
            dx, dy, dz = drawer_half(e)
            zc, q = drawer_local(e)[2], self.drawer_q or 0.0
            lo, hi = np.array([q - dx, -dy, zc - dz]), np.array([q + dx, dy, zc + dz])
        corners = [self.world((x, y)) for x in (lo[0], hi[0]) for y in (lo[1], hi[1])]
        xy0, xy1 = np.min(corners, axis=0), np.max(corners, axis=0)
        c = np.array([(xy0[0] + xy1[0]) / 2, (xy0[1] + xy1[1]) / 2,
                      self.centre[2] + (lo[2] + hi[2]) / 2])
        return c, np.array([xy1[0] - xy0[0], xy1[1] - xy0[1], hi[2] - lo[2]])

    def contains(self, xy: Sequence[float]) -> bool:
        lx, ly = self.local(xy)
        hx, hy, _ = self._half
        return abs(lx) < hx and abs(ly) < hy


def fixture_of(det: Detection | None,
               fixtures: Sequence[KnownFixture]) -> KnownFixture | None:
    """The known fixture a detection is: by entity id, else the one under its centroid (a
    backend that knows no ids)."""
    if det is None:
        return None
    for fx in fixtures:
        if det.entity_id is not None and fx.entity_id == det.entity_id:
            return fx
    if det.entity_id is None:
        return next((fx for fx in fixtures if fx.contains(det.centroid)), None)
    return None


def fixture_release(fx: KnownFixture, radius: float, base: Sequence[float]) -> PlaceTarget:
    """Where an object of footprint radius `radius` goes "in" a known fixture.

    Microwave (roof overhead): a horizontal insertion along `into`, the object fully past
    the opening with 2 cm to spare, the hand's span clear of the side walls, the point
    nearest the robot's base (the shortest reach for a horizontal hand). Drawer cabinet: top
    down into the drawer's exposed part (the part pulled out past the cabinet's front);
    `ValueError` when that part is too short for the object (the drawer closed or unmeasured).
    """
    hx, hy, _ = fx._half
    b = fx.local(base)
    if fx.shape == "microwave":
        x_lo, x_hi = -hx + radius + 0.05, hx - WALL - radius - 0.01
        y_lim = hy - WALL - HAND_HALF_SPAN
        if x_lo > x_hi or y_lim < 0:
            raise ValueError(f"'{fx.entity_id}' is too small inside for an object of radius "
                             f"{radius * 100:.1f} cm held from the side")
        local = np.array([x_lo, float(np.clip(b[1], -y_lim, y_lim))])
        return PlaceTarget(fx.world(local), fx.interior_floor(), fx.entity_id, fx.into)
    if fx.drawer_q is None:
        raise ValueError(f"how far the drawer of '{fx.entity_id}' is open is unknown (no "
                         "measured joint, no detection of it)")
    e = fx._spec()
    dx, dy, _ = drawer_half(e)
    front, back = fx.drawer_q - dx + WALL, min(-hx, fx.drawer_q + dx - WALL)
    free = back - front
    if free < 2 * radius + 0.02:
        raise ValueError(f"the drawer of '{fx.entity_id}' is open {max(0.0, free) * 100:.0f} "
                         f"cm past the cabinet's front: too little for an object "
                         f"{2 * radius * 100:.0f} cm across (open it first)")
    y_lim = max(0.0, dy - WALL - radius - 0.01)
    local = np.array([(front + back) / 2, float(np.clip(b[1], -y_lim, y_lim))])
    return PlaceTarget(fx.world(local), fx.interior_floor(), fx.entity_id)


def drawer_q_from_box(fx: KnownFixture, det: Detection) -> float:
    """The drawer's joint value from a detection of the whole cabinet: its axis-aligned box
    reaches past the cabinet's front by as much as the drawer is pulled out (a cabinet turned
    by a multiple of 90 degrees, as the scenes have it)."""
    d = fx.into[:2]
    c = np.asarray(det.centroid[:2], float)
    half = np.asarray(det.size[:2], float) / 2
    # the box's extent behind and in front of the fixture centre along -into (toward the front)
    reach_front = float(np.dot(fx.centre[:2] - c, d) + np.dot(np.abs(d), half))
    return -max(0.0, reach_front - fx._half[0])


@dataclass(frozen=True)
class PlaceTarget:
    """Release point: the held object's bottom goes to `support_z` + clearance under `xy`,
    lowered from above, or slid in along `insert` where the destination has a roof."""

    xy: np.ndarray
    support_z: float
    entity_id: str | None  # the container/surface/anchor as perceived
    insert: np.ndarray | None = None  # horizontal insertion along this (a roof overhead)
    turn: float = 0.0  # rad about the vertical: the held object turned so that it fits there

    def release_hand(self, hand_above_bottom: float) -> np.ndarray:
        return np.array([self.xy[0], self.xy[1],
                         self.support_z + RELEASE_CLEARANCE + hand_above_bottom])


def container_target(det: Detection, floor: float = 0.012,
                     occupants: Sequence[Detection] = (),
                     held_half: tuple[float, float] = (0.0, 0.0),
                     base: Sequence[float] = (0.0, 0.0),
                     frame: RGBDFrame | None = None, turnable: bool = True) -> PlaceTarget:
    """In a container: over its centre, the support its floor (just above the box bottom).
    With `occupants` (what is in it already) or, seen in `frame`'s depth, parts of the
    container standing up inside it (a caddy's divider), the free spot inside nearest the
    centre for the held object's footprint, `held_half` its half extents along x and y
    (`OccupancyGrid` over the container's box, 5 mm margins), the floor no higher than the
    occupants' bottoms: a second can released over the centre lands on the first and tips
    out, a book released over a divider rests on it or falls into either side, and what is
    in it hides the floor and pulls the box toward the side still seen. An oblong object
    that fits only turned a quarter (the cream cheese beside the soup) is turned (`turn`)
    when it can be (`turnable`: held from the top).
    Without a free spot, over the centre as before: a flat box on a flat box stays in the
    basket."""
    cx, cy, cz = det.centroid
    bottom = cz - det.size[2] / 2
    blocked = [_box_of(o) for o in occupants] + raised_inside(det, frame)
    if occupants:
        bottom = min(bottom, *(o.centroid[2] - o.size[2] / 2 for o in occupants))
    if blocked:
        hx, hy = held_half
        fits = [((hx, hy), 0.0)] + ([((hy, hx), math.pi / 2)] if turnable else [])
        for half, turn in fits:
            spot = _free_spot_over(det, blocked, half, base)
            if spot is not None:
                return PlaceTarget(spot, bottom + floor, det.entity_id, turn=turn)
    return PlaceTarget(np.array([cx, cy]), bottom + floor, det.entity_id)


def _free_spot_over(det: Detection, blocked: Sequence[tuple[float, float, float, float]],
                    half: tuple[float, float], base: Sequence[float]) -> np.ndarray | None:
    """The free spot over `det`'s footprint nearest its centre for a footprint of half
    extents `half` (the 1 cm grid, 5 mm margins), clear of the `blocked` boxes; None when
    none is free. What the container and the surface targets share."""
    cx, cy, cz = det.centroid
    area = TableArea((cx, cy), (det.size[0], det.size[1]), cz, (base[0], base[1]),
                     reach=(0.0, np.inf))
    return OccupancyGrid(area, blocked, half, margin=0.005).nearest((cx, cy))


RAISED = 0.02  # m above a container's floor: a part of it standing up inside (a divider)
RIM = 0.015  # m inside the box's edges: its walls, which the footprint's margins keep off


def raised_inside(det: Detection, frame: RGBDFrame | None,
                  cell: float = 0.01) -> list[tuple[float, float, float, float]]:
    """Footprints (the points' extent per `cell` column) of the container's own points
    standing more than `RAISED` above its floor (the 5th percentile of its inner points'
    heights) away from its walls: what a release over them would land on. None without a
    mask and depth on this frame, or with too few points inside to tell the floor."""
    pts = object_points(det, frame)
    if pts is None:
        return []
    x0, y0, x1, y1 = _box_of(det)
    inner = pts[(pts[:, 0] > x0 + RIM) & (pts[:, 0] < x1 - RIM)
                & (pts[:, 1] > y0 + RIM) & (pts[:, 1] < y1 - RIM)]
    if len(inner) < 50:
        return []
    high = inner[inner[:, 2] > np.percentile(inner[:, 2], 5) + RAISED][:, :2]
    if not len(high):
        return []
    cols = np.floor(high / cell).astype(np.int64)
    order = np.lexsort((cols[:, 1], cols[:, 0]))
    high, cols = high[order], cols[order]
    starts = np.flatnonzero(np.r_[True, np.any(cols[1:] != cols[:-1], axis=1)])
    lo, hi = np.minimum.reduceat(high, starts), np.maximum.reduceat(high, starts)
    return [(float(a[0]), float(a[1]), float(b[0]), float(b[1]))
            for a, b in zip(lo, hi, strict=True)]


def inside_box(container: Detection, dets: Sequence[Detection]) -> list[Detection]:
    """The detections whose centre lies within the container's footprint."""
    x0, y0, x1, y1 = _box_of(container)
    return [d for d in dets if x0 < d.centroid[0] < x1 and y0 < d.centroid[1] < y1]


def surface_target(det: Detection, frame: RGBDFrame | None = None,
                   occupants: Sequence[Detection] = (),
                   held_half: tuple[float, float] = (0.0, 0.0),
                   base: Sequence[float] = (0.0, 0.0)) -> PlaceTarget:
    """On a surface or object: over its centre, the support the surface's height there
    (`surface_height`), or its box top without depth. With `occupants` (what stands on it
    already: the first moka pot on the stove), the free spot on it nearest its centre for
    the held footprint (`held_half`, as `container_target`): released over the centre, the
    second pot came down on the first. Without one, over the centre as before."""
    cx, cy, cz = det.centroid
    xy = np.array([cx, cy])
    if occupants:
        spot = _free_spot_over(det, [_box_of(o) for o in occupants], held_half, base)
        if spot is not None:
            xy = spot
    top = surface_height(det, frame, xy, 0.0, 0.04) if frame is not None else None
    return PlaceTarget(xy, cz + det.size[2] / 2 if top is None else top, det.entity_id)


def standing_on(surface: Detection, dets: Sequence[Detection]) -> list[Detection]:
    """The detections standing on `surface`: their centre over its footprint and their
    bottom above its bottom (not the table under it, not something it stands on)."""
    bottom = surface.centroid[2] - surface.size[2] / 2
    return [d for d in inside_box(surface, dets)
            if d.centroid[2] - d.size[2] / 2 > bottom + 0.005]


def surface_height(det: Detection, frame: RGBDFrame, xy: Sequence[float], inner: float,
                   outer: float) -> float | None:
    """Median height of the detection's depth points between `inner` and `outer` (m) of
    `xy`: the surface an object stands on there. A box's top is its highest part (a stove's
    knobs and rim, 5 cm above its plate); None without a mask, depth or points there."""
    if det.mask is None or frame.depth is None or frame.intrinsics is None or frame.pose is None:
        return None
    if det.camera != frame.camera:  # seen through another camera: its mask is not this frame's
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
                 radius: float | tuple[float, float], margin: float = 0.02,
                 cell: float = 0.01) -> None:
        """`radius`: the held object's, or its half extents along x and y (a box whose yaw
        the place keeps)."""
        self.area, self.cell = area, cell
        rx, ry = (radius, radius) if isinstance(radius, float | int) else radius
        gx, gy = rx + margin, ry + margin
        x0 = area.centre[0] - area.size[0] / 2 + gx
        y0 = area.centre[1] - area.size[1] / 2 + gy
        x1 = area.centre[0] + area.size[0] / 2 - gx
        y1 = area.centre[1] + area.size[1] / 2 - gy
        xs, ys = np.arange(x0, x1 + 1e-9, cell), np.arange(y0, y1 + 1e-9, cell)
        self.x, self.y = np.meshgrid(xs, ys, indexing="ij")
        free = np.ones(self.x.shape, bool)
        for bx0, by0, bx1, by1 in footprints:
            free &= ~((self.x > bx0 - gx) & (self.x < bx1 + gx)
                      & (self.y > by0 - gy) & (self.y < by1 + gy))
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
