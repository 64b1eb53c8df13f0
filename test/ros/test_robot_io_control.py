"""franka_control_node on the `sim` backend, driving a real sim_node over ROS.

Tolerances stated here: a 1 s chunk is tracked with a joint error under 0.1 rad at every
point's time (the sim's position actuators lag while moving) and under 0.02 rad once settled;
a cancel or halt is followed by no motion command sent later than one control period plus
100 ms of margin for transport and scheduling on a loaded machine (the bench measures the
latency itself).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
import rclpy
from builtin_interfaces.msg import Duration
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from support.ros import Processes, call_service, wait_for
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from mango.client.action_client import ActionClient
from mango.control import load_robot
from mango.policy.kinematics import make_kinematics
from mango_ros.action import ExecuteChunk, ExecuteMotion
from mango_ros.msg import MotionCommand
from mango_ros.srv import Halt

ROBOT = load_robot("sim_fr3")
JOINTS = list(ROBOT.joint_names)
KIN = make_kinematics(ROBOT)
CONTROL_RATE = 100.0
TRACK_TOL = 0.1  # rad at each point's time
SETTLED_TOL = 0.02  # rad after the chunk
HALT_MARGIN = 0.1  # s on top of one control period (2 shared cores)


@dataclass
class Rig:
    node: Node
    ns: str
    chunk: ActionClient
    motion: ActionClient
    states: list[tuple[float, np.ndarray, float]]
    commands: list[tuple[float, JointState]]
    procs: Processes

    def measured(self) -> np.ndarray:
        wait_for(lambda: self.states, what="joint states")
        return self.states[-1][1].copy()

    def width(self) -> float:
        return self.states[-1][2]


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    ns = f"/t{uuid.uuid4().hex[:8]}"
    procs = Processes(tmp_path_factory.mktemp("control"))
    procs.start("sim_node", "mango.nodes.sim_node", "-r", f"__ns:={ns}",
                "-p", "scene:=libero10_soup_sauce_basket", "-p", "camera_rate:=0.0")
    procs.start("control", "mango.nodes.franka_control_node", "-r", f"__ns:={ns}",
                "-p", "backend:=sim", "-p", "robot:=sim_fr3",
                "-p", f"control_rate:={CONTROL_RATE}")
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f"test_{uuid.uuid4().hex[:8]}", context=ctx)
    executor = MultiThreadedExecutor(num_threads=3, context=ctx)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    states: list[tuple[float, np.ndarray, float]] = []
    commands: list[tuple[float, JointState]] = []

    def on_state(msg: JointState) -> None:
        idx = [list(msg.name).index(j) for j in JOINTS]
        pos = np.asarray(msg.position)
        states.append((time.monotonic(), pos[idx], float(pos[-1] + pos[-2])))

    node.create_subscription(JointState, f"{ns}/joint_states", on_state, 50)
    node.create_subscription(JointState, f"{ns}/joint_command",
                             lambda m: commands.append((time.monotonic(), m)), 100)
    rig = Rig(node, ns, ActionClient(node, ExecuteChunk, f"{ns}/execute_chunk"),
              ActionClient(node, ExecuteMotion, f"{ns}/execute_motion"), states, commands, procs)
    try:
        assert rig.chunk.wait_for_server(timeout_sec=60), procs.log("control")
        assert rig.motion.wait_for_server(timeout_sec=10)
        wait_for(lambda: states, timeout=60, what="joint states from sim_node")
        wait_for(lambda: call_service(node, Halt, f"{ns}/halt", Halt.Request()).success,
                 timeout=30, what="control node receiving joint states")
        yield rig
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        thread.join(timeout=2.0)
        procs.stop_all()


def stamp(msg: JointState) -> float:
    """When the control node sent a command (its wall clock)."""
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def sent_since(rig: Rig, t: float, settle: float = 0.3) -> list[JointState]:
    """Commands the control node sent after wall time `t`, once those in flight arrived
    (a busy test process may take the last ones of an earlier goal late)."""
    time.sleep(settle)
    return [m for _, m in rig.commands if stamp(m) > t]


def chunk_goal(points: np.ndarray, rate: float = 15.0, names: list[str] | None = None,
               widths: list[float] | None = None) -> ExecuteChunk.Goal:
    goal = ExecuteChunk.Goal()
    goal.trajectory = JointTrajectory(joint_names=names or JOINTS)
    for k, q in enumerate(points, start=1):
        t = k / rate
        goal.trajectory.points.append(JointTrajectoryPoint(
            positions=[float(x) for x in q],
            time_from_start=Duration(sec=int(t), nanosec=int((t - int(t)) * 1e9))))
    goal.gripper_widths = widths or []
    return goal


def ramp(start: np.ndarray, delta: np.ndarray, n: int) -> np.ndarray:
    return np.array([start + delta * (k / n) for k in range(1, n + 1)])


def send(client: ActionClient, goal: object, timeout: float = 10.0):
    fut = client.send_goal_async(goal)
    wait_for(fut.done, timeout, "goal acceptance")
    gh = fut.result()
    assert gh.accepted
    return gh


def result_of(gh, timeout: float = 30.0):
    fut = gh.get_result_async()
    wait_for(fut.done, timeout, "result")
    return fut.result().result


def test_chunk_is_tracked(rig: Rig) -> None:
    q0 = rig.measured()
    delta = np.array([0.3, 0.2, 0.0, 0.2, 0.0, -0.2, 0.3])
    gh = send(rig.chunk, chunk_goal(ramp(q0, delta, 15), widths=[0.04] * 15))
    res = result_of(gh)
    assert res.status == ExecuteChunk.Result.STATUS_SUCCEEDED, res.message
    assert res.points_executed == 15
    assert res.max_joint_error < TRACK_TOL
    target = q0 + delta
    wait_for(lambda: np.max(np.abs(rig.measured() - target)) < SETTLED_TOL, timeout=3.0,
             what="arm settled on the last point")
    wait_for(lambda: abs(rig.width() - 0.04) < 0.005, timeout=3.0, what="gripper at 4 cm")
    assert len(res.final_positions) == 7


def test_cancel_mid_chunk_halts_within_one_control_period(rig: Rig) -> None:
    q0 = rig.measured()
    delta = np.array([1.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    gh = send(rig.chunk, chunk_goal(ramp(q0, delta, 45)))  # 3 s
    time.sleep(1.0)
    t_cancel = time.time()
    q_cancel = rig.measured()
    gh.cancel_goal_async()
    res = result_of(gh)
    assert res.status == ExecuteChunk.Result.STATUS_CANCELLED, res.message
    assert 0 < res.points_executed < 45
    time.sleep(0.6)
    late = [stamp(m) for _, m in rig.commands if stamp(m) > t_cancel]
    assert late, "no hold command after the cancel"
    assert max(late) - t_cancel <= 1.0 / CONTROL_RATE + HALT_MARGIN
    q_rest = rig.measured()
    # Held near where it was, not carried on to the goal: it moved a small part of what was
    # left (the measurement at cancel time can be a few joint-state periods old under load).
    left = abs(q0[0] + delta[0] - q_cancel[0])
    assert abs(q_rest[0] - q_cancel[0]) < 0.25 * left
    assert abs(q_rest[0] - (q0[0] + 1.2)) > 0.5


def _set(pts: np.ndarray, k: int, j: int, value: float) -> np.ndarray:
    pts = pts.copy()
    pts[k, j] = value
    return pts


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda pts, names: (_set(pts, 3, 2, math.nan), names),
         "fr3_joint3: position is not finite"),
        (lambda pts, names: (_set(pts, 2, 3, -0.1), names), "point 2, fr3_joint4: position -0.1000"
         " rad beyond its limits"),
        (lambda pts, names: (pts, [*names[:6], "fr3_joint9"]), "unknown ['fr3_joint9']"),
        (lambda pts, names: (pts[:, :6], names[:6]), "missing ['fr3_joint7']"),
        (lambda pts, names: (pts + np.array([1.5, 0, 0, 0, 0, 0, 0]), names),
         "fr3_joint1: velocity"),
    ],
    ids=["nan", "beyond_limit", "wrong_joint", "joint_count", "too_fast"],
)
def test_invalid_goal_rejected_with_reason(rig: Rig, mutate, reason: str) -> None:
    q0 = rig.measured()
    pts, names = mutate(ramp(q0, np.full(7, 0.01), 5), list(JOINTS))
    t_sent = time.time()
    gh = send(rig.chunk, chunk_goal(pts, names=names))
    res = result_of(gh)
    assert res.status == ExecuteChunk.Result.STATUS_REJECTED
    assert reason in res.message
    assert not sent_since(rig, t_sent)  # nothing was sent to the arm


def test_first_point_a_little_too_soon_starts_late(rig: Rig) -> None:
    """The arm moved on since the sender timed the chunk: it starts late, not refused."""
    q0 = rig.measured()
    # 0.16 rad on joint 1 in 1/15 s is 2.4 rad/s, over its 2.175 rad/s: ~7 ms late.
    pts = ramp(q0, np.array([0.16, 0, 0, 0, 0, 0, 0]), 1)
    pts = np.vstack([pts, ramp(pts[0], np.array([0.05, 0, 0, 0, 0, 0, 0]), 4)])
    res = result_of(send(rig.chunk, chunk_goal(pts)))
    assert res.status == ExecuteChunk.Result.STATUS_SUCCEEDED, res.message
    assert res.points_executed == 5
    assert "ms late to keep the first point within the velocity limits" in res.message
    wait_for(lambda: np.max(np.abs(rig.measured() - pts[-1])) < SETTLED_TOL, timeout=3.0,
             what="arm settled on the last point")


def test_workspace_box_rejects(rig: Rig) -> None:
    q0 = rig.measured()
    target = q0.copy()
    target[1], target[3] = 1.5, -1.5  # shoulder forward, elbow bent: hand through the table
    assert KIN.fk(target)[0][2] < ROBOT.workspace.min[2] - 0.1
    pts = ramp(q0, target - q0, 60)
    res = result_of(send(rig.chunk, chunk_goal(pts, rate=15.0)))
    assert res.status == ExecuteChunk.Result.STATUS_REJECTED
    assert "workspace box" in res.message


def test_new_goal_preempts_the_old(rig: Rig) -> None:
    q0 = rig.measured()
    first = send(rig.chunk, chunk_goal(ramp(q0, np.array([0.8, 0, 0, 0, 0, 0, 0]), 45)))
    time.sleep(0.5)
    q1 = rig.measured()
    second = send(rig.chunk, chunk_goal(ramp(q1, np.array([0, 0, 0, 0, 0, 0.2, 0]), 8)))
    res1 = result_of(first)
    assert res1.status == ExecuteChunk.Result.STATUS_PREEMPTED, res1.message
    res2 = result_of(second)
    assert res2.status == ExecuteChunk.Result.STATUS_SUCCEEDED, res2.message
    wait_for(lambda: abs(rig.measured()[5] - (q1[5] + 0.2)) < SETTLED_TOL, timeout=3.0,
             what="second goal reached")
    assert abs(rig.measured()[0] - (q0[0] + 0.8)) > 0.3  # the first never finished


def test_halt_service_stops_the_active_goal(rig: Rig) -> None:
    q0 = rig.measured()
    gh = send(rig.chunk, chunk_goal(ramp(q0, np.array([-0.9, 0, 0, 0, 0, 0, 0]), 45)))
    time.sleep(0.8)
    t_halt = time.time()
    reply = call_service(rig.node, Halt, f"{rig.ns}/halt", Halt.Request())
    assert reply.success, reply.message
    res = result_of(gh)
    assert res.status == ExecuteChunk.Result.STATUS_CANCELLED
    assert "halt" in res.message
    time.sleep(0.5)
    # the service round trip is in the path too
    assert max(stamp(m) for _, m in rig.commands) - t_halt <= 1.0 / CONTROL_RATE + HALT_MARGIN


def _cmd(kind: int, **kw: float) -> MotionCommand:
    c = MotionCommand(type=kind)
    for k, v in kw.items():
        if k in ("dx", "dy", "dz"):
            setattr(c.direction, k[1], v)
        elif k in ("ax", "ay", "az"):
            setattr(c.axis, k[1], v)
        else:
            setattr(c, k, v)
    return c


def test_motion_commands_move_the_hand(rig: Rig) -> None:
    # home first: a known, well-conditioned pose
    res = result_of(send(rig.motion, ExecuteMotion.Goal(commands=[_cmd(MotionCommand.HOME)])))
    assert res.status == ExecuteMotion.Result.STATUS_SUCCEEDED, res.message
    z0 = res.measured_poses[-1].position.z
    goal = ExecuteMotion.Goal(commands=[
        _cmd(MotionCommand.MOVE, dz=-1.0, distance_mm=60.0),
        _cmd(MotionCommand.MOVE, dx=1.0, dy=1.0, distance_mm=50.0),
        _cmd(MotionCommand.ROTATE, az=1.0, angle_deg=30.0),
        _cmd(MotionCommand.GRIPPER_WIDTH, width=0.03),
        _cmd(MotionCommand.WAIT, duration=0.2),
    ])
    res = result_of(send(rig.motion, goal), timeout=60)
    assert res.status == ExecuteMotion.Result.STATUS_SUCCEEDED, res.message
    assert res.commands_executed == 5
    p = [(m.position.x, m.position.y, m.position.z) for m in res.measured_poses]
    assert p[0][2] == pytest.approx(z0 - 0.06, abs=0.01)
    assert math.dist(p[0][:2], p[1][:2]) == pytest.approx(0.05, abs=0.01)
    assert res.measured_gripper_widths[3] == pytest.approx(0.03, abs=0.005)


def test_unreachable_motion_rejected_before_moving(rig: Rig) -> None:
    t_sent = time.time()
    goal = ExecuteMotion.Goal(commands=[
        _cmd(MotionCommand.MOVE, dz=-1.0, distance_mm=10.0),
        _cmd(MotionCommand.MOVE, dx=1.0, distance_mm=2000.0),
    ])
    res = result_of(send(rig.motion, goal))
    assert res.status == ExecuteMotion.Result.STATUS_REJECTED
    assert res.message.startswith("command 1 (move 2000 mm")
    assert not sent_since(rig, t_sent)


def test_cancelled_motion_stops_at_the_next_command_boundary(rig: Rig) -> None:
    res = result_of(send(rig.motion, ExecuteMotion.Goal(commands=[_cmd(MotionCommand.HOME)])))
    assert res.status == ExecuteMotion.Result.STATUS_SUCCEEDED, res.message
    z0 = res.measured_poses[-1].position.z
    goal = ExecuteMotion.Goal(commands=[_cmd(MotionCommand.MOVE, dz=-1.0, distance_mm=40.0)
                                        for _ in range(3)])
    n = len(rig.commands)
    gh = send(rig.motion, goal)
    # Inside the first 40 mm move (0.4 s): cancel once its first commands went out, not after a
    # fixed sleep, which a loaded machine can spend still planning the batch.
    wait_for(lambda: len(rig.commands) > n + 2, timeout=10, what="the first move under way")
    gh.cancel_goal_async()
    res = result_of(gh)
    assert res.status == ExecuteMotion.Result.STATUS_CANCELLED, res.message
    assert res.commands_executed == 1  # the first move finished, the rest never started
    assert res.measured_poses[0].position.z == pytest.approx(z0 - 0.04, abs=0.01)
