"""The topics of a recorded run that a training frame is made of, read from a bag: camera
images, measured joints, commanded joints, world states and the oracle's task verdict.

Topics are found by type and name, so a run recorded under a namespace (`mango policy run`)
reads as one recorded in the root: cameras are `sensor_msgs/msg/Image` topics named
`…/<camera>/image_raw`, the arm is the `JointState` topic ending in `joint_states`, its
commands the one ending in `joint_command`. Only the bag's last episode is kept (world time
going back starts a new one, as in `mango replay`): what came before the last reset is
another run. Times are the messages' header stamps (the simulator's clock in a sim run, the
clock the oracle's completion times use), not the recorder's log times.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mango.bags.reader import BagReader
from mango.bags.states import WORLD_STATE_TYPE, episode_starts
from mango.bags.types import BagTypes, default_types
from mango.errors import InputError
from mango.oracle.tracker import Report

IMAGE_TYPE = "sensor_msgs/msg/Image"
JOINT_STATE_TYPE = "sensor_msgs/msg/JointState"
TASK_VERDICT_TYPE = "mango_ros/msg/TaskVerdict"
_STAMP = struct.Struct("<iI")  # header.stamp right after the 4-byte CDR encapsulation
# encoding -> (channels, index of red, green, blue): pixels become RGB for training
_COLOUR = {"rgb8": (3, (0, 1, 2)), "bgr8": (3, (2, 1, 0)), "rgba8": (4, (0, 1, 2)),
           "bgra8": (4, (2, 1, 0)), "mono8": (1, (0, 0, 0))}


@dataclass
class Stream:
    """One topic's messages in the episode: stamps (s) and payloads (none kept for camera
    images: `bags.camera_images` reads those as frames need them), in recording order."""

    topic: str
    stamps: list[float] = field(default_factory=list)
    payloads: list[bytes] = field(default_factory=list)

    def times(self) -> np.ndarray:
        return np.asarray(self.stamps, dtype=np.float64)


@dataclass
class RunStreams:
    """What one bag holds of a run, its last episode only."""

    bag: Path
    cameras: dict[str, Stream]  # camera name -> its images
    joint_states: Stream
    joint_command: Stream
    world_state: str | None  # the WorldState topic (None: the bag has none)
    episode: int  # 1-based number of the episode kept
    first_log: int  # log time (ns) where the episode starts: earlier messages are another run
    verdict: Report | None = None  # the last task verdict recorded in the episode
    instruction: str = ""

    def error(self, message: str, topic: str | None = None) -> InputError:
        """Bad input in this bag (and topic)."""
        return InputError(message, file=str(self.bag), field=topic)


def _topics_by_type(topics: dict[str, tuple[str, int]], msgtype: str) -> list[str]:
    return sorted(t for t, (kind, n) in topics.items() if kind == msgtype and n)


def _one(bag: Path, found: list[str], suffix: str, what: str,
         all_topics: dict[str, tuple[str, int]]) -> str:
    chosen = [t for t in found if t.rstrip("/").endswith(suffix)]
    if not chosen:
        have = ", ".join(sorted(all_topics)) or "none"
        raise InputError(f"no {what} topic (a {JOINT_STATE_TYPE} topic ending in {suffix}; "
                         f"topics in the bag: {have})", file=str(bag))
    if len(chosen) > 1:
        raise InputError(f"{len(chosen)} {what} topics ({', '.join(chosen)}): record one run "
                         "per bag", file=str(bag))
    return chosen[0]


def camera_topics(bag: Path, topics: dict[str, tuple[str, int]],
                  wanted: list[str] | None) -> dict[str, str]:
    """camera name -> topic: every `…/<name>/image_raw` image topic, or the `wanted` ones."""
    found: dict[str, str] = {}
    for t in _topics_by_type(topics, IMAGE_TYPE):
        parts = t.strip("/").split("/")
        if len(parts) >= 2 and parts[-1] == "image_raw":
            if parts[-2] in found:
                raise InputError(f"two image topics for camera {parts[-2]} ({found[parts[-2]]}, "
                                 f"{t})", file=str(bag))
            found[parts[-2]] = t
    if wanted is None:
        if not found:
            raise InputError("no camera images in the bag (no sensor_msgs/msg/Image topic "
                             "named …/<camera>/image_raw; record them, e.g. `mango policy run "
                             "--record-views`)", file=str(bag))
        return dict(sorted(found.items()))
    missing = [c for c in wanted if c not in found]
    if missing:
        raise InputError(f"no images of camera {missing[0]} in the bag (cameras there: "
                         f"{', '.join(sorted(found)) or 'none'})", file=str(bag),
                         field="--cameras")
    return {c: found[c] for c in wanted}


def stamp_of(data: bytes) -> float:
    """A message's header stamp (s): every topic read here starts with a std_msgs/Header."""
    sec, nsec = _STAMP.unpack_from(data, 4)
    return sec + nsec * 1e-9


