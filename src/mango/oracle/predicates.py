"""Default predicate implementations over world-state geometry (spec §3).

Every predicate reads one `StateView`, a per-state cache of world-frame boxes, contact sets and
support heights, so that a tracker evaluating dozens of atoms per state computes each lookup
once. All distances are metres; the thresholds live in `Thresholds` and can be changed per
function library (the `"thresholds"` object of its JSON).

Definitions (a box is the entity's `size` box centred on `position`, turned by `orientation`
into a world-frame axis-aligned box; an entity without `size` is a point):

- `in(a, r)`: a's centre lies inside r's box; the lower z bound is relaxed by `in_z_relax`
  (LIBERO does the same) and the xy bounds are grown by `in_xy_margin`.
- `on(a, b)`: a's centre is over b's xy extent (grown by `on_xy_margin`) and a's bottom is
  within `on_z_tol` of b's top. For a region b, a's bottom must lie within the region's z
  extent (± `on_z_tol`), since a region marks a place on its parent rather than a solid.
- `up(a)`: a's bottom is at least `up_height` above the surface supporting it: the highest
  top of a solid under a's centre that is not above a, the floor of a container or region
  a is inside, else `ground_z`. Measuring against the ground instead misfires as soon as
  the table is higher than the threshold (a LIBERO pitfall).
- `grasped(a)`: both fingers touch a; or a gripper part touches a while the gripper is
  closed; or, when the state reports no contacts at all, the hand centre
  (`robot_hand`) is within `grasp_hand_margin` of a's box while the gripper is closed.
- `incontact(a, b)`: the pair is in `contacts` (`robot_gripper` stands for any gripper
  part). When a state gives no `contacts` field at all, boxes closer than `contact_gap`.
- `open(j)` / `close(j)`: openness u of joint j (or of a fixture's joint of the same id)
  `u >= open_frac` / `u <= closed_frac` (per-joint `open_frac`/`closed_frac` win). A fixture
  with several joints named `<fixture>_*` is open when any is, closed when all are.
- `turnon(d)` / `turnoff(d)`: `devices[d].on`.
- `left_of(a, b)` / `right_of(a, b)`: a's centre is more than `side_margin` further along
  (against) `left_axis` than b's; the default axis +y is the robot's left in LIBERO's frame.
- `near(a, b)`: the gap between the two boxes is at most `near_distance`; use `robot_hand`
  (the hand centre, not the wrist) for "near the hand".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields

from mango.errors import InputError
from mango.geometry import Box, box_gap, rotated_half_extents
from mango.oracle.world_state import DEFAULT_CLOSED_FRAC, ROBOT_PARTS, WorldState

GRIPPER_PARTS = frozenset({"robot_gripper", "robot_left_finger", "robot_right_finger"})
_ROBOT = frozenset(ROBOT_PARTS)



class EvaluationError(InputError):
    """An expression could not be evaluated on a state (unknown entity, missing joint...)."""

    key: str | None = None  # the problem without when it happened: what to report once


@dataclass(frozen=True)
class Thresholds:
    """Tunable limits of the default predicates (metres unless noted)."""

    in_z_relax: float = 0.01  # lower bound of a container/region box relaxed by this much
    in_xy_margin: float = 0.0  # xy bounds of the container grown by this much
    on_xy_margin: float = 0.01  # a's centre may overhang b's xy extent by this much
    on_z_tol: float = 0.02  # |a.bottom - b.top| allowed for `on`
    up_height: float = 0.03  # lift of a's bottom above its support for `up`
    support_tol: float = 0.01  # a solid counts as a support if its top is below a.bottom + this
    ground_z: float = 0.0  # the floor, used when nothing supports an object
    grasp_hand_margin: float = 0.02  # hand centre within this of the box (no contact data)
    contact_gap: float = 0.002  # box gap counted as contact when a state has no contacts
    open_frac: float = 1.0  # openness u at or above which a joint is open (spec: u >= 1)
    closed_frac: float = DEFAULT_CLOSED_FRAC  # openness at or below which it is closed
    near_distance: float = 0.05  # box-to-box gap for `near`
    side_margin: float = 0.01  # left_of/right_of: centres must differ by more than this
    left_axis: tuple[float, float, float] = (0.0, 1.0, 0.0)  # world direction of "left"

    @classmethod
    def from_json(cls, data: object, file: str | None = None) -> Thresholds:
        """Build from a JSON object; unknown keys and non-numbers name the field."""
        if not isinstance(data, dict):
            raise InputError("thresholds must be a JSON object", file=file, field="thresholds")
        known = {f.name: f for f in fields(cls)}
        values: dict[str, object] = {}
        for key, value in data.items():
            where = f"thresholds.{key}"
            if key not in known:
                raise InputError(
                    f"unknown threshold (known: {', '.join(known)})", file=file, field=where
                )
            if key == "left_axis":
                ok = (
                    isinstance(value, list | tuple)
                    and len(value) == 3
                    and all(_is_number(v) for v in value)
                    and any(v != 0 for v in value)
                )
                if not ok:
                    raise InputError("must be a non-zero [x, y, z] vector", file=file, field=where)
                values[key] = tuple(float(v) for v in value)
            else:
                if not _is_number(value):
                    raise InputError("must be a finite number", file=file, field=where)
                if key != "ground_z" and value < 0:
                    raise InputError("must not be negative", file=file, field=where)
                values[key] = float(value)
        return cls(**values)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, object]:
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
            for f in fields(self)
        }


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


class StateView:
    """One world state plus lazily filled caches; built once per state, shared by all atoms."""

    __slots__ = (
        "_boxes",
        "_extents",
        "_levels",
        "_touch",
        "contacts_given",
        "memo",
        "objects",
        "state",
        "th",
    )

    def __init__(
        self,
        state: WorldState,
        thresholds: Thresholds,
        extents_cache: dict[tuple, tuple[float, float, float]] | None = None,
    ) -> None:
        """`extents_cache` (owned by a tracker) keeps rotated box extents across states:
        most objects keep their orientation from one state to the next."""
        self.state = state
        self._extents = extents_cache if extents_cache is not None else {}
        self.objects = state.objects
        self.th = thresholds
        # Atom values of this state, keyed by whitespace-free atom; facts are preloaded so
        # they win over geometry, and computed atoms are stored so each is computed once.
        self.memo: dict[str, bool] = _fact_memo(state.facts) if state.facts else {}
        self._boxes: dict[str, Box] = {}
        self._levels: dict[str, float] = {}
        self._touch: dict[str, set[str]] | None = None
        self.contacts_given = bool(state.contacts) or "contacts" in state.model_fields_set

    # ------------------------------------------------------------------------- geometry

    def box(self, name: str) -> Box:
        b = self._boxes.get(name)
        if b is None:
            ent = self.objects.get(name)
            if ent is None:
                raise EvaluationError(f"unknown entity '{name}' (not in the state's objects)")
            x, y, z = ent.position
            if ent.size is None:
                b = (x, y, z, x, y, z)
            else:
                hx, hy, hz = ent.size[0] / 2, ent.size[1] / 2, ent.size[2] / 2
                q = ent.orientation
                if q is not None and (q[0] < 0.9999999 and q[0] > -0.9999999):
                    key = (q, ent.size)
                    ext = self._extents.get(key)
                    if ext is None:
                        if len(self._extents) > 100_000:
                            self._extents.clear()
                        ext = self._extents[key] = rotated_half_extents(q, hx, hy, hz)
                    hx, hy, hz = ext
                b = (x - hx, y - hy, z - hz, x + hx, y + hy, z + hz)
            self._boxes[name] = b
        return b

    def touching(self, name: str) -> set[str]:
        """Names in contact with `name`; a finger or the hand also counts as robot_gripper."""
        touch = self._touch
        if touch is None:
            touch = {}
            for a, b in self.state.contacts:
                touch.setdefault(a, set()).add(b)
                touch.setdefault(b, set()).add(a)
                if b in GRIPPER_PARTS or b == "robot_hand":
                    touch[a].add("robot_gripper")
                    touch.setdefault("robot_gripper", set()).add(a)
                if a in GRIPPER_PARTS or a == "robot_hand":
                    touch[b].add("robot_gripper")
                    touch.setdefault("robot_gripper", set()).add(b)
            self._touch = touch
        return touch.get(name, _EMPTY)

    def require(self, name: str) -> None:
        """Raise unless `name` is an entity of this state (robot parts always exist)."""
        if name not in self.objects and name not in _ROBOT:
            raise EvaluationError(f"unknown entity '{name}' (not in the state's objects)")

    def support_level(self, name: str) -> float:
        """Height of the surface carrying `name` (see `up`)."""
        level = self._levels.get(name)
        if level is not None:
            return level
        ent = self.objects.get(name)
        if ent is None:
            raise EvaluationError(f"unknown entity '{name}' (not in the state's objects)")
        cx, cy, cz = ent.position
        az0 = self.box(name)[2]
        tol = self.th.support_tol
        level = self.th.ground_z
        limit = az0 + tol
        boxes, box = self._boxes, self.box
        for other, oent in self.objects.items():
            kind = oent.kind
            if kind == "robot" or other == name:
                continue
            b = boxes.get(other) or box(other)
            if not (b[0] <= cx <= b[3] and b[1] <= cy <= b[4]):
                continue
            z0, z1 = b[2], b[5]
            if kind == "region":
                # Inside a region volume (a drawer, a basket's interior): its floor carries a.
                if z0 <= limit and cz <= z1 and z0 > level:
                    level = z0
            elif z1 <= limit:
                if z1 > level:
                    level = z1
            elif z0 <= limit and z0 > level and (kind == "object" or kind == "fixture"):
                level = z0  # inside an open container: its bottom
        self._levels[name] = level
        return level

    def joints_for(self, name: str) -> list[tuple[float, float, float]]:
        """(openness, open_frac, closed_frac) of the joint `name` or of fixture `name`'s joints."""
        joints = self.state.joints
        js = (
            [joints[name]]
            if name in joints
            else [j for k, j in joints.items() if k.startswith(name + "_")]
        )
        if not js:
            raise EvaluationError(f"unknown joint '{name}' (not in the state's joints)")
        th = self.th
        return [
            (
                j.openness,
                th.open_frac if j.open_frac is None else j.open_frac,
                th.closed_frac if j.closed_frac is None else j.closed_frac,
            )
            for j in js
        ]


