"""The run's ground truth and the oracle judge the same physics with one implementation of
each relation: whatever the state, a milestone holds exactly when the oracle's predicate does
(the pot on the stove's edge counts for both or for neither)."""

from __future__ import annotations

import numpy as np

from mango.oracle import check_trace
from mango.oracle.symbolic import SymbolicOracle
from mango.sim.env import SimEnv
from mango.sim.expert.milestones import TaskProgress, milestone_condition
from mango.sim.faults import parse_fault
from mango.sim.runner import load_oracle_json, run_episode


def test_a_place_milestone_holds_exactly_when_the_oracles_on_does() -> None:
    env = SimEnv("stove_moka", seed=2, cameras=())
    progress = TaskProgress(env.scene)
    place = progress.find("place", 1)
    assert milestone_condition(place) == (
        "on(moka_pot_1, flat_stove_1_cook_region) and not grasped(moka_pot_1)")
    state = env.world_state()
    region = state.objects["flat_stove_1_cook_region"]
    pot = state.objects["moka_pot_1"]
    size = np.asarray(pot.size)
    top = region.position[2] + region.size[2] / 2
    oracle = SymbolicOracle("on(moka_pot_1, flat_stove_1_cook_region) and "
                            "not grasped(moka_pot_1)")
    agree = []
    # slide the pot across the region's edge (in x) and through its height (in z)
    for dx in np.linspace(0.0, region.size[0] / 2 + 0.05, 25):
        for dz in (-0.03, -0.015, 0.0, 0.015, 0.03):
            moved = state.model_copy(deep=True)
            moved.objects["moka_pot_1"].position = (
                region.position[0] + dx, region.position[1], top + size[2] / 2 + dz)
            agree.append((progress.holds(place, moved), oracle.holds(moved)))
    assert all(a == b for a, b in agree)
    assert {a for a, _ in agree} == {True, False}  # both sides of the edge were visited


def test_a_dropped_pot_is_labelled_as_the_oracle_judges_it() -> None:
    """The reported case: stove_moka, seed 2, drop@0.5. The labels say what the oracle says
    on the same states, whichever way the pot landed."""
    res = run_episode("stove_moka", 2, parse_fault("drop@0.5"))
    oracle, _ = load_oracle_json(res.scene)
    report = check_trace(oracle, res.states)
    assert report.verdict == res.labels["expected_verdict"]
    assert report.failed_step == res.labels["failed_step"]
