"""`WorldState` message <-> spec §3 world-state record, both ways, lossless.

Time `t` travels in `header.stamp` at nanosecond resolution; optional record fields (an
object's orientation or size, the gripper and its fields, a joint's closed/open fractions) carry a
presence flag or NaN so a record survives the round trip exactly.
"""

from __future__ import annotations

import math
from typing import Any

from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from std_msgs.msg import Header

from mango.oracle.world_state import (
    DeviceState,
    EntityState,
    GripperState,
    JointState,
    WorldState,
    parse_world_state,
)
from mango_ros.msg import Contact, Fact, JointValue, ObjectState
from mango_ros.msg import DeviceState as DeviceStateMsg
from mango_ros.msg import GripperState as GripperStateMsg
from mango_ros.msg import WorldState as WorldStateMsg

WORLD_FRAME = "world"
_NS = 1_000_000_000


def stamp_from_seconds(t: float) -> tuple[int, int]:
    """Split seconds into (sec, nanosec), rounding to the nearest nanosecond."""
    total = round(t * _NS)
    return total // _NS, total % _NS


def seconds_from_stamp(sec: int, nanosec: int) -> float:
    """Inverse of `stamp_from_seconds`, exact for times given with up to 9 decimals."""
    return round(sec + nanosec / _NS, 9)


def state_to_msg(state: WorldState, frame_id: str = WORLD_FRAME) -> WorldStateMsg:
    """Build the message for a validated world state."""
    msg = WorldStateMsg()
    sec, nsec = stamp_from_seconds(state.t)
    msg.header = Header(frame_id=frame_id)
    msg.header.stamp.sec = sec
    msg.header.stamp.nanosec = nsec
    objects = []
    for oid, ent in state.objects.items():
        o = ObjectState(id=oid, kind=ent.kind, parent=ent.parent or "")
        px, py, pz = ent.position
        pose = Pose(position=Point(x=px, y=py, z=pz))
        if ent.orientation is not None:
            w, x, y, z = ent.orientation
            pose.orientation = Quaternion(x=x, y=y, z=z, w=w)
            o.has_orientation = True
        o.pose = pose
        if ent.size is not None:
            sx, sy, sz = ent.size
            o.size = Vector3(x=sx, y=sy, z=sz)
            o.has_size = True
        objects.append(o)
    msg.objects = objects
    msg.joints = [
        JointValue(
            id=jid,
            q=j.q,
            q_open=j.q_open,
            q_closed=j.q_closed,
            closed_frac=math.nan if j.closed_frac is None else j.closed_frac,
            open_frac=math.nan if j.open_frac is None else j.open_frac,
        )
        for jid, j in state.joints.items()
    ]
    msg.devices = [DeviceStateMsg(id=did, on=d.on) for did, d in state.devices.items()]
    if state.gripper is not None:
        g = state.gripper
        msg.has_gripper = True
        msg.gripper = GripperStateMsg(
            width=0.0 if g.width is None else g.width,
            has_width=g.width is not None,
            closed=bool(g.closed),
            has_closed=g.closed is not None,
        )
    msg.contacts = [Contact(a=a, b=b) for a, b in state.contacts]
    msg.facts = [Fact(atom=k, value=v) for k, v in state.facts.items()]
    return msg


def record_to_msg(record: Any, frame_id: str = WORLD_FRAME, file: str | None = None,
                  line: int | None = None) -> WorldStateMsg:
    """Validate a spec record (raising `InputError` naming the field) and convert it."""
    return state_to_msg(parse_world_state(record, file=file, line=line), frame_id)


def msg_to_state(msg: WorldStateMsg) -> WorldState:
    """Build the core's world state from a message.

    Messages are already typed, so the models are constructed without re-validation: this is
    the oracle node's hot path.
    """
    objects: dict[str, EntityState] = {}
    for o in msg.objects:
        p = o.pose.position
        fields: dict[str, Any] = {
            "position": (p.x, p.y, p.z),
            "orientation": None,
            "size": None,
            "kind": o.kind or "object",
            "parent": o.parent or None,
        }
        if o.has_orientation:
            q = o.pose.orientation
            fields["orientation"] = (q.w, q.x, q.y, q.z)
        if o.has_size:
            fields["size"] = (o.size.x, o.size.y, o.size.z)
        objects[o.id] = EntityState.model_construct(**fields)
    joints = {
        j.id: JointState.model_construct(
            q=j.q,
            q_open=j.q_open,
            q_closed=j.q_closed,
            closed_frac=None if math.isnan(j.closed_frac) else j.closed_frac,
            open_frac=None if math.isnan(j.open_frac) else j.open_frac,
        )
        for j in msg.joints
    }
    devices = {d.id: DeviceState.model_construct(on=d.on) for d in msg.devices}
    gripper = None
    if msg.has_gripper:
        g = msg.gripper
        gripper = GripperState.model_construct(
            width=g.width if g.has_width else None,
            closed=g.closed if g.has_closed else None,
        )
    return WorldState.model_construct(
        t=seconds_from_stamp(msg.header.stamp.sec, msg.header.stamp.nanosec),
        objects=objects,
        joints=joints,
        devices=devices,
        gripper=gripper,
        contacts=[(c.a, c.b) for c in msg.contacts],
        facts={f.atom: f.value for f in msg.facts},
    )


def msg_to_record(msg: WorldStateMsg) -> dict[str, Any]:
    """The spec §3 JSON record of a message."""
    return msg_to_state(msg).to_record()
