"""A real FR3: franka_bringup (robot_ip, use_fake_hardware, namespace) with the Franka Hand,
the joint trajectory controller the stack drives, and the nodes of config/stacks/fr3.yaml
(control node on the franka_ros2 backend, cameras, VLA policy).

    ros2 launch mango_ros fr3.launch.py robot_ip:=172.16.0.2
    ros2 launch mango_ros fr3.launch.py robot_ip:=dont-care use_fake_hardware:=true

franka_bringup's franka.launch.py spawns only the state broadcasters, so the trajectory
controller is defined in config/franka/fr3_controllers.yaml (passed as its controllers_yaml)
and spawned here under the name the stack's `arm_action` uses; the gripper node it starts
with load_gripper:=true is `franka_gripper`, the stack's `gripper_namespace`.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from mango.launch_support import stack_launch_description
from mango.stack import load_stack


def generate_launch_description():
    share = get_package_share_directory("mango_ros")
    control = next(n for n in load_stack("fr3", share).nodes
                   if n.name == "franka_control_node").parameters
    # /<controller>/follow_joint_trajectory: the controller to spawn is the action's first name
    controller = str(control["arm_action"]).strip("/").split("/")[0]
    franka = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(
            get_package_share_directory("franka_bringup"), "launch", "franka.launch.py")),
        launch_arguments={
            "robot_type": "fr3",
            "robot_ip": LaunchConfiguration("robot_ip"),
            "use_fake_hardware": LaunchConfiguration("use_fake_hardware"),
            "load_gripper": "true",
            "controllers_yaml": os.path.join(share, "config", "franka", "fr3_controllers.yaml"),
        }.items(),
    )
    spawn_arm = Node(package="controller_manager", executable="spawner",
                     arguments=[controller, "--controller-manager-timeout", "60"],
                     output="screen")
    return LaunchDescription([
        DeclareLaunchArgument("robot_ip", description="FR3 control box address"),
        DeclareLaunchArgument("use_fake_hardware", default_value="false"),
        franka,
        spawn_arm,
        stack_launch_description("fr3"),
    ])
