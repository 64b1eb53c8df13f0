"""Joint trajectories between the core (`mango.control.JointTrajectory`) and
`trajectory_msgs/JointTrajectory`: what the VLA node and the Python client send as
`ExecuteChunk` goals, what the control node validates and forwards to franka_ros2."""

from __future__ import annotations

from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory as JointTrajectoryMsg
from trajectory_msgs.msg import JointTrajectoryPoint

from mango.control.trajectory import JointTrajectory
from mango_ros.action import ExecuteChunk


def duration_msg(seconds: float) -> Duration:
    """A `Duration` rounded to the nearest nanosecond (truncating can lose one)."""
    sec, nsec = divmod(round(seconds * 1e9), 10**9)
    return Duration(sec=int(sec), nanosec=int(nsec))


def seconds_of(duration: Duration) -> float:
    return duration.sec + duration.nanosec * 1e-9


def trajectory_to_msg(traj: JointTrajectory) -> JointTrajectoryMsg:
    """The arm part of a core trajectory (gripper widths travel beside it)."""
    msg = JointTrajectoryMsg(joint_names=list(traj.joint_names))
    for t, q in zip(traj.times, traj.positions, strict=True):
        msg.points.append(JointTrajectoryPoint(positions=[float(x) for x in q],
                                               time_from_start=duration_msg(float(t))))
    return msg


def point_times(msg: JointTrajectoryMsg) -> list[float]:
    return [seconds_of(p.time_from_start) for p in msg.points]


def point_positions(msg: JointTrajectoryMsg) -> list[list[float]]:
    return [list(p.positions) for p in msg.points]


def chunk_goal(traj: JointTrajectory) -> ExecuteChunk.Goal:
    """An `ExecuteChunk` goal: the trajectory and, when it has them, its gripper widths."""
    goal = ExecuteChunk.Goal()
    goal.trajectory = trajectory_to_msg(traj)
    goal.gripper_widths = [] if traj.gripper is None else [float(w) for w in traj.gripper]
    return goal
