"""Grasp and place through injected ports: one core for the embedded sim and the ROS node.

`PrimitiveExecutor` plans from detections, turns motions into the 8-D chunks a VLA emits and
measures every outcome; how it sees (`detect`), moves (`execute_chunk`) and measures
(`measure`) are callables a caller injects (`PrimitivePorts`): `SimPrimitives` steps a
`SimEnv`, the `primitives_node` calls the perception node's `Detect` and the control node's
`ExecuteChunk` (so the controller's validation and preemption apply) and reads the joint
states and, where one is published, the world state.

Everything a result says is measured after the motion, never assumed: a grasp is the
measured gripper width and, where the measurement has a world state, the oracle's `grasped`
(both fingers touching); a place is the destination relation (`in`/`on`, the oracle's
predicates) on a world state built from a fresh detection after the release.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from mango.errors import UnreachableError
from mango.geometry import quat_yaw
from mango.oracle.predicates import StateView, Thresholds, p_grasped, p_in, p_on
from mango.oracle.world_state import EntityState, WorldState
from mango.perception.base import Detection, RGBDFrame
from mango.primitives.clearance import release_points
from mango.primitives.grasps import GraspScene, grasp_options, wrap_angle
from mango.primitives.motion import WorldFrameIK, to_chunks
from mango.primitives.moves import HandMoves, turned
from mango.primitives.planning import (
    GRIPPER_OPEN,
    KnownFixture,
    PlaceRequest,
    PlaceTarget,
    TableArea,
    container_target,
    drawer_q_from_box,
    empty_space_target,
    fixture_of,
    fixture_release,
    footprint_extents,
    inside_box,
    standing_on,
    surface_height,
    surface_target,
)
from mango.primitives.shape import RoundBody
from mango.primitives.transit import LadderTransit, TransitPlanner
from mango.sim.expert.arm import ExpertError, PlannedArm
from mango.sim.expert.motions import travel_height
from mango.sim.scene import SceneSpec

log = logging.getLogger(__name__)

Status = Literal["succeeded", "failed", "cancelled", "rejected"]
MIN_HELD_WIDTH = 0.003  # m: fingers closer than this closed on air
FINGERS = ("robot_left_finger", "robot_right_finger")
ARRIVED = 0.004  # m from the approach's end: the hand is where the fingers close
ARRIVE_TRIES = 5
LIFTED = 0.03  # m above its bottom at the release: an object seen there went up with the hand


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
    hand_pose: tuple[list[float], list[float]] | None = None  # measured: position, [w x y z]
    approach: Literal["top", "side"] = "top"
    direction: list[float] | None = None  # side: the horizontal axis the hand points along
    body: RoundBody | None = None  # the round body its points showed (a mug: its handle)
    offset: np.ndarray | None = None  # xy from the hand to the object's axis (by a handle)


@dataclass
class PlaceOutcome:
    status: Status
    release_position: list[float] | None
    satisfied: bool
    message: str
    satisfied_truth: bool | None = None
    destination_id: str | None = None
    release_quat: list[float] | None = None  # measured hand orientation at the release
    turn: float = 0.0  # rad the hand turned the held object about the vertical on the way


@dataclass(frozen=True)
class Perceived:
    """What one look gave: the best detection per phrase, why each other phrase is missing,
    the frame when the caller has it (depth for surface heights), and why nothing could be
    looked for at all (no camera frame, perception down) or None."""

    found: dict[str, Detection]
    why: dict[str, str]
    frame: RGBDFrame | None = None
    error: str | None = None


@dataclass(frozen=True)
class Measurement:
    """The measured robot (and world, where one is published) at one instant."""

    q: np.ndarray  # 7 arm joints
    width: float  # m, gripper opening
    t: float  # s, the measurement's time
    world: WorldState | None = None  # the world state topic's latest, where there is one


@dataclass(frozen=True)
class Executed:
    """How one chunk ended: done, cancelled (the caller cancelled it), or failed (why)."""

    status: Literal["done", "cancelled", "failed"]
    message: str = ""


TruthFn = Callable[[PlaceRequest, str | None, PlaceTarget, Detection | None],
                   tuple[bool | None, str | None]]


@dataclass
class PrimitivePorts:
    """How the executor sees, moves and measures (see the module docstring).

    `cancelled` is polled between chunks (a port's `execute_chunk` also stops its chunk on
    cancel); `feedback(phase, progress)` hears each phase and chunk; `truth`, where there is
    ground truth, judges a place on it (and names the destination entity) for reports."""

    detect: Callable[[list[str]], Perceived]
    execute_chunk: Callable[[np.ndarray], Executed]
    measure: Callable[[], Measurement]
    cancelled: Callable[[], bool] = lambda: False
    feedback: Callable[[str, float], None] = lambda _phase, _progress: None
    truth: TruthFn | None = None


def table_area(scene: SceneSpec) -> TableArea:
    """The scene's table top (built centred on the world origin) and the arm's base."""
    t = scene.table
    return TableArea((0.0, 0.0), (float(t.size[0]), float(t.size[1])), float(t.height),
                     (float(scene.robot.base[0]), float(scene.robot.base[1])))


def obstacle_phrases(scene: SceneSpec, held: str | None) -> list[str]:
    """A phrase per scene entity but the held one: what an empty-space search looks for."""
    return [e.description or e.id.rsplit("_", 1)[0].replace("_", " ")
            for e in scene.entities if e.id != held]


class _Stopped(Exception):
    """A chunk did not run to its end: cancelled, or failed with the reason."""

    def __init__(self, result: Executed) -> None:
        super().__init__(result.message)
        self.result = result


class PrimitiveExecutor:
    """Grasp and place on one arm in one scene, through `ports`; `ik` is the FR3's ladder in
    the world frame (`WorldFrameIK`)."""

    def __init__(self, ports: PrimitivePorts, ik: WorldFrameIK, scene: SceneSpec,
                 transit: TransitPlanner | None = None) -> None:
        self.ports, self.ik, self.scene = ports, ik, scene
        self.transit: TransitPlanner = transit or LadderTransit()
        self.travel_z = travel_height(scene)
        self.moves = HandMoves(self.transit, self.travel_z, self._arm)
        self.area = table_area(scene)
        self.held: GraspOutcome | None = None
        # the commanded opening (the measured one is smaller when the fingers squeeze)
        self.width_cmd = GRIPPER_OPEN
        self.last_frame: RGBDFrame | None = None  # what the last detection saw
        self.held_detection: Detection | None = None  # the held object before its grasp
        self._into: KnownFixture | None = None  # the known fixture the place goes into
        self._rows_total = self._rows_done = 0
        self._phase = ""
        # the last detection of each object (entity id, or phrase without one): an object the
        # arm hides from the camera now is still an obstacle where it was last seen
        self.seen: dict[str, Detection] = {}

    # ----------------------------------------------------------------- perception
    def detect(self, phrases: list[str]) -> Perceived:
        seen = self.ports.detect(phrases)
        if seen.frame is not None:
            self.last_frame = seen.frame
        for d in seen.found.values():
            self.seen[d.entity_id or d.phrase] = d
        return seen

    # ----------------------------------------------------------------- motion
    def _arm(self, q: np.ndarray, width: float) -> PlannedArm:
        return PlannedArm(self.ik, np.asarray(q, float).copy(), width,
                          travel_speed=0.3, approach_speed=0.15, travel_z=self.travel_z)

    def _phase_start(self, phase: str) -> None:
        self._phase = phase
        self.ports.feedback(phase, self._progress())

    def _progress(self) -> float:
        return self._rows_done / self._rows_total if self._rows_total else 0.0

    def _run(self, rows: Sequence[np.ndarray], phase: str) -> None:
        """Stream rows as chunks; `_Stopped` when one does not finish."""
        self._phase_start(phase)
        if rows:
            self.width_cmd = float(rows[-1][7])
        for chunk in to_chunks(rows):
            if self.ports.cancelled():
                raise _Stopped(Executed("cancelled", f"cancelled before {phase}"))
            res = self.ports.execute_chunk(chunk)
            if res.status != "done":
                raise _Stopped(res)
            self._rows_done += len(chunk)
            self.ports.feedback(phase, self._progress())

    def _arrive(self, row: np.ndarray) -> None:
        """Hold at `row` until the measured hand is there (at most `ARRIVE_TRIES` short
        holds): an arm lagging its chunk (a controller or sim behind real time) would close
        the fingers above the object, on nothing. Progress does not move."""
        goal = self.ik.fk(np.asarray(row[:7], float))[0]
        for _ in range(ARRIVE_TRIES):
            m = self.ports.measure()
            if float(np.linalg.norm(self.ik.fk(m.q)[0] - goal)) <= ARRIVED:
                return
            for chunk in to_chunks(self._arm(row[:7], float(row[7])).hold(0.2)):
                res = self.ports.execute_chunk(chunk)
                if res.status != "done":
                    raise _Stopped(res)

    def _hand(self, m: Measurement) -> tuple[list[float], list[float]]:
        p, quat = self.ik.fk(m.q)
        return [round(float(v), 4) for v in p], [round(float(v), 5) for v in quat]

    def _stop_outcome(self, stop: _Stopped) -> tuple[Status, str]:
        r = stop.result
        if r.status == "cancelled":
            return "cancelled", f"cancelled during {self._phase}; the arm holds position"
        return "failed", f"{self._phase} failed: {r.message}"

    # ----------------------------------------------------------------- grasp
    def known_fixtures(self, world: WorldState | None = None) -> list[KnownFixture]:
        """The scene file's microwaves and drawer cabinets at their measured pose and drawer
        joint where a world state has them, else at the file's nominal pose."""
        out: list[KnownFixture] = []
        for e in self.scene.entities:
            st = world.objects.get(e.id) if world is not None else None
            if st is not None:
                pos, yaw = st.position, quat_yaw(st.orientation)
            else:
                pos, yaw = (e.position[0], e.position[1],
                            self.scene.table.height + e.size[2] / 2), None
            q = None
            if world is not None and e.joint is not None and e.joint.id in world.joints:
                q = world.joints[e.joint.id].q
            fx = KnownFixture.from_entity(e, pos, yaw, q if e.shape == "drawer_cabinet" else None)
            if fx is not None:
                out.append(fx)
        return out

    def _fixture_phrases(self, held: str) -> list[str]:
        """A phrase per scene fixture and device: what can stand over an object."""
        return [p for e in self.scene.entities if e.kind != "object"
                if (p := e.description or e.id.rsplit("_", 1)[0].replace("_", " ")) != held]

    def grasp(self, phrase: str, destination: PlaceRequest | None = None, *,
              turnable: bool = True) -> GraspOutcome:
        """Grasp what `phrase` names; `destination`, where the place that follows is known
        (a pick-and-place), lets a horizontal insertion be prepared by a side grasp (or by
        a top-down one the place turns and regrasps, unless not `turnable`)."""
        self._rows_total = self._rows_done = 0
        self._phase_start("detect")
        extra = self._fixture_phrases(phrase)
        if destination is not None and destination.anchor and destination.kind == "in":
            extra.append(destination.anchor)
        seen = self.detect(list(dict.fromkeys([phrase, *extra])))
        if seen.error is not None:
            return GraspOutcome("failed", None, False, f"perception: {seen.error}")
        det = seen.found.get(phrase)
        if det is None:
            return GraspOutcome("rejected", None, False,
                                f"'{phrase}' matches nothing in view: "
                                f"{seen.why.get(phrase, 'nothing matched')}")
        self._phase_start("plan")
        m0 = self.ports.measure()
        fixtures = self.known_fixtures(m0.world)
        into = None
        if destination is not None and destination.kind == "in" and destination.anchor:
            into = fixture_of(seen.found.get(destination.anchor), fixtures)
        others = [d for p, d in seen.found.items() if p != phrase]
        try:
            plans = grasp_options(det, GraspScene(others, fixtures, self.area.base, seen.frame,
                                                  into, turnable))
        except ValueError as exc:
            return GraspOutcome("rejected", det.entity_id, False, str(exc), detection=det)
        why: dict[str, str] = {}  # per approach (the opening directions of one share it)
        for plan in plans:  # the first whose motion the arm can follow
            arm = self._arm(m0.q, self.width_cmd)
            try:
                approach, close, lift = (self.moves.side_grasp(arm, plan)
                                         if plan.approach == "side"
                                         else self.moves.top_grasp(arm, plan))
                break
            except (ExpertError, UnreachableError) as exc:
                why.setdefault(plan.reason, f"{plan.reason}: {exc}")
        else:
            tried = f"{len(plans)} grasps tried; " if len(plans) > len(why) else ""
            return GraspOutcome("rejected", det.entity_id, False,
                                f"grasp of '{phrase}' unreachable ({tried}"
                                f"{'; '.join(why.values())})", detection=det)
        self._rows_total = len(approach) + len(close) + len(lift)
        log.debug("grasp plan (%s): %d rows to the object", plan.reason, len(approach))
        try:
            self._run(approach, "approach")
            self._arrive(approach[-1])
            self._run(close, "close")
            self._run(lift, "lift")
        except _Stopped as stop:
            status, msg = self._stop_outcome(stop)
            m = self.ports.measure()
            return GraspOutcome(status, det.entity_id, False, msg, m.width, detection=det,
                                hand_pose=self._hand(m))
        out = self._judge_grasp(phrase, det, plan.hand_above_bottom)
        out.body, out.offset = plan.body, plan.offset
        if plan.approach == "side":
            assert plan.direction is not None
            out.approach = "side"
            out.direction = [round(float(v), 4) for v in plan.direction]
        if plan.reason != "top-down":
            out.message += f"; {plan.reason}"
        if out.grasped:
            self.held = out
        else:
            self._let_go()
        return out

    def _judge_grasp(self, phrase: str, det: Detection, hand_above_bottom: float
                     ) -> GraspOutcome:
        m = self.ports.measure()
        width = m.width
        target = det.entity_id
        fingers: list[str] = []
        if m.world is not None:
            view = StateView(m.world, Thresholds())
            movable = [k for k, e in m.world.objects.items() if e.kind == "object"]
            held = [e for e in movable if p_grasped(view, e)]
            fingers = sorted({a for a, b in m.world.contacts if b in FINGERS}
                             | {b for a, b in m.world.contacts if a in FINGERS})
            ok = width > MIN_HELD_WIDTH and (target in held if target else bool(held))
            entity = target if target else (held[0] if held else None)
        else:  # joint states alone: something between the fingers keeps them apart
            ok, entity = width > MIN_HELD_WIDTH, target
        if ok:
            msg = f"holding '{entity or phrase}' (gripper width {width * 100:.1f} cm)"
        elif width <= MIN_HELD_WIDTH:
            msg = f"the hand closed on nothing at the planned grasp of '{phrase}'"
        else:
            msg = (f"after closing, '{target}' is not held (fingers touch "
                   f"{', '.join(fingers) or 'nothing'})")
        return GraspOutcome("succeeded" if ok else "failed", entity, ok, msg, width, fingers,
                            det, hand_above_bottom, self._hand(m))

    def _let_go(self) -> None:
        """Open the hand where it is (after a failed grasp): best effort, measured anyway."""
        m = self.ports.measure()
        with contextlib.suppress(_Stopped):
            self._run(self._arm(m.q, self.width_cmd).hold(0.4, GRIPPER_OPEN), "release")

    # ----------------------------------------------------------------- place
    def _target(self, req: PlaceRequest,
                held: GraspOutcome) -> tuple[PlaceTarget, Detection | None]:
        anchor = None
        if req.anchor is not None:
            seen = self.detect([req.anchor])
            if seen.error is not None:
                raise LookupError(f"perception: {seen.error}")
            anchor = seen.found.get(req.anchor)
            if anchor is None:
                raise LookupError(f"'{req.anchor}' matches nothing in view: "
                                  f"{seen.why.get(req.anchor, 'nothing matched')}")
        self._into = None
        if req.kind == "in":
            assert anchor is not None
            m = self.ports.measure()
            fx = fixture_of(anchor, self.known_fixtures(m.world))
            assert held.detection is not None
            if fx is None:
                occupants = inside_box(anchor, self._others_seen(held, anchor))
                half = (held.detection.size[0] / 2, held.detection.size[1] / 2)
                return container_target(anchor, occupants=occupants, held_half=half,
                                        base=self.area.base, frame=self.last_frame,
                                        turnable=held.approach != "side"), anchor
            if fx.shape == "drawer_cabinet" and fx.drawer_q is None:
                fx = dataclasses.replace(fx, drawer_q=drawer_q_from_box(fx, anchor))
            radius = max(held.detection.size[0], held.detection.size[1]) / 2
            self._into = fx
            return fixture_release(fx, radius, self.area.base), anchor
        if req.kind == "on":
            assert anchor is not None and held.detection is not None
            occupants = standing_on(anchor, self._others_seen(held, anchor))
            half = (held.detection.size[0] / 2, held.detection.size[1] / 2)
            return surface_target(anchor, self.last_frame, occupants, half,
                                  self.area.base), anchor
        if req.at is not None:  # back where it stood a moment ago: free, reachable
            return PlaceTarget(np.asarray(req.at, float), self.area.height, None), None
        obstacles = self._others_seen(held)
        if anchor is not None:
            obstacles.append(anchor)
        assert held.detection is not None
        major, minor = footprint_extents(held.detection)
        radius = math.hypot(major, minor) / 2
        return empty_space_target(self.area, obstacles, radius, anchor, req.side), anchor

    def _others_seen(self, held: GraspOutcome, anchor: Detection | None = None
                     ) -> list[Detection]:
        """Every scene entity but the held one (and the `anchor`, when given), looked for
        now: seen now, or seen before and hidden now (by the arm holding this object,
        often)."""
        self.detect(obstacle_phrases(self.scene, held.entity_id))
        held_key = held.entity_id or (held.detection.phrase if held.detection else None)
        anchor_key = (anchor.entity_id or anchor.phrase) if anchor is not None else None
        return [d for k, d in self.seen.items()
                if k != held_key and (d.entity_id or d.phrase) != anchor_key]

    def place(self, req: PlaceRequest, object_phrase: str | None = None) -> PlaceOutcome:
        self._rows_total = self._rows_done = 0
        held = self.held
        if held is None or not held.grasped:
            return PlaceOutcome("rejected", None, False, "nothing is held: grasp first")
        self.held_detection = held.detection
        self._phase_start("detect")
        try:
            target, anchor = self._target(req, held)
        except (LookupError, ValueError) as exc:
            return PlaceOutcome("rejected", None, False, str(exc))
        self._phase_start("plan")
        regrasped = ""
        if target.insert is not None and held.approach != "side":
            phrase = object_phrase or (held.detection.phrase if held.detection else "")
            done = self._regrasp_from_side(req, phrase, held, target.insert)
            if isinstance(done, PlaceOutcome):
                return done
            assert self.held is not None
            held, regrasped = self.held, "regrasped from the side (held from the top, a roof " \
                f"over the inside{done}); "
            self._rows_total = self._rows_done = 0
            self._phase_start("plan")
        release = target.release_hand(held.hand_above_bottom)
        m0 = self.ports.measure()
        arm = self._arm(m0.q, self.width_cmd)
        turn = raised = 0.0
        try:
            if target.insert is not None:
                approach, let_go, retreat = self.moves.insert(arm, release, target.insert,
                                                              m0.width)
            elif held.approach == "side":
                approach, let_go, retreat = self.moves.side_held_place(arm, release, m0.width)
            else:
                # a quarter turn to fit is as good either way round (the footprint is a box)
                turns = [req.turn + target.turn] + ([req.turn - target.turn]
                                                    if target.turn else [])
                half = (max(held.detection.size[:2]) / 2 if held.detection is not None
                        else 0.05)
                around = release_points(self.last_frame, release,
                                        release[2] - held.hand_above_bottom,
                                        (self._hand(m0)[0], held.hand_above_bottom, half))
                for i, want in enumerate(turns):
                    try:
                        (approach, let_go, retreat), turn, raised = self.moves.top_place(
                            arm, release, m0.width, want, held.offset, around)
                        break
                    except (ExpertError, UnreachableError):
                        if i == len(turns) - 1:
                            raise
        except (ExpertError, UnreachableError) as exc:
            return PlaceOutcome("rejected", None, False,
                                f"release point {np.round(release, 3).tolist()} unreachable: {exc}",
                                destination_id=target.entity_id)
        self._rows_total = len(approach) + len(let_go) + len(retreat)
        hand: tuple[list[float], list[float]] | None = None
        try:
            self._run(approach, "approach")
            hand = self._hand(self.ports.measure())
            self._run(let_go, "release")
            self.held = None  # the hand opened: whatever happens next, nothing is held
            self._run(retreat, "retreat")
        except _Stopped as stop:
            status, msg = self._stop_outcome(stop)
            return PlaceOutcome(status, hand[0] if hand else None, False, msg,
                                destination_id=target.entity_id,
                                release_quat=hand[1] if hand else None)
        self._phase_start("verify")
        phrase = object_phrase or (held.detection.phrase if held.detection else "")
        assert hand is not None
        satisfied, why = self._judge_perceived(req, phrase, anchor, target,
                                               hand[0][2] - held.hand_above_bottom)
        truth, dest_id = (self.ports.truth(req, held.entity_id, target, anchor)
                          if self.ports.truth is not None else (None, None))
        fitted = (f"turned {math.degrees(turn):.0f} deg to fit the free space inside, "
                  if target.turn else "")
        if raised:
            fitted += (f"let go {raised * 100:.0f} cm higher for the fingers to open clear "
                       "of what is beside it, ")
        msg = (f"{regrasped}{fitted}released at {hand[0]}; '{req.text}' "
               f"{'holds' if satisfied else 'does not hold'} (perceived{why})")
        self.ports.feedback("verify", 1.0)
        return PlaceOutcome("succeeded" if satisfied else "failed", hand[0], satisfied, msg,
                            truth, target.entity_id or dest_id, hand[1], turn)

    def _regrasp_from_side(self, req: PlaceRequest, phrase: str, held: GraspOutcome,
                           insert: np.ndarray) -> PlaceOutcome | str:
        """Put an object held from the top back where it was grasped (free and reachable: it
        was just taken from there; an empty-space search would have to see past the open
        door's box of a microwave), turned so that a protrusion its points showed (a mug's
        handle) leads the insertion along `insert`, out of the side grasp's way, and grasp
        it again from the side for the insertion: how it was turned ("" for not at all) when
        it is held so, else the failed outcome saying which step failed."""
        assert held.detection is not None
        body = held.body
        spot = body.centre if body is not None else held.detection.centroid
        turn = 0.0
        if body is not None and body.handle is not None:
            turn = wrap_angle(math.atan2(insert[1], insert[0])
                              - math.atan2(body.handle[1], body.handle[0]))
        down_req = PlaceRequest("table", None, "any",
                                "empty space on the table where it was grasped",
                                (float(spot[0]), float(spot[1])), turn)
        down = self.place(down_req, phrase)
        if down.status == "rejected" and turn and self.held is not None:
            # the wrist cannot turn it (nothing moved): down as it is, the handle where it was
            down = self.place(dataclasses.replace(down_req, turn=0.0), phrase)
        if down.status != "succeeded" and self.held is not None:
            return PlaceOutcome("failed", None, False, "a horizontal insertion needs the "
                                f"object held from the side; putting it down to regrasp "
                                f"failed: {down.message}")
        # out of the camera's view of it (the hand is over it) before looking again, the
        # wrist turned back (the side grasp's path from a wrist turned far can differ)
        m = self.ports.measure()
        arm = self._arm(m.q, self.width_cmd)
        park = np.array([self.area.base[0] + 0.35, self.area.base[1], self.travel_z])
        with contextlib.suppress(_Stopped, ExpertError, UnreachableError):
            self._run([r for part in arm.travel_to(park, turned(arm.pose()[1], -down.turn))
                       for r in part], "retreat")
        g = self.grasp(phrase, req, turnable=False)
        if not g.grasped or g.approach != "side":
            return PlaceOutcome("failed", None, False, "a horizontal insertion needs the "
                                f"object held from the side; the regrasp failed: {g.message}")
        return f", turned {math.degrees(down.turn):.0f} deg on the way down" if down.turn else ""

    def _judge_perceived(self, req: PlaceRequest, phrase: str, anchor: Detection | None,
                         target: PlaceTarget, let_go_bottom: float) -> tuple[bool, str]:
        """Whether the place holds as seen now (after the retreat), and why not. An object
        let go can only have fallen: one seen higher than its bottom was at the release went
        up with the hand (wedged between fingers that could not open, hung on one)."""
        phrases = [phrase] + ([req.anchor] if req.anchor and req.kind in ("in", "on") else [])
        seen = self.detect(phrases)
        if seen.error is not None:
            return False, f": perception: {seen.error}"
        found = seen.found
        obj = found.get(phrase)
        if obj is None:
            return False, f": '{phrase}' not seen after the release"
        # a container's wall or the anchor may hide the object's lower part now: its height
        # is the one seen before the grasp (rigid), its top the one seen now
        before = self.held_detection
        height = max(obj.size[2], before.size[2] if before is not None else 0.0)
        top = obj.centroid[2] + obj.size[2] / 2
        if top - height > let_go_bottom + LIFTED:
            return False, (f": it went up with the hand ({(top - height - let_go_bottom) * 100:.0f}"
                           " cm above where it was let go)")
        objects = {"held": EntityState(position=(obj.centroid[0], obj.centroid[1],
                                                 top - height / 2),
                                       size=(obj.size[0], obj.size[1], height),
                                       orientation=(1.0, 0.0, 0.0, 0.0))}
        t = self.ports.measure().t
        if req.kind in ("in", "on"):
            dest = found.get(req.anchor or "", anchor)
            if dest is None:
                return False, f": '{req.anchor}' not seen after the release"
            objects["dest"] = _entity(dest)
            if req.kind == "in" and self._into is not None:
                # a known fixture's inside, where it is (a drawer pulled out; the camera
                # may see neither it nor the cavity: the box it sees is the outside)
                c, size = self._into.interior_box()
                objects["dest"] = EntityState(position=tuple(c), size=tuple(size),
                                              orientation=(1.0, 0.0, 0.0, 0.0))
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
            view = StateView(WorldState(t=t, objects=objects), Thresholds())
            return (p_in if req.kind == "in" else p_on)(view, "held", "dest"), ""
        area = self.area
        objects["table"] = EntityState(position=(*area.centre, area.height - 0.025),
                                       size=(*area.size, 0.05), kind="surface")
        view = StateView(WorldState(t=t, objects=objects), Thresholds())
        off = float(np.hypot(obj.centroid[0] - target.xy[0], obj.centroid[1] - target.xy[1]))
        return p_on(view, "held", "table") and off < 0.05, f", {off * 100:.1f} cm from the spot"


def _entity(det: Detection) -> EntityState:
    """A detection as a world-state entity: its axis-aligned world box."""
    return EntityState(position=det.centroid, size=det.size, orientation=(1.0, 0.0, 0.0, 0.0))
