"""Stack files, the launch files that read them, and `mango bringup`."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from xml.dom import minidom

import pytest
import yaml
from support.processes import read_until

from mango.bags import BagReader
from mango.control import load_robot
from mango.errors import InputError
from mango.stack import PACKAGE, load_stack

REPO = Path(__file__).resolve().parents[2]
STACKS = sorted((REPO / "config" / "stacks").glob("*.yaml"))
LAUNCH_FILES = sorted((REPO / "launch").glob("*.launch.py"))


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.stem)
def test_stack_files_validate(path: Path) -> None:
    stack = load_stack(path)
    assert stack.nodes
    for node in stack.nodes:
        for value in node.parameters.values():
            assert "$(share)" not in str(value)


# One rcl context per node, made and shut down in a child process: what is checked is rcl's
# reading of the arguments, and a DDS participant that hangs on its way up or down (once in
# CI, for 20 min, in-process: nothing to do with the arguments) then fails after a minute,
# said, instead of stalling the suite.
_RCL_NAMES = """
import json, sys
import rclpy
for args in json.loads(sys.argv[1]):
    ctx = rclpy.Context()
    rclpy.init(args=["node", *args], context=ctx)
    try:
        made = rclpy.create_node("placeholder", context=ctx)
        print(json.dumps([made.get_name(), made.get_namespace()]), flush=True)
        made.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
