"""Stack files, the launch files that read them, and `mango bringup`."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

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


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.stem)
def test_every_nodes_arguments_are_accepted_by_rcl(path: Path) -> None:
    """What `mango bringup` passes each node process (name, namespace, remappings) parses in
    rcl and names the node where the stack file puts it (a relative namespace once killed
    both camera nodes of the FR3 stack at start)."""
    import rclpy

    from mango.stack import ros_args

    for node in load_stack(path).nodes:
        ctx = rclpy.Context()
        rclpy.init(args=["node", *ros_args(node)], context=ctx)
        try:
            made = rclpy.create_node("placeholder", context=ctx)
            assert made.get_name() == node.name
            assert made.get_namespace() == (node.namespace or "/")
            made.destroy_node()
        finally:
            rclpy.shutdown(context=ctx)


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
            launched.append(kwargs)

    class LaunchDescription(list):
        pass

    mods = {name: types.ModuleType(name) for name in (
        "launch", "launch.actions", "launch.events", "launch_ros", "launch_ros.actions",
        "ament_index_python", "ament_index_python.packages",
        "launch.launch_description_sources", "launch.substitutions")}
    mods["launch"].LaunchDescription = LaunchDescription
    mods["launch.actions"].EmitEvent = lambda **kw: ("emit", kw)
    # launch files that include other packages' launch files (fr3.launch.py: franka_bringup)
    mods["launch.actions"].DeclareLaunchArgument = lambda *a, **kw: ("argument", a, kw)
    mods["launch.actions"].IncludeLaunchDescription = lambda *a, **kw: ("include", a, kw)
    mods["launch.launch_description_sources"].PythonLaunchDescriptionSource = lambda p: p
    mods["launch.substitutions"].LaunchConfiguration = lambda name: ("config", name)
    mods["launch.events"].Shutdown = lambda **kw: ("shutdown", kw)
    mods["launch_ros.actions"].Node = Node
    mods["ament_index_python.packages"].get_package_share_directory = lambda pkg: str(share)
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
        assert kwargs["parameters"] == [node.parameters]
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


def test_every_stack_has_a_launch_file() -> None:
    assert {p.stem for p in STACKS} <= {p.name.removesuffix(".launch.py") for p in LAUNCH_FILES}


def _bringup(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "mango.cli.main", "bringup", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _read_until(proc: subprocess.Popen[str], needle: str, timeout: float) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line:
            lines.append(line)
            if needle in line:
                return lines
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.05)
    raise AssertionError(f"{needle!r} not seen; output:\n{''.join(lines)}")


def test_bringup_runs_the_stack_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    bag = tmp_path / "bag"
    proc = _bringup("oracle", "--set", "trace_player.rate_scale=4.0",
                    "--set", f"bag_recorder.output={bag}")
    try:
        _read_until(proc, "task verdict: pass", timeout=60)
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
