"""The LIBERO expert's fixture skills: drawers, doors and the stove's knob, read from the joint
facts (`LiberoClient.facts()["joints"]`: world axis and anchor, the moving part's collision
geoms) and LIBERO's articulation ranges (`envs/objects/articulated_objects.py`: a drawer
opens towards negative q, −0.16 m at full; the microwave's door to −2.094 rad; the stove's knob
turns on past 0.5 rad up to 2.1).

- a drawer is opened by its handle (the part's geom furthest out along the opening direction),
  taken with the hand level, pointing into the cabinet, fingers closing up and down round
  the bar; closed by pushing that handle home with the fingers closed;
- a door is closed by pushing its free edge (the part's geom furthest from the hinge) round
  the hinge;
- the knob is turned by its ridge (the part's highest geom), gripped across and carried round
  the knob's axis.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from mango.sim.libero.client import LiberoTask
from mango.sim.libero.hand import CLOSE, OPEN, Hand, servo
from mango.sim.libero.plan import Milestone, Skill


class LiberoExpert(Protocol):
    """What the fixture skills use of `mango.sim.libero.expert.LiberoExpert`."""

    task: LiberoTask
    _facts: dict[str, Any]

    @property
    def hand(self) -> Hand: ...

    def holds(self, atom: tuple[str, ...]) -> bool: ...

    def _move(self, target: np.ndarray, gripper: float, closing: np.ndarray | None = None,
              tol: float = 0.01, max_steps: int | None = None, max_step: float = 0.05,
              pointing: np.ndarray | None = None) -> Skill: ...

    def _grip(self, gripper: float, steps: int = 10, closing: np.ndarray | None = None,
              pointing: np.ndarray | None = None) -> Skill: ...

    def _rise_to(self, z: float, gripper: float) -> Skill: ...

UP = np.array([0.0, 0.0, 1.0])


def joints_of(facts: dict[str, Any], subject: str) -> list[str]:
    """The joints an Open/Close/TurnOn atom on `subject` reads: a region's own (a drawer) or
    every joint of the fixture."""
    region = facts["regions"].get(subject)
    if region is not None and region["joints"]:
        return list(region["joints"])
    return [j for j, v in facts["joints"].items() if v["fixture"] == subject]


def _geoms(joint: dict[str, Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(np.asarray(g[:3]), np.asarray(g[3:])) for g in joint["geoms"]]


def _full(expert: LiberoExpert, joint: dict[str, Any]) -> float:
    """The far end of the fixture class's open (or turn-on) range: LIBERO's sign of opening."""
    art = expert.task.articulation.get(joint["fixture"], {})
    ranges = art.get("default_open_ranges") or art.get("default_turnon_ranges") or [1.0]
    return float(max(ranges, key=abs))


def work_joint(expert: LiberoExpert, m: Milestone) -> Skill:
    """Open, close, turn on or off `m.subject`; True when the motion ran (the caller measures
    the atom)."""
    facts = expert._facts
    names = joints_of(facts, m.subject)
    if not names:
        return False
    name = names[0]
    joint = facts["joints"][name]
    if joint["hinge"] and abs(joint["axis"][2]) > 0.9 and m.kind in ("turnon", "turnoff"):
        return (yield from _turn_knob(expert, name, on=m.kind == "turnon"))
    if not joint["hinge"] and m.kind == "open":
        return (yield from _pull_drawer(expert, name))
    if not joint["hinge"] and m.kind == "close":
        return (yield from _push_drawer(expert, name))
    if joint["hinge"] and m.kind == "close":
        return (yield from _swing_door(expert, name))
    return False


def _q(expert: LiberoExpert, name: str) -> float:
    return float(expert._facts["joints"][name]["q"])


def _opening(expert: LiberoExpert, name: str) -> np.ndarray:
    joint = expert._facts["joints"][name]
    d = np.asarray(joint["axis"], dtype=float) * np.sign(_full(expert, joint))
    d[2] = 0.0
    return d / np.linalg.norm(d)


def _handle(expert: LiberoExpert, name: str) -> np.ndarray:
    out = _opening(expert, name)
    return max(_geoms(expert._facts["joints"][name]), key=lambda g: float(g[0] @ out))[0]


def _pull_drawer(expert: LiberoExpert, name: str) -> Skill:
    out = _opening(expert, name)
    full = _full(expert, expert._facts["joints"][name])
    handle = _handle(expert, name)
    inward = -out
    # level the hand in front of the handle, then slide the open fingers round the bar
    pre = handle + out * 0.07
    yield from expert._move(pre + UP * 0.04, OPEN, UP, tol=0.03, pointing=inward)
    yield from expert._move(pre, OPEN, UP, tol=0.012, pointing=inward)
    yield from expert._move(handle + inward * 0.012, OPEN, UP, tol=0.006, max_step=0.02,
                            pointing=inward)
    yield from expert._grip(CLOSE, 10, UP, pointing=inward)
    for _ in range(100):
        if abs(_q(expert, name)) >= abs(full) * 0.98:
            break
        target = expert.hand.position + out * 0.04
        target[2] = handle[2]
        yield servo(expert.hand, target, CLOSE, UP, max_step=0.025, pointing=inward)
    yield from expert._grip(OPEN, 6, UP, pointing=inward)
    yield from expert._move(expert.hand.position + out * 0.05 + UP * 0.03, OPEN, UP,
                            tol=0.02, max_steps=15, pointing=inward)
    return True


def _push_drawer(expert: LiberoExpert, name: str) -> Skill:
    out = _opening(expert, name)
    handle = _handle(expert, name)
    along = np.cross(UP, out)  # fingers side by side along the bar
    pre = handle + out * 0.06
    yield from expert._rise_to(max(expert.hand.position[2], handle[2] + 0.10), CLOSE)
    yield from expert._move(pre + UP * 0.10, CLOSE, along, tol=0.015)
    yield from expert._move(pre, CLOSE, along, tol=0.01, max_step=0.015)
    atom = ("close", _region_or_fixture(expert, name))
    for _ in range(150):
        if expert.holds(atom):
            break
        target = expert.hand.position - out * 0.06
        target[2] = handle[2]
        yield servo(expert.hand, target, CLOSE, along, max_step=0.05)
    yield from expert._move(expert.hand.position + out * 0.05, CLOSE, along, tol=0.015,
                            max_steps=20)
    yield from expert._move(expert.hand.position + UP * 0.08, OPEN, tol=0.02, max_steps=30)
    return True


def _region_or_fixture(expert: LiberoExpert, name: str) -> str:
    for region, r in expert._facts["regions"].items():
        if name in r["joints"]:
            return region
    return str(expert._facts["joints"][name]["fixture"])


def _swing_door(expert: LiberoExpert, name: str) -> Skill:
    joint = expert._facts["joints"][name]
    axis = np.asarray(joint["axis"], dtype=float)
    anchor = np.asarray(joint["anchor"], dtype=float)
    closing_sign = -np.sign(_full(expert, joint))  # towards q = 0
    geoms = _geoms(joint)

    def radial(p: np.ndarray) -> np.ndarray:
        r = p - anchor
        return r - axis * float(r @ axis)

    edge = max(geoms, key=lambda g: float(np.linalg.norm(radial(g[0]))))[0]
    lo = min(g[0][2] - g[1][2] for g in geoms)
    hi = max(g[0][2] + g[1][2] for g in geoms)
    z = lo + 0.35 * (hi - lo)
    r_edge = radial(edge)
    radius = float(np.linalg.norm(r_edge)) * 0.85
    tangent = closing_sign * np.cross(axis, r_edge / np.linalg.norm(r_edge))
    start = anchor + r_edge / np.linalg.norm(r_edge) * radius - tangent * 0.07
    start[2] = z
    yield from expert._rise_to(max(expert.hand.position[2], hi + 0.05), CLOSE)
    yield from expert._move(np.array([start[0], start[1], hi + 0.05]), CLOSE, tol=0.015)
    yield from expert._move(start, CLOSE, tol=0.01, max_step=0.015)
    for _ in range(120):
        if expert.holds(("close", str(joint["fixture"]))):
            break
        p = expert.hand.position
        r = radial(p)
        n = float(np.linalg.norm(r))
        u = r / max(n, 1e-9)
        t = closing_sign * np.cross(axis, u)
        target = anchor + u * radius + t * 0.04
        target[2] = z
        yield servo(expert.hand, target, CLOSE, max_step=0.015)
    yield from expert._move(expert.hand.position + UP * 0.10, OPEN, tol=0.02, max_steps=30)
    return True


def _turn_knob(expert: LiberoExpert, name: str, on: bool) -> Skill:
    joint = expert._facts["joints"][name]
    anchor = np.asarray(joint["anchor"], dtype=float)
    geoms = _geoms(joint)
    ridge_centre, ridge_half = max(geoms, key=lambda g: float(g[0][2] + g[1][2]))
    base_top = min(g[0][2] + g[1][2] for g in geoms)
    raised = [g for g in geoms if g[0][2] + g[1][2] > base_top + 0.02]
    pointer = max(raised, key=lambda g: float(np.linalg.norm((g[0] - anchor)[:2])))[0]
    along = (pointer - anchor) * np.array([1.0, 1.0, 0.0])
    along /= max(np.linalg.norm(along), 1e-9)
    across = np.cross(UP, along)
    grip_z = float(ridge_centre[2] + ridge_half[2]) - 0.018
    offset = np.array([*(ridge_centre - anchor)[:2], 0.0])
    # LIBERO's FlatStove: on at q >= 0.5 (of 0..2.1), off only below 0
    goal = 1.2 if on else -0.004
    spin = float(np.sign(joint["axis"][2]))  # q about the joint's axis, turned about world z
    q0 = _q(expert, name)
    point = np.array([*(anchor + offset)[:2], grip_z])
    yield from expert._rise_to(max(expert.hand.position[2], grip_z + 0.10), OPEN)
    yield from expert._move(point + UP * 0.08, OPEN, across, tol=0.01)
    yield from expert._move(point, OPEN, across, tol=0.006, max_step=0.01)
    yield from expert._grip(CLOSE, 10, across)
    for _ in range(80):
        q = _q(expert, name)
        if (q >= goal) if on else (q <= goal):
            break
        # lead the knob by at most 0.15 rad: where its ridge should be a moment from now
        turn = spin * (q - q0 + float(np.clip(goal - q, -0.15, 0.15)))
        c, s = np.cos(turn), np.sin(turn)
        rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        target = anchor + rot @ offset
        target[2] = grip_z
        yield servo(expert.hand, target, CLOSE, rot @ across, max_step=0.01, max_turn=0.12)
    yield from expert._grip(OPEN, 8)
    yield from expert._move(expert.hand.position + UP * 0.10, OPEN, tol=0.02, max_steps=30)
    return True


def drawer_drop(expert: LiberoExpert, region: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Where to lower `name` into an open drawer: inside the region, along the opening between
    the cabinet's face and the drawer's front with the body's own half width clear of both;
    and the fingers' closing axis across the drawer, so the hand does not reach over the
    cabinet."""
    facts = expert._facts
    r = facts["regions"][region]
    joint = r["joints"][0]
    out = _opening(expert, joint)
    centre = np.asarray(r["position"], dtype=float)
    half_r = float(np.abs(np.asarray(r["half_extent"])) @ np.abs(out))
    front = float((_handle(expert, joint) - centre) @ out)
    face = front - abs(_q(expert, joint))  # the drawer front's place when closed
    lo, hi = (np.asarray(b, dtype=float) for b in facts["objects"][name]["box"])
    half = float(((hi - lo) / 2.0) @ np.abs(out))
    # between the cabinet's face and the region's (the drawer's inside) front
    s_min, s_max = face + half + 0.003, half_r - half - 0.003
    s = (s_min + s_max) / 2.0 if s_min <= s_max else (face + half_r) / 2.0
    return (centre + out * s)[:2], np.cross(UP, out)


def needs_full_opening(expert: LiberoExpert, region: str, name: str) -> str | None:
    """The drawer joint to pull fully open before `name` goes into `region`, when the part
    of the drawer out of the cabinet is narrower than the body (with a few mm each side)."""
    facts = expert._facts
    r = facts["regions"].get(region)
    if r is None or not r["joints"]:
        return None
    joint = r["joints"][0]
    out = _opening(expert, joint)
    lo, hi = (np.asarray(b, dtype=float) for b in facts["objects"][name]["box"])
    width = float((hi - lo) @ np.abs(out))
    full = abs(_full(expert, facts["joints"][joint]))
    q = abs(_q(expert, joint))
    centre = np.asarray(r["position"], dtype=float)
    half_r = float(np.abs(np.asarray(r["half_extent"])) @ np.abs(out))
    face = float((_handle(expert, joint) - centre) @ out) - q
    return joint if q < full * 0.97 and width + 0.01 > half_r - face else None


def pull_open(expert: LiberoExpert, joint: str) -> Skill:
    return (yield from _pull_drawer(expert, joint))
