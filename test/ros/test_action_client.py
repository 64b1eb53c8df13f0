"""mango's ActionClient can be created while an executor spins its node (ros2/rclpy#1589)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import rclpy
from rclpy.action import ActionClient as RclpyActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
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


def test_the_first_goal_waits_for_one_answer_from_the_server() -> None:
    """`make_contact` asks the server's cancel service until one answer arrives: a request
    whose answer does not come (DDS dropped it, or the server is slow to find this client) is
    asked again, and no goal is sent before the server has answered this client once."""
    import time

    from action_msgs.srv import CancelGoal

    from mango.client.session import spun_node

    name = f"/c{uuid.uuid4().hex[:8]}/execute_chunk"
    asked: list[float] = []

    def answer(request: CancelGoal.Request, response: CancelGoal.Response) -> Any:
        asked.append(time.monotonic())
        if len(asked) == 1:
            time.sleep(1.5)  # the first answer comes too late: it is forgotten
        return response

    with spun_node("server", threads=2) as server, spun_node("client", threads=2) as node:
        server.create_service(CancelGoal, f"{name}/_action/cancel_goal", answer,
                              callback_group=ReentrantCallbackGroup())
        client = ActionClient(node, ExecuteChunk, name)
        assert not client.server_is_ready()  # only the cancel service exists
        waits: list[float] = []

        def wait(pred, timeout: float) -> bool:  # type: ignore[no-untyped-def]
            waits.append(timeout)
            deadline = time.monotonic() + timeout
            while not pred() and time.monotonic() < deadline:
                time.sleep(0.01)
            return bool(pred())

        assert client.make_contact(20, wait)
        assert len(asked) == 2, asked  # asked again after a second without an answer
        assert waits  # in the caller's way of waiting
        assert client.make_contact(0.0)  # once answered, at once
        assert len(asked) == 2
        client.destroy()
    with spun_node("lonely", threads=2) as n:
        nobody = ActionClient(n, ExecuteChunk, f"/c{uuid.uuid4().hex[:8]}/nobody")
        start = time.monotonic()
        assert not nobody.make_contact(0.5)
        assert time.monotonic() - start < 10.0  # gave up after its 0.5 s (a hang guard)
        assert not nobody.wait_for_server(timeout_sec=0.3)
        nobody.destroy()
