"""Recorded runs for the dataset-export tests and bench, written in-process as our recorder
writes a `mango policy run --bag … --record-views` run (topics under a namespace): two cameras, the
measured and commanded joints, world states of a soup and a sauce lifted (the soup then
placed in a basket) and the oracle node's final task verdict (`ORACLE` judged on those
states, as the node judges them). Each camera's image k is one flat grey level, so a
decoded frame says which image it is; a short earlier episode (world time 50 s, then a reset
to 0) comes first."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Header

from mango.bags import BagWriter
from mango.oracle.tracker import check_trace
from mango.oracle.world_state import WorldState
from mango.ros.verdict_msg import task_verdict
from mango.ros.world_state_msg import msg_to_state, record_to_msg
from support.bags import TYPE

# Two groups in any order, as the shipped LIBERO oracles: a fault in the first (the soup
# dropped before it is placed) does not stop the second completing.
ORACLE = {"instruction": "put the soup in the basket and lift the sauce",
          "execution_mode": "any_order", "plan": [
              {"execution_mode": "sequential", "actions": [
                  {"action_id": "lift", "monitoring": [{"handle_as": "up(soup)"}]},
                  {"action_id": "place", "monitoring": [{"handle_as": "in(soup, basket)"}]}]},
              {"execution_mode": "sequential", "actions": [
                  {"action_id": "lift_sauce", "monitoring": [{"handle_as": "up(sauce)"}]}]}]}

NS = "/mango_test"
ARM = [f"fr3_joint{i}" for i in range(1, 8)]
FINGERS = ["fr3_finger_joint1", "fr3_finger_joint2"]
CAMERA_TOPICS = {"front": f"{NS}/camera/front/image_raw", "wrist": f"{NS}/camera/wrist/image_raw"}


@dataclass
class RunSpec:
    """A run's timing (s, world time) and what happens in it."""

    duration: float = 3.0
    lift_at: float = 1.0
    place_at: float | None = 2.0  # None: never placed (a faulted run)
    drop_at: float | None = None  # the soup falls back to the table then
    sauce_at: float | None = 2.5  # the sauce is lifted then
    camera_hz: float = 10.0
    joints_hz: float = 50.0
    command_hz: float = 50.0
    command_from: float = 0.3
    state_hz: float = 20.0
    width: int = 32
    height: int = 24
    stop_camera: dict[str, float] = field(default_factory=dict)  # camera -> stops at
    gap: tuple[str, float, float] | None = None  # (camera, from, to): no images then
    verdict: bool = True  # record the oracle node's task verdict
    pre_episode: bool = True


def grey(camera: str, k: int) -> int:
    """The grey level of a camera's k-th image."""
    return (k * 9 + (0 if camera == "front" else 120)) % 240 + 8


def arm_q(t: float) -> list[float]:
    return [0.1 * (j + 1) + 0.05 * t for j in range(7)]


def gripper(t: float) -> float:
    return 0.08 - 0.01 * t


def command_q(t: float) -> list[float]:
    return [0.1 * (j + 1) + 0.05 * t + 0.001 for j in range(7)]


def command_width(t: float) -> float:
    return 0.07 - 0.01 * t


def _header(t: float) -> Header:
    sec = int(np.floor(t))
    return Header(stamp=Time(sec=sec, nanosec=round((t - sec) * 1e9)), frame_id="")


def _image(camera: str, k: int, t: float, spec: RunSpec) -> bytes:
    pixels = np.full((spec.height, spec.width, 3), grey(camera, k), dtype=np.uint8)
    return serialize_message(Image(header=_header(t), height=spec.height, width=spec.width,
                                   encoding="rgb8", is_bigendian=0, step=spec.width * 3,
                                   data=pixels.tobytes()))


def _joint_state(t: float) -> bytes:
    w = gripper(t)
    return serialize_message(JointState(header=_header(t), name=[*ARM, *FINGERS],
                                        position=[*arm_q(t), w / 2, w / 2]))


def _command(t: float) -> bytes:
    return serialize_message(JointState(header=_header(t), name=[*ARM, "gripper"],
                                        position=[*command_q(t), command_width(t)]))


