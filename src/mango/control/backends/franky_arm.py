"""The `FrankaArm` port over franky (`franky-control`: Python bindings of franky, which
bundle libfranka 0.21): the robot at an address, its hand, libfranka's errors as `ArmError`.

franky is imported on connect, so the rest of the project never needs it. Collision thresholds
and the realtime setting are those of franky's `Robot` (its defaults: 20 Nm, 30 N; realtime
enforced, which a machine without a real-time kernel must relax with `realtime: false`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from mango.control.backends.libfranka import (
    ArmError,
    ArmState,
    JointStateSink,
    LibfrankaBackend,
    LibfrankaSettings,
    StateStream,
    Waypoint,
)
from mango.control.gripper import GripperCommand
from mango.control.joint_state import JointStateReader
from mango.control.robot import RobotConfig


@dataclass(frozen=True)
class FrankyOptions:
    torque_threshold: float = 20.0  # Nm, every joint (franky's Robot default)
    force_threshold: float = 30.0  # N, every Cartesian direction (franky's Robot default)
    realtime: bool = True  # libfranka refuses to run without a real-time kernel (not asked of
    # a loopback address: a simulated FR3 on this machine)
    hand: bool = True  # a Franka Hand is mounted
    home_hand: bool = False  # home the hand on connecting (it opens fully and comes back)


def _loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # a host name: a robot on the network
        return False


@contextmanager
def _own_scheduling() -> Iterator[None]:
    """The calling thread keeps its scheduling: libfranka makes the thread that connects a
    real-time one (SCHED_FIFO 99 where it may, as root, even with its real-time check off),
    and a node's executor or a test process turned real-time starves every process it starts.
    libfranka's control loop runs in franky's own thread."""
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
    except OSError:  # no scheduler control here: nothing to keep
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if (os.sched_getscheduler(0), os.sched_getparam(0)) != (policy, param):
                os.sched_setscheduler(0, policy, param)


class _Answer:
    """A hand command's franky future."""

    def __init__(self, future: Any, franky: Any) -> None:
        self._future, self._franky = future, franky

    def done(self) -> bool:
        return bool(self._future.wait(0.0))

    def result(self) -> bool:
        try:
            return bool(self._future.get())
        except (self._franky.Exception, RuntimeError) as exc:
            raise ArmError(str(exc) or type(exc).__name__) from None


