"""A modifier that contradicts the entity a phrase would match refuses the phrase, by name;
one the scene does not describe grounds as before (issue 35: "the bbq sauce" beside a tomato
sauce and a ketchup must not become either)."""

from __future__ import annotations

import pytest
from support.reading import goals as read_goals
from support.reading import scene_task

from mango.bddl.categories import CATEGORIES, SURFACES
from mango.generation.offline.grounding import ground_instruction
from mango.generation.offline.lexicon import LEXICON, tokens_of


@pytest.mark.parametrize(("instruction", "scene", "phrase", "word"), [
    # a qualified kind the catalogue knows, not the one the scene's sauces are
    ("put the bbq sauce in the basket", "living_room_soup_basket", "bbq sauce", "bbq"),
    ("put the tomato sauce in the basket", "object_basket", "tomato sauce", "tomato"),
    ("put the cream cheese box on the plate", "kitchen_spatial_cookie", "cream cheese box",
     "cream"),
    # a colour where the description gives another
    ("put the blue mug on the left plate", "living_room_mugs_plates", "blue mug", "blue"),
    ("put the white bowl on the plate", "kitchen_three_bowls", "white bowl", "white"),
    ("put the red book on the top shelf", "study_shelf_books", "red book", "red"),
])
def test_a_contradicting_modifier_is_refused_by_name(instruction: str, scene: str,
                                                     phrase: str, word: str) -> None:
    res = ground_instruction(instruction, scene_task(scene))
    assert not res.goals
    problem = next(p for p in res.problems if "no scene entity matches" in p)
    assert f"'the {phrase}'" in problem and f"is not '{word}'" in problem


@pytest.mark.parametrize(("instruction", "scene", "goal"), [
    # modifiers the scene does not describe: size, a colour of an uncoloured plate, a word
    # that is no known kind with this head ("coffee pot", "tomato ketchup", "ceramic mug")
    ("put the small plate on top of the cabinet", "kitchen_goal",
     ("pick_place", "plate_1", "on", "wooden_cabinet_1_top_side")),
    ("put the big black bowl on the white plate", "kitchen_goal",
     ("pick_place", "akita_black_bowl_1", "on", "plate_1")),
    ("put the tomato ketchup in the basket", "living_room_basket",
     ("pick_place", "ketchup_1", "in", "basket_1_contain_region")),
    ("put the coffee pot on the stove", "kitchen_stove_frypan",
     ("pick_place", "moka_pot_1", "on", "flat_stove_1_cook_region")),
    ("put the ceramic white mug on the left plate", "living_room_mugs_plates",
     ("pick_place", "porcelain_mug_1", "on", "plate_1")),
    # a colour the entity has among others; the kind said in full
    ("put the yellow mug in the microwave", "kitchen_microwave_mugs",
     ("pick_place", "white_yellow_mug_1", "in", "microwave_1_heating_region")),
    ("put the bbq sauce in the basket", "object_basket",
     ("pick_place", "bbq_sauce_1", "in", "basket_1_contain_region")),
])
def test_a_modifier_the_scene_does_not_contradict_still_grounds(
        instruction: str, scene: str, goal: tuple[str, ...]) -> None:
    assert read_goals(instruction, scene) == [goal]


def test_the_known_kinds_are_the_catalogues_qualified_names() -> None:
    # the reader may not import mango.bddl (a higher layer); the lexicon keeps LIBERO's
    # qualified category names, and this keeps them equal to mango.bddl.categories
    catalogue = {c.description for name, c in CATEGORIES.items() if name not in SURFACES
                 and len([w for w in tokens_of(c.description) if w not in LEXICON.stop]) > 1}
    assert set(LEXICON.grammar["known_kinds"]) == catalogue
