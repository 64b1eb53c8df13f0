"""BDDL -> scene objects / §1 goals / task.json, and an oracle's end state -> BDDL goal.

Region ids and layout follow LIBERO (Lifelong-Robot-Learning/LIBERO):
`libero/libero/envs/bddl_utils.py` names a region `target + "_" + region`;
`libero/libero/envs/problems/libero_kitchen_tabletop_manipulation.py` (`_load_sites_in_arena`)
puts a table region's centre at ((x_min + x_max) / 2, (y_min + y_max) / 2) in the table's
frame (plus the workspace offset in the world); `bddl_base_domain.py`
(`_add_placement_initializer`) places On/In a fixture's or object's site on that entity.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mango.bddl.convert import (
    ExportError,
    export_goal,
    formula_expression,
    goal_expression,
    layout,
    scene_json,
    task_json,
)
from mango.bddl.model import Atom, Compound
from mango.bddl.parser import read_bddl
from mango.bddl.writer import write_goal
from mango.generation.models import parse_scene_file
from mango.oracle.expr import parse_expression
from mango.oracle.model import FineGrainedOracle
from mango.oracle.static_check import SceneEntities, static_check

DATA = Path(__file__).resolve().parents[1] / "data" / "bddl"
KITCHEN = DATA / "kitchen_every_section.bddl"


@pytest.mark.parametrize(
    ("bddl", "expr"),
    [
        (Atom(predicate="in", args=("a", "b")), "in(a, b)"),
        (Atom(predicate="on", args=("a", "b")), "on(a, b)"),
        (Atom(predicate="up", args=("a",)), "up(a)"),
        (Atom(predicate="open", args=("a",)), "open(a)"),
        (Atom(predicate="close", args=("a",)), "close(a)"),
        (Atom(predicate="turnon", args=("a",)), "turnon(a)"),
        (Atom(predicate="turnoff", args=("a",)), "turnoff(a)"),
        (Atom(predicate="incontact", args=("a", "b")), "incontact(a, b)"),
        (Atom(predicate="true", args=()), "true"),
        (Atom(predicate="false", args=()), "false"),
        (Atom(predicate="printjointstate", args=("a",)), "true"),
        (Compound(kind="and", children=[Atom(predicate="up", args=("a",))]), "up(a)"),
        (
            Compound(kind="or", children=[Atom(predicate="up", args=("a",)),
                                          Atom(predicate="up", args=("b",))]),
            "up(a) or up(b)",
        ),
        (Compound(kind="not", children=[Atom(predicate="open", args=("d",))]), "not open(d)"),
    ],
)
def test_predicate_mapping(bddl, expr: str) -> None:
    assert parse_expression(expr) == formula_expression(bddl)


def test_kitchen_goal_and_task_json() -> None:
    p = read_bddl(KITCHEN)
    goal = goal_expression(p)
    assert goal == (
        "in(akita_black_bowl_1, wooden_cabinet_1_top_region) and close(microwave_1) and "
        "turnon(flat_stove_1) and on(akita_black_bowl_2, flat_stove_1_cook_region) and "
        "open(wooden_cabinet_1_middle_region)"
    )
    t = task_json(p)
    assert t["instruction"] == p.language and t["goal"] == goal
    assert t["problem"] == "LIBERO_Kitchen_Tabletop_Manipulation"
    assert t["objects"] == ["akita_black_bowl_1", "akita_black_bowl_2", "plate_1", "butter_1"]
    assert t["fixtures"] == ["kitchen_table", "wooden_cabinet_1", "flat_stove_1", "microwave_1"]
    assert len(t["goal_atoms"]) == 5
    assert t["goal_libero"] == (
        "libero_in(akita_black_bowl_1, wooden_cabinet_1_top_region) and libero_close(microwave_1)"
        " and libero_turnon(flat_stove_1) and libero_on(akita_black_bowl_2, "
        "flat_stove_1_cook_region) and libero_open(wooden_cabinet_1_middle_region)"
    )
    assert "turnoff(flat_stove_1)" in t["init"]
    assert t["categories"]["akita_black_bowl_2"] == "akita_black_bowl"
    assert json.loads(json.dumps(t)) == t


def test_scene_entry_kinds_descriptions_and_validators() -> None:
    p = read_bddl(KITCHEN)
    sc = scene_json(p)
    entry = sc["task_objects"][0]
    assert entry["id"] == p.language
    assert entry["objects"] == ["akita_black_bowl_1", "akita_black_bowl_2", "plate_1", "butter_1"]
    kinds = entry["kinds"]
    assert kinds["kitchen_table"] == "surface"
    assert kinds["flat_stove_1"] == "device"
    assert kinds["microwave_1"] == kinds["wooden_cabinet_1"] == "fixture"
    assert kinds["flat_stove_1_cook_region"] == "region"
    assert kinds["plate_1"] == "object"
    assert entry["descriptions"]["akita_black_bowl_1"] == "black bowl"
    assert entry["descriptions"]["flat_stove_1"] == "stove"
    assert set(entry["states"]) == set(kinds)
    # the project's own readers accept it
    parsed = parse_scene_file(sc, "scene.json")
    assert parsed.task_objects[0].kind_of("wooden_cabinet_1_top_region") == "region"
    ents = SceneEntities.from_task_objects(sc)
    # a one-action oracle of the whole goal passes the static check against the scene
    oracle = FineGrainedOracle.model_validate({
        "instruction": p.language,
        "plan": [{"step": 1, "execution_mode": "sequential", "actions": [
            {"action_id": "goal", "parameters": {},
             "monitoring": [{"oracle_id": "goal", "handle_as": goal_expression(p)}]}]}],
    })
    problems = static_check(oracle, scene_entities=ents)
    assert problems == [], problems


def test_layout_centres_and_supports() -> None:
    p = read_bddl(KITCHEN)
    lay = layout(p)
    bowl = lay["akita_black_bowl_1"]
    assert bowl["on"] == "kitchen_table_bowl_init_region" and bowl["relation"] == "on"
    assert bowl["position"] == pytest.approx([-0.075, -0.075])
    assert bowl["frame"] == "kitchen_table"
    # on an object: that object's position
    assert lay["akita_black_bowl_2"]["on"] == "plate_1"
    assert lay["akita_black_bowl_2"]["position"] == pytest.approx([0.05, 0.05])
    # in a fixture's site: the fixture's position
    butter = lay["butter_1"]
    assert butter["relation"] == "in" and butter["on"] == "wooden_cabinet_1_middle_region"
    assert butter["position"] == pytest.approx([-0.01, -0.31])
    assert lay["microwave_1"]["position"] == pytest.approx([-0.28, 0.27])
    assert "kitchen_table" not in lay  # nothing places the table


def test_layout_chain_on_a_study_table() -> None:
    p = read_bddl(DATA / "study_single_atom.bddl")
    lay = layout(p)
    assert lay["yellow_book_1"]["position"] == pytest.approx([-0.15, -0.15])
    assert lay["yellow_book_1"]["frame"] == "study_table"


def test_notes_for_what_libero_does_differently() -> None:
    notes = task_json(read_bddl(DATA / "floor_not_or.bddl"))["notes"]
    assert any("PrintJointState" in n for n in notes)
    assert any(n.startswith("Up is LIBERO's") for n in notes)
    assert any("Or/Not" in n for n in notes)
    study = task_json(read_bddl(DATA / "study_single_atom.bddl"))
    assert any("bowl_drainer_1_right_region" in n for n in study["notes"])
    assert "bowl_drainer_1_right_region" not in scene_json(read_bddl(
        DATA / "study_single_atom.bddl"))["task_objects"][0]["states"]
    assert task_json(read_bddl(KITCHEN))["notes"] == []


def _oracle(actions: list[tuple[str, str]], goal: str | None = None) -> FineGrainedOracle:
    data = {
        "instruction": "x",
        "plan": [{"step": 1, "execution_mode": "sequential", "actions": [
            {"action_id": aid, "parameters": {},
             "monitoring": [{"oracle_id": aid, "handle_as": h}]} for aid, h in actions]}],
    }
    if goal is not None:
        data["goal"] = goal
    return FineGrainedOracle.model_validate(data)


def test_export_from_plan_keeps_the_last_state_of_each_slot() -> None:
    o = _oracle([
        ("open", "open(cab_1_top_region)"),
        ("pick", "grasped(bowl_1) and up(bowl_1)"),
        ("place", "on(bowl_1, plate_1) and not grasped(bowl_1)"),
        ("move", "in(bowl_1, cab_1_top_region) and not grasped(bowl_1)"),
        ("close", "close(cab_1_top_region)"),
        ("touch", "incontact(robot_gripper, stove_1)"),
    ])
    goal, dropped, source = export_goal(o)
    assert source == "plan" and dropped == []
    assert write_goal(goal) == (
        "(:goal\n  (And (In bowl_1 cab_1_top_region) (Close cab_1_top_region))\n)\n"
    )


def test_export_prefers_the_goal_field_and_lists_what_it_drops() -> None:
    o = _oracle([("a", "up(x)")], goal="turnon(s) and on(m, s_cook_region) and grasped(m)")
    goal, dropped, source = export_goal(o)
    assert source == "goal" and dropped == ["grasped(m)"]
    assert goal == Compound(kind="and", children=[
        Atom(predicate="turnon", args=("s",)), Atom(predicate="on", args=("m", "s_cook_region"))
    ])
    # an `or` losing a part is dropped whole; `not` keeps its atom
    o2 = _oracle([("a", "up(x)")], goal="(near(robot_hand, m) or on(m, p)) and not open(d)")
    goal2, dropped2, _ = export_goal(o2)
    assert goal2 == Compound(kind="and", children=[
        Compound(kind="not", children=[Atom(predicate="open", args=("d",))])
    ])
    assert dropped2 == ["near(robot_hand, m)"]


def test_export_of_nothing_is_an_error() -> None:
    with pytest.raises(ExportError, match="checks no in/on"):
        export_goal(_oracle([("a", "grasped(x) and up(x)")]))
