"""Pushing an object over the table: where in its target it should end, which way it goes
round what stands in between, and the push itself.

A plate (a dish, as LIBERO's is) is dragged by its rim from inside: the hand stands over the
plate, so nothing needs room around it. Anything else is pushed from behind
by closed fingers. The route is the straight line, or two legs through a point beside it,
whichever sweeps the object least into the others (its footprint disc, a centimetre apart)
and stays in reach; the end is the spot in the target where the object overlaps the others
least.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from mango.geometry import footprint
from mango.sim.expert.arm import CLOSED, FINGERTIP, SYNC
from mango.sim.expert.motions import Skill, SkillContext, down_quat, push
from mango.sim.parts import plate_rim_radius, plate_well

Box = tuple[float, float, float, float]
CLEARANCE = 0.01  # how far apart the pushed object should stay from the others
STEP = 0.01  # sampling of a leg's sweep
DETOUR_COST = 0.001  # m² of overlap (penetration x distance) one metre of detour is worth
FINGER_HALF = 0.009  # the fingertips' half thickness across their opening (the FR3 hand)
RIM_PLAY = 0.006  # the fingers start this far from the rim they drag
# The fingertips start this high over a plate's floor and rise DRAG_RISE while they drag it
# by its rim: the arm gives a few millimetres under the push, and fingers sliding down the
# rim's face would press the plate into the table, where with the friction of the fingers and
# the plate (1.2 each) it cannot slide: it tips over its leading edge instead (measured: up to
# 37 degrees pushing it away from the robot; level, within 5 mm of the goal, rising 6 mm).
TIP_OVER_FLOOR = 0.002
DRAG_RISE = 0.006


def _radius(ctx: SkillContext, obj: str) -> float:
    """The object's horizontal reach from its centre: a plate's radius, a box's half
    diagonal."""
    sx, sy, _ = ctx.scene.entity(obj).size
    return min(sx, sy) / 2 if ctx.scene.entity(obj).shape == "plate" else math.hypot(sx, sy) / 2


def _obstacles(ctx: SkillContext, obj: str) -> list[Box]:
    """Footprints of what stands at the pushed object's level (not on it, not a region)."""
    o = ctx.state.objects[obj]
    size = o.size or ctx.scene.entity(obj).size
    top, bottom = o.position[2] + size[2] / 2, o.position[2] - size[2] / 2
    return [footprint(e.position, e.size, e.orientation) for k, e in ctx.state.objects.items()
            if k != obj and e.kind in ("object", "fixture", "device") and e.size
            and e.position[2] - e.size[2] / 2 < top - 0.005
            and e.position[2] + e.size[2] / 2 > bottom]


def _penetration(p: np.ndarray, r: float, boxes: Sequence[Box]) -> float:
    """How deep a disc of radius r (plus CLEARANCE) at p reaches into the boxes, summed."""
    total = 0.0
    for x0, y0, x1, y1 in boxes:
        dx = max(x0 - p[0], 0.0, p[0] - x1)
        dy = max(y0 - p[1], 0.0, p[1] - y1)
        total += max(0.0, r + CLEARANCE - math.hypot(dx, dy))
    return total


def _sweep(a: np.ndarray, b: np.ndarray, r: float, boxes: Sequence[Box]) -> float:
    """The overlap a disc of radius r sweeps from a to b: penetration times distance."""
    n = max(1, math.ceil(float(np.linalg.norm(b - a)) / STEP))
    return sum(_penetration(a + (b - a) * (i + 0.5) / n, r, boxes) for i in range(n)) \
        * float(np.linalg.norm(b - a)) / n


def push_spot(ctx: SkillContext, obj: str, target: str) -> np.ndarray:
    """Where in `target`'s footprint (a centimetre inside its edges) the object's centre
    should end: where it overlaps the others least, the nearest such spot."""
    tgt = ctx.state.objects[target]
    x0, y0, x1, y1 = footprint(tgt.position, tgt.size, tgt.orientation)
    c = np.asarray(ctx.state.objects[obj].position[:2])
    r, boxes = _radius(ctx, obj), _obstacles(ctx, obj)

    def axis(lo: float, hi: float) -> np.ndarray:
        lo, hi = lo + 0.01, hi - 0.01
        return np.linspace(lo, hi, 5) if hi > lo else np.array([(lo + hi) / 2])

    spots = [np.array([x, y]) for x in axis(x0, x1) for y in axis(y0, y1)]
    return min(spots, key=lambda p: (round(_penetration(p, r, boxes), 3),
                                     float(np.linalg.norm(p - c))))


