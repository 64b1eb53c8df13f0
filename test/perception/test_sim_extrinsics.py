"""The sim's calibration (`sim_extrinsics`) and the perception-only frames built on it: the
camera poses a lab would compute from its extrinsics file and the measured joints are the
sim's true camera poses, for any arm configuration."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mango.control.robot import load_robot
from mango.perception.base import PerceptionError
from mango.perception.poses import Extrinsics
from mango.perception.sim_frames import estimated_frame, sim_extrinsics, sim_frame
from mango.policy.kinematics import make_kinematics
from mango.sim.env import SimEnv


def _set_arm(env: SimEnv, q: np.ndarray) -> None:
    env.data.qpos[env.built.arm_qpos] = q
    mujoco.mj_forward(env.model, env.data)


def test_extrinsics_give_the_true_camera_poses_for_any_arm_configuration() -> None:
    robot = load_robot("fr3")
    kin = make_kinematics(robot)
    rng = np.random.default_rng(3)
    with SimEnv("libero10_bowl_drawer", cameras=("front", "wrist")) as env:
        ex = sim_extrinsics(env)
        assert ex.cameras["front"].mount == "world" and ex.cameras["wrist"].mount == "tcp"
        # the file a lab would keep: it survives a YAML/JSON round trip
        ex = Extrinsics.model_validate(ex.model_dump(mode="json"))
        home = np.asarray(env.scene.robot.home, float)
        configs = [home] + [np.clip(home + rng.uniform(-0.8, 0.8, 7), robot.lower, robot.upper)
                            for _ in range(5)]
        base = np.asarray(env.scene.robot.base, float)
        for q in configs:
            _set_arm(env, q)
            # the FK's TCP is the sim's hand site (the grasp centre): one TCP for both
            hand_pos, hand_quat = env.hand_pose()
            tcp_pos, tcp_quat = kin.fk(q)
            assert np.abs(tcp_pos + base - hand_pos).max() < 1e-6
            assert min(np.abs(tcp_quat - hand_quat).max(),
                       np.abs(tcp_quat + hand_quat).max()) < 1e-6
            for cam in ("front", "wrist"):
                pos, rot = env.camera_pose(cam)
                est = ex.camera_pose(cam, kin, q)
                assert np.abs(est.position - pos).max() < 1e-6, (cam, q)
                assert np.abs(est.rotation - rot).max() < 1e-6, (cam, q)


def test_estimated_frame_is_the_sim_frame_without_privileged_data() -> None:
    with SimEnv("libero10_stove_moka", cameras=("front", "wrist"),
                image_size=(160, 120)) as env:
        ex = sim_extrinsics(env)
        q = env.joint_positions()
        for cam in ("front", "wrist"):
            truth = sim_frame(env, cam)
            est = estimated_frame(env, cam, ex, q)
            assert est.segmentation is None and truth.segmentation is not None
            assert np.array_equal(est.rgb, truth.rgb)
            assert np.array_equal(est.depth, truth.depth, equal_nan=True)
            assert est.intrinsics == truth.intrinsics
            assert np.allclose(est.pose.matrix(), truth.pose.matrix(), atol=1e-6)
        with pytest.raises(PerceptionError, match="measured joint positions"):
            estimated_frame(env, "wrist", ex)
