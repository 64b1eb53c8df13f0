"""Hostile bags (issue #41): a `WorldState` topic on which no state decodes is bad input, not a
failed robot; a file holding several recordings is read to its end by every bag command; a
file cut short (its recorder died) and a damaged one are told apart, with the byte offset.
Every command answers with a stated count, or exits 2 with one error line."""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcap.reader import make_reader
from mcap.writer import CompressionType
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from support.bags import (
    ORACLE,
    TYPE,
    episode,
    message_ends,
    record_starts,
    write_bag,
    write_chunked,
)
from typer.testing import CliRunner

from mango.bags import BagMessage, BagReader, BagWriter
from mango.bags.judge import judge_bag
from mango.bags.states import iter_episode
from mango.cli.main import app
from mango.errors import InputError
from mango.oracle import StepTracker
from mango.ros.world_state_msg import record_to_msg

runner = CliRunner()
JOINTS = serialize_message(JointState(name=["fr3_joint1", "fr3_joint2"], position=[0.1, -0.2]))


def _mango(*args: object) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of a `mango` command; a traceback fails the test."""
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _error_line(code: int, err: str) -> str:
    """The one `error:` line of a command that refused its input (exit 2)."""
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1, (code, err)
    return err.strip()


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("oracle") / "soup.json"
    path.write_text(json.dumps(ORACLE))
    return path


def _bag_of(bag: Path, payloads: list[bytes]) -> Path:
    """A bag whose `/world_state` (typed WorldState) carries these payloads."""
    with BagWriter(bag) as w:
        w.add_topic("/world_state", TYPE)
        for k, data in enumerate(payloads):
            w.write("/world_state", data, k)
    return bag


# ------------------------------------------------------------------ no state decodes


@pytest.mark.parametrize("kind", ["joint_states", "garbage"])
def test_a_world_state_topic_on_which_nothing_decodes_is_bad_input(
        tmp_path: Path, oracle: Path, kind: str) -> None:
    """JointState bytes (or garbage) on a channel typed WorldState: no verdict blaming the
    robot (it was `FAIL (0 states)`, exit 0) and no empty trace (`wrote 0 states`), but one
    error line that says no state decoded, how many messages failed and the first reason."""
    rng = random.Random(41)
    payloads = [JOINTS if kind == "joint_states" else rng.randbytes(rng.randrange(0, 300))
                for _ in range(20)]
    bag = _bag_of(tmp_path / kind, payloads)
    said = re.compile(rf"error: {re.escape(str(bag))}: no state on /world_state decoded: all "
                      rf"20 messages fail to decode as {TYPE} \(first, message 1: .+\)$")
    lines = set()
    for jobs in ("1", "2"):
        line = _error_line(*_mango("replay", bag, "--oracle", oracle, "--jobs", jobs)[::2])
        assert said.match(line), line
        lines.add(line)
    assert len(lines) == 1  # one process or two say the same
    with pytest.raises(InputError) as seq:
        judge_bag(bag, StepTracker(ORACLE), jobs=1)
    with pytest.raises(InputError) as par:
        judge_bag(bag, StepTracker(ORACLE), jobs=2)
    assert str(seq.value) == str(par.value) == lines.pop().removeprefix("error: ")

    line = _error_line(*_mango("replay", bag, "--oracle", oracle, "--episode", "1")[::2])
    assert "no state on /world_state (episode 1) decoded: all 20 messages" in line
    trace = tmp_path / "trace.jsonl"
    assert said.match(_error_line(*_mango("bag", "export", bag, "-o", trace)[::2]))
    assert not trace.exists()  # no empty trace left behind


def _invalid_state(t: float) -> bytes:
    """A state that decodes but breaks the validity rules (a non-finite position)."""
    msg = record_to_msg({"t": t, "objects": {"soup": {"position": [0.0, 0.0, 0.9]}}})
    msg.objects[0].pose.position.z = math.nan
    return serialize_message(msg)


def test_states_that_cannot_be_used_among_good_ones_are_skipped_and_counted(
        tmp_path: Path, oracle: Path) -> None:
    """The documented choice: a state that does not decode or breaks the rules is skipped (as
    the oracle node skips it), the rest is judged exactly like the recording without it, and
    the command ends with the count of what it skipped and why."""
    good = [d for _, d in episode(60, 20, 45)]
    hostile = list(good)
    hostile[10] = hostile[30] = JOINTS
    hostile[40] = _invalid_state(4.0)
    _bag_of(tmp_path / "hostile", hostile)
    _bag_of(tmp_path / "without", [d for i, d in enumerate(good) if i not in (10, 30, 40)])
    code, out, _ = _mango("replay", tmp_path / "without", "--oracle", oracle, "--json")
    assert code == 0
    expected = json.loads(out)
    assert expected["verdict"] == "pass"
    code, out, _ = _mango("replay", tmp_path / "hostile", "--oracle", oracle)
    assert code == 0 and "verdict: PASS  (2/2 steps, 57 states" in out, out
    for jobs in ("1", "2"):
        code, out, err = _mango("replay", tmp_path / "hostile", "--oracle", oracle, "--json",
                                "--jobs", jobs)
        assert code == 0 and json.loads(out) == expected
        assert err.splitlines()[-1].startswith(
            "/world_state: 3 of 60 messages not judged: 2 do not decode (first, message 11: "
        ) and ("1 breaks the validity rules (first, t=4.000: object 'soup': position "
               "[0.0, 0.0, nan] must be finite)") in err, err
    code, _, err = _mango("bag", "export", tmp_path / "hostile", "-o", tmp_path / "t.jsonl")
    assert code == 0
    wrote, skipped = err.splitlines()[-2:]
    assert wrote == f"wrote 57 states to {tmp_path / 't.jsonl'}"
    assert skipped.startswith("/world_state: 3 of 60 messages not exported: 2 do not decode")
    assert len((tmp_path / "t.jsonl").read_text().splitlines()) == 57


def test_a_recording_none_of_whose_states_can_be_evaluated_is_bad_input(
        tmp_path: Path, oracle: Path) -> None:
    """States that decode but name none of the oracle's objects: nothing was judged, so there
    is no verdict, but an error saying why."""
    bag = _bag_of(tmp_path / "other", [serialize_message(record_to_msg(
        {"t": 0.1 * i, "objects": {"mug": {"position": [0.0, 0.0, 0.9]}}})) for i in range(20)])
    for jobs in ("1", "2"):
        line = _error_line(*_mango("replay", bag, "--oracle", oracle, "--jobs", jobs)[::2])
        assert re.match(r"error: .*: no usable state on /world_state: of its 20 messages, 20 "
                        r"could not be evaluated \(first, step 1 \(lift\) at t=0\.0: .*soup",
                        line), line


# ------------------------------------------------------------- recordings in one file


def _judged(*args: object) -> dict:
    code, out, err = _mango("replay", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_recordings_concatenated_into_one_file_are_all_read(
        tmp_path: Path, oracle: Path, caplog: pytest.LogCaptureFixture) -> None:
    """`cat a.mcap b.mcap c.mcap > joined.mcap` (ours, `ros2 bag record`'s chunked zstd,
    ours): `bag info` counts every message (it read only the first recording's), replay
    judges each recording as an episode, export writes any of them, and repair keeps all."""
    write_bag(tmp_path / "a", episode(40, 10, None))  # lifted, never placed: fails
    write_chunked(tmp_path / "b.mcap", episode(60, 10, 40), CompressionType.ZSTD)  # passes
    write_bag(tmp_path / "c", episode(30, 25, None))  # fails
    parts = [tmp_path / "a/a_0.mcap", tmp_path / "b.mcap", tmp_path / "c/c_0.mcap"]
    blobs = [p.read_bytes() for p in parts]
    joined = tmp_path / "joined.mcap"
    joined.write_bytes(b"".join(blobs))
    clean = [list(BagReader(p).messages()) for p in parts]
    every = [m for part in clean for m in part]

    reader = BagReader(joined)
    with caplog.at_level("WARNING", logger="mango.bags"):
        assert list(reader.messages()) == every
    starts = list(itertools.accumulate(len(b) for b in blobs))[:2]
    assert [r.getMessage() for r in caplog.records] == [
        f"{joined}: recording {k} of this file begins at byte {at} (MCAP files concatenated "
        "into one): read as well, after the one before it" for k, at in zip((2, 3), starts,
                                                                           strict=True)]
    assert reader.recordings == {joined: 3} and not reader.truncated and reader.corrupt == 0

    code, out, _ = _mango("bag", "info", joined)
    assert code == 0 and "holds 3 recordings" in out
    for topic in ("/world_state", "/chatter"):
        n = sum(m.topic == topic for m in every)
        assert re.search(rf"{topic}\s+│[^│]+│\s+{n}\s", out), out
    assert sum(m.topic == "/world_state" for m in every) == 130

    alone = [_judged(p, "--oracle", oracle) for p in parts]
    assert [r["verdict"] for r in alone] == ["fail", "pass", "fail"]
    assert _judged(joined, "--oracle", oracle) == alone[2]  # the last episode, by default
    assert _judged(joined, "--oracle", oracle, "--jobs", "2") == alone[2]
    for k in (1, 2, 3):
        assert _judged(joined, "--oracle", oracle, "--episode", k) == alone[k - 1]
        code, _, err = _mango("bag", "export", joined, "--episode", k, "-o", tmp_path / "t")
        assert code == 0 and err.endswith(f"wrote {(40, 60, 30)[k - 1]} states to "
                                          f"{tmp_path / 't'}\n"), err

    code, _, err = _mango("bag", "repair", joined, "-o", tmp_path / "fixed")
    assert code == 0 and err == (f"wrote {len(every)} messages to {tmp_path / 'fixed'} "
                                 "(from 3 recordings)\n"), err
    assert list(BagReader(tmp_path / "fixed").messages()) == every


# ------------------------------------------------------------ no bag at all


def _not_a_bag(kind: str, folder: Path) -> tuple[Path, str]:
    """A path given as a bag that holds none, and what the error says it is."""
    if kind == "empty folder":
        (folder / "empty").mkdir()
        return folder / "empty", "no bag here: no metadata.yaml and no .mcap file"
    if kind == "fifo":
        os.mkfifo(folder / "run.mcap")
        return folder / "run.mcap", "cannot read bag: a named pipe (FIFO), not a regular file"
    if kind == "metadata a fifo":
        (folder / "bag").mkdir()
        os.mkfifo(folder / "bag" / "metadata.yaml")
        return folder / "bag", ""  # named by its own path, below
    if kind == "mcap a link to a device":
        (folder / "bag").mkdir()
        (folder / "bag" / "bag_0.mcap").symlink_to("/dev/zero")
        return folder / "bag", ""
    return Path(kind), "cannot read bag: a character device, not a regular file"


@pytest.mark.timeout(60)  # a read of a FIFO would block for good: fail, never hang
@pytest.mark.parametrize("kind", ["empty folder", "fifo", "/dev/zero", "metadata a fifo",
                                  "mcap a link to a device"])
def test_a_path_that_holds_no_bag_is_one_error_line(tmp_path: Path, oracle: Path,
                                                    kind: str) -> None:
    """An empty folder was an empty bag (`bag info` an empty table, `bag repair` 'wrote 0
    messages', exit 0); a device or a FIFO was 'no such bag'. Each bag command now says what
    the path is, exit 2, before reading a byte of a special file."""
    path, says = _not_a_bag(kind, tmp_path)
    if kind == "metadata a fifo":
        expected = (f"error: {path / 'metadata.yaml'}: cannot read bag metadata: a named pipe "
                    "(FIFO), not a regular file")
    elif kind == "mcap a link to a device":
        expected = (f"error: {path / 'bag_0.mcap'}: cannot read bag file: a character device, "
                    "not a regular file")
    else:
        expected = f"error: {path}: {says}"
    for args in (["bag", "info", path], ["bag", "repair", path, "-o", tmp_path / "fixed"],
                 ["bag", "export", path, "-o", tmp_path / "t.jsonl"],
                 ["replay", path, "--oracle", oracle]):
        assert _error_line(*_mango(*args)[::2]) == expected, args
    assert not (tmp_path / "fixed").exists() and not (tmp_path / "t.jsonl").exists()


# ------------------------------------------------------------ cut short, or damaged


@dataclass
class _Clean:
    data: bytes
    messages: list[BagMessage]
    records: list[tuple[int, int, int]]  # (offset, opcode, length)


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> _Clean:
    bag = tmp_path_factory.mktemp("clean") / "run"
    write_bag(bag, episode(40, 10, 30))
    data = (bag / "run_0.mcap").read_bytes()
    return _Clean(data, list(BagReader(bag).messages()), record_starts(data))


def _read(path: Path, data: bytes, caplog: pytest.LogCaptureFixture
          ) -> tuple[list[BagMessage], list[str], BagReader]:
    path.write_bytes(data)
    caplog.clear()
    reader = BagReader(path)
    with caplog.at_level("WARNING", logger="mango.bags"):
        got = list(reader.messages())
    return got, [r.getMessage() for r in caplog.records], reader


def test_a_file_cut_short_and_a_damaged_one_are_told_apart(
        clean: _Clean, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The file ending inside a record is a recorder that died; a record whose length or
    opcode cannot be right while readable records follow is corruption at that byte, skipped
    to the next readable record: the messages after it are read (they were dropped)."""
    k = 12  # the 13th message record, in the middle of the file
    at, length = [(at, n) for at, op, n in clean.records if op == 0x05][k]
    after = at + 9 + length  # where the next record starts
    data, size = clean.data, len(clean.data)
    f = tmp_path / "x.mcap"
    without = clean.messages[:k] + clean.messages[k + 1:]

    got, said, reader = _read(f, data[:at + 20], caplog)
    assert said == [f"{f}: the file ends inside a {length}-byte record at byte {at} (11 bytes "
                    "of it written): its recorder probably died; the messages before that "
                    "point were read"]
    assert got == clean.messages[:k] and reader.truncated and reader.corrupt == 0

    damaged = bytearray(data)
    struct.pack_into("<Q", damaged, at + 1, 10**12)
    got, said, reader = _read(f, bytes(damaged), caplog)
    assert said == [f"{f}: corrupt at byte {at}: a record whose length (1000000000000 bytes) "
                    f"runs past the end of the file ({size - at - 9} bytes there); skipped "
                    f"{after - at} bytes to the next readable record, at byte {after}"]
    assert got == without and not reader.truncated and reader.corrupt == 1

    damaged = bytearray(data)
    damaged[at] = 0x45
    got, said, reader = _read(f, bytes(damaged), caplog)
    assert said == [f"{f}: corrupt at byte {at}: a record with invalid opcode 0x45; skipped "
                    f"{after - at} bytes to the next readable record, at byte {after}"]
    assert got == without and not reader.truncated and reader.corrupt == 1

    damaged = bytearray(data)  # a length a little long: it lands inside the next record
    struct.pack_into("<Q", damaged, at + 1, length + 3)
    got, said, reader = _read(f, bytes(damaged), caplog)
    assert said == [f"{f}: corrupt at byte {at}: a record whose length ({length + 3} bytes) "
                    f"runs over the next readable record; skipped {after - at} bytes to the "
                    f"next readable record, at byte {after}"]
    assert got == without and not reader.truncated and reader.corrupt == 1

    got, said, reader = _read(f, data[:at] + bytes(50), caplog)  # nothing readable follows
    assert said == [f"{f}: corrupt at byte {at}: a record with invalid opcode 0x00; nothing "
                    "after it reads (50 bytes lost)"]
    assert got == clean.messages[:k] and not reader.truncated and reader.corrupt == 1

    # the command line says which, and repair keeps what reads
    damaged = bytearray(data)
    struct.pack_into("<Q", damaged, at + 1, 10**12)
    f.write_bytes(bytes(damaged))
    code, out, _ = _mango("bag", "info", f)
    assert code == 0 and "1 damaged place(s) skipped" in out and "ends early" not in out
    code, _, err = _mango("bag", "repair", f, "-o", tmp_path / "fixed")
    assert code == 0 and err == f"wrote {len(without)} messages to {tmp_path / 'fixed'}\n"
    f.write_bytes(data[:at + 20])
    code, out, _ = _mango("bag", "info", f)
    assert code == 0 and "ends early" in out and "damaged" not in out


def test_a_recording_cut_off_where_another_was_appended(
        clean: _Clean, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A killed recording with a new one appended (`cat killed.mcap new.mcap`): what the first
    wrote before it died, then the whole second."""
    ends = message_ends(clean.data)
    f = tmp_path / "x.mcap"
    for at, _, length in clean.records[1:-1]:
        for cut in (at, at + 5, at + 9 + length // 2):
            got, said, reader = _read(f, clean.data[:cut] + clean.data, caplog)
            kept = sum(e <= cut for e in ends)
            assert got == clean.messages[:kept] + clean.messages, cut
            assert reader.truncated and reader.corrupt == 0 and reader.recordings == {f: 2}
            stop = (f"recording 1 stops without its footer at byte {cut}" if cut == at else
                    f"recording 1 stops inside a record at byte {at}, where recording 2 "
                    f"begins (byte {cut})")
            assert said[0].startswith(f"{f}: {stop}") and len(said) == 2, said


# --------------------------------------------------------------- the property


@dataclass
class _Part:
    data: bytes
    messages: list[BagMessage]
    ends: list[int]  # where the record holding each message ends


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, _Part]:
    """Recordings to cut, damage and concatenate: ours (with a second topic, and without),
    and `ros2 bag record`'s chunked ones, uncompressed and zstd."""
    folder = tmp_path_factory.mktemp("parts")
    write_bag(folder / "ours", episode(30, 8, 20))
    write_bag(folder / "short", episode(12, 3, None), extra_topic=False)
    write_chunked(folder / "chunked.mcap", episode(25, 5, 18), chunk_size=1024)
    write_chunked(folder / "zstd.mcap", episode(20, 4, 15), CompressionType.ZSTD,
                  chunk_size=1024)
    out = {}
    for name, path in (("ours", folder / "ours/ours_0.mcap"),
                       ("short", folder / "short/short_0.mcap"),
                       ("chunked", folder / "chunked.mcap"), ("zstd", folder / "zstd.mcap")):
        data = path.read_bytes()
        messages = list(BagReader(path).messages())
        with path.open("rb") as fh:  # the clean reading, checked with the mcap library's
            theirs = [(c.topic, m.log_time, m.data) for _, c, m
                      in make_reader(fh).iter_messages(log_time_order=False)]
        assert [(m.topic, m.log_time_ns, m.data) for m in messages] == theirs
        out[name] = _Part(data, messages, message_ends(data))
        assert len(out[name].ends) == len(messages)
    return out


def _subsequence(small: list[BagMessage], big: list[BagMessage]) -> bool:
    it = iter(big)
    return all(m in it for m in small)


_MUTATIONS = ["whole", "cut", "cut_then_more", "bad_opcode", "bad_length", "junk"]


def _hostile(draw: st.DrawFn, parts: dict[str, _Part]
             ) -> tuple[bytes, list[BagMessage], list[BagMessage], str]:
    """A file of 1-3 recordings, one of them mutated: its bytes, the messages a reader must
    return (all of them, in order), those it may also return (no others), and the kind."""
    names = draw(st.lists(st.sampled_from(sorted(parts)), min_size=1, max_size=3))
    chosen = [parts[n] for n in names]
    kind = draw(st.sampled_from(_MUTATIONS))
    j = draw(st.integers(0, len(chosen) - 1))
    part = chosen[j]
    before = [m for p in chosen[:j] for m in p.messages]
    later = [m for p in chosen[j + 1:] for m in p.messages]
    blob = part.data
    must = may = part.messages
    if kind == "cut":  # the file ends inside this recording
        cut = draw(st.integers(8 if j == 0 else 1, len(blob) - 1))
        blob, later = blob[:cut], []
        must = may = part.messages[:sum(e <= cut for e in part.ends)]
        chosen = chosen[:j + 1]
    elif kind == "cut_then_more":  # cut off, and more recordings appended
        cut = draw(st.integers(8 if j == 0 else 1, len(blob) - 1))
        blob = blob[:cut]
        must = may = part.messages[:sum(e <= cut for e in part.ends)]
    elif kind in ("bad_opcode", "bad_length"):  # one record holding messages is damaged
        holding = [(at, n) for at, op, n in record_starts(blob) if op in (0x05, 0x06)]
        at, length = draw(st.sampled_from(holding))
        lost = sum(at < e <= at + 9 + length for e in part.ends)
        first = sum(e <= at for e in part.ends)
        must = part.messages[:first] + part.messages[first + lost:]
        damaged = bytearray(blob)
        if kind == "bad_opcode":
            damaged[at] = draw(st.sampled_from([0x00, 0x10, 0x45, 0x7F]))
        else:
            struct.pack_into("<Q", damaged, at + 1, draw(st.integers(1 << 24, 1 << 63)))
        blob = bytes(damaged)
    elif kind == "junk":  # bytes that are no record, between two records
        at = draw(st.sampled_from([at for at, _, _ in record_starts(blob)[1:]]))
        junk = draw(st.integers(0, 0x7F).filter(lambda b: not 0 < b <= 0x0F)).to_bytes(1, "little")
        blob = blob[:at] + junk + draw(st.binary(max_size=64)) + blob[at:]
        may = None  # junk may read as messages
    data = b"".join(p.data for p in chosen[:j]) + blob + b"".join(
        p.data for p in chosen[j + 1:])
    return data, before + must + later, None if may is None else before + may + later, kind


@settings(max_examples=300, deadline=None)
@given(draw=st.data())
def test_any_cut_damage_or_concatenation_reads_everything_readable(
        parts: dict[str, _Part], tmp_path_factory: pytest.TempPathFactory,
        draw: st.DataObject) -> None:
    """Recordings concatenated, one of them cut at any offset (alone or with more appended),
    a record's opcode or length damaged, or junk between records: the reader returns every
    message a clean reading of each part gives, in order, except the damaged record's, and
    nothing else (junk aside); whatever it loses, it says (truncated or corrupt); it never
    raises."""
    data, must, may, kind = _hostile(draw.draw, parts)
    path = tmp_path_factory.getbasetemp() / "hostile.mcap"
    path.write_bytes(data)
    reader = BagReader(path)
    got = list(reader.messages())
    assert _subsequence(must, got), kind
    if may is not None:
        assert _subsequence(got, may), kind
    if kind == "whole":
        assert got == must and not reader.truncated and reader.corrupt == 0
        k = data.count(b"\x89MCAP0\r\n") // 2  # each recording opens and closes with it
        assert reader.recordings == ({path: k} if k > 1 else {})
    else:  # every mutation loses something (at least a footer): it is said
        assert reader.truncated or reader.corrupt, kind


@settings(max_examples=25, deadline=None)
@given(draw=st.data())
def test_every_bag_command_states_its_count_or_refuses_in_one_line(
        parts: dict[str, _Part], tmp_path_factory: pytest.TempPathFactory, oracle: Path,
        draw: st.DataObject) -> None:
    """The same hostile files through `bag info`, `bag export`, `bag repair` and `replay`:
    exit 0 with the count the reader gives, or exit 2 with one error line; no traceback."""
    data, _, _, kind = _hostile(draw.draw, parts)
    folder = tmp_path_factory.mktemp("cli")
    path = folder / "hostile.mcap"
    path.write_bytes(data)
    reader = BagReader(path)
    messages = list(reader.messages())
    topics = reader.topics()

    code, out, err = _mango("bag", "info", path)
    assert code == 0, err
    for topic, (_, n) in topics.items():
        assert re.search(rf"{re.escape(topic)}\s+│[^│]+│\s+{n}\s", out), out

    code, _, err = _mango("bag", "repair", path, "-o", folder / "fixed")
    if code == 0:
        assert err.startswith(f"wrote {len(messages)} messages to {folder / 'fixed'}")
        assert list(BagReader(folder / "fixed").messages()) == messages
    else:
        _error_line(code, err)

    try:
        states = sum(1 for _ in iter_episode(reader))
    except InputError:
        states = None
    code, _, err = _mango("bag", "export", path, "-o", folder / "t.jsonl")
    if states is None:
        _error_line(code, err)
    else:
        assert code == 0 and f"wrote {states} states to " in err, err
    code, out, err = _mango("replay", path, "--oracle", oracle)
    if code == 2:
        _error_line(code, err)
        assert states is None
    else:
        assert code == 0, err
        judged = re.search(r"steps, (\d+) states", out)
        assert judged, out
        if kind != "junk":  # junk may read as a state, whose stamp may start an episode
            assert int(judged[1]) == states
