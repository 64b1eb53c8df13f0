"""Record topics to a rosbag2 MCAP bag (see `mango.bags`), as CDR bytes straight from DDS.

Parameters: `output` (bag directory; `{stamp}` becomes the start time), `topics` (names;
empty = every topic seen), `discovery_period` (s). Topics appearing later are picked up;
each subscription copies the publishers' reliability and durability so latched topics
(verdict history) are recorded too. A topic whose type cannot be described here (its package
is not installed) is skipped with a warning naming it; the rest are recorded.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)

from mango.bags import BagWriter
from mango.bags.types import BagTypes, default_types
from mango.errors import InputError
from mango.nodes.common import declare_parameters, positive, run_node
from mango.ros.introspection import message_class

# Graph-internal topics nobody replays.
_SKIP = {"/rosout", "/parameter_events"}


class BagRecorder(Node):
    def __init__(self, output: str | None = None, topics: list[str] | None = None,
                 types: BagTypes | None = None, **node_options: Any) -> None:
        super().__init__("bag_recorder", **node_options)
        p = declare_parameters(self, {"output": output or "", "topics": topics or [""],
                                      "discovery_period": positive(0.25, 60.0)})
        out = p["output"]
        if not out:
            raise ValueError("parameter 'output' (bag directory) is required")
        # absolute, so the line logged below says exactly where the bag is
        out = str(Path(out.replace("{stamp}", time.strftime("%Y%m%d_%H%M%S"))).resolve())
        self._wanted = {t for t in p["topics"] if t}
        self.writer = BagWriter(Path(out), types=types or default_types())
        self._subs: dict[str, object] = {}
        self._unrecordable: set[str] = set()
        self._discover()
        # housekeeping on the steady clock: with use_sim_time a stopped (or not yet started)
        # simulation would otherwise stop discovery and flushing
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(p["discovery_period"], self._discover, clock=steady)
        self.create_timer(0.2, self.writer.flush, clock=steady)
        self.get_logger().info(
            f"recording {sorted(self._wanted) or 'all topics'} to {out}")

    def _discover(self) -> None:
        for topic, types in self.get_topic_names_and_types():
            if topic in self._subs or topic in self._unrecordable or topic in _SKIP or not types:
                continue
            if self._wanted and topic not in self._wanted:
                continue
            try:
                self._subscribe(topic, types[0])
            except InputError as exc:
                # a type this machine cannot describe (its package is not installed here):
                # said once, naming the topic, and every other topic goes on being recorded
                self._unrecordable.add(topic)
                self.get_logger().warning(f"not recording {topic} [{types[0]}]: {exc}")

    def _subscribe(self, topic: str, msgtype: str) -> None:
        infos = self.get_publishers_info_by_topic(topic)
        if not infos:
            return
        reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
        latched = all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
        qos = QoSProfile(
            history=HistoryPolicy.KEEP_LAST,
            depth=1000,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )
        offered = [{
            "depth": i.qos_profile.depth,
            "reliability": i.qos_profile.reliability.name.lower(),
            "durability": i.qos_profile.durability.name.lower(),
        } for i in infos]
        cls = message_class(msgtype)  # before the bag declares the topic: both must know it
        self.writer.add_topic(topic, msgtype, offered)
        self._subs[topic] = self.create_subscription(
            cls, topic, lambda data, t=topic: self._on_message(t, data),
            qos, raw=True)
        self.get_logger().info(f"recording {topic} [{msgtype}]")

    def _on_message(self, topic: str, data: bytes) -> None:
        self.writer.write(topic, data, self.get_clock().now().nanoseconds)

    def destroy_node(self) -> None:
        writer = getattr(self, "writer", None)  # none when the constructor refused its output
        try:
            if writer is not None:
                writer.close()
        finally:  # a full disk fails the close; the node still goes
            super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_node(BagRecorder, args, threads=1)


if __name__ == "__main__":
    main()
