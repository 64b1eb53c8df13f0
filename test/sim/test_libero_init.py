"""Each LIBERO-10 scene starts as its LIBERO task does: the BDDL's objects and `:init` facts.

Written from LIBERO's task files, repo Lifelong-Robot-Learning/LIBERO, path
libero/libero/bddl_files/libero_10/<BDDL>.bddl (the file named per scene below): the
`:objects` and `:fixtures` lists, the `:init` predicates (Open, Turnon; a device without
Turnon starts off), and the named init regions' sides. LIBERO names sides as its agentview
camera sees the table (it looks back at the robot from +x): a `..._right_...` region lies
at larger y than a `..._left_...` one (e.g. LIVING_ROOM_SCENE5's plate_left_region at
y = -0.3, plate_right_region at y = +0.3). Our front camera looks the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mango.oracle.symbolic import SymbolicOracle
from mango.sim.env import SimEnv
from mango.sim.scene import load_scene, resolve_scene

GEN = Path(__file__).resolve().parents[1] / "data" / "generation"


@dataclass(frozen=True)
class Bddl:
    file: str
    objects: frozenset[str]
    fixtures: frozenset[str]  # besides the table
    init: tuple[str, ...] = ()  # Open / Turnon facts, as our predicates
    devices_off: tuple[str, ...] = ()
    # (object on the LIBERO "left" init region, object on the "right" one)
    sides: tuple[tuple[str, str], ...] = ()
    # LIBERO fixtures the primitive scene does not model, and why
    not_modelled: dict[str, str] = field(default_factory=dict)


LIBERO_10 = {
    "libero10_soup_sauce_basket": Bddl(
        "LIVING_ROOM_SCENE2_put_both_the_alphabet_soup_and_the_tomato_sauce_in_the_basket",
        frozenset({"alphabet_soup_1", "cream_cheese_1", "tomato_sauce_1", "ketchup_1",
                   "orange_juice_1", "milk_1", "butter_1", "basket_1"}), frozenset()),
    "libero10_cheese_butter_basket": Bddl(
        "LIVING_ROOM_SCENE2_put_both_the_cream_cheese_box_and_the_butter_in_the_basket",
        frozenset({"alphabet_soup_1", "cream_cheese_1", "tomato_sauce_1", "ketchup_1",
                   "orange_juice_1", "milk_1", "butter_1", "basket_1"}), frozenset()),
    "libero10_stove_moka": Bddl(
        "KITCHEN_SCENE3_turn_on_the_stove_and_put_the_moka_pot_on_it",
        frozenset({"chefmate_8_frypan_1", "moka_pot_1"}), frozenset({"flat_stove_1"}),
        devices_off=("flat_stove_1",)),
    "libero10_bowl_drawer": Bddl(
        "KITCHEN_SCENE4_put_the_black_bowl_in_the_bottom_drawer_of_the_cabinet_and_close_it",
        frozenset({"akita_black_bowl_1", "wine_bottle_1"}),
        frozenset({"white_cabinet_1", "wine_rack_1"}),
        init=("open(white_cabinet_1_bottom_region)",),
        not_modelled={"wine_rack_1": "a decoration at the table's edge, not in the task"}),
    "libero10_mugs_plates": Bddl(
        "LIVING_ROOM_SCENE5_put_the_white_mug_on_the_left_plate_and_put_the_yellow_and_white_"
        "mug_on_the_right_plate",
        frozenset({"porcelain_mug_1", "red_coffee_mug_1", "white_yellow_mug_1", "plate_1",
                   "plate_2"}), frozenset(), sides=(("plate_1", "plate_2"),)),
    "libero10_mug_pudding_plate": Bddl(
        "LIVING_ROOM_SCENE6_put_the_white_mug_on_the_plate_and_put_the_chocolate_pudding_to_"
        "the_right_of_the_plate",
        frozenset({"porcelain_mug_1", "red_coffee_mug_1", "plate_1", "chocolate_pudding_1"}),
        frozenset(), sides=(("plate_1", "living_room_table_plate_right_region"),)),
    "libero10_soup_cheese_basket": Bddl(
        "LIVING_ROOM_SCENE1_put_both_the_alphabet_soup_and_the_cream_cheese_box_in_the_basket",
        frozenset({"alphabet_soup_1", "cream_cheese_1", "tomato_sauce_1", "ketchup_1",
                   "basket_1"}), frozenset()),
    "libero10_two_moka_stove": Bddl(
        "KITCHEN_SCENE8_put_both_moka_pots_on_the_stove",
        frozenset({"moka_pot_1", "moka_pot_2"}), frozenset({"flat_stove_1"}),
        init=("turnon(flat_stove_1)",), sides=(("moka_pot_2", "moka_pot_1"),)),
    "libero10_mug_microwave": Bddl(
        "KITCHEN_SCENE6_put_the_yellow_and_white_mug_in_the_microwave_and_close_it",
        frozenset({"porcelain_mug_1", "white_yellow_mug_1"}), frozenset({"microwave_1"}),
        init=("open(microwave_1)",)),
    "libero10_book_caddy": Bddl(
        "STUDY_SCENE1_pick_up_the_book_and_place_it_in_the_back_compartment_of_the_caddy",
        frozenset({"black_book_1", "white_yellow_mug_1"}), frozenset({"desk_caddy_1"})),
}


def test_every_shipped_libero10_scene_is_checked() -> None:
    shipped = {p.stem for p in resolve_scene("book_caddy").parent.glob("libero10_*.yaml")}
    assert shipped == set(LIBERO_10)


# The BDDL file's `(define (problem ...))`: LIBERO-10's KITCHEN_SCENE*, LIVING_ROOM_SCENE* and
# STUDY_SCENE* files each name their arena's problem class.
PROBLEM_CLASS = {"KITCHEN": "LIBERO_Kitchen_Tabletop_Manipulation",
                 "LIVING_ROOM": "LIBERO_Living_Room_Tabletop_Manipulation",
                 "STUDY": "LIBERO_Study_Tabletop_Manipulation"}


@pytest.mark.parametrize("name", sorted(LIBERO_10))
def test_scene_names_its_bddl_problem_class(name: str) -> None:
    arena = LIBERO_10[name].file.split("_SCENE")[0]
    assert load_scene(resolve_scene(name)).libero_problem == PROBLEM_CLASS[arena]


@pytest.mark.parametrize("name", sorted(LIBERO_10))
def test_objects_and_fixtures_are_liberos(name: str) -> None:
    b = LIBERO_10[name]
    scene = load_scene(resolve_scene(name))
    ids = {e.id for e in scene.entities}
    assert ids == (b.objects | b.fixtures) - set(b.not_modelled), b.file


@pytest.mark.parametrize("name", sorted(LIBERO_10))
def test_initial_state_is_the_bddl_init(name: str) -> None:
    b = LIBERO_10[name]
    scene = load_scene(resolve_scene(name))
    for seed in (0, 7):
        with SimEnv(scene, seed=seed, cameras=()) as env:
            state = env.world_state()
        for fact in b.init:
            assert SymbolicOracle(fact).holds(state), f"{b.file}: {fact} at reset, seed {seed}"
        for dev in b.devices_off:
            assert SymbolicOracle(f"turnoff({dev})").holds(state), f"{b.file}: {dev} on"
        for left, right in b.sides:
            yl, yr = state.objects[left].position[1], state.objects[right].position[1]
            assert yl < yr, f"{b.file}: {left} (LIBERO's left) is not left of {right}"
        # the task's goal does not hold before the robot acts, unless LIBERO's init says so
        assert not SymbolicOracle(scene.goal).holds(state)


def test_descriptions_agree_with_the_generation_scenes() -> None:
    # test/data/generation/libero10_scenes.json describes the same tasks for MANGO's modules
    tasks = {t["id"]: t for t in json.loads((GEN / "libero10_scenes.json").read_text())[
        "task_objects"]}
    for name in LIBERO_10:
        scene = load_scene(resolve_scene(name))
        desc = tasks[scene.instruction]["descriptions"]
        for e in scene.entities:
            for side in ("left", "right"):
                if e.id in desc and side in desc[e.id].split():
                    assert e.description is not None and side in e.description.split(), (
                        f"{name}: {e.id} is '{desc[e.id]}' there, '{e.description}' here")
