"""Fixture skills: open or close a drawer, close a door, turn a knob (no task plan).

Each skill names the fixture by id, plans on `ctx.arm` from the fixture's pose in
`ctx.state` and ends with `SYNC`, so the caller can check the effect on a fresh state.
Where the hand meets a part to close or turn it (`drawer_push`, `door_contact`,
`door_yaw`, `knob_grip`, `knob_turn`) is a pure function of the fixture's pose and joint
value: mode motor's executor rules reach for the same places from what they measure.
"""

from __future__ import annotations

import math

import numpy as np

from mango.geometry import (
    IDENTITY,
    footprint,
    frame_quat,
    nearest_angle,
    quat_to_mat,
    to_world,
)
from mango.sim.expert.arm import CLOSED, FINGERTIP, OPEN, SYNC, ExpertError
from mango.sim.expert.motions import (
    HAND_BODY_ABOVE,
    HAND_BODY_DEPTH,
    HAND_HALF_LENGTH,
    HAND_HALF_WIDTH,
    Skill,
    SkillContext,
    Waypoint,
    down_quat,
    push,
)
from mango.sim.parts import KNOB_HALF, door_hinge_local, drawer_handle_local, knob_local
from mango.sim.scene import EntitySpec

# closing a drawer: closed fingers low on its front (the hand body below the fixed upper
# panel), starting this far in front of the handle
DRAWER_PUSH_DROP, DRAWER_PUSH_LEAD = FINGERTIP - 0.05, 0.035
# closing a door: the hand's side against the door's outer face this far along it from the
# hinge (a fraction of its width), this high above its bottom; it starts clear of the face
# and sweeps in steps past closed
DOOR_REACH, DOOR_LOW = 0.75, 0.06 + FINGERTIP
DOOR_CLEAR_START, DOOR_CLEAR, DOOR_PAST, DOOR_STEP = 0.05, 0.035, 0.05, 0.08
KNOB_GRIP_DEPTH, KNOB_OVERTURN = 0.012, 0.35  # below the knob's top; past the on threshold


