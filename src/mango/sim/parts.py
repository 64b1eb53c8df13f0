"""Where the moving part of an articulated fixture is, for a joint value, and back.

One source for the builder (which places the drawer, door and knob bodies and their joints),
the scripted expert (which reaches for handles) and the world-state estimator (which reads a
joint value off a marker on the part): entity_T_part(q) = rest · motion(q), with the motion a
slide along the joint axis or a turn about it.
"""

from __future__ import annotations

import math

import numpy as np

from mango.sim.scene import ARTICULATED, EntitySpec

WALL = 0.008  # wall thickness of containers and fixtures
KNOB_HALF = 0.025  # half the stove knob's height
DRAWER_FRAC = 0.45  # bottom drawer height / cabinet height
HANDLE_OUT = 0.024  # how far a drawer handle's front stands out of the drawer front

# part -> (joint type, axis in the part frame): the builder's joints
PART_JOINT: dict[str, tuple[str, tuple[float, float, float]]] = {
    "drawer": ("slide", (1.0, 0.0, 0.0)),  # q < 0 pulls it toward the robot (-x)
    "door": ("hinge", (0.0, 0.0, -1.0)),  # q = 0 closed, q < 0 open (LIBERO)
    "knob": ("hinge", (0.0, 0.0, 1.0)),
}


def container_wall(shape: str) -> float:
    """Wall (and floor) thickness of an open container: a bowl is thicker-walled."""
    return 0.008 if shape == "bowl" else 0.006


# A plate is a dish, as LIBERO's is (its rim rises 1.6 cm over its bottom): a thin round
# base, its floor clear of the table (the tabletop perception sees it as the plate's), and a
# steep rim from the floor's edge up to the plate's edge, PLATE_RUN further out, of
# PLATE_RIM_SEGMENTS straight pieces. Fingers set down on the floor drag it by the rim: the
# steeper the rim, the less a push on it presses the plate into the table.
PLATE_BASE = 0.009  # base thickness
PLATE_RIM = 0.004  # rim thickness
PLATE_RUN = 0.002  # how far in from the plate's edge the rim reaches down to the floor
PLATE_RIM_SEGMENTS = 16


def plate_well(e: EntitySpec) -> tuple[float, float]:
    """(radius, height above the plate's bottom) of a plate's flat floor inside its rim: the
    base is PLATE_BASE thick, or half the plate's height when that is less."""
    return (min(e.size[0], e.size[1]) / 2 - PLATE_RUN, min(PLATE_BASE, e.size[2] / 2))


def plate_rim_radius(e: EntitySpec, height: float) -> float:
    """How far from a plate's centre its rim's inner face is `height` over its floor."""
    floor_r, base = plate_well(e)
    rise = e.size[2] - base
    return floor_r + PLATE_RUN * min(max(height / rise, 0.0), 1.0) if rise > 0 else floor_r


def knob_local(e: EntitySpec) -> tuple[float, float, float]:
    """Stove knob centre in the stove frame (front-right corner of the top)."""
    sx, sy, sz = e.size
    return (-sx / 2 + 0.045, -sy / 2 + 0.045, sz / 2 + KNOB_HALF)


def level_slot(e: EntitySpec, level: int) -> tuple[float, float]:
    """(z centre, half height) of a drawer cabinet's level in its frame: one level is a
    bottom drawer DRAWER_FRAC of the height (under a closed front); n levels share the
    height between the floor and the top, a shelf between each two."""
    _, _, sz = e.size
    if e.drawers == 1:
        dz = sz * DRAWER_FRAC / 2
        return (-sz / 2 + WALL + dz + 0.002, dz)
    hs = (sz - 2 * WALL - (e.drawers - 1) * WALL) / e.drawers
    z0 = -sz / 2 + WALL + level * (hs + WALL)
    return (z0 + hs / 2, hs / 2 - 0.003)


def drawer_local(e: EntitySpec) -> tuple[float, float, float]:
    """The sliding drawer's frame origin in the cabinet frame, closed (q = 0)."""
    return (0.0, 0.0, level_slot(e, e.drawer)[0])


