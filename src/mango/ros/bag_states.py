"""World states out of a bag: CDR payloads on a `WorldState` topic -> core `WorldState`s."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from mango.bags import BagReader
from mango.errors import InputError
from mango.oracle.world_state import WorldState
from mango.ros.world_state_msg import msg_to_state

WORLD_STATE_TYPE = "mango_ros/msg/WorldState"


def _decoder() -> Callable[[bytes], object]:
    """rclpy's C deserializer when rclpy is importable, else rosbags' pure-Python one (both
    give objects with the generated classes' field names, which `msg_to_state` reads)."""
    try:
        from rclpy.serialization import deserialize_message

        from mango_ros.msg import WorldState as WorldStateMsg
    except ImportError:
        from mango.bags.types import default_types

        types = default_types()
        return lambda data: types.deserialize(data, WORLD_STATE_TYPE)
    return lambda data: deserialize_message(data, WorldStateMsg)


def iter_bag_world_states(bag: str | Path, topic: str = "/world_state",
                          reader: BagReader | None = None) -> Iterator[WorldState]:
    """Every world state recorded on `topic`, in recording order."""
    reader = reader or BagReader(bag)
    decode = _decoder()
    seen = False
    for m in reader.messages({topic}):
        if m.msgtype != WORLD_STATE_TYPE:
            raise InputError(f"topic {topic} carries {m.msgtype}, not {WORLD_STATE_TYPE}",
                             file=str(bag))
        seen = True
        yield msg_to_state(decode(m.data))
    if not seen:
        topics = ", ".join(sorted(reader.topics())) or "none"
        raise InputError(f"no messages on {topic} (topics in the bag: {topics})", file=str(bag))
