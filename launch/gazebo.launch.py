"""The FR3 in Gazebo (gz-sim) on a scene's world, driven by the nodes of
config/stacks/gazebo.yaml (control node on the franka_ros2 backend, VLA policy).

    ros2 launch mango_ros gazebo.launch.py scene:=stove_moka [seed:=3] [world:=W.sdf]

Built the way franka_ros2 (v3.4.0) franka_gazebo_bringup's
launch/gazebo_franka_arm_example_controller.launch.py builds its simulation: the robot
description is franka_gazebo_bringup's urdf/franka_arm.gazebo.xacro (franka_description's
FR3 plus franka_hardware's ros2_control block on gz_ros2_control), published by
robot_state_publisher; ros_gz_sim's gz_sim.launch.py runs the world and `create` spawns the
robot from /robot_description; ros_gz_bridge brings /clock; once the robot is in, the
controllers are spawned. Differences: the world is the scene exported by `mango sim
export-sdf` (unless `world:=` names one), the robot stands at the scene's `robot.base`, a
wrist camera sensor is added to the hand, the scene cameras are bridged too, and the
controller is the joint trajectory controller the stack's `arm_action` names.
"""

import os
import tempfile
import xml.dom.minidom

import xacro
from ament_index_python.packages import get_package_share_directory
from launch.actions import (
    DeclareLaunchArgument,
    IncludeLaunchDescription,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from mango.launch_support import stack_launch_description
from mango.stack import load_stack

# franka_gazebo_bringup's xacro arguments (its gazebo_franka_arm_example_controller.launch.py);
# gazebo_effort false: gz_ros2_control's own GazeboSimSystem with position command interfaces
XACRO_ARGS = {"robot_type": "fr3", "hand": "true", "gazebo": "true", "ee_id": "franka_hand",
              "gazebo_effort": "false"}
# a camera on the hand looking along the fingers (+z of fr3_hand; a gz camera looks along +x)
WRIST_CAMERA = """<gazebo reference="fr3_hand"><sensor name="wrist" type="camera">
  <pose>0.06 0 0.04 0 -1.5707963 0</pose>
  <camera><horizontal_fov>1.2217305</horizontal_fov><image><width>{w}</width>
  <height>{h}</height></image><clip><near>0.01</near><far>10</far></clip>
  <camera_info_topic>/camera/wrist/camera_info</camera_info_topic></camera>
  <always_on>true</always_on><update_rate>{rate}</update_rate>
  <topic>/camera/wrist/image_raw</topic></sensor></gazebo>"""


def _arm_controller(share: str) -> str:
    control = next(n for n in load_stack("gazebo", share).nodes
                   if n.name == "franka_control_node").parameters
    # /<controller>/follow_joint_trajectory: the controller to spawn is the action's first name
    return str(control["arm_action"]).strip("/").split("/")[0]


def _robot_description(width: int, height: int, rate: float) -> str:
    path = os.path.join(get_package_share_directory("franka_gazebo_bringup"), "urdf",
                        "franka_arm.gazebo.xacro")
    doc = xacro.process_file(path, mappings=XACRO_ARGS)
    if not isinstance(doc, xml.dom.minidom.Document):
        raise RuntimeError(f"{path} did not expand to an XML document")
    camera = xml.dom.minidom.parseString(WRIST_CAMERA.format(w=width, h=height, rate=rate))
    doc.documentElement.appendChild(camera.documentElement)
    return doc.toxml()


def _simulation(context, share: str):
    from mango.sim.scene import as_scene

    def arg(name: str) -> str:
        return context.perform_substitution(LaunchConfiguration(name))

    scene = as_scene(arg("scene"))
    width, height, rate = int(arg("image_width")), int(arg("image_height")), 10.0
    world = arg("world")
    if not world:
        from mango.sim.sdf import scene_world_sdf

        folder = os.path.join(tempfile.gettempdir(), "mango_gazebo")
        os.makedirs(folder, exist_ok=True)
        world = os.path.join(folder, f"{scene.name}_seed{arg('seed')}.sdf")
        with open(world, "w") as f:
            f.write(scene_world_sdf(scene, int(arg("seed")), image_size=(width, height),
                                    camera_rate=rate))
    # package://franka_description/... meshes resolve under this path (as franka's launch)
    description_parent = os.path.dirname(get_package_share_directory("franka_description"))
    os.environ["GZ_SIM_RESOURCE_PATH"] = os.pathsep.join(
        p for p in (description_parent, os.environ.get("GZ_SIM_RESOURCE_PATH")) if p)

    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(
            get_package_share_directory("ros_gz_sim"), "launch", "gz_sim.launch.py")),
        launch_arguments={"gz_args": f"{arg('gz_args')} {world}".strip()}.items(),
    )
    robot_state_publisher = Node(
        package="robot_state_publisher", executable="robot_state_publisher",
        name="robot_state_publisher", output="both",
        parameters=[{"robot_description": _robot_description(width, height, rate),
                     "use_sim_time": True}])
    x, y, z = scene.robot.base
    spawn = Node(package="ros_gz_sim", executable="create", output="screen",
                 arguments=["-topic", "/robot_description", "-name", "fr3",
                            "-x", str(x), "-y", str(y), "-z", str(z)])
    cameras = [c.name for c in scene.cameras] + ["wrist"]
    bridged = ["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"]
    for cam in cameras:
        bridged += [f"/camera/{cam}/image_raw@sensor_msgs/msg/Image[gz.msgs.Image",
                    f"/camera/{cam}/camera_info@sensor_msgs/msg/CameraInfo[gz.msgs.CameraInfo"]
    bridge = Node(package="ros_gz_bridge", executable="parameter_bridge", arguments=bridged,
                  output="screen")
    broadcaster = Node(package="controller_manager", executable="spawner", output="screen",
                       arguments=["joint_state_broadcaster", "--controller-manager-timeout",
                                  "60"])
    arm = Node(package="controller_manager", executable="spawner", output="screen",
               arguments=[_arm_controller(share), "--param-file",
                          os.path.join(share, "config", "franka", "fr3_gazebo_controllers.yaml"),
                          "--controller-manager-timeout", "60"])
    return [gazebo, robot_state_publisher, spawn, bridge,
            RegisterEventHandler(OnProcessExit(target_action=spawn,
                                               on_exit=[broadcaster, arm]))]


def generate_launch_description():
    share = get_package_share_directory("mango_ros")
    return LaunchDescription([
        DeclareLaunchArgument("scene", default_value="libero10_soup_sauce_basket",
                              description="a config/scenes name or scene YAML"),
        DeclareLaunchArgument("seed", default_value="0", description="initial placement"),
        DeclareLaunchArgument("world", default_value="",
                              description="an SDF world instead of the exported scene"),
        DeclareLaunchArgument("gz_args", default_value="-r",
                              description="extra gz sim arguments (-s: no GUI)"),
        DeclareLaunchArgument("image_width", default_value="224"),
        DeclareLaunchArgument("image_height", default_value="224"),
        OpaqueFunction(function=_simulation, kwargs={"share": share}),
        stack_launch_description("gazebo"),
    ])
