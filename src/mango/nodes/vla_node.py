"""VLA node: runs a policy in closed loop through the control node.

Action `run_policy` (RunPolicy): assemble the observation (latest front and wrist images,
joint state, gripper width; the world state for the expert), query the backend, queue the
first `steps_per_chunk` actions of the chunk (`policy.action_queue`) and play the queue
through `execute_chunk` (ExecuteChunk), until the policy is done, `max_steps` actions ran, or
the goal is cancelled (which cancels the chunk in flight). With `chunk_threshold` F > 0 the
run is asynchronous: the next observation is taken and sent on its own thread once the
unexecuted queue falls to F of a chunk, while the arm goes on; its answer is aligned by the
observation's timestep, merged by `aggregate` (weighted_average | latest_only | average |
conservative) and sent as one goal for the whole queue, replacing the running one. F = 0 is
the synchronous loop (observe, infer, execute, repeat), and the only one for a backend whose
chunks are steps of its own plan (the expert: `BackendEntry.plays_chunks_whole`). Every
queued action is clipped to the robot's joint limits; per-chunk inference time, queue depth,
idle time and clipping go to the RunPolicy feedback and to `~/diagnostics`
(diagnostic_msgs/DiagnosticArray). The loop itself is `mango.policy.closed_loop`; this node
gives it the observation, the ExecuteChunk stream and the RunPolicy goal.
A goal with `continue_episode` goes on in the same episode (the policy's
`new_episode=False`: the expert keeps its milestones and a fault that already struck), as an
orchestrator's next subgoal does. Parameters: `backend` (expert|openpi|openvla|lerobot),
`preset` (default: the backend's), backend options (`scene`, `fault`, `host`, `port`, `url`,
`unnorm_key`, `checkpoint`, `device`, `timeout`, `libero_problem` — a LIBERO preset's world:
the BDDL problem class, default the scene's), `robot` (kinematics for end-effector presets),
`policy_rate` (Hz, 0 = the preset's), `chunk_threshold`, `aggregate`,
`execute_chunk_action`, `joint_states_topic`,
`world_state_topic`, `front_image_topic`, `wrist_image_topic`, `observation_timeout`.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from pydantic import ValidationError
from rclpy.action import CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState

from mango.bags.world_state_cdr import decode_world_state
from mango.control import chunk_to_trajectory, load_robot
from mango.errors import InputError, from_validation_error
from mango.nodes.actions import ActionClient, ChunkServerWatch, action_server
from mango.nodes.common import Param, declare_parameters, positive, rate_param, run_node
from mango.policy import Observation, PolicyConfig, PolicyError, make_policy
from mango.policy.action_queue import AGGREGATORS, ActionLimits, ActionQueue, MergeReport
from mango.policy.closed_loop import POLL, ClosedLoop, Outcome
from mango.policy.kinematics import make_kinematics
from mango.ros.images import image_to_numpy
from mango.ros.trajectory_msg import chunk_goal
from mango_ros.action import ExecuteChunk, RunPolicy
from mango_ros.msg import WorldState as WorldStateMsg

FINGERS = ("fr3_finger_joint1", "fr3_finger_joint2")
_CONFIG_PARAMS = ("backend", "preset", "scene", "fault", "host", "port", "url", "unnorm_key",
                  "checkpoint", "device", "timeout", "libero_problem")
ACCEPT_TIMEOUT = 10.0  # s the control node may take to accept a chunk goal


class VlaNode(Node):
    def __init__(self) -> None:
        super().__init__("vla_node")
        p = declare_parameters(self, {
            "backend": "expert", "preset": "", "scene": "", "fault": "", "host": "127.0.0.1",
            "port": Param(8000, lambda v: 1 <= v <= 65535, "a port number (1 to 65535)"),
            "url": "http://127.0.0.1:8000/act", "unnorm_key": "",
            "checkpoint": "", "device": "cpu", "timeout": positive(30.0), "robot": "fr3",
            "libero_problem": "",
            "policy_rate": rate_param(0.0, off_allowed=True),
            "execute_chunk_action": "execute_chunk",
            "joint_states_topic": "joint_states", "world_state_topic": "world_state",
            "front_image_topic": "camera/front/image_raw",
            "wrist_image_topic": "camera/wrist/image_raw",
            "observation_timeout": positive(10.0),
            "chunk_threshold": Param(0.5, lambda v: 0.0 <= v <= 1.0, "between 0 and 1"),
            "aggregate": Param("weighted_average", lambda v: v in AGGREGATORS,
                               f"one of {', '.join(AGGREGATORS)}"),
        })
        # ROS parameters cannot be None: an empty string means "not set"
        try:
            cfg = PolicyConfig(**{k: None if p[k] == "" else p[k] for k in _CONFIG_PARAMS})
        except ValidationError as exc:
            raise from_validation_error(exc) from None
        self.robot = load_robot(p["robot"])
        try:
            self.policy = make_policy(cfg, make_kinematics(self.robot))
        except PolicyError as exc:
            raise InputError(str(exc), field="backend") from None
        self.rate = float(p["policy_rate"]) or self.policy.preset.rate_hz
        self.obs_timeout = float(p["observation_timeout"])
        self.policy_timeout = float(p["timeout"])
        self.threshold = float(p["chunk_threshold"])
        if self.policy.plays_chunks_whole:  # the expert moves on in its plan at every query
            self.threshold = 0.0
        self.merge_rule = AGGREGATORS[p["aggregate"]]
        self.diagnostics = self.create_publisher(DiagnosticArray, "~/diagnostics", 10)
        self.needs_world = self.policy.needs_world_state
        self.cameras = [] if self.needs_world else self.policy.preset.cameras()

        group = ReentrantCallbackGroup()
        sensors = MutuallyExclusiveCallbackGroup()  # latest values, taken in order
        self._images: dict[str, Image] = {}
        self._joints: JointState | None = None
        self._world: bytes | None = None
        for cam, topic in (("front", p["front_image_topic"]), ("wrist", p["wrist_image_topic"])):
            if cam in self.cameras:
                self.create_subscription(Image, topic, lambda m, c=cam: self._images.__setitem__(
                    c, m), qos_profile_sensor_data, callback_group=sensors)
        self.create_subscription(JointState, p["joint_states_topic"], self._on_joints,
                                 qos_profile_sensor_data,
                                 callback_group=sensors)
        if self.needs_world:
            self.create_subscription(WorldStateMsg, p["world_state_topic"], self._on_world, 10,
                                     callback_group=sensors, raw=True)
        self.chunk_client = ActionClient(self, ExecuteChunk, p["execute_chunk_action"],
                                         callback_group=group)
        self._busy = threading.Lock()
        action_server(self, RunPolicy, "run_policy", execute_callback=self._execute,
                     goal_callback=self._on_goal,
                     cancel_callback=lambda _g: CancelResponse.ACCEPT, callback_group=group)
        mode = (f"asynchronous (threshold {self.threshold:g}, {self.merge_rule.name})"
                if self.threshold > 0 else "synchronous" + (
                    " (its chunks are steps of its own plan)"
                    if self.policy.plays_chunks_whole else ""))
        self.get_logger().info(f"backend {cfg.backend}, preset {self.policy.preset.name}, "
                               f"{self.rate:g} Hz, {mode}")

    def _on_joints(self, msg: JointState) -> None:
        if set(self.robot.joint_names) <= set(msg.name):
            self._joints = msg

    def _on_world(self, data: bytes) -> None:
        self._world = data

    def _on_goal(self, _goal: Any) -> GoalResponse:
        # one episode at a time: a second RunPolicy while one runs is refused
        return GoalResponse.REJECT if self._busy.locked() else GoalResponse.ACCEPT

    # ------------------------------------------------------------------ observation

    def _observation(self, instruction: str) -> Observation:
        deadline = time.monotonic() + self.obs_timeout
        while True:
            missing = [f"image from camera '{c}'" for c in self.cameras if c not in self._images]
            if self._joints is None:
                missing.append("joint state")
            if self.needs_world and self._world is None:
                missing.append("world state")
            if not missing:
                break
            if time.monotonic() > deadline:
                raise PolicyError(f"no {', '.join(missing)} within {self.obs_timeout:g} s")
            time.sleep(0.01)
        js = self._joints
        assert js is not None
        q, width = self._arm_q(js), self._width(js)
        world = decode_world_state(self._world) if self.needs_world and self._world else None
        images = {c: np.asarray(image_to_numpy(self._images[c]))[..., :3]
                  for c in self.cameras}
        return Observation(images=images, joint_positions=q, gripper_width=width,
                           instruction=instruction, world_state=world,
                           t=world.t if world is not None else time.time())

    def _width(self, js: JointState) -> float:
        names = list(js.name)
        fingers = [names.index(f) for f in FINGERS if f in names]
        return float(np.asarray(js.position, float)[fingers].sum()) if len(fingers) == 2 \
            else self.robot.gripper_max_width

    def _arm_q(self, js: JointState) -> np.ndarray:
        names = list(js.name)
        return np.asarray(js.position, float)[[names.index(n) for n in self.robot.joint_names]]

    # ------------------------------------------------------------------ RunPolicy

    def _chunk_goal(self, chunk: np.ndarray, start_q: np.ndarray) -> ExecuteChunk.Goal:
        return chunk_goal(chunk_to_trajectory(chunk, self.rate, self.robot.joint_names, start_q,
                                              self.robot.vmax))

    def _execute(self, gh: Any) -> RunPolicy.Result:
        with self._busy:
            return self._run(gh)

    def _run(self, gh: Any) -> RunPolicy.Result:
        goal = gh.request
        result = RunPolicy.Result()
        queue = ActionQueue(ActionLimits.for_robot(self.robot, self.rate), self.merge_rule,
                            self.threshold)
        loop = ClosedLoop(
            self.policy, queue, _ChunkStream(self, self.chunk_client),
            observe=lambda: self._observation(goal.instruction), state=self._state,
            cancelled=lambda: gh.is_cancel_requested, threshold=self.threshold,
            max_steps=goal.max_steps, steps_per_chunk=goal.steps_per_chunk,
            answer_timeout=self.obs_timeout + self.policy_timeout,
            on_progress=lambda p: gh.publish_feedback(RunPolicy.Feedback(
                steps_executed=p.executed, chunks_requested=p.chunks,
                last_inference_latency=p.latency, queue_depth=p.depth, idle_time=p.idle,
                actions_clipped=p.clipped, clip_warning=p.clip_warning, late_answer=p.late)),
            on_chunk=lambda n, latency, report: self._diagnose(n, latency, report, queue))
        if not self.chunk_client.wait_for_server(timeout_sec=self.obs_timeout):
            out = Outcome("failed", "execute_chunk action server not available", 0, 0)
        else:
            try:
                self.policy.reset(goal.instruction, new_episode=not goal.continue_episode)
            except (PolicyError, InputError) as exc:
                out = Outcome("failed", f"policy: {exc}", 0, 0)
            else:
                out = loop.run()
        result.status = {"succeeded": result.STATUS_SUCCEEDED,
                         "max_steps": result.STATUS_MAX_STEPS,
                         "cancelled": result.STATUS_CANCELLED,
                         "failed": result.STATUS_FAILED}[out.status]
        result.message = out.message
        result.steps_executed, result.chunks_requested = out.steps, out.chunks
        result.info_json = json.dumps(self.policy.info())
        if out.status in ("succeeded", "max_steps"):
            gh.succeed()
        elif gh.is_cancel_requested:
            gh.canceled()
        else:
            gh.abort()
        self.get_logger().info(
            f"run_policy: {out.message} ({out.steps} steps, {out.chunks} chunks, idle "
            f"{queue.idle_total:.2f} s, {queue.clipped_total} actions clipped)")
        return result

    def _state(self) -> np.ndarray:
        """Joints and gripper width now (8-D): where the first chunk's guards start from."""
        js = self._joints
        assert js is not None
        return np.concatenate([self._arm_q(js), [self._width(js)]])

    def _diagnose(self, chunk: int, latency: float, report: MergeReport,
                  queue: ActionQueue) -> None:
        """Say what an answer did: a warning for heavy clipping or a late answer (the arm
        held), and one `~/diagnostics` message per chunk."""
        warn = report.clip_warning or (report.late and self.threshold > 0)
        if warn:
            self.get_logger().warning(report.describe())
        status = DiagnosticStatus(
            level=DiagnosticStatus.WARN if warn else DiagnosticStatus.OK,
            name=f"{self.get_name()}: action queue", message=report.describe(),
            values=[KeyValue(key=k, value=str(v)) for k, v in (
                ("chunk", chunk), ("obs_step", report.obs_step),
                ("inference_time", f"{latency:.4f}"), ("queue_depth", queue.depth),
                ("executed", queue.executed), ("stale", report.stale),
                ("merged", report.merged), ("clipped", report.clipped),
                ("clip_warning", report.clip_warning), ("late", report.late),
                ("idle", f"{report.idle:.4f}"), ("idle_total", f"{queue.idle_total:.4f}"),
                ("aggregate", self.merge_rule.name), ("chunk_threshold", self.threshold))])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics.publish(msg)

    def destroy_node(self) -> None:
        self.policy.close()
        super().destroy_node()


