"""The LIBERO expert's geometric rules without LIBERO: pure functions on the simulation facts
(`LiberoClient.facts()`: world boxes of each body's collision geometry, regions, the robot's
base), built here by hand.

The wine rack's region is LIBERO's own shape: `top_region`, a site of half sizes
0.10087 x 0.022 x 0.00251 on the rack's sloping shelf (LIBERO's assets,
`turbosquid_objects/wine_rack/wine_rack.xml`), seen from the world as an axis-aligned strip.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mango.sim.libero.geometry import (
    FINGER_ROOM,
    PALM_HALF,
    PUSH_BEHIND,
    hand_fits,
    lay_axis,
    push_stand_off,
)

TABLE = 0.90


def _body(lo: list[float], hi: list[float], fixture: bool = False) -> dict[str, Any]:
    lo_, hi_ = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    return {"position": [*((lo_[:2] + hi_[:2]) / 2.0), lo_[2]],
            "orientation": [1.0, 0.0, 0.0, 0.0],
            "half_extent": list((hi_ - lo_) / 2.0), "box": [list(lo_), list(hi_)],
            "fixture": fixture}


def _facts(objects: dict[str, Any], regions: dict[str, Any] | None = None) -> dict[str, Any]:
    table = _body([-1.0, -1.0, TABLE - 0.05], [1.0, 1.0, TABLE], fixture=True)
    return {"objects": {"main_table": table, **objects}, "regions": regions or {},
            "joints": {}, "robot": {"base": [-0.66, 0.0, 0.91]}}


def _box(lo: list[float], hi: list[float]) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def test_the_palm_meets_a_tall_body_the_fingers_pass() -> None:
    cabinet = _box([0.0, 0.10, TABLE], [0.3, 0.4, 1.13])
    x = np.array([1.0, 0.0, 0.0])
    # fingers 5 cm off the cabinet's side, closing along it: the hand stands there
    assert hand_fits(np.array([0.15, 0.05]), x, [cabinet], [cabinet])
    # closing towards it, the palm reaches PALM_HALF into it
    assert not hand_fits(np.array([0.15, 0.05]), np.array([0.0, 1.0, 0.0]), [cabinet],
                         [cabinet])
    # a low bowl under the palm is no obstacle to it, only to the fingers
    bowl = _box([0.10, -0.05, TABLE], [0.20, 0.05, 0.95])
    assert hand_fits(np.array([0.15, -0.05 - FINGER_ROOM - 0.001]), x, [bowl], [])
    assert not hand_fits(np.array([0.15, 0.0]), x, [bowl], [])
    assert PALM_HALF > 0.1  # robosuite's Panda hand is about 0.2 m across its fingers


def test_a_plate_is_pushed_from_outside_unless_a_cabinet_stands_behind_it() -> None:
    plate = _body([-0.07, -0.07, TABLE], [0.07, 0.07, TABLE + 0.02])
    radius = 0.07
    goal = np.array([0.0, 0.25])
    free = _facts({"plate_1": plate})
    assert push_stand_off(free, "plate_1", goal) == pytest.approx(radius + PUSH_BEHIND)
    # LIBERO-goal's 'push the plate to the front of the stove': the cabinet 1 cm behind it
    cabinet = _body([-0.09, -0.35, TABLE], [0.16, -0.08, 1.13], fixture=True)
    wedged = _facts({"plate_1": plate, "wooden_cabinet_1": cabinet})
    inside = push_stand_off(wedged, "plate_1", goal)
    assert 0.0 < inside < radius  # the fingers go down inside its rim
    # pushed the other way, the cabinet is in front of it, not behind: outside again
    assert push_stand_off(wedged, "plate_1", -goal) == pytest.approx(radius + PUSH_BEHIND)


def _rack_facts(bottle: dict[str, Any]) -> dict[str, Any]:
    rack = _body([-0.40, -0.38, TABLE], [-0.13, -0.13, 1.25], fixture=True)
    strip = {"position": [-0.267, -0.171, 1.137], "half_extent": [0.10087, 0.0124, 0.0184],
             "parent": "wine_rack_1", "joints": []}
    cook = {"position": [-0.25, 0.20, 0.905], "half_extent": [0.075, 0.075, 0.0025],
            "parent": "flat_stove_1", "joints": []}
    drawer = {**strip, "parent": "wooden_cabinet_1", "joints": ["wooden_cabinet_1_top_level"]}
    stove = _body([-0.45, 0.1, TABLE], [-0.15, 0.3, 0.955], fixture=True)
    return _facts({"wine_bottle_1": bottle, "wine_rack_1": rack, "flat_stove_1": stove},
                  {"wine_rack_1_top_region": strip, "flat_stove_1_cook_region": cook,
                   "wooden_cabinet_1_top_region": drawer})


def test_a_bottle_is_laid_along_a_strip_narrower_than_it_stands() -> None:
    bottle = _body([-0.216, -0.059, TABLE], [-0.174, -0.015, TABLE + 0.158])
    facts = _rack_facts(bottle)
    axis = lay_axis(facts, "wine_bottle_1", "wine_rack_1_top_region")
    assert axis is not None
    # along the strip's long side (world x here), away from the robot's base at x = -0.66
    assert axis == pytest.approx([1.0, 0.0, 0.0])
    # a wide region (the stove's cook region) and a drawer take it standing
    assert lay_axis(facts, "wine_bottle_1", "flat_stove_1_cook_region") is None
    assert lay_axis(facts, "wine_bottle_1", "wooden_cabinet_1_top_region") is None
    # a squat body (a bowl) is never laid down, even on the strip
    bowl = _body([-0.05, -0.05, TABLE], [0.05, 0.05, TABLE + 0.05])
    assert lay_axis(_rack_facts(bowl), "wine_bottle_1", "wine_rack_1_top_region") is None

