"""Alike things told apart by where they stand, as module III's prompt shows them.

Checked against LIBERO's own words, not ours: its task files name the region each object
starts in after the side it is on (Lifelong-Robot-Learning/LIBERO,
libero/libero/bddl_files/libero_90/KITCHEN_SCENE2_put_the_black_bowl_at_the_front_on_the_plate.bddl:
`akita_black_bowl_1` starts in `akita_black_bowl_front_init_region`, and the goal of "the
black bowl at the front" is that bowl). The scenes are the 130 LIBERO tasks as `mango bddl
import` wrote them for the recorded local-model run.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from mango.generation.models import SceneTask
from mango.generation.offline.matching import Grounder
from mango.generation.offline.references import layout_words

SIDES = ("front", "back", "middle", "left", "right")


def test_the_words_agree_with_the_side_libero_starts_each_alike_object_on(
        imported_libero) -> None:
    checked = 0
    for scene in (t.scene for t in imported_libero.values()):
        words = layout_words(Grounder(scene), scene.descriptions)
        for ent, phrase in words.items():
            entry = scene.layout.get(ent)
            start = entry.on or "" if entry else ""
            named = [s for s in SIDES if f"_{s}_" in f"_{start}_"]
            if named:
                assert phrase.split()[1] in named, (scene.id, ent, phrase, start)
                checked += 1
    assert checked >= 20


def test_a_description_held_by_one_thing_gets_no_word_and_a_coincident_pair_none() -> None:
    scene = SceneTask.model_validate({
        "id": "t", "objects": ["cup_1", "cup_2", "cup_3", "plate_1"],
        "states": ["table", "cup_1", "cup_2", "cup_3", "plate_1"],
        "descriptions": {"cup_1": "cup", "cup_2": "Cup", "cup_3": "cup", "plate_1": "plate"},
        "kinds": {"table": "surface"},
        "layout": {"cup_1": {"on": "table", "position": [0.0, -0.2]},
                   "cup_2": {"on": "table", "position": [0.05, 0.0]},
                   "cup_3": {"on": "table", "position": [0.0, 0.25]},
                   "plate_1": {"on": "table", "position": [0.3, 0.0]}}})
    assert layout_words(Grounder(scene), scene.descriptions) == {
        "cup_1": "the left cup", "cup_2": "the middle cup", "cup_3": "the right cup"}
    blank = {**scene.descriptions, "plate_1": " ", "cup_2": ""}
    assert layout_words(Grounder(scene), blank) == {"cup_1": "the left cup",
                                                    "cup_3": "the right cup"}
    scene.layout["cup_3"].position = (0.05, 0.0)
    scene.layout["cup_1"].position = (0.05, 0.005)
    assert layout_words(Grounder(scene), scene.descriptions) == {}


def test_a_position_that_is_not_a_number_is_refused_at_the_edge() -> None:
    """A NaN would order alike things arbitrarily (every comparison with it is false)."""
    with pytest.raises(ValidationError, match="finite number"):
        SceneTask.model_validate({"id": "t", "objects": ["cup_1"],
                                  "layout": {"cup_1": {"position": [float("nan"), 0.0]}}})
