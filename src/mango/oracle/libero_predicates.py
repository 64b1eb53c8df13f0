"""LIBERO's own predicate semantics over a spec §3 world state (the optional `libero` library).

The default library judges `open`, `in`, `on` by this project's rules (openness u >= 1, a
box's centre in a region, a bottom resting on a top). A user comparing with LIBERO's success
rate wants LIBERO's rules instead, which these mirror, read from Lifelong-Robot-Learning/LIBERO:

- `libero_open` / `libero_close`: `envs/objects/articulated_objects.py`, per fixture category,
  on LIBERO's joint position q (0 = closed for all of them). `envs/object_states/
  base_object_states.py`: a fixture is open when ANY of its joints is open and closed when ALL
  are closed. Our joints say q, q_open and q_closed in the sim's own convention, so q is
  rescaled onto LIBERO's: `q_libero = u * FULL_OPEN[category]` with u the openness.
- `libero_turnon` / `libero_turnoff`: `FlatStove.turn_on` (q >= 0.5) / `turn_off` (q < 0.0) on
  the knob's joint when the state has one (`flat_stove_1_knob`), else the device's `on` flag.
- `libero_in`: `predicates/base_predicates.py` `In` = container touches the object and holds
  its centre; a site's box (`envs/objects/site_object.py` `in_box`: strictly inside
  `|R @ size|` about the site, R its rotation, the lower z bound lowered by 0.01 m; sites
  "touch" everything).
- `libero_up`: `Up(a)` = a's reference point (body origin) at z >= 1.0 m, in the world.
- `libero_on`: `On(a, b)` = `b.check_ontop(a)`: for a site, `SiteObject.under` (with
  d = R @ (a's centre - b's centre), R the site's rotation as LIBERO multiplies it, not its
  transpose: d_z between the half height - 0.005 m and the half height + 0.10 m, |d_x|, |d_y|
  within the half sizes; so a tilted site, the wine rack's sloping shelf, is read in its own
  frame) and,
  for a site of an object or fixture, that entity touching a; for an object, b's centre not
  above a's, contact, and the centres' xy distance under 0.03 m.
"""

from __future__ import annotations

import math
import re

import numpy as np

from mango.geometry import quat_to_mat
from mango.oracle.predicates import EvaluationError, StateView, p_incontact

# LIBERO's fully open joint position per category (the far end of `default_open_ranges`)
FULL_OPEN: dict[str, float] = {
    "microwave": -2.094,
    "white_cabinet": -0.16,
    "wooden_cabinet": -0.16,
    "short_cabinet": 0.16,
    "short_fridge": 2.7,
    "flat_stove": 2.1,  # the knob: `default_turnon_ranges` [0.5, 2.1]
}
# (is_open, is_close) on LIBERO's q, as articulated_objects.py compares them
OPEN_CLOSE = {
    "microwave": (lambda q: q < -1.3, lambda q: q > -0.005),
    "white_cabinet": (lambda q: q < -0.14, lambda q: q > 0.0),
    "wooden_cabinet": (lambda q: q < -0.14, lambda q: q > 0.0),
    "short_cabinet": (lambda q: q > 0.10, lambda q: q < 0.0),
    "short_fridge": (lambda q: q > 2.0, lambda q: q < 0.0),
}
STOVE_ON_Q = 0.5  # FlatStove.turn_on: q >= min(default_turnon_ranges)
STOVE_OFF_Q = 0.0  # FlatStove.turn_off: q < max(default_turnoff_ranges)
SITE_ON_BELOW = 0.005  # SiteObject.under: total_size[2] - 0.005 < dz
SITE_ON_ABOVE = 0.10  # ... dz < total_size[2] + other_height (0.10)
SITE_IN_Z_RELAX = 0.01  # SiteObject.in_box: lb[2] -= 0.01
OBJECT_ON_XY = 0.03  # ObjectState.check_ontop: xy distance < 0.03
UP_Z = 1.0  # base_predicates.Up: get_geom_state()["pos"][2] >= 1.0

# `<category>_<n>` then an optional part name without digits (`_top_region`, `_knob`); the
# lazy category backs off past digits inside it (`chefmate_8_frypan_1`).
_INSTANCE = re.compile(r"^(.*?)_\d+(?:_[a-z_]+)?$")


def category_of(name: str) -> str | None:
    """LIBERO's category of an instance id or of one of its parts: `white_cabinet_1_top_region`
    -> `white_cabinet`, `microwave_1` -> `microwave`."""
    m = _INSTANCE.match(name)
    return m.group(1) if m else None


def _libero_qs(v: StateView, name: str) -> tuple[str, list[float]]:
    category = category_of(name)
    if category not in FULL_OPEN:
        raise EvaluationError(
            f"'{name}' is not of a LIBERO articulated category "
            f"({', '.join(sorted(FULL_OPEN))})"
        )
    full = FULL_OPEN[category]
    return category, [u * full for u, _, _ in v.joints_for(name)]


