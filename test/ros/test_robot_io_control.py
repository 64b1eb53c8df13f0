"""franka_control_node on the `sim` backend, driving a real sim_node over ROS.

Tolerances stated here: a 1 s chunk is tracked with a joint error under 0.1 rad at every
point's time (the sim's position actuators lag while moving) and under 0.02 rad once settled;
a cancel or halt is followed by no motion command sent later than one control period plus
100 ms of margin for transport and scheduling on a loaded machine (the bench measures the
latency itself).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from rclpy.node import Node
from sensor_msgs.msg import JointState
from support.ros import Processes, wait_for

from mango.client import ActionTask, Outcome, Robot, TaskResult
from mango.client.session import spun_node
from mango.control import JointTrajectory, MotionCommand, load_robot
from mango.nodes.actions import ActionClient
from mango.policy.kinematics import make_kinematics
from mango.ros.trajectory_msg import chunk_goal
from mango_ros.action import ExecuteChunk

ROBOT = load_robot("fr3")
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
    robot: Robot
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
                "-p", "backend:=sim", "-p", "robot:=fr3",
                "-p", f"control_rate:={CONTROL_RATE}")
    with spun_node("test", threads=3) as node:
        states: list[tuple[float, np.ndarray, float]] = []
        commands: list[tuple[float, JointState]] = []

        def on_state(msg: JointState) -> None:
            idx = [list(msg.name).index(j) for j in JOINTS]
            pos = np.asarray(msg.position)
            states.append((time.monotonic(), pos[idx], float(pos[-1] + pos[-2])))

        node.create_subscription(JointState, f"{ns}/joint_states", on_state, 50)
        node.create_subscription(JointState, f"{ns}/joint_command",
                                 lambda m: commands.append((time.monotonic(), m)), 100)
        rig = Rig(node, ns, Robot(node, ns), states, commands, procs)
        try:
            try:
                rig.robot.wait_for_servers("execute_chunk", "execute_motion", "halt",
                                           timeout=60)
            except TimeoutError as exc:
                raise AssertionError(f"{exc}\n{procs.log('control')}") from None
            wait_for(lambda: states, timeout=60, what="joint states from sim_node")
            wait_for(lambda: rig.robot.halt().success, timeout=30,
                     what="control node receiving joint states")
            yield rig
        finally:
            procs.stop_all()


def stamp(msg: JointState) -> float:
    """When the control node sent a command (its wall clock)."""
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def arm(msg: JointState) -> np.ndarray:
    """A command's seven arm joint positions, in the robot's joint order."""
    return np.array([msg.position[list(msg.name).index(j)] for j in JOINTS])


def sent_since(rig: Rig, t: float, settle: float = 0.3) -> list[JointState]:
    """Commands the control node sent after wall time `t`, once those in flight arrived
    (a busy test process may take the last ones of an earlier goal late)."""
    time.sleep(settle)
    return [m for _, m in rig.commands if stamp(m) > t]


def chunk(points: np.ndarray, rate: float = 15.0, names: list[str] | None = None,
          widths: list[float] | None = None) -> JointTrajectory:
    """Points played at `rate` (any joint names and counts: the server validates them)."""
    pts = np.asarray(points, float)
    return JointTrajectory(tuple(names or JOINTS), np.arange(1, len(pts) + 1) / rate, pts,
                           None if widths is None else np.asarray(widths, float))


def ramp(start: np.ndarray, delta: np.ndarray, n: int) -> np.ndarray:
    return np.array([start + delta * (k / n) for k in range(1, n + 1)])


def send(task: ActionTask, timeout: float = 10.0) -> ActionTask:
    wait_for(lambda: task.accepted or task.done(), timeout, "goal acceptance")
    assert task.accepted, task.result().message
    return task


def result_of(task: ActionTask, timeout: float = 30.0) -> Outcome:
    return task.result(timeout)


def test_chunk_is_tracked(rig: Rig) -> None:
    q0 = rig.measured()
    delta = np.array([0.3, 0.2, 0.0, 0.2, 0.0, -0.2, 0.3])
    gh = send(rig.robot.start_chunk(chunk(ramp(q0, delta, 15), widths=[0.04] * 15)))
    res = result_of(gh)
    assert res.result is TaskResult.SUCCEEDED, res.message
    assert res.response.points_executed == 15
    assert res.response.max_joint_error < TRACK_TOL
    target = q0 + delta
    wait_for(lambda: np.max(np.abs(rig.measured() - target)) < SETTLED_TOL, timeout=3.0,
             what="arm settled on the last point")
    wait_for(lambda: abs(rig.width() - 0.04) < 0.005, timeout=3.0, what="gripper at 4 cm")
    assert len(res.response.final_positions) == 7


def test_cancel_mid_chunk_halts_within_one_control_period(rig: Rig) -> None:
    q0 = rig.measured()
    delta = np.array([1.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    seen: list = []
    gh = send(rig.robot.start_chunk(chunk(ramp(q0, delta, 45)), feedback=seen.append))  # 3 s
    # under way by its own account, not by a sleep: a loaded CI machine had executed no point
    # 1 s after the goal was accepted
    wait_for(lambda: any(f.point_index >= 5 for f in seen), 20.0, "the chunk under way")
    t_cancel = time.time()
    gh.cancel()
    res = result_of(gh)
    assert res.result is TaskResult.CANCELLED, res.message
    assert 0 < res.response.points_executed < 45
    # Judged on the commands' own send stamps (the control node's wall clock), not on when
    # this process took them: under load its joint states and commands arrive up to a second
    # late (CI saw the arm measured 0.37 rad behind where it was).
    wait_for(lambda: any(stamp(m) > t_cancel for _, m in rig.commands), 5.0,
             "the hold command after the cancel")
    time.sleep(0.3)
    late = [m for _, m in rig.commands if stamp(m) > t_cancel]
    assert max(map(stamp, late)) - t_cancel <= 1.0 / CONTROL_RATE + HALT_MARGIN
    before = [m for _, m in rig.commands if stamp(m) <= t_cancel]
    target = np.asarray(max(before, key=stamp).position[:7])  # where the arm was sent then
    hold = np.asarray(max(late, key=stamp).position[:7])
    # Held where it was (the measured arm, a tracking lag behind the target), not carried on:
    goal = q0[0] + delta[0]
    assert abs(hold[0] - target[0]) < TRACK_TOL
    assert abs(goal - hold[0]) > 0.5
    # ... and it stays there
    wait_for(lambda: np.max(np.abs(rig.measured() - hold)) < SETTLED_TOL, 5.0,
             "the arm settling at the hold position")


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
    gh = send(rig.robot.start_chunk(chunk(pts, names=names)))
    res = result_of(gh)
    assert res.result is TaskResult.REJECTED
    assert reason in res.message
    assert not sent_since(rig, t_sent)  # nothing was sent to the arm


def test_first_point_a_little_too_soon_starts_late(rig: Rig) -> None:
    """The arm moved on since the sender timed the chunk: it starts late, not refused."""
    q0 = rig.measured()
    # 0.2 rad on joint 1 in 1/15 s is 3 rad/s, over the FR3's 2.62 rad/s: ~10 ms late.
    pts = ramp(q0, np.array([0.2, 0, 0, 0, 0, 0, 0]), 1)
    pts = np.vstack([pts, ramp(pts[0], np.array([0.05, 0, 0, 0, 0, 0, 0]), 4)])
    res = result_of(send(rig.robot.start_chunk(chunk(pts))))
    assert res.result is TaskResult.SUCCEEDED, res.message
    assert res.response.points_executed == 5
    assert "ms late to keep the first point within the velocity limits" in res.message
    wait_for(lambda: np.max(np.abs(rig.measured() - pts[-1])) < SETTLED_TOL, timeout=3.0,
             what="arm settled on the last point")


def test_workspace_box_rejects(rig: Rig) -> None:
    q0 = rig.measured()
    target = q0.copy()
    target[1], target[3] = 1.5, -1.5  # shoulder forward, elbow bent: hand through the table
    assert KIN.fk(target)[0][2] < ROBOT.workspace.min[2] - 0.1
    pts = ramp(q0, target - q0, 60)
    res = result_of(send(rig.robot.start_chunk(chunk(pts, rate=15.0))))
    assert res.result is TaskResult.REJECTED
    assert "workspace box" in res.message


def test_new_goal_preempts_the_old(rig: Rig) -> None:
    q0 = rig.measured()
    first = send(rig.robot.start_chunk(chunk(ramp(q0, np.array([0.8, 0, 0, 0, 0, 0, 0]), 45))))
    time.sleep(0.5)
    q1 = rig.measured()
    second = send(rig.robot.start_chunk(chunk(ramp(q1, np.array([0, 0, 0, 0, 0, 0.2, 0]), 8))))
    res1 = result_of(first)
    assert res1.result is TaskResult.PREEMPTED, res1.message
    res2 = result_of(second)
    assert res2.result is TaskResult.SUCCEEDED, res2.message
    wait_for(lambda: abs(rig.measured()[5] - (q1[5] + 0.2)) < SETTLED_TOL, timeout=3.0,
             what="second goal reached")
    assert abs(rig.measured()[0] - (q0[0] + 0.8)) > 0.3  # the first never finished


def test_halt_service_stops_the_active_goal(rig: Rig) -> None:
    q0 = rig.measured()
    gh = send(rig.robot.start_chunk(chunk(ramp(q0, np.array([-0.9, 0, 0, 0, 0, 0, 0]), 45))))
    time.sleep(0.8)
    t_halt = time.time()
    reply = rig.robot.halt()
    t_reply = time.time()
    assert reply.success, reply.message
    res = result_of(gh)
    assert res.result is TaskResult.CANCELLED
    assert "halt" in res.message
    time.sleep(0.5)
    # Within one control period (and the margin) of the reply: the request's way to the node
    # is in the path too, and on a loaded machine it is slow (CI: the last command 149 ms
    # after the call was made). The arm would have gone on for 2 s more.
    last = max(stamp(m) for _, m in rig.commands)
    assert last - t_reply <= 1.0 / CONTROL_RATE + HALT_MARGIN, (last - t_halt, t_reply - t_halt)


def test_motion_commands_move_the_hand(rig: Rig) -> None:
    # home first: a known, well-conditioned pose
    res = result_of(send(rig.robot.start_motion([MotionCommand("home")])))
    assert res.result is TaskResult.SUCCEEDED, res.message
    z0 = res.response.measured_poses[-1].position.z
    goal = [
        MotionCommand("move", direction=(0.0, 0.0, -1.0), distance_mm=60.0),
        MotionCommand("move", direction=(1.0, 1.0, 0.0), distance_mm=50.0),
        MotionCommand("rotate", axis=(0.0, 0.0, 1.0), angle_deg=30.0),
        MotionCommand("gripper_width", width=0.03),
        MotionCommand("wait", duration=0.2),
    ]
    res = result_of(send(rig.robot.start_motion(goal)), timeout=60)
    assert res.result is TaskResult.SUCCEEDED, res.message
    assert res.response.commands_executed == 5
    p = [(m.position.x, m.position.y, m.position.z) for m in res.response.measured_poses]
    assert p[0][2] == pytest.approx(z0 - 0.06, abs=0.01)
    assert math.dist(p[0][:2], p[1][:2]) == pytest.approx(0.05, abs=0.01)
    assert res.response.measured_gripper_widths[3] == pytest.approx(0.03, abs=0.005)


def test_unreachable_motion_rejected_before_moving(rig: Rig) -> None:
    t_sent = time.time()
    goal = [
        MotionCommand("move", direction=(0.0, 0.0, -1.0), distance_mm=10.0),
        MotionCommand("move", direction=(1.0, 0.0, 0.0), distance_mm=2000.0),
    ]
    res = result_of(send(rig.robot.start_motion(goal)))
    assert res.result is TaskResult.REJECTED
    assert res.message.startswith("command 1 (move 2000 mm")
    assert not sent_since(rig, t_sent)


def test_cancelled_motion_stops_at_the_next_command_boundary(rig: Rig) -> None:
    res = result_of(send(rig.robot.start_motion([MotionCommand("home")])))
    assert res.result is TaskResult.SUCCEEDED, res.message
    z0 = res.response.measured_poses[-1].position.z
    goal = [MotionCommand("move", direction=(0.0, 0.0, -1.0), distance_mm=60.0)
            for _ in range(3)]
    time.sleep(0.3)  # the home goal's last commands arrived
    held = arm(rig.commands[-1][1])
    t_sent = time.time()
    gh = send(rig.robot.start_motion(goal))
    # Cancel once the first 60 mm move (0.6 s) is under way: a command that moves the arm
    # (the control node holds the arm with commands while it plans, so a count of commands
    # says nothing; a CI run cancelled during the planning: "cancelled after 0 command(s)")
    wait_for(lambda: any(stamp(m) > t_sent and np.abs(arm(m) - held).max()
                         > 2e-3 for _, m in list(rig.commands)),
             timeout=10, what="the first move under way")
    assert rig.robot.cancel() == 1  # the batch is the robot's one goal in flight
    res = result_of(gh)
    assert res.result is TaskResult.CANCELLED, res.message
    assert res.response.commands_executed == 1  # the first move finished, the rest never started
    assert res.response.measured_poses[0].position.z == pytest.approx(z0 - 0.06, abs=0.01)


def test_a_goal_storm_gets_every_goal_an_answer_and_the_arm_holds_still(rig: Rig) -> None:
    """300 chunk goals 10 ms apart, their results asked for only once all were sent (a burst
    of 300 result requests): the ROS 2 action contract holds under preemption. Every goal
    gets an accept or reject answer, every accepted goal a result with a reason, the last one
    runs to its end, and the arm never moves beyond the storm's own small targets."""
    client = ActionClient(rig.node, ExecuteChunk, f"{rig.ns}/execute_chunk")
    assert client.wait_for_server(timeout_sec=10)
    q0 = rig.measured()
    sent = []
    for k in range(300):
        wobble = np.array([0.02, 0, 0, 0, 0, 0, 0]) * (1 if k % 2 else -1)
        sent.append(client.send_goal_async(chunk_goal(chunk(ramp(q0, wobble, 6)))))
        time.sleep(0.01)
    wait_for(lambda: all(f.done() for f in sent), 60, "an answer to every goal")
    handles = [f.result() for f in sent]
    assert all(h.accepted for h in handles)  # valid goals: preempted, never refused
    results = [h.get_result_async() for h in handles]
    wait_for(lambda: all(r.done() for r in results), 60, "a result for every accepted goal")
    statuses = [r.result().result.status for r in results]
    assert all(r.result().result.message for r in results)  # each says why it ended
    assert statuses[-1] == ExecuteChunk.Result.STATUS_SUCCEEDED, results[-1].result().result
    # A goal is preempted by the next one; it may run to its end only when the next one
    # reached the server after that (0.4 s: 6 points at 15 Hz), which a loaded machine's
    # transport and executors can delay past the 10 ms this process spaced them (CI saw it).
    # What must hold either way: a status that says what happened (a success ran every
    # point, a preemption stopped short or at the end), and preemption as the rule.
    ok, pre = ExecuteChunk.Result.STATUS_SUCCEEDED, ExecuteChunk.Result.STATUS_PREEMPTED
    for k, r in enumerate(results[:-1]):
        res = r.result().result
        assert res.status in (ok, pre), (k, res.status, res.message)
        if res.status == ok:
            assert res.points_executed == 6, (k, res.points_executed)
        else:
            assert res.points_executed <= 6, (k, res.points_executed)
    finished = sum(s == ok for s in statuses[:-1])
    assert finished <= 30, f"{finished} of 299 goals ran to their end instead of preempted"
    moved = max(np.max(np.abs(q - q0)) for _, q, _ in rig.states[-300:])
    assert moved < 0.05, moved  # the wobble is 0.02 rad


