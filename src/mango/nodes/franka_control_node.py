"""Franka control node: the one door every higher part drives the arm through.

Actions `execute_chunk` (ExecuteChunk: a joint trajectory at the policy rate + gripper widths)
and `execute_motion` (ExecuteMotion: mid-level commands planned through IK), service `halt`.
Every goal is validated before the arm moves (joint names, limits, velocities, finite values,
workspace box) and refused with the reason; one goal is active at a time (a new goal preempts
the old); cancel of a chunk, `halt`, or preemption stop the motion and hold position within
one control period; a cancelled motion batch stops at the next command boundary.

Backends (parameter `backend`): `sim` streams position targets to `sim_node` on
`joint_command` at `control_rate` and reads `joint_states`; `franka_ros2` sends the trajectory
to `/fr3_arm_controller/follow_joint_trajectory` (control_msgs FollowJointTrajectory) and the
gripper width to the franka gripper's `move`/`grasp` actions under `gripper_namespace`
(`control_msgs`/`franka_msgs` exist only on a system ROS 2 and are imported lazily).
Parameters: `backend`, `robot` (config/robots name or file), `control_rate`,
`check_workspace`, `max_start_delay` (s a chunk may start late so its first point, timed by
a sender that saw the arm a moment earlier, stays within the velocity limits from where the
arm is; 0 refuses such a chunk instead), `joint_states_topic`, `joint_command_topic`, `arm_action`,
`gripper_namespace`, `grasp_force`, `gripper_speed`, `server_timeout`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from geometry_msgs.msg import Point, Pose, Quaternion
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState

from mango.control import (
    GoalRejected,
    JointTrajectory,
    MotionCommand,
    MotionPlanner,
    RobotConfig,
    load_robot,
    validate_trajectory,
)
from mango.errors import InputError
from mango.nodes.common import run_node
from mango.policy.kinematics import make_kinematics
from mango_ros.action import ExecuteChunk, ExecuteMotion
from mango_ros.msg import MotionCommand as MotionCommandMsg
from mango_ros.srv import Halt

GRIPPER = "gripper"
SETTLE_TOL = 0.003  # rad: a motion command counts as done when every joint is this close
SETTLE_TIMEOUT = 1.0  # s to wait for that before measuring anyway
STALE_AFTER = 2.0  # s without a joint state: the arm's position is no longer known
NO_RECENT_STATE = f"no joint state received in the last {STALE_AFTER:g} s"
FINGERS = ("fr3_finger_joint1", "fr3_finger_joint2")
_KIND_OF_TYPE = {
    MotionCommandMsg.MOVE: "move", MotionCommandMsg.ROTATE: "rotate",
    MotionCommandMsg.GRIPPER_OPEN: "gripper_open", MotionCommandMsg.GRIPPER_CLOSE: "gripper_close",
    MotionCommandMsg.GRIPPER_WIDTH: "gripper_width", MotionCommandMsg.WAIT: "wait",
    MotionCommandMsg.HOME: "home",
}


@dataclass
class _Run:
    """One goal being executed; `stop` wakes its control loop at once."""

    goal_handle: Any
    stop: threading.Event = field(default_factory=threading.Event)
    reason: str = ""
    cancel_at_boundary: bool = False
    halted_at: float | None = None

    def halt(self, reason: str) -> None:
        if not self.stop.is_set():
            self.reason = reason
            self.stop.set()


@dataclass
class Outcome:
    ok: bool
    stopped: bool = False
    message: str = ""
    points_executed: int = 0
    max_error: float = 0.0


@dataclass
class Measured:
    q: np.ndarray
    width: float | None
    t: float  # monotonic time of reception
    stamp: float  # the message's header stamp (s); from sim_node, the simulator's time


class Backend(Protocol):
    def measured(self) -> Measured | None: ...

    def execute(self, traj: JointTrajectory, run: _Run,
                on_point: Callable[[int, float], None]) -> Outcome: ...

    def hold(self) -> None: ...


class _JointStateReader:
    """Latest measured arm joints (robot order) and gripper width from a JointState topic."""

    def __init__(self, node: Node, robot: RobotConfig, topic: str) -> None:
        self.robot = robot
        self._latest: Measured | None = None
        self._index: dict[tuple[str, ...], tuple[list[int], list[int]]] = {}
        node.create_subscription(JointState, topic, self._on_state, 10,
                                 callback_group=ReentrantCallbackGroup())

    def _on_state(self, msg: JointState) -> None:
        key = tuple(msg.name)
        idx = self._index.get(key)
        if idx is None:
            try:
                arm = [key.index(n) for n in self.robot.joint_names]
            except ValueError:
                return  # e.g. a gripper-only message
            idx = (arm, [key.index(f) for f in FINGERS if f in key])
            self._index[key] = idx
        pos = np.asarray(msg.position, float)
        width = float(np.sum(pos[idx[1]])) if len(idx[1]) == 2 else None
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self._latest = Measured(pos[idx[0]], width, time.monotonic(), stamp)

    def measured(self) -> Measured | None:
        return self._latest


class _PointTracker:
    """Records the joint error at each point's time and sends feedback."""

    def __init__(self, traj: JointTrajectory, reader: _JointStateReader,
                 on_point: Callable[[int, float], None]) -> None:
        self.traj, self.reader, self.on_point = traj, reader, on_point
        self.done = 0
        self.max_error = 0.0

    def update(self, t: float) -> None:
        last = self.traj.point_index(t)
        while self.done <= last:
            m = self.reader.measured()
            err = float(np.max(np.abs(m.q - self.traj.positions[self.done]))) if m else np.nan
            self.max_error = max(self.max_error, err) if np.isfinite(err) else self.max_error
            self.on_point(self.done, err)
            self.done += 1