def _hand(ctx: SkillContext, obj: str, at: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Where the hand centre goes (xy) to move the object, centred at `at`, along v."""
    if ctx.scene.entity(obj).shape == "plate":
        # the fingers' leading face RIM_PLAY short of the rim at their tips' height
        rim = plate_rim_radius(ctx.scene.entity(obj), TIP_OVER_FLOOR)
        return at + (rim - FINGER_HALF - RIM_PLAY) * v
    size = ctx.scene.entity(obj).size
    return at - (float(abs(v[0]) * size[0] + abs(v[1]) * size[1]) / 2 + 0.03) * v


def _height(ctx: SkillContext, obj: str) -> float:
    """The hand centre's height while it pushes `obj`: fingertips just over the floor inside
    a plate's rim, or low on the side of anything else (clear of the table; the arm sags a
    little when pushing)."""
    o = ctx.state.objects[obj]
    ent = ctx.scene.entity(obj)
    size = o.size or ent.size
    bottom = o.position[2] - size[2] / 2
    if ent.shape == "plate":
        return bottom + plate_well(ent)[1] + TIP_OVER_FLOOR + FINGERTIP
    return bottom + min(0.75 * size[2], 0.012) + FINGERTIP


# Farther than this from the robot's base (horizontally) the FR3's hand, pointing down, does
# not reach down to the table (measured: 0.80 m at any yaw and bearing): no need to ask the
# IK, which is slow to give up.
REACH = 0.79


def _in_reach(ctx: SkillContext, obj: str, a: np.ndarray, b: np.ndarray,
              known: dict[tuple[int, ...], bool]) -> bool:
    """Whether the arm reaches the hand along a push from a to b (and 2 cm past its end:
    the hand overshoots a little); `known` keeps the answers per centimetre and degree."""
    v = (b - a) / max(float(np.linalg.norm(b - a)), 1e-9)
    yaw = math.atan2(v[1], v[0]) + math.pi / 2
    z = _height(ctx, obj)
    base = np.asarray(ctx.scene.robot.base[:2])
    for p in (a, (a + b) / 2, b + 0.02 * v):
        hand = _hand(ctx, obj, p, v)
        key = (round(hand[0] * 100), round(hand[1] * 100), round(math.degrees(yaw)) % 180)
        if key not in known:
            known[key] = float(np.linalg.norm(hand - base)) <= REACH and ctx.arm.ik.solve(
                np.r_[hand, z], down_quat(yaw), ctx.arm.q, max_jump=math.inf).ok
        if not known[key]:
            return False
    return True


def push_route(ctx: SkillContext, obj: str, goal: np.ndarray) -> list[np.ndarray]:
    """The points the object's centre is pushed through to `goal`: straight there, or via
    one point beside the line, whichever sweeps the object least into the others (a detour
    costs DETOUR_COST per metre) with every push in the arm's reach."""
    c = np.asarray(ctx.state.objects[obj].position[:2])
    r, boxes = _radius(ctx, obj), _obstacles(ctx, obj)
    half = np.array(ctx.scene.table.size) / 2 - r

    def cost(points: list[np.ndarray]) -> float:
        legs = zip([c, *points[:-1]], points, strict=True)
        return sum(_sweep(a, b, r, boxes) + DETOUR_COST * float(np.linalg.norm(b - a))
                   for a, b in legs)

    routes = [[goal]]
    lo, hi = np.minimum(c, goal) - 0.15, np.maximum(c, goal) + 0.15
    for x in np.arange(lo[0], hi[0] + 1e-9, 0.02):
        for y in np.arange(lo[1], hi[1] + 1e-9, 0.02):
            via = np.array([x, y])
            if np.all(np.abs(via) <= half) and min(np.linalg.norm(via - c),
                                                   np.linalg.norm(via - goal)) > 0.02:
                routes.append([via, goal])
    known: dict[tuple[int, ...], bool] = {}
    for route in sorted(routes, key=cost):
        legs = zip([c, *route[:-1]], route, strict=True)
        if all(_in_reach(ctx, obj, a, b, known) for a, b in legs):
            return route
    return [goal]


def push_to(ctx: SkillContext, obj: str, goal: np.ndarray,
            on_touch: Callable[[], None] | None = None) -> Skill:
    """Slide `obj` over the table in a straight line until its centre is at `goal` (xy):
    a plate dragged by its rim, closed fingers set down inside it; anything else pushed by
    closed fingers set down behind it (their flat side facing the way). `on_touch` runs once
    the fingers are down."""
    arm = ctx.arm
    st = ctx.state.objects[obj]
    c = np.asarray(st.position)
    v = goal - c[:2]
    dist = float(np.linalg.norm(v))
    if dist < 0.01:
        yield SYNC
        return
    v /= dist
    quat = down_quat(arm.grip_yaw(math.atan2(v[1], v[0]) + math.pi / 2))
    z = _height(ctx, obj)
    start = _hand(ctx, obj, c[:2], v)
    if ctx.scene.entity(obj).shape == "plate":
        end = start + (dist + RIM_PLAY) * v  # the rim meets the fingers after RIM_PLAY
        off = 0.01  # off the rim before rising
    else:
        end = goal + (start - c[:2]) + 0.04 * v  # a little past: the object lags the fingers
        off = 0.03
    yield from push(ctx, np.r_[start, z], quat, [], approach=0.1, speed=0.1)
    if on_touch is not None:
        on_touch()
    rise = DRAG_RISE if ctx.scene.entity(obj).shape == "plate" else 0.0
    yield arm.line(np.r_[end, z + rise], speed=0.08)
    yield arm.hold(0.2)
    back = np.r_[end, z + rise] - off * np.r_[v, 0.0]
    yield arm.line(back, width=CLOSED, speed=arm.approach_speed)
    yield arm.line(back + np.array([0.0, 0.0, 0.12]), speed=arm.approach_speed)
    yield SYNC
