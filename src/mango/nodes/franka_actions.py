"""The franka_ros2 backend's transport: its plain goals as control_msgs/franka_msgs actions.

`mango.control.backends.franka_ros2` decides what to send and what a result means; this
sends it with rclpy action clients and hands results back as plain data. control_msgs and
franka_msgs exist only on a system ROS 2 with franka_ros2, so they are imported here, when
the backend is chosen, and their absence is one clear error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from builtin_interfaces.msg import Duration
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from mango.control.backends.franka_ros2 import ArmResult, GripperResult, TrajectoryGoal
from mango.control.gripper import GripperCommand, GripperKind
from mango.errors import InputError
from mango.nodes.actions import ActionClient


class _Pending:
    """An rclpy future whose result is converted to plain data when read."""

    def __init__(self, future: Any, convert: Callable[[Any], Any]) -> None:
        self._future, self._convert = future, convert

    def done(self) -> bool:
        return self._future.done()

    def result(self) -> Any:
        return self._convert(self._future.result())


class _SentGoal:
    """An rclpy client goal handle; `result()` asks for the result (once per call)."""

    def __init__(self, handle: Any, convert: Callable[[Any], Any]) -> None:
        self._handle, self._convert = handle, convert

    @property
    def accepted(self) -> bool:
        return self._handle.accepted

    def result(self) -> _Pending:
        return _Pending(self._handle.get_result_async(), lambda r: self._convert(r.result))

    def cancel(self) -> None:
        self._handle.cancel_goal_async()


def _arm_result(r: Any) -> ArmResult:
    return ArmResult(r.error_code, r.error_string)


def _gripper_result(r: Any) -> GripperResult:
    return GripperResult(r.success, r.error)


class FrankaActions:
    """FollowJointTrajectory on `arm_action`; Move and Grasp under `gripper_namespace`."""

    def __init__(self, node: Node, arm_action: str, gripper_namespace: str) -> None:
        try:
            from control_msgs.action import FollowJointTrajectory
            from franka_msgs.action import Grasp, Move
        except ImportError as exc:
            raise InputError(
                f"backend franka_ros2 needs control_msgs and franka_msgs from a system ROS 2 "
                f"with franka_ros2 ({exc.name} is missing); use backend sim otherwise",
                field="backend") from None
        self.FJT, self.Move, self.Grasp = FollowJointTrajectory, Move, Grasp
        group = ReentrantCallbackGroup()
        self.arm = ActionClient(node, FollowJointTrajectory, arm_action, callback_group=group)
        self.gripper = {
            "move": ActionClient(node, Move, f"{gripper_namespace}/move", callback_group=group),
            "grasp": ActionClient(node, Grasp, f"{gripper_namespace}/grasp",
                                  callback_group=group),
        }

    def wait_for_arm(self, timeout: float) -> bool:
        return self.arm.wait_for_server(timeout_sec=timeout)

    def send_arm_goal(self, goal: TrajectoryGoal) -> _Pending:
        msg = self.FJT.Goal()
        msg.trajectory = JointTrajectory(joint_names=list(goal.joint_names))
        for p in goal.points:
            msg.trajectory.points.append(JointTrajectoryPoint(
                positions=list(p.positions), velocities=list(p.velocities),
                accelerations=list(p.accelerations),
                time_from_start=Duration(sec=p.sec, nanosec=p.nanosec)))
        sec, nanosec = goal.goal_time_tolerance
        msg.goal_time_tolerance = Duration(sec=sec, nanosec=nanosec)
        return _Pending(self.arm.send_goal_async(msg), lambda h: _SentGoal(h, _arm_result))

    def wait_for_gripper(self, kind: GripperKind, timeout: float) -> bool:
        return self.gripper[kind].wait_for_server(timeout_sec=timeout)

    def send_gripper_goal(self, command: GripperCommand) -> _Pending:
        if command.kind == "grasp":
            msg = self.Grasp.Goal(width=command.width, speed=command.speed, force=command.force)
            msg.epsilon.inner = command.epsilon_inner
            msg.epsilon.outer = command.epsilon_outer
        else:
            msg = self.Move.Goal(width=command.width, speed=command.speed)
        return _Pending(self.gripper[command.kind].send_goal_async(msg),
                        lambda h: _SentGoal(h, _gripper_result))