class SimBackend:
    """Streams interpolated position targets to sim_node's `joint_command` at the control rate.

    Trajectory time follows the simulator's clock, read from the joint states' stamps, so a
    simulator that falls behind real time (a loaded machine) still sees every trajectory at
    its own speed, instead of targets that run ahead and jerk the arm (and shake a grasped
    object loose). Joint states reach this node unevenly (bursts after a busy moment), so
    the simulator's time now is estimated from the latest one plus the wall time since it
    came, up to `EXTRAPOLATE` s: smooth while the simulator keeps real time, held back by it
    when it does not. The estimate never goes back and never runs ahead of the wall clock.
    Joint states that stop coming for `STALE_AFTER` s of wall time end the goal.
    """

    EXTRAPOLATE = 0.1

    def __init__(self, node: Node, robot: RobotConfig, rate: float) -> None:
        self.robot, self.period = robot, 1.0 / rate
        self.reader = _JointStateReader(node, robot, node.get_parameter(
            "joint_states_topic").value)
        self.pub = node.create_publisher(
            JointState, node.get_parameter("joint_command_topic").value, 10)
        self._names = [*robot.joint_names, GRIPPER]
        self.clock = node.get_clock()

    def measured(self) -> Measured | None:
        return self.reader.measured()

    def _send(self, q: np.ndarray, width: float | None) -> None:
        msg = JointState()
        msg.header.stamp = self.clock.now().to_msg()
        if width is None:
            msg.name, msg.position = list(self.robot.joint_names), q.tolist()
        else:
            msg.name, msg.position = self._names, [*q.tolist(), float(width)]
        self.pub.publish(msg)

    def hold(self) -> None:
        m = self.reader.measured()
        if m is not None:
            self._send(m.q, None)

    def execute(self, traj: JointTrajectory, run: _Run,
                on_point: Callable[[int, float], None]) -> Outcome:
        start = self.reader.measured()
        assert start is not None
        tracker = _PointTracker(traj, self.reader, on_point)
        tick = t0 = time.monotonic()
        sim0 = self._sim_now(start, t0)
        # A target is for the simulator's next step: sample one period ahead of its time.
        t = self.period
        while True:
            q, w = traj.sample(t, start.q, start.width)
            self._send(q, w)
            tracker.update(t)
            if t >= traj.duration:
                return Outcome(True, points_executed=len(traj), max_error=tracker.max_error)
            tick += self.period
            if run.stop.wait(max(0.0, tick - time.monotonic())):
                self.hold()
                run.halted_at = time.monotonic()
                return Outcome(False, True, run.reason, tracker.done, tracker.max_error)
            m = self.reader.measured()
            assert m is not None
            if m.stamp < start.stamp:
                self.hold()
                return Outcome(False, message="the simulation restarted (joint state time "
                               "went back) during the motion", points_executed=tracker.done,
                               max_error=tracker.max_error)
            if time.monotonic() - m.t > STALE_AFTER:
                self.hold()
                return Outcome(False, message=f"no joint state for {STALE_AFTER:g} s: "
                               "the simulation stopped", points_executed=tracker.done,
                               max_error=tracker.max_error)
            now = time.monotonic()
            t = max(t, min(self._sim_now(m, now) - sim0, now - t0) + self.period)

    def _sim_now(self, m: Measured, now: float) -> float:
        """The simulator's time at wall time `now`, from joint state `m` (see the class)."""
        return m.stamp + min(now - m.t, self.EXTRAPOLATE)


