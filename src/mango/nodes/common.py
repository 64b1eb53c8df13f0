"""What every node shares: checked parameters, QoS, and a `main()` that inits, spins and
shuts down cleanly on Ctrl-C and SIGTERM."""

from __future__ import annotations

import faulthandler
import math
import os
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import NameValidationException, ParameterException
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


def service_qos() -> QoSProfile:
    """A service's request queue (actions' goal, result and cancel services too): rclpy keeps
    the last 10 requests, so a burst of requests (a client resending, a campaign, a storm)
    overflows it, and the requests dropped are never answered."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


@dataclass(frozen=True)
class Param:
    """A node parameter: its default (which sets its type) and what its value must satisfy."""

    default: Any
    check: Callable[[Any], bool] | None = None
    must: str = ""  # what `check` demands, said when it fails


def rate_param(default: float, off_allowed: bool = False) -> Param:
    """A rate in Hz: 0.01 to 1000 (a timer's period must be representable), or 0 for off
    where the node allows it."""
    return Param(default, lambda v: (off_allowed and v == 0) or 0.01 <= v <= 1000,
                 ("0 (off) or " if off_allowed else "") + "between 0.01 and 1000 Hz")


def positive(default: float, upper: float = math.inf) -> Param:
    return Param(default, lambda v: 0 < v <= upper,
                 "positive" + (f" and at most {upper:g}" if upper < math.inf else ""))


def at_least(default: int | float, lower: int | float) -> Param:
    return Param(default, lambda v: v >= lower, f"at least {lower}")


def declare_parameters(node: Node, params: Mapping[str, Any]) -> dict[str, Any]:
    """Declare parameters and read them back checked: a value of the wrong type (`hold:=abc`),
    out of range (`marker_rate:=1e-300`) or not finite is one `InputError` naming the
    parameter. An integer is accepted where a number with a fraction is expected (`rate:=5`),
    which rclpy's strict typing would refuse."""
    out: dict[str, Any] = {}
    for name, spec in params.items():
        p = spec if isinstance(spec, Param) else Param(spec)
        node.declare_parameter(name, p.default, ParameterDescriptor(dynamic_typing=True))
        value = _typed(name, node.get_parameter(name).value, p.default)
        if p.check is not None and not p.check(value):
            raise InputError(f"parameter '{name}' must be {p.must}, not {value!r}")
        out[name] = value
    return out


def _typed(name: str, value: Any, default: Any) -> Any:
    def wrong(kind: str) -> InputError:
        return InputError(f"parameter '{name}': expected {kind}, got {value!r}")

    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int | float) or (
                isinstance(value, float) and not value.is_integer()):
            raise wrong("an integer")
        return int(value)
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            raise wrong("a finite number")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise wrong("a string")
        return value
    if isinstance(default, list | tuple):
        items = list(value) if isinstance(value, list | tuple) else None
        if items is None or (default and not all(isinstance(v, type(default[0]))
                                                   for v in items)):
            raise wrong(f"a list of {type(default[0]).__name__ if default else 'values'}")
        return items
    return value


# What a node's start-up raises on bad parameters, names or files.
STARTUP_ERRORS = (InputError, ValueError, ParameterException, NameValidationException)


def arrival(info: Mapping[str, Any]) -> float | None:
    """When a message reached this process (monotonic s), from the middleware's reception
    stamp in its `MessageInfo`; None when the middleware gives none. Not when its callback
    ran: a busy executor takes a state late, and a state taken late is not a fresh one (a goal
    was once planned from a stopped simulator's last state, taken 0.5 s after it came)."""
    received = int(info.get("received_timestamp") or 0)
    if received <= 0:
        return None
    age = time.time() - received * 1e-9  # the stamp is the system clock's
    return time.monotonic() - max(0.0, age)


