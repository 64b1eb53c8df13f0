"""Read rosbag2 MCAP bags to their real end: files whose recorder was killed mid-run, damaged
files, and files that hold several recordings one after another (`cat a.mcap b.mcap`)."""

from __future__ import annotations

import io
import logging
import mmap
import os
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from mcap.data_stream import ReadDataStream
from mcap.records import Channel, Chunk, Message, Schema
from mcap.stream_reader import breakup_chunk

from mango.bags.writer import qos_profile
from mango.errors import InputError, open_user_file, read_user_text

log = logging.getLogger(__name__)

MAGIC = b"\x89MCAP0\r\n"
OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_FOOTER = 0x03, 0x04, 0x05, 0x06, 0x02
_LAST_OPCODE = 0x0F  # DataEnd; 0x10-0x7F are no record, 0x80-0xFF are tools' private records
_PRIVATE = 0x80
_HEAD = struct.Struct("<BQ")
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U16U16 = struct.Struct("<HH")
_MSG_HEAD = struct.Struct("<HIQQ")
_CORRUPT_SAID = 10  # damaged places listed per reader before it stops listing them
# Where reading may resume after damage: a record opcode with a length under 1 TiB (the top
# three length bytes zero), or the magic that starts another recording.
_RESUMABLE = re.compile(b"(?=[\x01-\x0f][\x00-\xff]{5}\x00\x00\x00|" + re.escape(MAGIC) + b")")
_CHAIN = 16  # well-formed records in a row that prove a resume point
# States of a recording being read: in its records; its footer read (the end magic is due);
# ended (anything after it must be another recording).
_OPEN, _FOOTER, _ENDED = 0, 1, 2


def _text(buf: mmap.mmap, start: int, n: int, end: int) -> str:
    """A length-prefixed UTF-8 string that must end within its record."""
    if start + n > end:
        raise ValueError(f"a {n}-byte string runs past the end of the record")
    return buf[start:start + n].decode()


def _well_formed(buf: mmap.mmap, pos: int, end: int, barrier: int) -> bool:
    """Whether MCAP records start at `pos`: `_CHAIN` of them in a row, or fewer that end
    exactly where the file, a closed recording (footer and end magic) or another recording
    does; none runs over the next magic, at `barrier` (offsets in a summary, read as a
    length, would reach the same layout in a recording appended after its copy). Random
    bytes pass this with a negligible chance."""
    head = _HEAD.unpack_from
    for n in range(_CHAIN):
        if pos in (end, barrier):
            return n > 0
        if pos + 9 > end:
            return False
        opcode, length = head(buf, pos)
        nxt = pos + 9 + length
        if not 0 < opcode <= _LAST_OPCODE or nxt > barrier or (opcode == OP_MESSAGE
                                                               and length < 22):
            return False
        if opcode == OP_FOOTER:
            return buf[nxt:nxt + 8] == MAGIC
        pos = nxt
    return True


def _starts_recording(buf: mmap.mmap, at: int) -> bool:
    """Whether a recording starts at `at`: the magic, then a header record (not the magic
    that closes a recording, after its footer)."""
    return buf[at:at + 8] == MAGIC and buf[at + 8:at + 9] == b"\x01"


def _closes_recording(buf: mmap.mmap, at: int) -> bool:
    """Whether the magic at `at` closes a recording: a footer record (20 bytes) ends there."""
    return at >= 29 and _HEAD.unpack_from(buf, at - 29) == (OP_FOOTER, 20)


def _next_recording(buf: mmap.mmap, start: int) -> int:
    """Where the next recording starts from `start` on, or -1."""
    at = buf.find(MAGIC, start)
    while at >= 0 and not _starts_recording(buf, at):
        at = buf.find(MAGIC, at + 1)
    return at


class _UnknownChannel(ValueError):
    """A message on a channel no record read so far defines."""


