"""The `libfranka` backend: the FR3 driven through libfranka itself, the client a real FR3's
control box talks to (as labs without ROS controllers do: franky, deoxys, polymetis).

A chunk, retimed to the FR3's limits (`validation.fit_limits`, as for franka_ros2), becomes
one joint waypoint motion the robot's 1 kHz loop plays: every point a waypoint with the
point's velocity and its segment's duration as the least time (Ruckig in franky), so the arm
passes through the points at their times without stopping at each. A goal that preempts a
running one takes the motion over where it is (libfranka's motion is replaced, not stopped):
two chunks back to back do not stop the arm; a preempted motion with no successor within
`preempt_grace` (0.25 s) is stopped. Cancel and halt decelerate to rest at the robot's limits.

Joint states come from the robot's state stream (`StateStream`) with the robot's own clock,
at `state_rate`. A robot error (a reflex, a limit) ends the goal FAILED with libfranka's text;
errors are cleared before the next goal only when `recover` is set. A robot whose state stops
arriving for `comm_timeout` s fails its goal at once (libfranka itself waits for a second).

Talks to the robot through a `FrankaArm` port (`franky_arm.FrankyArm` over franky), so this
module needs neither franky nor a robot.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mango.control.goals import PREEMPTED, GoalRun, Outcome
from mango.control.gripper import GripperCommand, due_commands, gripper_failure, gripper_plan
from mango.control.joint_state import FINGERS, JointStateReader, Measured
from mango.control.robot import RobotConfig
from mango.control.tracking import PointFeedback, PointTracker
from mango.control.trajectory import JointTrajectory
from mango.control.validation import fit_limits

AT_REST = 1e-3  # rad/s: a commanded joint speed below this is no speed


class ArmError(Exception):
    """What libfranka said went wrong (its own text)."""


@dataclass(frozen=True)
class ArmState:
    q: np.ndarray
    dq: np.ndarray
    time: float  # s, the robot's own clock
    width: float | None  # the hand's width (m), when read
    q_d: np.ndarray | None = None  # what the robot is commanded now (libfranka's q_d, dq_d):
    dq_d: np.ndarray | None = None  # where a new motion starts from


@dataclass(frozen=True)
class Waypoint:
    q: np.ndarray
    v: np.ndarray
    min_duration: float  # s from the previous waypoint (the segment's time in the chunk)


class GripperAnswer(Protocol):
    def done(self) -> bool: ...

    def result(self) -> bool: ...  # raises ArmError


class FrankaArm(Protocol):
    """The robot and its hand as libfranka gives them; every call may raise `ArmError`."""

    @property
    def address(self) -> str: ...

    def read(self, with_width: bool) -> ArmState: ...

    def follow(self, waypoints: Sequence[Waypoint], dynamics_factor: float) -> None:
        """Start (asynchronously) a motion through `waypoints`, taking over a running one."""
        ...

    def finished(self) -> bool:
        """Whether the motion ended; raises its error if it failed."""
        ...

    def stop(self) -> None:
        """Decelerate to rest at the robot's limits (asynchronously)."""
        ...

    def has_errors(self) -> bool: ...

    def recover(self) -> None: ...

    def grip(self, command: GripperCommand) -> GripperAnswer: ...

    def reconnect(self) -> None: ...


@dataclass(frozen=True)
class LibfrankaSettings:
    grasp_force: float = 20.0
    gripper_speed: float = 0.1
    dynamics_factor: float = 0.5  # of the FR3's velocity, acceleration and jerk limits
    state_rate: float = 200.0  # Hz joint states are read and published at
    comm_timeout: float = 0.2  # s without a new robot state: the connection is lost
    recover: bool = False  # clear robot errors before the next goal
    # s a preempted motion runs on, waiting for its successor (which is validated first: a
    # refused one leaves the arm on the old, validated path this long)
    preempt_grace: float = 0.25
    max_slowdown: float = 1.0  # s a goal may be slowed down by to fit the limits
    gripper_timeout: float = 10.0  # s a hand command may take
    arrive_tol: float = 0.0005  # rad: a finished motion's arm is this close to its end...
    arrive_timeout: float = 1.0  # s ...or has had this long to get there


