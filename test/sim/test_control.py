"""Joint control: FR3 joint names, 8-D chunks at 15 Hz, and a grasp that lifts an object."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mango.errors import InputError, UnreachableError
from mango.geometry import rotation_angle
from mango.sim.env import SimEnv
from mango.sim.expert.motions import down_quat
from mango.sim.scene import FR3_JOINTS

DATA = Path(__file__).resolve().parents[1] / "data" / "sim"


@pytest.fixture(scope="module")
def env() -> SimEnv:
    return SimEnv(DATA / "tiny_basket.yaml", seed=0, cameras=())


def test_joint_names_are_parameters() -> None:
    assert tuple(f"fr3_joint{i}" for i in range(1, 8)) == FR3_JOINTS
    custom = tuple(f"panda_joint{i}" for i in range(1, 8))
    e = SimEnv(DATA / "tiny_basket.yaml", cameras=(), joint_names=custom)
    assert e.joint_names == custom
    with pytest.raises(InputError, match="7 distinct"):
        SimEnv(DATA / "tiny_basket.yaml", cameras=(), joint_names=("a",) * 7)


def test_chunks_advance_time_and_track_targets(env: SimEnv) -> None:
    env.reset(0)
    assert env.joint_names == FR3_JOINTS
    q0 = env.joint_positions()
    target = q0 + np.array([0.3, -0.2, 0.2, 0.3, -0.2, 0.2, 0.4])
    chunk = np.tile(np.r_[target, 0.02], (15, 1))
    t0 = env.time
    ws = env.step_chunk(chunk)
    assert math.isclose(env.time - t0, 1.0, abs_tol=0.01)  # 15 actions at 15 Hz
    assert math.isclose(ws.t, env.time, abs_tol=1e-6)
    assert np.max(np.abs(env.joint_positions() - target)) < 0.03
    assert abs(env.gripper_width() - 0.02) < 0.004
    with pytest.raises(ValueError, match="H x 8"):
        env.step_chunk(np.zeros((3, 7)))
    with pytest.raises(ValueError, match="finite"):
        env.step(np.full(8, np.nan))


def test_a_grasp_lifts_an_object(env: SimEnv) -> None:
    env.reset(0)
    ik = env.ik_solver()
    can = env.world_state().objects["can_1"]
    c = np.asarray(can.position)
    quat = down_quat(-math.pi / 2)
    z_grasp = c[2] + can.size[2] / 2 - 0.025
    q = env.joint_positions()

    def move(p: np.ndarray, width: float, seconds: float) -> None:
        nonlocal q
        start, _ = env.hand_pose()
        n = max(2, round(seconds * 15))
        rows = []
        for i in range(1, n + 1):
            q = ik.require(start + (p - start) * i / n, quat, seed=q)
            rows.append(np.r_[q, width])
        env.step_chunk(np.asarray(rows))

    move(np.array([c[0], c[1], z_grasp + 0.12]), 0.08, 2.0)
    move(np.array([c[0], c[1], z_grasp]), 0.08, 1.0)
    env.step_chunk(np.tile(np.r_[q, 0.0], (12, 1)))  # close
    ws = env.world_state()
    assert ws.facts["grasped(can_1)"] is True
    assert ("can_1", "robot_left_finger") in ws.contacts
    assert ("can_1", "robot_right_finger") in ws.contacts
    move(np.array([c[0], c[1], z_grasp + 0.15]), 0.0, 1.5)
    env.step_chunk(np.tile(np.r_[q, 0.0], (8, 1)))
    ws = env.world_state()
    lifted = ws.objects["can_1"].position[2] - c[2]
    assert lifted > 0.12
    assert ws.facts["grasped(can_1)"] is True
    assert ws.gripper.closed is True and 0.04 < ws.gripper.width < 0.06  # holds a 55 mm can


def test_cartesian_target_through_ik(env: SimEnv) -> None:
    env.reset(0)
    goal = np.array([0.0, 0.1, env.scene.table.height + 0.2])
    quat = down_quat(0.3)
    q = env.set_cartesian_target(goal, quat, gripper_width=0.05)
    env.step(duration=1.5)
    pos, got = env.hand_pose()
    assert np.allclose(env.joint_positions(), q, atol=0.02)
    assert np.linalg.norm(pos - goal) < 0.01
    assert math.degrees(rotation_angle(quat, got)) < 2.0
    with pytest.raises(UnreachableError, match="unreachable"):
        env.set_cartesian_target([2.0, 0.0, 1.0], quat)
