"""Seeded bit flips in a bag: `mango bag info|export|repair` and `mango replay` never crash.
What cannot be read is skipped or ends the readable data, and the warning says where, as for a
truncated file; a failed repair leaves no half-written bag behind."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pytest
from rclpy.serialization import serialize_message
from typer.testing import CliRunner

from mango.bags import BagReader, BagWriter
from mango.cli.main import app
from mango.ros.world_state_msg import record_to_msg

ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT / "config/oracles/libero10_soup_sauce_basket.json"
CASES = 150
runner = CliRunner()


def _bag(path: Path) -> Path:
    """A small recording: world states and a second topic, as the recorder writes them."""
    with BagWriter(path) as w:
        w.add_topic("/world_state", "mango_ros/msg/WorldState")
        w.add_topic("/chatter", "std_msgs/msg/String")
        for i in range(40):
            record = {"t": i * 0.1, "objects": {
                "alphabet_soup_1": {"position": [0.1, 0.0, 0.9], "size": [0.07, 0.07, 0.1]}},
                "facts": {"grasped(alphabet_soup_1)": i > 20}}
            w.write("/world_state", serialize_message(record_to_msg(record)), i * 100_000_000)
            if i % 5 == 0:
                w.write("/chatter", b"\x00\x01\x00\x00\x03\x00\x00\x00hi\x00", i * 100_000_000)
    return path


def _mango(*args: object) -> tuple[int, str, BaseException | None]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stderr, result.exception


def _flipped(clean: Path, out: Path, rng: random.Random) -> Path:
    """A copy with one bit flipped: half the time anywhere past the magic, half the time in a
    record's header or its first fields (opcode, length, ids), where a flip hurts most."""
    shutil.copytree(clean, out)
    mcap = next(out.glob("*.mcap"))
    data = bytearray(mcap.read_bytes())
    if rng.random() < 0.5:
        at = rng.randrange(8, len(data))
    else:
        at = rng.choice(_record_offsets(bytes(data))) + rng.randrange(31)
    data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
    mcap.write_bytes(bytes(data))
    return out


def _record_offsets(data: bytes, opcode: int | None = None) -> list[int]:
    pos, out = 8, []
    while pos + 9 <= len(data):
        op, length = struct.unpack_from("<BQ", data, pos)
        if opcode is None or op == opcode:
            out.append(pos)
        pos += 9 + length
    return out


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bag(tmp_path_factory.mktemp("clean") / "bag")


def test_bit_flips_never_crash_a_bag_command(clean: Path, tmp_path: Path) -> None:
    rng = random.Random(2026)
    crashes: list[str] = []
    for k in range(CASES):
        bag = _flipped(clean, tmp_path / f"flip{k}", rng)
        for args in (("bag", "info", bag),
                     ("bag", "export", bag, "-o", tmp_path / f"t{k}.jsonl"),
                     ("bag", "repair", bag, "-o", tmp_path / f"fixed{k}"),
                     ("replay", bag, "--oracle", ORACLE, "--json")):
            code, err, exc = _mango(*args)
            if code not in (0, 2) or (exc is not None and not isinstance(exc, SystemExit)):
                crashes.append(f"case {k} {args[:2]}: exit {code}: {exc!r:.200}")
            elif code == 2:
                assert err.startswith("error: ") and err.count("\n") == 1, err
    assert crashes == [], f"{len(crashes)} crashes:\n" + "\n".join(crashes[:10])


def test_a_message_on_an_unknown_channel_is_skipped_and_said(clean: Path, tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture
                                                             ) -> None:
    bag = tmp_path / "bad_channel"
    shutil.copytree(clean, bag)
    mcap = next(bag.glob("*.mcap"))
    data = bytearray(mcap.read_bytes())
    first = BagReader(clean)
    offsets = _record_offsets(bytes(data), 0x05)
    data[offsets[3] + 9] ^= 0x40  # the 4th message's channel id
    mcap.write_bytes(bytes(data))
    with caplog.at_level("WARNING", logger="mango.bags"):
        messages = list(BagReader(bag).messages())
    assert len(messages) == len(list(first.messages())) - 1
    assert any(f"byte {offsets[3]}" in r.getMessage() and "unknown channel" in r.getMessage()
               for r in caplog.records), caplog.text


def test_a_failed_repair_leaves_nothing_behind(tmp_path: Path) -> None:
    bag = tmp_path / "notabag"
    bag.mkdir()
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {relative_file_paths: "
                                       "[x.mcap]}\n")
    (bag / "x.mcap").write_bytes(b"not an mcap at all")
    code, err, _ = _mango("bag", "repair", bag, "-o", tmp_path / "out")
    assert code == 2 and "bad magic" in err
    assert not (tmp_path / "out").exists()
