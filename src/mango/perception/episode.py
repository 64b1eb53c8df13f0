"""Sim episodes judged on an estimated world state: the expert runs on the physics, the trace
holds what `WorldStateEstimator` made of the rendered cameras and the joint states alone.

This is `mango sim run --world-state estimated` and the measurement of the estimator against
the physics (`bench/bench_world_state.py`): same scene, seed and fault, same labels, two
traces (truth and estimate) of the same instants.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mango.control.robot import load_robot
from mango.geometry import quat_to_mat
from mango.oracle.world_state import WorldState
from mango.perception.aruco import ArucoBackend
from mango.perception.estimator import EstimatorConfig, WorldStateEstimator
from mango.perception.sim_frames import sim_frame
from mango.policy.kinematics import make_kinematics
from mango.sim.env import SimEnv, as_scene
from mango.sim.expert.policy import ExpertPolicy
from mango.sim.faults import Fault
from mango.sim.markers import MarkerMap, auto_marker_map
from mango.sim.runner import EpisodeResult, run_episode
from mango.sim.scene import SceneSpec

CAMERAS = ("front", "wrist")
IMAGE_SIZE = (640, 480)


@dataclass
class EstimatedEpisode:
    result: EpisodeResult  # the run on the physics: truth states, labels
    estimated: list[WorldState]  # one per truth state, same times


def estimated_episode(
    scene: SceneSpec | str | Path,
    seed: int = 0,
    fault: Fault | None = None,
    *,
    markers: MarkerMap | None = None,
    cameras: Sequence[str] = CAMERAS,
    image_size: tuple[int, int] = IMAGE_SIZE,
    config: EstimatorConfig | None = None,
    expert: ExpertPolicy | None = None,
    on_state: Callable[[WorldState], None] | None = None,
) -> EstimatedEpisode:
    """Run the expert; at every control step render the cameras, find the markers and update
    the estimator from those and the measured joints (never the physics' object poses)."""
    sc = as_scene(scene)
    mm = markers if markers is not None else auto_marker_map(sc)
    env = SimEnv(sc, seed=seed, cameras=tuple(cameras), image_size=image_size, markers=mm)
    pos, quat = env.robot_base_pose()
    base = np.eye(4)
    base[:3, :3], base[:3, 3] = quat_to_mat(quat), pos
    estimator = WorldStateEstimator(sc, mm, make_kinematics(load_robot("fr3")), base, config)
    aruco = ArucoBackend(mm, sc)
    estimated: list[WorldState] = []

    def observe(truth: WorldState) -> None:
        q = env.joint_positions()
        estimator.observe_joints(q, env.gripper_width(), truth.t)
        for cam in cameras:
            frame = sim_frame(env, cam).without_privileged()
            poses, _ = aruco.poses(frame)
            estimator.observe_markers(poses, truth.t)
        estimated.append(estimator.state(truth.t))
        if on_state is not None:
            on_state(truth)

    try:
        result = run_episode(sc, seed, fault, env=env, expert=expert, on_state=observe)
    finally:
        env.close()
    return EstimatedEpisode(result, estimated)
