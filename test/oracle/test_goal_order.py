"""Goal coverage in a valid order (`mango.oracle.goal_order`): the check the LIBERO bench and
the held-out scorer apply to every generated oracle, next to the static check."""

from __future__ import annotations

from typing import Any

import pytest

from mango.oracle.expr import ExpressionError
from mango.oracle.goal_order import goal_order_problems, related


def act(action_id: str, handle: str) -> dict[str, Any]:
    return {"action_id": action_id, "parameters": {},
            "monitoring": [{"oracle_id": action_id, "handle_as": handle}]}


def oracle(mode: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"instruction": "x", "execution_mode": mode,
            "plan": [{"step": i, **s} for i, s in enumerate(steps, start=1)]}


def seq(*actions: dict[str, Any]) -> dict[str, Any]:
    return {"execution_mode": "sequential", "actions": list(actions)}


OPEN = act("open", "open(cab_1_top_region)")
PICK = act("pick_up", "grasped(bowl_1) and up(bowl_1)")
PUT = act("place_in", "in(bowl_1, cab_1_top_region) and not grasped(bowl_1)")
CLOSE = act("close", "close(cab_1_top_region)")
GOAL = ["open(cab_1_top_region)", "in(bowl_1, cab_1_top_region)", "close(cab_1_top_region)"]


def test_a_sequential_plan_in_the_right_order_has_no_problem():
    o = oracle("sequential", seq(OPEN), seq(PICK, PUT), seq(CLOSE))
    assert goal_order_problems(o, GOAL) == []


def test_a_goal_atom_no_step_checks_is_missing():
    o = oracle("sequential", seq(PICK, PUT))
    (p,) = goal_order_problems(o, ["in(bowl_1, cab_1_top_region)", "close(cab_1_top_region)"])
    assert (p.kind, p.atom) == ("missing", "close(cab_1_top_region)")
    # an atom under `not` is not checked as a goal
    assert goal_order_problems(o, ["grasped(bowl_1)"]) == []
    assert [p.kind for p in goal_order_problems(oracle("sequential", seq(act(
        "x", "not in(bowl_1, cab_1_top_region)"))), ["in(bowl_1, cab_1_top_region)"])] == [
        "missing"]


def test_putting_into_a_drawer_the_plan_may_open_later_is_out_of_order():
    o = oracle("any_order", seq(OPEN), seq(PICK, PUT))  # may put in before it is open
    (p,) = goal_order_problems(o, GOAL[:2])
    assert p.kind == "order" and p.path == "2.2" and "opening cab_1_top_region" in p.message


def test_closing_before_what_goes_in_is_out_of_order():
    o = oracle("sequential", seq(OPEN), seq(CLOSE), seq(PICK, PUT))
    problems = goal_order_problems(o, GOAL)
    assert [(p.atom, p.kind) for p in problems] == [("close(cab_1_top_region)", "order")]
    assert "putting bowl_1 into cab_1_top_region" in problems[0].message


def test_a_placement_before_its_grasp_is_out_of_order():
    o = oracle("any_order", seq(PICK), seq(PUT))
    (p,) = goal_order_problems(o, ["in(bowl_1, cab_1_top_region)"])
    assert "grasping bowl_1" in p.message
    # a pushed object is never grasped: nothing is needed before its placement
    push = oracle("sequential", seq(act("push_on", "on(plate_1, spot_region) and not "
                                               "grasped(plate_1)")))
    assert goal_order_problems(push, ["on(plate_1, spot_region)"]) == []


def test_parts_by_id_prefix():
    assert related("microwave_1", "microwave_1_heating_region")
    assert related("cab_1_top_region", "cab_1_top_region")
    assert not related("cab_1_top_side", "cab_1_top_region")
    # opening the microwave is needed before putting into its heating region
    o = oracle("any_order", seq(act("open", "open(microwave_1)")), seq(act(
        "place_in", "in(mug_1, microwave_1_heating_region)")))
    assert [p.kind for p in goal_order_problems(o, ["in(mug_1, microwave_1_heating_region)"])
            ] == ["order"]


def test_a_goal_that_is_no_atom_is_bad_input():
    with pytest.raises(ExpressionError):
        goal_order_problems(oracle("sequential", seq(PICK)), ["in(a, b) and on(c, d)"])
