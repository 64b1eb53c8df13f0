"""A stand-in `ExecuteMotion` server in its own process (run by path): it accepts every goal
and works on it for a minute, so a test can kill it with the goal in flight."""

from __future__ import annotations

import sys
import time

import rclpy
from rclpy.action import ActionServer
from rclpy.executors import MultiThreadedExecutor

from mango_ros.action import ExecuteMotion


def main() -> None:
    rclpy.init()
    node = rclpy.create_node("action_stand_in")

    def execute(gh: object) -> ExecuteMotion.Result:
        time.sleep(60.0)
        gh.succeed()  # type: ignore[attr-defined]
        return ExecuteMotion.Result()

    ActionServer(node, ExecuteMotion, sys.argv[1], execute_callback=execute)
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    executor.spin()


if __name__ == "__main__":
    main()
