"""LIBERO's libero_goal kitchen in the sim: its layout, and the tasks where things stand in
each other's way (test/data/bddl/kitchen_goal_scene.bddl has LIBERO's layout numbers).

LIBERO places a fixture's asset origin at its `:init` range's centre
(`envs/regions/base_region_sampler.py`), and the wooden cabinet's carcass is not centred on
that origin (`assets/articulated_objects/wooden_cabinet.xml`: drawer fronts at y = -0.078,
back at +0.112, the `top_side` site centred at (0.0035, 0.0157)). Its top drawer, fully open,
hangs over the bowl's corner; the plate lies 4-6 cm in front of the middle drawer's handle;
the cream cheese box stands between the plate and the front of the stove.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mango.bddl.parser import parse_bddl, read_bddl
from mango.bddl.scene import sim_scene
from mango.oracle.symbolic import SymbolicOracle
from mango.sim.runner import run_episode
from mango.sim.scene import SceneSpec

SCENE = Path(__file__).resolve().parents[1] / "data" / "bddl" / "kitchen_goal_scene.bddl"
GOAL = "(And (In akita_black_bowl_1 wooden_cabinet_1_top_region))"


def _scene(goal: str = GOAL) -> SceneSpec:
    result = sim_scene(parse_bddl(SCENE.read_text().replace(GOAL, goal)), "goal_kitchen")
    assert result.scene is not None, result.missing
    return result.scene


def test_the_cabinet_stands_where_libero_puts_its_origin() -> None:
    sc = sim_scene(read_bddl(SCENE), "g").scene
    assert sc is not None
    cab = sc.entity("wooden_cabinet_1")
    # range centre (0.03, -0.24), 0.66 m ahead of LIBERO's robot (ours: base at x -0.56);
    # turned by pi, the carcass centre lies (-0.0035, -0.0157) from the origin
    assert cab.position == pytest.approx((0.03 + 0.66 - 0.56 - 0.0035, -0.24 - 0.0157))
    assert cab.yaw == -90.0  # its drawers open toward +y, the bowl
    # an asset centred on its origin (the wine rack) stands at its range centre
    assert sc.entity("wine_rack_1").position == pytest.approx((-0.26 + 0.1, -0.26))


def test_the_bowl_goes_into_the_top_drawer_hanging_over_it() -> None:
    """The drawer, pulled fully open first (the instruction says open it), hangs over the
    bowl's corner: the hand leans away from it to take the bowl, draws it out from under,
    then puts it in."""
    sc = _scene()
    assert [k.skill for k in sc.expert] == ["open", "pick_place"]
    run = run_episode(sc, 1)
    assert run.error is None and run.success, run.labels["milestones"]
    assert SymbolicOracle(sc.goal).check(run.states).verdict == "pass"
    times = {m["kind"]: m["t"] for m in run.labels["milestones"]}
    assert times["open"] < times["pick"] < times["place"]  # open before the bowl is taken


def test_the_plate_goes_round_the_cream_cheese_to_the_front_of_the_stove() -> None:
    """Dragged by its rim from inside (nothing has room to stand behind it: the cabinet),
    along +y past the cream cheese box, then toward the robot into the region."""
    sc = _scene("(And (On plate_1 main_table_stove_front_region))")
    assert [k.skill for k in sc.expert] == ["push"]
    run = run_episode(sc, 4)
    assert run.error is None and run.success, run.labels["milestones"]
    assert SymbolicOracle(sc.goal).check(run.states).verdict == "pass"


def test_the_middle_drawer_opens_over_the_plate_in_front_of_it() -> None:
    """Its handle is 11 cm over the table: a level hand's lower half would come down on the
    plate in front, so the hand pitches down to grip it and leaves the plate where it is."""
    sc = _scene("(And (Open wooden_cabinet_1_middle_region))")
    run = run_episode(sc, 4)
    assert run.error is None and run.success, run.labels["milestones"]
    assert SymbolicOracle(sc.goal).check(run.states).verdict == "pass"
    first, last = (s.objects["plate_1"].position for s in (run.states[0], run.states[-1]))
    assert abs(first[0] - last[0]) < 0.005 and abs(first[1] - last[1]) < 0.005
