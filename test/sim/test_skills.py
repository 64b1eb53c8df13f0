"""Motion primitives and fixture skills run on their own, without the expert's task plan."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mango.oracle.symbolic import SymbolicOracle
from mango.oracle.world_state import WorldState
from mango.sim.env import SimEnv
from mango.sim.expert import fixtures, motions
from mango.sim.expert.arm import ChunkStream, PlannedArm
from mango.sim.expert.motions import Skill, SkillContext


def _run(env: SimEnv, skill: Callable[[SkillContext], Skill], seconds: float) -> WorldState:
    """Drive one skill through chunks on the simulator, as a policy would."""
    state = env.world_state()
    arm = PlannedArm(env.ik_solver(), env.joint_positions().copy(), env.gripper_width(),
                     travel_speed=0.3, approach_speed=0.15,
                     travel_z=motions.travel_height(env.scene))
    ctx = SkillContext(env.scene, arm, state)
    stream = ChunkStream(skill(ctx), 8, np.r_[arm.q, arm.width])
    end = state.t + seconds
    while not stream.done and state.t < end:
        state = env.step_chunk(stream.next_chunk())
        ctx.state = state
    assert stream.done and stream.error is None
    return state


def test_grasp_and_place_an_object_the_task_does_not_mention() -> None:
    env = SimEnv("soup_sauce_basket", seed=0, cameras=())
    obj, target = "cream_cheese_1", "basket_1_contain_region"
    result: dict[str, float | None] = {}

    def put_in_basket(ctx: SkillContext) -> Skill:
        offset = yield from motions.grasp(ctx, obj)
        result["offset"] = offset
        assert offset is not None
        xy, support, tyaw = motions.place_point(ctx, target, (0.0, 0.0))
        quat = motions.carry_quat(ctx, obj, tyaw)
        yield from motions.place(ctx, xy, support + offset + 0.012, quat,
                                 on_release=lambda t: result.update(released=t))

    state = _run(env, put_in_basket, 30.0)
    assert result["released"] is not None and result["offset"] is not None
    assert not state.fact(f"grasped({obj})")
    assert SymbolicOracle(f"in({obj}, {target})").holds(state)  # the oracle's `in`


def test_close_a_drawer_on_its_own() -> None:
    env = SimEnv("bowl_drawer", seed=0, cameras=())
    joint = "white_cabinet_1_bottom_region"
    assert env.world_state().joints[joint].openness > 0.5  # the drawer starts open
    state = _run(env, lambda ctx: fixtures.close_joint(ctx, joint), 20.0)
    assert state.joints[joint].openness <= 0.05


def test_turn_a_knob_on_its_own() -> None:
    env = SimEnv("stove_moka", seed=0, cameras=())
    assert not env.world_state().devices["flat_stove_1"].on
    state = _run(env, lambda ctx: fixtures.turn_on(ctx, "flat_stove_1"), 20.0)
    assert state.devices["flat_stove_1"].on
