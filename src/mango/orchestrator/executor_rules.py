"""The executor's offline rules for a pick-and-place subgoal: from perception (the object's
and destination's detected boxes, `primitives.planning`'s grasp and release point) and
proprioception, each batch named by its rule; fixture subgoals go to `fixture_rules`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mango.orchestrator.fixture_rules import FixtureRules
from mango.orchestrator.insertion_rules import InsertionRules
from mango.orchestrator.motor_schemas import (
    ActionBatch,
    MotionAction,
    Observation,
    RegionView,
    batch,
    grip,
    move,
    nearest_turn,
    planar,
    turn,
)
from mango.perception.base import Detection, RGBDFrame
from mango.primitives.grasps import GraspPlan, GraspScene, grasp_options, plan_grasp
from mango.primitives.planning import (
    GRIPPER_OPEN,
    OccupancyGrid,
    PlaceRequest,
    PlaceTarget,
    TableArea,
    container_target,
    empty_space_target,
    fixture_release,
    footprint_extents,
    parse_destination,
    surface_height,
    surface_target,
)


@dataclass
class OfflineExecutor:
    """Named rules from perception and proprioception for a pick-and-place subgoal:
    open first, rise to travel height, go over the object, align the fingers across its narrow
    side, descend-close-lift; then carry over the destination, lower, open, rise. A subgoal
    that acts on a fixture goes to `fixtures`."""

    name: str = "offline"
    xy_tol: float = 0.006  # m: close enough over a target
    yaw_tol: float = math.radians(4.0)
    z_tol: float = 0.008
    # the release point chosen when a carry starts, kept while carrying: the held object
    # hides part of the destination from the camera and would shift its perceived box
    _release: dict[str, PlaceTarget] = field(default_factory=dict)
    _grip: dict[str, tuple[float, np.ndarray]] = field(default_factory=dict)
    _side: dict[str, GraspPlan] = field(default_factory=dict)
    fixtures: FixtureRules = field(default_factory=FixtureRules)
    insertion: InsertionRules = field(default_factory=InsertionRules)

    def propose(self, obs: Observation, feedback: str | None) -> ActionBatch:
        sg = obs.subgoal
        if not obs.holding:
            self._release.pop(sg.id, None)
        else:
            self._grip.pop(sg.id, None)
        if obs.criterion_holds():
            return batch("the subgoal's criterion holds", True, "nothing", [], None,
                         "executor.criterion_holds", 0.95)
        if obs.fixture is not None:
            if not obs.hand_down:
                return self.insertion.hand_down(obs)
            return self.fixtures.propose(obs, obs.fixture)
        if not sg.destination_phrase:
            return batch(f"no motion rule for '{sg.instruction}'", False, "nothing", [], None,
                         "executor.no_rule", 0.0)
        if obs.object_det is None:
            return batch(f"'{sg.object_phrase}' is not seen", False, "nothing", [], None,
                         "executor.not_seen", 0.0)
        if obs.holding:
            return self._carry(obs)
        return self._pick(obs)

    # -- picking
    def _pick(self, obs: Observation) -> ActionBatch:
        det = obs.object_det
        assert det is not None
        try:
            side = self._side_grasp(obs, det)
            g = plan_grasp(det)
        except ValueError as exc:
            return batch(str(exc), False, "nothing", [], None, "executor.ungraspable", 0.0)
        if side is not None:
            return self.insertion.pick(obs, side)
        if not obs.hand_down:
            return self.insertion.hand_down(obs)
        hand = obs.hand
        acts: list[MotionAction] = []
        if obs.width_cmd < g.width - 0.002 or obs.width < g.width - 0.01:
            return batch("the hand is closed and holds nothing", False, "the hand open",
                         [grip("open")], False, "executor.open_first", 0.9)
        dxy = g.grasp[:2] - hand[:2]
        over = float(np.hypot(*dxy)) <= self.xy_tol
        if not over:
            if abs(hand[2] - obs.travel_z) > 0.03:  # cross at the travel height
                acts.append(move("up" if hand[2] < obs.travel_z else "down",
                                  abs(obs.travel_z - hand[2])))
            acts += planar(dxy)
            return batch(f"the {obs.subgoal.object_phrase} is {np.hypot(*dxy) * 100:.1f} cm "
                         "away in the plane", False, "the hand over the object", acts, False,
                         "executor.go_over_object", 0.8)
        # the finger direction chosen over the object is kept while it stays put: the hand
        # itself hides part of it from the camera, and a near-square box's yaw flips
        yaw, at = self._grip.get(obs.subgoal.id, (g.opening_yaw, g.grasp[:2]))
        if float(np.hypot(*(at - g.grasp[:2]))) > 0.02:
            yaw, at = g.opening_yaw, g.grasp[:2]
        self._grip[obs.subgoal.id] = (yaw, at)
        dyaw = nearest_turn(yaw - obs.opening_yaw)
        if abs(dyaw) > self.yaw_tol:
            lo, hi = obs.q7_range
            # the wrist turns against the hand's yaw (the hand points down): keep it in range
            if not lo + 0.2 < obs.q7 - dyaw < hi - 0.2:
                dyaw = dyaw - math.copysign(math.pi, dyaw)
            return batch(f"the fingers are {math.degrees(dyaw):.0f} deg off the narrow side",
                         False, "the fingers across the object", [turn(dyaw)], False,
                         "executor.align_fingers", 0.8)
        down = hand[2] - float(g.grasp[2])
        if down > self.z_tol:
            acts.append(move("down", down))
        acts += [grip("close"), move("up", max(obs.travel_z - float(g.grasp[2]), 0.05))]
        return batch("over the object with the fingers across it", False,
                     f"the {obs.subgoal.object_phrase} held, lifted", acts, True,
                     "executor.descend_close_lift", 0.75)

    def _side_grasp(self, obs: Observation, det: Detection) -> GraspPlan | None:
        """A side grasp when the place that follows slides the object in (into a microwave):
        along the insertion's axis, kept while the object stays put (the hand approaching
        it hides part of it)."""
        if obs.into is None or obs.into.shape != "microwave":
            return None
        base = obs.table_area.base if obs.table_area is not None else (0.0, 0.0)
        g = grasp_options(det, GraspScene(base=base, insert_into=obs.into))[0]
        kept = self._side.get(obs.subgoal.id)
        if kept is not None and float(np.hypot(*(kept.grasp[:2] - g.grasp[:2]))) <= 0.02:
            return kept
        self._side[obs.subgoal.id] = g
        return g

    # -- carrying
    def _carry(self, obs: Observation) -> ActionBatch:
        sg = obs.subgoal
        dest = obs.destination_det
        if dest is None:
            return batch(f"the destination '{sg.destination_phrase}' is not seen", False,
                         "nothing", [], True, "executor.destination_not_seen", 0.0)
        try:
            req = parse_destination(sg.destination_phrase or "")
        except ValueError as exc:
            return batch(str(exc), False, "nothing", [], True, "executor.no_rule", 0.0)
        try:
            target = self._release.get(sg.id) or _place_target(req, dest, obs)
        except ValueError as exc:
            return batch(f"no release point {req.text}: {exc}", False, "nothing", [], True,
                         "executor.no_release_point", 0.0)
        self._release[sg.id] = target
        det = obs.object_det
        assert det is not None
        # the hand keeps its height above the held object's bottom
        above_bottom = obs.hand[2] - (det.centroid[2] - det.size[2] / 2)
        if target.insert is not None:
            return self.insertion.insert(obs, target, float(above_bottom), float(det.size[2]),
                                         req.text)
        release = target.release_hand(float(above_bottom))
        hand = obs.hand
        dxy = release[:2] - hand[:2]
        if float(np.hypot(*dxy)) > self.xy_tol:
            acts = []
            carry = max(obs.travel_z, float(release[2]) + 0.1)
            if hand[2] < carry - 0.03:
                acts.append(move("up", carry - hand[2]))
            acts += planar(dxy)
            return batch(f"holding it {np.hypot(*dxy) * 100:.1f} cm from the release point",
                         False, "the object over the destination", acts, True,
                         "executor.carry_over_destination", 0.8)
        acts = []
        down = hand[2] - float(release[2])
        if down > self.z_tol:
            acts.append(move("down", down))
        acts += [grip("width", min(GRIPPER_OPEN, obs.width + 0.025)),
                 move("up", max(obs.travel_z - float(release[2]), 0.05))]
        return batch("over the release point", False, f"the object {req.text}", acts, False,
                     "executor.lower_release_rise", 0.75)


def _place_target(req: PlaceRequest, dest: Detection, obs: Observation) -> PlaceTarget:
    """Where the held object is released; `ValueError` says why there is no such point.

    Into a drawer or a microwave: `primitives.planning.fixture_release` (the drawer's exposed
    part, the cavity past its opening). Where the subgoal's criterion names a region, the
    point is in that region: its middle (away from what already stands there) in a container,
    on a surface or on the table (the free cell nearest its middle); else the perceived
    destination's centre, or the free table cell nearest the anchor on its side."""
    held = obs.object_det
    base = obs.table_area.base if obs.table_area is not None else (0.0, 0.0)
    if req.kind == "in" and obs.into is not None and held is not None:
        return fixture_release(obs.into, max(held.size[0], held.size[1]) / 2, base)
    region = obs.region
    if req.kind == "in":
        target = container_target(dest)
        if region is None:
            return _free_spot(target, _Footprint.of_detection(dest), obs)
        return _free_spot(PlaceTarget(region.centre[:2].copy(), target.support_z,
                                      target.entity_id), _Footprint.of_region(region), obs)
    if req.kind == "on":
        target = surface_target(dest, obs.frame)  # type: ignore[arg-type]
        if region is None:
            return target
        xy = region.centre[:2]
        top = surface_height(dest, obs.frame, xy, 0.0, 0.04) \
            if isinstance(obs.frame, RGBDFrame) else None
        return PlaceTarget(xy.copy(), target.support_z if top is None else top,
                           target.entity_id)
    if obs.table_area is None or held is None:
        raise ValueError("no table area to find empty space on")
    major, minor = footprint_extents(held)
    radius = math.hypot(major, minor) / 2
    if region is not None:
        return _spot_in_region(region, obs.table_area, [*obs.others, dest], radius)
    # the free table cell nearest the anchor, on its side
    try:
        return empty_space_target(obs.table_area, [*obs.others, dest], radius, dest, req.side)
    except LookupError as exc:
        raise ValueError(str(exc)) from None


