"""Reading a bag in byte spans (how replay workers share it) and judging it in parallel."""

from __future__ import annotations

import itertools
import random
import struct
from pathlib import Path

import pytest
from mcap.writer import CompressionType
from rclpy.serialization import serialize_message
from support.bags import ORACLE, TYPE
from support.bags import episode as _episode
from support.bags import write_bag as _write
from support.bags import write_chunked as _write_chunked

from mango.bags import BagReader, BagWriter
from mango.bags.judge import judge_bag
from mango.errors import InputError
from mango.oracle import StepTracker
from mango.ros.world_state_msg import record_to_msg


def _cuts(size: int, n: int, rng: random.Random, exact: list[int] = ()) -> list[tuple[int, int]]:
    """n random cuts, and the offsets in `exact` (where records start)."""
    cuts = sorted({0, size + 1, *exact, *(rng.randrange(size) for _ in range(n))})
    return list(itertools.pairwise(cuts))


def _record_starts(path: Path) -> list[int]:
    """Where each top-level MCAP record begins (opcode byte, then a u64 length)."""
    buf = path.read_bytes()
    pos, out = 8, []
    while pos + 9 <= len(buf):
        out.append(pos)
        pos += 9 + struct.unpack_from("<Q", buf, pos + 1)[0]
    return out


@pytest.mark.parametrize("chunked", [None, CompressionType.NONE, CompressionType.ZSTD])
def test_adjacent_spans_read_every_message_once_in_order(
        tmp_path: Path, chunked: CompressionType | None) -> None:
    states = _episode(120, 30, 80)
    if chunked is not None:
        bag = tmp_path / "chunked.mcap"
        _write_chunked(bag, states, chunked)
    else:
        bag = tmp_path / "bag"
        _write(bag, states)
    reader = BagReader(bag)
    whole = [m.data for m in reader.messages({"/world_state"})]
    assert whole == [d for _, d in states]
    rng = random.Random(7)
    starts = _record_starts(reader.files[0])
    for n in (1, 2, 5, 40):
        spans = _cuts(reader.size, n, rng, rng.sample(starts, min(n, len(starts))))
        pieces = [m.data for s in spans for m in BagReader(bag).messages({"/world_state"}, s)]
        assert pieces == whole


def test_spans_cover_a_bag_of_several_files(tmp_path: Path) -> None:
    states = _episode(60, 10, 40)
    bag = tmp_path / "split"
    bag.mkdir()
    for k, part in enumerate((states[:25], states[25:])):
        _write_chunked(bag / f"split_{k}.mcap", part)
    reader = BagReader(bag)
    rng = random.Random(3)
    for n in (1, 3, 9):
        spans = _cuts(reader.size, n, rng)
        assert [m.data for s in spans for m in reader.messages({"/world_state"}, s)] == [
            d for _, d in states]


def _judge(bag: Path, jobs: int, episode: int | None = None) -> dict:
    return judge_bag(bag, StepTracker(ORACLE), episode=episode, jobs=jobs).to_json()


@pytest.mark.parametrize("jobs", [2, 3])
def test_parallel_judge_equals_sequential(tmp_path: Path, jobs: int) -> None:
    """Several episodes (world time going back lands anywhere relative to the spans): the
    verdict, completions and events are those of the one-process pass."""
    rng = random.Random(jobs)
    for case in range(6):
        states: list[tuple[float, bytes]] = []
        for _ in range(rng.randint(1, 4)):
            n = rng.randint(5, 90)
            lift = rng.randint(0, n)
            states += _episode(n, lift, rng.choice([None, rng.randint(lift, n)]))
        bag = tmp_path / f"case{case}"
        _write(bag, states)
        assert _judge(bag, jobs) == _judge(bag, 1), case


def _same_error(bag: Path, kind: type[Exception]) -> str:
    """The error judging `bag` raises, the same text in one process and in two."""
    with pytest.raises(kind) as seq:
        _judge(bag, 1)
    with pytest.raises(kind) as par:
        _judge(bag, 2)
    assert str(par.value) == str(seq.value)
    return str(par.value)


