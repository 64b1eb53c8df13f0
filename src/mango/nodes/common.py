"""What every node's `main()` shares: init, spin, clean shutdown on Ctrl-C and SIGTERM."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence

import rclpy
from rclpy.executors import (
    Executor,
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
    """Create the node, spin it on a multi-threaded executor until shutdown.

    Bad parameters or files (raised while creating the node) end it with one clear line. Once
    it runs, a callback that raises is a bug, not a reason to stop judging or controlling: it
    is logged with its traceback (each distinct one once) and the node spins on.
    """
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = factory()
        executor = (MultiThreadedExecutor(num_threads=threads) if threads > 1
                    else SingleThreadedExecutor())
        executor.add_node(node)
        _spin(node, executor)
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


def _spin(node: Node, executor: Executor) -> None:
    said: set[str] = set()
    while node.context.ok():
        try:
            executor.spin()
            return
        except (KeyboardInterrupt, ExternalShutdownException):
            raise
        except Exception:  # a callback's bug: say it, keep the node up
            text = traceback.format_exc()
            if text not in said:
                said.add(text)
                node.get_logger().error(f"a callback raised (the node carries on):\n{text}")
