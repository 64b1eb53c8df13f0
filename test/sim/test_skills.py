"""Motion primitives and fixture skills run on their own, without the expert's task plan."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from mango.oracle.symbolic import SymbolicOracle
from mango.oracle.world_state import WorldState
from mango.sim.env import SimEnv
from mango.sim.expert import fixtures, motions, pushing
from mango.sim.expert.arm import ChunkStream, PlannedArm
from mango.sim.expert.motions import Skill, SkillContext
from mango.sim.scene import SceneSpec


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


def _plate_scene() -> SceneSpec:
    """A plate (a dish, LIBERO's size), a tall box in the way to a table region."""
    return SceneSpec.model_validate({
        "name": "plate_push", "instruction": "push the plate to the back", "goal": "true",
        "entities": [
            {"id": "plate_1", "shape": "plate", "size": [0.14, 0.14, 0.02], "mass": 0.3,
             "position": [0.0, -0.15]},
            {"id": "block_1", "shape": "box", "size": [0.06, 0.06, 0.1], "mass": 0.3,
             "position": [0.05, 0.0]}],
        "regions": [{"id": "main_table_back_region", "parent": "main_table",
                     "offset": [0.0, 0.15, 0.025], "size": [0.06, 0.06, 0.05]}],
        "expert": []})


def test_a_push_route_goes_round_what_stands_in_the_way() -> None:
    env = SimEnv(_plate_scene(), seed=0, cameras=())
    ctx = SkillContext(env.scene, PlannedArm(env.ik_solver(), env.joint_positions().copy(),
                                             env.gripper_width(), travel_speed=0.3,
                                             approach_speed=0.15, travel_z=1.2),
                       env.world_state())
    goal = pushing.push_spot(ctx, "plate_1", "main_table_back_region")
    assert goal == pytest.approx((0.0, 0.13))  # the nearest spot a centimetre inside it
    route = pushing.push_route(ctx, "plate_1", goal)
    assert len(route) == 2 and route[-1] == pytest.approx(goal)
    # the straight line runs through the block; no leg sweeps the plate's disc (radius
    # 0.07) into it
    block = np.array([0.05, 0.0])
    for a, b in zip([np.array([0.0, -0.15]), route[0]], route, strict=True):
        for f in np.linspace(0.0, 1.0, 50):
            p = a + f * (b - a)
            assert np.linalg.norm(np.maximum(np.abs(p - block) - 0.03, 0.0)) > 0.07


def test_a_plate_is_dragged_by_its_rim() -> None:
    """Closed fingers set down on the plate's floor drag it: nothing stands behind it."""
    env = SimEnv(_plate_scene(), seed=0, cameras=())
    goal = np.array([-0.1, -0.25])
    state = _run(env, lambda ctx: pushing.push_to(ctx, "plate_1", goal), 25.0)
    assert np.linalg.norm(np.asarray(state.objects["plate_1"].position[:2]) - goal) < 0.015
    assert state.objects["block_1"].position[:2] == pytest.approx((0.05, 0.0), abs=0.002)


def test_a_grasp_keeps_its_fingers_off_the_plate_rim_beside_the_bowl() -> None:
    """A bowl 2 mm from a plate's rim (LIBERO's "bowl between the plate and the ramekin"):
    the fingers, opening along the bowl's x, would come down on the rim and lift the plate
    with it; the grasp turns them a quarter, off the rim."""
    scene = SceneSpec.model_validate({
        "name": "bowl_by_plate", "instruction": "pick up the bowl", "goal": "true",
        "entities": [
            {"id": "plate_1", "shape": "plate", "size": [0.14, 0.14, 0.02], "mass": 0.3,
             "position": [0.1, 0.2]},
            {"id": "akita_black_bowl_1", "shape": "bowl", "size": [0.07, 0.07, 0.045],
             "mass": 0.12, "position": [-0.006, 0.2]}],
        "expert": []})
    env = SimEnv(scene, seed=0, cameras=())
    plate_z = env.world_state().objects["plate_1"].position[2]

    def take(ctx: SkillContext) -> Skill:
        assert (yield from motions.grasp(ctx, "akita_black_bowl_1")) is not None

    state = _run(env, take, 20.0)
    assert state.fact("grasped(akita_black_bowl_1)")
    assert state.objects["plate_1"].position[2] == pytest.approx(plate_z, abs=0.003)
