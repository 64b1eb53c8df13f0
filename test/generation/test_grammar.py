"""The clause grammar (mango.generation.offline.grammar) and the benchmark's relation for a
target's kind, through the reader's public `ground_instruction`: one test per construction,
on scenes imported from LIBERO's bddl_files (test/data/generation/heldout/scenes), in
wordings of their own (neither the dev set's nor the held-out set's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mango.bddl.convert import scene_json
from mango.bddl.parser import read_bddl
from mango.generation.models import SceneTask, parse_scene_file
from mango.generation.offline.grounding import InstructionGrounder, ground_instruction

DATA = Path(__file__).resolve().parents[1] / "data"
SCENES = DATA / "generation" / "heldout" / "scenes"


def _scene(name: str) -> SceneTask:
    from mango.cli.scenes import scene_file

    (task,) = scene_file(SCENES / f"{name}.json").task_objects
    return task


def _goals(instruction: str, scene: str) -> list[tuple[str, str, str | None, str | None]]:
    res = ground_instruction(instruction, _scene(scene))
    assert res.read_in_full, res.problems
    return [(g.kind, g.obj, g.relation, g.target) for g in res.goals]


@pytest.mark.parametrize(("instruction", "goal"), [
    # caused motion: a verb the lexicon does not list, an object and a goal phrase
    ("fling the milk into the basket", ("pick_place", "milk_1", "in", "basket_1_contain_region")),
    ("hurl the butter onto the basket", ("pick_place", "butter_1", "in",
                                         "basket_1_contain_region")),
    # particles of phrasal verbs
    ("set the ketchup back down in the basket",
     ("pick_place", "ketchup_1", "in", "basket_1_contain_region")),
    ("bring the orange juice over to the basket",
     ("pick_place", "orange_juice_1", "in", "basket_1_contain_region")),
    # request frames, sentence adverbs, subject-first motion
    ("we need the cream cheese box in the basket",
     ("pick_place", "cream_cheese_1", "in", "basket_1_contain_region")),
    ("would you quickly put the milk in the basket",
     ("pick_place", "milk_1", "in", "basket_1_contain_region")),
    ("the tomato sauce should go into the basket",
     ("pick_place", "tomato_sauce_1", "in", "basket_1_contain_region")),
    # purpose clauses carry no goal
    ("put the butter in the basket so nothing falls off",
     ("pick_place", "butter_1", "in", "basket_1_contain_region")),
    ("put the alphabet soup in the basket for later",
     ("pick_place", "alphabet_soup_1", "in", "basket_1_contain_region")),
])
def test_constructions_read_as_one_place_goal(instruction: str, goal: tuple[str, ...]) -> None:
    assert _goals(instruction, "living_room_basket") == [goal]


@pytest.mark.parametrize(("instruction", "goal"), [
    ("kick the bottom drawer shut", ("close", "wooden_cabinet_1_bottom_region")),
    ("tug the top drawer of the cabinet open", ("open", "wooden_cabinet_1_top_region")),
])
def test_resultatives_name_the_state(instruction: str, goal: tuple[str, str]) -> None:
    assert [g[:2] for g in _goals(instruction, "kitchen_drawer_butter")] == [goal]


def test_a_split_switching_particle_and_an_unlisted_verb_after_a_comma() -> None:
    assert [g[:2] for g in _goals("flip the stove on", "kitchen_stove_frypan")] == [
        ("turn_on", "flat_stove_1")]
    assert [g[:2] for g in _goals("power the stove off", "kitchen_stove_frypan")] == [
        ("turn_off", "flat_stove_1")]
    got = _goals("grab the white mug, stuff it into the microwave and swing the door closed",
                 "kitchen_microwave_mugs")
    assert got == [("pick_place", "porcelain_mug_1", "in", "microwave_1_heating_region"),
                   ("close", "microwave_1", None, None)]


def test_an_unreadable_verb_is_named() -> None:
    res = ground_instruction("juggle the milk", _scene("living_room_basket"))
    assert not res.goals and any("'juggle'" in p for p in res.problems)


def test_everything_except_and_a_missing_exception_named() -> None:
    got = _goals("put everything but the butter and the milk into the basket",
                 "living_room_basket")
    moved = {g[1] for g in got}
    assert moved == {"alphabet_soup_1", "cream_cheese_1", "tomato_sauce_1", "ketchup_1",
                     "orange_juice_1"}
    res = ground_instruction("put every item except the green block in the basket",
                             _scene("living_room_basket"))
    assert not res.read_in_full and any("green block" in p for p in res.problems)


def test_a_relation_breaks_a_tie_between_a_fixtures_parts() -> None:
    got = _goals("put the black book in the top layer of the shelf", "study_shelf_books")
    assert got == [("pick_place", "black_book_1", "in", "wooden_two_layer_shelf_1_top_region")]


def test_the_relation_follows_the_target_kind_not_the_preposition() -> None:
    # libero_goal/put_the_cream_cheese_in_the_bowl.bddl: (On cream_cheese_1 akita_black_bowl_1)
    assert _goals("put the cream cheese box into the bowl", "kitchen_goal") == [
        ("pick_place", "cream_cheese_1", "on", "akita_black_bowl_1")]
    assert _goals("put the bottle in the wine rack", "kitchen_goal") == [
        ("pick_place", "wine_bottle_1", "on", "wine_rack_1_top_region")]


@pytest.mark.parametrize("bddl", sorted((DATA / "bddl").glob("*.bddl")), ids=lambda p: p.stem)
def test_the_convention_agrees_with_libero_goal_atoms(bddl: Path) -> None:
    """Every In/On goal atom of the LIBERO task files kept in test/data/bddl: whichever
    preposition is said, the reader gives the BDDL's predicate for that target."""
    problem = read_bddl(bddl)
    (scene,) = parse_scene_file(scene_json(problem), bddl.name).task_objects
    grounder = InstructionGrounder(scene)
    atoms = [a for a in problem.goal_atoms() if a.predicate.lower() in {"in", "on"}]
    for atom in atoms:
        target = atom.args[-1]
        for said in ("in", "on"):
            assert grounder.resolve_target(said, target) == (atom.predicate.lower(), target)

