"""The fast CDR decoder gives exactly what rclpy's deserializer + converter give."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message, serialize_message

from mango.bags.world_state_cdr import CdrError, decode_world_state
from mango.oracle.world_state import WorldState as WorldStateModel
from mango.ros.world_state_msg import msg_to_state, record_to_msg
from mango_ros.msg import WorldState

names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789é", min_size=0, max_size=12)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
vec3 = st.tuples(finite, finite, finite)


@st.composite
def quaternions(draw: st.DrawFn) -> tuple[float, float, float, float]:
    a = draw(st.floats(-math.pi, math.pi))
    return (math.cos(a / 2), 0.0, 0.0, math.sin(a / 2))


entities = st.fixed_dictionaries(
    {"position": vec3, "kind": st.sampled_from(["object", "region", "surface", "robot"])},
    optional={"orientation": quaternions(), "size": st.tuples(*[st.floats(0, 5)] * 3),
              "parent": names.filter(bool)},
)
joints = st.fixed_dictionaries(
    {"q": finite, "q_open": st.just(1.0), "q_closed": st.just(0.0)},
    optional={"closed_frac": st.floats(0, 1), "open_frac": st.floats(0, 1)},
)
records = st.fixed_dictionaries(
    {"t": st.integers(0, 10**12).map(lambda ns: ns / 1e9)},
    optional={
        "objects": st.dictionaries(names, entities, max_size=6),
        "joints": st.dictionaries(names, joints, max_size=3),
        "devices": st.dictionaries(names, st.fixed_dictionaries({"on": st.booleans()}),
                                   max_size=3),
        "gripper": st.fixed_dictionaries({}, optional={"width": st.floats(0, 0.1),
                                                       "closed": st.booleans()}),
        "contacts": st.lists(st.tuples(names, names), max_size=4),
        "facts": st.dictionaries(names.map(lambda n: f"grasped({n})"), st.booleans(),
                                 max_size=3),
    },
)


@settings(max_examples=200, deadline=None)
@given(records)
def test_decoder_agrees_with_rclpy(record: dict) -> None:
    data = serialize_message(record_to_msg(record))
    expected = msg_to_state(deserialize_message(data, WorldState)).to_record()
    assert decode_world_state(data).to_record() == expected


@pytest.mark.parametrize("cut", [0, 3, 10, 40])
def test_truncated_bytes_are_a_clear_error(cut: int) -> None:
    data = serialize_message(record_to_msg(
        {"t": 1.0, "objects": {"a": {"position": [1, 2, 3]}}, "facts": {"up(a)": True}}))
    with pytest.raises(CdrError):
        decode_world_state(data[:cut])


@settings(max_examples=60, deadline=None)
@given(st.lists(records, min_size=2, max_size=6), st.data())
def test_streaming_decoder_reuses_unchanged_objects_correctly(
    stream: list[dict], data: st.DataObject
) -> None:
    from mango.bags.world_state_cdr import WorldStateDecoder

    # Make some objects repeat unchanged from one state to the next, as in a real stream.
    for prev, cur in itertools.pairwise(stream):
        for oid, ent in prev.get("objects", {}).items():
            if data.draw(st.booleans()):
                cur.setdefault("objects", {})[oid] = ent
    decoder = WorldStateDecoder()
    for record in stream:
        payload = serialize_message(record_to_msg(record))
        expected = msg_to_state(deserialize_message(payload, WorldState)).to_record()
        assert decoder.decode(payload).to_record() == expected


def _expected(payload: bytes) -> dict:
    return msg_to_state(deserialize_message(payload, WorldState)).to_record()


def test_stream_whose_shape_comes_and_goes() -> None:
    """Contacts and facts appearing and vanishing change the message's shape back and forth;
    every state still decodes exactly, bit for bit (a -0.0 is not its predecessor's 0.0)."""
    from mango.bags.world_state_cdr import WorldStateDecoder

    decoder = WorldStateDecoder()
    for i in range(40):
        record = {"t": i * 0.01, "objects": {
            "soup": {"position": [0.0 if i % 2 else -0.0, 0.1, 0.9], "size": [0.1, 0.1, 0.1]},
            "table": {"position": [0, 0, 0.4], "kind": "surface"}},
            "contacts": [["soup", "table"]] * (i % 3),
            "facts": {"grasped(soup)": True} if i % 4 == 0 else {},
            "joints": {"drawer": {"q": 0.1 * (i % 5), "q_open": 1.0, "q_closed": 0.0}}}
        payload = serialize_message(record_to_msg(record))
        got = decoder.decode(payload)
        assert got.to_record() == _expected(payload)
        assert math.copysign(1.0, got.objects["soup"].position[0]) == (-1.0 if i % 2 == 0
                                                                        else 1.0)


def test_editing_a_decoded_state_leaves_the_next_alone() -> None:
    from mango.bags.world_state_cdr import WorldStateDecoder

    record = {"t": 0.0, "objects": {"a": {"position": [1, 2, 3]}},
              "contacts": [["a", "b"]], "facts": {"up(a)": True},
              "devices": {"stove": {"on": True}}}
    decoder = WorldStateDecoder()
    first = decoder.decode(serialize_message(record_to_msg(record)))
    first.objects.clear()
    first.contacts.append(("x", "y"))
    first.facts["up(a)"] = False
    first.devices.clear()
    second = decoder.decode(serialize_message(record_to_msg({**record, "t": 0.1})))
    assert second.to_record() == {**WorldStateModel.model_validate(record).to_record(), "t": 0.1}
