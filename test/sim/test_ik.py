"""IK: random reachable poses are solved to < 1 mm / < 1°; unreachable ones are reported."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest

from mango.errors import UnreachableError
from mango.geometry import rotation_angle
from mango.sim.env import SimEnv

DATA = Path(__file__).resolve().parents[1] / "data" / "sim"


@pytest.fixture(scope="module")
def env() -> SimEnv:
    return SimEnv(DATA / "tiny_basket.yaml", seed=0, cameras=())


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
        assert math.degrees(rotation_angle(quat, got_q)) < 1.0


def test_unreachable_pose_is_reported(env: SimEnv) -> None:
    ik = env.ik_solver()
    res = ik.solve([1.6, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], seed=env.joint_positions())
    assert not res.ok
    assert res.starts > 3  # the whole ladder was tried
    assert "unreachable" in res.message and "mm" in res.message
    with pytest.raises(UnreachableError, match="unreachable"):
        ik.require([1.6, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0])

