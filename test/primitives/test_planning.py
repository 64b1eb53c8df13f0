"""Grasp and place planning from detections (no simulator): the destination phrasing, the
footprint's narrow side, the opening, and the occupancy grid's free cells."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mango.errors import InputError
from mango.perception.base import Detection
from mango.primitives.planning import (
    GRIPPER_OPEN,
    PRE_GRASP,
    RELEASE_CLEARANCE,
    TableArea,
    container_target,
    empty_space_target,
    footprint_extents,
    parse_destination,
    plan_grasp,
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