def test_hostile_motion_magnitudes_are_refused_before_planning(rig: Rig) -> None:
    """Seeded fuzz over command magnitudes (overflowing distances, directions whose norm
    overflows, waits of years, rotations of a billion degrees): each goal is answered within
    seconds, refused with the reason, or executed; none "succeeds" without moving."""
    import random

    rng = random.Random(5)
    huge = [1e300, -1e300, 1e308, math.inf, -math.inf, math.nan, 1e12, 1e9, 5e3]
    for _ in range(24):
        kind = rng.choice(["move", "rotate", "wait", "gripper_width"])
        value = rng.choice(huge)
        vec = tuple(rng.choice([0.0, 1.0, 1e308, -1e308, math.nan]) for _ in range(3))
        cmd = {"move": MotionCommand("move", direction=vec, distance_mm=value),
               "rotate": MotionCommand("rotate", axis=vec, angle_deg=value),
               "wait": MotionCommand("wait", duration=value),
               "gripper_width": MotionCommand("gripper_width", width=value)}[kind]
        out = rig.robot.execute_motion([cmd], timeout=30)
        assert out.result is TaskResult.REJECTED, (cmd, out)
        assert out.message.startswith("command 0 (") and out.response.commands_executed == 0
    # a direction whose norm overflows is still a direction: 10 mm along x+y
    res = rig.robot.execute_motion([MotionCommand("home")], timeout=60)
    assert res.succeeded, res.message
    out = rig.robot.execute_motion(
        [MotionCommand("move", direction=(1e308, 1e308, 0.0), distance_mm=10.0)], timeout=30)
    assert out.succeeded, out.message
    p0, p1 = res.response.measured_poses[-1].position, out.response.measured_poses[-1].position
    assert math.dist((p0.x, p0.y), (p1.x, p1.y)) == pytest.approx(0.01, abs=0.004)
