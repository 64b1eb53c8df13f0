"""The outcome of a goal sent through `mango.client.Robot`, and the goal while it runs.

An outcome is measured, never assumed: a goal counts as succeeded only when the server says
so in both the action status and the result's own status field (rclpy aborts a goal whose
execute callback raised with a default result, whose status field reads 0 = succeeded), and a
server that disappears while a goal is in flight ends it as `ABORTED` with the reason instead
of leaving the caller waiting.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from action_msgs.msg import GoalStatus

from mango.nodes.actions import ActionClient

POLL = 0.02  # s between checks of a wait's deadline, watch hook and server liveness


class TaskResult(enum.Enum):
    """How a goal ended (the names of the actions' `STATUS_*` constants, plus `ABORTED`)."""

    SUCCEEDED = "succeeded"
    CANCELLED = "cancelled"
    PREEMPTED = "preempted"
    REJECTED = "rejected"
    FAILED = "failed"
    MAX_STEPS = "max_steps"
    ABORTED = "aborted"  # no usable result: the server aborted without one, or went away


@dataclass(frozen=True)
class Outcome:
    """A goal's terminal state, its reason, and the action's result message (None when the
    server gave none)."""

    result: TaskResult
    message: str
    response: Any | None = None

    @property
    def succeeded(self) -> bool:
        return self.result is TaskResult.SUCCEEDED


def _result_of_status(action: type) -> dict[int, TaskResult]:
    """The action's result `STATUS_*` constants mapped onto `TaskResult` by name."""
    res = action.Result
    return {getattr(res, n): TaskResult[n.removeprefix("STATUS_")]
            for n in dir(res) if n.startswith("STATUS_")}


class Waiter(Protocol):
    """What a task needs of the robot that sent it (`mango.client.Robot`)."""

    server_timeout: float
    server_lost_after: float

    def check(self) -> None: ...

    def wait_quietly(self, pred: Callable[[], Any], timeout: float) -> bool: ...


class ActionTask:
    """One goal sent through a `Robot`: poll it, read its feedback, cancel it or wait for it.

    The outcome is decided in the executor's thread as the server's answers arrive;
    `result()` waits for it, watching the server so a dead one cannot leave it waiting.
    """

    def __init__(self, robot: Waiter, client: ActionClient, action: type, goal: Any, what: str,
                 on_feedback: Callable[[Any], None] | None) -> None:
        self.what = what
        self._robot = robot
        self._client = client
        self._statuses = _result_of_status(action)
        self._on_feedback = on_feedback
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._outcome: Outcome | None = None
        self._handle: Any = None
        self._cancel_wanted = False
        self.feedback: Any = None  # the latest feedback message
        self.feedback_count = 0
        self._sent_at = time.monotonic()
        if not robot.wait_quietly(client.server_is_ready, robot.server_timeout):
            self._finish(Outcome(TaskResult.ABORTED, f"{what}: no action server answered "
                                 f"within {robot.server_timeout:g} s"))
            return
        self._sent_at = time.monotonic()
        sent = client.send_goal_async(goal, feedback_callback=self._feedback)
        sent.add_done_callback(self._accepted)

    # ------------------------------------------------------------------ executor side

    def _feedback(self, msg: Any) -> None:
        self.feedback = msg.feedback
        self.feedback_count += 1
        if self._on_feedback is not None:
            self._on_feedback(msg.feedback)

    def _accepted(self, future: Any) -> None:
        handle = future.result() if future.exception() is None else None
        if handle is None or not handle.accepted:
            why = future.exception() or "the server refused the goal"
            self._finish(Outcome(TaskResult.REJECTED, f"{self.what}: {why}"))
            return
        with self._lock:
            self._handle = handle
            cancel = self._cancel_wanted
        handle.get_result_async().add_done_callback(self._resulted)
        if cancel:
            handle.cancel_goal_async()

    def _resulted(self, future: Any) -> None:
        if future.exception() is not None:
            self._finish(Outcome(TaskResult.ABORTED, f"{self.what}: {future.exception()}"))
            return
        wrapped = future.result()
        res = wrapped.result
        result = self._statuses.get(res.status)
        message = res.message
        if result is None:
            result, message = TaskResult.ABORTED, f"unknown result status {res.status}: {message}"
        elif wrapped.status == GoalStatus.STATUS_ABORTED and result is TaskResult.SUCCEEDED:
            # rclpy's answer to an exception in the server: a default result, status 0.
            result = TaskResult.ABORTED
            message = message or "the server aborted the goal without a result"
        elif wrapped.status == GoalStatus.STATUS_CANCELED and result is TaskResult.SUCCEEDED:
            result = TaskResult.CANCELLED
        self._finish(Outcome(result, message, res))

    def _finish(self, outcome: Outcome) -> None:
        with self._lock:
            if self._outcome is None:
                self._outcome = outcome
        self._done.set()

    # ------------------------------------------------------------------ caller side

    def done(self) -> bool:
        """Whether the goal reached a terminal state (nav2's `isTaskComplete`)."""
        return self._done.is_set()

    @property
    def accepted(self) -> bool:
        return self._handle is not None

    def cancel(self) -> None:
        """Ask the server to cancel the goal (now, or as soon as it is accepted)."""
        with self._lock:
            handle = self._handle
            self._cancel_wanted = True
        if handle is not None and not self.done():
            handle.cancel_goal_async()

    def result(self, timeout: float | None = None) -> Outcome:
        """Wait for the outcome; `TimeoutError` after `timeout` s (the goal keeps running)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        lost_since: float | None = None
        while not self._done.wait(POLL):
            self._robot.check()
            now = time.monotonic()
            if self._client.server_is_ready():
                lost_since = None
            else:
                lost_since = lost_since if lost_since is not None else now
                if now - lost_since >= self._robot.server_lost_after:
                    self._finish(Outcome(TaskResult.ABORTED, f"{self.what}: the action server "
                                         f"went away with the goal in flight"))
            if not self.accepted and now - self._sent_at > self._robot.server_timeout:
                # DDS can lose a service's first answers while the server is still
                # discovering this client: say so, instead of waiting for ever
                self._finish(Outcome(TaskResult.ABORTED, f"{self.what}: the goal request got "
                                     f"no answer within {self._robot.server_timeout:g} s"))
            if deadline is not None and now > deadline and not self._done.is_set():
                raise TimeoutError(f"timed out after {timeout:g} s waiting for {self.what}")
        assert self._outcome is not None
        return self._outcome
