"""Verdict messages: the hand-serialized `StepVerdict` is what rclpy would deliver."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import deserialize_message

from mango.ros.verdict_msg import plain_step_verdict, step_verdict_cdr
from mango_ros.msg import StepVerdict

# ROS strings end at their first NUL, so no text holds one.
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=40)


def _fields(msg: StepVerdict) -> tuple:
    return (msg.header.stamp.sec, msg.header.stamp.nanosec, msg.header.frame_id, msg.path,
            msg.action_id, msg.status, msg.event,
            None if math.isnan(msg.completed_t) else msg.completed_t, msg.detail)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.integers(0, 10**12).map(lambda ns: ns / 1e9)), text, text,
       st.sampled_from(["pending", "enabled", "completed", "incomplete"]),
       st.sampled_from(["", "out_of_order", "regression"]),
       st.one_of(st.none(), st.floats(allow_nan=False)), text)
def test_serialized_step_verdict_matches_the_message(
        t: float | None, path: str, action_id: str, status: str, event: str,
        completed_t: float | None, detail: str) -> None:
    data = step_verdict_cdr(t, path, action_id, status, event, completed_t, detail)
    want = plain_step_verdict(t, path, action_id, status, completed_t, detail)
    want.event = event
    assert _fields(deserialize_message(data, StepVerdict)) == _fields(want)