def test_a_message_that_does_not_decode_is_skipped_and_said_like_the_node(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The oracle node logs an unreadable WorldState and judges on; a replay of the same bag
    skips it with the same words and its message number, in one process or two."""
    states = _episode(80, 20, 60)
    good = _judge_states(tmp_path / "good", states[:65] + states[66:])
    states[65] = (states[65][0], states[65][1][:30])  # cut short
    bag = tmp_path / "bad"
    _write(bag, states)
    for jobs in (1, 2):
        caplog.clear()
        with caplog.at_level("WARNING", logger="mango.bags"):
            assert _judge(bag, jobs) == good
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 1 and said[0].startswith("/world_state message 66: skipped: "), said


def _judge_states(bag: Path, states: list[tuple[float, bytes]]) -> dict:
    _write(bag, states)
    return _judge(bag, 1)


def test_a_state_that_cannot_be_evaluated_is_skipped_and_said_like_the_node(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The oracle node skips a state it cannot evaluate and says why once; a replay of the
    same bag does exactly that, in one process or two."""
    states = _episode(80, 20, None)
    gone = serialize_message(record_to_msg({"t": 7.0}))  # the soup vanished
    states[70] = (7.0, gone)
    bag = tmp_path / "gone"
    _write(bag, states)
    reference = tmp_path / "without"
    _write(reference, states[:70] + states[71:])
    expected = _judge(reference, 1)
    for jobs in (1, 2):
        caplog.clear()
        with caplog.at_level("WARNING", logger="mango.bags"):
            assert _judge(bag, jobs) == expected
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 1 and "state skipped" in said[0], said
        assert "t=7.0" in said[0] and "soup" in said[0]


def test_parallel_judge_of_an_empty_topic_is_a_clear_error(tmp_path: Path) -> None:
    bag = tmp_path / "empty"
    with BagWriter(bag) as w:
        w.add_topic("/chatter", "std_msgs/msg/String")
        w.write("/chatter", b"\x00\x01\x00\x00\x03\x00\x00\x00hi\x00", 1)
    with pytest.raises(InputError, match="no messages on /world_state"):
        _judge(bag, 2)


def test_chosen_episode_is_judged_the_same_whatever_jobs(tmp_path: Path) -> None:
    bag = tmp_path / "two"
    _write(bag, _episode(40, 10, 30) + _episode(40, 35, None))
    first = _judge(bag, 2, episode=1)
    assert first["verdict"] == "pass" and _judge(bag, 1, episode=1) == first
    assert _judge(bag, 2)["failed_step"] == "2"


def test_a_dead_worker_falls_back_to_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    import os

    import mango.bags.judge as bag_judge

    bag = tmp_path / "bag"
    _write(bag, _episode(60, 10, 40))
    monkeypatch.setattr(bag_judge, "_worker", lambda *_args: os._exit(3))
    assert _judge(bag, 2) == _judge(bag, 1)
    assert "judging in one process" in caplog.text


def test_hostile_values_in_a_bag_are_dropped_alike_in_one_process_or_two(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """NaN poses and ids given twice: the replay skips those states as the node does (judged
    without the table, the soup on it would count as lifted), says so once per problem, and
    judges the rest exactly like the recording without them."""
    import math

    from rclpy.serialization import deserialize_message

    from mango_ros.msg import ObjectState, WorldState

    clean = _episode(120, 20, 100)
    hostile = []
    for k, (t, data) in enumerate(clean):
        hostile.append((t, data))
        if k % 3 == 0:
            msg = deserialize_message(data, WorldState)
            if k % 2:
                msg.objects.append(ObjectState(id="ghost"))
                msg.objects[-1].pose.position.z = math.nan
            else:
                msg.objects.append(next(o for o in msg.objects if o.id == "table"))
            msg.objects[0].pose.position.z = 5.0  # what a reader must not believe
            hostile.append((t, serialize_message(msg)))
    _write(tmp_path / "clean", clean)
    _write(tmp_path / "hostile", hostile)
    expected = _judge(tmp_path / "clean", 1)
    for jobs in (1, 2):
        caplog.clear()
        with caplog.at_level("WARNING", logger="mango.bags"):
            assert _judge(tmp_path / "hostile", jobs) == expected
        said = [r.getMessage().split(": ", 1)[1] for r in caplog.records]
        # each problem said once, then again after 10 s of world time with its count
        assert said[:2] == [
            "state skipped: object 'table': its id occurs 2 times",
            "state skipped: object 'ghost': position [0.0, 0.0, nan] must be finite"], said
        assert len(said) == 4 and all("more since it was last reported" in x for x in said[2:])
    # the export (what `mango bag export` writes) leaves the same states out: checkable, and
    # judged the same
    from mango.bags.states import iter_episode
    from mango.oracle import check_trace, read_trace
    from mango.oracle.world_state import write_trace

    trace = tmp_path / "hostile.jsonl"
    write_trace(trace, iter_episode(tmp_path / "hostile"))
    assert check_trace(ORACLE, read_trace(trace)).to_json() == expected


def test_the_only_world_state_topic_is_found_and_two_are_a_clear_error(tmp_path: Path) -> None:
    from mango.bags.states import world_state_topic

    states = _episode(5, 2, None)
    one = tmp_path / "one"
    with BagWriter(one) as w:
        w.add_topic("/mango_ab12/world_state", TYPE)
        w.add_topic("/chatter", "std_msgs/msg/String")
        for k, (_t, data) in enumerate(states):
            w.write("/mango_ab12/world_state", data, k)
    assert world_state_topic(one) == "/mango_ab12/world_state"
    assert world_state_topic(one, "/given") == "/given"
    two = tmp_path / "two"
    with BagWriter(two) as w:
        for topic in ("/a/world_state", "/b/world_state"):
            w.add_topic(topic, TYPE)
            w.write(topic, states[0][1], 0)
    with pytest.raises(InputError, match=r"2 WorldState topics .*choose one with --topic"):
        world_state_topic(two)