JointStateSink = Callable[[Sequence[str], Sequence[float], Sequence[float], float], None]


class StateStream:
    """Reads the robot's state at `rate` into `reader` (only states whose robot time moved
    on: a stale state is not news) and hands each to `publish`; reconnects after a loss.
    Stamps are the robot's clock, offset once onto `now`'s (the ROS clock)."""

    WIDTH_EVERY = 4  # the hand is read every this many states (a UDP round trip of its own)

    def __init__(self, arm: FrankaArm, robot: RobotConfig, reader: JointStateReader,
                 rate: float, now: Callable[[], float],
                 publish: JointStateSink | None = None,
                 say: Callable[[str], None] = lambda _line: None) -> None:
        self.arm, self.robot, self.reader, self.rate = arm, robot, reader, rate
        self.now, self.publish, self.say = now, publish, say
        self.error = ""  # the last connection error, "" while connected
        self.latest: ArmState | None = None  # the last state read
        self._publish_failed = False
        self._offset: float | None = None
        self._last_time = -1.0
        self._width: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="franka_state", daemon=True)
        self._names = [*robot.joint_names, *FINGERS]

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        period, k = 1.0 / self.rate, 0
        while not self._stop.is_set():
            tick = time.monotonic()
            try:
                s = self.arm.read(with_width=k % self.WIDTH_EVERY == 0)
            except ArmError as exc:
                if not self.error:  # said once per loss, not once a second
                    self.say(f"no state from the robot at {self.arm.address}: {exc}; "
                             "connecting again every second")
                self.error = str(exc) or type(exc).__name__
                self._stop.wait(1.0)
                self._reconnect()
                continue
            if self.error or self.latest is None:
                self.say(f"reading the robot at {self.arm.address} (libfranka)")
            self.error, self.latest = "", s
            k += 1
            if s.width is not None:
                self._width = s.width
            if s.time > self._last_time:
                self._last_time = s.time
                self._take(s)
            self._stop.wait(max(0.0, tick + period - time.monotonic()))

    def _reconnect(self) -> None:
        try:
            self.arm.reconnect()
            self._offset, self._last_time = None, -1.0  # a restarted robot restarts its clock
        except ArmError as exc:
            self.error = str(exc) or type(exc).__name__

    def _take(self, s: ArmState) -> None:
        if self._offset is None:
            self._offset = self.now() - s.time
        stamp = self._offset + s.time
        half = (self._width if self._width is not None else float("nan")) / 2
        positions = [*s.q.tolist(), half, half]
        velocities = [*s.dq.tolist(), 0.0, 0.0]
        if self._width is None:  # no hand read yet: the arm alone
            names, positions, velocities = self._names[:-2], positions[:-2], velocities[:-2]
        else:
            names = self._names
        self.reader.update(names, positions, stamp, velocities=velocities)
        if self.publish is not None:
            try:  # the controller reads the stream: a publisher's failure must not end it
                self.publish(names, positions, velocities, stamp)
            except Exception as exc:  # said once: the stream goes on
                if not self._publish_failed:
                    self._publish_failed = True
                    self.say(f"publishing joint states failed: {exc}")


