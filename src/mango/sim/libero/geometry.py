"""Where the LIBERO expert takes hold: grasps and release points read from the simulation facts
(`LiberoClient.facts()`: world boxes of each entity's collision geometry, body poses, regions).

A body narrower than the open hand (the Panda's fingers open to 8 cm) is taken across its
narrow side at its middle; a wider one (a bowl, a plate, a mug) by its rim, on the side with
the most room around the outer finger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

HAND_OPENING = 0.07  # m: what the fingers close around with room to spare (they open 8 cm)
RIM_INSET = 0.012  # m: the grip point inside a rim's outer edge
OUTER_FINGER = 0.03  # m: the outer finger beyond the rim, for the clearance test
PAD_BELOW_TOP = 0.035  # m: how deep under a body's top the pads close at most
PUSH_BEHIND = 0.025  # m: the closed fingers this far behind a pushed body's edge
FINGER_ROOM = 0.015  # m: the closed fingers' half thickness and a margin
PALM_HALF = 0.11  # m: the Panda hand's half length along the closing axis, with a margin
PALM_ABOVE = 0.05  # m: how far above the fingertips the palm starts


def too_flat_to_grasp(facts: dict[str, Any], name: str) -> bool:
    """Wider than the hand every way and too low for a rim grasp clear of the table (a
    plate): pushed, not picked."""
    lo, hi = box(facts, name)
    return narrowest(facts, name)[1] > HAND_OPENING and hi[2] - lo[2] < 0.03


@dataclass(frozen=True)
class Grasp:
    point: np.ndarray  # where the grip site goes
    closing: np.ndarray  # horizontal unit vector the fingers close along
    rim: bool


def box(facts: dict[str, Any], name: str) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = facts["objects"][name]["box"]
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def _quat_matrix(q: list[float]) -> np.ndarray:
    w, x, y, z = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def narrowest(facts: dict[str, Any], name: str) -> tuple[np.ndarray, float]:
    """The horizontal direction across which the body is narrowest, and its width there (its
    body-frame box turned into the world, projected)."""
    o = facts["objects"][name]
    rot = _quat_matrix(o["orientation"])
    half = np.asarray(o["half_extent"], dtype=float)
    best, width = np.array([1.0, 0.0, 0.0]), np.inf
    for deg in range(0, 180, 5):
        d = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg)), 0.0])
        w = 2.0 * float(np.abs(rot.T @ d) @ half)
        if w < width:
            best, width = d, w
    return best, width


def _gap(p: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """Horizontal distance from p to a box."""
    d = np.maximum(np.maximum(lo[:2] - p[:2], p[:2] - hi[:2]), 0.0)
    return float(np.linalg.norm(d))


def obstacles(facts: dict[str, Any], name: str, above: float) -> list[tuple[np.ndarray, ...]]:
    """Boxes of the other movable objects whose top rises above `above`."""
    out = []
    for other, o in facts["objects"].items():
        if other == name or o["fixture"] or not o["box"]:
            continue
        lo, hi = box(facts, other)
        if hi[2] > above:
            out.append((lo, hi))
    return out


def plan_grasp(facts: dict[str, Any], name: str, base_xy: np.ndarray) -> Grasp:
    """Where and how to take `name`: across its narrow side, or by its rim when it is wider
    than the hand."""
    lo, hi = box(facts, name)
    centre = (lo + hi) / 2.0
    closing, width = narrowest(facts, name)
    height = hi[2] - lo[2]
    if width <= HAND_OPENING:
        z = max(lo[2] + min(0.015, height / 2.0), hi[2] - PAD_BELOW_TOP)
        return Grasp(np.array([centre[0], centre[1], min(z, hi[2] - 0.005)]), closing, False)
    radius = min(hi[0] - lo[0], hi[1] - lo[1]) / 2.0
    z = hi[2] - min(0.02, height / 2.0)
    others = obstacles(facts, name, z - 0.03)
    toward_base = base_xy - centre[:2]
    toward_base /= max(np.linalg.norm(toward_base), 1e-9)
    best, best_score = None, -np.inf
    for deg in range(0, 360, 15):
        u = np.array([np.cos(np.radians(deg)), np.sin(np.radians(deg)), 0.0])
        outer = centre + (radius + OUTER_FINGER) * u
        room = min((_gap(outer, a, b) for a, b in others), default=0.1)
        score = min(room, 0.06) + 0.01 * float(u[:2] @ toward_base)
        if score > best_score:
            best, best_score = u, score
    assert best is not None
    point = centre + (radius - RIM_INSET) * best
    return Grasp(np.array([point[0], point[1], z]), best, True)


@dataclass(frozen=True)
class Release:
    """Where a carried body's reference point should come down, and what stops the descent."""

    xy: np.ndarray
    surface: float  # z the body's bottom must not go below
    clear: float  # z the body's bottom must clear while carried there
    touch: frozenset[str]  # entities whose contact with the body ends the descent


