"""The offline reader on phrasings beyond LIBERO-10's: one test per construction.

The scene is made up here (ids in LIBERO's `<owner>_<part>` style, no description for any
part, alike objects told apart only by the layout). Layout directions are LIBERO's table
frame, as its task files use them (Lifelong-Robot-Learning/LIBERO,
libero/libero/bddl_files/libero_90/LIVING_ROOM_SCENE5_put_the_red_mug_on_the_left_plate.bddl:
the goal's plate_1 starts at y = -0.3, so "left" is -y;
KITCHEN_SCENE2_put_the_black_bowl_at_the_front_on_the_plate.bddl: the front bowl starts at
the largest x, so "front" is +x).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mango.generation.engine import load_function_library
from mango.generation.models import SceneTask, load_tasks
from mango.generation.offline import module3
from mango.generation.offline.grounding import ground_instruction
from mango.generation.offline.matching import Grounder
from mango.generation.offline.planner import OfflinePlanner
from mango.generation.offline.skills import required_skills
from mango.generation.pipeline import make_pipeline
from mango.generation.reliability import ExecutionReliabilityAssessor
from mango.llm.backend import Refusal
from mango.oracle.goal_order import goal_order_problems

ROOT = Path(__file__).resolve().parents[2]
OBJECTS = ["bowl_1", "bowl_2", "bowl_3", "plate_1", "plate_2", "red_mug_1", "white_mug_1",
           "green_mug_1", "cookies_1", "ramekin_1", "butter_1", "cream_cheese_1", "milk_1",
           "basket_1"]
PARTS = ["cabinet_1_top_region", "cabinet_1_middle_region", "cabinet_1_bottom_region",
         "cabinet_1_top_side", "stove_1_cook_region", "table_1_stove_front_region",
         "basket_1_contain_region", "shelf_1_top_region", "shelf_1_bottom_region",
         "shelf_1_top_side"]
SCENE = SceneTask(
    id="made up kitchen",
    objects=OBJECTS,
    states=[*OBJECTS, "table_1", "cabinet_1", "stove_1", "shelf_1", *PARTS],
    descriptions={"bowl_1": "black bowl", "bowl_2": "black bowl", "bowl_3": "black bowl",
                  "plate_1": "plate", "plate_2": "plate", "red_mug_1": "red mug",
                  "white_mug_1": "white mug", "green_mug_1": "green mug",
                  "cookies_1": "cookie box", "ramekin_1": "ramekin", "butter_1": "butter",
                  "cream_cheese_1": "cream cheese box", "milk_1": "milk", "basket_1": "basket",
                  "table_1": "table", "cabinet_1": "wooden cabinet", "stove_1": "stove",
                  "shelf_1": "wooden shelf"},
    kinds={**{o: "object" for o in OBJECTS}, "table_1": "surface", "cabinet_1": "fixture",
           "stove_1": "device", "shelf_1": "fixture", **{p: "region" for p in PARTS}},
    layout={
        "bowl_1": {"position": [0.10, 0.00], "on": "table_1"},       # front
        "bowl_2": {"position": [-0.02, 0.12], "on": "cookies_1"},    # middle, on the box
        "bowl_3": {"position": [-0.20, 0.20], "on": "table_1"},      # back, by the ramekin
        "cookies_1": {"position": [-0.02, 0.12], "on": "table_1"},
        "ramekin_1": {"position": [-0.22, 0.32], "on": "table_1"},
        "plate_1": {"position": [0.0, -0.30], "on": "table_1"},      # left
        "plate_2": {"position": [0.0, 0.30], "on": "table_1"},       # right
        "cabinet_1": {"position": [0.0, -0.5], "on": "table_1"},
        "stove_1": {"position": [-0.4, 0.2], "on": "table_1"},
    },
)


def goals(text: str) -> list[tuple[str, str, str | None, str | None]]:
    res = ground_instruction(text, SCENE)
    assert not res.problems, res.problems
    return [(g.kind, g.obj, g.relation, g.target) for g in res.goals]


def problems(text: str) -> list[str]:
    res = ground_instruction(text, SCENE)
    assert res.problems
    return res.problems


@pytest.mark.parametrize("text,expect", [
    ("put the butter and the cream cheese box inside the basket",
     [("butter_1", "basket_1_contain_region"), ("cream_cheese_1", "basket_1_contain_region")]),
    ("put the butter, the milk and the cream cheese box in the basket",
     [("butter_1", "basket_1_contain_region"), ("milk_1", "basket_1_contain_region"),
      ("cream_cheese_1", "basket_1_contain_region")]),
])
def test_coordination_and_lists_without_both(text, expect):
    assert [(o, t) for _, o, _, t in goals(text)] == expect


def test_anaphoric_destinations():
    assert goals("open the top drawer of the cabinet and put the butter inside") == [
        ("open", "cabinet_1_top_region", None, None),
        ("pick_place", "butter_1", "in", "cabinet_1_top_region")]
    assert goals("open the middle drawer and put the milk there")[1] == (
        "pick_place", "milk_1", "in", "cabinet_1_middle_region")
    assert goals("put the butter in the basket and put the milk on top")[1] == (
        "pick_place", "milk_1", "on", "butter_1")
    assert goals("put the milk on the stove and turn it on") == [
        ("pick_place", "milk_1", "on", "stove_1_cook_region"),
        ("turn_on", "stove_1", None, None)]
    assert goals("put the butter in the bottom drawer of the cabinet and shut the drawer")[1] \
        == ("close", "cabinet_1_bottom_region", None, None)  # the drawer spoken of


def test_parts_are_named_from_the_id_structure_and_the_owners_kind():
    g = Grounder(SCENE)
    assert g.head_words("cabinet_1_top_region")[0] == "drawer"  # a closable fixture's region
    assert g.is_closable("cabinet_1_middle_region") and g.is_inner("cabinet_1_middle_region")
    assert g.is_inner("shelf_1_top_region")  # a fixture with a top side has layers inside
    assert not g.is_inner("cabinet_1_top_side")
    assert goals("open the middle drawer of the wooden cabinet") == [
        ("open", "cabinet_1_middle_region", None, None)]
    assert goals("put the milk on top of the cabinet")[0][3] == "cabinet_1_top_side"
    assert goals("put the milk on the top of the cabinet drawer")[0][3] == "cabinet_1_top_side"
    assert goals("close the top drawer and put the milk on top of it")[1][3] == \
        "cabinet_1_top_side"
    assert goals("put the milk on the shelf")[0][2:] == ("in", "shelf_1_top_region")
    assert goals("put the milk under the shelf")[0][2:] == ("in", "shelf_1_bottom_region")
    assert goals("put the milk in the cabinet's bottom drawer")[0][3] == \
        "cabinet_1_bottom_region"


def test_quantifiers_and_exceptions():
    assert [o for _, o, _, _ in goals("put all the bowls in the basket")] == [
        "bowl_1", "bowl_2", "bowl_3"]
    assert [o for _, o, _, _ in goals("put every mug except the red one in the basket")] == [
        "white_mug_1", "green_mug_1"]
    assert [o for _, o, _, _ in goals("put all the black bowls except the middle one on "
                                      "the right plate")] == ["bowl_1", "bowl_3"]
    assert [o for _, o, _, _ in goals("put both plates in the basket")] == [
        "plate_1", "plate_2"]


@pytest.mark.parametrize("text,obj,target", [
    ("put the red mug on the left plate", "red_mug_1", "plate_1"),
    ("place the red mug onto the plate on the right", "red_mug_1", "plate_2"),
    ("put the front bowl on the right plate", "bowl_1", "plate_2"),
    ("put the black bowl at the back on the right plate", "bowl_3", "plate_2"),
    ("stack the middle bowl on the front bowl", "bowl_2", "bowl_1"),
    ("put the second bowl from the front on the left plate", "bowl_2", "plate_1"),
    ("pick up the bowl next to the ramekin and put it on the left plate", "bowl_3", "plate_1"),
    ("put the bowl that is between the cookie box and the ramekin on the left plate",
     "bowl_3", "plate_1"),
    ("pick the bowl on the cookie box and put it on the left plate", "bowl_2", "plate_1"),
    ("put the bowl closest to the left plate in the basket", "bowl_1",
     "basket_1_contain_region"),
    ("take the black bowl from the cookie box and set it on the right plate", "bowl_2",
     "plate_2"),
    ("take the bowl off the cookie box and put it in the basket", "bowl_2",
     "basket_1_contain_region"),
])
def test_spatial_ordinal_and_source_references_from_the_layout(text, obj, target):
    ((_, o, _, t),) = goals(text)
    assert (o, t) == (obj, target)


def test_push_to_a_spot_is_a_push_checked_by_the_placing_oracle(tmp_path):
    assert goals("push the plate on the left to the front of the stove") == [
        ("push", "plate_1", "on", "table_1_stove_front_region")]
    library, catalog = load_function_library(None)
    pipe = make_pipeline(OfflinePlanner(), catalog, library=library)
    lib = pipe.generate_library(load_tasks(ROOT / "config" / "tasks" / "libero10.json"))
    run = pipe.module3("push the left plate to the front of the stove", SCENE,
                       lib.atomic_library, lib.oracle_library)
    assert run.approved, run.module3.reason
    ids = [a.action_id for _, a in run.oracle.actions()]
    assert ids == ["approach", "place_on"]  # no pick-up: it is pushed, not carried
    oracle = run.oracle.to_json_dict()
    assert ExecutionReliabilityAssessor(SCENE).check(oracle).ok
    assert goal_order_problems(oracle, ["on(plate_1, table_1_stove_front_region)"]) == []


def test_open_then_put_inside_is_generated_in_a_valid_order():
    library, catalog = load_function_library(None)
    pipe = make_pipeline(OfflinePlanner(), catalog, library=library)
    lib = pipe.generate_library(load_tasks(ROOT / "config" / "tasks" / "libero10.json"))
    ins = "open the top drawer of the cabinet and put the butter inside, then close it"
    run = pipe.module3(ins, SCENE, lib.atomic_library, lib.oracle_library)
    assert run.approved, run.module3.reason
    oracle = run.oracle.to_json_dict()
    assert goal_order_problems(oracle, ["open(cabinet_1_top_region)",
                                        "in(butter_1, cabinet_1_top_region)",
                                        "close(cabinet_1_top_region)"]) == []


@pytest.mark.parametrize("text,named", [
    ("put the mug in the basket", "'the mug' is ambiguous"),
    ("put the bowl in the basket", "'the bowl' is ambiguous"),
    ("wipe the plate", "'wipe'"),
    ("put the pineapple in the basket", "'the pineapple'"),
    ("put the butter", "says where to put nothing"),
    ("put the milk on top", "on top of what"),
    ("put every mug except the blue one in the basket", "'the blue one' tells none"),
    ("put the red mug on the plate and turn it on", "cannot resolve 'it'"),
])
def test_what_it_cannot_read_is_named(text, named):
    assert any(named in p for p in problems(text)), problems(text)
    with pytest.raises(Refusal, match="cannot read"):
        module3.generate({"instruction": text, "scene": SCENE.model_dump()})


def test_a_library_that_closes_also_opens():
    assert "open" in required_skills(["put the bowl in the drawer and close it"])
    assert "turn_off" in required_skills(["turn on the stove"])
    assert required_skills(["put the bowl on the plate"]) == [
        "approach", "pick_up", "place_on"]


def test_the_scene_json_layout_is_read():
    entry = json.loads((ROOT / "test/data/generation/heldout/scenes/kitchen_three_bowls.json")
                       .read_text())["task_objects"][0]
    scene = SceneTask.model_validate(entry)
    assert scene.layout["akita_black_bowl_1"].position == (0.1, 0.15)
    assert scene.layout["akita_black_bowl_1"].on == \
        "kitchen_table_akita_black_bowl_front_init_region"


class _Capturing(OfflinePlanner):
    """The offline planner, noting the schema each module III call is asked with."""

    def __init__(self) -> None:
        super().__init__()
        self.schemas: list[dict] = []

    def complete(self, call, schema):
        if call.task == "module3.generate":
            self.schemas.append(schema.model_json_schema())
        return super().complete(call, schema)


def test_module3_asks_with_a_schema_whose_enums_are_the_scene_ids_and_the_library():
    library, catalog = load_function_library(None)
    backend = _Capturing()
    pipe = make_pipeline(backend, catalog, library=library)
    lib = pipe.generate_library(load_tasks(ROOT / "config" / "tasks" / "libero10.json"))
    run = pipe.module3("put the butter in the basket", SCENE, lib.atomic_library,
                       lib.oracle_library)
    assert run.approved
    (schema,) = backend.schemas
    variants = schema["$defs"]["ActionNode"]["anyOf"]
    # the library's tasks with their parameters, but those that place other than "in"
    unasked = {"place_on", "place_right_of"}
    tasks = {t.id: t.parameters for t in lib.atomic_library.atomic_library}
    assert unasked < set(tasks)
    assert {v["properties"]["action_id"]["const"]: v["properties"]["parameters"]["required"]
            for v in variants} == {t: p for t, p in tasks.items() if t not in unasked}
    every = set(schema["$defs"]["SceneId"]["enum"])
    assert every >= set(SCENE.entities())
    for v in variants:  # each parameter takes scene ids (those its predicates take)
        for name in v["properties"]["parameters"]["required"]:
            ref = v["properties"]["parameters"]["properties"][name]["$ref"]
            assert ref.startswith("#/$defs/SceneId")
            assert set(schema["$defs"][ref.rsplit("/", 1)[1]]["enum"]) <= every
    assert schema["$defs"]["Monitor"]["properties"]["oracle_id"]["enum"] == sorted(
        o.id for o in lib.oracle_library.atomic_oracle_library if o.id not in unasked)
