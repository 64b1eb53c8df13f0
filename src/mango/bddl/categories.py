"""LIBERO's object and fixture categories: the entity kind each becomes and how people say it.

The categories are the class names LIBERO registers (libero/libero/envs/objects/*.py, e.g.
`AkitaBlackBowl` -> `akita_black_bowl`) plus the arena fixtures its problem classes build
(`kitchen_table`, `main_table`, `living_room_table`, `study_table`, `table`, `floor`). The
descriptions are the words LIBERO's own instructions use for them ("black bowl", "white
mug", "yellow and white mug"), so the generator can ground an instruction without a scene
description; a category not listed keeps its kind from its section and its name as words.
"""

from __future__ import annotations

from dataclasses import dataclass

from mango.oracle.world_state import EntityKind


@dataclass(frozen=True)
class Category:
    kind: EntityKind
    description: str


# Supports the robot works on: the arena's table or floor (LIBERO places on them by ranges).
SURFACES = frozenset(
    {"kitchen_table", "main_table", "living_room_table", "study_table", "coffee_table", "table",
     "floor"}
)

CATEGORIES: dict[str, Category] = {
    # arenas
    **{c: Category("surface", "floor" if c == "floor" else "table") for c in SURFACES},
    # articulated fixtures (articulated_objects.py)
    "flat_stove": Category("device", "stove"),
    "microwave": Category("fixture", "microwave"),
    "white_cabinet": Category("fixture", "white cabinet"),
    "wooden_cabinet": Category("fixture", "wooden cabinet"),
    "short_cabinet": Category("fixture", "cabinet"),
    "short_fridge": Category("fixture", "fridge"),
    "slide_cabinet": Category("fixture", "cabinet"),
    "window": Category("fixture", "window"),
    "faucet": Category("fixture", "faucet"),
    "basin_faucet": Category("fixture", "faucet"),
    # static fixtures (turbosquid_objects.py)
    "wine_rack": Category("fixture", "wine rack"),
    "rack": Category("fixture", "rack"),
    "wooden_two_layer_shelf": Category("fixture", "wooden shelf"),
    "wooden_shelf": Category("fixture", "wooden shelf"),
    "desk_caddy": Category("object", "desk caddy"),
    "bowl_drainer": Category("fixture", "bowl drainer"),
    "dining_set_group": Category("fixture", "dining set"),
    "white_storage_box": Category("object", "white storage box"),
    # containers and dishes (google_scanned_objects.py, turbosquid_objects.py)
    "basket": Category("object", "basket"),
    "wooden_tray": Category("object", "wooden tray"),
    "plate": Category("object", "plate"),
    "akita_black_bowl": Category("object", "black bowl"),
    "white_bowl": Category("object", "white bowl"),
    "glazed_rim_porcelain_ramekin": Category("object", "ramekin"),
    "chefmate_8_frypan": Category("object", "frying pan"),
    "moka_pot": Category("object", "moka pot"),
    "porcelain_mug": Category("object", "white mug"),
    "red_coffee_mug": Category("object", "red mug"),
    "white_yellow_mug": Category("object", "yellow and white mug"),
    "wine_bottle": Category("object", "wine bottle"),
    "black_book": Category("object", "black book"),
    "yellow_book": Category("object", "yellow book"),
    # groceries (hope_objects.py)
    "alphabet_soup": Category("object", "alphabet soup"),
    "bbq_sauce": Category("object", "bbq sauce"),
    "butter": Category("object", "butter"),
    "cherries": Category("object", "cherries"),
    "chocolate_pudding": Category("object", "chocolate pudding"),
    "cookies": Category("object", "cookie box"),
    "corn": Category("object", "corn"),
    "cream_cheese": Category("object", "cream cheese box"),
    "ketchup": Category("object", "ketchup"),
    "macaroni_and_cheese": Category("object", "macaroni and cheese"),
    "mayo": Category("object", "mayo"),
    "milk": Category("object", "milk"),
    "new_salad_dressing": Category("object", "salad dressing"),
    "orange_juice": Category("object", "orange juice"),
    "popcorn": Category("object", "popcorn"),
    "salad_dressing": Category("object", "salad dressing"),
    "tomato_sauce": Category("object", "tomato sauce"),
}


def category_info(category: str, section: str) -> Category:
    """The kind and words for a category; `section` ("fixture"/"object") decides the kind of
    one this table does not know."""
    known = CATEGORIES.get(category)
    if known is not None:
        if section == "object" and known.kind == "fixture":
            return Category("object", known.description)  # declared movable: it is one
        return known
    kind: EntityKind = "surface" if category in SURFACES else (
        "fixture" if section == "fixture" else "object"
    )
    return Category(kind, category.replace("_", " "))