def plan_release(facts: dict[str, Any], name: str, target: str, table: float) -> Release:
    """Over the target body's reference point (LIBERO's `On` compares those) or the region's
    centre; down to the target's top, the region's floor or the table."""
    objects, regions = facts["objects"], facts["regions"]
    if target in objects:
        hi = box(facts, target)[1]
        xy = np.asarray(objects[target]["position"][:2], dtype=float)
        return Release(xy, float(hi[2]) - 0.03, float(hi[2]) + 0.04, frozenset({target}))
    r = regions[target]
    centre = np.asarray(r["position"], dtype=float)
    half = np.asarray(r["half_extent"], dtype=float)
    parent = r["parent"]
    touch = frozenset({parent}) if parent in objects else frozenset()
    floor = centre[2] - half[2] if parent in objects else table
    if r["joints"]:  # a drawer: clear its walls, not the cabinet's top
        top = centre[2] + half[2]
    elif parent in objects:
        top = float(box(facts, parent)[1][2])
    else:
        top = floor
    return Release(centre[:2], float(floor), float(max(top, floor)) + 0.04, touch)


def path_top(facts: dict[str, Any], start: np.ndarray, end: np.ndarray, radius: float,
             skip: str) -> float:
    """The highest top of what a body of horizontal `radius` passes over on the straight line
    from `start` to `end` (xy): objects, fixtures and their moving parts (an open drawer's
    walls), `skip` (the carried body) aside."""
    boxes = [box(facts, n) for n, o in facts["objects"].items() if n != skip and o["box"]]
    boxes += [(np.asarray(j["part_box"][0]), np.asarray(j["part_box"][1]))
              for j in facts["joints"].values() if j["part_box"]]
    top = -np.inf
    for f in np.linspace(0.0, 1.0, 25):
        p = start[:2] + f * (end[:2] - start[:2])
        for lo, hi in boxes:
            if np.all(p > lo[:2] - radius) and np.all(p < hi[:2] + radius):
                top = max(top, float(hi[2]))
    return top


def overhang_escape(facts: dict[str, Any], name: str) -> np.ndarray | None:
    """A horizontal move that takes `name` out from under what overhangs it (an open drawer
    above a bowl), or None when nothing does: away from the overhang's centre, by the overlap
    of their footprints and 2 cm."""
    lo, hi = box(facts, name)
    boxes = [(np.asarray(j["part_box"][0]), np.asarray(j["part_box"][1]))
             for j in facts["joints"].values() if j["part_box"]]
    boxes += [box(facts, n) for n, o in facts["objects"].items() if n != name and o["box"]]
    move = None
    for blo, bhi in boxes:
        overlap = np.minimum(hi[:2], bhi[:2]) - np.maximum(lo[:2], blo[:2])
        if blo[2] > hi[2] - 0.005 and blo[2] < hi[2] + 0.12 and np.all(overlap > 0):
            away = (lo[:2] + hi[:2]) / 2.0 - (blo[:2] + bhi[:2]) / 2.0
            axis = int(np.argmin(overlap))  # out along the shorter way
            step = np.zeros(2)
            step[axis] = np.sign(away[axis] or 1.0) * (overlap[axis] + 0.02)
            move = step if move is None or np.linalg.norm(step) > np.linalg.norm(move) else move
    return None if move is None else np.array([*move, 0.0])


def _standing_boxes(facts: dict[str, Any], name: str,
                    above: float = 0.01) -> list[tuple[np.ndarray, np.ndarray]]:
    """Boxes of the bodies (objects and fixtures) whose top rises more than `above` over
    `name`'s bottom: what a hand pushing `name` over the table can run into (the table
    itself does not rise)."""
    floor = float(box(facts, name)[0][2]) + above
    out = []
    for other, o in facts["objects"].items():
        if other == name or not o["box"]:
            continue
        lo, hi = box(facts, other)
        if hi[2] > floor:
            out.append((lo, hi))
    return out