"""


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.stem)
def test_every_nodes_arguments_are_accepted_by_rcl(path: Path) -> None:
    """What `mango bringup` passes each node process (name, namespace, remappings) parses in
    rcl and names the node where the stack file puts it (a relative namespace once killed
    both camera nodes of the FR3 stack at start)."""
    from mango.stack import ros_args

    nodes = load_stack(path).nodes
    hung: list[str] = []
    for _ in range(2):  # a participant that hangs is DDS's, not the arguments': once more
        try:
            out = subprocess.run([sys.executable, "-c", _RCL_NAMES,
                                  json.dumps([ros_args(n) for n in nodes])],
                                 capture_output=True, text=True, timeout=60, check=False)
            break
        except subprocess.TimeoutExpired as exc:
            hung.append(f"{exc.stdout!r} {exc.stderr!r}")
    else:
        raise AssertionError(f"rcl did not come up and down within 60 s for {len(nodes)} "
                             f"nodes, twice; it printed: {hung}")
    assert out.returncode == 0, out.stderr
    names = [tuple(json.loads(line)) for line in out.stdout.splitlines()]
    assert names == [(n.name, n.namespace or "/") for n in nodes]


def test_a_relative_namespace_is_made_absolute_and_a_bad_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nnodes:\n  - {name: cam, executable: camera_node, "
                    "namespace: camera/front/}\n")
    assert load_stack(path).nodes[0].namespace == "/camera/front"
    path.write_text("name: s\nnodes:\n  - {name: cam, executable: camera_node, "
                    "namespace: 'camera front'}\n")
    with pytest.raises(InputError, match="namespace"):
        load_stack(path)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name: x\nnodes: []\n", "nodes"),
        ("name: x\nnodes:\n  - name: a\n", "nodes[0].executable"),
        ("name: x\nnodes:\n  - {name: 'bad name', executable: oracle_node}\n", "nodes[0].name"),
        ("name: x\nnodes:\n  - {name: a, executable: b, parameters: {p: {nested: 1}}}\n",
         "nodes[0].parameters.p"),
        ("name: x\nnodes:\n  - {name: a, executable: b, colour: red}\n", "nodes[0].colour"),
    ],
)
def test_bad_stack_names_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_stack(path)
    assert err.value.file == str(path)
    assert err.value.field is not None and err.value.field.startswith(field)


def test_bad_yaml_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nnodes:\n  - name: [unclosed\n")
    with pytest.raises(InputError) as err:
        load_stack(path)
    assert err.value.line is not None


def _fake_launch_modules(share: Path) -> dict[str, types.ModuleType]:
    """Stand-ins for launch/launch_ros/ament_index_python, which only a system ROS 2 has:
    they record what the launch file asks for."""
    launched: list[dict[str, Any]] = []

    class Node:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs
            launched.append(kwargs)

    class OpaqueFunction:  # run by the test with a stand-in context (gazebo.launch.py)
        def __init__(self, function: Any, args: Any = (), kwargs: Any = None) -> None:
            self.function, self.args, self.kwargs = function, args, kwargs or {}

    class LaunchDescription(list):
        pass

    mods = {name: types.ModuleType(name) for name in (
        "launch", "launch.actions", "launch.events", "launch_ros", "launch_ros.actions",
        "ament_index_python", "ament_index_python.packages",
        "launch.launch_description_sources", "launch.substitutions", "launch.event_handlers",
        "xacro")}
    mods["launch"].LaunchDescription = LaunchDescription
    mods["launch.actions"].EmitEvent = lambda **kw: ("emit", kw)
    # launch files that include other packages' launch files (fr3.launch.py: franka_bringup)
    mods["launch.actions"].DeclareLaunchArgument = lambda *a, **kw: ("argument", a, kw)
    mods["launch.actions"].IncludeLaunchDescription = lambda *a, **kw: ("include", a, kw)
    mods["launch.launch_description_sources"].PythonLaunchDescriptionSource = lambda p: p
    mods["launch.substitutions"].LaunchConfiguration = lambda name: ("config", name)
    mods["launch.events"].Shutdown = lambda **kw: ("shutdown", kw)
    mods["launch.actions"].OpaqueFunction = OpaqueFunction
    mods["launch.actions"].RegisterEventHandler = lambda handler: ("handler", handler)
    mods["launch.event_handlers"].OnProcessExit = lambda **kw: ("on_process_exit", kw)
    processed: list[tuple[str, dict[str, str]]] = []

    def process_file(path: str, mappings: dict[str, str]) -> Any:
        processed.append((path, dict(mappings)))
        return minidom.parseString('<robot name="fr3"><link name="fr3_hand"/></robot>')

    mods["xacro"].process_file = process_file
    mods["xacro"].processed = processed
    mods["launch_ros.actions"].Node = Node
    packages: list[str] = []

    def get_package_share_directory(pkg: str) -> str:
        packages.append(pkg)
        return str(share)

    mods["ament_index_python.packages"].get_package_share_directory = get_package_share_directory
    mods["ament_index_python.packages"].asked = packages
    mods["launch"].launched = launched
    return mods


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_agrees_with_its_stack(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = path.read_text()
    tree = ast.parse(source)  # syntax, without importing launch
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert "generate_launch_description" in names
    stack_name = path.name.removesuffix(".launch.py")
    assert (REPO / "config" / "stacks" / f"{stack_name}.yaml").is_file()

    mods = _fake_launch_modules(REPO)
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    namespace: dict[str, Any] = {}
    exec(compile(source, str(path), "exec"), namespace)
    namespace["generate_launch_description"]()
    # other packages' nodes a launch file adds (fr3: the controller spawner) are not the stack's
    launched = [k for k in mods["launch"].launched if k["package"] == PACKAGE]
    stack = load_stack(stack_name)
    assert [(k["name"], k["executable"], k["package"]) for k in launched] == [
        (n.name, n.executable, n.package) for n in stack.nodes]
    for kwargs, node in zip(launched, stack.nodes, strict=True):
        (params,) = kwargs["parameters"]
        # a launch argument may set what the stack sets (fr3_libfranka: robot_ip), nothing else
        from_args = {k for k, v in params.items() if isinstance(v, tuple) and v[0] == "config"}
        assert from_args <= set(node.parameters)
        assert {k: v for k, v in params.items() if k not in from_args} == {
            k: v for k, v in node.parameters.items() if k not in from_args}
        assert dict(kwargs["remappings"]) == node.remappings
        assert (kwargs["on_exit"] is not None) == node.required


def test_fr3_launch_uses_franka_ros2s_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Against franka_ros2 v3.4.0 (frankarobotics/franka_ros2): franka_bringup
    launch/franka.launch.py spawns only joint_state_broadcaster and
    franka_robot_state_broadcaster, takes `controllers_yaml`, starts the gripper only with
    load_gripper:=true, as franka_gripper launch/gripper.launch.py's node `franka_gripper`
    (actions ~/move, ~/grasp), and its joint_state_publisher publishes `joint_states`;
    the joint trajectory controller is franka_fr3_moveit_config's `fr3_arm_controller`
    (config/fr3_ros_controllers.yaml), which this launch must define and spawn itself."""
    mods = _fake_launch_modules(REPO)
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    namespace: dict[str, Any] = {}
    path = REPO / "launch" / "fr3.launch.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    actions = namespace["generate_launch_description"]()
    (include,) = [a for a in actions if isinstance(a, tuple) and a[0] == "include"]
    assert include[1][0].endswith(os.path.join("launch", "franka.launch.py"))
    args = dict(include[2]["launch_arguments"])
    assert args["robot_type"] == "fr3" and args["load_gripper"] == "true"
    controllers = yaml.safe_load(Path(args["controllers_yaml"]).read_text())
    manager = controllers["/**"]["controller_manager"]["ros__parameters"]
    (spawner,) = [k for k in mods["launch"].launched if k["executable"] == "spawner"]
    assert spawner["package"] == "controller_manager"
    arm = spawner["arguments"][0]
    assert arm == "fr3_arm_controller"
    assert manager[arm]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    params = controllers["/**"][arm]["ros__parameters"]
    fr3 = load_robot("fr3")
    assert tuple(params["joints"]) == fr3.joint_names
    assert set(params["state_interfaces"]) >= {"position", "velocity"}
    control = next(n for n in load_stack("fr3").nodes if n.name == "franka_control_node")
    assert control.parameters["arm_action"] == f"/{arm}/follow_joint_trajectory"
    assert control.parameters["gripper_namespace"] == "/franka_gripper"
    assert control.parameters["joint_states_topic"] == "/joint_states"


