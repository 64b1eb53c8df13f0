"""Grasp and place planning from detections (no simulator): the destination phrasing, the
footprint's narrow side, the opening, the occupancy grid's free cells, and when (and how) a
grasp comes from the side and a place goes in horizontally."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from support.depth_scenes import down_frame

from mango.errors import InputError
from mango.perception.base import Detection, RGBDFrame
from mango.primitives.grasps import (
    PRE_GRASP,
    PRE_SIDE,
    GraspScene,
    choose_grasp,
    grasp_options,
    overhead_blockers,
    plan_grasp,
)
from mango.primitives.planning import (
    GRIPPER_OPEN,
    HAND_HALF_SPAN,
    RELEASE_CLEARANCE,
    KnownFixture,
    TableArea,
    container_target,
    drawer_q_from_box,
    empty_space_target,
    fixture_release,
    footprint_extents,
    parse_destination,
    standing_on,
    surface_target,
)


def _det(centroid, size, yaw=0.0, phrase="thing", eid="thing_1") -> Detection:
    return Detection(phrase=phrase, entity_id=eid, label=phrase, score=1.0, box_2d=(0, 0, 1, 1),
                     mask=None, centroid=tuple(centroid), size=tuple(size), yaw=yaw,
                     camera="front", stamp=0.0)


def _aabb(length: float, width: float, yaw: float) -> tuple[float, float]:
    c, s = abs(math.cos(yaw)), abs(math.sin(yaw))
    return length * c + width * s, length * s + width * c


@pytest.mark.parametrize(("text", "kind", "anchor", "side"), [
    ("in the basket", "in", "the basket", "any"),
    ("into the top drawer", "in", "the top drawer", "any"),
    ("on the plate", "on", "the plate", "any"),
    ("on top of the stove", "on", "the stove", "any"),
    ("empty space next to the bowl", "next_to", "the bowl", "any"),
    ("Empty space to the left of the white mug", "next_to", "the white mug", "left"),
    ("empty space behind the caddy", "next_to", "the caddy", "behind"),
    ("empty space on the table", "table", None, "any"),
])
def test_destination_phrasing(text: str, kind: str, anchor: str | None, side: str) -> None:
    req = parse_destination(text)
    assert (req.kind, req.anchor, req.side, req.text) == (kind, anchor, side, text)


def test_a_destination_outside_the_phrasing_names_the_rules() -> None:
    with pytest.raises(InputError, match="'somewhere nice' does not follow the place "
                                         "phrasing: 'in <container>'") as err:
        parse_destination("somewhere nice")
    assert err.value.field == "DESTINATION"


@pytest.mark.parametrize("yaw", [0.0, 0.3, -0.5, 1.2])
def test_footprint_extents_undo_the_world_box(yaw: float) -> None:
    sx, sy = _aabb(0.14, 0.05, yaw)
    major, minor = footprint_extents(_det((0, 0, 1), (sx, sy, 0.03), yaw))
    assert major == pytest.approx(0.14, abs=1e-6) and minor == pytest.approx(0.05, abs=1e-6)


def test_grasp_closes_across_the_narrow_side_from_above() -> None:
    yaw = 0.4  # the book's long side points along yaw
    sx, sy = _aabb(0.14, 0.05, yaw)
    plan = plan_grasp(_det((0.1, -0.2, 0.915), (sx, sy, 0.03), yaw))
    # fingers open perpendicular to the long side: across the 5 cm
    assert math.cos(plan.opening_yaw - yaw) == pytest.approx(0.0, abs=1e-9)
    assert plan.narrow == pytest.approx(0.05, abs=1e-6)
    assert 0.05 < plan.width <= GRIPPER_OPEN
    assert plan.grasp[:2] == pytest.approx([0.1, -0.2])
    # low object: pads just above the bottom, never into the table
    assert plan.grasp[2] > 0.9 and plan.grasp[2] < 0.93
    assert plan.pre_grasp == pytest.approx(plan.grasp + np.array([0, 0, PRE_GRASP]))
    assert plan.hand_above_bottom == pytest.approx(plan.grasp[2] - 0.9)


def test_grasp_of_an_object_wider_than_the_hand_is_refused() -> None:
    with pytest.raises(ValueError, match="wider than the hand opens"):
        plan_grasp(_det((0, 0, 0.95), (0.2, 0.24, 0.08), 0.0, "the basket"))


def test_release_targets_keep_the_clearance() -> None:
    basket = _det((0.05, -0.2, 0.94), (0.2, 0.24, 0.08))
    plate = _det((0.0, 0.1, 0.91), (0.2, 0.2, 0.02))
    inside, top = container_target(basket), surface_target(plate)
    assert inside.xy == pytest.approx([0.05, -0.2]) and inside.support_z < 0.92
    assert top.support_z == pytest.approx(0.92)
    hand = top.release_hand(0.06)
    assert hand == pytest.approx([0.0, 0.1, 0.92 + RELEASE_CLEARANCE + 0.06])



def test_a_second_object_goes_beside_what_is_in_the_container() -> None:
    """LIBERO's basket (20 x 24 cm) with the soup (7 cm across) at its middle: the sauce
    (5.5 cm) goes to the free spot nearest the middle, clear of the soup by the margin and
    inside the walls; the floor is no higher than the soup's bottom (the soup hides it, and a
    box fitted to what is still seen sits higher)."""
    basket = _det((0.05, -0.2, 0.95), (0.2, 0.24, 0.06), eid="basket_1")
    soup = _det((0.05, -0.2, 0.97), (0.07, 0.07, 0.1), eid="alphabet_soup_1")
    half = (0.0275, 0.0275)
    t = container_target(basket, occupants=[soup], held_half=half, base=(-0.56, 0.0))
    gap = 0.035 + half[0] + 0.005  # the soup's half width, the sauce's, the margin
    assert max(abs(t.xy[0] - 0.05), abs(t.xy[1] + 0.2)) >= gap - 1e-9
    assert abs(t.xy[0] - 0.05) <= 0.1 - half[0] and abs(t.xy[1] + 0.2) <= 0.12 - half[1]
    assert np.hypot(t.xy[0] - 0.05, t.xy[1] + 0.2) < gap + 0.011  # the nearest: one cell on
    assert t.support_z == pytest.approx(0.92 + 0.012) and t.entity_id == "basket_1"
    # a box (5 x 8.8 cm, its long side along y) by its own extents, not a circle round it
    box = container_target(basket, occupants=[soup], held_half=(0.025, 0.044))
    dx, dy = abs(box.xy[0] - 0.05), abs(box.xy[1] + 0.2)
    assert dx >= 0.035 + 0.025 + 0.005 - 1e-9 or dy >= 0.035 + 0.044 + 0.005 - 1e-9
    assert dx <= 0.1 - 0.025 and dy <= 0.12 - 0.044
    # no free spot: over the middle as without occupants (a flat box on a flat box stays in)
    full = container_target(basket, occupants=[_det((0.05, -0.2, 0.95), (0.19, 0.23, 0.03))],
                            held_half=half)
    assert full.xy == pytest.approx(container_target(basket).xy)
    # an oblong box (12 x 5 cm, long along x) that fits beside the soup only turned a
    # quarter: turned, beside it along x; held from the side (no turn), over the middle
    narrow = _det((0.05, -0.2, 0.95), (0.2, 0.16, 0.06), eid="basket_1")
    turned = container_target(narrow, occupants=[soup], held_half=(0.06, 0.025))
    assert turned.turn == pytest.approx(math.pi / 2) and turned.entity_id == "basket_1"
    assert 0.035 + 0.025 + 0.005 - 1e-9 <= abs(turned.xy[0] - 0.05) <= 0.1 - 0.025
    assert abs(turned.xy[1] + 0.2) <= 0.08 - 0.06
    kept = container_target(narrow, occupants=[soup], held_half=(0.06, 0.025), turnable=False)
    assert kept.turn == 0.0 and kept.xy == pytest.approx([0.05, -0.2])
    assert box.turn == 0.0  # it fits as it is held


def test_a_second_object_on_a_surface_goes_beside_what_stands_on_it() -> None:
    """LIBERO's stove (30 x 34 cm box) with one moka pot (6 cm) at its middle: the second
    pot goes to the free spot on it nearest the middle, clear of the first by the margin,
    its footprint on the stove; something under or merely near it is not on it."""
    stove = _det((0.1, -0.14, 0.915), (0.3, 0.34, 0.03), eid="flat_stove_1")
    pot = _det((0.1, -0.14, 0.985), (0.06, 0.06, 0.11), eid="moka_pot_1")
    half = (0.03, 0.03)
    alone = surface_target(stove)
    assert alone.xy == pytest.approx([0.1, -0.14]) and alone.support_z == pytest.approx(0.93)
    on = standing_on(stove, [pot, _det((0.1, -0.14, 0.9), (0.4, 0.4, 0.02), eid="mat_1"),
                             _det((0.4, 0.2, 0.95), (0.05, 0.05, 0.1), eid="can_1")])
    assert [d.entity_id for d in on] == ["moka_pot_1"]
    t = surface_target(stove, occupants=on, held_half=half, base=(-0.56, 0.0))
    gap = 0.03 + half[0] + 0.005
    assert max(abs(t.xy[0] - 0.1), abs(t.xy[1] + 0.14)) >= gap - 1e-9
    assert np.hypot(t.xy[0] - 0.1, t.xy[1] + 0.14) < gap + 0.011  # the nearest: one cell on
    assert abs(t.xy[0] - 0.1) <= 0.15 - half[0] and abs(t.xy[1] + 0.14) <= 0.17 - half[1]
    assert t.support_z == pytest.approx(0.93) and t.entity_id == "flat_stove_1"
    # nothing free on it: over the middle, as before
    full = surface_target(stove, occupants=[_det((0.1, -0.14, 0.95), (0.3, 0.34, 0.04))],
                          held_half=half)
    assert full.xy == pytest.approx(alone.xy)


def test_a_divider_standing_up_inside_a_container_is_released_beside() -> None:
    """LIBERO's desk caddy (26 x 28 cm, two compartments either side of a divider along y),
    seen from above in depth: the book (5 x 14 cm, long along y) goes into a compartment,
    clear of the divider by its half width and the margin, inside the walls; released over
    the middle it rests on the divider or falls into either side (bench_primitives, before:
    4/10 seeds in the caddy by physics). An open basket's floor has nothing standing up:
    over its middle, as without depth."""
    walls = [(-0.13, -0.14, -0.125, 0.14, 0.98), (0.125, -0.14, 0.13, 0.14, 0.98),
             (-0.13, -0.14, 0.13, -0.135, 0.98), (-0.13, 0.135, 0.13, 0.14, 0.98)]
    floor = (-0.13, -0.14, 0.13, 0.14, 0.91)
    divider = (-0.005, -0.14, 0.005, 0.14, 0.97)
    mine = [lambda u, v, d: d < 2.0 - 0.905]  # the caddy: everything above the table
    half = (0.025, 0.07)

    def caddy(frame: RGBDFrame, mask: np.ndarray) -> Detection:
        return Detection(phrase="the desk caddy", entity_id="desk_caddy_1", label="caddy",
                         score=1.0, box_2d=(0, 0, 200, 200), mask=mask,
                         centroid=(0.0, 0.0, 0.94), size=(0.26, 0.28, 0.08), yaw=0.0,
                         camera=frame.camera, stamp=0.0)

    frame, (mask,) = down_frame([floor, *walls, divider], mine)
    det = caddy(frame, mask)
    t = container_target(det, held_half=half, frame=frame)
    assert abs(t.xy[0]) >= 0.005 + half[0]  # clear of the divider (sampled every 5 mm)
    assert abs(t.xy[0]) <= 0.13 - half[0] and abs(t.xy[1]) <= 0.14 - half[1]
    assert t.support_z == pytest.approx(0.9 + 0.012) and t.entity_id == "desk_caddy_1"
    assert container_target(det, held_half=half).xy == pytest.approx([0.0, 0.0])  # no depth
    other = dataclasses.replace(frame, camera="wrist")  # its mask is not this frame's
    assert container_target(det, held_half=half, frame=other).xy == pytest.approx([0.0, 0.0])
    frame, (mask,) = down_frame([floor, *walls], mine)
    open_box = container_target(caddy(frame, mask), held_half=half, frame=frame)
    assert open_box.xy == pytest.approx([0.0, 0.0])


AREA = TableArea(centre=(0.0, 0.0), size=(1.0, 1.2), height=0.9, base=(-0.56, 0.0))


def _clear(spot: np.ndarray, det: Detection, radius: float) -> bool:
    cx, cy, _ = det.centroid
    return (abs(spot[0] - cx) >= det.size[0] / 2 + radius
            or abs(spot[1] - cy) >= det.size[1] / 2 + radius)


def test_empty_space_is_next_to_the_anchor_on_the_side_asked_and_clear() -> None:
    bowl = _det((0.0, 0.0, 0.93), (0.1, 0.1, 0.05), eid="bowl_1")
    mug = _det((0.0, 0.12, 0.94), (0.08, 0.08, 0.08), eid="mug_1")  # blocks the bowl's left
    for side, check in [("left", lambda p: p[1] > 0.05), ("right", lambda p: p[1] < -0.05),
                        ("front", lambda p: p[0] < -0.05), ("behind", lambda p: p[0] > 0.05)]:
        t = empty_space_target(AREA, [bowl, mug], 0.03, bowl, side)  # type: ignore[arg-type]
        assert check(t.xy), (side, t.xy)
        assert _clear(t.xy, bowl, 0.03) and _clear(t.xy, mug, 0.03)
        assert t.support_z == 0.9 and t.entity_id == "bowl_1"
    # nearest: the free cell right of the bowl touches the margin, not farther
    right = empty_space_target(AREA, [bowl, mug], 0.03, bowl, "right")
    assert right.xy[1] == pytest.approx(-(0.05 + 0.03 + 0.02), abs=0.011)
    # left is blocked by the mug next to the bowl: the spot is beyond the mug
    left = empty_space_target(AREA, [bowl, mug], 0.03, bowl, "left")
    assert left.xy[1] > 0.16 + 0.05 - 0.011


def test_no_free_space_is_a_reason() -> None:
    wall = _det((0.0, 0.0, 0.95), (1.0, 1.2, 0.1), eid="slab")
    with pytest.raises(ValueError, match="no free table space on the table"):
        empty_space_target(AREA, [wall], 0.03, None)


# ---------------------------------------------------------------- side grasps
# Geometry of the known fixtures is the sim builder's (mango.sim.parts / sim.build): a
# microwave open at its -x face (LIBERO-10 task 9's turned -90 deg: open toward +y), a drawer
# cabinet whose bottom drawer slides out along -x.

def _microwave() -> KnownFixture:
    return KnownFixture("microwave_1", "microwave", np.array([0.08, -0.3, 0.9 + 0.125]),
                        math.radians(-90), (0.28, 0.34, 0.25))


def _mug(xy, eid="mug_1") -> Detection:
    return _det((xy[0], xy[1], 0.948), (0.065, 0.065, 0.08), 0.0, "the mug", eid)


BASE = (-0.56, 0.0)


def test_a_roof_overhead_chooses_a_side_grasp_out_of_the_opening() -> None:
    mw = _microwave()
    mug = _mug((0.06, -0.21))  # inside, 5 cm behind the opening (at y = -0.16)
    plans = grasp_options(mug, GraspScene(fixtures=[mw], base=BASE))
    plan = plans[0]
    assert plan.approach == "side" and plan.retreat
    # out of the cavity's opening: the hand points along the microwave's +x (world -y)
    assert plan.direction == pytest.approx([0.0, -1.0, 0.0], abs=1e-9)
    assert plan.pre_grasp == pytest.approx(plan.grasp - PRE_SIDE * plan.direction)
    assert plan.grasp[2] >= plan.bottom + 0.03 and plan.width <= GRIPPER_OPEN
    # fingers open horizontally across the approach
    assert math.cos(plan.opening_yaw - math.atan2(-1.0, 0.0)) == pytest.approx(0, abs=1e-9)
    assert "top-down blocked by 'microwave_1' overhead" in plan.reason
    assert "back out along it before lifting" in plan.reason
    # fall-backs: from the base, then across; every one a side grasp
    assert len(plans) >= 2 and all(p.approach == "side" for p in plans)
    assert plans[1].direction == pytest.approx([1.0, -0.21 / 0.62, 0] / np.hypot(1, 0.21 / 0.62),
                                               abs=1e-6)


def test_nothing_overhead_keeps_the_top_down_grasp() -> None:
    mug = _mug((0.04, 0.0))  # on the open table next to the microwave
    plan = choose_grasp(mug, GraspScene(fixtures=[_microwave()], base=BASE))
    top = plan_grasp(mug)
    assert plan.approach == "top" and plan.direction is None and not plan.retreat
    assert plan.grasp == pytest.approx(top.grasp) and plan.pre_grasp == pytest.approx(top.pre_grasp)
    assert plan.opening_yaw == top.opening_yaw and plan.width == top.width


def test_an_insertion_into_a_microwave_is_prepared_by_a_side_grasp_along_its_axis() -> None:
    mw = _microwave()
    plan = choose_grasp(_mug((0.04, 0.0)), GraspScene(fixtures=[mw], base=BASE, insert_into=mw))
    assert plan.approach == "side" and not plan.retreat
    assert plan.direction == pytest.approx(mw.into)
    assert "horizontal insertion" in plan.reason


def test_a_side_grasp_of_an_object_wider_than_the_hand_is_refused() -> None:
    box = _det((0.06, -0.21, 0.95), (0.12, 0.1, 0.08), 0.0, "the box", "box_1")
    with pytest.raises(ValueError, match=r"side grasp needed .* wider than the hand opens"):
        grasp_options(box, GraspScene(fixtures=[_microwave()], base=BASE))


def test_detected_depth_overhead_blocks_the_top_down_approach_an_open_basket_does_not() -> None:
    mug = _mug((0.0, 0.0))  # top at 0.988
    # a shelf board 12 cm above the mug, seen from above: its mask covers the mug's column
    frame, (shelf_mask,) = down_frame([(-0.15, -0.15, 0.15, 0.15, 1.11)],
                                       [lambda u, v, d: d < 0.95])
    shelf = Detection(phrase="the shelf", entity_id="shelf_1", label="shelf", score=1.0,
                      box_2d=(0, 0, 200, 200), mask=shelf_mask, centroid=(0.0, 0.0, 1.1),
                      size=(0.3, 0.3, 0.02), yaw=0.0, camera="down", stamp=0.0)
    blockers = overhead_blockers(mug, [shelf], [], frame)
    assert [(b[0], round(b[1], 2)) for b in blockers] == [("shelf_1", 1.11)]
    plan = choose_grasp(mug, GraspScene(others=[shelf], base=BASE, frame=frame))
    assert plan.approach == "side" and "'shelf_1' overhead" in plan.reason
    # from the robot's base (no cavity says otherwise)
    assert plan.direction == pytest.approx([1.0, 0.0, 0.0])
    # an open basket around the mug: its rim is 10 cm away, nothing of it over the mug
    frame, (rim_mask,) = down_frame([(-0.11, -0.11, 0.11, 0.11, 0.99)],
                                     [lambda u, v, d: (d < 1.02) & (np.hypot(u - 100, v - 100)
                                                                    > 16)])
    basket = dataclasses.replace(shelf, phrase="the basket", entity_id="basket_1",
                                 mask=rim_mask, size=(0.22, 0.22, 0.09))
    assert overhead_blockers(mug, [basket], [], frame) == []
    assert choose_grasp(mug, GraspScene(others=[basket], base=BASE, frame=frame)).approach == "top"


def test_into_a_microwave_is_a_horizontal_insertion_past_its_opening() -> None:
    mw = _microwave()
    t = fixture_release(mw, 0.045, BASE)
    assert t.insert == pytest.approx(mw.into) and t.entity_id == "microwave_1"
    lx, ly = mw.local(t.xy)
    assert -0.14 + 0.045 + 0.02 <= lx <= 0.14 - 0.045  # wholly past the opening, off the back
    assert abs(ly) <= 0.17 - HAND_HALF_SPAN  # the hand's span clear of the side walls
    assert t.support_z == pytest.approx(0.9 + 0.008)  # the cavity's floor
    c, size = mw.interior_box()  # turned -90 deg: its local x is world -y
    assert size == pytest.approx([0.34 - 0.016, 0.28 - 0.008, 0.25 - 0.016])
    assert c == pytest.approx([0.08, -0.3 + 0.004, 0.9 + 0.125])  # back wall at world -y


def test_into_an_open_drawer_is_top_down_into_its_exposed_part() -> None:
    cab = KnownFixture("white_cabinet_1", "drawer_cabinet", np.array([0.19, 0.14, 1.03]), 0.0,
                       (0.24, 0.26, 0.26), drawer_q=-0.2)
    t = fixture_release(cab, 0.035, BASE)
    assert t.insert is None
    lx, _ = cab.local(t.xy)
    # between the drawer's front wall (pulled 20 cm out) and the cabinet's front face
    assert -0.2 - 0.11 + 0.035 < lx < -0.12 - 0.035
    assert 0.9 < t.support_z < 0.93
    shut = dataclasses.replace(cab, drawer_q=-0.02)
    with pytest.raises(ValueError, match=r"open 0 cm past the cabinet's front.*open it first"):
        fixture_release(shut, 0.035, BASE)
    # its inside where it is (what a perceived 'in' is judged against): the drawer box
    c, size = cab.interior_box()
    assert c[0] - size[0] / 2 == pytest.approx(0.19 - 0.2 - 0.11, abs=1e-9)
    assert c[0] + size[0] / 2 == pytest.approx(0.19 - 0.2 + 0.11, abs=1e-9)
    assert c[2] - size[2] / 2 == pytest.approx(1.03 - 0.13 + 0.008 + 0.002, abs=1e-9)
    # how far it is open, from a detection of the whole cabinet (its box reaches past it)
    box = _det((0.19 - 0.1, 0.14, 1.03), (0.44, 0.26, 0.26), eid="white_cabinet_1")
    assert drawer_q_from_box(cab, box) == pytest.approx(-0.2)
