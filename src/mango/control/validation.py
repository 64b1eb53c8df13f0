"""Goal validation: every goal is checked before the arm moves, and a refusal says why.

Checks, in order: joint count and names, finite values, strictly increasing times, joint
position limits, joint velocity limits (between consecutive points, and from the measured
position to the first point), gripper width range, and the hand staying inside the
configured Cartesian workspace box.

The first segment starts from wherever the arm is when the goal arrives, which its sender
could only estimate (the arm drifts, joint states age in transit): a first point a little too
close in time for the velocity limits is reached later instead of refused, by up to
`max_start_delay` seconds; every later point moves by the same delay.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mango.control.kinematics import Kinematics
from mango.control.robot import RobotConfig
from mango.control.trajectory import JointTrajectory

# Velocity is checked on the commanded points; allow rounding of published times.
VELOCITY_TOLERANCE = 1.001


class GoalRejected(ValueError):
    """A goal that must not be executed; `reason` is one line for the action result."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def validate_trajectory(
    joint_names: Sequence[str],
    times: Sequence[float],
    positions: Sequence[Sequence[float]],
    gripper: Sequence[float] | None,
    robot: RobotConfig,
    current_q: np.ndarray | None,
    kinematics: Kinematics | None = None,
    max_start_delay: float = 0.0,
) -> JointTrajectory:
    """A validated trajectory in the robot's joint order, or `GoalRejected` with the reason.

    Its times are the goal's, later by the start delay (see the module docstring).
    """
    names = list(joint_names)
    if len(names) != len(robot.joint_names) or set(names) != set(robot.joint_names):
        missing = [n for n in robot.joint_names if n not in names]
        extra = [n for n in names if n not in robot.joint_names]
        detail = []
        if missing:
            detail.append(f"missing {missing}")
        if extra:
            detail.append(f"unknown {extra}")
        if len(set(names)) != len(names):
            detail.append("duplicate names")
        raise GoalRejected(f"joint names must be the {len(robot.joint_names)} arm joints "
                           f"{list(robot.joint_names)}: {', '.join(detail) or 'wrong count'}")
    n = len(times)
    if n == 0:
        raise GoalRejected("the trajectory has no points")
    try:
        pos = np.asarray(positions, float)
    except ValueError:
        raise GoalRejected("every point needs one position per joint") from None
    if pos.shape != (n, len(names)):
        raise GoalRejected(f"every point needs {len(names)} positions "
                           f"(got shape {list(pos.shape)} for {n} points)")
    order = [names.index(j) for j in robot.joint_names]
    pos = pos[:, order]
    t = np.asarray(times, float)
    grip = None if gripper is None or len(gripper) == 0 else np.asarray(gripper, float)
    if grip is not None and grip.shape != (n,):
        raise GoalRejected(f"gripper_widths must be empty or have one value per point "
                           f"({n}), got {len(grip)}")

    for k in range(n):
        if not np.isfinite(t[k]):
            raise GoalRejected(f"point {k}: time_from_start is not finite")
        for j, name in enumerate(robot.joint_names):
            if not np.isfinite(pos[k, j]):
                raise GoalRejected(f"point {k}, {name}: position is not finite ({pos[k, j]})")
        if grip is not None and not np.isfinite(grip[k]):
            raise GoalRejected(f"point {k}: gripper width is not finite ({grip[k]})")
    if t[0] <= 0 or np.any(np.diff(t) <= 0):
        raise GoalRejected("time_from_start must be positive and strictly increasing")

    lo, hi = robot.lower, robot.upper
    for k in range(n):
        for j, name in enumerate(robot.joint_names):
            if not lo[j] <= pos[k, j] <= hi[j]:
                raise GoalRejected(
                    f"point {k}, {name}: position {pos[k, j]:.4f} rad beyond its limits "
                    f"[{lo[j]:.4f}, {hi[j]:.4f}]")
    if current_q is None:
        raise GoalRejected("no joint state received yet: cannot check the first segment")
    vmax = robot.vmax * VELOCITY_TOLERANCE
    first = np.abs(pos[0] - np.asarray(current_q, float))
    reach = float(np.max(first / robot.vmax))  # the least time to the first point
    delay = reach - t[0] if reach > t[0] * VELOCITY_TOLERANCE else 0.0
    if delay > max_start_delay:
        j = int(np.argmax(first / robot.vmax))
        allowed = (f"; slowing down to the limit would delay the chunk by {delay:.3f} s, more "
                   f"than the {max_start_delay:g} s allowed (max_start_delay)"
                   if max_start_delay > 0 else "")
        raise GoalRejected(
            f"point 0, {robot.joint_names[j]}: velocity {first[j] / t[0]:.3f} rad/s from "
            f"measured position exceeds the limit {robot.vmax[j]:.3f} rad/s{allowed}")
    t = t + delay
    vel = np.abs(np.diff(pos, axis=0)) / np.diff(t)[:, None]
    for k in range(1, n):
        for j, name in enumerate(robot.joint_names):
            if vel[k - 1, j] > vmax[j]:
                raise GoalRejected(
                    f"point {k}, {name}: velocity {vel[k - 1, j]:.3f} rad/s from point {k - 1} "
                    f"exceeds the limit {robot.vmax[j]:.3f} rad/s")
    if grip is not None:
        for k in range(n):
            if not 0.0 <= grip[k] <= robot.gripper_max_width + 1e-9:
                raise GoalRejected(f"point {k}: gripper width {grip[k]:.4f} m outside "
                                   f"[0, {robot.gripper_max_width}]")
    if kinematics is not None:
        check_workspace(pos, robot, kinematics)
    return JointTrajectory(tuple(robot.joint_names), t, pos, grip)


def check_workspace(positions: np.ndarray, robot: RobotConfig, kinematics: Kinematics) -> None:
    """Raise `GoalRejected` for the first point whose hand lies outside the workspace box."""
    box = robot.workspace
    for k, q in enumerate(positions):
        p, _ = kinematics.fk(q)
        if not box.contains(p):
            raise GoalRejected(
                f"point {k}: hand at {np.round(p, 3).tolist()} m outside the workspace box "
                f"min {list(box.min)} max {list(box.max)}")