_EMPTY: set[str] = set()
_ATOM_KEYS: dict[str, str] = {}  # fact as written -> whitespace-free atom (facts repeat)


def _fact_memo(facts: dict[str, bool]) -> dict[str, bool]:
    keys = _ATOM_KEYS
    out: dict[str, bool] = {}
    for k, v in facts.items():
        key = keys.get(k)
        if key is None:
            if len(keys) > 100_000:
                keys.clear()
            key = keys[k] = "".join(k.split())
        out[key] = v
    return out


# ------------------------------------------------------------------------------- predicates


def p_in(v: StateView, a: str, r: str) -> bool:
    ent = v.objects.get(a)
    if ent is None:
        raise EvaluationError(f"unknown entity '{a}' (not in the state's objects)")
    cx, cy, cz = ent.position  # the box centre
    x0, y0, z0, x1, y1, z1 = v.box(r)
    m = v.th.in_xy_margin
    return x0 - m <= cx <= x1 + m and y0 - m <= cy <= y1 + m and z0 - v.th.in_z_relax <= cz <= z1


def p_on(v: StateView, a: str, b: str) -> bool:
    if a == b:
        return False
    ax0, ay0, az0, ax1, ay1, _az1 = v.box(a)
    x0, y0, z0, x1, y1, z1 = v.box(b)
    cx, cy = (ax0 + ax1) / 2, (ay0 + ay1) / 2
    m = v.th.on_xy_margin
    if not (x0 - m <= cx <= x1 + m and y0 - m <= cy <= y1 + m):
        return False
    tol = v.th.on_z_tol
    if v.state.objects[b].kind == "region":
        return z0 - tol <= az0 <= z1 + tol
    return abs(az0 - z1) <= tol


