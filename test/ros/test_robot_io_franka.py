"""The franka_ros2 backend of franka_control_node against fake controller and gripper servers.

control_msgs and franka_msgs exist only on a system ROS 2, so this builds test-only stand-ins
(test/data/robot_io/interfaces: the documented fields of FollowJointTrajectory and of the
franka gripper's Move/Grasp/Homing) with the venv's rosidl tooling, once, into
build/test_interfaces/<hash of the definitions>. The fakes act as the robot: the trajectory
server moves the published joint states along the received points, and can fail the way
the joint trajectory controller does; a new trajectory goal replaces the one being followed,
as the controller does (ros2_controllers joint_trajectory_controller: a new goal preempts the
active one, its trajectory taking over from the current state).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Duration
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from sensor_msgs.msg import JointState
from support.ros import Processes, wait_for
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from mango.control import load_robot
from mango.nodes.actions import ActionClient
from mango_ros.action import ExecuteChunk

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
IFACES = REPO / "test" / "data" / "robot_io" / "interfaces"
ROBOT = load_robot("fr3")
JOINTS = list(ROBOT.joint_names)


def _digest() -> str:
    h = hashlib.sha256()
    for p in sorted(IFACES.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(IFACES)).encode() + p.read_bytes())
    return h.hexdigest()[:12]


def build_test_interfaces() -> Path:
    """Build (once) and return the install prefix of the test-only interface packages."""
    root = REPO / "build" / "test_interfaces" / _digest()
    prefix = root / "install"
    if (root / "done").exists():
        return prefix
    venv = sys.prefix
    env = dict(os.environ, AMENT_PREFIX_PATH=f"{prefix}:{venv}",
               CMAKE_PREFIX_PATH=f"{prefix}:{venv}")
    for pkg in ("control_msgs", "franka_msgs"):
        b = root / f"build-{pkg}"
        for cmd in (["cmake", "-S", str(IFACES / pkg), "-B", str(b),
                     f"-DCMAKE_INSTALL_PREFIX={prefix}", "-DBUILD_TESTING=OFF",
                     f"-DCMAKE_PROJECT_INCLUDE={REPO}/cmake/fix_opt_python.cmake",
                     f"-DPython3_EXECUTABLE={sys.executable}"],
                    ["cmake", "--build", str(b), "-j2"], ["cmake", "--install", str(b)]):
            out = subprocess.run(cmd, env=env, capture_output=True, text=True)
            assert out.returncode == 0, f"{' '.join(cmd)}:\n{out.stdout[-2000:]}{out.stderr}"
    (root / "done").write_text("ok\n")
    return prefix


@pytest.fixture(scope="module")
def ifaces() -> Path:
    prefix = build_test_interfaces()
    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"
    # this process started without them on LD_LIBRARY_PATH: load the type support by hand
    libs = sorted((prefix / "lib").glob("lib*.so"), key=lambda p: ("generator_c" not in p.name,
                                                                   p.name))
    for lib in libs:
        ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
    sys.path.insert(0, str(site))
    return prefix


@pytest.mark.parallel
def test_the_test_only_interfaces_build_with_the_wheels_tooling() -> None:
    # a compile of two packages: in the parallel pass, so that the serial one finds it done
    site = build_test_interfaces() / "lib" / \
        f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    assert (site / "control_msgs" / "action" / "_follow_joint_trajectory.py").is_file()
    assert {p.stem for p in (site / "franka_msgs" / "action").glob("_*.py")} >= {
        "_grasp", "_move", "_homing"}


@dataclass
class FakeFranka:
    """The robot side: FollowJointTrajectory + gripper actions + joint_states."""

    node: Any
    ns: str
    q: np.ndarray = field(default_factory=lambda: np.asarray(ROBOT.home, float))
    width: float = 0.08
    mode: str = "ok"  # ok | path_error | reject | hang
    # the object between the fingers (m; None: nothing). A grasp stops on it and succeeds as
    # libfranka's (include/franka/gripper.h: width - epsilon.inner < d < width +
    # epsilon.outer); franka_gripper's server (src/gripper_action_server.cpp, executeCommand)
    # aborts a goal whose result is not a success
    object_width: float | None = None
    goals: list[Any] = field(default_factory=list)
    gripper_goals: list[tuple[str, Any]] = field(default_factory=list)
    cancels: int = 0
    replaced: int = 0
    following: Any = None  # the goal being followed

    def start(self) -> None:
        from control_msgs.action import FollowJointTrajectory
        from franka_msgs.action import Grasp, Move

        g = ReentrantCallbackGroup()
        self.pub = self.node.create_publisher(JointState, f"{self.ns}/joint_states", 10)
        self.node.create_timer(0.01, self._publish, callback_group=g)
        ActionServer(self.node, FollowJointTrajectory,
                     f"{self.ns}/fr3_arm_controller/follow_joint_trajectory",
                     execute_callback=self._fjt, goal_callback=self._accept,
                     cancel_callback=self._cancel, callback_group=g)
        ActionServer(self.node, Move, f"{self.ns}/franka_gripper/move",
                     execute_callback=lambda gh: self._gripper("move", gh, Move),
                     callback_group=g)
        ActionServer(self.node, Grasp, f"{self.ns}/franka_gripper/grasp",
                     execute_callback=lambda gh: self._gripper("grasp", gh, Grasp),
                     callback_group=g)

    def _publish(self) -> None:
        msg = JointState(name=[*JOINTS, "fr3_finger_joint1", "fr3_finger_joint2"])
        msg.position = [*self.q.tolist(), self.width / 2, self.width / 2]
        self.pub.publish(msg)

    def _accept(self, goal: Any) -> GoalResponse:
        return GoalResponse.REJECT if self.mode == "reject" else GoalResponse.ACCEPT

    def _cancel(self, _gh: Any) -> CancelResponse:
        self.cancels += 1
        return CancelResponse.ACCEPT

    def _fjt(self, gh: Any) -> Any:
        try:
            return self._follow(gh)
        finally:
            if self.following is gh:
                self.following = None

    def _follow(self, gh: Any) -> Any:
        from control_msgs.action import FollowJointTrajectory

        goal = gh.request
        self.goals.append(goal)
        if self.following is not None:
            self.replaced += 1
        self.following = gh
        result = FollowJointTrajectory.Result()
        order = [list(goal.trajectory.joint_names).index(j) for j in JOINTS]
        t0 = time.monotonic()
        for k, pt in enumerate(goal.trajectory.points):
            t = pt.time_from_start.sec + pt.time_from_start.nanosec * 1e-9
            while time.monotonic() - t0 < t or self.mode == "hang":
                if gh.is_cancel_requested:
                    gh.canceled()  # the JTC holds position
                    return result
                if self.following is not gh:  # replaced by a newer goal
                    gh.abort()
                    return result
                time.sleep(0.002)
            self.q = np.asarray(pt.positions)[order]
            self._publish()  # at once, as the robot's 1 kHz state would show it
            if self.mode == "path_error" and k == 1:
                result.error_code = FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
                result.error_string = "fr3_joint2 path error 0.21 > 0.1"
                gh.abort()
                return result
        result.error_code = FollowJointTrajectory.Result.SUCCESSFUL
        gh.succeed()
        return result

    def _gripper(self, kind: str, gh: Any, action: Any) -> Any:
        self.gripper_goals.append((kind, gh.request))
        res = action.Result()
        goal, obj = gh.request, self.object_width
        if kind == "grasp":
            stop = obj is not None and goal.width <= obj <= self.width
            self.width = obj if stop else goal.width
            res.success = (goal.width - goal.epsilon.inner < self.width
                           < goal.width + goal.epsilon.outer)
        else:
            self.width, res.success = goal.width, True
        if res.success:
            gh.succeed()
        else:
            gh.abort()
        return res


@pytest.fixture(scope="module")
def rig(ifaces: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, ...]]:
    ns = f"/t{uuid.uuid4().hex[:8]}"
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f"fake_franka_{uuid.uuid4().hex[:6]}", context=ctx)
    fake = FakeFranka(node, ns)
    fake.start()
    executor = MultiThreadedExecutor(num_threads=4, context=ctx)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    procs = Processes(tmp_path_factory.mktemp("franka"))
    env = _env(ifaces)
    old = dict(os.environ)
    os.environ.update(env)
    try:
        procs.start("control", "mango.nodes.franka_control_node", "-r", f"__ns:={ns}",
                    "-p", "backend:=franka_ros2", "-p", "robot:=fr3",
                    "-p", f"arm_action:={ns}/fr3_arm_controller/follow_joint_trajectory",
                    "-p", f"gripper_namespace:={ns}/franka_gripper",
                    "-p", f"joint_states_topic:={ns}/joint_states",
                    "-p", "server_timeout:=3.0")
    finally:
        os.environ.clear()
        os.environ.update(old)
    client = ActionClient(node, ExecuteChunk, f"{ns}/execute_chunk")
    try:
        assert client.wait_for_server(timeout_sec=60), procs.log("control")
        yield fake, client, procs
    finally:
        procs.stop_all()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        thread.join(timeout=2.0)


def _env(prefix: Path) -> dict[str, str]:
    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
        "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(prefix / "lib"),
                                                         os.environ.get("LD_LIBRARY_PATH")])),
        "AMENT_PREFIX_PATH": os.pathsep.join(filter(None, [str(prefix),
                                                           os.environ.get("AMENT_PREFIX_PATH")])),
    }


def _goal(fake: FakeFranka, deltas: list[float], widths: list[float] | None = None,
          rate: float = 15.0) -> ExecuteChunk.Goal:
    goal = ExecuteChunk.Goal()
    goal.trajectory = JointTrajectory(joint_names=JOINTS)
    for k, d in enumerate(deltas, start=1):
        sec, nsec = divmod(round(k / rate * 1e9), 10**9)
        goal.trajectory.points.append(JointTrajectoryPoint(
            positions=(fake.q + np.array([d, 0, 0, 0, 0, 0, 0])).tolist(),
            time_from_start=Duration(sec=sec, nanosec=nsec)))
    goal.gripper_widths = widths or []
    return goal


def _run(client: ActionClient, goal: ExecuteChunk.Goal, cancel_after: float | None = None
         ) -> Any:
    fut = client.send_goal_async(goal)
    wait_for(fut.done, 10, "acceptance")
    gh = fut.result()
    if cancel_after is not None:
        time.sleep(cancel_after)
        gh.cancel_goal_async()
    res = gh.get_result_async()
    wait_for(res.done, 30, "result")
    return res.result().result


def test_chunk_becomes_a_follow_joint_trajectory_goal_and_a_grasp(rig: tuple) -> None:
    fake, client, _ = rig
    fake.mode, fake.object_width, fake.width = "ok", 0.03, 0.08
    fake.goals.clear()
    fake.gripper_goals.clear()
    q0 = fake.q.copy()
    res = _run(client, _goal(fake, [0.02, 0.04, 0.06, 0.08], widths=[0.08, 0.08, 0.02, 0.02]))
    assert res.status == ExecuteChunk.Result.STATUS_SUCCEEDED, res.message
    (goal,) = fake.goals
    assert list(goal.trajectory.joint_names) == JOINTS
    assert len(goal.trajectory.points) == 4
    assert goal.trajectory.points[3].positions[0] == pytest.approx(q0[0] + 0.08)
    t = goal.trajectory.points[2].time_from_start
    # 0.3 rad/s from rest: the first segment is slowed to fit 10 rad/s^2, the rest keep pace
    t2 = t.sec + t.nanosec * 1e-9
    assert 3 / 15 < t2 < 3 / 15 + 0.1
    # velocities and accelerations make the controller interpolate quintically
    # (ros2_controllers joint_trajectory_controller/doc/trajectory.rst), at rest at the end
    for p in goal.trajectory.points:
        assert len(p.velocities) == 7 and len(p.accelerations) == 7
    assert goal.trajectory.points[1].velocities[0] == pytest.approx(0.3, rel=0.2)
    assert list(goal.trajectory.points[3].velocities) == [0.0] * 7
    kinds = [(k, round(g.width, 3)) for k, g in fake.gripper_goals]
    assert kinds == [("grasp", 0.02)]  # closing -> grasp; unchanged width -> nothing
    grasp = fake.gripper_goals[0][1]
    assert grasp.force == 20.0 and grasp.epsilon.inner == pytest.approx(0.005)
    assert grasp.epsilon.outer == pytest.approx(0.065)  # up to where the fingers started
    assert fake.width == pytest.approx(0.03)  # held
    # The fake steps from point to point on its own clock, which starts when this process
    # takes the goal (late under load: CI measured 0.08): the error is reported, and bounded by
    # the motion itself
    assert res.points_executed == 4 and 0 <= res.max_joint_error <= 0.08 + 1e-9
    # opening again is a plain move
    fake.gripper_goals.clear()
    res = _run(client, _goal(fake, [0.0, 0.0], widths=[0.08, 0.08]))
    assert res.status == ExecuteChunk.Result.STATUS_SUCCEEDED, res.message
    assert [(k, round(g.width, 3)) for k, g in fake.gripper_goals] == [("move", 0.08)]


def test_controller_failure_maps_to_a_clear_result(rig: tuple) -> None:
    fake, client, _ = rig
    fake.mode = "path_error"
    res = _run(client, _goal(fake, [0.01, 0.02, 0.03]))
    fake.mode = "ok"
    assert res.status == ExecuteChunk.Result.STATUS_FAILED
    assert res.message == ("arm controller failed with PATH_TOLERANCE_VIOLATED: fr3_joint2 path "
                           "error 0.21 > 0.1")


def test_rejected_trajectory_maps_to_failed(rig: tuple) -> None:
    fake, client, _ = rig
    fake.mode = "reject"
    res = _run(client, _goal(fake, [0.01]))
    fake.mode = "ok"
    assert res.status == ExecuteChunk.Result.STATUS_FAILED
    assert "rejected the trajectory" in res.message


def test_grasp_closing_on_an_object_succeeds(rig: tuple) -> None:
    """The policies' close: a width ramp to 0 ("on whatever is there") is one grasp."""
    fake, client, _ = rig
    fake.mode, fake.object_width = "ok", 0.042
    res = _run(client, _goal(fake, [0.0], widths=[0.08]))  # open first
    assert res.status == ExecuteChunk.Result.STATUS_SUCCEEDED, res.message
    fake.gripper_goals.clear()
    res = _run(client, _goal(fake, [0.0] * 4, widths=[0.06, 0.04, 0.02, 0.0]))
    assert res.status == ExecuteChunk.Result.STATUS_SUCCEEDED, res.message
    assert [(k, round(g.width, 3)) for k, g in fake.gripper_goals] == [("grasp", 0.0)]
    assert res.final_gripper_width == pytest.approx(0.042, abs=1e-6)


