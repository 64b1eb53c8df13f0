"""mango's ActionClient can be created while an executor spins its node (ros2/rclpy#1589)."""

from __future__ import annotations

import uuid

import pytest
import rclpy
from rclpy.action import ActionClient as RclpyActionClient
from rclpy.node import Node

from mango.nodes.actions import ActionClient
from mango_ros.action import ExecuteChunk


class EagerNode(Node):
    """Looks at a waitable the moment it is added, as a spinning executor thread may."""

    def add_waitable(self, waitable) -> None:  # type: ignore[no-untyped-def]
        super().add_waitable(waitable)
        waitable.get_num_entities()


@pytest.fixture
def node():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    n = EagerNode(f"eager_{uuid.uuid4().hex[:8]}", context=ctx)
    yield n
    n.destroy_node()
    rclpy.shutdown(context=ctx)


def test_rclpy_client_is_seen_before_its_lock_exists(node: Node) -> None:
    # The upstream race, made certain: if this starts passing, the workaround can go.
    with pytest.raises(AttributeError, match="_lock"):
        RclpyActionClient(node, ExecuteChunk, "execute_chunk")


def test_our_client_can_be_seen_at_once(node: Node) -> None:
    client = ActionClient(node, ExecuteChunk, "execute_chunk")
    assert client.get_num_entities() is not None
    assert not client.server_is_ready()
    client.destroy()
