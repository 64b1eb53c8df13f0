"""Fixtures for tests that run real rclpy: an in-process node spun in a thread, and node
subprocesses that are always stopped."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from rclpy.node import Node
from support.ros import Processes

from mango.client.session import spun_node


@pytest.fixture
def ros_node() -> Iterator[Node]:
    """A node in this process, spinning in a background thread."""
    with spun_node("test", threads=1) as node:
        yield node


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