def test_missed_grasp_maps_to_failed(rig: tuple) -> None:
    fake, client, _ = rig
    fake.mode, fake.object_width = "ok", None
    res = _run(client, _goal(fake, [0.0], widths=[0.08]))  # open first
    assert res.status == ExecuteChunk.Result.STATUS_SUCCEEDED, res.message
    res = _run(client, _goal(fake, [0.0, 0.0], widths=[0.0, 0.0]))
    assert res.status == ExecuteChunk.Result.STATUS_FAILED
    assert res.message == ("gripper grasp to 0.000 m missed: the fingers closed to 0.000 m with "
                           "nothing between them")
    fake.width = 0.08


def test_cancel_cancels_the_controller_goal(rig: tuple) -> None:
    fake, client, _ = rig
    fake.mode = "hang"
    before = fake.cancels
    res = _run(client, _goal(fake, [0.01, 0.02]), cancel_after=0.5)
    fake.mode = "ok"
    assert res.status == ExecuteChunk.Result.STATUS_CANCELLED
    wait_for(lambda: fake.cancels > before, 5, "the controller goal cancelled")


def test_a_chunk_replacing_the_running_one_extends_the_trajectory_without_a_stop(
        rig: tuple) -> None:
    """An asynchronous policy run sends the merged tail of its queue while the last chunk
    runs: the controller's goal is replaced by the new trajectory, never cancelled (which
    would hold the arm), and the new chunk ends where it says."""
    fake, client, _ = rig
    fake.mode = "ok"
    fake.goals.clear()
    before, replaced = fake.cancels, fake.replaced
    q0 = fake.q.copy()
    first = client.send_goal_async(_goal(fake, [0.005 * k for k in range(1, 31)]))
    wait_for(first.done, 10, "acceptance")
    wait_for(lambda: fake.q[0] > q0[0] + 0.004, 10, "motion")
    second = _run(client, _goal(fake, [0.01, 0.02, 0.03]))
    assert second.status == ExecuteChunk.Result.STATUS_SUCCEEDED, second.message
    old = first.result().get_result_async()
    wait_for(old.done, 10, "the first chunk's result")
    assert old.result().result.status == ExecuteChunk.Result.STATUS_PREEMPTED
    assert len(fake.goals) == 2 and fake.replaced == replaced + 1
    assert fake.cancels == before, "the first trajectory was cancelled: the arm stopped"


