"""Grasp and place in the embedded sim: `PrimitiveExecutor` with ports over a `SimEnv`.

The sim's ports see through one camera with one perception backend, step the physics row
by row, and measure the arm and the world state; the truth column (`satisfied_truth`) is the
same predicate on the physics, for judging perception itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.oracle.predicates import StateView, Thresholds, p_in, p_on
from mango.oracle.world_state import WorldState
from mango.perception.base import Detection, PerceptionBackend, RGBDFrame
from mango.perception.sim_frames import sim_frame
from mango.primitives.executor import (
    MIN_HELD_WIDTH,
    Executed,
    GraspOutcome,
    Measurement,
    Perceived,
    PlaceOutcome,
    PrimitiveExecutor,
    PrimitivePorts,
)
from mango.primitives.motion import WorldFrameIK
from mango.primitives.moves import CLOSED
from mango.primitives.planning import PlaceRequest, PlaceTarget
from mango.primitives.transit import TransitPlanner
from mango.sim.env import SimEnv
from mango.sim.expert.arm import PlannedArm
from mango.sim.scene import SceneSpec

__all__ = ["CLOSED", "MIN_HELD_WIDTH", "GraspOutcome", "PlaceOutcome", "SimPrimitives"]


def detect_with(backend: PerceptionBackend, frame: RGBDFrame, phrases: list[str]) -> Perceived:
    """Best detection per phrase on one frame, and why each unmatched phrase is unmatched."""
    res = backend.detect(frame, phrases, 1)
    found = {p: res.for_phrase(p)[0] for p in phrases if res.for_phrase(p)}
    why = {p: next((m for m in res.messages if p in m), "nothing matched")
           for p in phrases if p not in found}
    return Perceived(found, why, frame)


class SimPrimitives:
    """Grasp/place primitives on a `SimEnv`, seeing through one camera with one backend.

    `on_state` gets the world state after every control step (a trace writer); `transit`
    plans the free-space legs (default: the IK ladder, `primitives.transit`). A phrase the
    camera does not see is looked for again through `look_also`'s cameras the env renders
    (the wrist camera sees into an open drawer the front camera's view of is blocked by
    the cabinet)."""

    def __init__(self, env: SimEnv, backend: PerceptionBackend, camera: str = "front", *,
                 privileged: bool = True,
                 on_state: Callable[[WorldState], None] | None = None,
                 transit: TransitPlanner | None = None,
                 look_also: Sequence[str] = ("wrist",)) -> None:
        self.env, self.backend, self.camera = env, backend, camera
        self.look_also = [c for c in look_also if c in env.cameras and c != camera]
        self.privileged = privileged
        self.on_state = on_state
        base_pos, base_quat = env.robot_base_pose()
        self.ik = WorldFrameIK(FR3Kinematics(load_robot("fr3")), base_pos, base_quat)
        self.executor = PrimitiveExecutor(
            PrimitivePorts(detect=self._detect, execute_chunk=self._execute_chunk,
                           measure=self._measure, truth=self._truth),
            self.ik, env.scene, transit)
        self.travel_z = self.executor.travel_z

    # what the executor keeps, as before (a caller that opens the hand itself says so)
    @property
    def held(self) -> GraspOutcome | None:
        return self.executor.held

    @held.setter
    def held(self, value: GraspOutcome | None) -> None:
        self.executor.held = value

    @property
    def width_cmd(self) -> float:
        return self.executor.width_cmd

    @width_cmd.setter
    def width_cmd(self, value: float) -> None:
        self.executor.width_cmd = value

    def _arm(self, width: float) -> PlannedArm:
        """The planner from the arm's current joints (the bench times a grasp plan on it)."""
        return self.executor._arm(self.env.joint_positions(), width)

    @property
    def last_frame(self) -> RGBDFrame | None:
        return self.executor.last_frame

    @property
    def held_detection(self) -> Detection | None:
        return self.executor.held_detection

    # ----------------------------------------------------------------- ports
    def _frame(self, camera: str) -> RGBDFrame:
        frame = sim_frame(self.env, camera)
        return frame if self.privileged else frame.without_privileged()

    def _detect(self, phrases: list[str]) -> Perceived:
        seen = detect_with(self.backend, self._frame(self.camera), phrases)
        for cam in self.look_also:
            missing = [p for p in phrases if p not in seen.found]
            if not missing:
                break
            more = detect_with(self.backend, self._frame(cam), missing)
            seen = Perceived({**seen.found, **more.found},
                             {p: w for p, w in seen.why.items() if p not in more.found},
                             seen.frame)
        return seen

    def _execute_chunk(self, chunk: np.ndarray) -> Executed:
        if self.on_state is None:
            self.env.step_chunk(chunk)
        else:
            for row in chunk:  # a trace gets every control step (15 Hz, as `sim run`)
                self.env.step(row)
                self.on_state(self.env.world_state())
        return Executed("done")

    def _measure(self) -> Measurement:
        return Measurement(self.env.joint_positions().copy(), self.env.gripper_width(),
                           self.env.time, self.env.world_state())

    def detect(self, phrases: list[str]) -> tuple[dict[str, Detection], dict[str, str]]:
        """Best detection per phrase, and why each unmatched phrase is unmatched."""
        seen = self.executor.detect(phrases)
        return seen.found, seen.why

    # ----------------------------------------------------------------- primitives
    def grasp(self, phrase: str, destination: PlaceRequest | None = None) -> GraspOutcome:
        return self.executor.grasp(phrase, destination)

    def place(self, req: PlaceRequest, object_phrase: str | None = None) -> PlaceOutcome:
        return self.executor.place(req, object_phrase)

    # ----------------------------------------------------------------- truth
    def _entity_at(self, det: Detection | None) -> str | None:
        """The scene entity whose centre is nearest a detection (backends that know no ids:
        only for the truth column, never for planning)."""
        if det is None:
            return None
        st = self.env.world_state()
        ids = [e.id for e in self.env.scene.entities]
        return min(ids, key=lambda i: float(np.hypot(*np.subtract(
            st.objects[i].position[:2], det.centroid[:2]))))

    def _truth(self, req: PlaceRequest, held: str | None, target: PlaceTarget,
               anchor: Detection | None) -> tuple[bool | None, str | None]:
        dest = target.entity_id or self._entity_at(anchor)
        if held is None:
            return None, dest
        state = self.env.world_state()
        if req.kind in ("in", "on"):
            if dest is None:
                return None, dest
            return relation_holds(self.env.scene, state, req.kind, held, dest), dest
        return released_on_table(self.env.scene, state, held, target.xy), dest


def relation_holds(scene: SceneSpec, state: WorldState, kind: str, held: str,
                   dest: str) -> bool:
    """'in/on <dest>' on the sim's world state, by the oracle's own predicates: in or on a
    container's or a fixture's working regions when it has them (the basket's inside, the
    stove's cooking area), as the scene's goals name them; any one of them ("in the desk
    caddy": its front or its back compartment)."""
    regions = [r.id for r in scene.regions if r.parent == dest] or [dest]
    relation = p_in if kind == "in" else p_on
    view = StateView(state, Thresholds())
    return any(relation(view, held, r) for r in regions)


def released_on_table(scene: SceneSpec, state: WorldState, held: str,
                      xy: Sequence[float]) -> bool:
    """'empty space …' on the sim's world state: on the table, within 5 cm of the spot."""
    pos = state.objects[held].position
    return p_on(StateView(state, Thresholds()), held, scene.table.id) and float(
        np.hypot(pos[0] - xy[0], pos[1] - xy[1])) < 0.05
