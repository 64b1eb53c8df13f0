"""ROS 2 message definitions and type hashes for bag schemas (via `rosbags`' type system)."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from rosbags.serde import SerdeError
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from mango.errors import InputError


def _ament_prefixes() -> list[Path]:
    return [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]


def _action_types(package: str, name: str, text: str) -> dict:
    """The message types an action puts on topics (`<action>/_action/feedback` carries
    `<Name>_FeedbackMessage`; `status` is action_msgs' own), as rosidl generates them from the
    `.action` file's goal, result and feedback sections."""
    parts = [p.strip() for p in text.split("\n---")]
    if len(parts) != 3:
        return {}
    out: dict = {}
    for part, suffix in zip(parts, ("Goal", "Result", "Feedback"), strict=True):
        # rosbags writes a nested type's definition only for `pkg/msg/` names: the sections
        # are registered under that form (their fields, what a reader needs, are the same)
        out.update(get_types_from_msg(part, f"{package}/msg/{name}_{suffix}"))
    out.update(get_types_from_msg(
        f"unique_identifier_msgs/UUID goal_id\n{package}/msg/{name}_Feedback feedback",
        f"{package}/action/{name}_FeedbackMessage"))
    return out


class BagTypes:
    """Known message types: the Kilted standard set plus every `.msg` (and the topic types of
    every `.action`) installed in the ament prefixes, this package's own among them."""

    def __init__(self, extra_msg_dirs: list[Path] | None = None) -> None:
        self.store: Typestore = get_typestore(Stores.ROS2_KILTED)
        found: dict = {}
        for prefix in _ament_prefixes():
            for msg in sorted((prefix / "share").glob("*/msg/*.msg")):
                name = f"{msg.parent.parent.name}/msg/{msg.stem}"
                if name not in self.store.fielddefs:
                    found.update(get_types_from_msg(msg.read_text(), name))
            for action in sorted((prefix / "share").glob("*/action/*.action")):
                found.update(_action_types(action.parent.parent.name, action.stem,
                                           action.read_text()))
        for d in extra_msg_dirs or []:
            pkg = d.parent.name if d.name == "msg" else d.name
            for msg in sorted(d.glob("*.msg")):
                found.update(get_types_from_msg(msg.read_text(), f"{pkg}/msg/{msg.stem}"))
        self.store.register(found)

    def require(self, msgtype: str) -> None:
        if msgtype not in self.store.fielddefs:
            raise InputError(f"unknown message type {msgtype!r} (is its package installed?)")

    def msgdef(self, msgtype: str) -> str:
        """The concatenated ROS 2 message definition MCAP schemas carry (`ros2msg`)."""
        self.require(msgtype)
        return self.store.generate_msgdef(msgtype, ros_version=2)[0]

    def type_hash(self, msgtype: str) -> str:
        """RIHS01 type hash (equal to the one rosidl generates for the same definition)."""
        self.require(msgtype)
        return self.store.hash_rihs01(msgtype)

    def deserialize(self, data: bytes | memoryview, msgtype: str) -> object:
        """Decode CDR without rclpy (field names match the generated Python classes).

        Bytes after the message's end are ignored: rmw's serializer may pad a message
        (a `JointState` with empty sequences carries 8), which `rosbags` alone refuses."""
        try:
            return self.store.deserialize_cdr(data, msgtype)
        except SerdeError as exc:
            if "size mismatch" not in str(exc):
                raise
        msgdef = self.store.get_msgdef(msgtype)
        decode = msgdef.deserialize_cdr_le if data[1] else msgdef.deserialize_cdr_be
        return decode(data[4:], 0, msgdef.cls, self.store)[0]


@cache
def default_types() -> BagTypes:
    return BagTypes()
