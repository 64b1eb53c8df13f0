"""Grasp planning from perception: where the hand goes, not how it gets there.

A grasp is planned from one `Detection` (what a perception node gives) and, where the frame
it came from has depth, the object's own points: top-down at the 3-D centroid, the fingers
closing across the footprint's narrow side (the detection's yaw is the major axis), the
opening from the narrow extent. A footprint that is a round body with something sticking out
of it (a mug and its handle: `shape.round_body`) is grasped at the body's axis, the fingers
closing across its diameter in a direction the protrusion leaves clear of the fingers and
the palm (`shape.blocks`).

Side grasps (`grasp_options`): when something is overhead within the top-down corridor (a
known fixture's roof: the microwave's, the cabinet's shelf over its drawer; or another
detection's depth points above the object) or the place that follows needs a horizontal
insertion (into a microwave), the hand comes horizontally from the free side: out of a
cavity's opening, else from the robot's base. When a round body's protrusion crosses the
insertion's axis, the object is taken from the top instead and turned on the way down so the
protrusion leads the insertion, then regrasped from the side (the executor's regrasp).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mango.perception.base import Detection, RGBDFrame
from mango.perception.geometry import back_project, to_world
from mango.primitives.clearance import clutter_points
from mango.primitives.planning import GRIPPER_OPEN, KnownFixture, footprint_extents, yaw_rot
from mango.primitives.shape import (
    CLEARANCE,
    CONFLICT_POINTS,
    FINGER_HALF_WIDTH,
    RoundBody,
    blocks,
    hand_conflicts,
    object_points,
    round_body,
)

FINGERTIP = 0.008  # m, pad bottoms below the TCP (as the sim's hand: sim.expert.arm)
PRE_GRASP = 0.12  # m above the grasp point: the straight approach starts there
GRIP_MARGIN = 0.02  # m of opening beyond the narrow extent before closing
PRE_SIDE = 0.11  # m back along the approach axis: a side grasp's straight approach starts there
SIDE_GRASP_MIN = 0.03  # m: a side grasp's pads at least this high above the object's bottom
CORRIDOR = 0.02  # m: half width of the column the top-down approach sweeps over the object
HAND_LENGTH = 0.2  # m above the TCP a vertical hand and wrist occupy
DOWN = np.array([0.0, 0.0, -1.0])


@dataclass(frozen=True)
class GraspPlan:
    """Where a grasp goes (world frame): hand at `grasp` with the fingers opening along
    `opening_yaw` (mod pi), `width` open before closing, a straight approach from
    `pre_grasp`: from above (`top`) or horizontally along `direction` (`side`). `body` is
    the round body read from the object's points (None for other shapes); `blocked` says
    why its protrusion is in the hand's way anyway (the plan then closes across both, as a
    box); `turn` is how far the place that follows turns the object about the vertical
    before a side regrasp (the top-down grasp leaves the wrist room for it); `offset`, for
    a grasp off the object's axis, where that axis is from the hand (a release puts the
    object, not the hand, where it goes)."""

    entity_id: str | None
    grasp: np.ndarray
    pre_grasp: np.ndarray
    opening_yaw: float
    width: float
    narrow: float  # m, the object's extent across the fingers
    bottom: float  # m, the object's bottom (z) as perceived
    approach: Literal["top", "side"] = "top"
    direction: np.ndarray | None = None  # side: the horizontal axis the hand points along
    retreat: bool = False  # side, overhead blocked: back out along the axis before lifting
    reason: str = ""  # why this approach (side grasps say what they avoid)
    body: RoundBody | None = None
    blocked: str = ""
    turn: float = 0.0
    offset: np.ndarray | None = None  # xy from the hand to the object's axis (a handle grasp)

    @property
    def hand_above_bottom(self) -> float:
        """Hand height above the object's bottom once grasped: what a release keeps."""
        return float(self.grasp[2] - self.bottom)


def _span(det: Detection) -> tuple[float, float]:
    """(bottom, top) of the detection's box."""
    return det.centroid[2] - det.size[2] / 2, det.centroid[2] + det.size[2] / 2


def _too_wide(det: Detection, across: float) -> None:
    if across > GRIPPER_OPEN - 0.005:
        raise ValueError(f"'{det.phrase}' is {across * 100:.1f} cm across its narrow side: "
                         f"wider than the hand opens ({GRIPPER_OPEN * 100:.0f} cm)")


