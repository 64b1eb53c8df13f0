"""Robot control core (no ROS, no simulator): robot limits as data, goal validation,
trajectories, mid-level motion planning through IK behind the `Kinematics` protocol, the
measured joint state, goal bookkeeping and the arm controller that runs goals on a backend
(`mango.control.backends`)."""

from mango.control.controller import ArmController, ChunkGoal, ChunkResult, MotionResult
from mango.control.goals import GoalRun, GoalSlot, GoalStatus, Outcome
from mango.control.joint_state import JointStateReader, Measured
from mango.control.kinematics import FR3Kinematics, Kinematics
from mango.control.motion import MOTION_KINDS, MotionCommand, MotionPlanner, PlannedMotion
from mango.control.robot import RobotConfig, WorkspaceBox, load_robot
from mango.control.trajectory import JointTrajectory, chunk_to_trajectory
from mango.control.validation import GoalRejected, check_workspace, validate_trajectory

__all__ = [
    "MOTION_KINDS",
    "ArmController",
    "ChunkGoal",
    "ChunkResult",
    "FR3Kinematics",
    "GoalRejected",
    "GoalRun",
    "GoalSlot",
    "GoalStatus",
    "JointStateReader",
    "JointTrajectory",
    "Kinematics",
    "Measured",
    "MotionCommand",
    "MotionPlanner",
    "MotionResult",
    "Outcome",
    "PlannedMotion",
    "RobotConfig",
    "WorkspaceBox",
    "check_workspace",
    "chunk_to_trajectory",
    "load_robot",
    "validate_trajectory",
]
