"""Fixtures for tests that run real rclpy: an in-process node spun in a thread, and node
subprocesses that are always stopped."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from support.ros import Processes


@pytest.fixture
def ros_node() -> Iterator[Node]:
    """A node in this process, spinning in a background thread."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f"test_{uuid.uuid4().hex[:8]}", context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    try:
        yield node
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        thread.join(timeout=2.0)


@pytest.fixture
def namespace() -> str:
    """A fresh namespace so tests in one ROS domain do not hear each other."""
    return f"/t{uuid.uuid4().hex[:8]}"


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    procs = Processes(tmp_path)
    try:
        yield procs
    finally:
        procs.stop_all()
