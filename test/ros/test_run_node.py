"""`run_node`: a stop requested while the node is still being built is a clean stop."""

from __future__ import annotations

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
