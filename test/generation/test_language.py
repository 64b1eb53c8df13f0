"""The offline planner's instruction parser and grounding beyond the LIBERO-10 examples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mango.generation.engine import load_function_library
from mango.generation.models import SceneTask
from mango.generation.offline import module3
from mango.generation.offline.grounding import ground_instruction
from mango.generation.offline.parsing import parse_instruction_clauses
from mango.generation.offline.planner import OfflinePlanner
from mango.generation.pipeline import make_pipeline
from mango.generation.reliability import ExecutionReliabilityAssessor
from mango.llm.backend import Refusal

KITCHEN = SceneTask(
    id="kitchen",
    objects=["apple_1", "banana_1", "cup_1", "bowl_1", "cutting_board_1", "plate_1",
             "basket_1", "red_mug_1", "blue_mug_1"],
    states=["microwave_1", "microwave_1_heating_region", "basket_1_contain_region",
            "bowl_1_contain_region", "counter_1", "cabinet_1", "cabinet_1_top_region",
            "drawer_1", "drawer_1_contain_region", "stove_1", "stove_1_burner_region"],
    kinds={"microwave_1": "fixture", "microwave_1_heating_region": "region",
           "basket_1_contain_region": "region", "bowl_1_contain_region": "region",
           "counter_1": "surface", "cabinet_1": "fixture", "cabinet_1_top_region": "region",
           "drawer_1": "fixture", "drawer_1_contain_region": "region", "stove_1": "device",
           "stove_1_burner_region": "region"},
    descriptions={"red_mug_1": "red coffee mug", "blue_mug_1": "blue mug",
                  "cabinet_1_top_region": "top shelf of the cabinet"},
)


def goals(instruction: str, scene: SceneTask = KITCHEN):
    res = ground_instruction(instruction, scene)
    assert not res.problems, res.problems
    return [(g.kind, g.obj, g.relation, g.target) for g in res.goals]


@pytest.mark.parametrize("instruction", [
    "pick the apple from the cutting board and place it in the bowl",
    "Pick up the apple from the cutting board, then place it into the bowl.",
    "grab the apple and drop it in the bowl",
    "take the apple off the cutting board and put it inside the bowl",
    "move the apple from the cutting board to the bowl",
    "transfer the apple to the bowl",
])
def test_robocasa_pick_place_paraphrases(instruction):
    assert goals(instruction) == [("pick_place", "apple_1", "in", "bowl_1_contain_region")]


def test_pick_place_and_close_it():
    assert goals("pick the cup, place it in the microwave and close it") == [
        ("pick_place", "cup_1", "in", "microwave_1_heating_region"),
        ("close", "microwave_1", None, None),
    ]


def test_source_is_kept_and_pronoun_means_the_object():
    res = ground_instruction("pick the apple from the cutting board and place it in the bowl",
                             KITCHEN)
    assert res.goals[0].source == "cutting_board_1"


def test_conjunction_of_objects_and_plural():
    assert goals("put the apple and the banana in the basket") == [
        ("pick_place", "apple_1", "in", "basket_1_contain_region"),
        ("pick_place", "banana_1", "in", "basket_1_contain_region"),
    ]
    assert [g[1] for g in goals("put both mugs on the plate")] == ["red_mug_1", "blue_mug_1"]


def test_descriptions_and_regions():
    assert goals("put the red mug on the top shelf of the cabinet") == [
        ("pick_place", "red_mug_1", "on", "cabinet_1_top_region")]
    assert goals("switch on the stove and set the cup on it") == [
        ("turn_on", "stove_1", None, None),
        ("pick_place", "cup_1", "on", "stove_1_burner_region")]
    assert goals("open the drawer and put the banana in it") == [
        ("open", "drawer_1", None, None),
        ("pick_place", "banana_1", "in", "drawer_1_contain_region")]


def test_spatial_relations_without_a_region_use_predicates():
    assert goals("put the banana to the right of the plate") == [
        ("pick_place", "banana_1", "right_of", "plate_1")]
    assert goals("place the apple next to the cup") == [
        ("pick_place", "apple_1", "near", "cup_1")]


def test_typos_and_unseen_words_ground_fuzzily():
    assert goals("put the bananna in the baskett") == [
        ("pick_place", "banana_1", "in", "basket_1_contain_region")]


def test_unknown_object_is_reported_not_guessed():
    res = ground_instruction("put the pineapple in the basket", KITCHEN)
    assert any("pineapple" in p for p in res.problems)
    assert not res.goals


def test_a_thing_put_on_itself_is_refused_not_planned():
    # one banana in the scene: "on the banana" can only be the banana being placed
    res = ground_instruction("put the banana on the banana", KITCHEN)
    assert res.problems == ["'put the banana on the banana' puts banana_1 on or in itself"]
    assert not res.goals


def test_clause_splitting_keeps_adjective_conjunctions():
    clauses = parse_instruction_clauses(
        "put the yellow and white mug in the microwave and close it")
    assert [c.verb for c in clauses] == ["place", "close"]
    assert clauses[0].obj is not None and clauses[0].obj.text == "the yellow and white mug"


def test_then_orders_goals_sequentially():
    library, catalog = load_function_library(None)
    pipe = make_pipeline(OfflinePlanner(), catalog, library=library)
    ins = "place the cup on the plate, then put the banana in the bowl"
    lib = pipe.generate_library([ins])
    run = pipe.module3(ins, KITCHEN, lib.atomic_library, lib.oracle_library)
    assert run.approved, run.module3.reason
    oracle = run.oracle.to_json_dict()
    assert oracle["execution_mode"] == "sequential" and len(oracle["plan"]) == 2
    assert ExecutionReliabilityAssessor(KITCHEN, library).check(oracle).ok


@pytest.mark.parametrize("instruction,expect", [
    ("pick the apple from the cutting board and place it in the bowl",
     ["near(robot_hand, apple_1)", "grasped(apple_1) and up(apple_1)",
      "in(apple_1, bowl_1_contain_region) and not grasped(apple_1)"]),
    ("pick the cup, place it in the microwave and close it",
     ["near(robot_hand, cup_1)", "grasped(cup_1) and up(cup_1)",
      "in(cup_1, microwave_1_heating_region) and not grasped(cup_1)", "close(microwave_1)"]),
])
def test_robocasa_oracles_end_to_end(instruction, expect):
    library, catalog = load_function_library(None)
    pipe = make_pipeline(OfflinePlanner(), catalog, library=library)
    lib = pipe.generate_library([instruction])
    assert lib.approved
    run = pipe.module3(instruction, KITCHEN, lib.atomic_library, lib.oracle_library)
    assert run.approved, run.module3.history[-1].reports
    handles = [m.handle_as for _, a in run.oracle.actions() for m in a.monitoring]
    assert handles == expect


def test_gapped_coordination_repeats_the_verb():
    assert goals("put the apple in the basket, the banana in the bowl and the cup on the plate") \
        == [("pick_place", "apple_1", "in", "basket_1_contain_region"),
            ("pick_place", "banana_1", "in", "bowl_1_contain_region"),
            ("pick_place", "cup_1", "on", "plate_1")]
    assert [g[1] for g in goals("put the apple, the banana and the cup in the basket")] == [
        "apple_1", "banana_1", "cup_1"]


def test_unlisted_part_means_the_fixture_just_used():
    assert goals("put the cup in the microwave and shut the door") == [
        ("pick_place", "cup_1", "in", "microwave_1_heating_region"),
        ("close", "microwave_1", None, None)]


_WORDS = ["put", "pick", "up", "the", "apple", "and", "it", "in", "on", "close", "open", "to",
          "right", "of", "both", ",", "then", "bowl", "basket", "from", "microwave", "turn",
          "xyzzy", "plate", "cup", "!", "the the", ""]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=14) | st.text(max_size=60))
def test_any_text_is_parsed_without_crashing(words):
    text = " ".join(words) if isinstance(words, list) else words
    res = ground_instruction(text, KITCHEN)
    known = set(KITCHEN.entities())
    for g in res.goals:
        assert g.obj in known and (g.target is None or g.target in known)
    if not res.goals:
        assert res.problems
    try:
        cand = module3.generate({"instruction": text or "x", "scene": KITCHEN.model_dump()})
    except Refusal as exc:  # what it cannot read it says, never an empty plan
        assert res.problems or not res.goals or not text
        assert str(exc).startswith("cannot read")
        return
    assert cand.instruction == text and cand.plan and not res.problems


SPOTS = SceneTask(
    id="spots", objects=["plate_1", "chocolate_pudding_1"],
    states=["flat_stove_1", "kitchen_table_stove_front_region", "main_table",
            "table_plate_right_region"],
    kinds={"flat_stove_1": "device", "kitchen_table_stove_front_region": "region",
           "main_table": "surface", "table_plate_right_region": "region"},
    descriptions={"kitchen_table_stove_front_region": "area in front of the stove",
                  "table_plate_right_region": "area right of the plate"})


@pytest.mark.parametrize("instruction,expect", [
    # LIBERO-goal style: pushed, not carried, onto the region the scene names
    ("push the plate to the front of the stove",
     ["near(robot_hand, plate_1)",
      "on(plate_1, kitchen_table_stove_front_region) and not grasped(plate_1)"]),
    ("put the chocolate pudding to the right of the plate",
     ["near(robot_hand, chocolate_pudding_1)",
      "grasped(chocolate_pudding_1) and up(chocolate_pudding_1)",
      "on(chocolate_pudding_1, table_plate_right_region) and not grasped(chocolate_pudding_1)"]),
    # no region for "left of the plate": the relation predicate is used
    ("place the pudding to the left of the plate",
     ["near(robot_hand, chocolate_pudding_1)",
      "grasped(chocolate_pudding_1) and up(chocolate_pudding_1)",
      "left_of(chocolate_pudding_1, plate_1) and not grasped(chocolate_pudding_1)"]),
])
def test_spatial_goals_from_a_single_instruction(instruction, expect):
    library, catalog = load_function_library(None)
    pipe = make_pipeline(OfflinePlanner(), catalog, library=library)
    lib = pipe.generate_library([instruction])
    assert lib.approved
    run = pipe.module3(instruction, SPOTS, lib.atomic_library, lib.oracle_library)
    assert run.approved, run.module3.history[-1].reports
    assert [m.handle_as for _, a in run.oracle.actions() for m in a.monitoring] == expect
