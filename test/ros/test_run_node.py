"""`run_node`: a stop requested while the node is still being built is a clean stop."""

from __future__ import annotations

import threading

import rclpy
from rclpy.node import Node

from mango.nodes.common import run_node


def test_a_stop_while_the_node_is_built_ends_quietly() -> None:
    """Ctrl-C between rclpy.init and the node's constructor (a bringup stopped while a slow
    node loads its scene): rclpy shuts the context down under the constructor, whose
    RCLError must not come out as a traceback (CI saw it in the README walk)."""

    def factory() -> Node:
        rclpy.shutdown()  # what rclpy's SIGINT handler does
        return Node("built_too_late")

    run_node(factory, [])  # returns: no exception, no exit code


def test_a_constructor_bug_still_raises() -> None:
    def factory() -> Node:
        raise RuntimeError("a real bug")

    try:
        run_node(factory, [])
    except RuntimeError as exc:
        assert "a real bug" in str(exc)
    else:
        raise AssertionError("a constructor's bug was swallowed")


class _StopsThenRaises(Node):
    """A timer callback that is running when the stop comes: the context is shut down under
    it and the rclpy call it makes next fails (what a bringup's SIGINT did to
    robot_state_publisher mid-publish)."""

    def __init__(self, then_stop: bool) -> None:
        super().__init__("stops_then_raises")
        self.calls = 0
        self.then_stop = then_stop
        self.create_timer(0.01, self._tick)

    def _tick(self) -> None:
        self.calls += 1
        if self.then_stop or self.calls > 1:
            rclpy.shutdown()
        raise RuntimeError("Unable to convert call argument '0' to Python object")


def test_an_error_raised_by_the_stop_itself_is_not_reported_as_a_bug(capfd) -> None:
    run_node(lambda: _StopsThenRaises(then_stop=True), [], threads=1)
    assert "a callback raised" not in capfd.readouterr().err


def test_a_callback_bug_while_running_is_still_reported(capfd) -> None:
    run_node(lambda: _StopsThenRaises(then_stop=False), [], threads=1)
    err = capfd.readouterr().err
    assert "a callback raised (the node carries on)" in err and "Unable to convert" in err


class _RaisesThenStops(Node):
    """The stop's shutdown is still under way when the invalid handle raises: the context
    says ok for a moment longer (CI: a bringup's Ctrl-C printed robot_state_publisher's
    take_message traceback as a callback's bug)."""

    def __init__(self) -> None:
        super().__init__("raises_then_stops")
        self.create_timer(0.01, self._tick)

    def _tick(self) -> None:
        threading.Timer(0.1, rclpy.shutdown).start()
        raise RuntimeError("Unable to convert call argument '0' to Python object")


def test_an_invalid_handle_just_before_the_context_stops_is_the_stop(capfd) -> None:
    run_node(_RaisesThenStops, [], threads=1)
    assert "a callback raised" not in capfd.readouterr().err
