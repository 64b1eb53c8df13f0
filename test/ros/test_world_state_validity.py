"""Hostile field values in `WorldState` messages (seeded fuzz): the decoder the oracle node
and `mango replay` share never raises on a well-formed message, drops exactly what breaks the
rules of oracles.md §3 (non-finite numbers, negative sizes, non-unit quaternions, joints whose
open and closed positions coincide, ids given twice) and says so; the JSON reader refuses a
trace record holding the same values, naming the field — one set of rules."""

from __future__ import annotations

import math
import random

import pytest
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from rclpy.serialization import serialize_message

from mango.bags.world_state_cdr import WorldStateDecoder
from mango.errors import InputError
from mango.oracle.world_state import parse_world_state
from mango_ros.msg import DeviceState, Fact, GripperState, JointValue, ObjectState, WorldState

HOSTILE = [0.0, 0.25, -1.5, 1e308, -1e308, math.nan, math.inf, -math.inf]
IDS = ["soup", "basket", "table", "bowl", "mug", "plate", "caddy", "book", "pot", "stove"]


def _value(rng: random.Random) -> float:
    return rng.choice(HOSTILE) if rng.random() < 0.04 else rng.uniform(-1, 1)


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


def hostile_message(rng: random.Random) -> tuple[WorldState, dict]:
    """A message and what the rules must keep of it, worked out here from the spec."""
    msg = WorldState()
    msg.header.stamp.sec = rng.randint(0, 10**6)
    msg.header.stamp.nanosec = rng.randint(0, 10**9 - 1)
    keep: dict = {"objects": set(), "joints": set(), "devices": set(), "facts": set(),
                  "gripper": False}
    ids = [rng.choice(IDS) for _ in range(rng.randint(0, 5))]
    for oid in ids:
        pos = [_value(rng) for _ in range(3)]
        o = ObjectState(id=oid, pose=Pose(position=Point(x=pos[0], y=pos[1], z=pos[2])))
        ok = _finite(*pos)
        if rng.random() < 0.5:
            size = [abs(_value(rng)) if rng.random() < 0.95 else -0.1 for _ in range(3)]
            o.size, o.has_size = Vector3(x=size[0], y=size[1], z=size[2]), True
            ok = ok and _finite(*size) and min(size) >= 0
        if rng.random() < 0.5:
            a = rng.uniform(-3, 3)
            q = [math.cos(a / 2), 0.0, 0.0, math.sin(a / 2)]
            if rng.random() < 0.1:
                q[rng.randrange(4)] = rng.choice([*HOSTILE, 2.0])
            o.pose.orientation = Quaternion(w=q[0], x=q[1], y=q[2], z=q[3])
            o.has_orientation = True
            ok = ok and _finite(*q) and abs(math.sqrt(sum(c * c for c in q)) - 1) <= 1e-3
        if ok and ids.count(oid) == 1:
            keep["objects"].add(oid)
        msg.objects.append(o)
    joint_ids = [rng.choice(["drawer", "door", "lid", "knob"]) for _ in range(rng.randint(0, 2))]
    for jid in joint_ids:
        q, q_open = _value(rng), 0.0 if rng.random() < 0.1 else rng.choice([1.0, _value(rng)])
        msg.joints.append(JointValue(id=jid, q=q, q_open=q_open, q_closed=0.0,
                                     closed_frac=math.nan, open_frac=math.nan))
        if _finite(q, q_open) and q_open != 0.0 and joint_ids.count(jid) == 1:
            keep["joints"].add(jid)
    device_ids = [rng.choice(["stove", "lamp", "fan", "oven"]) for _ in range(rng.randint(0, 2))]
    msg.devices = [DeviceState(id=d, on=rng.random() < 0.5) for d in device_ids]
    keep["devices"] = {d for d in device_ids if device_ids.count(d) == 1}
    atoms = [rng.choice(["up(soup)", "grasped(soup)", "up(mug)", "open(door)"])
             for _ in range(rng.randint(0, 2))]
    msg.facts = [Fact(atom=a, value=rng.random() < 0.5) for a in atoms]
    keep["facts"] = {a for a in atoms if atoms.count(a) == 1}
    if rng.random() < 0.5:
        width = rng.choice([0.04, 0.02, 0.0, 0.08, math.nan, math.inf])
        msg.has_gripper = True
        msg.gripper = GripperState(width=width, has_width=True, closed=False, has_closed=True)
        keep["gripper"] = math.isfinite(width)
    return msg, keep


