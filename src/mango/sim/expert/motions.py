"""Motion primitives: grasp, place and push (to a spot), on their own (no task plan).

Each primitive is a skill generator (see `arm`): it reads `ctx.state` (refreshed after every
`SYNC`), plans on `ctx.arm` and names what it acts on by entity id. Callers learn what
happened through return values (a grasp returns its grasp offset or None) and optional
callbacks at the moment something happens (the hand closed, the gripper let go).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from mango.geometry import (
    IDENTITY,
    footprint,
    frame_quat,
    nearest_angle,
    quat_to_mat,
    quat_yaw,
    yaw_matrix_2d,
)
from mango.oracle.world_state import EntityState, WorldState
from mango.sim.expert.arm import CLOSED, DT, FINGERTIP, OPEN, SYNC, ExpertError, PlannedArm
from mango.sim.parts import container_wall
from mango.sim.scene import ARTICULATED, EntitySpec, SceneSpec

Skill = Generator[object, None, None]
Grasp = Generator[object, None, float | None]  # returns the grasp offset, None on failure
Waypoint = tuple[np.ndarray, np.ndarray | None]  # hand position, quaternion (None: keep)


@dataclass
class SkillContext:
    """What a skill reads and moves: the scene, the planned arm and the latest world state."""

    scene: SceneSpec
    arm: PlannedArm
    state: WorldState


def travel_height(scene: SceneSpec) -> float:
    """Cruise height: above loose objects and tall fixtures (an open door's top edge)."""
    tall = max((e.size[2] for e in scene.entities if e.shape in ARTICULATED), default=0.0)
    return scene.table.height + min(0.36, max(0.27, tall + 0.06))


def down_quat(opening_yaw: float) -> np.ndarray:
    """Gripper pointing down with the fingers opening along world direction `opening_yaw`."""
    y = np.array([math.cos(opening_yaw), math.sin(opening_yaw), 0.0])
    z = np.array([0.0, 0.0, -1.0])
    return frame_quat(np.cross(y, z), y, z)


def side_quat(arm: PlannedArm, d: np.ndarray) -> np.ndarray:
    """Gripper pointing along horizontal d, fingers opening horizontally (nearest wrist)."""
    _, quat = arm.pose()
    y = np.array([-d[1], d[0], 0.0])
    if float(np.dot(quat_to_mat(quat)[:, 1], y)) < 0:
        y = -y
    return frame_quat(np.cross(y, d), y, d)


def grasp_yaw(arm: PlannedArm, ent: EntitySpec, yaw: float) -> float:
    """Finger opening direction for a top grasp of `ent` lying at `yaw`."""
    sx, sy, _ = ent.size
    if ent.shape in ("cylinder", "plate"):
        return arm.opening_yaw()
    # a mug is taken across its body (away from the handle), a box across its short side
    a = yaw + math.pi / 2 if ent.shape == "mug" or sx > sy else yaw
    return arm.grip_yaw(a)


# The Franka Hand seen from above: long along the fingers' opening, thin across it; its body
# starts this high above the fingertips and is this deep (the FR3 model's hand mesh).
HAND_HALF_LENGTH, HAND_HALF_WIDTH, HAND_BODY_ABOVE, HAND_BODY_DEPTH = 0.105, 0.035, 0.04, 0.09
FINGER_DEPTH, FINGER_WIDTH = 0.016, 0.02  # a fingertip from above: along, across the opening


def _high_footprints(ctx: SkillContext, obj: str, z: float
                     ) -> list[tuple[float, float, float, float]]:
    """Footprints of what stands higher than the hand's body above grasp height z."""
    return [_footprint(o) for k, o in ctx.state.objects.items()
            if k != obj and o.kind in ("object", "fixture", "device", "region") and o.size
            and o.position[2] + o.size[2] / 2 > z + HAND_BODY_ABOVE]


def _blocked(high: list[tuple[float, float, float, float]], c: np.ndarray, yaw: float) -> int:
    """How many of the hand's outline points, centred at c opening along yaw, lie over
    something in `high`."""
    u = np.array([math.cos(yaw), math.sin(yaw)])
    w = np.array([-u[1], u[0]])
    pts = [c[:2] + i * HAND_HALF_LENGTH / 4 * u + j * HAND_HALF_WIDTH * w
           for i in range(-4, 5) for j in (-1, 0, 1)]
    return sum(any(b[0] <= p[0] <= b[2] and b[1] <= p[1] <= b[3] for b in high) for p in pts)


def _landing(ctx: SkillContext, obj: str, c: np.ndarray, yaw: float, z: float) -> int:
    """How many of the two fingers, coming down to height z on either side of `obj`'s middle
    (opening along yaw), would land on something else standing higher than their tips (the
    rim of a plate the object touches)."""
    ent = ctx.scene.entity(obj)
    u = np.array([math.cos(yaw), math.sin(yaw)])
    w = np.array([-u[1], u[0]])
    # the object's reach along the opening from its middle, then a finger's thickness
    reach = (abs(math.cos(yaw - quat_yaw(ctx.state.objects[obj].orientation))) * ent.size[0]
             + abs(math.sin(yaw - quat_yaw(ctx.state.objects[obj].orientation))) * ent.size[1]
             ) / 2 + FINGER_DEPTH / 2
    low = [_footprint(o) for k, o in ctx.state.objects.items()
           if k != obj and o.kind in ("object", "fixture", "device") and o.size
           and o.position[2] + o.size[2] / 2 > z - FINGERTIP]
    hits = 0
    for side in (-1.0, 1.0):
        f = c[:2] + side * reach * u
        pts = [f + i * FINGER_DEPTH / 2 * u + j * FINGER_WIDTH / 2 * w
               for i in (-1, 0, 1) for j in (-1, 0, 1)]
        hits += any(b[0] <= p[0] <= b[2] and b[1] <= p[1] <= b[3] for b in low for p in pts)
    return hits


def _clear_yaw(ctx: SkillContext, obj: str, a: float,
               high: list[tuple[float, float, float, float]], z: float) -> float:
    """`a`, or `a` turned a quarter when the object grips the same that way (square or round
    footprint) and then the fingers land on less beside it (a plate's rim next to a bowl), or
    as little and the hand, long along its opening, clears more of what stands higher than
    its body next to the object (an open drawer above a bowl)."""
    ent = ctx.scene.entity(obj)
    sx, sy, _ = ent.size
    if abs(sx - sy) > 0.1 * max(sx, sy):
        return a
    c = np.asarray(ctx.state.objects[obj].position)
    turned = ctx.arm.grip_yaw(a + math.pi / 2)

    def score(yaw: float) -> tuple[int, int]:
        return _landing(ctx, obj, c, yaw, z), _blocked(high, c, yaw)

    return turned if score(turned) < score(a) else a


Footprints = list[tuple[float, float, float, float]]
Grip = tuple[np.ndarray, float, np.ndarray | None]  # xy, opening yaw, lean (None: upright)

# How far the hand leans away from something over its outline (an open drawer hanging over
# a bowl), and how far its wrist and body then stand aside: they pass beside the overhang
# while the fingers still close level.
LEAN = math.radians(25.0)
LEAN_SHIFT = 0.05


def _grip_point(ctx: SkillContext, obj: str, z: float) -> tuple[Grip, Footprints]:
    """Where the hand closes (xy), its opening yaw and which way it leans: across the
    object's middle, upright; for a bowl on one of its walls (one finger inside, one outside)
    when the middle is out of the arm's reach; leaning away from what stands over the hand's
    outline (an open drawer) when that clears it. Among grips under something, the least
    covered (leaning or not) and, among those, the middle first, then the nearest wall. Also
    what stands higher than the hand's body there (what the choice was made against)."""
    arm = ctx.arm
    ent = ctx.scene.entity(obj)
    st = ctx.state.objects[obj]
    c = np.asarray(st.position)
    yaw = quat_yaw(st.orientation)
    high = _high_footprints(ctx, obj, z)  # once: the yaw and the wall choice share it
    a = _clear_yaw(ctx, obj, grasp_yaw(arm, ent, yaw), high, z)

    def leaning(xy: np.ndarray, opening: float) -> tuple[int, np.ndarray | None]:
        """How much of the hand's outline stays covered, upright or leaning away."""
        upright = _blocked(high, xy, opening)
        lean = _lean(high, xy, opening) if upright else None
        if lean is None:
            return upright, None
        leant = _blocked(high, xy + LEAN_SHIFT * lean, opening)
        return (leant, lean) if leant < upright else (upright, None)

    covered, lean = leaning(c[:2], a)
    if ent.shape != "bowl":
        return (c[:2], a, lean), high
    if covered == 0 and arm.ik.solve(np.array([c[0], c[1], z]), grip_quat(a, lean), arm.q,
                                     max_jump=math.inf).ok:
        return (c[:2], a, lean), high  # the usual case, without planning the approach on trial

    def reachable(xy: np.ndarray, opening: float, lean: np.ndarray | None) -> bool:
        def approach() -> Iterator[object]:
            quat = grip_quat(opening, lean)
            grip = np.array([xy[0], xy[1], z])
            yield from arm.travel_to(grip - 0.12 * quat_to_mat(quat)[:, 2], quat, width=OPEN)
            yield arm.line(grip, speed=arm.approach_speed)
        return arm.feasible(approach)

    base = np.asarray(ctx.scene.robot.base[:2])
    grips = [(covered, 0.0, c[:2], a, lean)]  # the middle first among equals
    for k in range(4):
        n = yaw_matrix_2d(yaw + k * math.pi / 2) @ np.array([1.0, 0.0])
        half = (ent.size[0] if k % 2 == 0 else ent.size[1]) / 2
        xy = c[:2] + (half - container_wall(ent.shape) / 2) * n
        opening = arm.grip_yaw(math.atan2(n[1], n[0]))
        n_covered, tilt = leaning(xy, opening)
        grips.append((n_covered, float(np.linalg.norm(xy - base)), xy, opening, tilt))
    for _, _, xy, opening, lean in sorted(grips, key=lambda g: (g[0], g[1])):
        if reachable(xy, opening, lean):
            return (xy, opening, lean), high
    return (c[:2], a, lean), high


def _lean(high: Footprints, xy: np.ndarray, a: float) -> np.ndarray | None:
    """The horizontal direction (across the fingers' opening) to lean the hand away from
    what covers its outline at `xy`, opening along yaw `a`; None when nothing covers it, or
    only its ends along the opening, which leaning does not clear."""
    u = np.array([math.cos(a), math.sin(a)])
    w = np.array([-u[1], u[0]])
    side = [j for i in range(-4, 5) for j in (-1, 0, 1)
            if any(b[0] <= p[0] <= b[2] and b[1] <= p[1] <= b[3] for b in high
                   for p in [xy + i * HAND_HALF_LENGTH / 4 * u + j * HAND_HALF_WIDTH * w])]
    if not side or sum(side) == 0:
        return None
    return -float(np.sign(sum(side))) * w


def grip_quat(opening_yaw: float, lean: np.ndarray | None, tilt: float = LEAN) -> np.ndarray:
    """`down_quat(opening_yaw)`, leaned by `tilt` toward horizontal `lean` (across the
    opening) unless that is None: the fingers then point down and a little away from it,
    the hand's body over it."""
    if lean is None:
        return down_quat(opening_yaw)
    y = np.array([math.cos(opening_yaw), math.sin(opening_yaw), 0.0])
    z = np.array([-math.sin(tilt) * lean[0], -math.sin(tilt) * lean[1], -math.cos(tilt)])
    return frame_quat(np.cross(y, z), y, z)


def _out_from_under(ctx: SkillContext, obj: str, high: Footprints, lean: np.ndarray,
                    margin: float = 0.03) -> float:
    """How far `obj` must move along `lean` before it can rise: until its footprint clears
    every footprint in `high` that it is partly under (by `margin`: a drawer's front wall and
    handle stand out of the region that stands for it)."""
    x0, y0, x1, y1 = _footprint(ctx.state.objects[obj])
    out = 0.0
    for b in high:
        if x1 <= b[0] or x0 >= b[2] or y1 <= b[1] or y0 >= b[3]:
            continue
        ways = []  # along lean, past the box's far side in x or in y
        if abs(lean[0]) > 1e-6:
            ways.append(((b[2] - x0) if lean[0] > 0 else (b[0] - x1)) / lean[0])
        if abs(lean[1]) > 1e-6:
            ways.append(((b[3] - y0) if lean[1] > 0 else (b[1] - y1)) / lean[1])
        out = max(out, min(ways) + margin)
    return out


def grasp_height(ctx: SkillContext, obj: str) -> float:
    """Hand height of a top grasp of `obj`: 2.2 cm under its top, the fingertips clear of
    the table."""
    c = ctx.state.objects[obj].position
    h = ctx.scene.entity(obj).size[2]
    return max(c[2] + h / 2 - 0.022, c[2] - h / 2 + FINGERTIP + 0.003)


def _close_and_lift(ctx: SkillContext, obj: str, z: float, lift: Sequence[np.ndarray],
                    speed: float, on_closed: Callable[[], None] | None) -> Grasp:
    """Close the hand (at height z) on `obj` and lift it through the points `lift`: the
    grasp offset if `obj` is held then, else None with the hand opened again."""
    arm = ctx.arm
    yield arm.hold(0.15)
    yield arm.hold(0.7, CLOSED)
    yield SYNC
    if on_closed is not None:
        on_closed()
    offset = z - (ctx.state.objects[obj].position[2] - ctx.scene.entity(obj).size[2] / 2)
    for p in lift:
        yield arm.line(p, speed=speed)
    yield SYNC
    if ctx.state.fact(f"grasped({obj})"):
        return offset
    yield arm.hold(0.4, OPEN)
    return None


def grasp(ctx: SkillContext, obj: str,
          on_closed: Callable[[], None] | None = None) -> Grasp:
    """Approach from above, close on `obj`, lift; retries twice. Returns the grasp offset
    (hand height above the object's bottom) or None; `on_closed` runs once the hand closed."""
    arm = ctx.arm
    for _attempt in range(3):
        z = grasp_height(ctx, obj)
        (xy, a, lean), high = _grip_point(ctx, obj, z)
        quat = grip_quat(a, lean)
        grip = np.array([xy[0], xy[1], z])
        above = grip - 0.12 * quat_to_mat(quat)[:, 2]  # back along the fingers
        yield from arm.travel_to(above, quat, width=OPEN)
        yield arm.line(grip, speed=arm.approach_speed)
        # up to travel height, or as high as the arm reaches out there (at least where it
        # came down from); from under an overhang out first, leaning away from it
        lift: list[np.ndarray] = []
        if lean is not None:
            up = grip + np.array([0.0, 0.0, 0.03])
            lift = [up, up + _out_from_under(ctx, obj, high, lean) * np.r_[lean, 0.0]]
        end = lift[-1] if lift else grip
        lift.append(np.array([end[0], end[1], arm.reach_z(end[:2], quat, above[2],
                                                           arm.travel_z)]))
        offset = yield from _close_and_lift(ctx, obj, z, lift, arm.approach_speed, on_closed)
        if offset is not None:
            return offset
    return None


def grasp_side(ctx: SkillContext, obj: str, d: np.ndarray,
               on_closed: Callable[[], None] | None = None) -> Grasp:
    """Approach along horizontal d at mid-height, close, lift a little; retries twice."""
    arm = ctx.arm
    ent = ctx.scene.entity(obj)
    for _attempt in range(3):
        st = ctx.state.objects[obj]
        c = np.asarray(st.position)
        h = ent.size[2]
        z = max(c[2], c[2] - h / 2 + 0.03)
        at = np.array([c[0], c[1], z]) - 0.005 * d
        pre = at - 0.11 * d
        # a horizontal hand cannot reach high: turn it low, in front of the object
        yield from arm.travel_to(pre + np.array([0, 0, 0.09]), width=OPEN)
        yield arm.line(pre, side_quat(arm, d), speed=arm.approach_speed)
        yield arm.line(at, speed=0.1)
        offset = yield from _close_and_lift(ctx, obj, z, [at + np.array([0, 0, 0.05])], 0.1,
                                            on_closed)
        if offset is not None:
            return offset
        yield arm.line(pre, speed=arm.approach_speed)
        yield arm.line(pre + np.array([0, 0, 0.09]), down_quat(arm.opening_yaw()),
                       speed=arm.approach_speed)
    return None


def place_point(ctx: SkillContext, target: str,
                offset: Sequence[float]) -> tuple[np.ndarray, float, float]:
    """Release xy (`offset` in the target's frame), the support height under it and the
    yaw the target wants."""
    tgt = ctx.state.objects[target]
    tyaw = quat_yaw(tgt.orientation)
    c = np.asarray(tgt.position)
    off = np.array(offset)
    xy = c[:2] + yaw_matrix_2d(tyaw) @ off
    size = tgt.size or (0.0, 0.0, 0.0)
    support = c[2] - size[2] / 2 if tgt.kind == "region" else c[2] + size[2] / 2
    return np.array([xy[0], xy[1]]), support, tyaw


def beside(ctx: SkillContext, target: str, obj: str) -> np.ndarray:
    """A free, reachable table spot for `obj` next to `target`.

    Free means the object's footprint overlaps no other entity's footprint, regions
    included (an open drawer sticks out of its cabinet).
    """
    ws, scene = ctx.state, ctx.scene
    tx0, ty0, tx1, ty1 = _footprint(ws.objects[target])
    c = np.array([(tx0 + tx1) / 2, (ty0 + ty1) / 2])
    half = np.array([(tx1 - tx0) / 2, (ty1 - ty0) / 2])
    ent = scene.entity(obj)
    r = math.hypot(ent.size[0], ent.size[1]) / 2
    blockers = [_footprint(o) for k, o in ws.objects.items()
                if k != obj and o.kind in ("object", "fixture", "device", "region")]
    base = np.asarray(scene.robot.base[:2])
    lim = np.array(scene.table.size) / 2 - r - 0.03
    dirs = [(-1, 0), (0, 1), (0, -1), (1, 0), (-1, 1), (-1, -1), (1, 1), (1, -1)]
    for extra in (0.05, 0.1, 0.16):
        for dx, dy in dirs:
            d = np.array([dx, dy], float)
            p = c + d * (half + r + extra)
            if np.any(np.abs(p) > lim) or not 0.35 <= np.linalg.norm(p - base) <= 0.72:
                continue
            m = r + 0.015
            if all(p[0] + m < b[0] or p[0] - m > b[2] or p[1] + m < b[1] or p[1] - m > b[3]
                   for b in blockers):
                return p
    raise ExpertError(f"no free spot next to {target} to put {obj}")


def _footprint(e: EntityState) -> tuple[float, float, float, float]:
    return footprint(e.position, e.size, e.orientation)


def carry_quat(ctx: SkillContext, obj: str, target_yaw: float) -> np.ndarray:
    """Hand orientation for carrying `obj`: its yaw relative to the hand kept, turned to the
    target's yaw (mod 90°) unless it is round."""
    st = ctx.state.objects[obj]
    oyaw = quat_yaw(st.orientation)
    a = ctx.arm.opening_yaw()
    if ctx.scene.entity(obj).shape not in ("cylinder", "plate", "mug"):
        turn = nearest_angle(target_yaw - oyaw, 0.0, math.pi / 2)
        a = a + turn
    return down_quat(a)


def _drop_row(arm: PlannedArm, end: np.ndarray, fraction: float) -> int:
    """The row of a transport to `end` at which the gripper opens after `fraction` of it."""
    p0, _ = arm.pose()
    dist = float(np.linalg.norm(end - p0))
    n = max(2, math.ceil(dist / (arm.travel_speed * DT)))
    return max(1, int(fraction * n))


def _let_go(ctx: SkillContext, extra: float) -> list[np.ndarray]:
    # open just enough to let go: wide fingers would catch a container's walls
    g = ctx.state.gripper
    held = g.width if g is not None and g.width is not None else OPEN
    return ctx.arm.hold(0.5, min(OPEN, held + extra))


def place(
    ctx: SkillContext,
    xy: np.ndarray,
    release_z: float,
    quat: np.ndarray,
    *,
    drop_at: float | None = None,
    on_drop: Callable[[float], None] | None = None,
    on_release: Callable[[float], None] | None = None,
    held: str | None = None,
) -> Skill:
    """Carry the held object over `xy`, lower it to `release_z`, let go and rise again.

    `drop_at` opens the gripper after that fraction of the transport instead (and calls
    `on_drop` with the time it opens); `on_release` gets the time of a normal release.
    With `held` named, its centre (not the hand's) ends over `xy`: a bowl taken by its wall
    hangs 3 cm beside the hand.
    """
    arm = ctx.arm
    if held is not None:
        xy = np.asarray(xy, float) - _held_shift(ctx, held, quat)
    carry = arm.reach_z(xy, quat, release_z + 0.04, max(arm.travel_z, release_z + 0.1))
    above = np.array([xy[0], xy[1], carry])
    open_at = None
    if drop_at is not None:
        open_at = _drop_row(arm, above, drop_at)
        if on_drop is not None:
            on_drop(ctx.state.t + open_at * DT)
    yield arm.line(above, quat, open_at=open_at)
    if open_at is None:
        yield arm.line(np.array([xy[0], xy[1], release_z]), speed=arm.approach_speed)
        yield arm.hold(0.1)
        yield SYNC
        t_rel = ctx.state.t
        yield _let_go(ctx, 0.025)
        if on_release is not None:
            on_release(t_rel)
    yield arm.line(np.array([xy[0], xy[1], carry]), speed=arm.approach_speed)
    yield SYNC


def _held_shift(ctx: SkillContext, obj: str, quat: np.ndarray) -> np.ndarray:
    """Where the held object's centre sits beside the hand once the hand turns to `quat`
    (measured now; under 1 cm counts as none: a grip across the middle)."""
    hand, o = ctx.state.objects.get("robot_hand"), ctx.state.objects.get(obj)
    if hand is None or o is None:
        return np.zeros(2)
    d = np.asarray(o.position[:2]) - np.asarray(hand.position[:2])
    if float(np.linalg.norm(d)) < 0.01:
        return np.zeros(2)
    return yaw_matrix_2d(quat_yaw(quat) - quat_yaw(hand.orientation)) @ d


def cavity_direction(ctx: SkillContext, target: str) -> np.ndarray:
    """Horizontal direction into a cavity target: its parent's (or its own) +x axis."""
    tgt = ctx.state.objects[target]
    frame = ctx.state.objects.get(tgt.parent or "", tgt)
    d = quat_to_mat(frame.orientation or IDENTITY)[:, 0].copy()
    d[2] = 0.0
    d /= np.linalg.norm(d)
    return d


def place_side(
    ctx: SkillContext,
    xy: np.ndarray,
    release_z: float,
    d: np.ndarray,
    *,
    drop_at: float | None = None,
    on_drop: Callable[[float], None] | None = None,
    on_release: Callable[[float], None] | None = None,
) -> Skill:
    """Slide an object held from the side along d into a cavity over `xy`, let go at
    `release_z` and back out (callbacks as for `place`)."""
    arm = ctx.arm
    p, _ = arm.pose()
    lift_z = max(release_z + 0.005, p[2])
    at = np.array([xy[0], xy[1], lift_z])
    pre = at - 0.15 * d
    open_at = None
    if drop_at is not None:
        open_at = _drop_row(arm, pre, drop_at)
        if on_drop is not None:
            on_drop(ctx.state.t + open_at * DT)
    yield arm.line(pre, open_at=open_at)
    if open_at is None:
        yield arm.line(at, speed=0.1)
        yield arm.line(np.array([at[0], at[1], release_z]), speed=0.05)
        yield SYNC
        t_rel = ctx.state.t
        yield _let_go(ctx, 0.02)
        if on_release is not None:
            on_release(t_rel)
    back = np.array([xy[0], xy[1], release_z + 0.005]) - 0.16 * d
    yield arm.line(back, speed=0.1)
    yield arm.line(back + np.array([0, 0, 0.08]), down_quat(arm.opening_yaw()),
                   speed=arm.approach_speed)
    yield arm.line(np.array([back[0], back[1], arm.travel_z]), speed=arm.approach_speed)
    yield SYNC


def put_down(ctx: SkillContext, xy: np.ndarray, release_z: float) -> Skill:
    """Carry the held object over `xy` at travel height, lower it to `release_z`, open."""
    arm = ctx.arm
    yield arm.line(np.array([xy[0], xy[1], arm.travel_z]))
    yield arm.line(np.array([xy[0], xy[1], release_z]), speed=arm.approach_speed)
    yield arm.hold(0.5, OPEN)
    yield arm.line(np.array([xy[0], xy[1], arm.travel_z]), speed=arm.approach_speed)
    yield SYNC


def push(ctx: SkillContext, start: np.ndarray, quat: np.ndarray, path: Sequence[Waypoint], *,
         approach: float, speed: float) -> Skill:
    """Closed fingers down onto `start` from `approach` above, then along `path`; holds."""
    arm = ctx.arm
    yield from arm.travel_to(start + np.array([0, 0, approach]), quat, width=CLOSED)
    yield arm.line(start, speed=arm.approach_speed)
    for pos, q in path:
        yield arm.line(pos, q, speed=speed)
    yield arm.hold(0.2)
