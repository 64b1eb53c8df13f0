"""VLA node: runs a policy in closed loop through the control node.

Action `run_policy` (RunPolicy): assemble the observation (latest front and wrist images,
joint state, gripper width; the world state for the expert), query the backend, execute the
first `steps_per_chunk` actions of the chunk through `execute_chunk` (ExecuteChunk), repeat
until the policy is done, `max_steps` actions ran, or the goal is cancelled (which cancels the
chunk in flight). A goal with `continue_episode` goes on in the same episode (the policy's
`new_episode=False`: the expert keeps its milestones and a fault that already struck), as an
orchestrator's next subgoal does. Parameters: `backend` (expert|openpi|openvla|lerobot),
`preset` (default: the backend's), backend options (`scene`, `fault`, `host`, `port`, `url`,
`unnorm_key`, `checkpoint`, `device`, `timeout`, `libero_problem` — a LIBERO preset's world:
the BDDL problem class, default the scene's), `robot` (kinematics for end-effector presets),
`policy_rate` (Hz, 0 = the preset's), `execute_chunk_action`, `joint_states_topic`,
`world_state_topic`, `front_image_topic`, `wrist_image_topic`, `observation_timeout`.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
from pydantic import ValidationError
from rclpy.action import CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState

from mango.bags.world_state_cdr import decode_world_state
from mango.control import chunk_to_trajectory, load_robot
from mango.errors import InputError, from_validation_error
from mango.nodes.actions import ActionClient, action_server, wait_for_chunk
from mango.nodes.common import Param, declare_parameters, positive, rate_param, run_node
from mango.policy import Observation, PolicyConfig, PolicyError, make_policy
from mango.policy.kinematics import make_kinematics
from mango.ros.images import image_to_numpy
from mango.ros.trajectory_msg import chunk_goal
from mango_ros.action import ExecuteChunk, RunPolicy
from mango_ros.msg import WorldState as WorldStateMsg

FINGERS = ("fr3_finger_joint1", "fr3_finger_joint2")
_CONFIG_PARAMS = ("backend", "preset", "scene", "fault", "host", "port", "url", "unnorm_key",
                  "checkpoint", "device", "timeout", "libero_problem")


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
        self.get_logger().info(f"backend {cfg.backend}, preset {self.policy.preset.name}, "
                               f"{self.rate:g} Hz")

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
        names = list(js.name)
        pos = np.asarray(js.position, float)
        q = self._arm_q(js)
        fingers = [names.index(f) for f in FINGERS if f in names]
        width = float(pos[fingers].sum()) if len(fingers) == 2 else self.robot.gripper_max_width
        world = decode_world_state(self._world) if self.needs_world and self._world else None
        images = {c: np.asarray(image_to_numpy(self._images[c]))[..., :3]
                  for c in self.cameras}
        return Observation(images=images, joint_positions=q, gripper_width=width,
                           instruction=instruction, world_state=world,
                           t=world.t if world is not None else time.time())

    def _arm_q(self, js: JointState) -> np.ndarray:
        names = list(js.name)
        return np.asarray(js.position, float)[[names.index(n) for n in self.robot.joint_names]]

    # ------------------------------------------------------------------ RunPolicy

    def _chunk_goal(self, chunk: np.ndarray, start_q: np.ndarray) -> ExecuteChunk.Goal:
        return chunk_goal(chunk_to_trajectory(chunk, self.rate, self.robot.joint_names, start_q,
                                              self.robot.vmax))

    def _wait(self, future: Any, gh: Any, inflight: Any = None,
              timeout: float = 120.0) -> str | None:
        """`wait_for_chunk` (nodes/actions.py): None once done, else why not."""
        return wait_for_chunk(self, self.chunk_client, future, gh, inflight, timeout,
                              poll=0.002)

    def _execute(self, gh: Any) -> RunPolicy.Result:
        with self._busy:
            return self._run(gh)

    def _run(self, gh: Any) -> RunPolicy.Result:
        goal = gh.request
        result = RunPolicy.Result()
        steps = chunks = 0

        def finish(status: int, message: str) -> RunPolicy.Result:
            result.status, result.message = status, message
            result.steps_executed, result.chunks_requested = steps, chunks
            result.info_json = json.dumps(self.policy.info())
            if status in (result.STATUS_SUCCEEDED, result.STATUS_MAX_STEPS):
                gh.succeed()
            elif gh.is_cancel_requested:
                gh.canceled()
            else:
                gh.abort()
            self.get_logger().info(f"run_policy: {message} ({steps} steps, {chunks} chunks)")
            return result

        max_steps = goal.max_steps or 10**9
        if not self.chunk_client.wait_for_server(timeout_sec=self.obs_timeout):
            return finish(result.STATUS_FAILED, "execute_chunk action server not available")
        try:
            self.policy.reset(goal.instruction, new_episode=not goal.continue_episode)
        except (PolicyError, InputError) as exc:
            return finish(result.STATUS_FAILED, f"policy: {exc}")
        while steps < max_steps:
            if gh.is_cancel_requested:
                return finish(result.STATUS_CANCELLED, "cancelled")
            try:
                obs = self._observation(goal.instruction)
                step = self.policy.act(obs)
            except (PolicyError, InputError) as exc:
                return finish(result.STATUS_FAILED, f"policy: {exc}")
            chunks += 1
            n = min(goal.steps_per_chunk or len(step.chunk), len(step.chunk), max_steps - steps)
            sent = self.chunk_client.send_goal_async(
                # Timed from where the arm is now, not where it was when observed: the
                # controller checks the first point's speed from its measured position, and a
                # slow policy (or machine) leaves the arm time to drift in between.
                self._chunk_goal(step.chunk[:n], self._arm_q(self._joints)))
            why = self._wait(sent, gh, timeout=self.obs_timeout)
            if why is not None:
                return finish(result.STATUS_FAILED, f"execute_chunk did not answer: {why}")
            chunk_gh = sent.result()
            if not chunk_gh.accepted:
                return finish(result.STATUS_FAILED, "execute_chunk refused the goal")
            res_future = chunk_gh.get_result_async()
            why = self._wait(res_future, gh, chunk_gh, timeout=n / self.rate + 60.0)
            if why is not None:
                return finish(result.STATUS_FAILED, f"execute_chunk did not finish: {why}")
            res = res_future.result().result
            steps += res.points_executed
            gh.publish_feedback(RunPolicy.Feedback(steps_executed=steps, chunks_requested=chunks,
                                                   last_inference_latency=step.latency))
            if res.status == res.STATUS_CANCELLED and gh.is_cancel_requested:
                return finish(result.STATUS_CANCELLED, "cancelled during a chunk")
            if res.status != res.STATUS_SUCCEEDED:
                names = {res.STATUS_CANCELLED: "cancelled", res.STATUS_PREEMPTED: "preempted",
                         res.STATUS_REJECTED: "rejected", res.STATUS_FAILED: "failed"}
                return finish(result.STATUS_FAILED,
                              f"chunk {chunks} {names.get(res.status, res.status)}: "
                              f"{res.message}")
            if self.policy.done:
                return finish(result.STATUS_SUCCEEDED, "the policy finished the task")
        return finish(result.STATUS_MAX_STEPS, f"reached max_steps ({goal.max_steps})")

    def destroy_node(self) -> None:
        self.policy.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_node(VlaNode, args, threads=4)


if __name__ == "__main__":
    main()
