"""Where the monitor's and the oracle's world state comes from, chosen by configuration.

- `physics`: the simulator's own world state (what a sim can know, a real robot cannot);
- `estimated`: what a real FR3 has — the scene's fiducial markers seen by the front and wrist
  cameras (`ArucoBackend` on rendered frames, camera poses from the calibration and the
  measured joints), the joint states and the gripper width, fused by `WorldStateEstimator`:
  the estimator `world_state_node` runs, wired as `perception.episode` wires it.

Ground truth (world-failure events, task success) is always judged on the physics; only what
the orchestrator *believes* changes.
"""

from __future__ import annotations

from typing import Protocol

from mango.control.robot import load_robot
from mango.oracle.world_state import WorldState
from mango.perception.aruco import ArucoBackend
from mango.perception.estimator import WorldStateEstimator
from mango.perception.sim_frames import estimated_frame, sim_extrinsics
from mango.policy.kinematics import make_kinematics
from mango.sim.env import SimEnv
from mango.sim.markers import MarkerMap, auto_marker_map
from mango.sim.scene import SceneSpec

WORLDS = ("physics", "estimated")
ESTIMATED_CAMERAS = ("front", "wrist")


class WorldSource(Protocol):
    name: str

    def observe(self, truth: WorldState) -> WorldState: ...


class PhysicsWorld:
    """The physics' world state, as it is."""

    name = "physics"

    def observe(self, truth: WorldState) -> WorldState:
        return truth


class EstimatedWorld:
    """The perception-based estimate at the instant of `truth` (whose object poses it never
    reads: only its time stamp)."""

    name = "estimated"

    def __init__(self, env: SimEnv, markers: MarkerMap) -> None:
        self.env = env
        self.extrinsics = sim_extrinsics(env)  # what a lab's calibration file holds
        self.estimator = WorldStateEstimator(env.scene, markers,
                                             make_kinematics(load_robot("fr3")),
                                             self.extrinsics.robot_base.matrix())
        self.aruco = ArucoBackend(markers, env.scene)

    def observe(self, truth: WorldState) -> WorldState:
        q = self.env.joint_positions()
        self.estimator.observe_joints(q, self.env.gripper_width(), truth.t)
        for cam in ESTIMATED_CAMERAS:
            frame = estimated_frame(self.env, cam, self.extrinsics, q)
            poses, _ = self.aruco.poses(frame)
            self.estimator.observe_markers(poses, truth.t)
        return self.estimator.state(truth.t)


def world_markers(scene: SceneSpec, world: str) -> MarkerMap | None:
    """The fiducials the sim must render for `world` (None: none needed)."""
    return auto_marker_map(scene) if world == "estimated" else None


def make_world(env: SimEnv, world: str) -> WorldSource:
    if world == "estimated":
        if env.markers is None:
            raise ValueError("the estimated world needs a SimEnv rendering the scene's markers")
        return EstimatedWorld(env, env.markers)
    return PhysicsWorld()
