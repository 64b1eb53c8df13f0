"""A stack brought up as processes plus one client node in this process."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import rclpy
from rclpy.exceptions import InvalidHandle
from rclpy.executors import (
    ExternalShutdownException,
    MultiThreadedExecutor,
    SingleThreadedExecutor,
)
from rclpy.node import Node

from mango.bringup import Bringup, NodeDied
from mango.nodes.common import latched_qos, wait_until
from mango.stack import Stack
from mango_ros.msg import StepVerdict, TaskVerdict


class VerdictFollower:
    """Collects the oracle node's step and task verdicts; calls `on_step` for each."""

    def __init__(self, node: Node, namespace: str = "",
                 on_step: Callable[[StepVerdict], None] | None = None) -> None:
        self.steps: list[StepVerdict] = []
        self.tasks: list[TaskVerdict] = []
        self._on_step = on_step
        self._lock = threading.Lock()
        ns = namespace.rstrip("/")
        node.create_subscription(StepVerdict, f"{ns}/oracle/step_verdicts", self._step,
                                 latched_qos(1000))
        node.create_subscription(TaskVerdict, f"{ns}/oracle/task_verdict", self._task,
                                 latched_qos(10))

    def _step(self, msg: StepVerdict) -> None:
        with self._lock:
            self.steps.append(msg)
        if self._on_step is not None:
            self._on_step(msg)

    def _task(self, msg: TaskVerdict) -> None:
        with self._lock:
            self.tasks.append(msg)

    def task_after(self, count: int) -> TaskVerdict | None:
        """The first task verdict received after `count` of them had been seen."""
        with self._lock:
            return self.tasks[count] if len(self.tasks) > count else None


@contextmanager
def spun_node(name: str, namespace: str = "", threads: int = 2) -> Iterator[Node]:
    """A node on its own ROS context, spun by an executor in a background thread; everything
    is shut down on exit."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(f"{name}_{uuid.uuid4().hex[:6]}", namespace=namespace or None,
                             context=context)
    executor = (MultiThreadedExecutor(num_threads=threads, context=context) if threads > 1
                else SingleThreadedExecutor(context=context))
    executor.add_node(node)
    stopping = threading.Event()

    def spin() -> None:
        try:
            executor.spin()
        except (InvalidHandle, ExternalShutdownException):
            if not stopping.is_set():  # a handle lost while running is a real fault
                raise

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield node
    finally:
        # The spin thread must be out of its wait set before the node's handles go: a node
        # destroyed under a waiting executor raised InvalidHandle in the thread (CI, loaded).
        stopping.set()
        executor.shutdown(timeout_sec=10.0)
        thread.join(timeout=10.0)
        node.destroy_node()
        rclpy.try_shutdown(context=context)


RESEND_AFTER = 2.0  # s without a reply before a client that was never answered asks again


def request_reply(client: Any, request: Any, timeout: float, what: str,
                  check: Callable[[], None] = lambda: None, resend: bool = True) -> Any:
    """The reply to `request` on a ready `client`, within `timeout` s.

    Fast DDS drops a service's reply when the server has not matched the client's reply
    reader within 100 ms of taking the request (ros2/rmw_fastrtps#390, #467), which a loaded
    machine exceeds for a client created moments before. While `resend` (the client was never
    answered; the caller's requests are safe to repeat) the request goes again every
    `RESEND_AFTER` s; the first reply to any copy is the answer, the other copies are
    forgotten.
    """
    deadline = time.monotonic() + timeout
    futures = [client.call_async(request)]
    try:
        while True:
            left = deadline - time.monotonic()
            step = min(left, RESEND_AFTER) if resend else left
            try:
                wait_until(lambda: any(f.done() for f in futures), max(0.0, step), what, check)
            except TimeoutError:
                if left <= step:
                    raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")\
                        from None
                futures.append(client.call_async(request))
                continue
            return next(f for f in futures if f.done()).result()
    finally:
        for f in futures:
            if not f.done():
                client.remove_pending_request(f)


class StackSession:
    """Bring a stack up, spin a client node, stop everything on exit.

    Every wait also watches the stack: a required node that dies raises `NodeDied` at once
    instead of a timeout later.
    """

    def __init__(self, stack: Stack, output: Callable[[str, str], None] | None = None) -> None:
        self.bringup = Bringup(stack, output=output)
        self.node: Node | None = None
        self._exit = ExitStack()

    def __enter__(self) -> StackSession:
        self._exit.callback(self.bringup.stop)  # last: the client node goes first
        self.bringup.start()
        self.node = self._exit.enter_context(spun_node("mango_client"))
        return self

    def __exit__(self, *exc: object) -> None:
        self._exit.close()

    def wait(self, pred: Callable[[], Any], timeout: float, what: str) -> Any:
        return wait_until(pred, timeout, what, self.bringup.check)

    def call(self, srv_type: type, name: str, request: Any, timeout: float = 30.0,
             repeatable: bool = False) -> Any:
        """Call a service once it is available; returns the response. A `repeatable` request
        (the same effect when done twice) is resent while no reply came (`request_reply`)."""
        assert self.node is not None
        client = self.node.create_client(srv_type, name)
        try:
            self.wait(lambda: client.service_is_ready(), timeout, f"service {name}")
            return request_reply(client, request, timeout, f"reply from {name}",
                                 self.bringup.check, resend=repeatable)
        finally:
            self.node.destroy_client(client)


__all__ = ["NodeDied", "StackSession", "VerdictFollower", "request_reply", "spun_node",
           "wait_until"]