def _top_height(det: Detection) -> float:
    """Pads 2.2 cm below the top, but never below the table (a low object: near its bottom)."""
    bottom, top = _span(det)
    return max(top - 0.022, bottom + FINGERTIP + 0.003)


def _box_top_plan(det: Detection) -> GraspPlan:
    return _box_top_plans(det)[0]


def _box_top_plans(det: Detection) -> list[GraspPlan]:
    """Across the narrow side first; then turned 15 and 30 degrees either way, and across
    the long side, where the box's extent across the fingers still fits the hand (what the
    clearance ranking picks from when a neighbour stands beside the narrow side's fingers)."""
    major, minor = footprint_extents(det)
    _too_wide(det, minor)
    bottom, _ = _span(det)
    grasp = np.array([det.centroid[0], det.centroid[1], _top_height(det)])
    # the opening from the world box, which bounds the narrow side from above whatever the
    # shape (the recovered `minor` assumes a rectangle: a handle fools it)
    width = min(GRIPPER_OPEN, min(det.size[0], det.size[1]) + GRIP_MARGIN)
    # the detection's yaw is the major axis: the fingers open across it
    plans = [GraspPlan(det.entity_id, grasp, grasp + np.array([0.0, 0.0, PRE_GRASP]),
                       det.yaw + math.pi / 2, width, minor, bottom, reason="top-down")]
    for deg in (15, -15, 30, -30, 90):
        t = math.radians(deg)
        across = minor * abs(math.cos(t)) + major * abs(math.sin(t))
        if across > GRIPPER_OPEN - 0.005:
            continue
        plans.append(dataclasses.replace(
            plans[0], opening_yaw=det.yaw + math.pi / 2 + t, narrow=across,
            width=min(GRIPPER_OPEN, across + GRIP_MARGIN),
            reason=f"top-down, turned {deg} deg from across the narrow side"))
    return plans


def _yaw_of(v: Sequence[float]) -> float:
    return math.atan2(v[1], v[0])


def plan_grasp(det: Detection, body: RoundBody | None = None) -> GraspPlan:
    """The first of `top_grasps`: the preferred top-down grasp."""
    return top_grasps(det, body)[0]


def top_grasps(det: Detection, body: RoundBody | None = None) -> list[GraspPlan]:
    """Top-down grasps of a detected object, preferred first; refuses one too wide for the
    hand. With a round `body`: at its axis, closing across its diameter, the opening normal
    to its protrusion first, then every 15 degrees the protrusion leaves clear of the hand
    (a body wider than the hand: pinched by its protrusion). A box: `_box_top_plans`."""
    if body is None:
        return _box_top_plans(det)
    if 2 * body.radius > GRIPPER_OPEN - 0.005:
        by_handle = plan_handle_grasp(det, body)
        if by_handle is not None:
            return [by_handle]
    _too_wide(det, 2 * body.radius)
    grasp = np.array([body.centre[0], body.centre[1], _top_height(det)])
    width = min(GRIPPER_OPEN, 2 * body.radius + GRIP_MARGIN)
    yaws = [_yaw_of(body.handle) + math.pi / 2] if body.handle is not None else []
    yaws += [det.yaw + math.pi / 2 + k * math.pi / 12 for k in range(12)]
    plans: list[GraspPlan] = []
    for yaw in yaws:
        opening = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        if any(abs(wrap_angle(2 * (yaw - p.opening_yaw))) < math.radians(10) for p in plans):
            continue  # the same opening axis (mod 180 degrees) as one already planned
        if not blocks(body.protrusion, grasp, DOWN, opening, width, body.radius):
            plans.append(GraspPlan(det.entity_id, grasp,
                                   grasp + np.array([0.0, 0.0, PRE_GRASP]), yaw, width,
                                   2 * body.radius, body.bottom,
                                   reason=f"top-down across {body.describe()}", body=body))
    if plans:
        return plans
    return [dataclasses.replace(_box_top_plan(det), body=body, blocked=(
        f"{body.describe()}: the protrusion meets the hand at every opening direction"))]


def _cylinder_points(body: RoundBody, step: float = 0.005) -> np.ndarray:
    """Points on the body's wall and top rim (world): what a hand beside it must clear."""
    n = max(12, int(2 * math.pi * body.radius / step))
    a = np.linspace(0.0, 2 * math.pi, n, endpoint=False)
    ring = body.centre + body.radius * np.column_stack((np.cos(a), np.sin(a)))
    zs = np.arange(body.bottom, body.top + 1e-9, step)
    return np.array([[x, y, z] for z in zs for x, y in ring])


