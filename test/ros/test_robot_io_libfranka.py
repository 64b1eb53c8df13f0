"""franka_control_node on the `libfranka` backend over ROS, driving franky-sim's FR3 through
libfranka (franky_sim_node serves libfranka's protocol on a loopback address): the goals a
client sends, the joint states the node publishes from the robot's own state stream, and a
robot that goes away mid-goal.

The motion itself (tracking, back to back, cancel, 50 mm) is measured in
test/control/test_libfranka.py; here the node's side of it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from franky_sim import DEFAULT_HAND_INITIAL_WIDTH
from rclpy.node import Node
from sensor_msgs.msg import JointState
from support.ros import Processes, wait_for

from mango.client import Robot, TaskResult
from mango.client.session import spun_node
from mango.control import JointTrajectory, MotionCommand, load_robot
from mango.control.joint_state import FINGERS
from mango.policy.kinematics import make_kinematics
from mango.sim.franky_server import free_loopback_address

ROBOT = load_robot("fr3")
JOINTS = list(ROBOT.joint_names)
KIN = make_kinematics(ROBOT)


@dataclass
class Rig:
    node: Node
    ns: str
    address: str
    robot: Robot
    states: list[tuple[float, float, JointState]]  # (received, stamp, message)
    latest: list[JointState]  # the newest only (a depth-1 reader: never a backlog at 200 Hz)
    procs: Processes

    def measured(self) -> np.ndarray:
        wait_for(lambda: self.latest, what="joint states")
        msg = self.latest[-1]
        return np.asarray([msg.position[list(msg.name).index(j)] for j in JOINTS])


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    ns, address = f"/t{uuid.uuid4().hex[:8]}", free_loopback_address()
    procs = Processes(tmp_path_factory.mktemp("libfranka"))
    procs.start("franky_sim", "mango.nodes.franky_sim_node", "-r", f"__ns:={ns}",
                "-p", f"address:={address}")
    procs.start("control", "mango.nodes.franka_control_node", "-r", f"__ns:={ns}",
                "-p", "backend:=libfranka", "-p", f"robot_ip:={address}",
                "-p", "realtime:=false", "-p", "recover:=true")
    with spun_node("test", threads=3) as node:
        states: list[tuple[float, float, JointState]] = []

        def on_state(msg: JointState) -> None:
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            states.append((time.monotonic(), stamp, msg))

        latest: list[JointState] = []
        node.create_subscription(JointState, f"{ns}/joint_states", on_state, 500)
        node.create_subscription(JointState, f"{ns}/joint_states",
                                 lambda m: latest.__setitem__(slice(None), [m]), 1)
        rig = Rig(node, ns, address, Robot(node, ns), states, latest, procs)
        try:
            rig.robot.wait_for_servers("execute_chunk", "execute_motion", timeout=60.0)
            wait_for(lambda: len(states) > 10, timeout=30.0, what="joint states")
            yield rig
        finally:
            procs.stop_all()


def test_joint_states_come_from_the_robot_at_200_hz_with_its_hand(rig: Rig) -> None:
    n = len(rig.states)
    time.sleep(1.0)
    window = rig.states[n:]
    stamps = np.asarray([s for _r, s, _m in window])
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    print(f"\njoint_states: {rate:.0f} Hz by their stamps (the robot's clock)")
    assert rate >= 100.0 and np.all(np.diff(stamps) > 0)
    msg = window[-1][2]
    assert list(msg.name) == [*JOINTS, *FINGERS] and len(msg.velocity) == len(msg.name)
    # the hand's own width, as franky-sim starts it
    assert abs(msg.position[-1] + msg.position[-2] - DEFAULT_HAND_INITIAL_WIDTH) < 0.002


def test_a_chunk_and_a_motion_through_the_node(rig: Rig) -> None:
    q0 = rig.measured()
    n = 12
    offsets = np.outer(0.5 - 0.5 * np.cos(np.pi * np.arange(1, n + 1) / n),
                       [0.1, 0.0, 0.0, 0.08, 0.0, 0.0, 0.0])
    traj = JointTrajectory(JOINTS, np.arange(1, n + 1) / 15.0, q0 + offsets)
    out = rig.robot.execute_chunk(traj, timeout=30.0)
    assert out.result is TaskResult.SUCCEEDED, out.message
    assert np.max(np.abs(np.asarray(out.response.final_positions) - (q0 + offsets[-1]))) < 0.002
    before = KIN.fk(np.asarray(out.response.final_positions))[0]  # the node's measure, at rest
    moved = rig.robot.execute_motion([MotionCommand("move", (0.0, 0.0, 1.0), 30.0)],
                                     timeout=30.0)
    assert moved.result is TaskResult.SUCCEEDED, moved.message
    p = moved.response.measured_poses[0].position
    rise = np.asarray([p.x, p.y, p.z]) - before
    print(f"\nmove 30 mm up through the node: measured {rise * 1e3} mm")
    assert abs(rise[2] - 0.030) < 0.001 and np.max(np.abs(rise[:2])) < 0.001


def test_a_robot_that_goes_away_fails_the_goal_and_the_node_lives_on(rig: Rig) -> None:
    q0 = rig.measured()
    n = 45
    offsets = np.outer(np.arange(1, n + 1) * 0.01, [1.0, 0, 0, 0, 0, 0, 0])
    task = rig.robot.start_chunk(JointTrajectory(JOINTS, np.arange(1, n + 1) / 15.0,
                                                 q0 + offsets))
    time.sleep(0.5)
    sim = rig.procs.procs[0][1]
    sim.kill()
    sim.wait()
    out = task.result(timeout=10.0)
    assert out.result is TaskResult.FAILED and "connection is lost" in out.message, out.message
    assert rig.procs.procs[1][1].poll() is None  # the node that lost its robot is still up
    refused = rig.robot.execute_chunk(JointTrajectory(JOINTS, np.array([1.0]), q0[None]),
                                      timeout=30.0)
    assert refused.result in (TaskResult.FAILED, TaskResult.REJECTED)
    assert "connection is lost" in refused.message or "no joint state" in refused.message
