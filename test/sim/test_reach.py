"""The expert at the edge of the FR3's reach (LIBERO puts things there): cruise and carry
heights come down to what the arm reaches, and a bowl whose middle is out of reach is taken
by its near wall and still set down centred. The poses out of reach are checked first, so
the scenes test what they claim."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mango.oracle.symbolic import SymbolicOracle
from mango.oracle.world_state import WorldState
from mango.sim.env import SimEnv
from mango.sim.expert import motions
from mango.sim.expert.arm import PlannedArm
from mango.sim.runner import run_episode

DATA = Path(__file__).resolve().parents[1] / "data" / "sim"


def _reachable(env: SimEnv, pos: np.ndarray, quat: np.ndarray) -> bool:
    return env.ik_solver().solve(pos, quat, env.joint_positions(), max_jump=math.inf).ok


def _run(scene: Path, seed: int = 0) -> list[WorldState]:
    states: list[WorldState] = []
    result = run_episode(scene, seed, on_state=states.append)
    assert result.labels["expert_error"] is None
    return states


def test_a_bowl_beyond_reach_is_taken_by_its_near_wall() -> None:
    scene = DATA / "far_bowl.yaml"
    env = SimEnv(scene, seed=0, cameras=())
    bowl = env.world_state().objects["bowl_1"]
    z = bowl.position[2] + bowl.size[2] / 2 - 0.022  # the top grasp's height
    middle = np.array([bowl.position[0], bowl.position[1], z])
    assert not any(_reachable(env, middle, motions.down_quat(a)) for a in (0.0, math.pi / 2))
    states = _run(scene)
    held = [s for s in states if s.fact("grasped(bowl_1)")]
    assert held, "the bowl was never held"
    s = held[0]
    gap = np.subtract(s.objects["bowl_1"].position[:2], s.objects["robot_hand"].position[:2])
    assert 0.02 < float(np.linalg.norm(gap)) < 0.04  # one finger inside the wall
    assert SymbolicOracle(env.scene.goal).check(states).to_json()["verdict"] == "pass"
    end = states[-1]  # set down centred, not 3 cm off where the hand was
    offset = np.subtract(end.objects["bowl_1"].position[:2], end.objects["plate_1"].position[:2])
    assert float(np.linalg.norm(offset)) < 0.015


def test_a_carry_above_a_far_cabinet_comes_down_to_what_the_arm_reaches() -> None:
    scene = DATA / "cabinet_top.yaml"
    env = SimEnv(scene, seed=0, cameras=())
    top = env.world_state().objects["wooden_cabinet_1_top_side"]
    release = top.position[2] - top.size[2] / 2 + 0.16  # the bottle's grip height on it
    quat = motions.down_quat(0.0)
    xy = np.asarray(top.position[:2])
    assert not _reachable(env, np.r_[xy, release + 0.1], quat)  # the carry it used to ask
    states = _run(scene)
    assert SymbolicOracle(env.scene.goal).check(states).to_json()["verdict"] == "pass"


def test_reach_z_is_the_highest_reachable_height() -> None:
    env = SimEnv(DATA / "cabinet_top.yaml", seed=0, cameras=())
    arm = PlannedArm(env.ik_solver(), env.joint_positions().copy(), env.gripper_width(),
                     travel_speed=0.3, approach_speed=0.15, travel_z=1.2)
    quat = motions.down_quat(0.0)
    far = np.array([0.13, -0.24])
    lo, hi = 1.1, 1.5
    z = arm.reach_z(far, quat, lo, hi)
    assert lo <= z < hi
    assert _reachable(env, np.r_[far, z], quat)
    assert not _reachable(env, np.r_[far, z + 0.006], quat)
    near = np.array([-0.1, 0.0])
    assert arm.reach_z(near, quat, 1.0, 1.2) == 1.2  # all of it reachable
    assert arm.reach_z(far, quat, 1.45, 1.5) == 1.5  # none: the move fails with its reason
    assert np.array_equal(arm.q, env.joint_positions())  # asking moves nothing
