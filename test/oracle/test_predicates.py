"""Default predicates over world-state geometry: true/false cases, thresholds, facts."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mango.oracle import (
    EvaluationError,
    FunctionLibrary,
    Thresholds,
    WorldState,
    compile_expression,
    parse_expression,
)
from mango.oracle.predicates import StateView

TABLE_TOP = 0.9  # higher than a 0.03 m lift threshold measured from the ground would allow


def ent(
    x: float,
    y: float,
    z: float,
    size: tuple[float, float, float] | None = None,
    kind: str = "object",
    **extra: Any,
) -> dict[str, Any]:
    rec: dict[str, Any] = {"position": [x, y, z], "kind": kind, **extra}
    if size is not None:
        rec["size"] = list(size)
    return rec


def on_table(x: float, y: float, size: tuple[float, float, float], lift: float = 0.0) -> dict:
    return ent(x, y, TABLE_TOP + size[2] / 2 + lift, size)


def world(**overrides: Any) -> dict[str, Any]:
    objects = {
        "main_table": ent(0, 0, TABLE_TOP - 0.025, (1.0, 1.2, 0.05), "surface"),
        "soup": on_table(0.1, -0.1, (0.07, 0.07, 0.1)),
        "basket": on_table(0.0, 0.3, (0.25, 0.18, 0.08)),
        "basket_region": ent(0.0, 0.3, 0.96, (0.21, 0.14, 0.12), "region", parent="basket"),
        "plate": on_table(-0.2, 0.0, (0.2, 0.2, 0.02)),
        "robot_hand": ent(-0.3, 0.0, 1.3, kind="robot"),
    }
    rec: dict[str, Any] = {"t": 0.0, "objects": objects, "contacts": []}
    for k, v in overrides.items():
        if k == "objects":
            objects.update(v)
        else:
            rec[k] = v
    return rec


def holds(expr: str, record: dict[str, Any], thresholds: Thresholds | None = None) -> bool:
    lib = FunctionLibrary.default(thresholds)
    state = WorldState.model_validate(record)
    return compile_expression(parse_expression(expr), lib)(StateView(state, lib.thresholds))


# ---------------------------------------------------------------------------------- in


def test_in_region_true_and_false() -> None:
    inside = world(objects={"soup": ent(0.02, 0.3, 0.955, (0.07, 0.07, 0.1))})
    assert holds("in(soup, basket_region)", inside)
    assert not holds("in(soup, basket_region)", world())
    # above the region's top: not in
    above = world(objects={"soup": ent(0.0, 0.3, 1.08, (0.07, 0.07, 0.1))})
    assert not holds("in(soup, basket_region)", above)


def test_in_lower_bound_is_relaxed_by_threshold() -> None:
    # centre 5 mm under the region floor (0.90)
    low = world(objects={"soup": ent(0.0, 0.3, 0.895, (0.07, 0.07, 0.1))})
    assert holds("in(soup, basket_region)", low)
    assert not holds("in(soup, basket_region)", low, Thresholds(in_z_relax=0.0))


def test_in_a_container_object_uses_its_box() -> None:
    inside = world(objects={"soup": ent(0.0, 0.3, 0.93, (0.07, 0.07, 0.1))})
    assert holds("in(soup, basket)", inside)


def test_in_rotated_container() -> None:
    # a long thin box turned 90 degrees about z: its long side now runs along y
    s = math.sqrt(0.5)
    rec = world(
        objects={"slot": ent(0.5, 0.5, 1.0, (0.4, 0.05, 0.1), "region", orientation=[s, 0, 0, s])}
    )
    rec["objects"]["soup"] = ent(0.5, 0.65, 1.0, (0.02, 0.02, 0.02))
    assert holds("in(soup, slot)", rec)
    rec["objects"]["soup"] = ent(0.65, 0.5, 1.0, (0.02, 0.02, 0.02))
    assert not holds("in(soup, slot)", rec)


# ---------------------------------------------------------------------------------- on


def test_on_object_true_and_false() -> None:
    rec = world(objects={"soup": ent(-0.2, 0.0, TABLE_TOP + 0.02 + 0.05, (0.07, 0.07, 0.1))})
    assert holds("on(soup, plate)", rec)
    assert not holds("on(soup, plate)", world())  # beside the plate
    assert holds("on(soup, main_table)", world())
    hovering = world(
        objects={"soup": ent(-0.2, 0.0, TABLE_TOP + 0.02 + 0.05 + 0.05, (0.07, 0.07, 0.1))}
    )
    assert not holds("on(soup, plate)", hovering)


def test_on_thresholds() -> None:
    gap = world(
        objects={"soup": ent(-0.2, 0.0, TABLE_TOP + 0.02 + 0.05 + 0.015, (0.07, 0.07, 0.1))}
    )
    assert holds("on(soup, plate)", gap)
    assert not holds("on(soup, plate)", gap, Thresholds(on_z_tol=0.01))
    edge = world(objects={"soup": ent(-0.305, 0.0, TABLE_TOP + 0.02 + 0.05, (0.07, 0.07, 0.1))})
    assert holds("on(soup, plate)", edge)  # 5 mm overhang within on_xy_margin
    assert not holds("on(soup, plate)", edge, Thresholds(on_xy_margin=0.0))


def test_on_region_uses_region_extent() -> None:
    rec = world(
        objects={
            "cook": ent(0.3, 0.3, TABLE_TOP + 0.0025, (0.15, 0.15, 0.005), "region"),
            "pot": ent(0.32, 0.28, TABLE_TOP + 0.005 + 0.075, (0.1, 0.1, 0.15)),
        }
    )
    assert holds("on(pot, cook)", rec)
    rec["objects"]["pot"] = ent(0.45, 0.28, TABLE_TOP + 0.005 + 0.075, (0.1, 0.1, 0.15))
    assert not holds("on(pot, cook)", rec)


def test_on_self_is_false() -> None:
    assert not holds("on(plate, plate)", world())


# ---------------------------------------------------------------------------------- up


def test_up_is_measured_against_the_supporting_surface() -> None:
    # resting on a table 0.9 m high: a ground-relative test would call this "up"
    assert not holds("up(soup)", world())
    lifted = world(objects={"soup": on_table(0.1, -0.1, (0.07, 0.07, 0.1), lift=0.05)})
    assert holds("up(soup)", lifted)
    slight = world(objects={"soup": on_table(0.1, -0.1, (0.07, 0.07, 0.1), lift=0.02)})
    assert not holds("up(soup)", slight)
    assert holds("up(soup)", slight, Thresholds(up_height=0.01))


def test_up_over_another_object_uses_that_object() -> None:
    # 4 cm above the table but resting on the 2 cm plate: not lifted
    rec = world(objects={"soup": ent(-0.2, 0.0, TABLE_TOP + 0.02 + 0.05, (0.07, 0.07, 0.1))})
    assert not holds("up(soup)", rec)
    rec["objects"]["soup"] = ent(-0.2, 0.0, TABLE_TOP + 0.02 + 0.05 + 0.04, (0.07, 0.07, 0.1))
    assert holds("up(soup)", rec)


def test_up_inside_a_container_uses_its_floor() -> None:
    rec = world(objects={"soup": ent(0.0, 0.3, TABLE_TOP + 0.005 + 0.05, (0.07, 0.07, 0.1))})
    assert not holds("up(soup)", rec)
    rec["objects"]["soup"] = ent(0.0, 0.3, TABLE_TOP + 0.005 + 0.05 + 0.06, (0.07, 0.07, 0.1))
    assert holds("up(soup)", rec)


def test_up_with_nothing_below_uses_the_ground() -> None:
    rec = world(objects={"soup": ent(3.0, 3.0, 0.05, (0.07, 0.07, 0.1))})
    assert not holds("up(soup)", rec)
    assert holds("up(soup)", rec, Thresholds(ground_z=-0.1))


# ----------------------------------------------------------------------------- grasped


def test_grasped_needs_both_fingers_or_a_closed_gripper() -> None:
    both = world(contacts=[["soup", "robot_left_finger"], ["robot_right_finger", "soup"]])
    assert holds("grasped(soup)", both)
    one = world(contacts=[["soup", "robot_left_finger"]], gripper={"closed": False})
    assert not holds("grasped(soup)", one)
    one_closed = world(
        contacts=[["soup", "robot_gripper"]], gripper={"closed": True, "width": 0.06}
    )
    assert holds("grasped(soup)", one_closed)
    assert not holds("grasped(soup)", world(gripper={"closed": True}))


def test_grasped_without_contact_data_uses_the_hand_centre() -> None:
    rec = world(
        gripper={"closed": True},
        objects={"robot_hand": ent(0.1, -0.1, TABLE_TOP + 0.07, kind="robot")},
    )
    del rec["contacts"]
    assert holds("grasped(soup)", rec)
    rec["gripper"] = {"closed": False}
    assert not holds("grasped(soup)", rec)
    rec["gripper"] = {"closed": True}
    rec["objects"]["robot_hand"] = ent(0.1, -0.1, TABLE_TOP + 0.2, kind="robot")
    assert not holds("grasped(soup)", rec)
    assert holds("grasped(soup)", rec, Thresholds(grasp_hand_margin=0.2))


# --------------------------------------------------------------------------- incontact


def test_incontact_reads_contacts_symmetrically() -> None:
    rec = world(contacts=[["soup", "main_table"], ["basket", "robot_left_finger"]])
    assert holds("incontact(soup, main_table)", rec)
    assert holds("incontact(main_table, soup)", rec)
    assert holds("incontact(basket, robot_gripper)", rec)  # any gripper part
    assert holds("incontact(basket, robot_left_finger)", rec)
    assert not holds("incontact(basket, robot_right_finger)", rec)
    assert not holds("incontact(soup, plate)", rec)


def test_incontact_from_geometry_when_contacts_absent() -> None:
    rec = world()
    del rec["contacts"]
    assert holds("incontact(soup, main_table)", rec)
    assert not holds("incontact(soup, plate)", rec)


# ------------------------------------------------------------------------ joints, devices


def joints(q: float, **extra: float) -> dict:
    return {
        "drawer": {"q": q, "q_open": -0.16, "q_closed": 0.0, **extra},
        "cab_top": {"q": 0.0, "q_open": 0.2, "q_closed": 0.0},
    }


def test_open_and_close_use_openness() -> None:
    assert holds("open(drawer)", world(joints=joints(-0.16)))
    assert not holds("close(drawer)", world(joints=joints(-0.16)))
    assert not holds("open(drawer)", world(joints=joints(-0.12)))
    assert not holds("close(drawer)", world(joints=joints(-0.12)))
    assert holds("close(drawer)", world(joints=joints(-0.005)))  # u = 0.03 <= 0.05


def test_open_close_thresholds_and_per_joint_fractions() -> None:
    assert holds("open(drawer)", world(joints=joints(-0.12)), Thresholds(open_frac=0.7))
    assert holds("open(drawer)", world(joints=joints(-0.12, open_frac=0.7)))
    assert not holds("close(drawer)", world(joints=joints(-0.005, closed_frac=0.01)))
    assert not holds("close(drawer)", world(joints=joints(-0.005)), Thresholds(closed_frac=0.01))


def test_fixture_with_several_joints() -> None:
    rec = world(
        joints={
            "cab_top": {"q": 0.0, "q_open": 0.2, "q_closed": 0.0},
            "cab_bottom": {"q": 0.2, "q_open": 0.2, "q_closed": 0.0},
        }
    )
    assert holds("open(cab)", rec)
    assert not holds("close(cab)", rec)


def test_turnon_turnoff() -> None:
    assert holds("turnon(stove) and not turnoff(stove)", world(devices={"stove": {"on": True}}))
    assert holds("turnoff(stove)", world(devices={"stove": {"on": False}}))


# ----------------------------------------------------------------- left/right and near


def test_left_and_right_of() -> None:
    rec = world()  # plate at y=0.0, basket at y=0.3 (robot looks along +x; +y is its left)
    assert holds("left_of(basket, plate)", rec)
    assert holds("right_of(plate, basket)", rec)
    assert not holds("left_of(plate, basket)", rec)
    assert not holds("left_of(soup, soup)", rec)
    flipped = Thresholds(left_axis=(0.0, -1.0, 0.0))
    assert holds("left_of(plate, basket)", rec, flipped)


def test_near_uses_box_gap_and_the_hand_centre() -> None:
    rec = world(objects={"robot_hand": ent(0.1, -0.1, TABLE_TOP + 0.1 + 0.04, kind="robot")})
    assert holds("near(robot_hand, soup)", rec)  # 4 cm above the can's top
    rec["objects"]["robot_hand"] = ent(0.1, -0.1, TABLE_TOP + 0.1 + 0.08, kind="robot")
    assert not holds("near(robot_hand, soup)", rec)
    assert holds("near(robot_hand, soup)", rec, Thresholds(near_distance=0.1))


# -------------------------------------------------------------------- facts and errors


def test_facts_override_geometry() -> None:
    rec = world(
        facts={"up(soup)": True, "in(soup,  basket_region)": True, "near( robot_hand,soup )": False}
    )
    assert holds("up(soup)", rec)
    assert holds("in(soup, basket_region)", rec)
    assert not holds(
        "near(robot_hand, soup)",
        world(objects={"robot_hand": ent(0.1, -0.1, 0.96)}, facts={"near(robot_hand,soup)": False}),
    )
    assert not holds("up(soup)", world())  # without the fact, geometry decides


def test_facts_only_state() -> None:
    rec = {"t": 1.0, "facts": {"grasped(x)": True}}
    assert holds("grasped(x)", rec)
    with pytest.raises(EvaluationError, match=r"unknown entity 'x'.*up\(x\)"):
        holds("up(x)", rec)


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("in(ghost, basket_region)", "unknown entity 'ghost'"),
        ("up(ghost)", "unknown entity 'ghost'"),
        ("grasped(ghost)", "unknown entity 'ghost'"),
        ("incontact(ghost, soup)", "unknown entity 'ghost'"),
        ("open(ghost)", "unknown joint 'ghost'"),
        ("turnon(ghost)", "unknown device 'ghost'"),
        ("near(robot_hand, ghost)", "unknown entity 'ghost'"),
    ],
)
def test_unknown_entities_are_errors_not_false(expr: str, message: str) -> None:
    with pytest.raises(EvaluationError, match=message):
        holds(expr, world())


def test_short_circuit_and_constants() -> None:
    assert holds("false or up(soup) or true", world())
    assert not holds("true and (up(soup) or false)", world())


def test_contact_gap_threshold_without_contact_data() -> None:
    rec = world(objects={"can": ent(0.1 + 0.07 + 0.001, -0.1, TABLE_TOP + 0.05, (0.07, 0.07, 0.1))})
    del rec["contacts"]
    assert holds("incontact(soup, can)", rec)  # 1 mm apart
    assert not holds("incontact(soup, can)", rec, Thresholds(contact_gap=0.0005))


def test_side_margin_threshold() -> None:
    rec = world(objects={"can": on_table(0.1, -0.08, (0.07, 0.07, 0.1))})  # 2 cm to the left
    assert holds("left_of(can, soup)", rec)
    assert not holds("left_of(can, soup)", rec, Thresholds(side_margin=0.05))
    assert not holds(
        "right_of(can, soup) or right_of(soup, can)", rec, Thresholds(side_margin=0.05)
    )


def test_device_and_joint_facts_override() -> None:
    rec = world(
        devices={"stove": {"on": False}},
        joints=joints(0.0),
        facts={"turnon(stove)": True, "close(drawer)": False},
    )
    assert holds("turnon(stove) and not close(drawer)", rec)
    assert holds("turnoff(stove)", rec)  # facts are per atom: this one comes from the device
