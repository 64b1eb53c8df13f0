"""LIBERO categories no shipped scene has, built from primitive geometry sized after LIBERO.

Sizes are read off the collision boxes of LIBERO's assets (Lifelong-Robot-Learning/LIBERO,
`libero/libero/assets/`): the ramekin (`stable_scanned_objects/glazed_rim_porcelain_ramekin/
glazed_rim_porcelain_ramekin.xml`: walls at r ~ 0.040, 0.042 tall), the wine rack
(`turbosquid_objects/wine_rack/wine_rack.xml`: a stand ~0.19 x 0.13, its `top_region` site
0.22 up), the wooden cabinet (`articulated_objects/wooden_cabinet.xml`: 0.24 wide, 0.19 deep,
0.22 tall, three drawers sliding 0.16 with `top_region`/`middle_region`/`bottom_region` sites
and a `top_side` site on its top), the two-layer shelf (`turbosquid_objects/
wooden_two_layer_shelf/wooden_two_layer_shelf.xml`: 0.33 wide, 0.19 deep, 0.21 tall, open at
the front, a board a third of the way up between `bottom_region` and `top_region`, a
`top_side`). Frames are ours: a fixture's front faces -x (the robot).
A region on top of a fixture is a box standing on its top face (the floor of `on` there).
"""

from __future__ import annotations

import math
from typing import Any

from mango.sim.parts import WALL, drawer_half, level_slot, shelf_layer
from mango.sim.scene import EntitySpec

TOP_REGION_HEIGHT = 0.05  # a region on a fixture's top face: that face and 5 cm above it

# category -> the entity fields a scene needs besides id, position, jitter, description
BUILT: dict[str, dict[str, Any]] = {
    "glazed_rim_porcelain_ramekin": {
        "shape": "bowl", "size": [0.082, 0.082, 0.042], "mass": 0.1,
        "color": [0.92, 0.9, 0.84, 1]},
    "wine_rack": {
        "kind": "fixture", "shape": "box", "size": [0.19, 0.13, 0.2], "mass": 3.0,
        "color": [0.45, 0.25, 0.15, 1]},
    "wooden_cabinet": {
        "kind": "fixture", "shape": "drawer_cabinet", "size": [0.19, 0.24, 0.22],
        "color": [0.4, 0.26, 0.16, 1], "drawers": 3,
        # LIBERO's drawers: range (-0.16, 0.01), open below -0.14 (articulated_objects.py)
        "joint": {"id": "wooden_cabinet_1_bottom_region", "q_open": -0.14, "q_closed": 0.0,
                  "q_init": 0.0, "range": [-0.16, 0.0]}},
    "wooden_two_layer_shelf": {
        "kind": "fixture", "shape": "shelf", "size": [0.19, 0.33, 0.21], "mass": 3.0,
        "color": [0.4, 0.26, 0.16, 1]},
}


def top_region(size: list[float]) -> dict[str, Any]:
    """A region standing on the top face of an entity of `size` (its `top_side`)."""
    sx, sy, sz = size
    return {"part": "base", "offset": [0.0, 0.0, round(sz / 2 + TOP_REGION_HEIGHT / 2, 4)],
            "size": [round(sx * 0.9, 4), round(sy * 0.9, 4), TOP_REGION_HEIGHT]}


# a cabinet's drawer regions by level, bottom first (LIBERO's site names)
LEVELS: dict[int, tuple[str, ...]] = {
    1: ("bottom_region",),
    2: ("bottom_region", "top_region"),
    3: ("bottom_region", "middle_region", "top_region"),
}


def drawer_region(cabinet: EntitySpec, level: int) -> dict[str, Any]:
    """The region inside a cabinet's level: on the sliding drawer (moving with it) or in a
    fixed level's compartment."""
    dx, dy, _ = drawer_half(cabinet)
    zc, half = level_slot(cabinet, level)
    size = [round(2 * dx - 2 * WALL, 4), round(2 * dy - 2 * WALL, 4), round(2 * half, 4)]
    if level == cabinet.drawer:
        return {"part": "drawer", "offset": [0.0, 0.0, 0.0], "size": size}
    return {"part": "base", "offset": [0.0, 0.0, round(zc, 4)], "size": size}


# Where a built fixture's front (our -x) points in LIBERO's asset frame, as a yaw: the
# wooden cabinet's handles stand out on its -y side, so a LIBERO yaw psi (`:yaw_rotation`)
# is our yaw psi + 90 degrees (psi = pi: the drawers open towards +y).
FRONT_YAW_DEG: dict[str, float] = {"wooden_cabinet": 90.0, "wooden_two_layer_shelf": 90.0}

# The centre of a built fixture's box in LIBERO's asset frame, where that is not the asset's
# origin (the point LIBERO's sampler puts at an `:init` range's centre): the cabinet's and
# the shelf's carcasses stand 1.6 cm behind it, their drawer fronts / open side at asset
# y = -0.078 and backs at +0.112 (the centre of their `top_side` sites, which span the top).
ASSET_CENTRE: dict[str, tuple[float, float]] = {
    "wooden_cabinet": (0.0035, 0.0157),
    "wooden_two_layer_shelf": (0.005, 0.0157),
}


def origin_shift(category: str, yaw_deg: float) -> tuple[float, float]:
    """World xy from LIBERO's placed origin of a `category` fixture to its box centre, with
    the box turned to our `yaw_deg`: (0, 0) when the asset is centred on its origin."""
    cx, cy = ASSET_CENTRE.get(category, (0.0, 0.0))
    # LIBERO's asset frame is ours turned by FRONT_YAW_DEG: world yaw = ours - that turn
    a = math.radians(yaw_deg - FRONT_YAW_DEG.get(category, 0.0))
    return (round(cx * math.cos(a) - cy * math.sin(a), 4),
            round(cx * math.sin(a) + cy * math.cos(a), 4))


def shelf_region(shelf: EntitySpec, layer: int) -> dict[str, Any]:
    """The region inside a shelf's bottom (0) or top (1) layer."""
    zc, h = shelf_layer(shelf, layer)
    sx, sy, _ = shelf.size
    return {"part": "base", "offset": [0.0, 0.0, round(zc, 4)],
            "size": [round(sx - 2 * WALL, 4), round(sy - 2 * WALL, 4), round(h, 4)]}


SHELF_LAYERS = ("bottom_region", "top_region")

# (category, region name) -> region fields (part, offset, size); a drawer's comes from
# `mango.sim.parts` once the entity is known (see `drawer_region`)
BUILT_REGIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("wine_rack", "top_region"): top_region(BUILT["wine_rack"]["size"]),
}
