"""The optional `libero` function library: LIBERO's predicate semantics and thresholds.

Each threshold is LIBERO's (Lifelong-Robot-Learning/LIBERO), from the file named beside it:
- libero/libero/envs/objects/articulated_objects.py: Microwave open q < -1.3 (open range
  [-2.094, -1.3]), closed q > -0.005; WhiteCabinet/WoodenCabinet open q < -0.14 (range
  [-0.16, -0.14]), closed q > 0.0 (range [0.0, 0.005]); FlatStove on q >= 0.5 (range
  [0.5, 2.1]), off q < 0.0 (range [-0.005, 0.0]).
- libero/libero/envs/object_states/base_object_states.py: open = any joint open, close =
  every joint closed; ObjectState.check_ontop: xy distance < 0.03, support centre not above.
- libero/libero/envs/objects/site_object.py: SiteObject.under (0.005 below the top, 0.10
  above), in_box (strict, lower z bound - 0.01).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mango.oracle.expr import parse_expression
from mango.oracle.libero_predicates import FULL_OPEN, category_of
from mango.oracle.library import FunctionLibrary
from mango.oracle.symbolic import SymbolicOracle
from mango.oracle.world_state import parse_world_state

ROOT = Path(__file__).resolve().parents[2]
LIBERO = FunctionLibrary.load(ROOT / "config" / "functions" / "libero.json")
DEFAULT = FunctionLibrary.default()


def holds(expr: str, state: dict[str, Any], library: FunctionLibrary = LIBERO) -> bool:
    return SymbolicOracle(parse_expression(expr), library).holds(parse_world_state(state))


def joint_state(name: str, u: float, q_open: float = 1.0) -> dict[str, Any]:
    # the sim's own convention (q_closed 0, q_open 1): only the openness u carries over
    return {"t": 0.0, "objects": {}, "joints": {name: {"q": u * q_open, "q_open": q_open,
                                                       "q_closed": 0.0}}}


def test_the_library_file_carries_every_libero_predicate_with_an_implementation() -> None:
    names = {n for n in LIBERO.predicates if n.startswith("libero_")}
    assert names == {"libero_in", "libero_on", "libero_up", "libero_open", "libero_close",
                     "libero_turnon", "libero_turnoff"}
    assert all(LIBERO.get(n).implementation is not None for n in names)
    assert not any(n.startswith("libero_") for n in DEFAULT.predicates)  # optional only
    assert FULL_OPEN["microwave"] == -2.094 and FULL_OPEN["flat_stove"] == 2.1


def test_categories_from_ids() -> None:
    assert category_of("white_cabinet_1_top_region") == "white_cabinet"
    assert category_of("microwave_1") == "microwave"
    assert category_of("flat_stove_1_knob") == "flat_stove"
    assert category_of("chefmate_8_frypan_1") == "chefmate_8_frypan"
    assert category_of("table") is None


@pytest.mark.parametrize(
    ("u", "is_open", "is_closed"),
    [
        (0.63, True, False),  # q = -1.319 < -1.3
        (0.62, False, False),  # q = -1.298
        (0.002, False, True),  # q = -0.0042 > -0.005
        (0.003, False, False),  # q = -0.0063
    ],
)
def test_microwave_thresholds(u: float, is_open: bool, is_closed: bool) -> None:
    s = joint_state("microwave_1", u)
    assert holds("libero_open(microwave_1)", s) is is_open
    assert holds("libero_close(microwave_1)", s) is is_closed


def test_microwave_differs_from_the_default_library() -> None:
    s = joint_state("microwave_1", 0.7)
    assert holds("libero_open(microwave_1)", s) and not holds("open(microwave_1)", s, DEFAULT)
    s = joint_state("microwave_1", 0.03)  # the default's closed_frac is 0.05
    assert holds("close(microwave_1)", s, DEFAULT) and not holds("libero_close(microwave_1)", s)


@pytest.mark.parametrize(
    ("u", "is_open", "is_closed"),
    [(0.9, True, False), (0.87, False, False), (0.0, False, False), (-0.01, False, True)],
)
def test_drawer_thresholds(u: float, is_open: bool, is_closed: bool) -> None:
    # q = u * -0.16: open below -0.14; closed only past 0 (LIBERO samples closed in [0, 0.005])
    s = joint_state("white_cabinet_1_top_region", u)
    assert holds("libero_open(white_cabinet_1_top_region)", s) is is_open
    assert holds("libero_close(white_cabinet_1_top_region)", s) is is_closed


def test_fixture_open_is_any_joint_close_is_every_joint() -> None:
    s = {"t": 0.0, "objects": {}, "joints": {
        "wooden_cabinet_1_top_region": {"q": 0.95, "q_open": 1.0, "q_closed": 0.0},
        "wooden_cabinet_1_bottom_region": {"q": -0.01, "q_open": 1.0, "q_closed": 0.0}}}
    assert holds("libero_open(wooden_cabinet_1)", s)
    assert not holds("libero_close(wooden_cabinet_1)", s)


@pytest.mark.parametrize(
    ("u", "on", "off"),
    [(0.24, True, False), (0.23, False, False), (0.0, False, False), (-0.01, False, True)],
)
def test_stove_knob_thresholds(u: float, on: bool, off: bool) -> None:
    # q = u * 2.1: on at q >= 0.5 (u >= 0.238), off only below 0
    s = joint_state("flat_stove_1_knob", u)
    s["devices"] = {"flat_stove_1": {"on": not on}}  # the knob wins over the flag
    assert holds("libero_turnon(flat_stove_1)", s) is on
    assert holds("libero_turnoff(flat_stove_1)", s) is off


def test_stove_without_a_knob_reads_the_device() -> None:
    s = {"t": 0.0, "objects": {}, "devices": {"flat_stove_1": {"on": True}}}
    assert holds("libero_turnon(flat_stove_1)", s) and not holds("libero_turnoff(flat_stove_1)", s)


def _objects(**extra: dict[str, Any]) -> dict[str, Any]:
    objs = {
        "plate_1": {"position": [0.0, 0.0, 0.905], "size": [0.2, 0.2, 0.01], "kind": "object"},
        "bowl_1": {"position": [0.02, 0.0, 0.94], "size": [0.1, 0.1, 0.06], "kind": "object"},
    }
    objs.update(extra)
    return objs


def test_on_an_object_needs_centres_within_3_cm_and_contact() -> None:
    s = {"t": 0.0, "objects": _objects(), "contacts": [["bowl_1", "plate_1"]]}
    assert holds("libero_on(bowl_1, plate_1)", s)
    s["objects"]["bowl_1"]["position"] = [0.04, 0.0, 0.94]
    assert not holds("libero_on(bowl_1, plate_1)", s)
    assert holds("on(bowl_1, plate_1)", s, DEFAULT)  # ours: the centre over the plate suffices
    s = {"t": 0.0, "objects": _objects(), "contacts": []}
    assert not holds("libero_on(bowl_1, plate_1)", s)


def test_on_and_in_a_site() -> None:
    region = {"position": [0.5, 0.0, 0.95], "size": [0.2, 0.2, 0.02], "kind": "region",
              "parent": "flat_stove_1"}
    stove = {"position": [0.5, 0.0, 0.92], "size": [0.3, 0.3, 0.04], "kind": "device"}
    pot = {"position": [0.55, 0.02, 1.0], "size": [0.1, 0.1, 0.1], "kind": "object"}
    s = {"t": 0.0, "objects": {"flat_stove_1_cook_region": region, "flat_stove_1": stove,
                               "moka_pot_1": pot},
         "contacts": [["moka_pot_1", "flat_stove_1"]]}
    assert holds("libero_on(moka_pot_1, flat_stove_1_cook_region)", s)  # dz 0.05 in (0.005, 0.11)
    s["contacts"] = []
    assert not holds("libero_on(moka_pot_1, flat_stove_1_cook_region)", s)  # parent must touch
    s["contacts"] = [["moka_pot_1", "flat_stove_1"]]
    pot["position"] = [0.55, 0.02, 1.07]
    assert not holds("libero_on(moka_pot_1, flat_stove_1_cook_region)", s)  # dz 0.12
    pot["position"] = [0.55, 0.02, 0.945]  # centre 0.005 below the region's centre
    assert holds("libero_in(moka_pot_1, flat_stove_1_cook_region)", s)
    pot["position"] = [0.55, 0.02, 0.925]  # below lb - 0.01 (0.93)
    assert not holds("libero_in(moka_pot_1, flat_stove_1_cook_region)", s)


def test_a_non_articulated_category_is_an_evaluation_error() -> None:
    from mango.oracle.predicates import EvaluationError

    with pytest.raises(EvaluationError, match="LIBERO articulated category"):
        holds("libero_open(basket_1)", joint_state("basket_1_lid", 1.0))


def test_up_is_the_origin_at_1_m() -> None:
    """base_predicates.Up: `get_geom_state()["pos"][2] >= 1.0` (LIBERO's body origin, world z)."""
    for z, up in ((0.999, False), (1.0, True), (1.2, True)):
        state = {"t": 0.0, "objects": {"bowl_1": {"position": [0.0, 0.0, z],
                                                  "size": [0.1, 0.1, 0.05]}}}
        assert holds("libero_up(bowl_1)", state) is up
