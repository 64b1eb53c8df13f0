"""The `sim` backend: interpolated position targets streamed to sim_node at the control rate.

Trajectory time follows the simulator's clock (`mango.control.clock`), so a simulator that
lags real time still sees each trajectory at its own speed. Joint states that stop coming for
`STALE_AFTER` s of wall time, or whose time goes back (a reset), end the goal.

A goal preempted by the next one (an asynchronous policy run replacing the tail of its
queue) does not stop the arm: its trajectory goes on (`_Coast`, at most `HANDOVER_WINDOW`)
until the next one takes over from the last target sent, without waiting for a fresh joint
state, so the stream of commands goes on at the control period across the boundary. A hold
(a halt, a cancel) ends the coasting at once; a successor the controller refuses leaves the
arm at most `HANDOVER_WINDOW` further along the preempted trajectory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from mango.control.clock import SimClock
from mango.control.goals import GoalRun, GoalStatus, Outcome
from mango.control.joint_state import STALE_AFTER, JointStateReader, Measured
from mango.control.robot import RobotConfig
from mango.control.tracking import PointFeedback, PointTracker
from mango.control.trajectory import JointTrajectory

GRIPPER = "gripper"  # sim_node's name for the gripper width in a joint command
HANDOVER_WINDOW = 0.1  # s a preempted trajectory goes on while the next goal is checked
JointCommandSink = Callable[[Sequence[str], Sequence[float]], None]  # (names, positions)


class SimBackend:
    """Streams targets through `send` (sim_node's `joint_command`) every `period` s, a
    trajectory timed by the simulator's clock, at most `time_factor` times real time."""

    def __init__(self, robot: RobotConfig, period: float, reader: JointStateReader,
                 send: JointCommandSink, time_factor: float = 1.0) -> None:
        self.robot, self.period, self.reader, self.send = robot, period, reader, send
        self.time_factor = time_factor
        self._names = [*robot.joint_names, GRIPPER]
        self._width: float | None = None  # the gripper width last commanded
        # sim_node keeps its last target: once the arm holds one (a stop, a finished
        # trajectory) another hold keeps it, as franka_ros2's controller does. Re-targeting
        # to the measured position would move the arm by the servo's lag or sag each time.
        self._holding = False
        self._last_q: np.ndarray | None = None  # the arm target last commanded
        self._lock = threading.Lock()  # one sender at a time: a goal's loop or a coast
        self._coast: _Coast | None = None

    def measured(self) -> Measured | None:
        return self.reader.measured()

    def _send(self, q: np.ndarray, width: float | None) -> None:
        self._last_q = np.asarray(q, float)
        if width is None:
            self.send(list(self.robot.joint_names), q.tolist())
        else:
            self._width = float(width)
            self.send(self._names, [*q.tolist(), self._width])

    def prepare(self, traj: JointTrajectory, start: Measured) -> JointTrajectory:
        # Played as given: sim_node's arm is a position servo fed linear interpolation at the
        # control rate, with no acceleration/jerk reflex like the FR3's FCI; and its chunks keep
        # the policy's timing, as `mango sim eval` (which steps rows at the policy rate, with no
        # controller) does, so the two stay comparable.
        return traj

    def hold(self) -> None:
        self._end_coast()
        if self._holding:
            return
        m = self.reader.measured()
        if m is not None:
            self._send(m.q, None)
            self._holding = True

    def _fresh(self, since: float, run: GoalRun) -> Measured | None:
        """The first joint state received after `since` (monotonic time), or the latest one
        after `STALE_AFTER` s. A goal sent right after a scene reset can reach this node before
        any joint state from after the reset: planned from the one before it, the first new
        state would look like the simulation restarting mid-motion."""
        deadline = since + STALE_AFTER
        while True:
            m = self.reader.measured()
            if m is not None and m.t > since:
                return m
            if time.monotonic() > deadline or run.stop.wait(0.001):
                return m

    def execute(self, traj: JointTrajectory, run: GoalRun, on_point: PointFeedback) -> Outcome:
        if self._end_coast():  # take over from the preempted trajectory's last target
            start = self.reader.measured()  # the clock's reference
            q0 = self._last_q
        else:
            start = self._fresh(time.monotonic(), run)
            q0 = None
        assert start is not None
        q0 = start.q if q0 is None else q0
        self._holding = False
        tracker = PointTracker(traj, self.reader.measured, on_point)
        tick = time.monotonic()
        clock = SimClock(start, tick, self.period, self.time_factor)
        t = clock.t
        # the gripper ramps from what it was told last, not from the measured width: fingers
        # closed on an object measure its width, and commanding that would let it go
        w0 = self._width if self._width is not None else start.width
        while True:
            q, w = traj.sample(t, q0, w0)
            self._send(q, w)
            tracker.update(t)
            if t >= traj.duration:  # the last target stays: the arm holds it
                self._holding = True
                return Outcome(True, points_executed=len(traj), max_error=tracker.max_error)
            tick += self.period
            if run.stop.wait(max(0.0, tick - time.monotonic())):
                if run.stop_status is GoalStatus.PREEMPTED:  # the next goal takes over
                    self._coast = _Coast(self, traj, clock, tick, q0, w0)
                    self._holding = True
                else:
                    self.hold()
                return Outcome(False, True, run.reason, tracker.done, tracker.max_error)
            m = self.reader.measured()
            assert m is not None
            if m.stamp < start.stamp:
                return self._fail("the simulation restarted (joint state time went back) "
                                  "during the motion", tracker)
            if time.monotonic() - m.t > STALE_AFTER:
                return self._fail(f"no joint state for {STALE_AFTER:g} s: the simulation "
                                  "stopped", tracker)
            t = clock.advance(m, time.monotonic())

    def _end_coast(self) -> bool:
        """Stop a preempted trajectory's coasting; whether one was still going."""
        coast, self._coast = self._coast, None
        return coast is not None and coast.end()

    def _fail(self, message: str, tracker: PointTracker) -> Outcome:
        self.hold()
        return Outcome(False, message=message, points_executed=tracker.done,
                       max_error=tracker.max_error)


class _Coast:
    """A preempted trajectory played on (on the simulator's clock, from where it was) until
    the next goal takes over or `HANDOVER_WINDOW` passes; the last target then stays."""

    def __init__(self, backend: SimBackend, traj: JointTrajectory, clock: SimClock, tick: float,
                 q0: np.ndarray, w0: float | None) -> None:
        self.backend, self.traj, self.clock, self.tick = backend, traj, clock, tick
        self.q0, self.w0 = q0, w0
        self._stop = threading.Event()
        self._until = time.monotonic() + HANDOVER_WINDOW
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        b = self.backend
        while True:
            self.tick += b.period
            if self._stop.wait(max(0.0, self.tick - time.monotonic())) or \
                    time.monotonic() > self._until:
                return
            m = b.reader.measured()
            if m is None or time.monotonic() - m.t > STALE_AFTER:
                return
            t = self.clock.advance(m, time.monotonic())
            q, w = self.traj.sample(min(t, self.traj.duration), self.q0, self.w0)
            with b._lock:
                if self._stop.is_set():
                    return
                b._send(q, w)
            if t >= self.traj.duration:
                return

    def end(self) -> bool:
        """Stop; whether it was still within its window (the next goal takes over)."""
        with self.backend._lock:
            self._stop.set()
        self._thread.join(timeout=1.0)
        return time.monotonic() <= self._until
