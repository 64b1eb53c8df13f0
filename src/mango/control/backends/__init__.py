"""Arm backends behind one protocol (`ControlBackend`): `sim` (sim_node's joint commands) and
`franka_ros2` (FollowJointTrajectory + franka gripper actions). Pure logic: each talks to the
outside through a port its node supplies."""

from mango.control.backends.base import ControlBackend
from mango.control.backends.franka_ros2 import FrankaRos2Backend, FrankaSettings, FrankaTransport
from mango.control.backends.sim import JointCommandSink, SimBackend

__all__ = [
    "ControlBackend",
    "FrankaRos2Backend",
    "FrankaSettings",
    "FrankaTransport",
    "JointCommandSink",
    "SimBackend",
]
