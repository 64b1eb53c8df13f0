"""Stand-ins for the arm at the control backends' ports (no ROS): a simulator behind the
sim backend's joint-command sink, and a franka_ros2 controller and gripper behind the
franka transport. Both publish joint states into a `JointStateReader` from a thread, as the
node's subscription does."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mango.control import JointStateReader, RobotConfig
from mango.control.backends.franka_ros2 import ArmResult, GripperResult, TrajectoryGoal
from mango.control.gripper import GripperCommand
from mango.control.joint_state import FINGERS


class Done:
    """A future that is already resolved."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        return self.value


class Later:
    """A future resolved by another thread."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.value: Any = None

    def set(self, value: Any) -> None:
        self.value = value
        self._event.set()

    def done(self) -> bool:
        return self._event.is_set()

    def result(self) -> Any:
        return self.value


@dataclass
class FakeSim:
    """Joint states every `period` s of wall time, `sim_step` s of simulator time apart
    (`sim_step` < `period`: a lagging simulator); the arm reaches each command at once.
    `running` False stops the joint states."""

    robot: RobotConfig
    reader: JointStateReader
    period: float = 0.005
    sim_step: float = 0.005
    t: float = 100.0
    width: float = 0.08
    running: bool = True
    commands: list[tuple[list[str], list[float]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.q = np.asarray(self.robot.home, float)
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def send(self, names: Sequence[str], positions: Sequence[float]) -> None:
        with self._lock:
            self.commands.append((list(names), list(positions)))
            self.q = np.asarray(positions[:7], float)
            if "gripper" in names:
                self.width = float(positions[list(names).index("gripper")])

    def publish(self) -> None:
        with self._lock:
            self.reader.update([*self.robot.joint_names, *FINGERS],
                               [*self.q.tolist(), self.width / 2, self.width / 2], self.t)

    def _loop(self) -> None:
        tick = time.monotonic()
        while not self._stop.is_set():
            if self.running:
                with self._lock:
                    self.t += self.sim_step
                self.publish()
            tick += self.period
            time.sleep(max(0.0, tick - time.monotonic()))

    @contextmanager
    def running_thread(self) -> Iterator[FakeSim]:
        self.publish()
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=2.0)


class _Goal:
    def __init__(self, accepted: bool, result: Any, on_cancel: Any = None) -> None:
        self.accepted, self._result, self._on_cancel = accepted, result, on_cancel

    def result(self) -> Any:
        return self._result

    def cancel(self) -> None:
        if self._on_cancel is not None:
            self._on_cancel()


@dataclass
class FakeFrankaTransport:
    """The joint trajectory controller and the franka gripper, behind `FrankaTransport`.

    `mode`: ok | path_error | reject | hang | absent | instant; the arm walks the received
    points on time (or, instant, jumps to the last) and publishes joint states into
    `reader`; a new goal replaces the one being followed, as the joint trajectory controller
    does (`replaced` counts them). The gripper holds an object `object_width` m wide between
    its fingers (None: nothing): a grasp stops on it if it lies between the fingers and the
    commanded width, and succeeds as libfranka's does (include/franka/gripper.h: the distance
    d between the fingers satisfies width - epsilon_inner < d < width + epsilon_outer)."""

    robot: RobotConfig
    reader: JointStateReader
    mode: str = "ok"
    object_width: float | None = None
    width: float = 0.08
    goals: list[TrajectoryGoal] = field(default_factory=list)
    gripper_goals: list[GripperCommand] = field(default_factory=list)
    cancels: int = 0
    replaced: int = 0

    def __post_init__(self) -> None:
        self.q = np.asarray(self.robot.home, float)
        self._following: object = None
        self.publish()

    def publish(self) -> None:
        self.reader.update([*self.robot.joint_names, *FINGERS],
                           [*self.q.tolist(), self.width / 2, self.width / 2], 0.0)

    def wait_for_arm(self, timeout: float) -> bool:
        return self.mode != "absent"

    def send_arm_goal(self, goal: TrajectoryGoal) -> Done:
        self.goals.append(goal)
        if self.mode == "reject":
            return Done(_Goal(False, None))
        result = Later()
        cancelled = threading.Event()

        def cancel() -> None:
            self.cancels += 1
            cancelled.set()

        if self._following is not None:
            self.replaced += 1
        token = self._following = object()
        threading.Thread(target=self._follow, args=(goal, result, cancelled, token),
                         daemon=True).start()
        return Done(_Goal(True, result, cancel))

    def _follow(self, goal: TrajectoryGoal, result: Later, cancelled: threading.Event,
                token: object) -> None:
        try:
            self._walk(goal, result, cancelled, token)
        finally:
            if self._following is token:
                self._following = None

    def _walk(self, goal: TrajectoryGoal, result: Later, cancelled: threading.Event,
              token: object) -> None:
        if self.mode == "instant":  # a controller that reports done at once
            self.q = np.asarray(goal.points[-1].positions, float)
            self.publish()
            result.set(ArmResult(0, ""))
            return
        t0 = time.monotonic()
        for k, p in enumerate(goal.points):
            while time.monotonic() - t0 < p.sec + p.nanosec * 1e-9 or self.mode == "hang":
                if cancelled.wait(0.002):
                    result.set(ArmResult(0, ""))  # the controller holds position
                    return
                if self._following is not token:  # replaced: the new goal moves the arm
                    result.set(ArmResult(0, ""))
                    return
            self.q = np.asarray(p.positions, float)
            self.publish()
            if self.mode == "path_error" and k == 1:
                result.set(ArmResult(-4, "fr3_joint2 path error 0.21 > 0.1"))
                return
        result.set(ArmResult(0, ""))

    def wait_for_gripper(self, kind: str, timeout: float) -> bool:
        return True

    def send_gripper_goal(self, command: GripperCommand) -> Done:
        self.gripper_goals.append(command)
        obj = self.object_width
        if command.kind == "grasp":
            stop = obj if obj is not None and command.width <= obj <= self.width else None
            self.width = command.width if stop is None else stop
            lo, hi = command.width - command.epsilon_inner, command.width + command.epsilon_outer
            res = GripperResult(lo < self.width < hi, "")
        else:
            self.width = command.width
            res = GripperResult(True, "")
        self.publish()
        return Done(_Goal(True, Done(res)))
