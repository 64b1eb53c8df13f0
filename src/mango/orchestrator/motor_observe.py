"""What mode `motor`'s roles see at one instant: perception (the tools' camera and backend:
the object's, the destination's and the fixture's detected boxes) and proprioception (FK of
the measured joints, the gripper's width), with what the measured world state says of the
fixture the subgoal acts on (its pose and joint value), the region its criterion names and
the drawer or microwave it puts something into — what a real robot's world-state estimator
gives from its markers and the scene file.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from mango.geometry import IDENTITY, quat_to_mat, quat_yaw
from mango.oracle.predicates import StateView, Thresholds, p_in, p_on
from mango.oracle.world_state import EntityState, WorldState
from mango.orchestrator.motor_schemas import (
    OPEN_MARGIN,
    FixtureAction,
    FixtureView,
    Observation,
    RegionView,
)
from mango.orchestrator.planning import entity_phrase
from mango.orchestrator.schemas import Subgoal
from mango.perception.base import Detection
from mango.primitives.planning import GRIPPER_OPEN, KnownFixture, drawer_q_from_box, fixture_of
from mango.primitives.runner import MIN_HELD_WIDTH, SimPrimitives
from mango.sim.env import SimEnv
from mango.sim.scene import SceneSpec

# the expert's skill of a plan step -> what the subgoal does to its fixture
FIXTURE_ACTIONS: dict[str, FixtureAction] = {"close": "close", "open": "open",
                                             "turn_on": "turn_on"}


@dataclass
class MotorObserver:
    """Builds the roles' `Observation` for one episode's scene, sim and arm."""

    scene: SceneSpec
    env: SimEnv
    prims: SimPrimitives
    kinematics: Any  # the motion core's (base frame)
    base: np.ndarray  # the robot base's position in the world
    q7_range: tuple[float, float]
    monitored: bool

    def observe(self, sg: Subgoal, memory: str, width_cmd: float, completed: set[str],
                world: WorldState) -> Observation:
        scene = self.scene
        action = self.fixture_action(sg)
        fixture_phrase = entity_phrase(scene, sg.object) if action and sg.object else None
        others = [entity_phrase(scene, e.id) for e in scene.entities
                  if e.movable and e.id != sg.object and e.id != sg.destination]
        asked = [p for p in (sg.object_phrase, _dest_phrase(sg), fixture_phrase) if p]
        found, _ = self.prims.detect(list(dict.fromkeys(asked + others)))
        obj = found.get(sg.object_phrase or "")
        dest = found.get(_dest_phrase(sg) or "")
        q = self.env.joint_positions()
        p, quat = self.kinematics.fk(q)
        rot = quat_to_mat(quat)
        width = self.env.gripper_width()
        at = None
        if obj is not None and dest is not None and sg.relation in ("in", "on"):
            view = StateView(WorldState(t=self.env.time, objects={
                "obj": _box(obj), "dest": _box(dest)}), Thresholds())
            at = (p_in if sg.relation == "in" else p_on)(view, "obj", "dest")
        fixture = None
        if action is not None and sg.object is not None:
            fixture = fixture_view(scene, sg.object, action, world,
                                   found.get(fixture_phrase or ""))
        into = None
        if sg.relation == "in" and dest is not None:
            into = _into(fixture_of(dest, self.prims.executor.known_fixtures(world)), dest)
        return Observation(
            t=self.env.time, subgoal=sg, hand=np.asarray(p, float) + self.base,
            opening_yaw=math.atan2(float(rot[1, 1]), float(rot[0, 1])), q7=float(q[6]),
            q7_range=self.q7_range, width=width, width_cmd=width_cmd,
            # commanded closed and stopped by something: not on air, not held open
            holding=width_cmd < 0.01 and MIN_HELD_WIDTH < width < GRIPPER_OPEN - OPEN_MARGIN,
            object_det=obj, destination_det=dest, at_destination=at, completed=completed,
            travel_z=self.prims.travel_z, table_z=scene.table.height, memory=memory,
            others=[d for ph, d in found.items() if ph not in asked],
            table_area=self.prims.executor.area, monitored=self.monitored,
            frame=self.prims.last_frame, fixture=fixture,
            region=region_view(world, sg.destination), into=into,
            pointing=np.asarray(rot[:, 2], float))

    def fixture_action(self, sg: Subgoal) -> FixtureAction | None:
        """What the subgoal does to a fixture (its plan step's skill), None for the others."""
        if not 0 <= sg.expert_step < len(self.scene.expert):
            return None
        return FIXTURE_ACTIONS.get(self.scene.expert[sg.expert_step].skill)


def fixture_view(scene: SceneSpec, entity: str, action: FixtureAction, world: WorldState,
                 det: Detection | None) -> FixtureView | None:
    """The fixture as the measured world state has it (None: it has no joint, or the state
    does not have it)."""
    try:
        spec = scene.entity(entity)
    except KeyError:
        return None
    st = world.objects.get(entity)
    if spec.joint is None or st is None or spec.joint.id not in world.joints:
        return None
    return FixtureView(spec, np.asarray(st.position, float),
                       quat_to_mat(st.orientation or IDENTITY), world.joints[spec.joint.id].q,
                       action, det)


def region_view(world: WorldState, region: str | None) -> RegionView | None:
    """The region `region` names where the measured world state has it (None: not a region)."""
    st = world.objects.get(region or "")
    if st is None or st.kind != "region" or st.size is None:
        return None
    return RegionView(region or "", np.asarray(st.position, float),
                      (float(st.size[0]), float(st.size[1]), float(st.size[2])),
                      quat_yaw(st.orientation))


def _into(fx: KnownFixture | None, det: Detection) -> KnownFixture | None:
    """A drawer cabinet whose drawer the state does not measure: its opening from the box."""
    if fx is not None and fx.shape == "drawer_cabinet" and fx.drawer_q is None:
        return dataclasses.replace(fx, drawer_q=drawer_q_from_box(fx, det))
    return fx


def _dest_phrase(sg: Subgoal) -> str | None:
    place = sg.destination_phrase or ""
    return place.split(" the ", 1)[1] if " the " in place else None


def _box(det: Detection) -> EntityState:
    return EntityState(position=tuple(det.centroid), size=tuple(det.size),
                       orientation=(1.0, 0.0, 0.0, 0.0))
