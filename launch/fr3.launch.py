"""A real FR3: franka_bringup (robot_ip, use_fake_hardware) + the nodes of
config/stacks/fr3.yaml (control node on the franka_ros2 backend, cameras, VLA policy).

    ros2 launch mango_ros fr3.launch.py robot_ip:=172.16.0.2
    ros2 launch mango_ros fr3.launch.py robot_ip:=dont-care use_fake_hardware:=true
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration

from launch import LaunchDescription
from mango.launch_support import stack_launch_description


def generate_launch_description():
    franka = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(
            get_package_share_directory("franka_bringup"), "launch", "franka.launch.py")),
        launch_arguments={
            "robot_type": "fr3",
            "robot_ip": LaunchConfiguration("robot_ip"),
            "use_fake_hardware": LaunchConfiguration("use_fake_hardware"),
        }.items(),
    )
    return LaunchDescription([
        DeclareLaunchArgument("robot_ip", description="FR3 control box address"),
        DeclareLaunchArgument("use_fake_hardware", default_value="false"),
        franka,
        stack_launch_description("fr3"),
    ])
