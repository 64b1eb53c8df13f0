"""Read rosbag2 MCAP bags, including ones whose recorder was killed mid-run."""

from __future__ import annotations

import io
import logging
import mmap
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from mcap.data_stream import ReadDataStream
from mcap.records import Channel, Chunk, Message, Schema
from mcap.stream_reader import breakup_chunk

from mango.bags.writer import qos_profile
from mango.errors import InputError

log = logging.getLogger(__name__)

MAGIC = b"\x89MCAP0\r\n"
OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_FOOTER = 0x03, 0x04, 0x05, 0x06, 0x02
_HEAD = struct.Struct("<BQ")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U16U16 = struct.Struct("<HH")
_MSG_HEAD = struct.Struct("<HIQQ")
_CORRUPT_SAID = 10  # damaged records listed per reader before it stops listing them


def _text(buf: mmap.mmap, start: int, n: int, end: int) -> str:
    """A length-prefixed UTF-8 string that must end within its record."""
    if start + n > end:
        raise ValueError(f"a {n}-byte string runs past the end of the record")
    return buf[start:start + n].decode()


class BagMessage(NamedTuple):
    """One recorded message (a tuple: a bag is read a million messages at a time)."""

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
        self.corrupt = 0  # records skipped because they could not be read

    def _read_metadata(self) -> dict[str, Any]:
        meta = self.path / "metadata.yaml"
        if not meta.is_file():
            return {}
        try:
            data = yaml.safe_load(meta.read_text()) or {}
        except yaml.YAMLError as exc:
            raise InputError(f"invalid metadata.yaml: {exc}", file=str(meta)) from None
        info = data.get("rosbag2_bagfile_information") if isinstance(data, dict) else None
        if not isinstance(info, dict):
            raise InputError("missing rosbag2_bagfile_information", file=str(meta))
        files = info.get("relative_file_paths")
        if files is not None and not (isinstance(files, list)
                                      and all(isinstance(f, str) for f in files)):
            raise InputError("relative_file_paths must be a list of file names",
                             file=str(meta), field="relative_file_paths")
        return info

    def offered_qos(self) -> dict[str, list[dict[str, Any]]]:
        """topic -> the QoS profiles metadata.yaml lists for it (what entries it cannot read
        are left out: QoS is a courtesy to players, not needed to read the messages)."""
        out: dict[str, list[dict[str, Any]]] = {}
        entries = self.metadata.get("topics_with_message_count")
        for entry in entries if isinstance(entries, list) else []:
            meta = entry.get("topic_metadata") if isinstance(entry, dict) else None
            if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
                continue
            profiles = meta.get("offered_qos_profiles")
            if isinstance(profiles, str):  # older rosbag2 versions store them as YAML text
                try:
                    profiles = yaml.safe_load(profiles)
                except yaml.YAMLError:
                    profiles = None
            try:
                out[meta["name"]] = [qos_profile(**q) for q in profiles]
            except (TypeError, ValueError):  # not a list of profiles this writer knows
                continue
        return out

    @property
    def size(self) -> int:
        """Bytes in all the bag's files (the space `messages(span=...)` splits)."""
        return sum(f.stat().st_size for f in self.files)

    def messages(self, topics: set[str] | None = None,
                 span: tuple[int, int] | None = None) -> Iterator[BagMessage]:
        """Messages in file order. `span` = (start, stop) keeps those whose record (or chunk)
        starts in that byte range of the files laid end to end, so workers given adjacent
        spans read every message exactly once between them."""
        base = 0
        for f in self.files:
            size = f.stat().st_size
            if span is None:
                yield from self._file_messages(f, topics, None)
            elif span[0] < base + size and span[1] > base:
                yield from self._file_messages(f, topics, (span[0] - base, span[1] - base))
            base += size

    def _file_messages(self, file: Path, topics: set[str] | None,
                       span: tuple[int, int] | None) -> Iterator[BagMessage]:
        """Scan the file's records directly (a dozen times faster than the generic reader for
        the unchunked files our recorder writes); chunks, as `ros2 bag record` writes them, go
        through the `mcap` library."""
        with file.open("rb") as fh:
            head = fh.read(len(MAGIC))
            if len(head) < len(MAGIC) and MAGIC.startswith(head):
                self._truncated(file, "killed before anything reached the disk")
                return
            if head != MAGIC:
                raise InputError("not an MCAP file (bad magic)", file=str(file))
            # Mapped, not read: processes replaying spans of one bag share the page cache.
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                yield from self._records(file, buf, topics, span)

    def _records(self, file: Path, buf: mmap.mmap, topics: set[str] | None,
                 span: tuple[int, int] | None) -> Iterator[BagMessage]:
        schemas: dict[int, str] = {}
        channels: dict[int, tuple[str, str]] = {}
        pos, end = 8, len(buf)
        first, stop = span if span is not None else (0, end)
        u16, u32, head = _U16.unpack_from, _U32.unpack_from, _HEAD.unpack_from
        msg_head = _MSG_HEAD.unpack_from
        while pos + 9 <= end:
            opcode, length = head(buf, pos)
            start = pos
            body, pos = pos + 9, pos + 9 + length
            if pos > end:
                if first <= start < stop:
                    self._truncated(file, "a record is cut off")
                return
            if start >= stop:
                return  # the rest belongs to the next span
            if opcode == OP_MESSAGE:
                if start < first:
                    continue  # an earlier span's
                if length < 22:
                    self._corrupt(file, start, "a message record too short for its header")
                    continue
                channel_id, _seq, log_time, _pub = msg_head(buf, body)
                known = channels.get(channel_id)
                if known is None:
                    self._corrupt(file, start, f"a message on unknown channel {channel_id}")
                    continue
                topic, msgtype = known
                if topics is None or topic in topics:
                    yield BagMessage(topic, msgtype, log_time, buf[body + 22:pos])
            elif opcode in (OP_SCHEMA, OP_CHANNEL):
                try:
                    if opcode == OP_SCHEMA:
                        sid = u16(buf, body)[0]
                        (n,) = u32(buf, body + 2)
                        schemas[sid] = _text(buf, body + 6, n, pos)
                    else:
                        cid, sid = _U16U16.unpack_from(buf, body)
                        (n,) = u32(buf, body + 4)
                        channels[cid] = (_text(buf, body + 8, n, pos), schemas.get(sid, ""))
                except (struct.error, ValueError) as exc:
                    kind = "schema" if opcode == OP_SCHEMA else "channel"
                    self._corrupt(file, start, f"a {kind} record that does not parse ({exc})")
            elif opcode == OP_CHUNK:
                # An earlier span's chunk still defines channels used later: read, yield nothing.
                try:
                    yield from self._chunk_messages(buf[body:pos], schemas, channels,
                                                    topics if start >= first else set())
                except Exception as exc:  # whatever the mcap library or a decompressor
                    # raises on damaged bytes (lengths, CRC, compressed data)
                    self._corrupt(file, start, f"a chunk that does not read ({exc!r:.120})")
            elif opcode == OP_FOOTER:
                return
        if stop >= end:  # the last span reports a cut file
            if pos != end:
                self._truncated(file, "the file ends inside a record header")
            elif end > 8:
                self._truncated(file, "no footer")

    def _chunk_messages(self, content: bytes, schemas: dict[int, str],
                        channels: dict[int, tuple[str, str]],
                        topics: set[str] | None) -> Iterator[BagMessage]:
        chunk = Chunk.read(ReadDataStream(io.BytesIO(content)))
        messages = []  # the whole chunk first: a corrupt one yields nothing half-way
        for record in breakup_chunk(chunk, validate_crc=True):
            if isinstance(record, Schema):
                schemas[record.id] = record.name
            elif isinstance(record, Channel):
                channels[record.id] = (record.topic, schemas.get(record.schema_id, ""))
            elif isinstance(record, Message):
                known = channels.get(record.channel_id)
                if known is None:
                    raise ValueError(f"a message on unknown channel {record.channel_id}")
                if topics is None or known[0] in topics:
                    messages.append(BagMessage(*known, record.log_time, record.data))
        yield from messages

    def _corrupt(self, file: Path, offset: int, what: str) -> None:
        """A record that cannot be read is skipped, and the warning says where."""
        self.corrupt += 1
        if self.corrupt <= _CORRUPT_SAID:
            log.warning("%s: skipped %s at byte %d (the file is damaged)", file, what, offset)
        elif self.corrupt == _CORRUPT_SAID + 1:
            log.warning("%s: more damaged records skipped; not listed", file)

    def _truncated(self, file: Path, why: str) -> None:
        self.truncated = True
        log.warning("%s ends early (%s): the recorder probably died; messages before that "
                    "point were read", file, why)

    def topics(self) -> dict[str, tuple[str, int]]:
        """topic -> (type, message count), by reading the whole bag."""
        out: dict[str, tuple[str, int]] = {}
        for m in self.messages():
            _, n = out.get(m.topic, (m.msgtype, 0))
            out[m.topic] = (m.msgtype, n + 1)
        return out