def plan_handle_grasp(det: Detection, body: RoundBody) -> GraspPlan | None:
    """Top-down pinch of a round body's one protrusion (a mug's handle) across its
    thickness, the pads near its top, far enough out that the fingers and palm clear the
    body: for a body wider than the hand (the handle holds it: measured in the sim, a mug
    pinched so stays upright through a carry). None without one protrusion, one too thick
    for the hand, or no such pinch clear of the body. `offset` is where the body's axis is
    from the hand."""
    h = body.handle
    if h is None:
        return None
    side = np.array([-h[1], h[0]])
    rel = body.protrusion[:, :2] - body.centre
    along, across = rel @ h, rel @ side
    thick = float(across.max() - across.min())
    if thick + GRIP_MARGIN > GRIPPER_OPEN:
        return None
    out = max((body.radius + float(along.max())) / 2,
              body.radius + FINGER_HALF_WIDTH + CLEARANCE + 0.002)
    if out > float(along.max()) - 0.005:
        return None  # too short to hold clear of the body
    xy = body.centre + out * h + side * float(across.max() + across.min()) / 2
    z = float(body.protrusion[:, 2].max()) - 0.008
    grasp = np.array([xy[0], xy[1], z])
    width = min(GRIPPER_OPEN, thick + GRIP_MARGIN)
    opening = np.array([side[0], side[1], 0.0])
    if blocks(_cylinder_points(body), grasp, DOWN, opening, width, thick / 2):
        return None
    return GraspPlan(det.entity_id, grasp, grasp + np.array([0.0, 0.0, PRE_GRASP]),
                     _yaw_of(side), width, thick, body.bottom,
                     reason=(f"top-down by the protrusion of {body.describe()} (the body is "
                             f"wider than the hand opens)"), body=body, offset=body.centre - xy)


def overhead_blockers(det: Detection, others: Sequence[Detection],
                      fixtures: Sequence[KnownFixture], frame: RGBDFrame | None = None,
                      opening: float = GRIPPER_OPEN
                      ) -> list[tuple[str, float, KnownFixture | None]]:
    """What is overhead within the top-down corridor over `det` below the pre-grasp hand's
    top: (what, its underside height, the fixture or None). A known fixture's roof over the
    centroid; or another detection's depth points above the object's top in the column the
    hand sweeps (half the opening + 1 cm along, `CORRIDOR` across: an open container around
    the object has none there, a shelf does)."""
    cx, cy, _ = det.centroid
    _, top = _span(det)
    ceiling = top + PRE_GRASP + HAND_LENGTH
    out: list[tuple[str, float, KnownFixture | None]] = []
    for fx in fixtures:
        if fx.entity_id == det.entity_id:
            continue
        roof = fx.roof_over((cx, cy))
        if roof is not None and top - 0.01 < roof < ceiling:
            out.append((fx.entity_id, roof, fx))
    if frame is None or frame.depth is None or frame.intrinsics is None or frame.pose is None:
        return out
    reach = opening / 2 + 0.01
    for o in others:
        if o.mask is None or o is det or (o.entity_id and o.entity_id == det.entity_id) \
                or o.camera != frame.camera:
            continue
        if any(o.entity_id and o.entity_id == fx_id for fx_id, _, _ in out):
            continue
        pts = to_world(back_project(frame.depth, frame.intrinsics, o.mask), frame.pose)
        near = (np.hypot(pts[:, 0] - cx, pts[:, 1] - cy) <= max(reach, CORRIDOR)) & \
            (pts[:, 2] > top + 0.01) & (pts[:, 2] < ceiling)
        if int(near.sum()) >= 20:
            out.append((o.entity_id or o.phrase, float(np.min(pts[near, 2])), None))
    return out


def _extent_across(det: Detection, d: np.ndarray) -> float:
    """The object's horizontal extent across horizontal direction d (from its world box)."""
    return float(abs(d[1]) * det.size[0] + abs(d[0]) * det.size[1])


def _box_side_plan(det: Detection, d: np.ndarray, reason: str, retreat: bool) -> GraspPlan:
    across = _extent_across(det, d)
    _major, minor = footprint_extents(det)
    _too_wide(det, minor)
    if across > GRIPPER_OPEN - 0.005:
        # the box across this axis is wider than the hand, the body is not: a protrusion
        # the opened fingers push aside; the measured grasp decides
        reason += (f" (the box is {across * 100:.1f} cm across this axis, the body "
                   f"{minor * 100:.1f} cm: fully open)")
    cx, cy, cz = det.centroid
    bottom, _ = _span(det)
    grasp = np.array([cx, cy, max(cz, bottom + SIDE_GRASP_MIN)]) - 0.005 * d
    width = min(GRIPPER_OPEN, across + GRIP_MARGIN)
    return GraspPlan(det.entity_id, grasp, grasp - PRE_SIDE * d, _yaw_of(d) + math.pi / 2,
                     width, across, bottom, "side", d, retreat, reason)


