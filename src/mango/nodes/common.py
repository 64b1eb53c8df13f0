"""What every node's `main()` shares: init, spin, clean shutdown on Ctrl-C and SIGTERM."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import rclpy
from rclpy.executors import (
    ExternalShutdownException,
    MultiThreadedExecutor,
    SingleThreadedExecutor,
)
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from mango.errors import InputError


def latched_qos(depth: int = 100) -> QoSProfile:
    """Reliable + transient-local: late joiners and bag recorders get the history."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None,
             threads: int = 2) -> None:
    """Create the node, spin it on a multi-threaded executor until shutdown."""
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = factory()
        executor = (MultiThreadedExecutor(num_threads=threads) if threads > 1
                    else SingleThreadedExecutor())
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (InputError, ValueError) as exc:
        # Bad parameters or files: one clear line, no traceback, non-zero exit.
        sys.stderr.write(f"error: {exc}\n")
        code = 1
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.try_shutdown()
    if code:
        sys.exit(code)