def _record(msg: WorldState) -> dict:
    """The same data as a trace record (JSON's NaN and Infinity tokens are what Python
    writes), for the readers that take files."""
    return {"t": msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
            "objects": {o.id: {"position": [o.pose.position.x, o.pose.position.y,
                                            o.pose.position.z],
                               **({"size": [o.size.x, o.size.y, o.size.z]} if o.has_size
                                  else {}),
                               **({"orientation": [o.pose.orientation.w, o.pose.orientation.x,
                                                   o.pose.orientation.y, o.pose.orientation.z]}
                                  if o.has_orientation else {})} for o in msg.objects},
            "joints": {j.id: {"q": j.q, "q_open": j.q_open, "q_closed": j.q_closed}
                       for j in msg.joints},
            **({"gripper": {"width": msg.gripper.width}} if msg.has_gripper else {})}


def test_hostile_field_values_are_dropped_by_the_rules_and_said() -> None:
    rng = random.Random(12)
    counts = {"cases": 0, "dropped_something": 0, "json_refused": 0}
    for _ in range(400):
        msg, keep = hostile_message(rng)
        decoder = WorldStateDecoder()
        state = decoder.decode(serialize_message(msg))  # never raises on well-formed CDR
        counts["cases"] += 1
        assert set(state.objects) == keep["objects"]
        assert set(state.joints) == keep["joints"]
        assert set(state.devices) == keep["devices"]
        assert set(state.facts) == keep["facts"]
        assert (state.gripper is not None) == keep["gripper"]
        record = state.to_record()
        assert "nan" not in repr(record) and "inf" not in repr(record)
        sent = {"objects": [o.id for o in msg.objects], "joints": [j.id for j in msg.joints],
                "devices": [d.id for d in msg.devices], "facts": [f.atom for f in msg.facts]}
        for section, ids in sent.items():
            for dropped in set(ids) - keep[section]:
                assert any(repr(dropped) in p for p in decoder.problems), (dropped, decoder)
        lost = any(set(ids) - keep[s] for s, ids in sent.items()) or (
            msg.has_gripper and not keep["gripper"])
        assert bool(decoder.problems) == bool(lost)
        counts["dropped_something"] += bool(lost)
        # The same values in a trace file: refused naming the field, by the same rules (ids
        # given twice cannot reach a JSON object, which refuses duplicate keys itself).
        unique = all(len(set(v)) == len(v) for v in sent.values())
        if unique:
            try:
                parse_world_state(_record(msg), file="t.jsonl", line=3)
            except InputError as exc:
                counts["json_refused"] += 1
                assert lost and str(exc).startswith("t.jsonl:3")
            else:
                assert not lost
    # both outcomes were tried often, on both paths
    assert 100 < counts["dropped_something"] < 300 and counts["json_refused"] > 50, counts


@pytest.mark.parametrize("q_open", [0.0, -0.0])
def test_a_joint_whose_open_and_closed_positions_coincide_is_dropped(q_open: float) -> None:
    msg = WorldState(joints=[JointValue(id="drawer", q=0.1, q_open=q_open, q_closed=0.0,
                                        closed_frac=math.nan, open_frac=math.nan)])
    decoder = WorldStateDecoder()
    assert decoder.decode(serialize_message(msg)).joints == {}
    assert decoder.problems == ["joint 'drawer': q_open and q_closed must differ "
                                f"(both {q_open})"]