def test_invalid_goal_never_reaches_the_controller(rig: tuple) -> None:
    fake, client, _ = rig
    fake.goals.clear()
    goal = _goal(fake, [0.01])
    goal.trajectory.points[0].positions[5] = 0.1  # below the FR3's joint 6 limit
    res = _run(client, goal)
    assert res.status == ExecuteChunk.Result.STATUS_REJECTED
    assert "fr3_joint6" in res.message and "0.5445" in res.message
    assert fake.goals == []


def test_missing_controller_is_reported(ifaces: Path, processes: Processes,
                                        namespace: str) -> None:
    from rclpy.node import Node  # noqa: F401 - the fixture's node type

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f"t_{uuid.uuid4().hex[:6]}", context=ctx)
    fake = FakeFranka(node, namespace)
    pub = node.create_publisher(JointState, f"{namespace}/joint_states", 10)
    executor = MultiThreadedExecutor(num_threads=2, context=ctx)
    executor.add_node(node)
    timer = node.create_timer(0.01, lambda: pub.publish(JointState(
        name=JOINTS, position=fake.q.tolist())))
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    old = dict(os.environ)
    os.environ.update(_env(ifaces))
    try:
        processes.start("control", "mango.nodes.franka_control_node", "-r", f"__ns:={namespace}",
                        "-p", "backend:=franka_ros2", "-p", "robot:=fr3",
                        "-p", f"arm_action:={namespace}/no_controller/follow_joint_trajectory",
                        "-p", f"joint_states_topic:={namespace}/joint_states",
                        "-p", "server_timeout:=1.0")
    finally:
        os.environ.clear()
        os.environ.update(old)
    try:
        client = ActionClient(node, ExecuteChunk, f"{namespace}/execute_chunk")
        assert client.wait_for_server(timeout_sec=60)
        res = _run(client, _goal(fake, [0.01]))
        assert res.status == ExecuteChunk.Result.STATUS_FAILED
        assert res.message == (f"arm controller {namespace}/no_controller/follow_joint_trajectory "
                               "is not available")
    finally:
        node.destroy_timer(timer)
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_without_system_packages_the_backend_says_so(processes: Processes,
                                                     namespace: str) -> None:
    proc = processes.start("control", "mango.nodes.franka_control_node", "-r",
                           f"__ns:={namespace}", "-p", "backend:=franka_ros2", "-p", "robot:=fr3")
    assert proc.wait(timeout=30) == 1
    log = processes.log("control")
    assert "needs control_msgs and franka_msgs from a system ROS 2" in log
    assert "Traceback" not in log