def wait_until(pred: Callable[[], Any], timeout: float, what: str,
               check: Callable[[], None] = lambda: None, poll: float = 0.02) -> Any:
    """`pred()`'s first truthy value; `check` runs between tries (it may raise: a node died),
    `TimeoutError` names `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(poll)


def holds_within(pred: Callable[[], Any], timeout: float,
                 check: Callable[[], None] = lambda: None, poll: float = 0.02) -> bool:
    """Whether `pred()` came true within `timeout` s (`wait_until` without the error)."""
    try:
        wait_until(pred, timeout, "", check, poll)
    except TimeoutError:
        return False
    return True


def one_line(exc: BaseException) -> str:
    """An error as one line (rclpy's name errors point at the bad character below the name)."""
    text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return text or type(exc).__name__


def quiet_rclpy_deprecations() -> None:
    """rclpy's action server logs through its own deprecated `Logger.warn` (ros2/rclpy,
    rclpy/rclpy/action/server.py), so every "client gone away" warning came with a
    `DeprecationWarning` nobody here can act on where warnings are shown. The warning it logs
    still appears, under its logger's name."""
    warnings.filterwarnings("ignore", message="Deprecated in favor of", category=DeprecationWarning,
                            module=r"rclpy\.")


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> None:
    """A node started by `mango bringup` (which sets MANGO_PARENT_PID) gets SIGTERM, and so
    shuts down as on Ctrl-C, when that process dies, even by SIGKILL: a killed bringup (a
    timeout, an OOM kill) must not leave a stack running, eating the CPU and publishing on the
    same topics (Linux prctl(2) PR_SET_PDEATHSIG; elsewhere nothing changes)."""
    parent = os.environ.get("MANGO_PARENT_PID", "")
    if not parent.isdigit() or not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != int(parent):  # it died before the line above: nobody will signal us
        os.kill(os.getpid(), signal.SIGTERM)


def run_node(factory: Callable[[], Node], args: Sequence[str] | None = None,
             threads: int = 2) -> None:
    """Create the node, spin it on a multi-threaded executor until shutdown.

    Bad parameters or files (raised while creating the node) end it with one clear line. Once
    it runs, a callback that raises is a bug, not a reason to stop judging or controlling: it
    is logged with its traceback (each distinct one once) and the node spins on.
    """
    # `kill -USR1 <pid>` prints every thread's stack: what a stuck node is doing
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    die_with_parent()
    quiet_rclpy_deprecations()
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
    except STARTUP_ERRORS as exc:  # one clear line, no traceback, non-zero exit
        sys.stderr.write(f"error: {one_line(exc)}\n")
        code = 1
    except Exception:
        if node is not None or rclpy.ok():
            raise
        # Ctrl-C (or a bringup stopping) while the node was being built: rclpy shut its
        # context down under the constructor, which then fails; that is a clean stop

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
        except Exception as exc:  # a callback's bug: say it, keep the node up
            if stopping(node, exc):
                # a stop shut the context down under a running wait or callback (rclpy's
                # handles go invalid mid-call: pybind11 "Unable to convert call argument"),
                # which is the stop, not a bug
                return
            text = traceback.format_exc()
            if text not in said:
                said.add(text)
                node.get_logger().error(f"a callback raised (the node carries on):\n{text}")


INVALID_HANDLE = "Unable to convert call argument"  # pybind11, on a handle shut down mid-call
STOP_GRACE = 0.5  # s for a context being shut down to say so


def stopping(node: Node, exc: BaseException) -> bool:
    """Whether `exc` came from the node's context being shut down (a stop), not a bug. An
    invalid handle can surface a moment before `context.ok()` turns false (CI: a bringup's
    Ctrl-C printed robot_state_publisher's take_message traceback as a callback's bug), so
    for that error the context is watched for `STOP_GRACE` s; any other error is judged
    at once."""
    deadline = time.monotonic() + (STOP_GRACE if INVALID_HANDLE in str(exc) else 0.0)
    while node.context.ok():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True