def _room(p: np.ndarray, boxes: list[tuple[np.ndarray, np.ndarray]]) -> float:
    return min((_gap(p, a, b) for a, b in boxes), default=np.inf)


def hand_fits(p: np.ndarray, across: np.ndarray, low: list[tuple[np.ndarray, np.ndarray]],
              tall: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether the closed hand can stand at `p` (xy) down at the table, its fingers closing
    along `across`: the fingers clear of every standing body, the palm (a bar `PALM_HALF`
    each way along `across`, `PALM_ABOVE` over the tips) clear of the bodies tall enough to
    reach it. Robosuite 1.4's Panda hand (`robosuite/models/assets/grippers/
    panda_gripper.xml`: the `hand_collision` mesh `meshes/panda_gripper/hand.stl`, turned
    like the fingers) spans ±0.10 m along the fingers' sliding axis (`finger_joint1/2`), and
    its underside is about 4 cm above the fingertips (the fingers hang from z = 0.0524 m,
    tips 0.056 m further; the mesh ends at z = 0.066 m)."""
    p = np.asarray(p, dtype=float)[:2]
    if _room(p, low) < FINGER_ROOM:
        return False
    u = np.asarray(across, dtype=float)[:2]
    return all(_room(p + s * u, tall) >= FINGER_ROOM
               for s in np.linspace(-PALM_HALF, PALM_HALF, 9))


def push_stand_off(facts: dict[str, Any], name: str, goal_xy: np.ndarray) -> float:
    """How far behind a pushed body's reference point (away from `goal_xy`) the closed
    fingers go down: just beyond its edge (`PUSH_BEHIND`) when the hand fits there
    (`hand_fits`); else inside its rim, the fingertips on its floor dragging it by the rim's
    inner side (a plate wedged between a bowl and a cabinet leaves no room beside it)."""
    pos = np.asarray(facts["objects"][name]["position"][:2], dtype=float)
    d = np.asarray(goal_xy, dtype=float)[:2] - pos
    n = float(np.linalg.norm(d))
    lo, hi = box(facts, name)
    radius = float(np.max(hi[:2] - lo[:2])) / 2.0
    outside = radius + PUSH_BEHIND
    if n < 1e-6:
        return outside
    d /= n
    low = _standing_boxes(facts, name)
    tall = _standing_boxes(facts, name, 0.012 + PALM_ABOVE)
    if hand_fits(pos - d * outside, np.array([-d[1], d[0]]), low, tall):
        return outside
    return radius - 2.0 * RIM_INSET


def lay_axis(facts: dict[str, Any], name: str, target: str) -> np.ndarray | None:
    """The horizontal axis to lay `name` down along in the region `target`, or None when it
    goes in standing. A long body (at least twice as tall as it is wide) goes down lying when
    the region is a strip on a fixture narrower than the body stands wide but long enough for
    a good part of its length: LIBERO's wine rack's `top_region` is such a strip along the
    rack's sloping shelf, against the shelf's stopper (`libero/.../turbosquid_objects/
    wine_rack/wine_rack.xml`: the `top_region` site, 0.10 x 0.022 half sizes), where a bottle
    standing on its base topples. The axis points away from the robot's base, the way the
    hand reaches."""
    region = facts["regions"].get(target)
    if region is None or region["joints"] or region["parent"] not in facts["objects"]:
        return None
    lo, hi = box(facts, name)
    width = float(np.max(hi[:2] - lo[:2]))
    height = float(hi[2] - lo[2])
    half = np.abs(np.asarray(region["half_extent"], dtype=float))[:2]
    long_side = int(np.argmax(half))
    if height < 2.0 * width or 2.0 * half[1 - long_side] >= width \
            or 2.0 * half[long_side] < 0.6 * height:
        return None
    axis = np.zeros(3)
    axis[long_side] = 1.0
    base = np.asarray(facts["robot"]["base"][:2], dtype=float)
    away = np.asarray(region["position"][:2], dtype=float) - base
    if float(away @ axis[:2]) < 0:
        axis = -axis
    return axis
