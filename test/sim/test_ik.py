"""The sim's IK is the project's one ladder (`mango.ik`) on the MuJoCo arm: its Jacobian is the
derivative of the site pose, random reachable poses are solved within the ladder's FK check
(1 mm / 2 degrees), unreachable ones are reported."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest

from mango.errors import UnreachableError
from mango.geometry import rotation_angle
from mango.ik import IKLadder, LadderSettings, pose_error
from mango.sim.env import SimEnv

DATA = Path(__file__).resolve().parents[1] / "data" / "sim"


@pytest.fixture(scope="module")
def env() -> SimEnv:
    return SimEnv(DATA / "tiny_basket.yaml", seed=0, cameras=())


def test_the_solver_is_the_ladder_with_volos_settings(env: SimEnv) -> None:
    ik = env.ik_solver()
    assert isinstance(ik.ladder, IKLadder) and ik.ladder.settings == LadderSettings()
    assert ik.ladder.model is ik.arm


def test_mujoco_arm_jacobian_is_the_derivative_of_the_site_pose(env: SimEnv) -> None:
    arm = env.ik_solver().arm
    q = env.joint_positions() + np.array([0.3, -0.2, 0.1, 0.2, -0.4, 0.3, 0.5])
    p, r, jac = arm.pose_jacobian(q)
    assert np.allclose(arm.pose_matrix(q)[0], p) and jac.shape == (6, 7)
    for j in range(7):
        dq = q.copy()
        dq[j] += 1e-7
        p2, r2 = arm.pose_matrix(dq)
        assert np.allclose(pose_error(p2, r2, p, r) / 1e-7, jac[:, j], atol=1e-5)


def test_random_reachable_poses(env: SimEnv) -> None:
    ik = env.ik_solver()
    rng = np.random.default_rng(7)
    home = env.joint_positions()
    # a separate MjData for the ground-truth forward kinematics
    data = mujoco.MjData(env.model)
    lo, hi = ik.lower + 0.1, ik.upper - 0.1
    for _ in range(25):
        q_true = rng.uniform(lo, hi)
        data.qpos[env.built.arm_qpos] = q_true
        mujoco.mj_kinematics(env.model, data)
        pos = data.site_xpos[env.built.hand_site].copy()
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, data.site_xmat[env.built.hand_site])
        res = ik.solve(pos, quat, seed=home)
        assert res.ok, res.message
        assert np.all(res.q >= ik.lower - 1e-9) and np.all(res.q <= ik.upper + 1e-9)
        data.qpos[env.built.arm_qpos] = res.q
        mujoco.mj_kinematics(env.model, data)
        got_q = np.zeros(4)
        mujoco.mju_mat2Quat(got_q, data.site_xmat[env.built.hand_site])
        assert np.linalg.norm(data.site_xpos[env.built.hand_site] - pos) < 1e-3
        assert math.degrees(rotation_angle(quat, got_q)) < 2.0


def test_unreachable_pose_is_reported(env: SimEnv) -> None:
    ik = env.ik_solver()
    res = ik.solve([1.6, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], seed=env.joint_positions())
    assert not res.ok
    assert res.starts > 3  # the whole ladder was tried
    assert "unreachable" in res.message and "mm" in res.message
    with pytest.raises(UnreachableError, match="unreachable"):
        ik.require([1.6, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])

