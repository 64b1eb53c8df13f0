"""Robot control core (no ROS, no simulator): robot limits as data, goal validation,
trajectories, mid-level motion planning through IK behind the `Kinematics` protocol."""

from mango.control.kinematics import FR3Kinematics, Kinematics
from mango.control.motion import MOTION_KINDS, MotionCommand, MotionPlanner, PlannedMotion
from mango.control.robot import RobotConfig, WorkspaceBox, load_robot
from mango.control.trajectory import JointTrajectory, chunk_to_trajectory
from mango.control.validation import GoalRejected, check_workspace, validate_trajectory

__all__ = [
    "MOTION_KINDS",
    "FR3Kinematics",
    "GoalRejected",
    "JointTrajectory",
    "Kinematics",
    "MotionCommand",
    "MotionPlanner",
    "PlannedMotion",
    "RobotConfig",
    "WorkspaceBox",
    "check_workspace",
    "chunk_to_trajectory",
    "load_robot",
    "validate_trajectory",
]
