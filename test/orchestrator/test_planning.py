"""The plan phase phrases every expert skill as a subgoal the language-conditioned VLA grounds
back to the same step: a BDDL scene's `open` and `push` as well as pick-and-place, close and
turn on."""

from __future__ import annotations

from pathlib import Path

from mango.bddl.parser import read_bddl
from mango.bddl.scene import sim_scene
from mango.orchestrator.planning import make_plan
from mango.policy.instructions import expert_subgoal
from mango.sim.env import SimEnv

DATA = Path(__file__).resolve().parents[1] / "data" / "bddl"


def test_a_bddl_scene_with_open_and_push_is_planned_in_words_the_vla_follows() -> None:
    sc = sim_scene(read_bddl(DATA / "kitchen_drawer_and_plate.bddl"), "dp").scene
    env = SimEnv(sc, seed=0, cameras=())
    try:
        plan = make_plan(sc, None, env.world_state())
    finally:
        env.close()
    texts = [s.instruction for s in plan.subgoals]
    assert texts == ["open the top drawer of the wooden cabinet",
                     "put the black bowl in the top drawer of the wooden cabinet",
                     "push the plate to the front of the kitchen table"]
    for k, text in enumerate(texts):
        assert expert_subgoal(sc, text).steps == (k,)