def plan_side_grasp(det: Detection, direction: Sequence[float], reason: str,
                    retreat: bool, body: RoundBody | None = None) -> GraspPlan:
    """Horizontal grasp along `direction` (the hand pointing that way): pads vertical,
    closing across the object's extent normal to it (opened to it + 2 cm, at most fully),
    at mid-height (at least `SIDE_GRASP_MIN` above the bottom), approach from `PRE_SIDE`
    back along the axis; refused when even the object's narrow side is wider than the hand.

    With a round `body`: at its axis, closing across its diameter, at mid-height or else
    just above or below its protrusion where the pads still hold the body; when the
    protrusion is in the hand's way at every such height, the plan closes across both as a
    box does and `blocked` says so."""
    d = np.array([direction[0], direction[1], 0.0], float)
    d /= float(np.linalg.norm(d))
    if body is None:
        return _box_side_plan(det, d, reason, retreat)
    _too_wide(det, 2 * body.radius)
    width = min(GRIPPER_OPEN, 2 * body.radius + GRIP_MARGIN)
    opening = np.array([-d[1], d[0], 0.0])
    bottom, top = _span(det)
    lo, hi = bottom + SIDE_GRASP_MIN, top - 0.012
    heights = [max(det.centroid[2], lo)]
    if len(body.protrusion):
        pz = body.protrusion[:, 2]
        off = FINGER_HALF_WIDTH + CLEARANCE + 0.003
        heights += [z for z in (float(pz.max()) + off, float(pz.min()) - off) if lo <= z <= hi]
    for z in heights:
        grasp = np.array([body.centre[0], body.centre[1], z]) - 0.005 * d
        if not blocks(body.protrusion, grasp, d, opening, width, body.radius):
            return GraspPlan(det.entity_id, grasp, grasp - PRE_SIDE * d,
                             _yaw_of(d) + math.pi / 2, width, 2 * body.radius, bottom,
                             "side", d, retreat, f"{reason}; across {body.describe()}",
                             body)
    plan = _box_side_plan(det, d, reason, retreat)
    why = (f"the protrusion of {body.describe()} is in the hand's way along "
           f"{np.round(d[:2], 2).tolist()}")
    return dataclasses.replace(plan, body=body, blocked=why, reason=f"{plan.reason}; {why}")


@dataclass(frozen=True)
class GraspScene:
    """What besides the target decides a grasp's approach: the other detections (with the
    frame they came from, for depth), the known fixtures, the robot base, the fixture the
    object is to be inserted into next (a pick-and-place into a microwave), and whether a
    top-down grasp may stand in for a side grasp its protrusion blocks (not on a regrasp
    that has turned the object already)."""

    others: Sequence[Detection] = ()
    fixtures: Sequence[KnownFixture] = ()
    base: tuple[float, float] = (-0.56, 0.0)
    frame: RGBDFrame | None = None
    insert_into: KnownFixture | None = None
    turnable: bool = True


def _unit(v: Sequence[float]) -> np.ndarray:
    d = np.array([v[0], v[1]], float)
    return d / max(float(np.linalg.norm(d)), 1e-9)


def _side_directions(first: np.ndarray, base_dir: np.ndarray) -> list[np.ndarray]:
    """Approach axes to try, best first: `first`, from the base, then across from either
    side (any two less than 20 degrees apart count once)."""
    rot = yaw_rot(math.pi / 2)
    out: list[np.ndarray] = []
    for d in (first, base_dir, rot @ base_dir, -(rot @ base_dir)):
        d = _unit(d)
        if all(float(np.dot(d, o)) < math.cos(math.radians(20)) for o in out):
            out.append(d)
    return out


def wrap_angle(a: float) -> float:
    """`a` in (-pi, pi]."""
    a = math.remainder(a, 2 * math.pi)
    return math.pi if a == -math.pi else a


MAX_PLANS = 6  # top-down grasps handed on (each one the arm cannot reach costs an IK search)