def drawer_half(e: EntitySpec) -> tuple[float, float, float]:
    """Half extents of the sliding drawer's box in its part frame (its front faces -x)."""
    sx, sy, _ = e.size
    return (sx / 2 - WALL - 0.002, sy / 2 - WALL - 0.003, level_slot(e, e.drawer)[1])


def door_panel(e: EntitySpec) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Microwave door panel in its part frame: centre and half extents. Its outer face is -x;
    a gap below it clears the table (a door rubbing on it would hardly turn)."""
    _, sy, sz = e.size
    return (0.0, sy / 2, 0.004), (WALL / 2, sy / 2, sz / 2 - 0.006)


def drawer_handle_local(e: EntitySpec, q: float) -> tuple[float, float, float]:
    """Front of the bottom drawer's handle in the cabinet frame, for drawer joint value q."""
    sx, _, _ = e.size
    return (-sx / 2 + WALL + 0.002 - HANDLE_OUT + q, 0.0, drawer_local(e)[2])


def door_hinge_local(e: EntitySpec) -> tuple[float, float, float]:
    """Microwave door hinge (axis -z) in the microwave frame; the closed door spans +y from it.

    At joint value q the door points along (sin q, cos q): q = 0 closed, q < 0 open (LIBERO).
    """
    sx, sy, _ = e.size
    return (-sx / 2 - WALL / 2 - 0.001, -sy / 2, 0.0)


def part_name(e: EntitySpec) -> str:
    part = ARTICULATED.get(e.shape)
    if part is None:
        raise ValueError(f"entity '{e.id}' (shape {e.shape}) has no moving part")
    return part


def part_rest(e: EntitySpec) -> tuple[float, float, float]:
    """entity -> part frame origin at q = 0 (the part frame is not turned at rest)."""
    return {"drawer": drawer_local, "door": door_hinge_local, "knob": knob_local}[
        part_name(e)](e)


def part_transform(e: EntitySpec, q: float) -> np.ndarray:
    """entity_T_part (4x4) at joint value q."""
    kind, axis = PART_JOINT[part_name(e)]
    t = np.eye(4)
    t[:3, 3] = part_rest(e)
    a = np.asarray(axis)
    if kind == "slide":
        t[:3, 3] += q * a
    else:
        t[:3, :3] = _axis_angle(a, q)
    return t


def joint_value(e: EntitySpec, entity_t_part: np.ndarray) -> float:
    """The joint value that puts the part where `entity_t_part` (4x4, e.g. measured) has it:
    the slide along the axis, or the turn about it (wrapped to (-pi, pi])."""
    kind, axis = PART_JOINT[part_name(e)]
    a = np.asarray(axis)
    if kind == "slide":
        return float((entity_t_part[:3, 3] - np.asarray(part_rest(e))) @ a)
    r = entity_t_part[:3, :3]
    # the turn about `a`: project a vector perpendicular to it
    ref = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = ref - (ref @ a) * a
    u /= np.linalg.norm(u)
    v = r @ u
    return float(math.atan2(np.cross(u, v) @ a, u @ v))


def _axis_angle(a: np.ndarray, angle: float) -> np.ndarray:
    x, y, z = a / np.linalg.norm(a)
    c, s = math.cos(angle), math.sin(angle)
    k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + s * k + (1 - c) * (k @ k)


SHELF_BOARD_FRAC = 1 / 3  # a two-layer shelf's board: a third of the way up (LIBERO's)


def shelf_layer(e: EntitySpec, layer: int) -> tuple[float, float]:
    """(z centre, height) inside a shelf's bottom (0) or top (1) layer, in its frame."""
    _, _, sz = e.size
    board = -sz / 2 + sz * SHELF_BOARD_FRAC
    lo, hi = (-sz / 2 + WALL, board - WALL / 2) if layer == 0 else (board + WALL / 2,
                                                                     sz / 2 - WALL)
    return ((lo + hi) / 2, hi - lo)
