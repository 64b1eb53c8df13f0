"""A spec §3 world state estimated from what a real robot has: markers seen by cameras, the
arm's joint states and the gripper's width. This is what lets the oracle judge a real FR3.

What it knows beforehand is the scene file (the same format the sim uses, or a smaller one):
entity ids, kinds, sizes, regions, joints, devices, and where fixtures stand. What it measures:

- **Poses** of marked entities and moving parts, from `ArucoBackend.poses` of each camera
  frame. A pose that jumps more than `confirm_jump` from its track is taken only once
  `confirm_frames` consecutive observations agree (one bad detection never moves an object).
- **Unseen entities keep their last pose** (a missed frame changes nothing; no verdict can flip
  on one) and are *stale* once unseen for `stale_after` s: `tracks()` says so, with the age and
  source of every pose (the node publishes it as diagnostics). Two things move what no camera
  sees: an object in the hand rides with the hand (the grasp's hand-to-object transform), and
  an object inside a region on a moving part (a drawer) rides with that part.
- **Joint values** of drawers, doors and knobs from a marker on the part (`sim.parts`), devices
  on/off from their joint with the scene's rule (`DeviceSpec.is_on`) or from a topic.
- **The gripper**: `closed` is the direction of its last motion (closing on an object stalls
  at the object's width; an open gripper keeps its width); an object is *held* when the
  gripper closed with the fingertip centre inside the object's box and stopped short of empty.
  A held object touches both fingers in `contacts`, and `grasped(x)` facts follow from the
  contacts by the sim's own rule (`oracle.world_state.grasp_facts`). Other contacts are boxes
  within `contact_gap` (estimated boxes are centimetre-accurate, not millimetre).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mango.control.kinematics import Kinematics
from mango.geometry import box_gap, mat_to_quat, quat_to_mat, yaw_quat
from mango.oracle.predicates import StateView, Thresholds, p_in
from mango.oracle.world_state import (
    DeviceState,
    EntityState,
    GripperState,
    JointState,
    WorldState,
    grasp_facts,
)
from mango.perception.aruco import MarkerPose
from mango.sim.markers import MarkerMap
from mango.sim.parts import joint_value, part_name, part_transform
from mango.sim.scene import ARTICULATED, EntitySpec, SceneSpec

MAX_WIDTH = 0.08  # Franka Hand opening (m)
FINGERS = ("robot_left_finger", "robot_right_finger")


@dataclass(frozen=True)
class EstimatorConfig:
    """Tuning of the estimator; the defaults fit the sim's cameras and a Franka Hand."""

    stale_after: float = 1.0  # s unseen before an entity's track is called stale
    confirm_jump: float = 0.05  # m: a new pose this far from the track needs confirming
    confirm_frames: int = 2  # consecutive agreeing observations that confirm a jump
    close_motion: float = 0.002  # m of narrowing that counts as the gripper closing
    # m of widening that counts as opening: more than fingers spring back after closing on
    # an object (the sim's pads: 3.6 mm)
    open_motion: float = 0.008
    empty_width: float = 0.004  # m: a gripper closed to this or less holds nothing
    grasp_margin: float = 0.01  # m: the fingertip centre may lie this far outside the box
    contact_gap: float = 0.01  # m: boxes this close count as touching
    max_width: float = MAX_WIDTH


@dataclass(frozen=True)
class Track:
    """Where an entity's (or part's) pose comes from, and how old it is."""

    entity: str  # entity id, or '<entity>/<part>' for a moving part
    source: str  # 'marker N', 'hand' (held), '<fixture> <part>' (rides it), 'scene' (never seen)
    age: float | None  # s since last observed (None: never)
    stale: bool


