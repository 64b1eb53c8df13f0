"""Action clients and servers as every mango node and client makes them.

- Service queues deep enough for a burst of goals: rclpy's default keeps the last 10
  requests, so a preemption storm (or a campaign sending goals fast) overflows it, and the
  dropped goal, result and cancel requests are never answered.
- A finished goal's result is kept a minute for a client that asks late (rclpy keeps 10 s).
- `ActionClient` may be created while its node is being spun: rclpy (Kilted's wheel
  included) adds the client to the node's wait set before it creates the lock the executor
  takes in `get_num_entities`; an executor spinning in another thread can get there first,
  and its spin thread dies with an AttributeError, leaving every future of that node
  unanswered (ros2/rclpy#1589, fixed upstream after this release).
"""

from __future__ import annotations

import threading
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

from action_msgs.srv import CancelGoal
from rclpy.action import ActionClient as _ActionClient
from rclpy.action import ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile

from mango.nodes.common import holds_within, service_qos

RESULT_KEEP_S = 60  # how long a server keeps a finished goal's result


def action_service_qos() -> dict[str, QoSProfile]:
    """QoS for an action's goal, result and cancel services (server and client alike)."""
    deep = service_qos()
    return {"goal_service_qos_profile": deep, "result_service_qos_profile": deep,
            "cancel_service_qos_profile": deep}


class ActionClient(_ActionClient):
    """`rclpy.action.ActionClient` with its lock created before the executor can see it, deep
    service queues, and a first contact made before the first goal (`make_contact`)."""

    def __init__(self, node: Node, action_type: type, action_name: str, **kwargs: Any) -> None:
        self._lock = threading.Lock()
        super().__init__(node, action_type, action_name, **{**action_service_qos(), **kwargs})
        self._contact_lock = threading.Lock()
        self._contacted = False
        self._contact_client: Any = None

    def wait_for_server(self, timeout_sec: float | None = None) -> bool:
        """Ready, and (the first time) answered once: see `make_contact`."""
        deadline = None if timeout_sec is None else time.monotonic() + timeout_sec
        if not super().wait_for_server(timeout_sec=timeout_sec):
            return False
        return self.make_contact(None if deadline is None
                                 else max(0.1, deadline - time.monotonic()))

    def make_contact(self, timeout: float | None,
                     wait: Callable[[Callable[[], bool], float], bool] | None = None) -> bool:
        """Whether the server has answered this client once, asking its cancel service about a
        goal id no one uses until it does (or `timeout` s pass). DDS can drop a new server's
        first answers to a client it is still discovering after the client sees it ready
        (`mango.client.session.request_reply`); lost, the answer to a goal request would
        leave a goal running that this client never hears of. `wait(pred, seconds)` waits in
        the caller's way (default: polling)."""
        if self._contacted:
            return True
        wait = wait or holds_within
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._contact_lock:
            if self._contact_client is None:
                self._contact_client = self._node.create_client(
                    CancelGoal, f"{self._action_name}/_action/cancel_goal",
                    callback_group=ReentrantCallbackGroup())  # answered while a goal runs
            client = self._contact_client
        request = CancelGoal.Request()
        request.goal_info.goal_id.uuid = list(uuid.uuid4().bytes)  # non-zero: not "cancel all"
        while not self._contacted:
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or not self._node.context.ok():
                return False
            step = 1.0 if left is None else max(0.05, min(1.0, left))
            if not client.service_is_ready():
                wait(client.service_is_ready, step)
                continue
            future = client.call_async(request)
            if wait(future.done, step):
                self._contacted = True
            else:
                client.remove_pending_request(future)
        return True

    def destroy(self) -> None:
        if self._contact_client is not None:
            self._node.destroy_client(self._contact_client)
        super().destroy()


def action_server(node: Node, action: type, name: str, execute_callback: Callable[[Any], Any],
                  **kwargs: Any) -> ActionServer:
    """`rclpy.action.ActionServer` with deep service queues, results kept a minute, and an
    execute callback that never leaves a goal without a reason: whatever it raises ends the
    goal as failed, saying what (rclpy would abort it with a default result, whose status
    field reads 0 — succeeded — and whose message is empty)."""

    def execute(goal_handle: Any) -> Any:
        try:
            return execute_callback(goal_handle)
        except Exception as exc:
            node.get_logger().error(f"{name}: the goal failed on an internal error:\n"
                                    f"{traceback.format_exc()}")
            result = action.Result()
            result.status = action.Result.STATUS_FAILED
            result.message = f"internal error: {type(exc).__name__}: {exc}"[:500]
            if goal_handle.is_active:
                goal_handle.abort()
            return result

    return ActionServer(node, action, name, execute_callback=execute,
                        **{**action_service_qos(), "result_timeout": RESULT_KEEP_S, **kwargs})


SERVER_LOST_AFTER = 2.0  # s the execute_chunk server may vanish before a chunk counts as lost


class ChunkServerWatch:
    """Why a wait on the execute_chunk server can never end: this node shutting down, or the
    server gone from the graph past `SERVER_LOST_AFTER` (its process ended: its DDS lease ran
    out). One rule for every ExecuteChunk client's wait."""

    def __init__(self, node: Node, client: Any) -> None:
        self.node, self.client = node, client
        self._lost_since: float | None = None

    def problem(self, now: float) -> str | None:
        if not self.node.context.ok():
            return f"the {self.node.get_name()} is shutting down"
        if self.client.server_is_ready():
            self._lost_since = None
        elif self._lost_since is None:
            self._lost_since = now
        elif now - self._lost_since > SERVER_LOST_AFTER:
            return "the execute_chunk server went away (control node stopped?)"
        return None


def wait_for_chunk(node: Node, client: Any, future: Any, gh: Any, inflight: Any = None,
                   timeout: float = 60.0, poll: float = 0.002) -> str | None:
    """Wait for an ExecuteChunk future (goal acceptance or result); None once it is done,
    else why it never will be. A cancel of the caller's goal `gh` cancels the chunk in flight
    at once (the controller then holds position); a controller that went away (its process
    gone: its DDS lease ends) or this node shutting down ends the wait at once."""
    deadline = time.monotonic() + timeout
    cancelled = False
    watch = ChunkServerWatch(node, client)
    while not future.done():
        now = time.monotonic()
        if gh.is_cancel_requested and inflight is not None and not cancelled:
            inflight.cancel_goal_async()
            cancelled = True
        why = watch.problem(now)
        if why is not None:
            return why
        if now > deadline:
            return f"no answer within {timeout:.0f} s"
        time.sleep(poll)
    return None