def read_run(bag: str | Path | BagReader, cameras: list[str] | None = None,
             types: BagTypes | None = None) -> RunStreams:
    """The run's streams (its last episode) out of a bag."""
    reader = bag if isinstance(bag, BagReader) else BagReader(bag)
    path = reader.path
    types = types or default_types()
    topics = reader.topics()
    cams = camera_topics(path, topics, cameras)
    joints = _topics_by_type(topics, JOINT_STATE_TYPE)
    js = _one(path, joints, "joint_states", "measured joints", topics)
    jc = _one(path, joints, "joint_command", "joint command", topics)
    ws_topics = _topics_by_type(topics, WORLD_STATE_TYPE)
    ws = ws_topics[0] if len(ws_topics) == 1 else None
    if len(ws_topics) > 1:
        raise InputError(f"{len(ws_topics)} WorldState topics ({', '.join(ws_topics)}): record "
                         "one run per bag", file=str(path))
    verdicts = _topics_by_type(topics, TASK_VERDICT_TYPE)
    # the last episode starts at the log time of its first world state
    first_log = 0
    episode = 1
    if ws is not None:
        starts, _ = episode_starts(reader, ws)
        episode = len(starts)
        for i, m in enumerate(reader.messages({ws})):
            if i == starts[-1]:
                first_log = m.log_time_ns
                break
    streams = {t: Stream(t) for t in [*cams.values(), js, jc]}
    images = set(cams.values())
    last_verdict: bytes | None = None
    for m in reader.messages({*streams, *verdicts}):
        if m.log_time_ns < first_log:
            continue
        if m.topic in streams:
            if len(m.data) < 12:
                raise InputError(f"message {len(streams[m.topic].stamps) + 1} is too short to "
                                 "hold a header", file=str(path), field=m.topic)
            streams[m.topic].stamps.append(stamp_of(m.data))
            if m.topic not in images:  # images are read again when written, one at a time
                streams[m.topic].payloads.append(m.data)
        else:
            last_verdict = m.data
    run = RunStreams(path, {c: streams[t] for c, t in cams.items()}, streams[js], streams[jc],
                     ws, episode, first_log)
    for s in streams.values():
        if not s.stamps:
            raise run.error(f"no messages in episode {episode} (the bag's last)", s.topic)
    if last_verdict is not None:
        run.verdict, run.instruction = _task_verdict(path, verdicts[0], last_verdict, types)
    return run


def _task_verdict(bag: Path, topic: str, data: bytes, types: BagTypes) -> tuple[Report, str]:
    """The report a recorded `TaskVerdict` carries (its `report_json`) and the instruction."""
    try:
        msg = types.deserialize(data, TASK_VERDICT_TYPE)
        report = Report.from_json(json.loads(msg.report_json))  # type: ignore[attr-defined]
    except (InputError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"the last task verdict does not read as a report ({exc})",
                         file=str(bag), field=topic) from None
    return report, str(msg.instruction)  # type: ignore[attr-defined]


def image_rgb(msg: object, topic: str, bag: Path) -> np.ndarray:
    """HxWx3 uint8 RGB pixels of a decoded `sensor_msgs/Image` (a copy)."""
    encoding = msg.encoding  # type: ignore[attr-defined]
    if encoding not in _COLOUR:
        raise InputError(f"image encoding {encoding!r} is not a colour image this export "
                         f"reads ({', '.join(_COLOUR)})", file=str(bag), field=topic)
    channels, rgb = _COLOUR[encoding]
    h, w, step = msg.height, msg.width, msg.step  # type: ignore[attr-defined]
    data = np.asarray(msg.data, dtype=np.uint8)  # type: ignore[attr-defined]
    if step < w * channels or data.size < step * h:
        raise InputError(f"image data too short for {w}x{h} {encoding}", file=str(bag),
                         field=topic)
    pixels = data[:step * h].reshape(h, step)[:, :w * channels].reshape(h, w, channels)
    return np.ascontiguousarray(pixels[:, :, list(rgb)])