class LibfrankaBackend:
    """Plays each trajectory as one libfranka waypoint motion; the hand's commands go out as
    their points come due (`mango.control.gripper`)."""

    def __init__(self, robot: RobotConfig, period: float, stream: StateStream,
                 settings: LibfrankaSettings) -> None:
        self.robot, self.period, self.stream = robot, period, stream
        self.reader, self.arm, self.settings = stream.reader, stream.arm, settings
        # one motion command at a time (a motion sent, a stop): a preempted motion's grace
        # stop must never land after its successor's motion
        self._lock = threading.Lock()
        self._motion = 0  # motion commands sent; a grace stop is for one of them
        self._last_width: float | None = None

    def measured(self) -> Measured | None:
        return self.reader.measured()

    def _commanded(self) -> np.ndarray | None:
        """Where the robot is commanded now (libfranka's q_d), else where it is."""
        s = self.stream.latest
        if s is None:
            return None
        return s.q_d if s.q_d is not None else s.q

    def prepare(self, traj: JointTrajectory, start: Measured) -> JointTrajectory:
        # libfranka's motion starts from what the robot is commanded, which the measured arm
        # trails by its tracking lag: fitted from the measured state, a goal taking over a
        # running motion would be planned to catch up with an arm that is not behind
        s = self.stream.latest
        if s is not None and s.q_d is not None and s.dq_d is not None:
            # a robot at rest reports velocity noise (franky-sim: 1e-4 rad/s) that a spline
            # would carry into joints the chunk does not move
            v = s.dq_d if np.max(np.abs(s.dq_d)) > AT_REST else np.zeros_like(s.dq_d)
            return fit_limits(traj, self.robot, s.q_d, v, self.settings.max_slowdown)
        return fit_limits(traj, self.robot, start.q, start.velocity, self.settings.max_slowdown)

    def hold(self) -> None:
        with self._lock:
            self._motion += 1  # a grace waiting on the motion before is over
            with contextlib.suppress(ArmError):  # nothing moves that it could stop
                self.arm.stop()

    def _stop_if_alone(self, motion: int) -> None:
        with self._lock:
            if self._motion == motion:  # no successor took the motion over
                self._motion += 1
                with contextlib.suppress(ArmError):
                    self.arm.stop()

    def _leave_running(self) -> None:
        """A preempted motion: its successor takes it over, or it stops after the grace."""
        with self._lock:
            motion = self._motion
        timer = threading.Timer(self.settings.preempt_grace, self._stop_if_alone, (motion,))
        timer.daemon = True
        timer.start()

    @staticmethod
    def waypoints(traj: JointTrajectory, start: np.ndarray | None = None,
                  still: float = 1e-5) -> list[Waypoint]:
        """One waypoint per point that moves the arm from `start` or the point before (one
        within `still` rad only lengthens the next segment: Ruckig cannot synchronise a segment
        that goes nowhere at a speed), at rest at the end; its least duration is its
        segment's."""
        v = traj.velocities if traj.velocities is not None else np.zeros_like(traj.positions)
        out: list[Waypoint] = []
        t_prev, q_prev = 0.0, start
        last = len(traj) - 1
        for k, (t, q) in enumerate(zip(traj.times, traj.positions, strict=True)):
            q = np.asarray(q, float)
            if k < last and q_prev is not None and np.max(np.abs(q - q_prev)) < still:
                continue
            vk = np.zeros_like(q) if k == last else np.asarray(v[k], float).copy()
            # Ruckig fails to synchronise (error -111) a joint that must pass through a point
            # it is already at with a speed it cannot tell from zero
            vk[np.abs(vk) < AT_REST] = 0.0
            out.append(Waypoint(q, vk, max(0.0, float(t) - t_prev)))
            t_prev, q_prev = float(t), q
        return out

    def _ready(self) -> str:
        """Why no goal can start now ("" when one can)."""
        lost = self._lost()
        if lost:
            return lost
        try:
            if self.arm.has_errors():
                if not self.settings.recover:
                    return (f"the robot at {self.arm.address} has errors: clear them (set "
                            "`recover` to do it before each goal)")
                self.arm.recover()
        except ArmError as exc:
            return f"libfranka: {exc}"
        return ""

    def execute(self, traj: JointTrajectory, run: GoalRun, on_point: PointFeedback) -> Outcome:
        why = self._ready()
        if why:
            self.hold()
            return Outcome(False, message=why)
        start = self.reader.measured()
        width = self._last_width if self._last_width is not None else (
            start.width if start is not None else None)
        s = self.settings
        plan = [] if traj.gripper is None else gripper_plan(traj.gripper, width, s.gripper_speed,
                                                           s.grasp_force)
        try:
            with self._lock:
                self._motion += 1
                self.arm.follow(self.waypoints(traj, self._commanded()), s.dynamics_factor)
        except ArmError as exc:
            return Outcome(False, message=f"libfranka refused the motion: {exc}")
        tracker = PointTracker(traj, self.reader.measured, on_point)
        grips: list[tuple[GripperCommand, GripperAnswer]] = []
        # trajectory time is the robot's: a robot (or simulator) whose clock runs slow plays
        # the motion slower, and its points come due by its clock
        t0 = self._robot_time()
        k_grip = 0
        while True:
            try:
                finished = self.arm.finished()
            except ArmError as exc:
                return self._failed(f"libfranka: {exc}", tracker)
            t = self._robot_time() - t0
            tracker.update(t)
            due = len(traj) - 1 if finished else traj.point_index(t)
            for cmd in due_commands(plan, k_grip, due):
                k_grip += 1
                try:
                    grips.append((cmd, self.arm.grip(cmd)))
                except ArmError as exc:
                    return self._failed(f"{cmd.describe()}: libfranka: {exc}", tracker)
            if finished:
                break
            lost = self._lost()
            if lost:
                return self._failed(lost, tracker)
            if run.stop.wait(self.period):
                if run.reason == PREEMPTED:
                    self._leave_running()
                else:
                    self.hold()
                return Outcome(False, True, run.reason, tracker.done, tracker.max_error)
        if plan:
            self._last_width = plan[-1][1].width
        self._arrive(traj.positions[-1], run)
        tracker.update(traj.duration + 1.0)
        for cmd, answer in grips:
            why = self._grip_outcome(cmd, answer, run)
            if why:
                return Outcome(False, message=why, points_executed=tracker.done,
                               max_error=tracker.max_error)
        return Outcome(True, points_executed=len(traj), max_error=tracker.max_error)

    def _arrive(self, q_end: np.ndarray, run: GoalRun) -> None:
        """Wait for the measured arm to reach the motion's end (libfranka says a motion is
        finished when its commanded path is; the arm's own tracking follows), so what the
        goal reports is where the arm is, not where it is heading."""
        deadline = time.monotonic() + self.settings.arrive_timeout
        while time.monotonic() < deadline and not run.stop.is_set():
            m = self.reader.measured()
            if m is not None and np.max(np.abs(m.q - q_end)) <= self.settings.arrive_tol:
                return
            run.stop.wait(self.period)

    def _robot_time(self) -> float:
        m = self.reader.measured()
        return m.stamp if m is not None else time.monotonic()

    def _lost(self) -> str:
        m = self.reader.measured()
        if m is not None and time.monotonic() - m.t <= self.settings.comm_timeout:
            return ""
        return (f"no state from the robot at {self.arm.address} for "
                f"{self.settings.comm_timeout:g} s: the connection is lost")

    def _failed(self, message: str, tracker: PointTracker) -> Outcome:
        self.hold()
        return Outcome(False, message=message, points_executed=tracker.done,
                       max_error=tracker.max_error)

    def _grip_outcome(self, cmd: GripperCommand, answer: GripperAnswer, run: GoalRun) -> str:
        deadline = time.monotonic() + self.settings.gripper_timeout
        while not answer.done():
            if run.stop.wait(0.005):
                return run.reason
            if time.monotonic() > deadline:
                return f"{cmd.describe()}: no answer from the hand in " \
                       f"{self.settings.gripper_timeout:g} s"
        try:
            success, error = answer.result(), ""
        except ArmError as exc:
            success, error = False, f"libfranka: {exc}"
        width = self._width_after(time.monotonic()) if cmd.kind == "grasp" else None
        return gripper_failure(cmd, success, error, width) or ""

    def _width_after(self, since: float) -> float | None:
        """The hand's width from a state read after `since` (the stream reads it every few
        states), or the latest one after half a second."""
        deadline = since + 0.5
        while True:
            m = self.reader.measured()
            if m is not None and (m.t >= since + 4 * self.period or time.monotonic() > deadline):
                return m.width
            if m is None and time.monotonic() > deadline:
                return None
            time.sleep(0.005)
