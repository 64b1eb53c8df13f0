"""Grasp and place in the embedded sim: detect, plan, stream chunks, measure.

Everything a result says is measured after the motion, never assumed: a grasp is the gripper's
width and the fingers' contacts (the oracle's `grasped` on the sim's world state), a place is
the destination relation (`in`/`on`, the oracle's predicates, one implementation per relation)
on a world state built from a fresh detection after the release. The truth (`satisfied_truth`)
is the same predicate on the physics, for judging perception itself.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.errors import UnreachableError
from mango.oracle.predicates import StateView, Thresholds, p_grasped, p_in, p_on
from mango.oracle.world_state import EntityState, WorldState
from mango.perception.base import Detection, PerceptionBackend, RGBDFrame
from mango.perception.sim_frames import sim_frame
from mango.primitives.motion import WorldFrameIK, to_chunks
from mango.primitives.planning import (
    GRIPPER_OPEN,
    PlaceRequest,
    PlaceTarget,
    TableArea,
    container_target,
    empty_space_target,
    footprint_extents,
    plan_grasp,
    surface_height,
    surface_target,
)
from mango.sim.env import SimEnv
from mango.sim.expert.arm import ExpertError, PlannedArm
from mango.sim.expert.motions import down_quat, travel_height

log = logging.getLogger(__name__)

Status = str  # "succeeded" | "failed" | "rejected"
CLOSED = 0.0
MIN_HELD_WIDTH = 0.003  # m: fingers closer than this closed on air


@dataclass
class GraspOutcome:
    status: Status
    entity_id: str | None
    grasped: bool
    message: str
    width: float | None = None  # m, measured after the lift
    finger_contacts: list[str] = field(default_factory=list)
    detection: Detection | None = None
    hand_above_bottom: float = 0.0


@dataclass
class PlaceOutcome:
    status: Status
    release_position: list[float] | None
    satisfied: bool
    message: str
    satisfied_truth: bool | None = None
    destination_id: str | None = None


class SimPrimitives:
    """Grasp/place primitives on a `SimEnv`, seeing through one camera with one backend.

    `on_state` gets the world state after every control step (a trace writer)."""

    def __init__(self, env: SimEnv, backend: PerceptionBackend, camera: str = "front", *,
                 privileged: bool = True,
                 on_state: Callable[[WorldState], None] | None = None) -> None:
        self.env, self.backend, self.camera = env, backend, camera
        self.privileged = privileged
        self.on_state = on_state
        robot = load_robot("fr3")
        base_pos, base_quat = env.robot_base_pose()
        self.ik = WorldFrameIK(FR3Kinematics(robot), base_pos, base_quat)
        self.travel_z = travel_height(env.scene)
        self.held: GraspOutcome | None = None
        # the commanded opening (the measured one is smaller when the fingers squeeze)
        self.width_cmd = GRIPPER_OPEN
        self.last_frame: RGBDFrame | None = None  # what the last detection saw
        self.held_detection: Detection | None = None  # the held object before its grasp

    # ----------------------------------------------------------------- perception
    def detect(self, phrases: list[str]) -> tuple[dict[str, Detection], dict[str, str]]:
        """Best detection per phrase, and why each unmatched phrase is unmatched."""
        frame = sim_frame(self.env, self.camera)
        if not self.privileged:
            frame = frame.without_privileged()
        self.last_frame = frame
        res = self.backend.detect(frame, phrases, 1)
        found = {p: res.for_phrase(p)[0] for p in phrases if res.for_phrase(p)}
        why = {p: next((m for m in res.messages if p in m), "nothing matched")
               for p in phrases if p not in found}
        return found, why

    # ----------------------------------------------------------------- motion
    def _arm(self, width: float) -> PlannedArm:
        return PlannedArm(self.ik, self.env.joint_positions().copy(), width,  # type: ignore[arg-type]
                          travel_speed=0.3, approach_speed=0.15, travel_z=self.travel_z)

    def _run(self, rows: list[np.ndarray]) -> WorldState:
        state = self.env.world_state()
        if rows:
            self.width_cmd = float(rows[-1][7])
        for chunk in to_chunks(rows):
            if self.on_state is None:
                state = self.env.step_chunk(chunk)
                continue
            for row in chunk:  # a trace gets every control step (15 Hz, as `sim run`)
                self.env.step(row)
                state = self.env.world_state()
                self.on_state(state)
        return state

    def _settle(self, seconds: float = 0.4) -> WorldState:
        return self._run(self._arm(self.width_cmd).hold(seconds))

    # ----------------------------------------------------------------- grasp
    def grasp(self, phrase: str) -> GraspOutcome:
        found, why = self.detect([phrase])
        det = found.get(phrase)
        if det is None:
            return GraspOutcome("rejected", None, False,
                                f"'{phrase}' matches nothing in view: {why[phrase]}")
        try:
            plan = plan_grasp(det)
        except ValueError as exc:
            return GraspOutcome("rejected", det.entity_id, False, str(exc), detection=det)
        arm = self._arm(self.width_cmd)
        try:
            a = arm.grip_yaw(plan.opening_yaw)
            quat = down_quat(a)
            rows: list[np.ndarray] = []
            for part in arm.travel_to(plan.pre_grasp, quat, width=plan.width):
                rows += part
            rows += arm.line(plan.grasp, speed=arm.approach_speed)
            approach_rows = len(rows)
            rows += arm.hold(0.15)
            rows += arm.hold(0.7, CLOSED)
            lift = arm.line(np.array([plan.grasp[0], plan.grasp[1], self.travel_z]),
                            speed=arm.approach_speed)
        except (ExpertError, UnreachableError) as exc:
            return GraspOutcome("rejected", det.entity_id, False,
                                f"grasp of '{phrase}' unreachable: {exc}", detection=det)
        log.debug("grasp plan: %d rows to the object", approach_rows)
        self._run(rows)
        state = self._run(lift)
        state = self._settle(0.2)
        width = self.env.gripper_width()
        view = StateView(state, Thresholds())
        movable = [e.id for e in self.env.scene.entities if e.movable]
        held = [e for e in movable if p_grasped(view, e)]
        fingers = sorted({a for a, b in state.contacts if b in ("robot_left_finger",
                                                                 "robot_right_finger")})
        target = det.entity_id
        ok = width > MIN_HELD_WIDTH and (target in held if target else bool(held))
        entity = target if target else (held[0] if held else None)
        if ok:
            msg = f"holding '{entity}' (gripper width {width * 100:.1f} cm)"
        elif width <= MIN_HELD_WIDTH:
            msg = f"the hand closed on nothing at the planned grasp of '{phrase}'"
        else:
            msg = (f"after closing, '{target}' is not held (fingers touch "
                   f"{', '.join(fingers) or 'nothing'})")
        out = GraspOutcome("succeeded" if ok else "failed", entity, ok, msg, width, fingers, det,
                           plan.hand_above_bottom)
        if ok:
            self.held = out
        else:
            self._run(self._arm(self.width_cmd).hold(0.4, GRIPPER_OPEN))
        return out

    # ----------------------------------------------------------------- place
    def _area(self) -> TableArea:
        sc = self.env.scene
        top = self.env.world_state().objects[sc.table.id]
        return TableArea((top.position[0], top.position[1]), tuple(sc.table.size),  # type: ignore[arg-type]
                         sc.table.height, tuple(sc.robot.base[:2]))  # type: ignore[arg-type]

    def _obstacle_phrases(self, held: str | None) -> list[str]:
        return [e.description or e.id.rsplit("_", 1)[0].replace("_", " ")
                for e in self.env.scene.entities if e.id != held]

    def _target(self, req: PlaceRequest,
                held: GraspOutcome) -> tuple[PlaceTarget, Detection | None]:
        anchor = None
        if req.anchor is not None:
            found, why = self.detect([req.anchor])
            anchor = found.get(req.anchor)
            if anchor is None:
                raise LookupError(f"'{req.anchor}' matches nothing in view: {why[req.anchor]}")
        if req.kind == "in":
            assert anchor is not None
            return container_target(anchor), anchor
        if req.kind == "on":
            assert anchor is not None
            return surface_target(anchor, self.last_frame), anchor
        phrases = self._obstacle_phrases(held.entity_id)
        found, _ = self.detect(phrases)
        obstacles = [d for d in found.values() if d.entity_id != held.entity_id]
        if anchor is not None:
            obstacles.append(anchor)
        assert held.detection is not None
        major, minor = footprint_extents(held.detection)
        radius = math.hypot(major, minor) / 2
        return empty_space_target(self._area(), obstacles, radius, anchor, req.side), anchor

    def place(self, req: PlaceRequest, object_phrase: str | None = None) -> PlaceOutcome:
        held = self.held
        if held is None or not held.grasped:
            return PlaceOutcome("rejected", None, False, "nothing is held: grasp first")
        self.held_detection = held.detection
        try:
            target, anchor = self._target(req, held)
        except (LookupError, ValueError) as exc:
            return PlaceOutcome("rejected", None, False, str(exc))
        release = target.release_hand(held.hand_above_bottom)
        arm = self._arm(self.width_cmd)
        try:
            _, quat = arm.pose()
            carry = max(self.travel_z, float(release[2]) + 0.1)
            rows = arm.line(np.array([release[0], release[1], carry]), quat)
            rows += arm.line(release, speed=arm.approach_speed)
            rows += arm.hold(0.1)
            let_go = arm.hold(0.5, min(GRIPPER_OPEN, self.env.gripper_width() + 0.025))
            retreat = arm.line(np.array([release[0], release[1], carry]),
                               speed=arm.approach_speed)
        except (ExpertError, UnreachableError) as exc:
            return PlaceOutcome("rejected", None, False,
                                f"release point {np.round(release, 3).tolist()} unreachable: {exc}",
                                destination_id=target.entity_id)
        self._run(rows)
        hand = self.env.hand_pose()[0]
        self._run(let_go)
        self._run(retreat)
        self._settle(0.5)
        self.held = None
        phrase = object_phrase or (held.detection.phrase if held.detection else "")
        satisfied, why = self._judge_perceived(req, phrase, anchor, target)
        truth = self._judge_truth(req, held.entity_id, target.entity_id
                                  or self._entity_at(anchor), target)
        msg = (f"released at {np.round(hand, 3).tolist()}; '{req.text}' "
               f"{'holds' if satisfied else 'does not hold'} (perceived{why})")
        return PlaceOutcome("succeeded" if satisfied else "failed",
                            [round(float(v), 4) for v in hand], satisfied, msg, truth,
                            target.entity_id or self._entity_at(anchor))

    def _entity_at(self, det: Detection | None) -> str | None:
        """The scene entity whose centre is nearest a detection (backends that know no ids:
        only for the truth column, never for planning)."""
        if det is None:
            return None
        st = self.env.world_state()
        ids = [e.id for e in self.env.scene.entities]
        return min(ids, key=lambda i: float(np.hypot(*np.subtract(
            st.objects[i].position[:2], det.centroid[:2]))))

    def _judge_perceived(self, req: PlaceRequest, phrase: str, anchor: Detection | None,
                         target: PlaceTarget) -> tuple[bool, str]:
        phrases = [phrase] + ([req.anchor] if req.anchor and req.kind in ("in", "on") else [])
        found, _ = self.detect(phrases)
        obj = found.get(phrase)
        if obj is None:
            return False, f": '{phrase}' not seen after the release"
        # a container's wall or the anchor may hide the object's lower part now: its height
        # is the one seen before the grasp (rigid), its top the one seen now
        before = self.held_detection
        height = max(obj.size[2], before.size[2] if before is not None else 0.0)
        top = obj.centroid[2] + obj.size[2] / 2
        objects = {"held": EntityState(position=(obj.centroid[0], obj.centroid[1],
                                                 top - height / 2),
                                       size=(obj.size[0], obj.size[1], height),
                                       orientation=(1.0, 0.0, 0.0, 0.0))}
        if req.kind in ("in", "on"):
            dest = found.get(req.anchor or "", anchor)
            if dest is None:
                return False, f": '{req.anchor}' not seen after the release"
            objects["dest"] = _entity(dest)
            if req.kind == "on" and self.last_frame is not None:
                # judged against the surface around the object, not the box's highest part
                r = max(obj.size[0], obj.size[1]) / 2
                level = surface_height(dest, self.last_frame, obj.centroid[:2], r, r + 0.05)
                if level is not None:
                    bottom = dest.centroid[2] - dest.size[2] / 2
                    objects["dest"] = EntityState(
                        position=(dest.centroid[0], dest.centroid[1], (bottom + level) / 2),
                        size=(dest.size[0], dest.size[1], max(level - bottom, 1e-3)),
                        orientation=(1.0, 0.0, 0.0, 0.0))
            view = StateView(WorldState(t=self.env.time, objects=objects), Thresholds())
            return (p_in if req.kind == "in" else p_on)(view, "held", "dest"), ""
        area = self._area()
        objects["table"] = EntityState(position=(*area.centre, area.height - 0.025),
                                       size=(*area.size, 0.05), kind="surface")
        view = StateView(WorldState(t=self.env.time, objects=objects), Thresholds())
        off = float(np.hypot(obj.centroid[0] - target.xy[0], obj.centroid[1] - target.xy[1]))
        return p_on(view, "held", "table") and off < 0.05, f", {off * 100:.1f} cm from the spot"

    def _judge_truth(self, req: PlaceRequest, held: str | None, dest: str | None,
                     target: PlaceTarget) -> bool | None:
        if held is None:
            return None
        state = self.env.world_state()
        view = StateView(state, Thresholds())
        if req.kind in ("in", "on") and dest is not None:
            # a container's or a fixture's working region when it has one (the basket's
            # inside, the stove's cooking area), as the scene's goals name them
            region = next((r.id for r in self.env.scene.regions if r.parent == dest), dest)
            return (p_in if req.kind == "in" else p_on)(view, held, region)
        if req.kind in ("in", "on"):
            return None
        pos = state.objects[held].position
        off = float(np.hypot(pos[0] - target.xy[0], pos[1] - target.xy[1]))
        return p_on(view, held, self.env.scene.table.id) and off < 0.05


def _entity(det: Detection) -> EntityState:
    """A detection as a world-state entity: its axis-aligned world box."""
    return EntityState(position=det.centroid, size=det.size, orientation=(1.0, 0.0, 0.0, 0.0))