def p_libero_open(v: StateView, j: str) -> bool:
    category, qs = _libero_qs(v, j)
    if category not in OPEN_CLOSE:
        raise EvaluationError(f"LIBERO does not open a {category}")
    is_open = OPEN_CLOSE[category][0]
    return any(is_open(q) for q in qs)


def p_libero_close(v: StateView, j: str) -> bool:
    category, qs = _libero_qs(v, j)
    if category not in OPEN_CLOSE:
        raise EvaluationError(f"LIBERO does not close a {category}")
    is_close = OPEN_CLOSE[category][1]
    return all(is_close(q) for q in qs)


def _stove_qs(v: StateView, d: str) -> list[float] | None:
    joints = v.state.joints
    if d not in joints and not any(k.startswith(d + "_") for k in joints):
        return None
    return _libero_qs(v, d)[1]


def p_libero_turnon(v: StateView, d: str) -> bool:
    qs = _stove_qs(v, d)
    if qs is None:
        return _device_on(v, d)
    return any(q >= STOVE_ON_Q for q in qs)


def p_libero_turnoff(v: StateView, d: str) -> bool:
    qs = _stove_qs(v, d)
    if qs is None:
        return not _device_on(v, d)
    return all(q < STOVE_OFF_Q for q in qs)


def _device_on(v: StateView, d: str) -> bool:
    dev = v.state.devices.get(d)
    if dev is None:
        raise EvaluationError(f"unknown device '{d}' (no joint and no device entry)")
    return dev.on


def _centre(v: StateView, name: str) -> tuple[float, float, float]:
    ent = v.objects.get(name)
    if ent is None:
        raise EvaluationError(f"unknown entity '{name}' (not in the state's objects)")
    return ent.position


def _site(v: StateView, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A region's half sizes in its own frame and its rotation (site frame -> world)."""
    ent = v.objects[name]
    half = np.asarray(ent.size or (0.0, 0.0, 0.0), float) / 2
    return half, quat_to_mat(ent.orientation or (1.0, 0.0, 0.0, 0.0))


def p_libero_in(v: StateView, a: str, r: str) -> bool:
    x, y, z = _centre(v, a)
    if v.objects[r].kind == "region":  # a site touches everything (its check_contact)
        half, rot = _site(v, r)
        cx, cy, cz = v.objects[r].position
        ext = np.abs(rot @ half)
        return (cx - ext[0] < x < cx + ext[0] and cy - ext[1] < y < cy + ext[1]
                and cz - ext[2] - SITE_IN_Z_RELAX < z < cz + ext[2])
    b = v.box(r)
    inside = b[0] < x < b[3] and b[1] < y < b[4] and b[2] - SITE_IN_Z_RELAX < z < b[5]
    return inside and p_incontact(v, r, a)


def p_libero_on(v: StateView, a: str, b: str) -> bool:
    ax, ay, az = _centre(v, a)
    bx, by, bz = _centre(v, b)
    ent = v.objects[b]
    if ent.kind == "region":
        (hx, hy, hz), rot = _site(v, b)
        dx, dy, dz = rot @ np.array((ax - bx, ay - by, az - bz))
        over = hz - SITE_ON_BELOW < dz < hz + SITE_ON_ABOVE
        if not (over and abs(dx) < hx and abs(dy) < hy):
            return False
        parent = ent.parent
        if parent is None or parent not in v.objects or v.objects[parent].kind == "surface":
            return True
        return p_incontact(v, parent, a)
    return bz <= az and p_incontact(v, b, a) and math.hypot(ax - bx, ay - by) < OBJECT_ON_XY


def p_libero_up(v: StateView, a: str) -> bool:
    return _centre(v, a)[2] >= UP_Z


# name -> (implementation, argument names, argument kinds, description)
LIBERO_IMPLEMENTATIONS = {
    "libero_in": (p_libero_in, ("target_object", "container_object"),
                  (("object",), ("region", "object", "fixture")),
                  "LIBERO's In: the container touches the object and holds its centre."),
    "libero_on": (p_libero_on, ("target_object", "support_surface"),
                  (("object",), ("region", "object", "fixture", "surface", "device")),
                  "LIBERO's On: above a site within 0.10 m, or on an object within 3 cm."),
    "libero_up": (p_libero_up, ("target_object",), (("object",),),
                  "LIBERO's Up: the object's origin at least 1.0 m above the world floor."),
    "libero_open": (p_libero_open, ("joint_or_fixture",), (("joint", "fixture", "region"),),
                    "LIBERO's Open: any joint past its category's open threshold."),
    "libero_close": (p_libero_close, ("joint_or_fixture",), (("joint", "fixture", "region"),),
                     "LIBERO's Close: every joint past its category's closed threshold."),
    "libero_turnon": (p_libero_turnon, ("device",), (("device", "fixture"),),
                      "LIBERO's TurnOn: the stove's knob at q >= 0.5 rad."),
    "libero_turnoff": (p_libero_turnoff, ("device",), (("device", "fixture"),),
                       "LIBERO's TurnOff: the stove's knob at q < 0."),
}