def _summary_channels(buf: mmap.mmap, opened: int, closing: int, schemas: dict[int, str],
                      channels: dict[int, tuple[str, str]]) -> None:
    """Add the schemas and channels that the summary section of the recording opened at
    `opened` and closed at `closing` repeats (when it is closed and has one): the messages on
    a channel whose defining record (or chunk) was damaged still read."""
    if not _closes_recording(buf, closing):
        return
    footer = closing - 29
    (summary_start,) = struct.unpack_from("<Q", buf, footer + 9)
    pos = opened + summary_start
    if summary_start == 0 or not opened < pos <= footer:
        return
    head, u16, u32 = _HEAD.unpack_from, _U16.unpack_from, _U32.unpack_from
    while pos + 9 <= footer:
        opcode, length = head(buf, pos)
        nxt, body = pos + 9 + length, pos + 9
        if nxt > footer:
            return
        try:
            if opcode == OP_SCHEMA:
                schemas.setdefault(u16(buf, body)[0],
                                   _text(buf, body + 6, u32(buf, body + 2)[0], nxt))
            elif opcode == OP_CHANNEL:
                cid, sid = _U16U16.unpack_from(buf, body)
                channels.setdefault(cid, (_text(buf, body + 8, u32(buf, body + 4)[0], nxt),
                                          schemas.get(sid, "")))
        except (struct.error, ValueError):
            pass  # a damaged summary record: the others may still serve
        pos = nxt


def _resume(buf: mmap.mmap, start: int, end: int, broken: int) -> int:
    """The first offset from `start` (other than the `broken` record's) where reading can go
    on: another recording, or well-formed records; -1 when there is none."""
    barrier = -1
    for match in _RESUMABLE.finditer(buf, start, end):
        at = match.start()
        if at == broken:
            continue
        if buf[at] == MAGIC[0]:
            if _starts_recording(buf, at):
                return at
            continue
        if barrier < at:
            barrier = buf.find(MAGIC, at)
            barrier = end if barrier < 0 else barrier
        if _well_formed(buf, at, end, barrier):
            return at
    return -1


class BagMessage(NamedTuple):
    """One recorded message (a tuple: a bag is read a million messages at a time)."""

    topic: str
    msgtype: str
    log_time_ns: int
    data: bytes