def drawer_push(ent: EntitySpec, pos: np.ndarray, rot: np.ndarray,
                q: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Closing a drawer at joint value q: the hand's start in front of its face, its end where
    the face is closed (world), and the fingers' opening yaw (across the push)."""
    assert ent.joint is not None
    handle = np.asarray(drawer_handle_local(ent, q))
    done = np.asarray(drawer_handle_local(ent, ent.joint.q_closed))
    start = to_world(pos, rot, handle + np.array([-DRAWER_PUSH_LEAD, 0.0, DRAWER_PUSH_DROP]))
    end = to_world(pos, rot, done + np.array([0.0, 0.0, DRAWER_PUSH_DROP]))
    fx = rot[:, 0]
    return start, end, math.atan2(fx[1], fx[0]) + math.pi / 2


def door_contact(ent: EntitySpec, pos: np.ndarray, rot: np.ndarray, q: float,
                 clear: float) -> np.ndarray:
    """Where the hand's centre pushes a door at joint value q, `clear` off its outer face."""
    hinge = np.asarray(door_hinge_local(ent))
    along = np.array([math.sin(q), math.cos(q), 0.0])
    outer = np.array([-math.cos(q), math.sin(q), 0.0])
    z = np.array([0.0, 0.0, -ent.size[2] / 2 + DOOR_LOW])
    return to_world(pos, rot, hinge + DOOR_REACH * ent.size[1] * along + clear * outer + z)


def door_yaw(rot: np.ndarray, q: float) -> float:
    """World yaw along a door at joint value q (the hand's long side lies along it)."""
    along = rot @ np.array([math.sin(q), math.cos(q), 0.0])
    return math.atan2(along[1], along[0])


def knob_grip(ent: EntitySpec, pos: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """Where the hand's centre grips a stove's knob from above (world)."""
    knob = to_world(pos, rot, knob_local(ent))
    return np.array([knob[0], knob[1], knob[2] + KNOB_HALF - KNOB_GRIP_DEPTH])


def knob_turn(ent: EntitySpec, rot: np.ndarray, q: float) -> float:
    """How far to turn the hand about the world's +z (rad, ccw positive) to take the knob
    from q past its on threshold."""
    assert ent.device is not None
    axis_up = float((rot @ np.array([0.0, 0.0, 1.0]))[2])  # the knob turns about its +z
    return math.copysign(ent.device.on_threshold + KNOB_OVERTURN - q, axis_up)


def _frame(ctx: SkillContext, ent: EntitySpec) -> tuple[np.ndarray, np.ndarray]:
    st = ctx.state.objects[ent.id]
    return np.asarray(st.position), quat_to_mat(st.orientation or IDENTITY)


def close_joint(ctx: SkillContext, joint: str) -> Skill:
    """Close the drawer or door that owns `joint`."""
    ent = ctx.scene.joint_owner(joint)
    assert ent.joint is not None
    if ent.shape == "drawer_cabinet":
        yield from close_drawer(ctx, ent)
    elif ent.shape == "microwave":
        yield from close_door(ctx, ent)
    else:
        raise ExpertError(f"cannot close a {ent.shape}")
    yield SYNC


def open_joint(ctx: SkillContext, joint: str) -> Skill:
    """Open the drawer that owns `joint` (doors and knobs open by other skills)."""
    ent = ctx.scene.joint_owner(joint)
    if ent.shape != "drawer_cabinet":
        raise ExpertError(f"cannot open a {ent.shape}")
    yield from open_drawer(ctx, ent)
    yield SYNC


def _far_end(ent: EntitySpec) -> float:
    """The drawer joint's fully open end (the end of its range away from closed)."""
    assert ent.joint is not None
    lo, hi = ent.joint.range
    return lo if abs(lo - ent.joint.q_closed) > abs(hi - ent.joint.q_closed) else hi


def open_drawer(ctx: SkillContext, ent: EntitySpec) -> Skill:
    """Pull a drawer open by its handle bar: the hand level, pointing into the cabinet, the
    fingers closing across the bar from above and below, then back along the slide to the
    drawer's fully open end and let go."""
    assert ent.joint is not None
    arm = ctx.arm
    pos, rot = _frame(ctx, ent)
    q = ctx.state.joints[ent.joint.id].q
    d = rot[:, 0].copy()
    d[2] = 0.0
    d /= np.linalg.norm(d)
    bar = to_world(pos, rot, np.asarray(drawer_handle_local(ent, q)) + np.array([0.006, 0, 0]))
    pre = bar - 0.1 * d
    pitch = _handle_pitch(ctx, ent, bar, d, 0.1)
    ahead = math.cos(pitch) * d - math.sin(pitch) * np.array([0.0, 0.0, 1.0])
    yield from arm.travel_to(pre + np.array([0.0, 0.0, 0.1]), width=OPEN)
    # turn the hand level (or pitched down), its fingers opening up and down: whichever of
    # the two wrist turns (and of the two heights to turn at) has a continuous joint path
    turned = None
    for up, lift in ((1.0, 0.0), (-1.0, 0.0), (1.0, 0.1), (-1.0, 0.1)):
        axis = up * (math.sin(pitch) * d + math.cos(pitch) * np.array([0.0, 0.0, 1.0]))
        quat = frame_quat(np.cross(axis, ahead), axis, ahead)
        try:
            turned = arm.line(pre + np.array([0.0, 0.0, lift]), quat, speed=arm.approach_speed)
            break
        except ExpertError:
            continue
    if turned is None:
        raise ExpertError(f"cannot turn the hand level in front of {ent.id}'s drawer handle")
    yield turned
    if np.linalg.norm(arm.pose()[0] - pre) > 1e-3:
        yield arm.line(pre, speed=arm.approach_speed)
    yield arm.line(bar, speed=0.08)
    yield arm.hold(0.7, CLOSED)
    pull = abs(_far_end(ent) - q) + 0.01  # to the stop: the fingers give a little on release
    yield arm.line(bar - pull * d, speed=0.06)
    yield arm.hold(0.4, OPEN)
    back = bar - (pull + 0.08) * d
    yield arm.line(back, speed=arm.approach_speed)
    yield arm.line(back + np.array([0.0, 0.0, 0.1]), speed=arm.approach_speed)


HANDLE_PITCHES = (0.0, math.radians(15.0), math.radians(30.0))


def _handle_pitch(ctx: SkillContext, ent: EntitySpec, bar: np.ndarray, d: np.ndarray,
                  approach: float) -> float:
    """How far to pitch the hand down (radians) when it grips a handle level, fingers opening
    up and down: not at all, unless the lower half of its body, reaching 10 cm below the bar,
    would come down on something standing in front of the drawer (a plate before a middle
    drawer); then the least of HANDLE_PITCHES that lifts that edge 1 cm over its top."""
    w = np.array([-d[1], d[0]])
    reach = approach + HAND_BODY_ABOVE + HAND_BODY_DEPTH + \
        HAND_HALF_LENGTH * math.sin(max(HANDLE_PITCHES))
    top = -math.inf
    for k, o in ctx.state.objects.items():
        if k == ent.id or o.kind not in ("object", "fixture", "device") or not o.size:
            continue
        x0, y0, x1, y1 = footprint(o.position, o.size, o.orientation)
        corners = np.array([[x0, y0], [x0, y1], [x1, y0], [x1, y1]]) - bar[:2]
        out, side = -(corners @ d[:2]), corners @ w
        # the footprint's extent out of the cabinet and across, against the hand's sweep
        if out.max() < 0.0 or out.min() > reach or side.min() > HAND_HALF_WIDTH + 0.01 or \
                side.max() < -HAND_HALF_WIDTH - 0.01:
            continue
        top = max(top, o.position[2] + o.size[2] / 2)
    for pitch in HANDLE_PITCHES:
        low = bar[2] + HAND_BODY_ABOVE * math.sin(pitch) - HAND_HALF_LENGTH * math.cos(pitch)
        if low >= top + 0.01:
            return pitch
    return HANDLE_PITCHES[-1]


def close_drawer(ctx: SkillContext, ent: EntitySpec) -> Skill:
    """Push the drawer front of a drawer cabinet home."""
    assert ent.joint is not None
    arm = ctx.arm
    pos, rot = _frame(ctx, ent)
    start, end, yaw = drawer_push(ent, pos, rot, ctx.state.joints[ent.joint.id].q)
    yield from push(ctx, start, down_quat(arm.grip_yaw(yaw)), [(end, None)], approach=0.12,
                    speed=0.1)
    back = end - 0.05 * rot[:, 0]
    yield arm.line(back, speed=arm.approach_speed)
    yield arm.line(back + np.array([0, 0, 0.15]), speed=arm.approach_speed)


def close_door(ctx: SkillContext, ent: EntitySpec) -> Skill:
    """Sweep a hinged door shut, the hand's long side along the door."""
    assert ent.joint is not None
    arm = ctx.arm
    pos, rot = _frame(ctx, ent)
    q0 = ctx.state.joints[ent.joint.id].q

    def hand_yaw(q: float, ref: float) -> float:
        # the hand's long side lies along the door and turns with it during the sweep
        return nearest_angle(door_yaw(rot, q), ref, math.pi)

    a = arm.grip_yaw(hand_yaw(q0, arm.opening_yaw()))
    start = door_contact(ent, pos, rot, q0, DOOR_CLEAR_START)
    quat = down_quat(a)
    sweep: list[Waypoint] = []
    steps = max(2, math.ceil(abs(DOOR_PAST - q0) / DOOR_STEP))
    for i in range(1, steps + 1):
        q = q0 + (DOOR_PAST - q0) * i / steps
        a = hand_yaw(q, a)
        sweep.append((door_contact(ent, pos, rot, q, DOOR_CLEAR), down_quat(a)))
    yield from push(ctx, start, quat, sweep, approach=0.1, speed=0.12)
    end = door_contact(ent, pos, rot, DOOR_PAST, 0.09)
    yield arm.line(end, speed=arm.approach_speed)
    yield arm.line(end + np.array([0, 0, 0.12]), speed=arm.approach_speed)


def turn_on(ctx: SkillContext, device: str) -> Skill:
    """Grip the device's knob from above and turn it past its on threshold."""
    ent = ctx.scene.entity(device)
    assert ent.joint is not None and ent.device is not None
    arm = ctx.arm
    pos, rot = _frame(ctx, ent)
    at = knob_grip(ent, pos, rot)
    a = arm.opening_yaw()
    yield from arm.travel_to(at + np.array([0.0, 0.0, 0.1]), down_quat(a), width=OPEN)
    yield arm.line(at, speed=arm.approach_speed)
    yield arm.hold(0.6, CLOSED)
    turn = knob_turn(ent, rot, ctx.state.joints[ent.joint.id].q)
    steps = 8
    for i in range(1, steps + 1):
        yield arm.line(at, down_quat(a + turn * i / steps), speed=0.1)
    yield arm.hold(0.2)
    yield arm.hold(0.4, OPEN)
    yield arm.line(at + np.array([0.0, 0.0, 0.12]), speed=arm.approach_speed)
    yield SYNC
