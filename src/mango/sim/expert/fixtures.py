"""Fixture skills: open or close a drawer, close a door, turn a knob (no task plan).

Each skill names the fixture by id, plans on `ctx.arm` from the fixture's pose in
`ctx.state` and ends with `SYNC`, so the caller can check the effect on a fresh state.
"""

from __future__ import annotations

import math

import numpy as np

from mango.geometry import IDENTITY, frame_quat, nearest_angle, quat_to_mat, to_world
from mango.sim.expert.arm import CLOSED, FINGERTIP, OPEN, SYNC, ExpertError
from mango.sim.expert.motions import (
    Skill,
    SkillContext,
    Waypoint,
    down_quat,
    push,
)
from mango.sim.parts import KNOB_HALF, door_hinge_local, drawer_handle_local, knob_local
from mango.sim.scene import EntitySpec


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
    yield from arm.travel_to(pre + np.array([0.0, 0.0, 0.1]), width=OPEN)
    # turn the hand level, its fingers opening up and down: whichever of the two wrist
    # turns (and of the two heights to turn at) has a continuous joint path
    turned = None
    for up, lift in ((1.0, 0.0), (-1.0, 0.0), (1.0, 0.1), (-1.0, 0.1)):
        axis = np.array([0.0, 0.0, up])
        quat = frame_quat(np.cross(axis, d), axis, d)
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
    lo, hi = ent.joint.range
    far = lo if abs(lo - ent.joint.q_closed) > abs(hi - ent.joint.q_closed) else hi
    pull = abs(far - q) + 0.01  # to the stop: the fingers give a little on release
    yield arm.line(bar - pull * d, speed=0.06)
    yield arm.hold(0.4, OPEN)
    back = bar - (pull + 0.08) * d
    yield arm.line(back, speed=arm.approach_speed)
    yield arm.line(back + np.array([0.0, 0.0, 0.1]), speed=arm.approach_speed)


def close_drawer(ctx: SkillContext, ent: EntitySpec) -> Skill:
    """Push the drawer front of a drawer cabinet home."""
    assert ent.joint is not None
    arm = ctx.arm
    pos, rot = _frame(ctx, ent)
    q = ctx.state.joints[ent.joint.id].q
    handle = np.asarray(drawer_handle_local(ent, q))
    done = np.asarray(drawer_handle_local(ent, ent.joint.q_closed))
    # fingertips low on the drawer front: the hand body stays below the fixed upper panel
    start_l = handle + np.array([-0.035, 0.0, FINGERTIP - 0.05])
    end_l = done + np.array([0.0, 0.0, FINGERTIP - 0.05])
    fx = rot[:, 0]
    a = arm.grip_yaw(math.atan2(fx[1], fx[0]) + math.pi / 2)
    start = to_world(pos, rot, start_l)
    end = to_world(pos, rot, end_l)
    yield from push(ctx, start, down_quat(a), [(end, None)], approach=0.12, speed=0.1)
    back = end - 0.05 * fx
    yield arm.line(back, speed=arm.approach_speed)
    yield arm.line(back + np.array([0, 0, 0.15]), speed=arm.approach_speed)


def close_door(ctx: SkillContext, ent: EntitySpec) -> Skill:
    """Sweep a hinged door shut, the hand's long side along the door."""
    assert ent.joint is not None
    arm = ctx.arm
    pos, rot = _frame(ctx, ent)
    q0 = ctx.state.joints[ent.joint.id].q
    hinge = np.asarray(door_hinge_local(ent))
    width = ent.size[1]
    r = 0.75 * width
    z_l = -ent.size[2] / 2 + 0.06 + FINGERTIP

    def point(q: float, clear: float) -> np.ndarray:
        along = np.array([math.sin(q), math.cos(q), 0.0])
        outer = np.array([-math.cos(q), math.sin(q), 0.0])
        return to_world(pos, rot, hinge + r * along + clear * outer + np.array([0, 0, z_l]))

    def hand_yaw(q: float, ref: float) -> float:
        # the hand's long side lies along the door and turns with it during the sweep
        along = rot @ np.array([math.sin(q), math.cos(q), 0.0])
        return nearest_angle(math.atan2(along[1], along[0]), ref, math.pi)

    a = arm.grip_yaw(hand_yaw(q0, arm.opening_yaw()))
    start = point(q0, 0.05)
    quat = down_quat(a)
    sweep: list[Waypoint] = []
    steps = max(2, math.ceil(abs(0.05 - q0) / 0.08))
    for i in range(1, steps + 1):
        q = q0 + (0.05 - q0) * i / steps
        a = hand_yaw(q, a)
        sweep.append((point(q, 0.035), down_quat(a)))
    yield from push(ctx, start, quat, sweep, approach=0.1, speed=0.12)
    end = point(0.05, 0.09)
    yield arm.line(end, speed=arm.approach_speed)
    yield arm.line(end + np.array([0, 0, 0.12]), speed=arm.approach_speed)


def turn_on(ctx: SkillContext, device: str) -> Skill:
    """Grip the device's knob from above and turn it past its on threshold."""
    ent = ctx.scene.entity(device)
    assert ent.joint is not None and ent.device is not None
    arm = ctx.arm
    pos, rot = _frame(ctx, ent)
    knob = to_world(pos, rot, knob_local(ent))
    z = knob[2] + KNOB_HALF - 0.012
    a = arm.opening_yaw()
    yield from arm.travel_to(np.array([knob[0], knob[1], z + 0.1]), down_quat(a), width=OPEN)
    yield arm.line(np.array([knob[0], knob[1], z]), speed=arm.approach_speed)
    yield arm.hold(0.6, CLOSED)
    turn = ent.device.on_threshold + 0.35
    steps = 8
    for i in range(1, steps + 1):
        yield arm.line(np.array([knob[0], knob[1], z]), down_quat(a + turn * i / steps),
                       speed=0.1)
    yield arm.hold(0.2)
    yield arm.hold(0.4, OPEN)
    yield arm.line(np.array([knob[0], knob[1], z + 0.12]), speed=arm.approach_speed)
    yield SYNC
