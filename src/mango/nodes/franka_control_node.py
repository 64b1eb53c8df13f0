"""Franka control node: the one door every higher part drives the arm through.

Actions `execute_chunk` (ExecuteChunk: a joint trajectory at the policy rate + gripper widths)
and `execute_motion` (ExecuteMotion: mid-level commands planned through IK), service `halt`.
Every goal is validated before the arm moves (joint names, limits, velocities, finite values,
workspace box; on franka_ros2 also the acceleration and jerk of the spline it becomes) and
refused with the reason; one goal is active at a time (a new goal preempts the old); cancel
of a chunk, `halt`, or preemption stop the motion and hold position within one control
period; a cancelled motion batch stops at the next command boundary. The logic is
`mango.control.ArmController`; this node adapts parameters and messages.

Backends (parameter `backend`, `mango.control.backends`): `sim` streams position targets to
`sim_node` on `joint_command` at `control_rate` and reads `joint_states`; `franka_ros2` sends
the trajectory to `/fr3_arm_controller/follow_joint_trajectory` (control_msgs
FollowJointTrajectory) and the gripper width to the franka gripper's `move`/`grasp` actions
under `gripper_namespace` (`control_msgs`/`franka_msgs` exist only on a system ROS 2 and are
imported lazily); `libfranka` drives the FR3 at `robot_ip` through libfranka itself (franky:
`mango.control.backends.libfranka`) and publishes the robot's joint states on
`joint_states_topic` at `state_rate` with the robot's clock.
Parameters: `backend`, `robot` (config/robots name or file), `control_rate`,
`check_workspace`, `time_factor` (sim: the fastest the simulator's clock may run, in times
real time, that a trajectory follows; sim_node's `real_time_factor` when that is above 1),
`max_start_delay` (s a chunk may start late so its first point, timed by
a sender that saw the arm a moment earlier, stays within the velocity limits from where the
arm is; 0 refuses such a chunk instead), `max_slowdown` (franka_ros2: how many seconds a
goal may be slowed down by to keep the motion the joint trajectory controller plays within
the FR3's acceleration and jerk limits; beyond that it is refused), `joint_states_topic`,
`joint_command_topic`, `arm_action`, `gripper_namespace`, `grasp_force`, `gripper_speed`,
`server_timeout`; libfranka: `robot_ip`, `realtime` (libfranka's real-time kernel check),
`hand`, `home_hand` (home the hand on connecting), `recover` (clear robot errors before a
goal), `dynamics_factor` (of the FR3's velocity, acceleration and jerk limits),
`torque_threshold`, `force_threshold` (collision reflexes, franky's defaults), `state_rate`,
`comm_timeout`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from geometry_msgs.msg import Point, Pose, Quaternion
from rclpy.action import CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from rclpy.subscription import MessageInfo
from sensor_msgs.msg import JointState

from mango.control import (
    ArmController,
    ChunkGoal,
    GoalStatus,
    JointStateReader,
    load_robot,
)
from mango.control.backends import ControlBackend, FrankaRos2Backend, FrankaSettings, SimBackend
from mango.control.backends.franky_arm import FrankyOptions, libfranka_backend
from mango.control.backends.libfranka import LibfrankaSettings, StateStream
from mango.errors import InputError
from mango.nodes.actions import action_server
from mango.nodes.common import (
    Param,
    arrival,
    declare_parameters,
    positive,
    rate_param,
    run_node,
    service_qos,
)
from mango.nodes.franka_actions import FrankaActions
from mango.policy.kinematics import make_kinematics
from mango.ros.motion_msg import command_from_msg
from mango.ros.trajectory_msg import point_positions, point_times
from mango.ros.world_state_msg import stamp_from_seconds
from mango_ros.action import ExecuteChunk, ExecuteMotion
from mango_ros.srv import Halt


def _sim_backend(node: FrankaControlNode, period: float) -> ControlBackend:
    pub = node.create_publisher(JointState, node.params["joint_command_topic"], 10)
    clock = node.get_clock()

    def send(names: Sequence[str], positions: Sequence[float]) -> None:
        msg = JointState(name=list(names), position=list(positions))
        msg.header.stamp = clock.now().to_msg()
        pub.publish(msg)

    return SimBackend(node.robot, period, node.reader, send, node.params["time_factor"])


def _franka_ros2_backend(node: FrankaControlNode, period: float) -> ControlBackend:
    p = node.params
    settings = FrankaSettings(p["arm_action"], p["gripper_namespace"].rstrip("/"),
                              p["grasp_force"], p["gripper_speed"], p["server_timeout"],
                              p["max_slowdown"])
    transport = FrankaActions(node, settings.arm_action, settings.gripper_namespace)
    return FrankaRos2Backend(node.robot, period, node.reader, transport, settings)


def _libfranka_backend(node: FrankaControlNode, period: float) -> ControlBackend:
    p = node.params
    if not p["robot_ip"]:
        raise InputError("backend libfranka needs the robot's address", field="robot_ip")
    settings = LibfrankaSettings(p["grasp_force"], p["gripper_speed"], p["dynamics_factor"],
                                 p["state_rate"], p["comm_timeout"], p["recover"],
                                 max_slowdown=p["max_slowdown"])
    options = FrankyOptions(p["torque_threshold"], p["force_threshold"], p["realtime"], p["hand"],
                            p["home_hand"])
    pub = node.create_publisher(JointState, p["joint_states_topic"], 10)
    clock = node.get_clock()

    def publish(names: Sequence[str], positions: Sequence[float], velocities: Sequence[float],
                stamp: float) -> None:
        if not node.context.ok():  # shutting down: nobody to publish to
            return
        msg = JointState(name=list(names), position=list(positions), velocity=list(velocities))
        msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_from_seconds(stamp)
        pub.publish(msg)

    backend = libfranka_backend(node.robot, period, p["robot_ip"], settings, options,
                                lambda: clock.now().nanoseconds * 1e-9, publish,
                                node.get_logger().info)
    node.stream = backend.stream
    node.reader = backend.reader  # the controller reads the arm where the stream writes it
    return backend


BACKENDS: dict[str, Callable[[FrankaControlNode, float], ControlBackend]] = {
    "sim": _sim_backend, "franka_ros2": _franka_ros2_backend, "libfranka": _libfranka_backend}
# the backends that read the arm from a joint_states topic (libfranka publishes it)
READS_JOINT_STATES = ("sim", "franka_ros2")


class FrankaControlNode(Node):
    def __init__(self) -> None:
        super().__init__("franka_control_node")
        self.params = p = declare_parameters(self, {
            "backend": Param("sim", lambda v: v in BACKENDS, f"one of {', '.join(BACKENDS)}"),
            "robot": "fr3", "control_rate": rate_param(100.0), "check_workspace": True,
            "max_start_delay": Param(0.1, lambda v: 0 <= v <= 1.0, "between 0 and 1 s"),
            "max_slowdown": Param(1.0, lambda v: 0 <= v <= 10.0, "between 0 and 10 s"),
            "time_factor": Param(1.0, lambda v: 1.0 <= v <= 100.0, "between 1 and 100"),
            "joint_states_topic": "joint_states", "joint_command_topic": "joint_command",
            "arm_action": "/fr3_arm_controller/follow_joint_trajectory",
            "gripper_namespace": "/franka_gripper", "grasp_force": positive(20.0, 140.0),
            "gripper_speed": positive(0.1, 1.0), "server_timeout": positive(5.0),
            "robot_ip": "", "realtime": True, "hand": True, "home_hand": False,
            "recover": False,
            "dynamics_factor": Param(0.5, lambda v: 0 < v <= 1.0, "in (0, 1]"),
            "torque_threshold": positive(20.0, 100.0), "force_threshold": positive(30.0, 150.0),
            "state_rate": Param(200.0, lambda v: 100.0 <= v <= 1000.0, "100 to 1000 Hz"),
            "comm_timeout": Param(0.2, lambda v: 0.01 <= v <= 5.0, "0.01 to 5 s")})
        backend = p["backend"]
        self.robot = load_robot(p["robot"])
        rate = p["control_rate"]
        max_start_delay = p["max_start_delay"]
        self.reader = JointStateReader(self.robot.joint_names)
        self.stream: StateStream | None = None  # libfranka: the robot's own state stream
        self.controller = ArmController(
            self.robot, make_kinematics(self.robot), BACKENDS[backend](self, 1.0 / rate),
            1.0 / rate, p["check_workspace"], max_start_delay)
        # A group of its own, mutually exclusive: states are taken one at a time, in order (a
        # reentrant group let a late-running callback store an older state over a newer one,
        # which read as the simulation restarting mid-motion). Best effort, as a state
        # stream should be: a reliable reader holds every later state back until a lost one is
        # resent (a heartbeat, seconds), which on a loaded machine read as the simulation
        # stopping mid-trajectory.
        if backend in READS_JOINT_STATES:
            self.create_subscription(JointState, p["joint_states_topic"],
                                     self._on_joint_state, qos_profile_sensor_data,
                                     callback_group=MutuallyExclusiveCallbackGroup())

        group = ReentrantCallbackGroup()
        for kind, name, cb in ((ExecuteChunk, "execute_chunk", self._execute_chunk),
                               (ExecuteMotion, "execute_motion", self._execute_motion)):
            action_server(self, kind, name, execute_callback=cb,
                         goal_callback=lambda _g: GoalResponse.ACCEPT,
                         cancel_callback=self._on_cancel, callback_group=group)
        self.create_service(Halt, "halt", self._on_halt, callback_group=group,
                            qos_profile=service_qos())
        self.get_logger().info(
            f"backend {backend}, robot {self.robot.name}, control rate {rate:g} Hz")

    def destroy_node(self) -> None:
        if self.stream is not None:
            self.stream.close()
        super().destroy_node()

    def _on_joint_state(self, msg: JointState, info: MessageInfo) -> None:
        self.reader.update(msg.name, msg.position,
                           msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
                           received=arrival(info), velocities=msg.velocity)

    def _on_cancel(self, goal_handle: Any) -> CancelResponse:
        self.controller.goals.cancel(
            goal_handle, at_boundary=isinstance(goal_handle.request, ExecuteMotion.Goal))
        return CancelResponse.ACCEPT

    def _on_halt(self, _req: Halt.Request, response: Halt.Response) -> Halt.Response:
        response.success, response.message = self.controller.halt()
        return response

    def _finish(self, goal_handle: Any, result: Any, status: GoalStatus, message: str) -> Any:
        result.status, result.message = getattr(result, f"STATUS_{status.name}"), message
        if status == GoalStatus.SUCCEEDED:
            goal_handle.succeed()
        elif goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        if status == GoalStatus.REJECTED:
            self.get_logger().warning(f"goal rejected: {message}")
        return result

    def _execute_chunk(self, goal_handle: Any) -> ExecuteChunk.Result:
        goals = self.controller.goals
        run = goals.begin(goal_handle)
        try:
            traj = goal_handle.request.trajectory
            goal = ChunkGoal(traj.joint_names, point_times(traj), point_positions(traj),
                             goal_handle.request.gripper_widths)

            def feedback(i: int, err: float) -> None:
                goal_handle.publish_feedback(ExecuteChunk.Feedback(point_index=i, joint_error=err))

            def late(note: str) -> None:
                self.get_logger().info(f"chunk {note}", throttle_duration_sec=5.0)

            out = self.controller.run_chunk(run, goal, feedback, late)
            result = ExecuteChunk.Result(points_executed=out.points_executed,
                                         max_joint_error=out.max_error)
            if out.final is not None:
                result.final_positions = out.final.q.tolist()
                result.final_gripper_width = (out.final.width if out.final.width is not None
                                              else float("nan"))
            return self._finish(goal_handle, result, out.status, out.message)
        finally:
            goals.end(run)

    def _execute_motion(self, goal_handle: Any) -> ExecuteMotion.Result:
        goals = self.controller.goals
        run = goals.begin(goal_handle)
        try:
            def feedback(i: int, pose: tuple[np.ndarray, np.ndarray]) -> None:
                goal_handle.publish_feedback(ExecuteMotion.Feedback(
                    command_index=i, current_pose=_pose_msg(*pose)))

            out = self.controller.run_motion(run, lambda: [
                command_from_msg(i, c) for i, c in enumerate(goal_handle.request.commands)],
                feedback)
            result = ExecuteMotion.Result(
                commands_executed=out.commands_executed,
                measured_poses=[_pose_msg(*pose) for pose in out.poses],
                measured_gripper_widths=out.widths)
            return self._finish(goal_handle, result, out.status, out.message)
        finally:
            goals.end(run)


def _pose_msg(p: np.ndarray, quat: np.ndarray) -> Pose:
    return Pose(position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                orientation=Quaternion(w=float(quat[0]), x=float(quat[1]),
                                       y=float(quat[2]), z=float(quat[3])))


def main(args: list[str] | None = None) -> None:
    run_node(FrankaControlNode, args, threads=6)


if __name__ == "__main__":
    main()