_FJT_CODES = {0: "SUCCESSFUL", -1: "INVALID_GOAL", -2: "INVALID_JOINTS",
              -3: "OLD_HEADER_TIMESTAMP", -4: "PATH_TOLERANCE_VIOLATED",
              -5: "GOAL_TOLERANCE_VIOLATED"}


class FrankaRos2Backend:
    """franka_ros2: FollowJointTrajectory for the arm, franka gripper actions for the hand."""

    def __init__(self, node: Node, robot: RobotConfig, rate: float) -> None:
        try:
            from control_msgs.action import FollowJointTrajectory
            from franka_msgs.action import Grasp, Move
        except ImportError as exc:
            raise InputError(
                f"backend franka_ros2 needs control_msgs and franka_msgs from a system ROS 2 "
                f"with franka_ros2 ({exc.name} is missing); use backend sim otherwise",
                field="backend") from None
        from rclpy.action import ActionClient

        self.node, self.robot, self.period = node, robot, 1.0 / rate
        self.FJT, self.Move, self.Grasp = FollowJointTrajectory, Move, Grasp
        group = ReentrantCallbackGroup()
        self.reader = _JointStateReader(node, robot, node.get_parameter(
            "joint_states_topic").value)
        self.arm_name = node.get_parameter("arm_action").value
        ns = node.get_parameter("gripper_namespace").value.rstrip("/")
        self.arm = ActionClient(node, FollowJointTrajectory, self.arm_name, callback_group=group)
        self.move = ActionClient(node, Move, f"{ns}/move", callback_group=group)
        self.grasp = ActionClient(node, Grasp, f"{ns}/grasp", callback_group=group)
        self.gripper_ns = ns
        self.force = float(node.get_parameter("grasp_force").value)
        self.speed = float(node.get_parameter("gripper_speed").value)
        self.timeout = float(node.get_parameter("server_timeout").value)
        self._active_arm: Any = None
        self._lock = threading.Lock()
        self._last_width: float | None = None

    def measured(self) -> Measured | None:
        return self.reader.measured()

    def hold(self) -> None:
        # The joint trajectory controller holds position when its goal is cancelled.
        with self._lock:
            gh, self._active_arm = self._active_arm, None
        if gh is not None:
            gh.cancel_goal_async()

    @staticmethod
    def _wait(future: Any, run: _Run, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not future.done():
            if run.stop.wait(0.002) or time.monotonic() > deadline:
                return future.done()
        return True

    def _gripper_goal(self, width: float, closing: bool) -> tuple[str, Any, Any]:
        if closing:
            goal = self.Grasp.Goal(width=width, speed=self.speed, force=self.force)
            goal.epsilon.inner = max(width, 0.005)  # any object between 0 and the width
            goal.epsilon.outer = self.robot.gripper_max_width
            return "grasp", self.grasp, goal
        return "move", self.move, self.Move.Goal(width=width, speed=self.speed)

    def execute(self, traj: JointTrajectory, run: _Run,
                on_point: Callable[[int, float], None]) -> Outcome:
        from builtin_interfaces.msg import Duration
        from trajectory_msgs.msg import JointTrajectory as TrajMsg
        from trajectory_msgs.msg import JointTrajectoryPoint

        if not self.arm.wait_for_server(timeout_sec=self.timeout):
            return Outcome(False, message=f"arm controller {self.arm_name} is not available")
        goal = self.FJT.Goal()
        goal.trajectory = TrajMsg(joint_names=list(traj.joint_names))
        for t, q in zip(traj.times, traj.positions, strict=True):
            sec = int(t)
            goal.trajectory.points.append(JointTrajectoryPoint(
                positions=q.tolist(), time_from_start=Duration(sec=sec,
                                                               nanosec=int((t - sec) * 1e9))))
        goal.goal_time_tolerance = Duration(sec=0, nanosec=500_000_000)
        sent = self.arm.send_goal_async(goal)
        if not self._wait(sent, run, self.timeout):
            if run.stop.is_set():
                return Outcome(False, True, run.reason)
            return Outcome(False, message=f"arm controller {self.arm_name} did not answer")
        gh = sent.result()
        if not gh.accepted:
            return Outcome(False, message=f"arm controller {self.arm_name} rejected the trajectory")
        with self._lock:
            self._active_arm = gh
        result = gh.get_result_async()
        tracker = _PointTracker(traj, self.reader, on_point)
        grip_calls: list[tuple[str, float, Any]] = []
        t0 = time.monotonic()
        k_grip = 0
        width = self._last_width
        if width is None:
            m = self.reader.measured()
            width = m.width if m is not None and m.width is not None else None
        while not result.done():
            t = time.monotonic() - t0
            tracker.update(t)
            while traj.gripper is not None and k_grip <= traj.point_index(t):
                target = float(traj.gripper[k_grip])
                k_grip += 1
                if width is None or abs(target - width) > 0.005:
                    kind, client, g = self._gripper_goal(target, width is not None and
                                                         target < width)
                    if not client.wait_for_server(timeout_sec=self.timeout):
                        self.hold()
                        return Outcome(False, message=f"gripper action {self.gripper_ns}/{kind} "
                                       "is not available", points_executed=tracker.done)
                    grip_calls.append((kind, target, client.send_goal_async(g)))
                    width = target
            if run.stop.wait(self.period):
                self.hold()
                run.halted_at = time.monotonic()
                return Outcome(False, True, run.reason, tracker.done, tracker.max_error)
        with self._lock:
            self._active_arm = None
        self._last_width = width
        res = result.result().result
        tracker.update(traj.duration + 1.0)
        if res.error_code != 0:
            name = _FJT_CODES.get(res.error_code, str(res.error_code))
            detail = f": {res.error_string}" if res.error_string else ""
            return Outcome(False, message=f"arm controller failed with {name}{detail}",
                           points_executed=tracker.done, max_error=tracker.max_error)
        for kind, target, fut in grip_calls:
            outcome = self._gripper_result(kind, target, fut, run)
            if outcome is not None:
                outcome.points_executed, outcome.max_error = tracker.done, tracker.max_error
                return outcome
        return Outcome(True, points_executed=len(traj), max_error=tracker.max_error)

    def _gripper_result(self, kind: str, target: float, sent: Any, run: _Run) -> Outcome | None:
        what = f"gripper {kind} to {target:.3f} m"
        if not self._wait(sent, run, self.timeout):
            return Outcome(False, message=f"{what}: no answer from {self.gripper_ns}/{kind}")
        gh = sent.result()
        if not gh.accepted:
            return Outcome(False, message=f"{what} was rejected by {self.gripper_ns}/{kind}")
        res = gh.get_result_async()
        if not self._wait(res, run, self.timeout + 5.0):
            return Outcome(False, message=f"{what}: no result")
        r = res.result().result
        if not r.success:
            return Outcome(False, message=f"{what} failed: {r.error or 'no reason given'}")
        return None


BACKENDS: dict[str, type] = {"sim": SimBackend, "franka_ros2": FrankaRos2Backend}


class FrankaControlNode(Node):
    def __init__(self) -> None:
        super().__init__("franka_control_node")
        for name, default in (
            ("backend", "sim"), ("robot", "sim_fr3"), ("control_rate", 100.0),
            ("check_workspace", True), ("max_start_delay", 0.1),
            ("joint_states_topic", "joint_states"),
            ("joint_command_topic", "joint_command"),
            ("arm_action", "/fr3_arm_controller/follow_joint_trajectory"),
            ("gripper_namespace", "/franka_gripper"), ("grasp_force", 20.0),
            ("gripper_speed", 0.1), ("server_timeout", 5.0),
        ):
            self.declare_parameter(name, default)
        backend = self.get_parameter("backend").value
        if backend not in BACKENDS:
            raise InputError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})",
                             field="backend")
        self.robot = load_robot(self.get_parameter("robot").value)
        rate = float(self.get_parameter("control_rate").value)
        if not rate > 0:
            raise InputError("control_rate must be positive", field="control_rate")
        self.period = 1.0 / rate
        self.kinematics = make_kinematics(self.robot)
        self.planner = MotionPlanner(self.robot, self.kinematics)
        self.check_workspace = bool(self.get_parameter("check_workspace").value)
        self.max_start_delay = float(self.get_parameter("max_start_delay").value)
        if not self.max_start_delay >= 0:
            raise InputError("max_start_delay must be >= 0 s", field="max_start_delay")
        self.backend: Backend = BACKENDS[backend](self, self.robot, rate)

        self._lock = threading.Lock()
        self._exec_lock = threading.Lock()
        self._active: _Run | None = None
        group = ReentrantCallbackGroup()
        for kind, name, cb in ((ExecuteChunk, "execute_chunk", self._execute_chunk),
                               (ExecuteMotion, "execute_motion", self._execute_motion)):
            ActionServer(self, kind, name, execute_callback=cb,
                         goal_callback=lambda _g: GoalResponse.ACCEPT,
                         cancel_callback=self._on_cancel, callback_group=group)
        self.create_service(Halt, "halt", self._on_halt, callback_group=group)
        self.get_logger().info(
            f"backend {backend}, robot {self.robot.name}, control rate {rate:g} Hz")

    # ------------------------------------------------------------------ goal bookkeeping

    def _begin(self, goal_handle: Any) -> _Run:
        run = _Run(goal_handle)
        with self._lock:
            old, self._active = self._active, run
        if old is not None:
            old.halt("preempted by a new goal")
        self._exec_lock.acquire()
        return run

    def _end(self, run: _Run) -> None:
        with self._lock:
            if self._active is run:
                self._active = None
        self._exec_lock.release()

    def _on_cancel(self, goal_handle: Any) -> CancelResponse:
        with self._lock:
            run = self._active
        if run is not None and run.goal_handle is goal_handle:
            if isinstance(goal_handle.request, ExecuteMotion.Goal):
                run.cancel_at_boundary = True
            else:
                run.halt("cancelled")
        return CancelResponse.ACCEPT

    def _on_halt(self, _req: Halt.Request, response: Halt.Response) -> Halt.Response:
        with self._lock:
            run = self._active
        if run is not None:
            run.halt("halted by the halt service")
            response.message = "active goal stopped; holding position"
        else:
            self.backend.hold()
            response.message = "no active goal; holding position"
        response.success = self.backend.measured() is not None
        if not response.success:
            response.message = "no joint state received: cannot hold a known position"
        return response

    def _wait_measured(self, timeout: float = 10.0) -> Measured | None:
        """The latest joint state, waiting a little for the first one after start-up (or
        after a pause: a goal is never planned from a position older than STALE_AFTER)."""
        deadline = time.monotonic() + timeout
        while True:
            m = self.backend.measured()
            if m is not None and time.monotonic() - m.t <= STALE_AFTER:
                return m
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def _finish(self, goal_handle: Any, result: Any, status: int, message: str) -> Any:
        result.status, result.message = status, message
        if status == result.STATUS_SUCCEEDED:
            goal_handle.succeed()
        elif goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        if status == result.STATUS_REJECTED:
            self.get_logger().warning(f"goal rejected: {message}")
        return result

    def _stop_status(self, run: _Run, result: Any) -> int:
        return result.STATUS_PREEMPTED if run.reason.startswith("preempted") else \
            result.STATUS_CANCELLED

    # ------------------------------------------------------------------ ExecuteChunk

    def _execute_chunk(self, goal_handle: Any) -> ExecuteChunk.Result:
        run = self._begin(goal_handle)
        result = ExecuteChunk.Result()
        try:
            return self._run_chunk(run, goal_handle, result)
        finally:
            m = self.backend.measured()
            if m is not None:
                result.final_positions = m.q.tolist()
                result.final_gripper_width = m.width if m.width is not None else float("nan")
            self._end(run)

    def _run_chunk(self, run: _Run, gh: Any, result: ExecuteChunk.Result) -> Any:
        if run.stop.is_set():
            return self._finish(gh, result, self._stop_status(run, result), run.reason)
        goal = gh.request
        m = self._wait_measured()
        if m is None:
            return self._finish(gh, result, result.STATUS_REJECTED,
                                f"{NO_RECENT_STATE}: cannot check the first segment")
        times = [p.time_from_start.sec + p.time_from_start.nanosec * 1e-9
                 for p in goal.trajectory.points]
        try:
            traj = validate_trajectory(
                goal.trajectory.joint_names, times,
                [list(p.positions) for p in goal.trajectory.points],
                list(goal.gripper_widths), self.robot, m.q,
                self.kinematics if self.check_workspace else None, self.max_start_delay)
        except GoalRejected as exc:
            return self._finish(gh, result, result.STATUS_REJECTED, exc.reason)
        delay = float(traj.times[0]) - times[0]
        late = (f"started {delay * 1e3:.0f} ms late to keep the first point within the "
                "velocity limits") if delay > 0 else ""
        if late:  # the arm is not where its sender last saw it: worth knowing
            self.get_logger().info(f"chunk {late}", throttle_duration_sec=5.0)

        def feedback(i: int, err: float) -> None:
            gh.publish_feedback(ExecuteChunk.Feedback(point_index=i, joint_error=err))

        out = self.backend.execute(traj, run, feedback)
        result.points_executed, result.max_joint_error = out.points_executed, out.max_error
        if out.stopped:
            return self._finish(gh, result, self._stop_status(run, result), out.message)
        if not out.ok:
            return self._finish(gh, result, result.STATUS_FAILED, out.message)
        return self._finish(gh, result, result.STATUS_SUCCEEDED,
                            f"{len(traj)} points in {traj.duration:.2f} s"
                            + (f", {late}" if late else ""))

    # ------------------------------------------------------------------ ExecuteMotion

    def _execute_motion(self, goal_handle: Any) -> ExecuteMotion.Result:
        run = self._begin(goal_handle)
        result = ExecuteMotion.Result()
        try:
            return self._run_motion(run, goal_handle, result)
        finally:
            self._end(run)

    def _pose_msg(self, q: np.ndarray) -> Pose:
        p, quat = self.kinematics.fk(q)
        return Pose(position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                    orientation=Quaternion(w=float(quat[0]), x=float(quat[1]),
                                           y=float(quat[2]), z=float(quat[3])))

    def _run_motion(self, run: _Run, gh: Any, result: ExecuteMotion.Result) -> Any:
        if run.stop.is_set():
            return self._finish(gh, result, self._stop_status(run, result), run.reason)
        try:
            commands = [command_from_msg(i, c) for i, c in enumerate(gh.request.commands)]
            if not commands:
                raise GoalRejected("no commands")
            m = self._wait_measured()
            if m is None:
                raise GoalRejected(NO_RECENT_STATE)
            width = m.width if m.width is not None else self.robot.gripper_max_width
            self.planner.plan_all(commands, m.q, width)  # the whole batch, before moving
        except GoalRejected as exc:
            return self._finish(gh, result, result.STATUS_REJECTED, exc.reason)
        for i, cmd in enumerate(commands):
            if run.cancel_at_boundary:
                run.halt("cancelled")
            if run.stop.is_set():
                break
            m = self.backend.measured()
            assert m is not None
            width = m.width if m.width is not None else self.robot.gripper_max_width
            try:  # from the measured state: relative moves start where the hand really is
                planned = self.planner.plan(cmd, m.q, width)
            except GoalRejected as exc:
                return self._finish(gh, result, result.STATUS_FAILED,
                                    f"command {i} ({cmd.describe()}): {exc.reason}")
            out = self.backend.execute(planned.trajectory, run, lambda _k, _e: None)
            if out.ok:  # measure once the arm has settled on the command's end
                deadline = time.monotonic() + SETTLE_TIMEOUT
                while (np.max(np.abs(self.backend.measured().q - planned.end_q)) > SETTLE_TOL
                       and time.monotonic() < deadline and not run.stop.wait(self.period)):
                    pass
            m = self.backend.measured()
            if not out.ok and not out.stopped:
                return self._finish(gh, result, result.STATUS_FAILED,
                                    f"command {i} ({cmd.describe()}): {out.message}")
            if out.stopped:
                break
            assert m is not None
            result.commands_executed = i + 1
            result.measured_poses.append(self._pose_msg(m.q))
            result.measured_gripper_widths.append(m.width if m.width is not None else
                                                  float("nan"))
            gh.publish_feedback(ExecuteMotion.Feedback(command_index=i,
                                                       current_pose=result.measured_poses[-1]))
        if run.stop.is_set():
            return self._finish(gh, result, self._stop_status(run, result),
                                f"{run.reason} after {result.commands_executed} command(s)")
        return self._finish(gh, result, result.STATUS_SUCCEEDED,
                            f"{result.commands_executed} command(s) executed")


def command_from_msg(index: int, msg: MotionCommandMsg) -> MotionCommand:
    """The core command for a message; an unknown type rejects the goal."""
    kind = _KIND_OF_TYPE.get(msg.type)
    if kind is None:
        raise GoalRejected(f"command {index}: unknown type {msg.type}")
    return MotionCommand(
        kind=kind,  # type: ignore[arg-type]
        direction=(msg.direction.x, msg.direction.y, msg.direction.z),
        distance_mm=msg.distance_mm, axis=(msg.axis.x, msg.axis.y, msg.axis.z),
        angle_deg=msg.angle_deg, width=msg.width, duration=msg.duration)


def main(args: list[str] | None = None) -> None:
    run_node(FrankaControlNode, args, threads=6)


if __name__ == "__main__":
    main()
