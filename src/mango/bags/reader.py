"""Read rosbag2 MCAP bags, including ones whose recorder was killed mid-run."""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from mcap.exceptions import McapError
from mcap.records import Channel, Message, Schema
from mcap.stream_reader import StreamReader

from mango.errors import InputError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BagMessage:
    topic: str
    msgtype: str
    log_time_ns: int
    data: bytes


class BagReader:
    """Messages of a bag directory (or a bare `.mcap` file), in file order.

    Reading is sequential and stops cleanly at a truncated record, so a bag whose recorder
    died keeps every message that reached the disk; `truncated` says whether that happened.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            self.metadata = self._read_metadata()
            files = self.metadata.get("relative_file_paths") or sorted(
                p.name for p in self.path.glob("*.mcap"))
            self.files = [self.path / f for f in files]
        elif self.path.is_file():
            self.metadata = {}
            self.files = [self.path]
        else:
            raise InputError("no such bag", file=str(self.path))
        for f in self.files:
            if not f.is_file():
                raise InputError(f"bag file {f.name} listed in metadata.yaml is missing",
                                 file=str(self.path))
        self.truncated = False

    def _read_metadata(self) -> dict[str, Any]:
        meta = self.path / "metadata.yaml"
        if not meta.is_file():
            return {}
        try:
            data = yaml.safe_load(meta.read_text()) or {}
        except yaml.YAMLError as exc:
            raise InputError(f"invalid metadata.yaml: {exc}", file=str(meta)) from None
        info = data.get("rosbag2_bagfile_information")
        if not isinstance(info, dict):
            raise InputError("missing rosbag2_bagfile_information", file=str(meta))
        return info

    def messages(self, topics: set[str] | None = None) -> Iterator[BagMessage]:
        for f in self.files:
            yield from self._file_messages(f, topics)

    def _file_messages(self, file: Path, topics: set[str] | None) -> Iterator[BagMessage]:
        schemas: dict[int, str] = {}
        channels: dict[int, tuple[str, str]] = {}
        with file.open("rb") as fh:
            reader = StreamReader(fh, skip_magic=False)
            try:
                for record in reader.records:
                    if isinstance(record, Schema):
                        schemas[record.id] = record.name
                    elif isinstance(record, Channel):
                        channels[record.id] = (record.topic, schemas.get(record.schema_id, ""))
                    elif isinstance(record, Message):
                        topic, msgtype = channels[record.channel_id]
                        if topics is None or topic in topics:
                            yield BagMessage(topic, msgtype, record.log_time, record.data)
            except (McapError, EOFError, ValueError, KeyError, struct.error) as exc:
                self.truncated = True
                log.warning("%s ends early (%s: %s): the recorder probably died; "
                            "messages before that point were read", file,
                            type(exc).__name__, exc)

    def topics(self) -> dict[str, tuple[str, int]]:
        """topic -> (type, message count), by reading the whole bag."""
        out: dict[str, tuple[str, int]] = {}
        for m in self.messages():
            _, n = out.get(m.topic, (m.msgtype, 0))
            out[m.topic] = (m.msgtype, n + 1)
        return out