def p_up(v: StateView, a: str) -> bool:
    return v.box(a)[2] - v.support_level(a) >= v.th.up_height


def _gripper_closed(v: StateView) -> bool:
    g = v.state.gripper
    return g is not None and g.closed is True


def p_grasped(v: StateView, a: str) -> bool:
    v.require(a)
    touch = v.touching(a)
    if not touch:
        if v.contacts_given and v.state.contacts:
            return False  # contacts are reported and none involves a
    elif "robot_left_finger" in touch and "robot_right_finger" in touch:
        return True
    elif not touch.isdisjoint(GRIPPER_PARTS):
        return _gripper_closed(v)
    if touch or not _gripper_closed(v) or "robot_hand" not in v.state.objects:
        return False
    return box_gap(v.box("robot_hand"), v.box(a)) <= v.th.grasp_hand_margin


def p_incontact(v: StateView, a: str, b: str) -> bool:
    v.require(a)
    v.require(b)
    if v.contacts_given:
        return b in v.touching(a)
    if (a in _ROBOT and a not in v.state.objects) or (b in _ROBOT and b not in v.state.objects):
        return False
    return box_gap(v.box(a), v.box(b)) <= v.th.contact_gap


def p_open(v: StateView, j: str) -> bool:
    return any(u >= open_frac for u, open_frac, _ in v.joints_for(j))


