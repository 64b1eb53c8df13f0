"""The primitives_node's ROS stack for tests: sim_node (segmentation on),
franka_control_node (`sim` backend), perception_node (`sim` backend) and primitives_node,
each its own process, with a test node that watches the joints, the commands, the world
state and execute_chunk's goal statuses as they arrive."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from action_msgs.msg import GoalStatusArray
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState
from unique_identifier_msgs.msg import UUID

from mango.control import load_robot
from mango.nodes.actions import ActionClient
from mango.ros.detection_msg import detection_from_msg
from mango.ros.world_state_msg import msg_to_state
from mango.stack import load_stack
from mango_ros.action import Grasp, Place
from mango_ros.msg import WorldState
from mango_ros.srv import Detect, ResetScene
from support.ros import call_service, running_stack, wait_for

JOINTS = list(load_robot("fr3").joint_names)
CONTROL_RATE = 100.0


def joint_rows(rows: list[tuple[float, np.ndarray, float]]) -> Callable[[JointState], None]:
    """A joint_states callback that keeps (receipt time, the arm's joints in the FR3's order,
    the sim stamp) rows."""
    def on_joints(msg: JointState) -> None:
        names = list(msg.name)
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        rows.append((time.monotonic(), np.asarray(msg.position)[
            [names.index(j) for j in JOINTS]], stamp))
    return on_joints


def _fastest(rows: list[tuple[np.ndarray, float]], window: float) -> float:
    """Fastest joint speed over (positions, sim time) rows: displacement over `window` s."""
    out, j = 0.0, 0
    for q, t in rows:
        while rows[j + 1][1] <= t - window:  # rows[j]: the latest `window` before t
            j += 1
        if t - rows[j][1] >= window:
            out = max(out, float(np.abs(q - rows[j][0]).max() / (t - rows[j][1])))
    return out


@dataclass
class Rig:
    node: Node
    ns: str
    logs: dict[str, list[str]]  # each node's output lines
    grasp: ActionClient
    place: ActionClient
    # (receipt time, arm joint positions, sim stamp); sim_node publishes no velocities
    joints: list[tuple[float, np.ndarray, float]] = field(default_factory=list)
    # joint_command: (receipt time, stamp on the sim's clock, which restarts on a reset)
    commands: list[tuple[float, float]] = field(default_factory=list)
    target: np.ndarray | None = None  # the arm joints of the newest joint command
    # execute_chunk's goal statuses as received: (receipt time, {goal id: status})
    chunk_status: list[tuple[float, dict[bytes, int]]] = field(default_factory=list)
    # each chunk goal's acceptance stamp, the control node's own (its clock): the order in
    # which it took the goals, whenever their statuses reach this process
    chunk_accepted: dict[bytes, float] = field(default_factory=dict)

    def _on_chunk_status(self, msg: GoalStatusArray) -> None:
        self.chunk_status.append((time.monotonic(), {
            bytes(s.goal_info.goal_id.uuid): s.status for s in msg.status_list}))
        for s in msg.status_list:
            stamp = s.goal_info.stamp
            self.chunk_accepted.setdefault(bytes(s.goal_info.goal_id.uuid),
                                           stamp.sec + stamp.nanosec * 1e-9)

    def commanded_since(self, since: float, t_sim: float) -> list[float]:
        """Stamps of the commands received after `since` (monotonic) stamped after `t_sim`."""
        return [st for r, st in self.commands if r > since and st > t_sim]
    world: list[WorldState] = field(default_factory=list)

    def state(self) -> Any:
        wait_for(lambda: self.world, what="a world state")
        return msg_to_state(self.world[-1])

    def speed(self, since: float, window: float = 0.1) -> float:
        """Fastest joint speed (rad/s) measured since `since` (monotonic): displacement over
        `window` s of sim time (sim_node publishes no velocities; single 10 ms differences
        are the actuators' jitter)."""
        return _fastest([(q, t) for r, q, t in self.joints if r >= since], window)

    def recent_speed(self, span: float) -> float | None:
        """`speed` over the last `span` s of sim time; None before that much has come. On sim
        time, not on arrival: the few messages a loaded machine delivers in a short wall
        window cover less than `speed`'s window, which would read as rest (CI)."""
        if not self.joints:
            return None
        k, t_end = len(self.joints) - 1, self.joints[-1][2]
        # back through this episode only: sim time starts again at a reset
        while k > 0 and t_end - span <= self.joints[k - 1][2] <= self.joints[k][2]:
            k -= 1
        r, _, t = self.joints[k]
        return self.speed(r) if t_end - t >= span - 0.02 else None

    def episode_rows(self) -> list[tuple[float, np.ndarray, float]]:
        """The joint rows of the current episode: back from the newest while sim time falls
        (it starts again at a reset)."""
        k = len(self.joints) - 1
        while k > 0 and self.joints[k - 1][2] <= self.joints[k][2]:
            k -= 1
        return self.joints[max(k, 0):]

    def speed_before(self, t_sim: float, span: float, timeout: float = 30.0) -> float:
        """Fastest joint speed over the `span` s of sim time before `t_sim`, once the joint
        states up to `t_sim` have arrived: on the sim's clock, so a test process that receives
        them late (a loaded machine) measures the same motion."""
        wait_for(lambda: self.joints and self.joints[-1][2] >= t_sim, timeout,
                 f"joint states up to sim time {t_sim:.2f}")
        rows = [r for r in self.episode_rows() if t_sim - span <= r[2] <= t_sim]
        assert len(rows) >= 2 and rows[-1][2] - rows[0][2] >= 0.1, \
            f"joint states over {span} s before {t_sim:.2f}: {[round(r[2], 3) for r in rows]}"
        return _fastest([(q, t) for _, q, t in rows], 0.1)

    def resting(self, span: float) -> bool:
        """Still (under 1 mrad/s) over the last `span` s of sim time."""
        speed = self.recent_speed(span)
        return speed is not None and speed < 0.001

    def reset(self, scene: str, seed: int) -> None:
        r = call_service(self.node, ResetScene, f"{self.ns}/sim_node/reset",
                         ResetScene.Request(scene=scene, seed=seed,
                                            request_id=uuid.uuid4().hex), timeout=120)
        assert r.success, r.message

    def seen_where_it_is(self, phrase: str, entity: str) -> None:
        """Wait until perception shows the object where the physics has it: right after a scene
        change a capture of the scene before (stamped on a clock that restarted) can still be
        the newest the perception node holds (the plate test, run first on a fresh stack, got
        the previous scene's tomato sauce for "the white mug", stamped t=0.54 s)."""
        def seen() -> bool:
            r = call_service(self.node, Detect, f"{self.ns}/perception_node/detect",
                             Detect.Request(phrases=[phrase]), timeout=30)
            at = self.state().objects[entity].position
            return bool(r.success and r.detections) and math.dist(
                detection_from_msg(r.detections[0]).centroid[:2], at[:2]) < 0.03

        wait_for(seen, 30, f"{phrase} seen where it is")


class FeedbackTap:
    """Every feedback message of one action, by goal, from the action's feedback topic itself:
    rclpy's ActionClient forgets a goal's feedback callback once its result arrives, and the
    last feedback (a topic) can arrive after the result (a service reply) — CI lost the final
    progress 1.0 that way twice in one run."""

    def __init__(self, node: Node, client: ActionClient) -> None:
        self.routes: dict[bytes, list[Any]] = {}
        node.create_subscription(client._action_type.Impl.FeedbackMessage,
                                 f"{client._action_name}/_action/feedback", self._on, 100)

    def _on(self, msg: Any) -> None:
        out = self.routes.get(bytes(msg.goal_id.uuid))
        if out is not None:
            out.append(msg.feedback)

    def new_goal(self, feedback: list[Any]) -> UUID:
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        self.routes[bytes(goal_id.uuid)] = feedback
        return goal_id


def send_goal(client: ActionClient, goal: Any, feedback: list | None) -> Any:
    """`send_goal_async`, the feedback (if asked for) from the client's tap where it has one."""
    tap: FeedbackTap | None = getattr(client, "feedback_tap", None)
    if feedback is None:
        return client.send_goal_async(goal)
    if tap is None:
        return client.send_goal_async(goal, feedback_callback=lambda m: feedback.append(m.feedback))
    return client.send_goal_async(goal, goal_uuid=tap.new_goal(feedback))


def run_goal(client: ActionClient, goal: Any, timeout: float = 120.0,
         feedback: list | None = None) -> Any:
    sent = send_goal(client, goal, feedback)
    wait_for(sent.done, 20, "goal acceptance")
    gh = sent.result()
    assert gh.accepted
    res = gh.get_result_async()
    wait_for(res.done, timeout, "the primitive's result")
    return res.result().result


def start_until(client: ActionClient, goal: Any, phase: str, progress: float = 0.0
                 ) -> tuple[Any, Any]:
    """Send a goal and wait until its feedback reaches `phase` past `progress`: (goal
    handle, result future); the goal's own message if it ended before."""
    feedback: list[Any] = []
    sent = send_goal(client, goal, feedback)
    wait_for(sent.done, 20, "goal acceptance")
    gh = sent.result()
    assert gh.accepted
    res = gh.get_result_async()
    wait_for(lambda: res.done() or any(f.phase == phase and f.progress > progress
                                       for f in feedback), 60, f"the {phase} under way")
    assert not res.done(), res.result().result.message
    return gh, res


@contextmanager
def primitives_stack(scene: str, real_time_factor: float = 1.0,
                     image_size: tuple[int, int] = (640, 480), watch_arm: bool = True
                     ) -> Iterator[Rig]:
    """The sim stack's own entries (config/stacks/sim.yaml) for the four nodes, on the front
    camera at 640 x 480 (the embedded tests' frames), `scene` loaded; the sim at
    `real_time_factor` (0: as fast as it steps; the controller follows the sim's clock).
    `watch_arm` off: the test node takes only the world state (the 100 Hz joint states and
    commands cost a quarter of a core in Python)."""
    ns = f"/t{uuid.uuid4().hex[:8]}"
    stack = load_stack("sim")
    nodes = {n.name: n for n in stack.nodes
             if n.name in ("sim_node", "franka_control_node", "perception_node",
                           "primitives_node")}
    nodes["sim_node"].parameters.update(scene=scene, camera_rate=5.0,
                                        real_time_factor=real_time_factor, cameras=["front"],
                                        image_width=image_size[0],
                                        image_height=image_size[1])
    nodes["perception_node"].parameters.update(cameras=["front"])
    nodes["franka_control_node"].parameters.update(time_factor=max(1.0, real_time_factor))
    assert nodes["sim_node"].parameters["segmentation"] is True
    assert nodes["franka_control_node"].parameters["control_rate"] == CONTROL_RATE
    stack = stack.model_copy(update={"nodes": list(nodes.values())})
    with running_stack(stack, ns) as (node, logs):
        rig = Rig(node, ns, logs, ActionClient(node, Grasp, f"{ns}/grasp"),
                  ActionClient(node, Place, f"{ns}/place"))
        for client in (rig.grasp, rig.place):
            client.feedback_tap = FeedbackTap(node, client)

        node.create_subscription(WorldState, f"{ns}/world_state", rig.world.append, 10)
        if watch_arm:
            node.create_subscription(JointState, f"{ns}/joint_states",
                                     joint_rows(rig.joints), 1000)
            # the status and the commands in callback groups of their own: the times taken are
            # when each arrived, not when the executor got round to it behind the joint and world
            # states (a quiet run took the last command 1.8 s after the cancel that way)
            node.create_subscription(GoalStatusArray, f"{ns}/execute_chunk/_action/status",
                                     rig._on_chunk_status, 10,
                                     callback_group=MutuallyExclusiveCallbackGroup())
            # keep-last 1: the times taken are when each command arrived, not when a backlog of
            # 100 Hz commands is worked through (CI once took the last one 1.75 s after the
            # cancel); the newest is never dropped, so "a command after T" stays exact
            def on_command(m: JointState) -> None:
                rig.commands.append((time.monotonic(), m.header.stamp.sec + m.header.stamp.nanosec
                                     * 1e-9))
                rig.target = np.asarray(m.position)[[list(m.name).index(j) for j in JOINTS]]

            node.create_subscription(JointState, f"{ns}/joint_command", on_command, 1,
                                     callback_group=MutuallyExclusiveCallbackGroup())
        for client in (rig.grasp, rig.place):
            assert client.wait_for_server(timeout_sec=90), logs
        wait_for(lambda: (rig.joints or not watch_arm) and rig.world, 60,
                 "joint and world states")
        wait_for(lambda: call_service(node, Detect, f"{ns}/perception_node/detect",
                                      Detect.Request(phrases=["the basket"]),
                                      timeout=30).success, 90, "perception on sim frames")
        yield rig