def world_state(t: float, spec: RunSpec) -> bytes:
    """The CDR bytes of the state at `t`."""
    lifted = t >= spec.lift_at and (spec.drop_at is None or t < spec.drop_at)
    placed = spec.place_at is not None and t >= spec.place_at
    sauce_up = spec.sauce_at is not None and t >= spec.sauce_at
    soup = [0.5, 0.3, 0.86] if placed else [0.0, 0.0, 1.0 if lifted else 0.84]
    return serialize_message(record_to_msg({"t": t, "objects": {
        "soup": {"position": soup, "size": [0.05, 0.05, 0.08]},
        "sauce": {"position": [0.2, 0.0, 1.0 if sauce_up else 0.84], "size": [0.05, 0.05, 0.08]},
        "basket": {"position": [0.5, 0.3, 0.86], "size": [0.2, 0.2, 0.1], "kind": "region"},
        "table": {"position": [0.0, 0.0, 0.4], "size": [2.0, 2.0, 0.8], "kind": "surface"},
    }}))


def _times(hz: float, start: float, end: float) -> list[float]:
    n = int(np.floor((end - start) * hz + 1e-9)) + 1
    return [round(start + k / hz, 9) for k in range(n)]


def write_run_bag(bag: Path, spec: RunSpec | None = None) -> dict:
    """Write the run; returns what the tests compare with (the oracle's report)."""
    spec = spec or RunSpec()
    events: list[tuple[float, int, str, bytes]] = []  # (world time, order, topic, payload)

    def add(t: float, topic: str, data: bytes) -> None:
        events.append((t, len(events), topic, data))

    for camera, topic in CAMERA_TOPICS.items():
        stop = spec.stop_camera.get(camera, spec.duration)
        for k, t in enumerate(_times(spec.camera_hz, 0.0, spec.duration)):
            in_gap = spec.gap is not None and spec.gap[0] == camera and \
                spec.gap[1] < t < spec.gap[2]
            if t <= stop and not in_gap:
                add(t, topic, _image(camera, k, t, spec))
    for t in _times(spec.joints_hz, 0.0, spec.duration):
        add(t, f"{NS}/joint_states", _joint_state(t))
    for t in _times(spec.command_hz, spec.command_from, spec.duration):
        add(t, f"{NS}/joint_command", _command(t))
    states = []
    for t in _times(spec.state_hz, 0.0, spec.duration):
        data = world_state(t, spec)
        states.append(data)
        add(t, f"{NS}/world_state", data)
    events.sort()
    report = check_trace(ORACLE, [_state(d) for d in states])
    with BagWriter(bag) as w:
        w.add_topic(f"{NS}/world_state", TYPE)
        for topic in CAMERA_TOPICS.values():
            w.add_topic(topic, "sensor_msgs/msg/Image")
        w.add_topic(f"{NS}/joint_states", "sensor_msgs/msg/JointState")
        w.add_topic(f"{NS}/joint_command", "sensor_msgs/msg/JointState")
        w.add_topic(f"{NS}/oracle/task_verdict", "mango_ros/msg/TaskVerdict")
        log = 1_000_000_000
        if spec.pre_episode:  # another run before the reset: not part of the export
            for k in range(5):
                t = 50.0 + 0.1 * k
                for topic in CAMERA_TOPICS.values():
                    w.write(topic, _image("front", 200, t, spec), log)
                w.write(f"{NS}/joint_states", _joint_state(t), log)
                w.write(f"{NS}/world_state", world_state(t, spec), log)
                log += 100_000_000
            w.write(f"{NS}/oracle/task_verdict", _verdict(check_trace(
                ORACLE, [_state(world_state(50.0, spec))]), 50.4), log)
        for t, _, topic, data in events:
            w.write(topic, data, log + int(t * 1e9))
        if spec.verdict:
            w.write(f"{NS}/oracle/task_verdict", _verdict(report, spec.duration),
                    log + int((spec.duration + 0.01) * 1e9))
    return report.to_json()


def _state(data: bytes) -> WorldState:
    from rclpy.serialization import deserialize_message

    from mango_ros.msg import WorldState as WorldStateMsg

    return msg_to_state(deserialize_message(data, WorldStateMsg))


def _verdict(report: object, t: float) -> bytes:
    msg = task_verdict(report, ORACLE["instruction"])  # type: ignore[arg-type]
    msg.header = _header(t)
    assert json.loads(msg.report_json)["verdict"] in ("pass", "fail")
    return serialize_message(msg)
