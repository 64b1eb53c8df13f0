"""Bag files: rosbag2 layout, readable by rosbags, and by us after any cut."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml
from rclpy.serialization import deserialize_message, serialize_message
from rosbags.highlevel import AnyReader

from mango.bags import BagReader, BagWriter
from mango.bags.types import default_types
from mango.errors import InputError
from mango.ros.world_state_msg import msg_to_record, record_to_msg
from mango_ros.msg import WorldState


def _record(i: int) -> dict:
    return {"t": i * 0.01, "objects": {"soup": {"position": [0.1 * i, 0.0, 0.9], "kind": "object"}},
            "facts": {"grasped(soup)": i % 2 == 0}}


def _write(path: Path, n: int = 50) -> list[bytes]:
    payloads = [serialize_message(record_to_msg(_record(i))) for i in range(n)]
    with BagWriter(path) as w:
        w.add_topic("/world_state", "mango_ros/msg/WorldState",
                    [{"history": "keep_last", "depth": 10, "reliability": "reliable",
                      "durability": "volatile"}])
        for i, p in enumerate(payloads):
            w.write("/world_state", p, 1_000_000_000 + i * 10_000_000)
    return payloads


def test_layout_and_metadata(tmp_path: Path) -> None:
    bag = tmp_path / "run1"
    _write(bag)
    assert sorted(p.name for p in bag.iterdir()) == ["metadata.yaml", "run1_0.mcap"]
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["version"] == 9 and info["storage_identifier"] == "mcap"
    assert info["message_count"] == 50
    assert info["duration"]["nanoseconds"] == 49 * 10_000_000
    topic = info["topics_with_message_count"][0]
    assert topic["message_count"] == 50
    assert topic["topic_metadata"]["type"] == "mango_ros/msg/WorldState"
    assert topic["topic_metadata"]["type_description_hash"].startswith("RIHS01_")


def test_type_hash_matches_rosidl(repo: Path) -> None:
    """The hash in metadata.yaml is the one rosidl generated for the installed interface."""
    import json
    import os

    prefix = Path(os.environ["AMENT_PREFIX_PATH"].split(":")[0])
    desc = prefix / "share/mango_ros/msg/WorldState.json"
    hashes = json.loads(desc.read_text())["type_hashes"]
    want = next(h["hash_string"] for h in hashes if h["type_name"] == "mango_ros/msg/WorldState")
    assert default_types().type_hash("mango_ros/msg/WorldState") == want


def test_third_party_reader_decodes_our_bag(tmp_path: Path) -> None:
    bag = tmp_path / "run2"
    _write(bag, 10)
    with AnyReader([bag], default_typestore=default_types().store) as reader:
        (conn,) = reader.connections
        assert conn.msgtype == "mango_ros/msg/WorldState" and conn.msgcount == 10
        positions = [reader.deserialize(raw, conn.msgtype).objects[0].pose.position.x
                     for _, _, raw in reader.messages()]
    assert positions == pytest.approx([0.1 * i for i in range(10)])


def test_our_reader_round_trips_payloads(tmp_path: Path) -> None:
    bag = tmp_path / "run3"
    payloads = _write(bag)
    got = list(BagReader(bag).messages())
    assert [m.data for m in got] == payloads
    assert msg_to_record(deserialize_message(got[7].data, WorldState)) == {
        **_record(7), "objects": {"soup": {"position": [0.7000000000000001, 0.0, 0.9],
                                           "kind": "object"}},
        "joints": {}, "devices": {}, "contacts": []}


def test_any_cut_of_the_file_reads_cleanly(tmp_path: Path) -> None:
    bag = tmp_path / "run4"
    payloads = _write(bag)
    data = (bag / "run4_0.mcap").read_bytes()
    rng = random.Random(7)
    for cut in [*sorted(rng.sample(range(len(data)), 60)), len(data) - 1]:
        (bag / "run4_0.mcap").write_bytes(data[:cut])
        reader = BagReader(bag)
        got = [m.data for m in reader.messages()]
        assert got == payloads[: len(got)]  # a prefix, never garbage
        assert reader.truncated or len(got) == len(payloads)


def test_refuses_to_overwrite(tmp_path: Path) -> None:
    bag = tmp_path / "run5"
    _write(bag, 1)
    with pytest.raises(FileExistsError):
        BagWriter(bag)


def test_missing_bag_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such bag"):
        BagReader(tmp_path / "nope")


def test_episodes_split_where_world_time_goes_back(tmp_path: Path) -> None:
    from mango.bags.states import bag_episode, bag_episodes

    bag = tmp_path / "two"
    times = [0.0, 0.5, 1.0, 0.0, 0.25]
    with BagWriter(bag) as w:
        w.add_topic("/world_state", "mango_ros/msg/WorldState")
        for i, t in enumerate(times):
            w.write("/world_state", serialize_message(record_to_msg({"t": t})), 1000 + i)
    assert [[s.t for s in e] for e in bag_episodes(bag)] == [[0.0, 0.5, 1.0], [0.0, 0.25]]
    assert [s.t for s in bag_episode(bag)] == [0.0, 0.25]
    assert [s.t for s in bag_episode(bag, episode=1)] == [0.0, 0.5, 1.0]
    assert [s.t for s in bag_episode(bag, episode=-2)] == [0.0, 0.5, 1.0]
    with pytest.raises(InputError, match="no episode 3"):
        bag_episode(bag, episode=3)
    with pytest.raises(InputError, match="no messages on /other"):
        bag_episode(bag, topic="/other")


def test_bag_killed_before_first_flush_reads_as_empty(tmp_path: Path) -> None:
    bag = tmp_path / "early"
    bag.mkdir()
    (bag / "early_0.mcap").write_bytes(b"\x89MC")
    reader = BagReader(bag)
    assert list(reader.messages()) == [] and reader.truncated