def p_close(v: StateView, j: str) -> bool:
    return all(u <= closed_frac for u, _, closed_frac in v.joints_for(j))


def _device(v: StateView, d: str) -> bool:
    dev = v.state.devices.get(d)
    if dev is None:
        raise EvaluationError(f"unknown device '{d}' (not in the state's devices)")
    return dev.on


def p_turnon(v: StateView, d: str) -> bool:
    return _device(v, d)


def p_turnoff(v: StateView, d: str) -> bool:
    return not _device(v, d)


def _side(v: StateView, a: str, b: str) -> float:
    ab, bb = v.box(a), v.box(b)
    lx, ly, lz = v.th.left_axis
    norm = math.sqrt(lx * lx + ly * ly + lz * lz)
    d = [(ab[i] + ab[i + 3] - bb[i] - bb[i + 3]) / 2 for i in range(3)]
    return (d[0] * lx + d[1] * ly + d[2] * lz) / norm


def p_left_of(v: StateView, a: str, b: str) -> bool:
    return _side(v, a, b) > v.th.side_margin


def p_right_of(v: StateView, a: str, b: str) -> bool:
    return _side(v, a, b) < -v.th.side_margin


def p_near(v: StateView, a: str, b: str) -> bool:
    return box_gap(v.box(a), v.box(b)) <= v.th.near_distance


Implementation = Callable[..., bool]

# Argument kinds of the spatial relations: anything with a place in the world.
_PLACED = ("object", "robot", "fixture", "surface", "region", "device")

# name -> (implementation, argument names, accepted kinds per argument, description)
BUILTINS: dict[str, tuple[Implementation, tuple[str, ...], tuple[tuple[str, ...], ...], str]] = {
    "in": (
        p_in,
        ("target_object", "container_object"),
        (("object",), ("region", "object", "fixture")),
        "The object's centre is inside the container's or region's box.",
    ),
    "on": (
        p_on,
        ("target_object", "support_surface"),
        (("object",), ("surface", "region", "object", "fixture", "device")),
        "The object rests on top of the surface, object or region.",
    ),
    "up": (
        p_up,
        ("target_object",),
        (("object",),),
        "The object is lifted above the surface that supports it.",
    ),
    "grasped": (
        p_grasped,
        ("target_object",),
        (("object",),),
        "The robot's gripper holds the object.",
    ),
    "incontact": (
        p_incontact,
        ("first_entity", "second_entity"),
        (
            ("object", "robot", "fixture", "surface", "device"),
            ("object", "robot", "fixture", "surface", "device"),
        ),
        "The two entities touch (robot_gripper stands for any gripper part).",
    ),
    "open": (
        p_open,
        ("joint_or_fixture",),
        (("joint", "fixture", "region"),),
        "The joint (drawer, door) is fully open.",
    ),
    "close": (
        p_close,
        ("joint_or_fixture",),
        (("joint", "fixture", "region"),),
        "The joint (drawer, door) is closed.",
    ),
    "turnon": (
        p_turnon,
        ("device",),
        (("device", "fixture"),),
        "The device (stove, light) is switched on.",
    ),
    "turnoff": (
        p_turnoff,
        ("device",),
        (("device", "fixture"),),
        "The device (stove, light) is switched off.",
    ),
    "left_of": (
        p_left_of,
        ("target_object", "reference_object"),
        (_PLACED, _PLACED),
        "The first entity is to the left of the second, seen from the robot.",
    ),
    "right_of": (
        p_right_of,
        ("target_object", "reference_object"),
        (_PLACED, _PLACED),
        "The first entity is to the right of the second, seen from the robot.",
    ),
    "near": (
        p_near,
        ("first_entity", "second_entity"),
        (_PLACED, _PLACED),
        "The two entities are close (use robot_hand for the hand centre).",
    ),
}
