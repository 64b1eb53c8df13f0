"""Bags for the bag tests, written in-process: world states of a soup that is lifted and then
placed in a basket (with an oracle that judges them), as our recorder writes them or as
`ros2 bag record` does (chunked), and where their records lie."""

from __future__ import annotations

import io
import struct
from pathlib import Path

from mcap.data_stream import ReadDataStream
from mcap.records import Chunk, Message
from mcap.stream_reader import breakup_chunk
from mcap.writer import CompressionType, Writer
from rclpy.serialization import serialize_message

from mango.bags import BagWriter
from mango.ros.world_state_msg import record_to_msg

TYPE = "mango_ros/msg/WorldState"
CHATTER = b"\x00\x01\x00\x00\x03\x00\x00\x00hi\x00"  # a std_msgs/String "hi"
ORACLE = {"instruction": "lift the soup, then put it in the basket", "plan": [
    {"action_id": "lift", "monitoring": [{"handle_as": "up(soup)"}]},
    {"action_id": "place", "monitoring": [{"handle_as": "in(soup, basket)"}]},
]}


def world_state(t: float, z: float, in_basket: bool = False) -> bytes:
    """The CDR bytes of one state: the soup at height `z` (or in the basket)."""
    soup = [0.5, 0.3, 0.86] if in_basket else [0.0, 0.0, z]
    return serialize_message(record_to_msg({"t": t, "objects": {
        "soup": {"position": soup, "size": [0.05, 0.05, 0.08]},
        "basket": {"position": [0.5, 0.3, 0.86], "size": [0.2, 0.2, 0.1], "kind": "region"},
        "table": {"position": [0.0, 0.0, 0.4], "size": [2.0, 2.0, 0.8], "kind": "surface"},
    }, "contacts": [["soup", "table"]] * (int(t * 10) % 3)}))


def episode(n: int, lift_at: int, place_at: int | None) -> list[tuple[float, bytes]]:
    """n states 0.1 s apart: the soup rests, is lifted at `lift_at`, placed at `place_at`."""
    return [(0.1 * i, world_state(0.1 * i, 0.84 if i < lift_at else 1.0,
                                  place_at is not None and i >= place_at)) for i in range(n)]


def write_bag(bag: Path, states: list[tuple[float, bytes]], extra_topic: bool = True) -> None:
    """A bag as our recorder writes it: `/world_state`, and `/chatter` every 7th state."""
    with BagWriter(bag) as w:
        w.add_topic("/world_state", TYPE)
        if extra_topic:
            w.add_topic("/chatter", "std_msgs/msg/String")
        for k, (_t, data) in enumerate(states):
            w.write("/world_state", data, k)
            if extra_topic and k % 7 == 0:
                w.write("/chatter", CHATTER, k)


def write_chunked(path: Path, states: list[tuple[float, bytes]],
                  compression: CompressionType = CompressionType.NONE,
                  chunk_size: int = 4096) -> None:
    """An MCAP as `ros2 bag record` writes it: chunked, channels defined inside chunks."""
    with path.open("wb") as fh:
        w = Writer(fh, chunk_size=chunk_size, compression=compression)
        w.start(profile="ros2", library="test")
        schema = w.register_schema(TYPE, "ros2msg", b"")
        channel = w.register_channel("/world_state", "cdr", schema)
        for k, (_t, data) in enumerate(states):
            w.add_message(channel, log_time=k, data=data, publish_time=k, sequence=k)
        w.finish()


def record_starts(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, opcode, length) of each top-level record of a well-formed, one-recording
    MCAP file, up to its footer."""
    pos, out = 8, []
    while pos + 9 <= len(data):
        opcode, length = struct.unpack_from("<BQ", data, pos)
        out.append((pos, opcode, length))
        if opcode == 0x02:
            break
        pos += 9 + length
    return out


def message_ends(data: bytes) -> list[int]:
    """For each message of a well-formed, one-recording MCAP file, where the record that
    holds it (the message, or its chunk) ends: what a reader of the file cut at an offset
    can still read. Read with the `mcap` library's records, not `BagReader`."""
    ends = []
    for pos, opcode, length in record_starts(data):
        end = pos + 9 + length
        if opcode == 0x05:
            ends.append(end)
        elif opcode == 0x06:
            chunk = Chunk.read(ReadDataStream(io.BytesIO(data[pos + 9:end])))
            ends += [end] * sum(isinstance(r, Message) for r in breakup_chunk(chunk))
    return ends