class BagReader:
    """Messages of a bag directory (or a bare `.mcap` file), in file order.

    A file is read to its real end: a recording cut off by a killed recorder keeps every
    message that reached the disk (`truncated` says it happened); damage (a record whose
    opcode or length cannot be right while readable records follow) is skipped to the next
    readable record and counted (`corrupt`), and the warning gives its byte offset; a file
    holding several recordings one after another is read whole, recording by recording
    (`recordings`). Each is said once per reader, however often it is read.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            self.metadata = self._read_metadata()
            files = self.metadata.get("relative_file_paths") or sorted(
                p.name for p in self.path.glob("*.mcap"))
            if not files and not self.metadata:  # a folder is no bag (an empty one is none)
                raise InputError("no bag here: no metadata.yaml and no .mcap file",
                                 file=str(self.path))
            self.files = [self.path / f for f in files]
        elif os.path.lexists(self.path):  # a FIFO or a device is named as what it is
            open_user_file(self.path, "bag", max_bytes=None).close()
            self.metadata = {}
            self.files = [self.path]
        else:
            raise InputError("no such bag", file=str(self.path))
        for f in self.files:
            if not f.is_file() and not os.path.lexists(f):
                raise InputError(f"bag file {f.name} listed in metadata.yaml is missing",
                                 file=str(self.path))
        self.truncated = False
        self.recordings: dict[Path, int] = {}  # files seen to hold more than one recording
        self._damaged: set[tuple[Path, int]] = set()
        self._said: set[tuple[Path, int, str]] = set()

    @property
    def corrupt(self) -> int:
        """Damaged places skipped (records that could not be read, bytes that are no record)."""
        return len(self._damaged)

    def _read_metadata(self) -> dict[str, Any]:
        meta = self.path / "metadata.yaml"
        if not os.path.lexists(meta):
            return {}
        text = read_user_text(meta, "bag metadata")
        try:
            data = yaml.safe_load(text) or {}
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
        spans read every message exactly once between them (and each says what it finds
        in its own range)."""
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
        with open_user_file(file, "bag file", max_bytes=None) as fh:
            head = fh.read(len(MAGIC))
            if len(head) < len(MAGIC) and MAGIC.startswith(head):
                self._truncated(file, 0, "the file ends inside its magic, before any record")
                return
            if head != MAGIC:
                raise InputError("not an MCAP file (bad magic)", file=str(file))
            # Mapped, not read: processes replaying spans of one bag share the page cache.
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                yield from self._records(file, buf, topics, span)

    def _records(self, file: Path, buf: mmap.mmap, topics: set[str] | None,
                 span: tuple[int, int] | None) -> Iterator[BagMessage]:
        """The file's messages, recording after recording.

        A record's messages are held back until the record after it starts well-formed: a
        length that lands on garbage means that record was damaged, not its successor, and
        its bytes are no message. A record that runs over the magic of another recording was
        cut off there (its recorder died and another file was appended) unless well-formed
        records follow it (then the magic is in its payload)."""
        end = len(buf)
        first, stop = span if span is not None else (0, end)

        def mine(offset: int) -> bool:  # what happens at `offset` is this span's to say
            return first <= min(offset, end - 1) < stop

        def magic_after(offset: int) -> int:  # the next magic at or after `offset`, or `end`
            at = buf.find(MAGIC, offset)
            return end if at < 0 else at

        u16, u32, head = _U16.unpack_from, _U32.unpack_from, _HEAD.unpack_from
        msg_head = _MSG_HEAD.unpack_from
        schemas: dict[int, str] = {}
        channels: dict[int, tuple[str, str]] = {}
        recording, state, opened = 1, _OPEN, 0
        summary_read = False  # whether the recording's summary lent its channels
        pos, prev, prev_length = 8, -1, 0  # prev: the record whose length led to pos
        limit = -1  # no record read fast may run over it: the next magic, or the file's end
        held: BagMessage | None = None  # a message kept back until the next record proves it
        chunk: list[BagMessage] = []  # the same, for a chunk's messages
        while True:
            if limit < pos:
                limit = magic_after(pos)
            # Records as they should be, fast; anything else is handled below the loop.
            while pos + 9 <= end:
                opcode, length = head(buf, pos)
                start = pos
                pos = start + 9 + length
                if pos > limit or not 0 < opcode <= _LAST_OPCODE:
                    pos = start
                    break
                if held:  # its length led to a well-formed record: it was whole
                    yield held
                    held = None
                if chunk:
                    yield from chunk
                    chunk = []
                if start >= stop:
                    return  # the rest belongs to the next span
                prev, prev_length = start, length
                body = start + 9
                if opcode == OP_MESSAGE:
                    if start < first:
                        continue  # an earlier span's
                    if length < 22:
                        self._corrupt(file, start, "a message record too short for its header")
                        continue
                    channel_id, _seq, log_time, _pub = msg_head(buf, body)
                    known = channels.get(channel_id)
                    if known is None and not summary_read:
                        summary_read = True
                        _summary_channels(buf, opened, limit, schemas, channels)
                        known = channels.get(channel_id)
                    if known is None:
                        self._corrupt(file, start, f"a message on unknown channel {channel_id}")
                        continue
                    if topics is None or known[0] in topics:
                        held = BagMessage(known[0], known[1], log_time, buf[body + 22:pos])
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
                        if start >= first:
                            self._corrupt(file, start,
                                          f"a {kind} record that does not parse ({exc})")
                elif opcode == OP_CHUNK:
                    # An earlier span's chunk still defines channels used later: read, keep none.
                    wanted = topics if start >= first else set()
                    try:
                        try:
                            chunk = self._chunk_messages(buf[body:pos], schemas, channels,
                                                         wanted)
                        except _UnknownChannel:
                            if summary_read:
                                raise
                            summary_read = True
                            _summary_channels(buf, opened, limit, schemas, channels)
                            chunk = self._chunk_messages(buf[body:pos], schemas, channels,
                                                         wanted)
                    except Exception as exc:  # whatever the mcap library or a decompressor
                        # raises on damaged bytes (lengths, CRC, compressed data)
                        if start >= first:
                            self._corrupt(file, start,
                                          f"a chunk that does not read ({exc!r:.120})")
                elif opcode == OP_FOOTER:
                    state = _FOOTER
                    break
            if state == _FOOTER:  # the end magic is due (the footer let out what was held)
                if buf[pos:pos + 8] == MAGIC:
                    pos, state = pos + 8, _ENDED
                elif end - pos < 8 and MAGIC.startswith(buf[pos:end]):
                    if mine(pos):
                        self._truncated(file, pos, f"the file ends inside the closing magic of "
                                        f"recording {recording}")
                    return
                else:
                    at = prev  # the footer: a damaged record, whatever it looked like
                    resume = _resume(buf, at + 1, end, at)
                    if mine(at):
                        self._resumed(file, at, "a footer record not followed by the closing "
                                      "magic", resume, end)
                    if resume < 0:
                        return
                    pos, prev = resume, -1
                    state = _ENDED if buf[pos:pos + 8] == MAGIC else _OPEN
                    continue
            if pos + 8 <= end and buf[pos] == MAGIC[0] and buf[pos:pos + 8] == MAGIC:
                if held:  # the previous record ended right here: it was whole
                    yield held
                    held = None
                yield from chunk
                chunk = []
                if pos >= stop:
                    return
                if state == _OPEN and mine(pos):
                    self._truncated(file, pos, f"recording {recording} stops without its "
                                    f"footer at byte {pos}, where recording {recording + 1} "
                                    "begins", later=True)
                recording += 1
                if mine(pos):
                    self._another(file, pos, recording)
                schemas, channels = {}, {}
                state, opened, pos, prev = _OPEN, pos, pos + 8, -1
                summary_read = False
                continue
            if state == _ENDED:
                if pos >= end:
                    return
                if end - pos < 8 and MAGIC.startswith(buf[pos:end]):
                    if mine(pos):
                        self._truncated(file, pos, f"the file ends inside the magic of a "
                                        f"recording {recording + 1}, at byte {pos}")
                    return
                resume = _next_recording(buf, pos)
                if mine(pos):
                    self._resumed(file, pos, f"bytes after the end of recording {recording} "
                                  "that start no other recording", resume, end)
                if resume < 0:
                    return
                pos = resume
                continue
            if pos + 9 > end:
                if held:
                    yield held
                yield from chunk
                if pos < end:
                    if mine(pos):
                        self._truncated(file, pos, f"the file ends inside a record header, at "
                                        f"byte {pos}")
                elif mine(pos):
                    self._truncated(file, pos, "the file ends after a whole record, without "
                                    "the footer a finished recording has")
                return
            opcode, length = head(buf, pos)
            start = pos
            nxt = start + 9 + length
            valid = 0 < opcode <= _LAST_OPCODE
            over = ""  # the end of a recording that this record runs over
            if valid and nxt <= end:
                # A well-formed record that runs over a magic: the magic is in its payload
                # unless it closes or starts a recording (and no whole recording, closing
                # magic and all, is in its payload with well-formed records after it).
                closes = _closes_recording(buf, limit)
                if not (closes or _starts_recording(buf, limit)) or (
                        buf.find(MAGIC, limit + 8, nxt) >= 0
                        and (nxt == end or _well_formed(buf, nxt, end, magic_after(nxt)))):
                    limit = magic_after(nxt)  # the fast loop reads it
                    continue
                if closes:
                    over = (f"a record whose length ({length} bytes) runs over the end of "
                            f"recording {recording} (byte {limit + 8})")
            if valid and nxt <= end and not over:
                # cut off where another recording (its magic, then a header) was appended
                if held:
                    yield held
                    held = None
                yield from chunk
                chunk = []
                if start >= stop:
                    return
                if mine(start):
                    self._truncated(file, start, f"recording {recording} stops inside a "
                                    f"record at byte {start}, where recording {recording + 1} "
                                    f"begins (byte {limit})", later=True)
                pos, prev, state = limit, -1, _ENDED
                continue
            if opcode >= _PRIVATE and nxt <= limit:
                # a tool's private record (the spec lets readers skip them), or damage
                if held:
                    yield held
                    held = None
                yield from chunk
                chunk = []
                if start >= stop:
                    return
                if start >= first:
                    self._corrupt(file, start, f"a record with opcode 0x{opcode:02x}, which no "
                                  "ROS 2 recorder writes (another tool's private record, or "
                                  "damage)")
                pos, prev, prev_length = nxt, start, length
                continue
            # Damage, or the end of what a dying recorder wrote: whichever record it is (this
            # one, or the one whose length led here), reading resumes at the next well-formed
            # records if any follow.
            resume = _resume(buf, prev + 9 if prev >= 0 else start + 1, end, start)
            if 0 <= resume < start:
                at, held, chunk = prev, None, []
                what = (f"a record whose length ({prev_length} bytes) runs over the next "
                        "readable record")
            else:
                if held:
                    yield held
                    held = None
                yield from chunk
                chunk = []
                at = start
                what = over or (f"a record whose length ({length} bytes) runs past the end of "
                                f"the file ({end - start - 9} bytes there)" if valid
                                else f"a record with invalid opcode 0x{opcode:02x}")
            # Nothing readable after a record that would end past the file's end: what a
            # dying recorder leaves. Another recording right after one: it was cut off where
            # that one was appended. Readable records after it: damage.
            whole = at == prev or (valid and not over)
            if resume < 0 and at == start and whole:
                if mine(at):
                    self._truncated(file, at, f"the file ends inside a {length}-byte record "
                                    f"at byte {at} ({end - at - 9} bytes of it written)")
                return
            if whole and buf[resume:resume + 8] == MAGIC:
                if mine(at):
                    self._truncated(file, at, f"recording {recording} stops inside a record "
                                    f"at byte {at}, where recording {recording + 1} begins "
                                    f"(byte {resume})", later=True)
            elif mine(at):
                self._resumed(file, at, what, resume, end)
            if resume < 0:
                return
            pos, prev = resume, -1
            # what ended here is said: another recording starting at `resume` is just that
            state = _ENDED if buf[pos:pos + 8] == MAGIC else _OPEN

    def _chunk_messages(self, content: bytes, schemas: dict[int, str],
                        channels: dict[int, tuple[str, str]],
                        topics: set[str] | None) -> list[BagMessage]:
        """The whole chunk's messages: a corrupt chunk gives none rather than some."""
        chunk = Chunk.read(ReadDataStream(io.BytesIO(content)))
        messages = []
        for record in breakup_chunk(chunk, validate_crc=True):
            if isinstance(record, Schema):
                schemas[record.id] = record.name
            elif isinstance(record, Channel):
                channels[record.id] = (record.topic, schemas.get(record.schema_id, ""))
            elif isinstance(record, Message):
                known = channels.get(record.channel_id)
                if known is None:
                    raise _UnknownChannel(f"a message on unknown channel {record.channel_id}")
                if topics is None or known[0] in topics:
                    messages.append(BagMessage(*known, record.log_time, record.data))
        return messages

    def _say(self, file: Path, offset: int, kind: str, text: str, *args: object) -> bool:
        """Log a warning once per reader (a command may read a bag more than once)."""
        key = (file, offset, kind)
        if key in self._said:
            return False
        self._said.add(key)
        log.warning(text, *args)
        return True

    def _corrupt(self, file: Path, offset: int, what: str, then: str = "skipped it") -> None:
        """Damage is skipped, and the warning says where (a byte offset) and what was lost."""
        if (file, offset) in self._damaged:
            return
        self._damaged.add((file, offset))
        if self.corrupt <= _CORRUPT_SAID:
            log.warning("%s: corrupt at byte %d: %s; %s", file, offset, what, then)
        elif self.corrupt == _CORRUPT_SAID + 1:
            log.warning("%s: more damaged places skipped; not listed", file)

    def _resumed(self, file: Path, offset: int, what: str, resume: int, end: int) -> None:
        """Damage at `offset`, with readable records from `resume` on (-1: none)."""
        self._corrupt(file, offset, what, (
            f"skipped {resume - offset} bytes to the next readable record, at byte {resume}"
            if resume >= 0 else f"nothing after it reads ({end - offset} bytes lost)"))

    def _truncated(self, file: Path, offset: int, why: str, later: bool = False) -> None:
        """Data that ends early, as when the recorder dies: what was written before it is
        read (and, `later`, the recordings after it in the file)."""
        self.truncated = True
        self._say(file, offset, "truncated", "%s: %s: its recorder probably died; %s", file,
                  why, "what it wrote before that, and the recordings after it, are read"
                  if later else "the messages before that point were read")

    def _another(self, file: Path, offset: int, recording: int) -> None:
        self.recordings[file] = max(self.recordings.get(file, 1), recording)
        self._say(file, offset, "recording", "%s: recording %d of this file begins at byte %d "
                  "(MCAP files concatenated into one): read as well, after the one before it",
                  file, recording, offset)

    def topics(self) -> dict[str, tuple[str, int]]:
        """topic -> (type, message count), by reading the whole bag."""
        out: dict[str, tuple[str, int]] = {}
        for m in self.messages():
            _, n = out.get(m.topic, (m.msgtype, 0))
            out[m.topic] = (m.msgtype, n + 1)
        return out
