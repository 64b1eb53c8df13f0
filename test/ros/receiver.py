"""Test peer: receive N WorldState messages in this process and write them as JSON Lines."""

from __future__ import annotations

import json
import sys
import time

import rclpy

from mango.ros.world_state_msg import msg_to_record
from mango_ros.msg import WorldState


def main(topic: str, count: int, out: str, timeout: float) -> int:
    rclpy.init()
    node = rclpy.create_node("test_receiver")
    got: list[WorldState] = []
    node.create_subscription(WorldState, topic, got.append, count)
    print("ready", flush=True)
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    with open(out, "w") as fh:
        for m in got:
            fh.write(json.dumps(msg_to_record(m)) + "\n")
    node.destroy_node()
    rclpy.shutdown()
    return 0 if len(got) == count else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])))
