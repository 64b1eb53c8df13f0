"""Baseline for the latency bench: a node that answers every other `WorldState` with a
`StepVerdict` carrying its stamp, doing no other work. Same executor, QoS and transport as
`oracle_node`, so the oracle's figure minus this one is what judging adds."""

from __future__ import annotations

import sys

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from mango.nodes.common import latched_qos, run_node
from mango.ros.verdict_msg import step_verdict_cdr
from mango_ros.msg import StepVerdict, WorldState


class EchoNode(Node):
    def __init__(self) -> None:
        super().__init__("echo_node")
        self.pub = self.create_publisher(StepVerdict, "oracle/step_verdicts", latched_qos(1000))
        self.create_subscription(WorldState, "world_state", self._on_state,
                                 QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE),
                                 raw=True)
        self.count = 0

    def _on_state(self, data: bytes) -> None:
        self.count += 1
        if self.count % 2 == 0:
            sec, nsec = int.from_bytes(data[4:8], "little"), int.from_bytes(data[8:12], "little")
            self.pub.publish(step_verdict_cdr(sec + nsec * 1e-9, "1.1", "echo", "pending",
                                              "out_of_order"))


if __name__ == "__main__":
    run_node(EchoNode, sys.argv[1:], threads=1)