class FrankyArm:
    """An FR3 (and its hand) at `address`, through libfranka."""

    def __init__(self, address: str, options: FrankyOptions | None = None) -> None:
        self.address = address
        self.options = options or FrankyOptions()
        self._lock = threading.Lock()  # a reconnect swaps robot and hand together
        self._franky: Any = None
        self._robot: Any = None
        self._gripper: Any = None

    def _call(self, fn: Any, *args: Any) -> Any:
        if self._robot is None:
            self.reconnect()
        try:
            with _own_scheduling():
                return fn(*args)
        except (self._franky.Exception, RuntimeError) as exc:  # a lost link: RuntimeError
            raise ArmError(str(exc) or type(exc).__name__) from None

    def reconnect(self) -> None:
        try:
            import franky
        except ImportError as exc:  # an install problem, said once, with the fix
            raise ArmError(f"franky is not installed ({exc}): run `make setup`") from None
        self._franky = franky
        o = self.options
        # a robot on this machine's loopback is a simulator (franky-sim): no real FR3 answers
        # there, and its client needs no real-time kernel
        enforce = o.realtime and not _loopback(self.address)
        rt = franky.RealtimeConfig.Enforce if enforce else franky.RealtimeConfig.Ignore
        try:
            with _own_scheduling():
                robot = franky.Robot(self.address, default_torque_threshold=o.torque_threshold,
                                     default_force_threshold=o.force_threshold,
                                     realtime_config=rt)
                gripper = franky.Gripper(self.address) if o.hand else None
        except (franky.Exception, RuntimeError) as exc:
            raise ArmError(f"cannot connect to {self.address}: {exc}") from None
        if gripper is not None and o.home_hand:  # measures its stroke, as Desk's homing does
            try:
                with _own_scheduling():
                    homed = gripper.homing()
            except (franky.Exception, RuntimeError) as exc:
                raise ArmError(f"homing the hand at {self.address}: {exc}") from None
            if not homed:
                raise ArmError(f"homing the hand at {self.address} failed")
        with self._lock:
            self._robot, self._gripper = robot, gripper

    def read(self, with_width: bool) -> ArmState:
        s = self._call(lambda: self._robot.state)
        width = None
        if with_width and self._gripper is not None:
            width = float(self._call(lambda: self._gripper.width))
        return ArmState(np.asarray(s.q, float), np.asarray(s.dq, float), s.time.to_sec(), width,
                        np.asarray(s.q_d, float), np.asarray(s.dq_d, float))

    def follow(self, waypoints: Sequence[Waypoint], dynamics_factor: float) -> None:
        if self._franky is None:
            self.reconnect()
        f = self._franky
        points = [f.JointWaypoint(f.JointState(w.q, w.v),
                                  minimum_time=f.Duration(round(w.min_duration * 1000)))
                  for w in waypoints]
        motion = f.JointWaypointMotion(points, relative_dynamics_factor=dynamics_factor)
        self._call(lambda: self._robot.move(motion, asynchronous=True))

    def finished(self) -> bool:
        return bool(self._call(lambda: self._robot.join_motion(0.0)))

    def stop(self) -> None:
        f = self._franky
        if f is None or self._robot is None:
            return
        self._call(lambda: self._robot.move(f.JointStopMotion(), asynchronous=True))

    def status(self) -> tuple[str, list[str]]:
        """The robot's mode and the errors it reports now (libfranka's names)."""
        st = self._call(lambda: self._robot.state)
        mode = str(st.robot_mode).split(".")[-1]
        flags = st.current_errors  # libfranka's franka::Errors: one flag per error
        errors = [n for n in dir(flags) if not n.startswith("_") and getattr(flags, n) is True]
        return mode, errors

    def hand_width(self) -> float | None:
        return None if self._gripper is None else float(self._call(lambda: self._gripper.width))

    def hand_stroke(self) -> float | None:
        """The widest the hand opens, as its last homing measured it."""
        return None if self._gripper is None else float(
            self._call(lambda: self._gripper.max_width))

    def has_errors(self) -> bool:
        return bool(self._call(lambda: self._robot.has_errors))

    def recover(self) -> None:
        if not self._call(lambda: self._robot.recover_from_errors()):
            raise ArmError("automatic error recovery failed")

    def grip(self, command: GripperCommand) -> _Answer:
        if self._gripper is None:
            raise ArmError("no hand is configured (`hand: false`)")
        g = self._gripper
        if command.kind == "grasp":
            future = self._call(lambda: g.grasp_async(
                command.width, command.speed, command.force, command.epsilon_inner,
                command.epsilon_outer))
        else:
            future = self._call(lambda: g.move_async(command.width, command.speed))
        return _Answer(future, self._franky)


def libfranka_backend(robot: RobotConfig, period: float, address: str,
                      settings: LibfrankaSettings, options: FrankyOptions | None = None,
                      now: Callable[[], float] = time.time,
                      publish: JointStateSink | None = None,
                      say: Callable[[str], None] = lambda _line: None) -> LibfrankaBackend:
    """The robot at `address` as a control backend: its state stream started (joint states to
    `publish`, stamped on `now`'s clock), the backend over it. The control node, its tests and
    the bench make it the same way."""
    arm = FrankyArm(address, options)
    stream = StateStream(arm, robot, JointStateReader(robot.joint_names), settings.state_rate,
                         now, publish, say)
    stream.start()
    return LibfrankaBackend(robot, period, stream, settings)