class _ChunkStream:
    """The one ExecuteChunk goal playing the queue; a newer one replaces it (the control node
    preempts the running goal) and only the newest goal's feedback counts."""

    def __init__(self, node: VlaNode, client: ActionClient) -> None:
        self.node, self.client = node, client
        self._sent: Any = None
        self._handle: Any = None
        self._result: Any = None
        self._token = object()
        self._base = self._reached = 0
        self._since = 0.0
        self._watch = ChunkServerWatch(node, client)

    @property
    def active(self) -> bool:
        return self._sent is not None

    def send(self, actions: np.ndarray, base: int) -> None:
        """Play `actions` as one goal from where the arm is; its first point is the action of
        timestep `base`."""
        goal = self.node._chunk_goal(actions, self.node._arm_q(self.node._joints))
        token = self._token = object()
        self._sent = self.client.send_goal_async(
            goal, feedback_callback=lambda fb, t=token: self._on_feedback(t, fb))
        self._handle = self._result = None
        self._base, self._reached = base, 0
        self._since = time.monotonic()

    def _on_feedback(self, token: object, fb: Any) -> None:
        if token is self._token:
            self._reached = max(self._reached, int(fb.feedback.point_index) + 1)

    def cancel(self) -> None:
        if self._sent is None:
            return
        if self._handle is None:
            deadline = time.monotonic() + 1.0
            while not self._sent.done() and time.monotonic() < deadline:
                time.sleep(POLL)
            self._handle = self._sent.result() if self._sent.done() else None
        if self._handle is not None and self._handle.accepted:
            self._handle.cancel_goal_async()

    def poll(self, queue: ActionQueue, now: float) -> str | None:
        """Advance `queue` by what the goal executed; why the run must end, or None."""
        if self._sent is None:
            return None
        why = self._watch.problem(now)
        if why is not None:
            return f"execute_chunk did not finish: {why}"
        if self._handle is None:
            if not self._sent.done():
                return None if now - self._since < ACCEPT_TIMEOUT else \
                    f"execute_chunk did not answer within {ACCEPT_TIMEOUT:g} s"
            self._handle = self._sent.result()
            if not self._handle.accepted:
                return "execute_chunk refused the goal"
            self._result = self._handle.get_result_async()
        queue.advance(self._base + self._reached, now)
        if not self._result.done():
            return None
        res = self._result.result().result
        queue.advance(self._base + res.points_executed, now)
        self._sent = None
        if res.status == res.STATUS_SUCCEEDED:
            return None
        names = {res.STATUS_CANCELLED: "cancelled", res.STATUS_PREEMPTED: "preempted",
                 res.STATUS_REJECTED: "rejected", res.STATUS_FAILED: "failed"}
        return f"chunk {names.get(res.status, res.status)}: {res.message}"


def main(args: list[str] | None = None) -> None:
    run_node(VlaNode, args, threads=4)


if __name__ == "__main__":
    main()
