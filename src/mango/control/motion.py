"""Mid-level motion commands (move by millimetres, rotate by degrees, gripper, wait, home) as
joint trajectories.

Each command becomes a Cartesian path of the hand in the robot base frame, solved waypoint by
waypoint with IK seeded by the previous solution (so the arm follows one continuous branch),
then timed so no joint exceeds a fraction of its velocity limit. A batch is planned completely
before anything moves: an unreachable third command rejects the goal up front.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mango.control.kinematics import Kinematics
from mango.control.robot import RobotConfig
from mango.control.trajectory import JointTrajectory
from mango.control.validation import GoalRejected, validate_trajectory
from mango.errors import UnreachableError
from mango.geometry import axis_angle_to_mat, mat_to_quat, quat_to_mat
from mango.ik import BRANCH_CAP

MotionKind = Literal["move", "rotate", "gripper_open", "gripper_close", "gripper_width", "wait",
                     "home"]
MOTION_KINDS: tuple[str, ...] = ("move", "rotate", "gripper_open", "gripper_close",
                                 "gripper_width", "wait", "home")
MAX_WAIT = 600.0  # s one wait command may last (longer: send another batch)
MAX_COMMANDS = 100  # commands one batch may hold


def _unit(v: Sequence[float], name: str) -> np.ndarray:
    """`v` normalised; scaled by its largest component first, so (1e308, 1e308, 0) does not
    overflow into a zero-length or infinite norm."""
    a = np.asarray(v, float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise GoalRejected(f"{name} must be a finite 3-vector")
    big = float(np.max(np.abs(a)))
    if big == 0.0 or big < 1e-9:
        raise GoalRejected(f"{name} must be a non-zero finite vector")
    a = a / big
    return a / float(np.linalg.norm(a))


@dataclass(frozen=True)
class MotionCommand:
    """One mid-level command in the base frame (the fields its kind does not use are ignored)."""

    kind: MotionKind
    direction: tuple[float, float, float] = (0.0, 0.0, 0.0)
    distance_mm: float = 0.0
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    angle_deg: float = 0.0
    width: float = 0.0
    duration: float = 0.0

    def describe(self) -> str:
        if self.kind == "move":
            return f"move {self.distance_mm:g} mm along {list(self.direction)}"
        if self.kind == "rotate":
            return f"rotate {self.angle_deg:g} deg about {list(self.axis)}"
        if self.kind == "gripper_width":
            return f"gripper width {self.width:g} m"
        if self.kind == "wait":
            return f"wait {self.duration:g} s"
        return self.kind.replace("_", " ")


@dataclass(frozen=True)
class PlannedMotion:
    command: MotionCommand
    trajectory: JointTrajectory
    end_q: np.ndarray
    end_width: float


@dataclass
class MotionPlanner:
    """Turns commands into trajectories for one robot and its kinematics."""

    robot: RobotConfig
    kinematics: Kinematics
    linear_speed: float = 0.1  # m/s
    angular_speed: float = 0.6  # rad/s
    gripper_time: float = 0.8  # s for an open/close
    waypoint_rate: float = 15.0  # Hz
    velocity_fraction: float = 0.5  # of each joint's limit

    def plan_all(self, commands: Sequence[MotionCommand], q: np.ndarray, width: float,
                 stop: Callable[[], bool] = lambda: False) -> list[PlannedMotion]:
        """Plan every command from the measured state; `GoalRejected` names the command.
        `stop` is asked between commands, so a cancelled batch stops planning too."""
        if len(commands) > MAX_COMMANDS:
            raise GoalRejected(f"{len(commands)} commands in one batch (at most {MAX_COMMANDS})")
        out: list[PlannedMotion] = []
        for i, cmd in enumerate(commands):
            if stop():
                raise GoalRejected(f"stopped while planning command {i}")
            try:
                planned = self.plan(cmd, q, width)
            except GoalRejected as exc:
                raise GoalRejected(f"command {i} ({cmd.describe()}): {exc.reason}") from None
            out.append(planned)
            q, width = planned.end_q, planned.end_width
        return out

    def plan(self, cmd: MotionCommand, q: np.ndarray, width: float) -> PlannedMotion:
        # Magnitudes are checked before any planning: the work a command may cause is bounded
        # by the workspace (a move), one turn (a rotation) and MAX_WAIT (a wait).
        q = np.asarray(q, float)
        if cmd.kind == "move":
            d = _unit(cmd.direction, "direction")
            # Ten times the workspace's diagonal: far beyond any real move (the workspace box
            # refuses those with their target), near enough to keep the arithmetic finite.
            reach = 10 * self.robot.workspace.diagonal * 1000.0
            if not math.isfinite(cmd.distance_mm) or abs(cmd.distance_mm) > reach:
                raise GoalRejected(f"distance_mm must be finite and at most {reach:.0f} mm")
            return self._cartesian(cmd, q, width, d * cmd.distance_mm / 1000.0, None)
        if cmd.kind == "rotate":
            a = _unit(cmd.axis, "axis")
            if not math.isfinite(cmd.angle_deg) or abs(cmd.angle_deg) > 360.0:
                raise GoalRejected("angle_deg must be finite and at most one turn (360)")
            return self._cartesian(cmd, q, width, np.zeros(3), a * math.radians(cmd.angle_deg))
        if cmd.kind in ("gripper_open", "gripper_close", "gripper_width"):
            target = {"gripper_open": self.robot.gripper_max_width, "gripper_close": 0.0}.get(
                cmd.kind, cmd.width)
            if not math.isfinite(target) or not 0.0 <= target <= self.robot.gripper_max_width:
                raise GoalRejected(f"gripper width {target} m outside "
                                   f"[0, {self.robot.gripper_max_width}]")
            return self._hold(cmd, q, width, self.gripper_time, target)
        if cmd.kind == "wait":
            if not math.isfinite(cmd.duration) or not 0 <= cmd.duration <= MAX_WAIT:
                raise GoalRejected(f"wait duration must be between 0 and {MAX_WAIT:g} s")
            return self._hold(cmd, q, width, max(cmd.duration, 1.0 / self.waypoint_rate), width)
        if cmd.kind == "home":
            return self._joint_move(cmd, q, width, np.asarray(self.robot.home, float))
        raise GoalRejected(f"unknown command kind {cmd.kind!r}")

    # ------------------------------------------------------------------ kinds

    def _hold(self, cmd: MotionCommand, q: np.ndarray, width: float, duration: float,
              target_width: float) -> PlannedMotion:
        n = max(1, math.ceil(duration * self.waypoint_rate))
        times = np.arange(1, n + 1) * (duration / n)
        pos = np.tile(q, (n, 1))
        grip = np.full(n, target_width)
        traj = validate_trajectory(self.robot.joint_names, times, pos, grip, self.robot, q)
        return PlannedMotion(cmd, traj, q, target_width)

    def _cartesian(self, cmd: MotionCommand, q: np.ndarray, width: float, offset: np.ndarray,
                   rotvec: np.ndarray | None) -> PlannedMotion:
        p0, quat0 = self.kinematics.fk(q)
        r0 = quat_to_mat(quat0)
        dist = float(np.linalg.norm(offset))
        ang = float(np.linalg.norm(rotvec)) if rotvec is not None else 0.0
        duration = max(dist / self.linear_speed, ang / self.angular_speed, 0.2)
        n = max(2, math.ceil(duration * self.waypoint_rate))
        end = p0 + offset
        if not self.robot.workspace.contains(end):
            raise GoalRejected(f"target {np.round(end, 3).tolist()} m outside the workspace box "
                               f"min {list(self.robot.workspace.min)} "
                               f"max {list(self.robot.workspace.max)}")
        qs: list[np.ndarray] = []
        seed = q
        for i in range(1, n + 1):
            s = 0.5 - 0.5 * math.cos(math.pi * i / n)  # ease in/out
            rot = r0 if rotvec is None else axis_angle_to_mat(rotvec * s) @ r0
            try:
                # capped: an answer on another branch is refused, so the ladder's later
                # starts get their chance to find one on the seed's branch
                qi = self.kinematics.ik(p0 + s * offset, mat_to_quat(rot), seed,
                                        max_jump=BRANCH_CAP)
            except UnreachableError as exc:
                raise GoalRejected(f"waypoint {i} of {n}: {exc}") from None
            qs.append(qi)
            seed = qi
        return self._timed(cmd, q, width, np.asarray(qs), duration)

    def _joint_move(self, cmd: MotionCommand, q: np.ndarray, width: float,
                    goal: np.ndarray) -> PlannedMotion:
        delta = goal - q
        duration = max(float(np.max(np.abs(delta) / (self.velocity_fraction * self.robot.vmax)))
                       * 1.5, 0.5)
        n = max(2, math.ceil(duration * self.waypoint_rate))
        s = 0.5 - 0.5 * np.cos(np.pi * np.arange(1, n + 1) / n)
        return self._timed(cmd, q, width, q + s[:, None] * delta, duration)

    def _timed(self, cmd: MotionCommand, q: np.ndarray, width: float, qs: np.ndarray,
               duration: float) -> PlannedMotion:
        n = len(qs)
        times = np.arange(1, n + 1) * (duration / n)
        # stretch time until every segment respects the velocity budget
        prev = np.vstack([q, qs[:-1]])
        speed = np.abs(qs - prev) / (duration / n)
        ratio = float(np.max(speed / (self.velocity_fraction * self.robot.vmax)))
        if ratio > 1.0:
            times = times * ratio
        traj = validate_trajectory(self.robot.joint_names, times, qs, np.full(n, width),
                                   self.robot, q, self.kinematics)
        return PlannedMotion(cmd, traj, qs[-1].copy(), width)