@dataclass
class _Pose:
    t: np.ndarray  # 4x4 world_T_entity
    seen: float | None = None  # stamp of the last observation
    source: str = "scene"
    pending: list[np.ndarray] = field(default_factory=list)  # unconfirmed jumps

    def observe(self, t: np.ndarray, stamp: float, source: str, cfg: EstimatorConfig) -> None:
        jump = float(np.linalg.norm(t[:3, 3] - self.t[:3, 3]))
        if self.seen is not None and jump > cfg.confirm_jump:
            self.pending = [p for p in self.pending
                            if np.linalg.norm(p[:3, 3] - t[:3, 3]) <= cfg.confirm_jump]
            self.pending.append(t)
            if len(self.pending) < cfg.confirm_frames:
                return
        self.pending = []
        self.t, self.seen, self.source = t, stamp, source


@dataclass
class _Part:
    q: float
    seen: float | None = None
    source: str = "scene"


class WorldStateEstimator:
    """Turns marker poses and joint states into world states, one `state(t)` at a time."""

    def __init__(self, scene: SceneSpec, markers: MarkerMap, kinematics: Kinematics,
                 robot_base: np.ndarray, config: EstimatorConfig | None = None) -> None:
        self.scene, self.markers, self.kin = scene, markers, kinematics
        self.base = np.asarray(robot_base, float)
        self.cfg = config or EstimatorConfig()
        self._entities = {e.id: e for e in scene.entities}
        self._poses = {e.id: _Pose(_nominal(scene, e)) for e in scene.entities}
        self._parts = {e.id: _Part(e.joint.q_init) for e in scene.entities
                       if e.shape in ARTICULATED and e.joint is not None}
        self._devices: dict[str, bool] = {}  # from topics: they win over the knob
        self._tcp: np.ndarray | None = None
        self._width: float | None = None
        self._closed = False
        self._anchor: float | None = None  # width where the gripper's last motion began
        self._held: str | None = None
        self._hand_t_held: np.ndarray | None = None
        self._riding: dict[str, tuple[str, np.ndarray]] = {}  # obj -> (region, part_T_obj)
        self._time = 0.0

    # ------------------------------------------------------------------ observations

    def observe_joints(self, q: Sequence[float], width: float | None, stamp: float) -> None:
        """The arm's joints (robot order) and the gripper width (sum of the finger joints)."""
        pos, quat = self.kin.fk(q)
        tcp = np.eye(4)
        tcp[:3, :3], tcp[:3, 3] = quat_to_mat(quat), pos
        self._tcp = self.base @ tcp
        self._time = max(self._time, stamp)
        if width is not None and math.isfinite(width):
            self._gripper(float(width))
        if self._held is not None and self._hand_t_held is not None:
            self._poses[self._held].t = self._tcp @ self._hand_t_held

    def observe_markers(self, poses: Sequence[MarkerPose], stamp: float) -> None:
        """Entity and part poses from one camera frame (`ArucoBackend.poses`)."""
        self._time = max(self._time, stamp)
        for p in poses:
            e = self._entities.get(p.entity)
            if e is None:
                continue
            t = np.eye(4)
            t[:3, :3], t[:3, 3] = p.rotation, p.position
            source = f"marker {p.marker_id}"
            if p.part == "base":
                track = self._poses[e.id]
                track.observe(t, stamp, source, self.cfg)
                if e.id == self._held and self._tcp is not None and track.seen == stamp:
                    self._hand_t_held = np.linalg.inv(self._tcp) @ track.t
                if track.seen == stamp:
                    self._riding.pop(e.id, None)
            elif e.id in self._parts:
                rel = np.linalg.inv(self._poses[e.id].t) @ t
                part = self._parts[e.id]
                part.q, part.seen, part.source = joint_value(e, rel), stamp, source
        self._update_riders(stamp)

    def observe_device(self, device: str, on: bool, stamp: float) -> None:
        """A device's on/off from a topic: it wins over what a knob marker says."""
        if device not in self._entities or self._entities[device].device is None:
            raise KeyError(f"'{device}' is not a device of scene '{self.scene.name}'")
        self._devices[device] = on
        self._time = max(self._time, stamp)

    # ------------------------------------------------------------------ the estimate

    def state(self, t: float | None = None) -> WorldState:
        """The world state now (or stamped `t`): spec §3, what the oracle judges."""
        sc = self.scene
        objects = self._objects()
        width = self._width
        joints: dict[str, JointState] = {}
        devices: dict[str, DeviceState] = {}
        for eid, part in self._parts.items():
            e = self._entities[eid]
            assert e.joint is not None
            joints[e.joint.id] = JointState(q=part.q, q_open=e.joint.q_open,
                                            q_closed=e.joint.q_closed)
            if e.device is not None:
                devices[eid] = DeviceState(on=self._devices.get(eid, e.device.is_on(part.q)))
        contacts = self._contacts(objects)
        return WorldState(
            t=round(self._time if t is None else t, 6), objects=objects, joints=joints,
            devices=devices,
            gripper=None if width is None else GripperState(width=width, closed=self._closed),
            contacts=contacts,
            facts=grasp_facts(contacts, (e.id for e in sc.entities if e.movable)))

    def _objects(self) -> dict[str, EntityState]:
        """The `objects` of the estimate: entities, the table, regions, the hand."""
        sc = self.scene
        objects: dict[str, EntityState] = {}
        for e in sc.entities:
            objects[e.id] = _entity_state(self._poses[e.id].t, e.size, e.kind)
        tb = sc.table
        objects[tb.id] = EntityState(position=(0.0, 0.0, tb.height - 0.025),
                                     orientation=(1.0, 0.0, 0.0, 0.0),
                                     size=(tb.size[0], tb.size[1], 0.05), kind="surface")
        for r in sc.regions:
            frame = self._frame(r.parent, r.part)
            pos = frame[:3, :3] @ np.asarray(r.offset, float) + frame[:3, 3]
            objects[r.id] = EntityState(position=tuple(map(float, pos)),
                                        orientation=_quat(frame[:3, :3]), size=r.size,
                                        kind="region", parent=r.parent)
        if self._tcp is not None:
            objects["robot_hand"] = EntityState(
                position=tuple(map(float, self._tcp[:3, 3])), orientation=_quat(self._tcp[:3, :3]),
                size=(0.02, max(self._width or 0.0, 0.001), 0.05), kind="robot")
        return objects

    def tracks(self, t: float | None = None) -> list[Track]:
        """Every entity's and part's pose source and age at `t` (default: the latest time)."""
        now = self._time if t is None else t
        out: list[Track] = []
        for eid, p in self._poses.items():
            if eid == self._held:
                out.append(Track(eid, "hand", _age(p.seen, now), False))
            elif eid in self._riding:
                region = self.scene.region(self._riding[eid][0])
                out.append(Track(eid, f"{region.parent} {region.part}", _age(p.seen, now),
                                 False))
            else:
                out.append(self._track(eid, p.source, p.seen, now))
        for eid, part in self._parts.items():
            out.append(self._track(f"{eid}/{part_name(self._entities[eid])}", part.source,
                                   part.seen, now))
        return out

    @property
    def held(self) -> str | None:
        """The object the gripper holds, if any."""
        return self._held

    # ------------------------------------------------------------------ internals

    def _track(self, name: str, source: str, seen: float | None, now: float) -> Track:
        age = _age(seen, now)
        return Track(name, source, age, age is None or age > self.cfg.stale_after)

    def _frame(self, entity: str, part: str) -> np.ndarray:
        """world_T_(entity or its moving part) as estimated now; the table's frame is its top
        centre, as the scene file places it."""
        if entity == self.scene.table.id:
            t = np.eye(4)
            t[2, 3] = self.scene.table.height
            return t
        t = self._poses[entity].t
        if part == "base":
            return t
        return t @ part_transform(self._entities[entity], self._parts[entity].q)

    def _gripper(self, width: float) -> None:
        cfg = self.cfg
        if self._anchor is None:
            self._anchor, self._closed = width, width < cfg.max_width / 2
        elif width < self._anchor - cfg.close_motion:
            self._closed, self._anchor = True, width
        elif width > self._anchor + cfg.open_motion:
            self._closed, self._anchor = False, width
        else:  # drifting along the motion it is in: follow it
            self._anchor = min(self._anchor, width) if self._closed else max(self._anchor, width)
        # still closing: the fingers have not met the object yet
        moving = self._width is not None and width < self._width - cfg.close_motion / 4
        self._width = width
        holding = self._closed and width > cfg.empty_width
        if not holding:
            self._held, self._hand_t_held = None, None
        elif self._held is None and self._tcp is not None and not moving:
            self._held = self._between_fingers()
            if self._held is not None:
                self._riding.pop(self._held, None)
                self._hand_t_held = np.linalg.inv(self._tcp) @ self._poses[self._held].t

    def _between_fingers(self) -> str | None:
        """The movable object whose box holds the fingertip centre (nearest centre first)."""
        assert self._tcp is not None
        tip = self._tcp[:3, 3]
        best: tuple[float, str] | None = None
        for e in self.scene.entities:
            if not e.movable:
                continue
            t = self._poses[e.id].t
            local = t[:3, :3].T @ (tip - t[:3, 3])
            half = np.asarray(e.size, float) / 2 + self.cfg.grasp_margin
            if np.all(np.abs(local) <= half):
                d = float(np.linalg.norm(local))
                if best is None or d < best[0]:
                    best = (d, e.id)
        return None if best is None else best[1]

    def _update_riders(self, stamp: float) -> None:
        """Objects inside a region on a moving part ride with it while no camera sees them."""
        part_regions = [r for r in self.scene.regions if r.part != "base"]
        if not part_regions:
            return
        view: StateView | None = None
        for e in self.scene.entities:
            if not e.movable or e.id == self._held:
                continue
            track = self._poses[e.id]
            if track.seen == stamp or e.id not in self._riding:  # is it in such a region?
                # boxes are all `in` reads: no contacts, joints or facts needed
                view = view or StateView(WorldState(t=0.0, objects=self._objects()),
                                         Thresholds())
                for r in part_regions:
                    if p_in(view, e.id, r.id):
                        part = self._frame(r.parent, r.part)
                        self._riding[e.id] = (r.id, np.linalg.inv(part) @ track.t)
                        break
                else:
                    self._riding.pop(e.id, None)
        for eid, (rid, part_t_obj) in self._riding.items():
            if self._poses[eid].seen != stamp:
                region = self.scene.region(rid)
                self._poses[eid].t = self._frame(region.parent, region.part) @ part_t_obj

    def _contacts(self, objects: dict[str, EntityState]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if self._held is not None:
            out += [(self._held, f) for f in FINGERS]
        view = StateView(WorldState(t=0.0, objects=objects), Thresholds())
        solids = [e.id for e in self.scene.entities] + [self.scene.table.id]
        movable = {e.id for e in self.scene.entities if e.movable}
        for i, a in enumerate(solids):
            for b in solids[i + 1:]:
                if a not in movable and b not in movable:
                    continue  # fixtures and the table stand still: no news
                if box_gap(view.box(a), view.box(b)) <= self.cfg.contact_gap:
                    out.append((a, b) if a < b else (b, a))
        return out


def _age(seen: float | None, now: float) -> float | None:
    return None if seen is None else max(0.0, now - seen)


def _nominal(scene: SceneSpec, e: EntitySpec) -> np.ndarray:
    """Where the scene file puts an entity (no per-seed jitter: a lab does not know it)."""
    t = np.eye(4)
    t[:3, :3] = quat_to_mat(yaw_quat(math.radians(e.yaw)))
    t[:3, 3] = (e.position[0], e.position[1], scene.table.height + e.size[2] / 2)
    return t


def _quat(r: np.ndarray) -> tuple[float, float, float, float]:
    q = mat_to_quat(r)
    q = q / np.linalg.norm(q)
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))


def _entity_state(t: np.ndarray, size: tuple[float, float, float], kind: str) -> EntityState:
    return EntityState(position=tuple(map(float, t[:3, 3])), orientation=_quat(t[:3, :3]),
                       size=size, kind=kind)  # type: ignore[arg-type]
