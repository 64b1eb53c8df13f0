"""The arm controller behind the control node: chunk and motion goals run on a backend.

Every goal is validated before the arm moves and refused with the reason; one goal is active
at a time (`GoalSlot`); a cancelled chunk, a halt or a preemption stops the motion and holds
position within one control period; a cancelled motion batch stops at its next command
boundary. Results are plain data; the node turns them into action results.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from mango.control.backends.base import ControlBackend
from mango.control.goals import GoalRun, GoalSlot, GoalStatus
from mango.control.joint_state import NO_RECENT_STATE, STALE_AFTER, Measured
from mango.control.kinematics import Kinematics
from mango.control.motion import MotionCommand, MotionPlanner
from mango.control.robot import RobotConfig
from mango.control.tracking import PointFeedback
from mango.control.validation import GoalRejected, validate_trajectory

SETTLE_TOL = 0.003  # rad: a motion command counts as done when every joint is this close
SETTLE_TIMEOUT = 1.0  # s to wait for that before measuring anyway
MEASURED_TIMEOUT = 10.0  # s a goal waits for a recent joint state before it is refused
HandPose = tuple[np.ndarray, np.ndarray]  # hand position (m) and orientation [w, x, y, z]
CommandFeedback = Callable[[int, HandPose], None]  # (command index, measured hand pose)


@dataclass(frozen=True)
class ChunkGoal:
    """An ExecuteChunk goal: timed joint targets and optional gripper widths."""

    joint_names: Sequence[str]
    times: Sequence[float]
    positions: Sequence[Sequence[float]]
    gripper_widths: Sequence[float]


@dataclass
class ChunkResult:
    status: GoalStatus
    message: str
    points_executed: int = 0
    max_error: float = 0.0
    final: Measured | None = None  # the measured state when the goal ended


@dataclass
class MotionResult:
    status: GoalStatus
    message: str
    commands_executed: int = 0
    poses: list[HandPose] = field(default_factory=list)  # measured after each executed command
    widths: list[float] = field(default_factory=list)  # nan where the width is unknown


class ArmController:
    """Runs goals for one robot on one backend, `period` s being the control period;
    `max_start_delay` as in `validate_trajectory`; `check_workspace` False skips the box."""

    def __init__(self, robot: RobotConfig, kinematics: Kinematics, backend: ControlBackend,
                 period: float, check_workspace: bool = True,
                 max_start_delay: float = 0.1) -> None:
        self.robot, self.kinematics, self.backend, self.period = robot, kinematics, backend, \
            period
        self.check_workspace, self.max_start_delay = check_workspace, max_start_delay
        self.planner = MotionPlanner(robot, kinematics)
        self.goals = GoalSlot()

    def halt(self) -> tuple[bool, str]:
        """Stop the active goal (or whatever moves) and hold; (a position is known, message)."""
        if self.goals.halt_active("halted by the halt service"):
            message = "active goal stopped; holding position"
        else:
            self.backend.hold()
            message = "no active goal; holding position"
        if self.backend.measured() is None:
            return False, "no joint state received: cannot hold a known position"
        return True, message

    def wait_measured(self, timeout: float = MEASURED_TIMEOUT) -> Measured | None:
        """The latest joint state, waiting a little for the first one after start-up (or
        after a pause: a goal is never planned from a position older than STALE_AFTER)."""
        deadline = time.monotonic() + timeout
        while True:
            m = self.backend.measured()
            if m is not None and time.monotonic() - m.t <= STALE_AFTER:
                return m
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    # ------------------------------------------------------------------ chunks

    def run_chunk(self, run: GoalRun, goal: ChunkGoal, on_point: PointFeedback,
                  on_start: Callable[[str], None] = lambda _note: None) -> ChunkResult:
        """Validate and execute one chunk; `on_start` hears a late start before the arm
        moves."""
        result = self._chunk(run, goal, on_point, on_start)
        result.final = self.backend.measured()
        return result

    def _chunk(self, run: GoalRun, goal: ChunkGoal, on_point: PointFeedback,
               on_start: Callable[[str], None]) -> ChunkResult:
        if run.stop.is_set():
            if run.stop_status is not GoalStatus.PREEMPTED:
                self.backend.hold()  # a halt may find a preempted goal's motion still going
            return ChunkResult(run.stop_status, run.reason)
        m = self.wait_measured()
        if m is None:
            return ChunkResult(GoalStatus.REJECTED,
                               f"{NO_RECENT_STATE}: cannot check the first segment")
        try:
            traj = validate_trajectory(
                goal.joint_names, goal.times, goal.positions, list(goal.gripper_widths),
                self.robot, m.q, self.kinematics if self.check_workspace else None,
                self.max_start_delay)
            played = self.backend.prepare(traj, m)
        except GoalRejected as exc:
            return ChunkResult(GoalStatus.REJECTED, exc.reason)
        delay = float(traj.times[0]) - goal.times[0]
        late = (f"started {delay * 1e3:.0f} ms late to keep the first point within the "
                "velocity limits") if delay > 0 else ""
        if late:  # the arm is not where its sender last saw it: worth knowing
            on_start(late)
        if played.duration > traj.duration + 1e-6:
            late = ", ".join(filter(None, [late, (
                f"slowed from {traj.duration:.2f} s to keep within the acceleration and jerk "
                "limits")]))
        traj = played
        out = self.backend.execute(traj, run, on_point)
        if out.stopped:
            status, message = run.stop_status, out.message
        elif not out.ok:
            status, message = GoalStatus.FAILED, out.message
        else:
            status = GoalStatus.SUCCEEDED
            message = f"{len(traj)} points in {traj.duration:.2f} s" + (
                f", {late}" if late else "")
        return ChunkResult(status, message, out.points_executed, out.max_error)

    # ------------------------------------------------------------------ motion batches

    def run_motion(self, run: GoalRun, commands: Callable[[], Sequence[MotionCommand]],
                   on_command: CommandFeedback) -> MotionResult:
        """Plan the whole batch (refusing it if any command cannot be planned), then execute
        each command from the measured state. `commands` reads the goal's commands (it may
        raise `GoalRejected`) once the goal's turn has come."""
        if run.stop.is_set():
            return MotionResult(run.stop_status, run.reason)
        try:
            batch = list(commands())
            if not batch:
                raise GoalRejected("no commands")
            m = self.wait_measured()
            if m is None:
                raise GoalRejected(NO_RECENT_STATE)
            # the whole batch, before moving; a cancel or preemption stops the planning too
            self.planner.plan_all(batch, m.q, self._width(m), stop=run.stop.is_set)
        except GoalRejected as exc:
            if run.stop.is_set():
                return MotionResult(run.stop_status, f"{run.reason} while planning")
            return MotionResult(GoalStatus.REJECTED, exc.reason)
        result = MotionResult(GoalStatus.SUCCEEDED, "")
        for i, cmd in enumerate(batch):
            if run.cancel_at_boundary:
                run.halt("cancelled")
            if run.stop.is_set():
                break
            m = self.backend.measured()
            assert m is not None
            try:  # from the measured state: relative moves start where the hand really is
                planned = self.planner.plan(cmd, m.q, self._width(m))
                played = self.backend.prepare(planned.trajectory, m)
            except GoalRejected as exc:
                return self._failed(result, f"command {i} ({cmd.describe()}): {exc.reason}")
            out = self.backend.execute(played, run, lambda _k, _e: None)
            if out.ok:  # measure once the arm has settled on the command's end
                self._settle(run, planned.end_q)
            m = self.backend.measured()
            if not out.ok and not out.stopped:
                return self._failed(result, f"command {i} ({cmd.describe()}): {out.message}")
            if out.stopped:
                break
            assert m is not None
            result.commands_executed = i + 1
            result.poses.append(self.kinematics.fk(m.q))
            result.widths.append(m.width if m.width is not None else float("nan"))
            on_command(i, result.poses[-1])
        if run.stop.is_set():
            result.status = run.stop_status
            result.message = f"{run.reason} after {result.commands_executed} command(s)"
        else:
            result.message = f"{result.commands_executed} command(s) executed"
        return result

    def _width(self, m: Measured) -> float:
        return m.width if m.width is not None else self.robot.gripper_max_width

    def _settle(self, run: GoalRun, end_q: np.ndarray) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT
        while (np.max(np.abs(self.backend.measured().q - end_q)) > SETTLE_TOL
               and time.monotonic() < deadline and not run.stop.wait(self.period)):
            pass

    @staticmethod
    def _failed(result: MotionResult, message: str) -> MotionResult:
        result.status, result.message = GoalStatus.FAILED, message
        return result
