"""Play a world-state trace (spec §3 JSON Lines) as `WorldState` messages.

Parameters: `trace_file`, `topic` (default `/world_state`), `rate_scale` (1.0 = the trace's
own timing; 0 = as fast as subscribers allow), `wait_for_subscribers` (count to wait for),
`start_delay` (s), `loop`, `shutdown_when_done`.
"""

from __future__ import annotations

import sys
import time

import rclpy
from rclpy.node import Node

from mango.nodes.common import STARTUP_ERRORS, at_least, declare_parameters, one_line
from mango.oracle.world_state import read_trace
from mango.ros.world_state_msg import state_to_msg
from mango_ros.msg import WorldState


class TracePlayer(Node):
    def __init__(self) -> None:
        super().__init__("trace_player")
        p = declare_parameters(self, {
            "trace_file": "", "topic": "/world_state", "rate_scale": at_least(1.0, 0.0),
            "wait_for_subscribers": at_least(0, 0), "start_delay": at_least(0.0, 0.0),
            "loop": False, "shutdown_when_done": True})
        path = p["trace_file"]
        if not path:
            raise ValueError("parameter 'trace_file' is required")
        self._msgs = [state_to_msg(s) for s in read_trace(path)]
        self._pub = self.create_publisher(WorldState, p["topic"], len(self._msgs) or 1)
        self._scale = p["rate_scale"]
        self._want = p["wait_for_subscribers"]
        self._loop = p["loop"]
        self.shutdown_when_done = p["shutdown_when_done"]
        self._delay = p["start_delay"]
        self.get_logger().info(f"loaded {len(self._msgs)} states from {path}")

    def play(self) -> None:
        """Publish every state at its time (scaled); blocks until done."""
        while self._pub.get_subscription_count() < self._want and rclpy.ok():
            time.sleep(0.02)
        time.sleep(self._delay)
        while rclpy.ok():
            t0 = time.monotonic()
            first = _stamp(self._msgs[0]) if self._msgs else 0.0
            for msg in self._msgs:
                if self._scale > 0:
                    wait = (_stamp(msg) - first) / self._scale - (time.monotonic() - t0)
                    if wait > 0:
                        time.sleep(wait)
                self._pub.publish(msg)
            if not self._loop:
                break
        self.get_logger().info(f"played {len(self._msgs)} states")


def _stamp(msg: WorldState) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = TracePlayer()
        node.play()
        if not node.shutdown_when_done:
            rclpy.spin(node)
        else:
            time.sleep(0.5)  # let reliable delivery finish before the writer goes away
    except KeyboardInterrupt:
        pass
    except STARTUP_ERRORS as exc:
        sys.stderr.write(f"error: {one_line(exc)}\n")
        code = 1
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
