"""The scripted expert does what its instruction says: the whole task, or one subgoal of it
read with the generator's parser; what it cannot ground is refused with the reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mango.oracle.predicates import StateView, Thresholds, p_in
from mango.policy.config import PolicyConfig
from mango.policy.expert import ExpertBackend
from mango.policy.instructions import UngroundedInstruction, expert_subgoal
from mango.policy.presets import Observation
from mango.sim.env import SimEnv, as_scene
from mango.sim.expert.policy import ExpertPolicy

DATA = Path(__file__).resolve().parents[1] / "data" / "bddl"


@pytest.mark.parametrize(("scene", "text", "steps"), [
    ("soup_sauce_basket", "pick up the tomato sauce and place it in the basket", (1,)),
    ("soup_sauce_basket", "put the alphabet soup in the basket", (0,)),
    ("soup_sauce_basket",
     "put the tomato sauce in the basket then put the alphabet soup in the basket", (1, 0)),
    ("bowl_drawer", "close the drawer", (1,)),
    ("bowl_drawer", "put the black bowl in the bottom drawer of the cabinet", (0,)),
    ("stove_moka", "turn on the stove", (0,)),
    ("stove_moka", "put the moka pot on the stove", (1,)),
    ("mug_pudding_plate", "put the chocolate pudding to the right of the plate", (1,)),
])
def test_a_subgoal_maps_onto_the_scene_expert_steps(scene: str, text: str,
                                                   steps: tuple[int, ...]) -> None:
    sub = expert_subgoal(as_scene(scene), text)
    assert sub.steps == steps


def test_opening_a_drawer_and_pushing_map_onto_their_steps() -> None:
    """A BDDL scene's `open` and `push` steps (libero_goal's "open the top drawer ...",
    "push the plate to the front of the stove") are subgoals the expert takes like the others:
    by the part's name, by the part alone when one drawer moves, and by the push's place."""
    from mango.bddl.parser import read_bddl
    from mango.bddl.scene import sim_scene

    sc = sim_scene(read_bddl(DATA / "kitchen_drawer_and_plate.bddl"), "dp").scene
    assert [s.skill for s in sc.expert] == ["open", "pick_place", "push"]
    assert expert_subgoal(sc, "open the top drawer of the wooden cabinet").steps == (0,)
    assert expert_subgoal(sc, "open the drawer").steps == (0,)
    assert expert_subgoal(sc, "push the plate to the front of the table").steps == (2,)
    with pytest.raises(UngroundedInstruction, match="pushes plate_1 only on kitchen_table_front"):
        expert_subgoal(sc, "push the plate onto the wooden cabinet")


def test_the_scene_instruction_is_the_whole_plan_for_every_scene() -> None:
    from mango.sim.scene import list_scenes, load_scene

    for path in list_scenes():
        sc = load_scene(path)
        sub = expert_subgoal(sc, sc.instruction)
        assert sub.whole_task and sub.steps == tuple(range(len(sc.expert))), sc.name
        # said differently (here: capitalised, with a full stop) it grounds to the same steps
        again = expert_subgoal(sc, sc.instruction.capitalize() + ".")
        assert sorted(again.steps) == list(range(len(sc.expert))), sc.name


@pytest.mark.parametrize(("scene", "text", "why"), [
    ("bowl_drawer", "open the top drawer", "no 'open' skill"),
    ("soup_sauce_basket", "put the ketchup in the basket", "moves no ketchup_1"),
    ("bowl_drawer", "put the black bowl on the table", "only in white_cabinet_1_bottom_region"),
    ("soup_sauce_basket", "fly to the moon", "no action verb"),
    ("stove_moka", "pick up the moka pot", "no 'pick' skill"),
])
def test_an_instruction_it_cannot_ground_is_refused_with_the_reason(scene: str, text: str,
                                                                    why: str) -> None:
    with pytest.raises(UngroundedInstruction, match=why):
        expert_subgoal(as_scene(scene), text)


def _run(env: SimEnv, policy: ExpertPolicy, until: float) -> None:
    state = env.world_state()
    while not policy.done and state.t < until:
        state = env.step_chunk(policy.act(state, env.joint_positions()))


def test_the_backend_runs_only_the_subgoal_it_is_given() -> None:
    env = SimEnv("soup_sauce_basket", seed=1, cameras=())
    backend = ExpertBackend.from_config(PolicyConfig(backend="expert",
                                                     scene="soup_sauce_basket"))
    backend.reset("pick up the tomato sauce and place it in the basket")
    state = env.world_state()
    while not backend.done and state.t < 30:
        obs = Observation(images={}, joint_positions=env.joint_positions(),
                          gripper_width=env.gripper_width(), instruction="", world_state=state)
        state = env.step_chunk(backend.infer(obs))
    assert backend.done and backend.error is None
    view = StateView(state, Thresholds())
    assert p_in(view, "tomato_sauce_1", "basket_1_contain_region")
    assert not p_in(view, "alphabet_soup_1", "basket_1_contain_region")  # not asked for
    with pytest.raises(UngroundedInstruction):
        backend.reset("open the top drawer")


def test_a_fault_strikes_the_subgoal_once_per_episode() -> None:
    """drop strikes the first transport the episode runs (here the second plan step); the
    next instruction in the same episode runs without it, a new episode re-arms it."""
    env = SimEnv("soup_sauce_basket", seed=0, cameras=())
    policy = ExpertPolicy(env.scene, "drop@0.5")
    policy.reset([1])
    _run(env, policy, 30)
    fr = policy.fault_record
    assert fr is not None and fr.t is not None and fr.skill == 1
    assert not env.world_state().fact("grasped(tomato_sauce_1)")
    policy.reset([0], new_episode=False)
    _run(env, policy, 60)
    assert policy.fault_record is fr and policy.faults.spent
    view = StateView(env.world_state(), Thresholds())
    assert p_in(view, "alphabet_soup_1", "basket_1_contain_region")  # carried all the way
    assert policy.progress.find("pick", 1).achieved  # the episode's milestones are kept
    policy.reset([1])
    assert not policy.faults.spent and policy.fault_record is not fr


def test_an_object_already_in_the_hand_is_placed_without_a_new_grasp() -> None:
    env = SimEnv("soup_sauce_basket", seed=2, cameras=())
    policy = ExpertPolicy(env.scene)
    policy.reset([1])
    state = env.world_state()
    while not state.fact("grasped(tomato_sauce_1)") and state.t < 20:  # until the grasp
        state = env.step_chunk(policy.act(state, env.joint_positions()))
    # the lift has begun; a new instruction takes over with the sauce in the hand
    state = env.step_chunk(policy.act(state, env.joint_positions()))
    assert state.fact("grasped(tomato_sauce_1)")
    assert state.gripper is not None and state.gripper.width is not None
    measured = state.gripper.width  # the sauce's width, where the closed fingers stopped
    policy.reset([1], new_episode=False)
    widths = []
    while not policy.done and state.t < 40:
        chunk = policy.act(state, env.joint_positions())
        widths.append(float(np.max(chunk[:, 7])))
        state = env.step_chunk(chunk)
    assert p_in(StateView(state, Thresholds()), "tomato_sauce_1", "basket_1_contain_region")
    # the hand only opened to release (never to a fresh grasp's full opening first)
    first_open = next(i for i, w in enumerate(widths) if w > 0.06)
    assert all(w < 0.06 for w in widths[:first_open])
    assert first_open > 5
    # and until it lets go it keeps squeezing: commanding the measured width to the
    # position-servoed fingers would leave no grip force (the sauce slid out of a ROS run)
    loosened = next(i for i, w in enumerate(widths) if w >= measured - 0.01)
    assert loosened >= first_open - 2  # the release's 0.5 s ramp: at most two chunks
