"""The `franka_ros2` backend: FollowJointTrajectory for the arm, the franka gripper's
`move`/`grasp` actions for the hand.

Goals carry velocities and accelerations at every point, retimed to the FR3's limits
(`validation.fit_limits`), so the joint trajectory controller plays quintic segments instead
of stepping its velocity at every point. A gripper width ramp (policies close towards 0 over
a few points) is one gripper goal to its end, sent when the ramp starts: the franka gripper
runs one command at a time, and a ramp's intermediate widths are not object sizes.

A goal preempted by the next one (an asynchronous policy run replacing the tail of its
queue) leaves its FollowJointTrajectory goal running: the next goal replaces the trajectory
in the joint trajectory controller, which splices it in from its current state without a
stop. Only a cancel, a halt or a failure cancels the controller's goal (it then holds), and
so does a preemption no new trajectory followed within `HANDOVER_WINDOW` (the next goal was
refused): the arm never plays a replaced queue to its end.

The logic lives here (what goal to send, when to move the gripper, what a result means); the
node supplies a `FrankaTransport` that turns the plain goals below into action messages, so
this module needs neither rclpy nor control_msgs/franka_msgs.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from mango.control.goals import GoalRun, GoalStatus, Outcome
from mango.control.gripper import (
    GripperCommand,
    GripperKind,
    due_commands,
    gripper_failure,
    gripper_plan,
)
from mango.control.joint_state import JointStateReader, Measured
from mango.control.robot import RobotConfig
from mango.control.tracking import PointFeedback, PointTracker
from mango.control.trajectory import JointTrajectory
from mango.control.validation import fit_limits

T_co = TypeVar("T_co", covariant=True)
FRESH_STATE_TIMEOUT = 0.5  # s to wait for a joint state newer than a gripper result
GOAL_TIME_TOLERANCE = (0, 500_000_000)  # (sec, nanosec) the controller may end late
HANDOVER_WINDOW = 0.5  # s a preempted goal keeps running while the next one is checked
FJT_CODES = {0: "SUCCESSFUL", -1: "INVALID_GOAL", -2: "INVALID_JOINTS",
             -3: "OLD_HEADER_TIMESTAMP", -4: "PATH_TOLERANCE_VIOLATED",
             -5: "GOAL_TOLERANCE_VIOLATED"}


@dataclass(frozen=True)
class TrajectoryPoint:
    positions: tuple[float, ...]
    sec: int
    nanosec: int
    velocities: tuple[float, ...] = ()
    accelerations: tuple[float, ...] = ()


@dataclass(frozen=True)
class TrajectoryGoal:
    """The fields of a FollowJointTrajectory goal, as plain data."""

    joint_names: tuple[str, ...]
    points: tuple[TrajectoryPoint, ...]
    goal_time_tolerance: tuple[int, int] = GOAL_TIME_TOLERANCE

    @classmethod
    def from_trajectory(cls, traj: JointTrajectory) -> TrajectoryGoal:
        points = []
        for k, (t, q) in enumerate(zip(traj.times, traj.positions, strict=True)):
            sec = int(t)
            v = () if traj.velocities is None else tuple(traj.velocities[k].tolist())
            a = () if traj.accelerations is None else tuple(traj.accelerations[k].tolist())
            points.append(TrajectoryPoint(tuple(q.tolist()), sec, int((t - sec) * 1e9), v, a))
        return cls(tuple(traj.joint_names), tuple(points))


@dataclass(frozen=True)
class ArmResult:
    error_code: int
    error_string: str


@dataclass(frozen=True)
class GripperResult:
    success: bool
    error: str


class Pending(Protocol[T_co]):
    """A future: `result()` is valid once `done()`."""

    def done(self) -> bool: ...

    def result(self) -> T_co: ...


class SentGoal(Protocol[T_co]):
    """A goal the action server answered: accepted or not, its result, a cancel."""

    @property
    def accepted(self) -> bool: ...

    def result(self) -> Pending[T_co]: ...

    def cancel(self) -> None: ...


class FrankaTransport(Protocol):
    """The action clients, as the node implements them."""

    def wait_for_arm(self, timeout: float) -> bool: ...

    def send_arm_goal(self, goal: TrajectoryGoal) -> Pending[SentGoal[ArmResult]]: ...

    def wait_for_gripper(self, kind: GripperKind, timeout: float) -> bool: ...

    def send_gripper_goal(self, command: GripperCommand) -> Pending[SentGoal[GripperResult]]: ...


@dataclass(frozen=True)
class FrankaSettings:
    arm_action: str  # names, for the messages
    gripper_namespace: str
    grasp_force: float
    gripper_speed: float
    server_timeout: float  # s to wait for a server, an answer or a gripper result
    max_slowdown: float = 1.0  # s a goal may be slowed down by to fit the limits


class FrankaRos2Backend:
    """Sends each trajectory as one FollowJointTrajectory goal and the gripper widths it
    passes through as move (opening) or grasp (closing) goals at their points' times."""

    def __init__(self, robot: RobotConfig, period: float, reader: JointStateReader,
                 transport: FrankaTransport, settings: FrankaSettings) -> None:
        self.robot, self.period, self.reader = robot, period, reader
        self.transport, self.settings = transport, settings
        self._active_arm: SentGoal[ArmResult] | None = None
        self._lock = threading.Lock()
        self._last_width: float | None = None

    def measured(self) -> Measured | None:
        return self.reader.measured()

    def prepare(self, traj: JointTrajectory, start: Measured) -> JointTrajectory:
        return fit_limits(traj, self.robot, start.q, start.velocity, self.settings.max_slowdown)

    def hold(self) -> None:
        # The joint trajectory controller holds position when its goal is cancelled.
        with self._lock:
            gh, self._active_arm = self._active_arm, None
        if gh is not None:
            gh.cancel()

    def _expire(self, gh: SentGoal[ArmResult]) -> None:
        """Cancel a preempted goal that no new trajectory replaced."""
        with self._lock:
            if self._active_arm is not gh:
                return
            self._active_arm = None
        gh.cancel()

    @staticmethod
    def _wait(future: Pending[object], run: GoalRun, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not future.done():
            if run.stop.wait(0.002) or time.monotonic() > deadline:
                return future.done()
        return True

    def gripper_plan(self, widths: np.ndarray, start: float | None
                     ) -> list[tuple[int, GripperCommand]]:
        """The hand commands a width ramp becomes (`mango.control.gripper`)."""
        return gripper_plan(widths, start, self.settings.gripper_speed, self.settings.grasp_force)

    def execute(self, traj: JointTrajectory, run: GoalRun, on_point: PointFeedback) -> Outcome:
        s, arm = self.settings, self.settings.arm_action
        if not self.transport.wait_for_arm(s.server_timeout):
            return Outcome(False, message=f"arm controller {arm} is not available")
        sent = self.transport.send_arm_goal(TrajectoryGoal.from_trajectory(traj))
        if not self._wait(sent, run, s.server_timeout):
            if run.stop.is_set():
                return Outcome(False, True, run.reason)
            return Outcome(False, message=f"arm controller {arm} did not answer")
        gh = sent.result()
        if not gh.accepted:
            return Outcome(False, message=f"arm controller {arm} rejected the trajectory")
        with self._lock:
            self._active_arm = gh
        result = gh.result()
        tracker = PointTracker(traj, self.reader.measured, on_point)
        grip_calls: list[tuple[GripperCommand, Pending[SentGoal[GripperResult]]]] = []
        t0 = time.monotonic()
        width = self._last_width
        if width is None:
            m = self.reader.measured()
            width = m.width if m is not None and m.width is not None else None
        plan = [] if traj.gripper is None else self.gripper_plan(traj.gripper, width)
        if plan:
            width = plan[-1][1].width
        k_grip = 0
        arm_done = False
        while True:
            arm_done = result.done()
            t = time.monotonic() - t0
            tracker.update(t)
            # Gripper widths are sent as their points come due; once the arm is done, those
            # still to come are sent too (an arm that finishes early must not drop them).
            due = len(traj) - 1 if arm_done else traj.point_index(t)
            for cmd in due_commands(plan, k_grip, due):
                k_grip += 1
                if not self.transport.wait_for_gripper(cmd.kind, s.server_timeout):
                    self.hold()
                    return Outcome(False, message=f"gripper action {s.gripper_namespace}/"
                                   f"{cmd.kind} is not available",
                                   points_executed=tracker.done)
                grip_calls.append((cmd, self.transport.send_gripper_goal(cmd)))
            if arm_done:
                break
            if run.stop.wait(self.period):
                if run.stop_status is GoalStatus.PREEMPTED:  # the next goal replaces it
                    timer = threading.Timer(HANDOVER_WINDOW, self._expire, args=(gh,))
                    timer.daemon = True
                    timer.start()
                else:
                    self.hold()
                return Outcome(False, True, run.reason, tracker.done, tracker.max_error)
        with self._lock:
            self._active_arm = None
        self._last_width = width
        res = result.result()
        tracker.update(traj.duration + 1.0)
        if res.error_code != 0:
            name = FJT_CODES.get(res.error_code, str(res.error_code))
            detail = f": {res.error_string}" if res.error_string else ""
            return Outcome(False, message=f"arm controller failed with {name}{detail}",
                           points_executed=tracker.done, max_error=tracker.max_error)
        for cmd, fut in grip_calls:
            outcome = self._gripper_outcome(cmd, fut, run)
            if outcome is not None:
                outcome.points_executed, outcome.max_error = tracker.done, tracker.max_error
                return outcome
        return Outcome(True, points_executed=len(traj), max_error=tracker.max_error)

    def _gripper_outcome(self, cmd: GripperCommand, sent: Pending[SentGoal[GripperResult]],
                         run: GoalRun) -> Outcome | None:
        """None when the gripper goal succeeded; otherwise the failure, named."""
        ns, timeout = self.settings.gripper_namespace, self.settings.server_timeout
        what = cmd.describe()
        if not self._wait(sent, run, timeout):
            return Outcome(False, message=f"{what}: no answer from {ns}/{cmd.kind}")
        gh = sent.result()
        if not gh.accepted:
            return Outcome(False, message=f"{what} was rejected by {ns}/{cmd.kind}")
        res = gh.result()
        if not self._wait(res, run, timeout + 5.0):
            return Outcome(False, message=f"{what}: no result")
        r = res.result()
        d = self._width_after(time.monotonic()) if cmd.kind == "grasp" else None
        why = gripper_failure(cmd, r.success, r.error, d)
        return None if why is None else Outcome(False, message=why)

    def _width_after(self, since: float) -> float | None:
        """The measured gripper width from a joint state received after `since` (or the
        latest one, if none comes within FRESH_STATE_TIMEOUT)."""
        deadline = since + FRESH_STATE_TIMEOUT
        while True:
            m = self.reader.measured()
            if m is not None and (m.t >= since or time.monotonic() > deadline):
                return m.width
            if m is None and time.monotonic() > deadline:
                return None
            time.sleep(0.005)
