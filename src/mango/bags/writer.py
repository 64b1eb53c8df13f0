"""A rosbag2 directory (metadata.yaml + one MCAP file) written so that a crash loses little.

Messages go into the MCAP data section unchunked and the file is flushed every
`flush_period`; `metadata.yaml` is rewritten (atomically) every `metadata_period`. A recorder
killed with SIGKILL therefore leaves a bag whose metadata and messages are valid up to the last
flush; `BagReader` reads such a file, and `mango bag repair` rewrites it with a summary.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from mcap.writer import CompressionType, IndexType, Writer

from mango.bags.types import BagTypes, default_types

ROS_DISTRO = "kilted"


_QOS_DEFAULTS: dict[str, Any] = {
    "history": "keep_last",
    "depth": 10,
    "reliability": "reliable",
    "durability": "volatile",
    "deadline": {"sec": 0, "nsec": 0},  # 0 = the RMW's default (infinite)
    "lifespan": {"sec": 0, "nsec": 0},
    "liveliness": "automatic",
    "liveliness_lease_duration": {"sec": 0, "nsec": 0},
    "avoid_ros_namespace_conventions": False,
}


def qos_profile(**given: Any) -> dict[str, Any]:
    """A complete metadata-v9 QoS entry (readers such as rosbags require every key)."""
    unknown = set(given) - set(_QOS_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown QoS keys: {sorted(unknown)}")
    return {**_QOS_DEFAULTS, **given}


@dataclass
class _Topic:
    name: str
    msgtype: str
    channel_id: int
    qos: list[dict[str, Any]]
    type_hash: str
    count: int = 0


@dataclass
class BagWriter:
    """Write CDR payloads to `path/` as a rosbag2 MCAP bag (metadata version 9)."""

    path: Path
    types: BagTypes = field(default_factory=default_types)
    flush_period: float = 0.2
    metadata_period: float = 1.0

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.path.exists() and any(self.path.iterdir()):
            raise FileExistsError(f"bag directory {self.path} exists and is not empty")
        self.path.mkdir(parents=True, exist_ok=True)
        self.file_name = f"{self.path.name}_0.mcap"
        self._fh = (self.path / self.file_name).open("wb")
        # Unchunked: every message is a complete record in the data section as soon as it is
        # flushed (chunks would hold messages back until they fill up).
        self._mcap = Writer(self._fh, use_chunking=False, compression=CompressionType.NONE,
                            index_types=IndexType.NONE)
        self._mcap.start(profile="ros2", library="mango-bags")
        self._fh.flush()  # a file that is a valid (empty) MCAP from the first moment
        self._topics: dict[str, _Topic] = {}
        self._schemas: dict[str, int] = {}
        self._start_ns: int | None = None
        self._end_ns = 0
        self._last_flush = self._last_meta = time.monotonic()
        self._closed = False
        self._write_metadata()

    @property
    def topics(self) -> dict[str, str]:
        return {t.name: t.msgtype for t in self._topics.values()}

    @property
    def message_count(self) -> int:
        return sum(t.count for t in self._topics.values())

    def add_topic(self, topic: str, msgtype: str, qos: list[dict[str, Any]] | None = None) -> None:
        """Declare a topic with its type (`pkg/msg/Name`) and the publishers' QoS profiles."""
        if topic in self._topics:
            return
        if msgtype not in self._schemas:
            self._schemas[msgtype] = self._mcap.register_schema(
                name=msgtype, encoding="ros2msg", data=self.types.msgdef(msgtype).encode())
        qos = [qos_profile(**q) for q in qos or []]
        channel = self._mcap.register_channel(
            topic=topic, message_encoding="cdr", schema_id=self._schemas[msgtype],
            metadata={"offered_qos_profiles": yaml.safe_dump(qos) if qos else ""})
        self._topics[topic] = _Topic(topic, msgtype, channel, qos, self.types.type_hash(msgtype))
        self._write_metadata()

    def write(self, topic: str, data: bytes, log_time_ns: int,
              publish_time_ns: int | None = None) -> None:
        t = self._topics[topic]
        self._mcap.add_message(channel_id=t.channel_id, log_time=log_time_ns, data=bytes(data),
                               publish_time=publish_time_ns or log_time_ns, sequence=t.count)
        t.count += 1
        if self._start_ns is None or log_time_ns < self._start_ns:
            self._start_ns = log_time_ns
        self._end_ns = max(self._end_ns, log_time_ns)
        now = time.monotonic()
        if now - self._last_flush >= self.flush_period:
            self.flush()
        if now - self._last_meta >= self.metadata_period:
            self._write_metadata()

    def flush(self) -> None:
        self._fh.flush()
        self._last_flush = time.monotonic()

    def close(self) -> None:
        """Finish the MCAP (summary, footer) and write the final metadata."""
        if self._closed:
            return
        self._closed = True
        try:
            self._mcap.add_metadata("rosbag2", {"serialized_metadata": yaml.safe_dump(
                self._metadata()["rosbag2_bagfile_information"]), "version": "9"})
            self._mcap.finish()
        finally:  # the file is closed even when the disk is full (the error still goes up)
            self._fh.close()
        self._write_metadata()

    def __enter__(self) -> BagWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _metadata(self) -> dict[str, Any]:
        start = self._start_ns or 0
        duration = max(0, self._end_ns - start) if self._start_ns is not None else 0
        count = self.message_count
        return {"rosbag2_bagfile_information": {
            "version": 9,
            "storage_identifier": "mcap",
            "relative_file_paths": [self.file_name],
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": count,
            "topics_with_message_count": [
                {"topic_metadata": {"name": t.name, "type": t.msgtype,
                                    "serialization_format": "cdr",
                                    "offered_qos_profiles": t.qos,
                                    "type_description_hash": t.type_hash},
                 "message_count": t.count}
                for t in self._topics.values()
            ],
            "compression_format": "",
            "compression_mode": "",
            "files": [{"path": self.file_name,
                       "starting_time": {"nanoseconds_since_epoch": start},
                       "duration": {"nanoseconds": duration},
                       "message_count": count}],
            "custom_data": None,
            "ros_distro": ROS_DISTRO,
        }}

    def _write_metadata(self) -> None:
        tmp = self.path / "metadata.yaml.tmp"
        tmp.write_text(yaml.safe_dump(self._metadata(), sort_keys=False))
        tmp.replace(self.path / "metadata.yaml")
        self._last_meta = time.monotonic()
