"""Robot's service calls: discovery gets the server's patience, and an episode's oracle services
are discovered while it runs (CI once waited 10 s for `oracle_node/finish`, a client made at
the episode's end)."""

from __future__ import annotations

from typing import Any

import pytest
from std_srvs.srv import Trigger

from mango.client.robot import Robot
from mango_ros.srv import LoadOracle

pytestmark = pytest.mark.parallel  # no ROS: a node that records what it was asked for


class Done:
    def __init__(self, reply: Any) -> None:
        self._reply = reply

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        return self._reply


class Client:
    """A service client that its node's discovery finds after `polls` readiness checks."""

    def __init__(self, srv: type, name: str, polls: int) -> None:
        self.srv, self.name, self.polls, self.asked = srv, name, polls, 0

    def service_is_ready(self) -> bool:
        self.asked += 1
        return self.asked > self.polls

    def call_async(self, _request: Any) -> Done:
        reply = self.srv.Response()
        reply.success = True
        return Done(reply)

    def remove_pending_request(self, _future: Any) -> None:
        pass


class Node:
    def __init__(self, polls: int = 0) -> None:
        self.clients: dict[str, Client] = {}
        self.polls = polls

    def create_subscription(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def create_client(self, srv: type, name: str) -> Client:
        assert name not in self.clients, f"a second client of {name}"
        self.clients[name] = Client(srv, name, self.polls)
        return self.clients[name]


def test_the_episodes_oracle_services_are_made_when_the_oracle_is_loaded() -> None:
    node = Node()
    robot = Robot(node, "/r")  # type: ignore[arg-type]
    assert robot.load_oracle({"instruction": "x"}).success
    assert {n: c.srv for n, c in node.clients.items()} == {
        "/r/oracle_node/load_oracle": LoadOracle, "/r/oracle_node/reset": Trigger,
        "/r/oracle_node/finish": Trigger}
    assert robot.finish_oracle().success and robot.reset_oracle().success  # the same clients


def test_a_service_found_later_than_the_reply_timeout_is_still_called() -> None:
    # discovered after 10 checks, 0.2 s at Robot's poll, against a reply timeout of 0.01 s
    node = Node(polls=10)
    robot = Robot(node, "/r", server_timeout=60.0)  # type: ignore[arg-type]
    assert robot.finish_oracle(timeout=0.01).success
    assert node.clients["/r/oracle_node/finish"].asked == 11
