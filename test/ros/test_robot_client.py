"""`mango.client.Robot` against stand-in action servers speaking the real rclpy protocol:
every goal ends in a terminal state with a reason — refused, raised in the server, a server
that never came or died mid-goal, a caller's timeout — and result codes map by name."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from support.ros import wait_for

from mango.client import ActionTask, Robot, TaskResult
from mango.client.session import spun_node
from mango.control import MotionCommand
from mango_ros.action import ExecuteChunk, ExecuteMotion, RunPolicy

STAND_IN = Path(__file__).resolve().parent.parent / "support" / "action_stand_in.py"
WAIT = [MotionCommand("wait", duration=0.1)]


class Server:
    """An in-process action server whose execute callback the test sets."""

    def __init__(self, node: Node, action: type, name: str) -> None:
        self.execute: Callable[[object], object] = lambda gh: None
        self.accept = True
        ActionServer(node, action, name, execute_callback=lambda gh: self.execute(gh),
                     goal_callback=lambda _g: (GoalResponse.ACCEPT if self.accept
                                               else GoalResponse.REJECT),
                     cancel_callback=lambda _g: CancelResponse.ACCEPT,
                     callback_group=ReentrantCallbackGroup())


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, dict[str, Server]]]:
    ns = f"/t{uuid.uuid4().hex[:8]}"
    with spun_node("servers", namespace=ns, threads=4) as node:
        yield ns, {"motion": Server(node, ExecuteMotion, "execute_motion"),
                   "chunk": Server(node, ExecuteChunk, "execute_chunk"),
                   "policy": Server(node, RunPolicy, "run_policy")}


@pytest.fixture
def robot(servers: tuple[str, dict[str, Server]]) -> Iterator[Robot]:
    with Robot.connect(servers[0], server_timeout=30.0) as r:
        r.wait_for_servers("execute_chunk", "execute_motion", "run_policy", timeout=30)
        yield r


def _ends_with(action: type, status: int, message: str, gh_end: str = "succeed"):
    def execute(gh):
        getattr(gh, gh_end)()
        return action.Result(status=status, message=message)
    return execute


@pytest.mark.parametrize("action,key", [(ExecuteMotion, "motion"), (RunPolicy, "policy")])
def test_every_result_status_maps_by_its_name(robot: Robot, servers, action, key) -> None:
    server = servers[1][key]
    for name in [n for n in dir(action.Result) if n.startswith("STATUS_")]:
        server.execute = _ends_with(action, getattr(action.Result, name), f"ended {name}")
        if action is RunPolicy:
            out = robot.run_policy("go", timeout=10)
        else:
            out = robot.execute_motion(WAIT, timeout=10)
        assert out.result is TaskResult[name.removeprefix("STATUS_")], out
        assert out.message == f"ended {name}"
        assert out.response.status == getattr(action.Result, name)


def test_a_refused_goal_is_rejected_with_a_reason(robot: Robot, servers) -> None:
    servers[1]["motion"].accept = False
    try:
        out = robot.execute_motion(WAIT, timeout=10)
    finally:
        servers[1]["motion"].accept = True
    assert out.result is TaskResult.REJECTED
    assert "refused" in out.message and "execute_motion" in out.message


def test_an_exception_in_the_server_is_aborted_not_succeeded(robot: Robot, servers) -> None:
    def raises(gh):
        raise RuntimeError("planning overflowed")
    servers[1]["motion"].execute = raises
    out = robot.execute_motion(WAIT, timeout=10)
    # rclpy aborts the goal with a default result whose status field reads 0 (= succeeded)
    assert out.result is TaskResult.ABORTED, out
    assert not out.succeeded
    assert "without a result" in out.message


def test_a_timed_out_blocking_call_cancels_its_goal(robot: Robot, servers) -> None:
    def slow(gh):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not gh.is_cancel_requested:
            time.sleep(0.01)
        gh.canceled()
        return ExecuteMotion.Result(status=ExecuteMotion.Result.STATUS_CANCELLED,
                                    message="cancelled at a command boundary")
    servers[1]["motion"].execute = slow
    t0 = time.monotonic()
    out = robot.execute_motion(WAIT, timeout=0.5)
    # the cancel at 0.5 s ended it, not the server's own 20 s (which ends cancelled too):
    # the bound separates the two with room for a loaded machine
    assert time.monotonic() - t0 < 15
    assert out.result is TaskResult.CANCELLED
    assert "timed out after 0.5 s" in out.message and "cancelled at a command" in out.message


def test_feedback_reaches_the_caller_and_cancel_stops_a_running_goal(robot: Robot,
                                                                     servers) -> None:
    def streams(gh):
        k = 0
        while not gh.is_cancel_requested:
            k += 1
            gh.publish_feedback(ExecuteChunk.Feedback(point_index=k))
            time.sleep(0.02)
        gh.canceled()
        return ExecuteChunk.Result(status=ExecuteChunk.Result.STATUS_CANCELLED, message="held",
                                   points_executed=k)
    servers[1]["chunk"].execute = streams
    seen: list[int] = []
    task = robot.start_chunk([[0.0] * 8] * 3, feedback=lambda f: seen.append(f.point_index))
    wait_for(lambda: len(seen) >= 3, 10, "feedback")
    assert not task.done() and task.feedback.point_index >= 3
    assert robot.cancel() == 1
    out = task.result(10)
    assert out.result is TaskResult.CANCELLED and out.response.points_executed >= 3
    assert robot.cancel() == 0  # nothing left in flight


def test_no_server_ends_the_goal_after_the_server_timeout() -> None:
    with Robot.connect(f"/t{uuid.uuid4().hex[:8]}", server_timeout=0.5) as robot:
        out = robot.execute_motion(WAIT, timeout=10)
    assert out.result is TaskResult.ABORTED
    assert "no action server answered within 0.5 s" in out.message


def _accepted_motion(robot: Robot) -> ActionTask:
    """A goal the fresh stand-in accepted. Its first answers can be lost while it still
    discovers this client (a DDS race rclpy cannot see): such a goal ends aborted, saying so,
    after `server_timeout`, and another is sent."""
    robot.server_timeout = 5.0
    for _ in range(6):
        task = robot.start_motion(WAIT)
        try:
            wait_for(lambda t=task: t.accepted or t.done(), 10, "the stand-in's answer")
        except AssertionError:
            continue
        if task.accepted:
            return task
        assert "no answer" in task.result().message, task.result()
    raise AssertionError("the stand-in never accepted a goal")


def test_a_server_killed_mid_goal_ends_the_goal_within_seconds(tmp_path: Path) -> None:
    ns = f"/t{uuid.uuid4().hex[:8]}"
    log = (tmp_path / "stand_in.log").open("w")
    proc = subprocess.Popen([sys.executable, str(STAND_IN), f"{ns}/execute_motion"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        with Robot.connect(ns, server_timeout=60.0) as robot:
            robot.wait_for_servers("execute_motion", timeout=60)
            task = _accepted_motion(robot)
            proc.send_signal(signal.SIGKILL)
            t_kill = time.monotonic()
            out = task.result(60)
            waited = time.monotonic() - t_kill
    finally:
        proc.kill()
        proc.wait()
    assert out.result is TaskResult.ABORTED
    assert "went away" in out.message
    # the loopback DDS profile's 4 s lease, plus the robot's 2 s grace and scheduling
    assert waited < 10.0


def test_the_servers_mango_makes_end_a_raising_goal_as_failed_with_the_reason() -> None:
    """`mango.nodes.actions.action_server`: what an execute callback raises ends the goal as
    failed, saying what, instead of rclpy's default result (status 0, no message)."""
    from mango.nodes.actions import action_server

    ns = f"/t{uuid.uuid4().hex[:8]}"

    def boom(_gh: object) -> ExecuteMotion.Result:
        raise OverflowError("cannot convert float infinity to integer")

    with spun_node("raiser", namespace=ns) as node:
        action_server(node, ExecuteMotion, "execute_motion", execute_callback=boom)
        with Robot.connect(ns, server_timeout=30.0) as robot:
            out = robot.execute_motion(WAIT, timeout=10)
    assert out.result is TaskResult.FAILED
    assert out.message == ("internal error: OverflowError: cannot convert float infinity to "
                           "integer")


def test_a_goal_request_never_answered_ends_aborted_with_the_reason() -> None:
    """A server that never answers a goal request (stuck, or its answer lost): the goal ends
    after `server_timeout`, saying so, instead of waiting for ever."""
    ns = f"/t{uuid.uuid4().hex[:8]}"
    release = threading.Event()

    def stuck(_goal: object) -> GoalResponse:
        release.wait(30)
        return GoalResponse.REJECT

    with spun_node("stuck", namespace=ns, threads=2) as node:
        ActionServer(node, ExecuteMotion, "execute_motion", execute_callback=lambda gh: None,
                     goal_callback=stuck, callback_group=ReentrantCallbackGroup())
        with Robot.connect(ns, server_timeout=1.5) as robot:
            robot.wait_for_servers("execute_motion", timeout=30)
            t0 = time.monotonic()
            out = robot.execute_motion(WAIT, timeout=20)
            waited = time.monotonic() - t0
        release.set()
    assert out.result is TaskResult.ABORTED
    assert "got no answer within 1.5 s" in out.message
    assert waited < 10
