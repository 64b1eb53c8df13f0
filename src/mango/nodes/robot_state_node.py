"""robot_state_publisher for this stack: `/robot_description`, `/tf` and `/tf_static` from
the measured joint states, so rviz's RobotModel and TF displays and Foxglove's 3D panel
show the arm.

Follows ros/robot_state_publisher (src/robot_state_publisher.cpp): the URDF is published on
`robot_description` once, transient-local depth 1 (late joiners get it, like a latched
topic); every fixed joint goes to `tf_static` once (reliable, transient-local, depth 1:
tf2_ros's StaticBroadcasterQoS); each `joint_states` message (sensor-data QoS) gives one
transform per moving joint on `tf`, stamped with the message's stamp, at most
`publish_frequency` times per second of those stamps (a stamp going backwards, a sim reset,
publishes at once). Mimic joints follow their joint. Unlike tf2_ros's broadcasters, which
always use the absolute `/tf`, the topics are relative, so a stack under a namespace keeps
its transforms to itself; in the root namespace they are `/tf` and `/tf_static`.
Parameters: `robot_description_file` (URDF; default franky-sim's FR3 with absolute mesh
URIs), `joint_states_topic`, `publish_frequency`, `frame_prefix`.
"""

from __future__ import annotations

import math

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from mango.control.robot_state import RobotState, load_robot_description
from mango.nodes.common import Param, declare_parameters, run_node
from mango.ros.tf_msg import tf_message

_LATCHED_1 = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)
_TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)  # tf2_ros's dynamic QoS


class RobotStateNode(Node):
    def __init__(self) -> None:
        super().__init__("robot_state_publisher")
        p = declare_parameters(self, {
            "robot_description_file": "", "joint_states_topic": "joint_states",
            "publish_frequency": Param(20.0, lambda v: 0 < v <= 1000,
                                       "above 0 and at most 1000 Hz"),
            "frame_prefix": ""})
        description, file = load_robot_description(p["robot_description_file"] or None)
        self.state = RobotState(description, file)
        self.prefix = str(p["frame_prefix"])
        self.min_interval_ns = round(1e9 / float(p["publish_frequency"]))
        self._last_ns: int | None = None
        self.description_pub = self.create_publisher(String, "robot_description", _LATCHED_1)
        self.static_pub = self.create_publisher(TFMessage, "tf_static", _LATCHED_1)
        self.tf_pub = self.create_publisher(TFMessage, "tf", _TF_QOS)
        self.description_pub.publish(String(data=description.xml))
        self.static_pub.publish(tf_message(self.state.fixed_transforms(),
                                           self.get_clock().now().to_msg(), self.prefix))
        self.create_subscription(JointState, p["joint_states_topic"], self._on_joints,
                                 qos_profile_sensor_data)
        self.get_logger().info(
            f"robot '{description.name}' from {file}: {len(description.links)} links, "
            f"moving joints {', '.join(self.state.moving_joints)}")

    def _on_joints(self, msg: JointState) -> None:
        if len(msg.name) != len(msg.position):
            self.get_logger().error("joint_states ignored: name and position lengths differ",
                                    throttle_duration_sec=10.0)
            return
        if not all(math.isfinite(v) for v in msg.position):
            self.get_logger().error("joint_states ignored: a position is not finite",
                                    throttle_duration_sec=10.0)
            return
        ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        last = self._last_ns
        if last is not None and last <= ns < last + self.min_interval_ns:
            return
        self._last_ns = ns
        transforms = self.state.transforms(dict(zip(msg.name, msg.position, strict=True)))
        if transforms:
            self.tf_pub.publish(tf_message(transforms, msg.header.stamp, self.prefix))


def main(args: list[str] | None = None) -> None:
    run_node(RobotStateNode, args, threads=1)


if __name__ == "__main__":
    main()