def _spot_in_region(region: RegionView, area: TableArea, obstacles: list[Detection],
                    radius: float) -> PlaceTarget:
    """The free cell nearest the region's middle among those inside it (its middle when
    none is free: the region is what the criterion asks for)."""
    grow = radius + 0.02  # the occupancy grid's margin: its cells then span the region
    sx, sy = _axis_aligned(region)
    inside = TableArea((float(region.centre[0]), float(region.centre[1])),
                       (sx + 2 * grow, sy + 2 * grow), area.height, area.base, (0.0, math.inf))
    spot = OccupancyGrid(inside, [_box_of(d) for d in obstacles], radius).nearest(
        region.centre[:2])
    return PlaceTarget(region.centre[:2].copy() if spot is None else spot, area.height, None)


def _axis_aligned(region: RegionView) -> tuple[float, float]:
    c, s = abs(math.cos(region.yaw)), abs(math.sin(region.yaw))
    return (c * region.size[0] + s * region.size[1], s * region.size[0] + c * region.size[1])


def _box_of(det: Detection) -> tuple[float, float, float, float]:
    cx, cy, _ = det.centroid
    return cx - det.size[0] / 2, cy - det.size[1] / 2, cx + det.size[0] / 2, cy + det.size[1] / 2


@dataclass(frozen=True)
class _Footprint:
    """A container's inside seen from above: what counts as in it, and its long axis."""

    centre: np.ndarray
    half: tuple[float, float]  # along its own axes (yaw)
    yaw: float
    axis: np.ndarray  # the long side's direction
    major: float  # the long side's length

    @classmethod
    def of_detection(cls, det: Detection) -> _Footprint:
        major, _minor = footprint_extents(det)
        return cls(np.asarray(det.centroid[:2], float), (det.size[0] / 2, det.size[1] / 2),
                   0.0, np.array([math.cos(det.yaw), math.sin(det.yaw)]), major)

    @classmethod
    def of_region(cls, r: RegionView) -> _Footprint:
        long_yaw = r.yaw + (0.0 if r.size[0] >= r.size[1] else math.pi / 2)
        return cls(r.centre[:2].astype(float), (r.size[0] / 2, r.size[1] / 2), r.yaw,
                   np.array([math.cos(long_yaw), math.sin(long_yaw)]), max(r.size[:2]))

    def inside(self, xy: np.ndarray) -> bool:
        c, s = math.cos(self.yaw), math.sin(self.yaw)
        d = np.asarray(xy[:2], float) - self.centre
        return abs(c * d[0] + s * d[1]) < self.half[0] and abs(-s * d[0] + c * d[1]) < self.half[1]


def _free_spot(target: PlaceTarget, box: _Footprint, obs: Observation) -> PlaceTarget:
    """executor.free_spot_in_container: with something already in the container, release
    along its long side, at the end farthest from what is there (not onto it)."""
    inside = [d for d in obs.others if box.inside(np.asarray(d.centroid[:2]))]
    if not inside or obs.object_det is None:
        return target
    held = max(obs.object_det.size[0], obs.object_det.size[1]) / 2
    reach = max(box.major / 2 - held - 0.015, 0.0)
    ends = [np.asarray(target.xy, float) + k * reach * box.axis for k in (1.0, -1.0)]
    best = max(ends, key=lambda e: min(float(np.hypot(*(e - np.asarray(d.centroid[:2]))))
                                       for d in inside))
    return PlaceTarget(best, target.support_z, target.entity_id)
