"""A real FR3 through libfranka, without franka_ros2: the nodes of
config/stacks/fr3_libfranka.yaml, the control box's address a launch argument.

    ros2 launch mango_ros fr3_libfranka.launch.py robot_ip:=172.16.0.2
"""

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration

from launch import LaunchDescription
from mango.launch_support import stack_launch_description


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot_ip", default_value="172.16.0.2",
                              description="FR3 control box address"),
        stack_launch_description("fr3_libfranka", {
            "franka_control_node": {"robot_ip": LaunchConfiguration("robot_ip")}}),
    ])
