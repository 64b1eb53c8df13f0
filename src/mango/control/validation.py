"""Goal validation: every goal is checked before the arm moves, and a refusal says why.

Checks, in order: joint count and names, finite values, strictly increasing times, joint
position limits, joint velocity limits (between consecutive points, and from the measured
position to the first point), gripper width range, and the hand staying inside the
configured Cartesian workspace box.

The first segment starts from wherever the arm is when the goal arrives, which its sender
could only estimate (the arm drifts, joint states age in transit): a first point a little too
close in time for the velocity limits is reached later instead of refused, by up to
`max_start_delay` seconds; every later point moves by the same delay.

A backend whose controller interpolates splines through the points (the joint trajectory
controller on a real FR3) also has each goal retimed by `fit_limits`: the motion it will
really play must stay within the arm's velocity, acceleration and jerk limits.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mango.control.kinematics import Kinematics
from mango.control.robot import RobotConfig
from mango.control.spline import Extreme, QuinticPath, knot_derivatives
from mango.control.trajectory import JointTrajectory

# Velocity is checked on the commanded points; allow rounding of published times.
VELOCITY_TOLERANCE = 1.001
# Retiming aims at this fraction of the limits: the controller's feedback adds its own
# acceleration on top of the reference it follows.
LIMIT_FRACTION = 0.9
CONTROLLER_RATE = 1000.0  # Hz: franka_ros2's controller_manager update_rate, and the FCI's
MAX_RETIMING_ROUNDS = 40
DERIVATIVES = (("velocity", "rad/s", 1), ("acceleration", "rad/s^2", 2),
               ("jerk", "rad/s^3", 3))


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


def fit_limits(traj: JointTrajectory, robot: RobotConfig, start_q: np.ndarray,
               start_v: np.ndarray | None = None, max_slowdown: float = 1.0) -> JointTrajectory:
    """`traj` with velocities and accelerations at its points (`mango.control.spline`), its
    segments slowed where the motion the controller would play from them exceeds the
    robot's limits (aiming at LIMIT_FRACTION of each); `GoalRejected` when it cannot be made
    to fit by slowing it down by at most `max_slowdown` s in all (a bound in seconds, not a
    ratio: a one-point chunk stepping 0.3 rad in 67 ms needs about 0.4 s more on an FR3).

    Policy chunks start and end at rest in a few 67 ms segments: reaching their speed in
    the first segment, or stopping within the last, needs more than the FR3's 10 rad/s^2, so
    it is those segments that get longer; a chunk slower than the limits keeps its times.
    """
    q0 = np.asarray(start_q, float)
    v0 = np.zeros_like(q0) if start_v is None else np.asarray(start_v, float)
    knots_q = np.vstack([q0, traj.positions])
    t = np.concatenate([[0.0], traj.times])
    limits = [robot.vmax, robot.amax, robot.jmax]
    checked = [i for i, lim in enumerate(limits) if lim is not None]
    budget = float(t[-1]) + max_slowdown
    for _ in range(MAX_RETIMING_ROUNDS):
        v, a = knot_derivatives(t, knots_q, v0)
        a[-1] = 0.0  # come to rest as the controller's hold after the last point does
        path = QuinticPath(t, knots_q, np.vstack([v0, v]), np.vstack([np.zeros_like(q0), a]))
        worst, per_segment = path.worst([lim if lim is not None else np.full_like(q0, np.inf)
                                         for lim in limits], CONTROLLER_RATE)
        # slow each segment by what its worst derivative needs (time scales the k-th
        # derivative by 1/s^k), a little more so the rounds converge
        need = np.ones(len(t) - 1)
        for i in checked:
            need = np.maximum(need, (per_segment[i] / LIMIT_FRACTION) ** (1.0 / (i + 1)))
        if np.all(need <= 1.0):
            break
        h = np.diff(t) * np.minimum(np.where(need > 1.0, need * 1.02, 1.0), 1.5)
        if float(np.sum(h)) > budget:
            break
        t = np.concatenate([[0.0], np.cumsum(h)])
    over = [(worst[i], i) for i in checked if worst[i].ratio > 1.0]
    if over:
        x, i = max(over, key=lambda e: e[0].ratio)
        raise GoalRejected(_limit_reason(x, i, robot, max_slowdown))
    return JointTrajectory(traj.joint_names, t[1:], traj.positions, traj.gripper, v, a)


def _limit_reason(x: Extreme, i: int, robot: RobotConfig, max_slowdown: float) -> str:
    what, unit, _ = DERIVATIVES[i]
    return (f"point {x.segment}, {robot.joint_names[x.joint]}: {what} {abs(x.value):.2f} "
            f"{unit} on the way from {'the measured position' if x.segment == 0 else 'point '}"
            f"{'' if x.segment == 0 else x.segment - 1} exceeds the limit {x.limit:g} {unit}, "
            f"even slowed down by the {max_slowdown:g} s allowed (max_slowdown)")