def conflicts(plan: GraspPlan, points: np.ndarray) -> int:
    """How many of `points` a top-down `plan` meets on its way down."""
    opening = np.array([math.cos(plan.opening_yaw), math.sin(plan.opening_yaw), 0.0])
    return hand_conflicts(points, plan.grasp, DOWN, opening, plan.width, plan.narrow / 2)


def clear_first(plans: Sequence[GraspPlan], points: np.ndarray) -> list[GraspPlan]:
    """`plans` (top-down, preferred first) with those whose hand clears
    `points` first, in their order, then the rest by how many points they meet; at most
    `MAX_PLANS`. A plan that comes before the preferred one says why."""
    if not len(points) or len(plans) < 2:
        return list(plans[:MAX_PLANS])
    met = [conflicts(p, points) for p in plans]
    order = sorted(range(len(plans)),
                   key=lambda i: (met[i] >= CONFLICT_POINTS, met[i] if met[i] >= CONFLICT_POINTS
                                  else 0, i))
    out = [plans[i] for i in order[:MAX_PLANS]]
    if order[0] != 0 and met[0] >= CONFLICT_POINTS:
        why = (f"{out[0].reason}: the preferred grasp's fingers meet what stands beside it "
               f"({met[0]} depth points)" + ("" if met[order[0]] < CONFLICT_POINTS
                                             else f", this one fewer ({met[order[0]]})"))
        out[0] = dataclasses.replace(out[0], reason=why)
    return out


def grasp_options(det: Detection, scene: GraspScene) -> list[GraspPlan]:
    """The grasps to try for `det`, best first; each plan's `reason` says why its approach.

    Top-down unless the scene needs a side grasp: something overhead in the top-down
    corridor (`overhead_blockers`; the grasp then backs out along its axis before lifting),
    approached out of a cavity's opening (a microwave's) or else from the robot's base; or
    the place that follows is a horizontal insertion (`scene.insert_into`, a microwave),
    approached along the insertion's axis so the carry keeps the hand as it is. A side
    grasp's other axes (from the base, across from either side) follow as fall-backs for an
    arm that cannot reach the first. Where a round body's protrusion blocks the insertion's
    axis, a top-down grasp across the body comes first, with the `turn` that will point
    the protrusion along the insertion (the place regrasps from the side after it)."""
    bottom, top = _span(det)
    body = round_body(object_points(det, scene.frame), bottom, top)
    blockers = overhead_blockers(det, scene.others, scene.fixtures, scene.frame)
    base_dir = _unit(np.asarray(det.centroid[:2], float) - np.asarray(scene.base, float))
    if blockers:
        what, under, fx = min(blockers, key=lambda b: b[1])
        first = fx.into[:2] if fx is not None and fx.shape == "microwave" else base_dir
        why = (f"top-down blocked by '{what}' overhead {under - top:.3f} m above the "
               "object's top within the pre-grasp corridor")
        retreat = True
    elif scene.insert_into is not None and scene.insert_into.shape == "microwave":
        first = scene.insert_into.into[:2]
        why = (f"the place into '{scene.insert_into.entity_id}' is a horizontal insertion "
               "(its top is closed)")
        retreat = False
    else:
        return clear_first(top_grasps(det, body), clutter_points(det, scene.frame, body))
    plans, wide = [], []
    for d in _side_directions(first, base_dir):
        how = "back out along it before lifting" if retreat else "lift"
        reason = (f"side grasp: {why}; approach along {np.round(d, 2).tolist()}, {how}")
        try:
            plans.append(plan_side_grasp(det, d, reason, retreat, body))
        except ValueError as exc:  # too wide across this axis: another may fit
            wide.append(str(exc))
    if not plans:
        raise ValueError(f"side grasp needed ({why}) but {wide[0]} (and along every other "
                         "axis tried)")
    if not blockers and plans[0].blocked and scene.turnable and body is not None \
            and body.handle is not None:
        try:
            top_plan = plan_grasp(det, body)
        except ValueError:
            return plans
        if not top_plan.blocked:
            turn = wrap_angle(_yaw_of(first) - _yaw_of(body.handle))
            return [dataclasses.replace(top_plan, turn=turn, reason=(
                f"top-down: {why}, but {plans[0].blocked}: taken from the "
                f"top across the body, to be turned {math.degrees(turn):.0f} deg so the "
                "protrusion leads the insertion, and regrasped from the side")), *plans]
    return plans


def choose_grasp(det: Detection, scene: GraspScene) -> GraspPlan:
    """The best of `grasp_options`."""
    return grasp_options(det, scene)[0]
