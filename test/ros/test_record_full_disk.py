"""`mango record` when the disk will take no more: one `error:` line naming the bag's file, exit
2, no traceback, and what reached the disk before stays a readable bag.

The full disk is the kernel's own refusal, not a stand-in: the recorder runs under a file-size
limit (RLIMIT_FSIZE), so its writes past the limit fail (EFBIG) as they would on a full disk
(ENOSPC), in the same place. The limit stays above Fast DDS's shared-memory segment (16 MiB,
config/dds), which the recorder needs to hear the messages at all."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

from rclpy.node import Node
from std_msgs.msg import String
from support.ros import wait_for

from mango.bags import BagReader

LIMIT = 20 * 2**20  # bytes a file of the recorder may hold
PAYLOAD = "x" * 2**20  # one message: 1 MiB, so the limit is reached in about 20


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_full_disk_ends_the_recording_with_one_error_and_a_readable_bag(
        ros_node: Node, namespace: str, tmp_path: Path) -> None:
    bag = tmp_path / "full"
    topic = f"{namespace}/big"
    pub = ros_node.create_publisher(String, topic, 10)
    rec = subprocess.Popen([sys.executable, "-m", "mango.cli.main", "record", "-o", str(bag),
                            topic, "--duration", "60"], stderr=subprocess.PIPE, text=True,
                           preexec_fn=_limited)
    try:
        wait_for(lambda: ros_node.count_subscribers(topic) >= 1, timeout=30,
                 what="the recorder subscribed")
        deadline = time.monotonic() + 60
        while rec.poll() is None and time.monotonic() < deadline:
            pub.publish(String(data=PAYLOAD))
            time.sleep(0.02)
        _, err = rec.communicate(timeout=20)
    finally:
        if rec.poll() is None:
            rec.kill()
    mcap = bag / "full_0.mcap"
    assert rec.returncode == 1, err  # commands.md: the run could not be carried out
    assert "Traceback" not in err and "Exception ignored" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {mcap}: cannot write: File too large; the bag keeps what "
                      "reached the disk before (`mango bag info` reads it)"], err
    assert mcap.stat().st_size <= LIMIT
    reader = BagReader(bag)
    kept = list(reader.messages())
    assert len(kept) >= 5 and {m.topic for m in kept} == {topic}
    assert all(len(m.data) > len(PAYLOAD) for m in kept)  # whole messages, none cut short