def _run_gazebo_launch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                       args: dict[str, str]) -> tuple[dict[str, types.ModuleType], list[Any]]:
    """gazebo.launch.py with the stand-ins, its OpaqueFunction run with the given arguments
    (the rest at their declared defaults), as `ros2 launch` would."""
    import tempfile

    mods = _fake_launch_modules(REPO)
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("GZ_SIM_RESOURCE_PATH", "/opt/models")
    namespace: dict[str, Any] = {}
    path = REPO / "launch" / "gazebo.launch.py"
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    actions = namespace["generate_launch_description"]()
    defaults = {a[1][0]: a[2].get("default_value") for a in actions
                if isinstance(a, tuple) and a[0] == "argument"}
    values = {**defaults, **args}

    class Context:
        def perform_substitution(self, sub: tuple[str, str]) -> str:
            assert sub[0] == "config"
            return values[sub[1]]

    (opaque,) = [a for a in actions if type(a).__name__ == "OpaqueFunction"]
    return mods, opaque.function(Context(), *opaque.args, **opaque.kwargs)


def test_gazebo_launch_follows_franka_gazebo_bringup(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    """Against franka_ros2 v3.4.0 (frankarobotics/franka_ros2) franka_gazebo/
    franka_gazebo_bringup/launch/gazebo_franka_arm_example_controller.launch.py: the robot
    description is its urdf/franka_arm.gazebo.xacro with robot_type, hand, gazebo, ee_id and
    gazebo_effort; ros_gz_sim's launch/gz_sim.launch.py takes `gz_args`; `create` spawns from
    -topic /robot_description; ros_gz_bridge's parameter_bridge brings
    /clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock; the controllers are spawned when `create`
    exits; GZ_SIM_RESOURCE_PATH holds franka_description's parent folder. franka_hardware's
    ros2_control/franka_ros2_control_macros.xacro gives each arm joint the position and
    velocity command interfaces under gazebo:=true, gazebo_effort:=false."""
    from mango.sim.scene import as_scene

    mods, actions = _run_gazebo_launch(monkeypatch, tmp_path, {"scene": "stove_moka",
                                                               "seed": "2"})
    scene = as_scene("stove_moka")
    (xacro_path, mappings), = mods["xacro"].processed
    assert xacro_path.endswith(os.path.join("urdf", "franka_arm.gazebo.xacro"))
    assert "franka_gazebo_bringup" in mods["ament_index_python.packages"].asked
    assert mappings == {"robot_type": "fr3", "hand": "true", "gazebo": "true",
                        "ee_id": "franka_hand", "gazebo_effort": "false"}
    assert os.environ["GZ_SIM_RESOURCE_PATH"] == os.pathsep.join([str(REPO.parent),
                                                                  "/opt/models"])
    (include,) = [a for a in actions if isinstance(a, tuple) and a[0] == "include"]
    assert include[1][0].endswith(os.path.join("launch", "gz_sim.launch.py"))
    gz_args = dict(include[2]["launch_arguments"])["gz_args"].split()
    assert gz_args[0] == "-r"
    world = ET.parse(gz_args[-1]).getroot().find("world")
    assert world.get("name") == scene.name and Path(gz_args[-1]).parent.parent == tmp_path
    launched = {k["executable"]: k for k in mods["launch"].launched if k["package"] != PACKAGE}
    spawn = launched["create"]
    assert spawn["package"] == "ros_gz_sim"
    args = spawn["arguments"]
    assert args[args.index("-topic") + 1] == "/robot_description"
    base = [float(args[args.index(f"-{axis}") + 1]) for axis in "xyz"]
    assert base == list(scene.robot.base)
    rsp = launched["robot_state_publisher"]["parameters"][0]
    assert rsp["use_sim_time"] is True
    description = ET.fromstring(rsp["robot_description"])
    bridge = launched["parameter_bridge"]
    assert bridge["package"] == "ros_gz_bridge"
    assert "/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock" in bridge["arguments"]
    bridged = {a.split("@")[0] for a in bridge["arguments"]}
    # every camera sensor, in the world or on the hand, reaches ROS on the stack's topics
    sensors = ([s for s in world.iter("sensor")] + [s for s in description.iter("sensor")])
    assert {s.get("name") for s in sensors} == {"front", "wrist"}
    for sensor in sensors:
        assert sensor.get("type") == "camera"
        assert {sensor.findtext("topic"), sensor.findtext("camera/camera_info_topic")} <= bridged
    stack = {n.name: n.parameters for n in load_stack("gazebo").nodes}
    assert {stack["vla_node"]["front_image_topic"],
            stack["vla_node"]["wrist_image_topic"]} <= bridged
    (handler,) = [a for a in actions if isinstance(a, tuple) and a[0] == "handler"]
    event, on_exit = handler[1][0], handler[1][1]
    assert event == "on_process_exit" and on_exit["target_action"].kwargs is spawn
    spawners = [n.kwargs for n in on_exit["on_exit"]]
    assert all(k["package"] == "controller_manager" and k["executable"] == "spawner"
               for k in spawners)
    assert spawners[0]["arguments"][0] == "joint_state_broadcaster"
    arm_args = spawners[1]["arguments"]
    arm = arm_args[0]
    control = stack["franka_control_node"]
    assert control["backend"] == "franka_ros2"
    assert control["arm_action"] == f"/{arm}/follow_joint_trajectory"
    assert control["joint_states_topic"] == "/joint_states"
    params_file = yaml.safe_load(Path(arm_args[arm_args.index("--param-file") + 1]).read_text())
    params = params_file["/**"][arm]["ros__parameters"]
    assert params["type"] == "joint_trajectory_controller/JointTrajectoryController"
    assert tuple(params["joints"]) == load_robot("fr3").joint_names
    assert set(params["command_interfaces"]) <= {"position", "velocity"}
    assert set(params["state_interfaces"]) >= {"position", "velocity"}


def test_gazebo_launch_takes_a_world_file(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    world = tmp_path / "mine.sdf"
    world.write_text("<sdf version='1.9'><world name='mine'/></sdf>")
    _, actions = _run_gazebo_launch(monkeypatch, tmp_path, {"world": str(world),
                                                            "gz_args": "-r -s"})
    (include,) = [a for a in actions if isinstance(a, tuple) and a[0] == "include"]
    assert dict(include[2]["launch_arguments"])["gz_args"] == f"-r -s {world}"
    assert not (tmp_path / "mango_gazebo").exists()


def test_every_stack_has_a_launch_file() -> None:
    assert {p.stem for p in STACKS} <= {p.name.removesuffix(".launch.py") for p in LAUNCH_FILES}


def _bringup(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "mango.cli.main", "bringup", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def test_bringup_runs_the_stack_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    proc = _bringup("oracle", "--set", "trace_player.rate_scale=4.0",
                    "--set", f"bag_recorder.output={bag}")
    try:
        read_until(proc, "task verdict: pass", timeout=60)
        time.sleep(0.5)
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out
    assert "stopped: oracle_node (0)" in out
    topics = BagReader(bag).topics()
    assert topics["/world_state"][1] == 46  # every state of the trace was recorded
    assert topics["/oracle/task_verdict"][1] == 1


def test_bringup_reports_a_node_that_dies(tmp_path: Path) -> None:
    proc = _bringup("oracle", "--set", "oracle_node.oracle_file=/no/such/oracle.json",
                    "--set", f"bag_recorder.output={tmp_path / 'bag'}")
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1
    assert "node oracle_node exited with code" in out
    assert "/no/such/oracle.json" in out


def test_bringup_bad_override_is_a_clear_error() -> None:
    proc = _bringup("oracle", "--set", "nosuchnode.x=1")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "error:" in out and "nosuchnode" in out


def test_an_extending_stack_replaces_adds_drops_and_makes_optional(tmp_path: Path) -> None:
    stack = load_stack("fr3_libfranka")
    base = load_stack("fr3")
    nodes = {n.name: n for n in stack.nodes}
    assert nodes["franka_control_node"].parameters["backend"] == "libfranka"  # replaced
    assert "robot_state_publisher" in nodes  # added
    assert not nodes["front_camera"].required and not nodes["wrist_camera"].required
    assert [n.name for n in base.nodes] == [n.name for n in stack.nodes][:len(base.nodes)]
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nextends: fr3\noptional: [no_such_node]\nnodes:\n"
                   "  - {name: extra, executable: oracle_node}\n")
    with pytest.raises(InputError, match="optional: no_such_node, which fr3 does not have"):
        load_stack(bad)
