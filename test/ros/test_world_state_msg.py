"""WorldState message <-> spec JSON record conversion."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from rclpy.serialization import deserialize_message, serialize_message

from mango.errors import InputError
from mango.oracle.world_state import read_trace
from mango.ros.world_state_msg import (
    msg_to_record,
    record_to_msg,
    seconds_from_stamp,
    stamp_from_seconds,
)
from mango_ros.msg import WorldState

DATA = Path(__file__).resolve().parents[1] / "data" / "ros"

SPEC_EXAMPLE = {
    "t": 0.05,
    "objects": {
        "alphabet_soup_1": {"position": [0.1, 0.2, 0.93], "orientation": [1, 0, 0, 0],
                            "size": [0.07, 0.07, 0.1], "kind": "object"},
        "basket_1_contain_region": {"position": [0.3, 0.1, 0.9], "size": [0.2, 0.2, 0.1],
                                    "kind": "region", "parent": "basket_1"},
        "table_1": {"position": [0.0, 0.0, 0.8], "size": [1.0, 1.0, 0.05], "kind": "surface"},
    },
    "joints": {"white_cabinet_1_bottom_region": {"q": 0.0, "q_open": 0.16, "q_closed": 0.0}},
    "devices": {"flat_stove_1": {"on": False}},
    "gripper": {"width": 0.08, "closed": False},
    "contacts": [["alphabet_soup_1", "robot_gripper"]],
    "facts": {"grasped(alphabet_soup_1)": False},
}


def test_spec_example_round_trips_exactly() -> None:
    back = msg_to_record(record_to_msg(SPEC_EXAMPLE))
    assert back == SPEC_EXAMPLE
    # Numbers compare equal as numbers (JSON ints come back as floats of the same value).
    assert json.loads(json.dumps(back)) == json.loads(json.dumps(SPEC_EXAMPLE))


def test_round_trip_survives_serialization() -> None:
    msg = record_to_msg(SPEC_EXAMPLE)
    again = deserialize_message(serialize_message(msg), WorldState)
    assert msg_to_record(again) == SPEC_EXAMPLE


def test_message_fields_follow_ros_conventions() -> None:
    msg = record_to_msg(SPEC_EXAMPLE)
    assert msg.header.frame_id == "world"
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (0, 50_000_000)
    soup = next(o for o in msg.objects if o.id == "alphabet_soup_1")
    assert soup.pose.orientation.w == 1.0 and soup.has_orientation and soup.has_size
    region = next(o for o in msg.objects if o.id == "basket_1_contain_region")
    assert region.parent == "basket_1" and region.kind == "region"
    assert not region.has_orientation and region.pose.orientation.w == 1.0
    joint = msg.joints[0]
    assert math.isnan(joint.closed_frac)


def test_every_trace_record_round_trips() -> None:
    for state in read_trace(DATA / "sample_trace.jsonl"):
        rec = state.to_record()
        assert msg_to_record(record_to_msg(rec)) == rec


def test_minimal_record_with_facts_only() -> None:
    rec = {"t": 3.0, "facts": {"in(a, b)": True}}
    assert msg_to_record(record_to_msg(rec)) == {
        "t": 3.0, "objects": {}, "joints": {}, "devices": {}, "contacts": [],
        "facts": {"in(a, b)": True}}


@pytest.mark.parametrize("t", [0.0, 0.05, 1.999999999, 12.345678901, 86400.25, 1e6 + 0.5])
def test_time_travels_at_nanosecond_resolution(t: float) -> None:
    assert seconds_from_stamp(*stamp_from_seconds(t)) == t


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"objects": {}}, "t"),
        ({"t": 1, "objects": {"a": {"position": [0, 0]}}}, "objects.a.position"),
        ({"t": 1, "objects": {"a": {"position": [0, 0, "x"]}}}, "objects.a.position[2]"),
        ({"t": 1, "objects": {"a": {"position": [0, 0, 0], "kind": "thing"}}}, "objects.a.kind"),
        ({"t": 1, "joints": {"j": {"q": 0, "q_open": 1}}}, "joints.j.q_closed"),
        ({"t": 1, "devices": {"d": {"on": "maybe"}}}, "devices.d.on"),
        ({"t": 1, "contacts": [["a"]]}, "contacts[0]"),
        ({"t": 1, "facts": {"up(a)": 3}}, "facts.up(a)"),
        ({"t": float("nan")}, "t"),
    ],
)
def test_malformed_record_names_the_field(record: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        record_to_msg(record, file="trace.jsonl", line=4)
    assert err.value.field is not None and err.value.field.startswith(field)
    assert "trace.jsonl:4" in str(err.value)
