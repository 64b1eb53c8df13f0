"""The orchestrator's robot port on a ROS stack (`orchestrator.ports.RobotPort`).

The tools are action clients with cancel (`RunPolicy` with the subgoal text, the primitives
node's `Grasp` / `Place`, `ExecuteChunk` for letting go), the halt is the controller's `Halt`
service, perception the perception node's `Detect`; the world states the node receives while a
tool runs reach the loop's observer. The node (`orchestrator_node`) owns the clients and the
subscriptions; this module holds what the loop asks of them.

Every call watches its server (`orchestrator.liveness.ServerWatch`, one per server, kept by
the node across goals): a server that was there and has been missing from the graph for the
node's `server_lost_after` seconds ends the call at once with `ToolServerLost`, naming the node
that served it ("vla_node's run_policy went away ..."), and the loop ends the task; an action
server that never appears within `observation_timeout` ends it the same way.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState

from mango.control import chunk_to_trajectory
from mango.control.robot import RobotConfig
from mango.errors import InputError
from mango.nodes.actions import ActionClient
from mango.oracle.world_state import WorldState
from mango.orchestrator.liveness import NAME_WAIT_S, ServerWatch, ToolServerLost
from mango.orchestrator.ports import Observer, TaskCancelled, at_rest
from mango.orchestrator.schemas import Subgoal
from mango.orchestrator.tools import Interrupted, ToolResult
from mango.primitives.planning import GRIPPER_OPEN, parse_destination
from mango.ros.detection_msg import detection_from_msg
from mango.ros.images import image_to_numpy
from mango.ros.trajectory_msg import chunk_goal
from mango.sim.scene import SceneSpec
from mango_ros.action import Grasp, Place, RunPolicy
from mango_ros.srv import Detect, Halt

FINGERS = ("fr3_finger_joint1", "fr3_finger_joint2")
RELEASE_S = 0.6  # how long a wrong object in the hand is given to fall free (as embedded)
CLOSED_WIDTH = 0.0
REST_WAIT_S = 1.0  # a hold counts from the hand at rest, or this long after the halt
LOOK_EVERY_S = 0.05  # s between two looks at a server's presence while a call waits on it


class PortNode(Protocol):
    """What the port reads of its node: the clients, the settings and the latest inputs."""

    robot: RobotConfig
    state_period: float
    control_rate: float
    obs_timeout: float
    tool_timeout: float
    world_topic: str
    detect_name: str
    camera_topic: str
    vla_client: ActionClient
    grasp_client: ActionClient
    place_client: ActionClient
    chunk_client: ActionClient
    halt_client: Any
    detect_client: Any
    context: Any
    joints: JointState | None
    image: Image | None
    servers: dict[str, ServerWatch]  # vla, grasp, place, release, halt, detect

    @property
    def latest(self) -> WorldState | None: ...


def serving_node(node: Node, service: str) -> str | None:
    """The name of the node that serves the fully qualified `service`, from the graph."""
    for name, namespace in node.get_node_names_and_namespaces():
        try:
            served = node.get_service_names_and_types_by_node(name, namespace)
        except RuntimeError:  # it left the graph between the two questions
            continue
        if any(s == service for s, _ in served):
            return name
    return None


def server_watch(node: Node, client: Any, name: str, grace: float) -> ServerWatch:
    """The watch of one tool server: an action client's (`server_is_ready`, served where its
    `send_goal` service is) or a service client's (`service_is_ready`)."""
    resolved = node.resolve_service_name(name)
    if isinstance(client, ActionClient):
        return ServerWatch(resolved.rsplit("/", 1)[-1], client.server_is_ready,
                           lambda: serving_node(node, f"{resolved}/_action/send_goal"), grace)
    return ServerWatch(resolved.rsplit("/", 1)[-1], client.service_is_ready,
                       lambda: serving_node(node, resolved), grace)


class RosPort:
    """The robot port on a ROS stack (`orchestrator.ports.RobotPort`): every world state the
    node receives while a tool runs reaches the loop's observer; an `Interrupted` or
    `TaskCancelled` from it cancels the tool's goal and halts the arm at once."""

    def __init__(self, node: PortNode, scene: SceneSpec) -> None:
        self.node, self.scene = node, scene
        self.dt = node.state_period
        self.states: queue.Queue[WorldState] = queue.Queue()
        self._first_vla = True
        self._held: str | None = None  # what the last grasp of this task took
        self.tool = ""
        self._next_look: dict[str, float] = {}

    # -------------------------------------------------------------- the feed
    @property
    def time(self) -> float:
        st = self.node.latest
        return st.t if st is not None else 0.0

    def push(self, state: WorldState) -> None:
        self.states.put(state)

    def _next_state(self, timeout: float = 0.05) -> WorldState | None:
        try:
            return self.states.get(timeout=timeout)
        except queue.Empty:
            return None

    def start(self, seed: int) -> WorldState:
        """The task starts in the world as it is: the next world state is its first."""
        while not self.states.empty():
            self.states.get_nowait()
        deadline = time.monotonic() + self.node.obs_timeout
        while time.monotonic() < deadline:
            st = self._next_state(0.1)
            if st is not None:
                self._first_vla, self._held = True, None
                return st
        raise InputError(f"no world state on '{self.node.world_topic}' within "
                         f"{self.node.obs_timeout:g} s", field="world_state_topic")

    def joint_positions(self) -> np.ndarray:
        js = self.node.joints
        if js is None:
            raise InputError("no joint state yet", field="joint_states_topic")
        names = list(js.name)
        return np.asarray(js.position, float)[[names.index(n)
                                               for n in self.node.robot.joint_names]]

    def hand_position(self) -> np.ndarray:
        st = self.node.latest
        if st is None or "robot_hand" not in st.objects:
            raise InputError("the world state has no robot_hand", field="world_state_topic")
        return np.asarray(st.objects["robot_hand"].position, float)

    def gripper_width(self) -> float:
        js = self.node.joints
        if js is not None and all(f in js.name for f in FINGERS):
            names = list(js.name)
            return float(sum(js.position[names.index(f)] for f in FINGERS))
        st = self.node.latest
        return float(st.gripper.width) if st is not None and st.gripper is not None and \
            st.gripper.width is not None else self.node.robot.gripper_max_width

    def commanded_width(self) -> float:
        """The controller's last gripper command as the world state reports it (closed or
        not): the VLA's own commands are not seen here."""
        st = self.node.latest
        closed = st is not None and st.gripper is not None and st.gripper.closed is True
        return CLOSED_WIDTH if closed else GRIPPER_OPEN

    def detect(self, phrases: Sequence[str]) -> tuple[dict[str, Any], str]:
        """Detections from a camera frame taken after this call (asked again until the frame
        is newer than the latest world state: a frame from before the halt sees the hand
        elsewhere), as the primitives_node does."""
        cli, watch = self.node.detect_client, self.node.servers["detect"]
        if not self._until(watch.there, self.node.obs_timeout, watch, poll=0.02):
            return {}, f"{self.node.detect_name} is not available"
        now = self.time
        deadline = time.monotonic() + self.node.obs_timeout
        while True:
            fut = cli.call_async(Detect.Request(phrases=list(phrases), camera="",
                                                max_results=1))
            if not self._wait(fut, self.node.obs_timeout, watch):
                cli.remove_pending_request(fut)
                return {}, f"{self.node.detect_name} did not answer"
            r = fut.result()
            stamps = [d.header.stamp.sec + d.header.stamp.nanosec * 1e-9
                      for d in r.detections]
            # a stamp ahead of the world's is a frame from before a sim reset
            fresh = not stamps or now <= min(stamps) <= self.time + 0.2
            if fresh or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        found: dict[str, Any] = {}
        for d in r.detections:
            found.setdefault(d.phrase, detection_from_msg(d))
        return found, r.message if fresh else f"{r.message} (no frame newer than t={now:.2f})"

    # -------------------------------------------------------------- tools
    def _look(self, watch: ServerWatch) -> None:
        """`watch.check()`, at most every `LOOK_EVERY_S`: raises `ToolServerLost`."""
        now = time.monotonic()
        if now >= self._next_look.get(watch.server, 0.0):
            self._next_look[watch.server] = now + LOOK_EVERY_S
            watch.check()

    def _until(self, pred: Any, timeout: float, watch: ServerWatch | None = None,
               poll: float = 0.002) -> bool:
        """Whether `pred()` held within `timeout` s; `ToolServerLost` as soon as `watch`'s
        server counts as gone."""
        deadline = time.monotonic() + timeout
        while not pred():
            if watch is not None:
                self._look(watch)
            if time.monotonic() > deadline or not self.node.context.ok():
                return False
            time.sleep(poll)
        return True

    def _wait(self, fut: Any, timeout: float, watch: ServerWatch | None = None) -> bool:
        return self._until(fut.done, timeout, watch)

    def _await_server(self, watch: ServerWatch, client: ActionClient) -> None:
        """The tool's action server is there and has answered this node once (`make_contact`);
        else `ToolServerLost`: a tool with no server is not tried again."""
        timeout = self.node.obs_timeout
        if not (self._until(watch.there, timeout, watch, poll=0.02) and client.make_contact(
                timeout, lambda pred, s: self._until(pred, s, watch))):
            raise ToolServerLost(watch.server, f"{watch.label} is not available (waited "
                                 f"{timeout:g} s: is its node running?)")
        self._until(watch.named, NAME_WAIT_S, watch, poll=0.02)  # unnamed after it: no matter

    def halt_now(self) -> Any:
        """Ask the controller to stop and hold (the answer is not waited for here)."""
        return self.node.halt_client.call_async(Halt.Request())

    def _run_goal(self, tool: str, client: ActionClient, goal: Any, observe: Observer,
                  budget_t: float | None = None) -> tuple[str, Any]:
        """Run one tool goal, feeding the world to `observe`: ("result", result) or
        ("interrupted", signals) or ("budget", None) or ("refused"/"lost", why);
        `ToolServerLost` once its server went away (or never came)."""
        self.tool = tool
        try:
            return self._goal(self.node.servers[tool], tool, client, goal, observe, budget_t)
        finally:
            self.tool = ""

    def _goal(self, watch: ServerWatch, tool: str, client: ActionClient, goal: Any,
              observe: Observer, budget_t: float | None) -> tuple[str, Any]:
        self._await_server(watch, client)
        sent = client.send_goal_async(goal)
        if not self._wait(sent, self.node.obs_timeout, watch):
            return "lost", f"the {tool} action server did not answer the goal"
        gh = sent.result()
        if not gh.accepted:
            return "refused", f"the {tool} action server refused the goal"
        res = gh.get_result_async()
        deadline = time.monotonic() + self.node.tool_timeout
        try:
            while not res.done():
                self._look(watch)
                st = self._next_state()
                if time.monotonic() > deadline:
                    self._stop(gh, res, watch)
                    return "lost", f"{tool} took longer than {self.node.tool_timeout:g} s"
                if st is None:
                    continue
                observe(st)
                if budget_t is not None and st.t >= budget_t:
                    self._stop(gh, res, watch)
                    return "budget", None
        except Interrupted as exc:
            self._stop(gh, res, watch)
            return "interrupted", exc
        except TaskCancelled:
            with contextlib.suppress(ToolServerLost):  # the cancel is what was asked for
                self._stop(gh, res, watch)
            raise
        except ToolServerLost:
            # no answer will come: the cancel is for a server that may come back, the halt
            # stops the arm; neither is waited for
            gh.cancel_goal_async()
            self.halt_now()
            raise
        return "result", res.result().result

    def _stop(self, gh: Any, res: Any, watch: ServerWatch) -> None:
        """Cancel the tool's goal and halt the arm; wait for the goal to end (not past its
        server going away)."""
        gh.cancel_goal_async()
        self.halt_now()
        self._wait(res, 10.0, watch)

    def run_vla(self, instruction: str, observe: Observer, budget_t: float, *,
                resume: bool = False) -> ToolResult:
        goal = RunPolicy.Goal(instruction=instruction, continue_episode=not self._first_vla)
        self._first_vla = False
        how, out = self._run_goal("vla", self.node.vla_client, goal, observe, budget_t)
        if how == "interrupted":
            return ToolResult("vla", "interrupted", str(out), out.signals)
        if how == "budget":
            return ToolResult("vla", "failed", "the time budget ran out")
        if how != "result":
            return ToolResult("vla", "failed", out)
        if out.status == out.STATUS_SUCCEEDED:
            return ToolResult("vla", "done", f"the VLA finished '{instruction}'")
        return ToolResult("vla", "failed", out.message)

    def _release_other(self, sg: Subgoal, held: str | None, observe: Observer) -> None:
        """A wrong object in the hand is let go where it is, before the right one is taken."""
        if held is None or held == sg.object:
            return
        robot = self.node.robot
        q = self.joint_positions()
        n = max(2, round(RELEASE_S * self.node.control_rate))
        chunk = np.tile(np.r_[q, GRIPPER_OPEN], (n, 1))
        goal = chunk_goal(chunk_to_trajectory(chunk, self.node.control_rate,
                                              robot.joint_names, q, robot.vmax))
        self._run_goal("release", self.node.chunk_client, goal, observe)
        self._held = None

    def _primitive(self, tool: str, client: ActionClient, goal: Any,
                   observe: Observer) -> tuple[ToolResult, Any]:
        how, out = self._run_goal(tool, client, goal, observe)
        if how == "interrupted":
            return ToolResult(tool, "interrupted", str(out), out.signals), None
        if how != "result":
            return ToolResult(tool, "failed", out), None
        names = {out.STATUS_SUCCEEDED: "succeeded", out.STATUS_FAILED: "failed",
                 out.STATUS_CANCELLED: "interrupted", out.STATUS_REJECTED: "rejected"}
        return ToolResult(tool, names.get(out.status, "failed"), out.message), out

    def grasp(self, sg: Subgoal, held: str | None, observe: Observer) -> ToolResult:
        try:
            self._release_other(sg, held, observe)
        except Interrupted as exc:
            return ToolResult("grasp", "interrupted", str(exc), exc.signals)
        res, out = self._primitive("grasp", self.node.grasp_client,
                                   Grasp.Goal(target=sg.object_phrase or ""), observe)
        if res.status == "succeeded" and out is not None:
            self._held = out.entity_id or sg.object
        return res

    def place(self, sg: Subgoal, held: str | None, observe: Observer) -> ToolResult:
        if not sg.destination_phrase:
            return ToolResult("place", "rejected", f"subgoal {sg.id} has no destination")
        try:
            parse_destination(sg.destination_phrase)
        except InputError as exc:
            return ToolResult("place", "rejected", str(exc))
        if self._held != sg.object:
            g = self.grasp(sg, held, observe)
            if g.status != "succeeded":
                return ToolResult("place", g.status, f"could not take it first: {g.message}",
                                  g.signals)
        res, _ = self._primitive("place", self.node.place_client, Place.Goal(
            destination=sg.destination_phrase, object_hint=sg.object_phrase or ""), observe)
        if res.status == "succeeded":
            self._held = None
        return res

    def camera_image(self) -> np.ndarray:
        """The latest image on `camera_topic`, RGB (what a model decider or monitor sees)."""
        deadline = time.monotonic() + self.node.obs_timeout
        while self.node.image is None and time.monotonic() < deadline:
            time.sleep(0.02)
        msg = self.node.image
        if msg is None:
            raise InputError(f"no image on '{self.node.camera_topic}' within "
                             f"{self.node.obs_timeout:g} s (a model decider or the vlm "
                             "monitor needs the camera)", field="camera_topic")
        img = np.asarray(image_to_numpy(msg))
        if msg.encoding in ("bgr8", "bgra8"):
            img = img[..., 2::-1]
        elif img.ndim == 3 and img.shape[2] == 4:
            img = img[..., :3]
        elif img.ndim == 2:
            img = np.repeat(img[..., None], 3, axis=2)
        return np.ascontiguousarray(img)

    def hold(self, seconds: float, observe: Observer) -> float | None:
        """Halt (the controller holds position), then watch the world for `seconds` from
        when the hand is at rest (a real arm takes a moment to stop; deliberation starts on
        an arm held still), or from `REST_WAIT_S` after the halt if it never is. The loop
        times the rest from the states it observes (None: nothing finer here)."""
        self.tool = "halt"
        fut = self.halt_now()
        try:
            self._wait(fut, self.node.obs_timeout, self.node.servers["halt"])
        except ToolServerLost:
            self.tool = ""
            raise
        t_end: float | None = None
        t_first: float | None = None
        prev: tuple[float, np.ndarray] | None = None
        deadline = time.monotonic() + seconds + REST_WAIT_S + self.node.obs_timeout
        try:
            while time.monotonic() < deadline:
                st = self._next_state()
                if st is None:
                    continue
                observe(st)
                t_first = st.t if t_first is None else t_first
                hand = st.objects.get("robot_hand")
                if t_end is None and hand is not None:
                    p = np.asarray(hand.position, float)
                    if prev is not None and st.t > prev[0] and at_rest(prev[1], p,
                                                                       st.t - prev[0]):
                        t_end = st.t + seconds
                    prev = (st.t, p)
                if t_end is None and (hand is None or st.t - t_first >= REST_WAIT_S):
                    t_end = st.t + seconds
                if t_end is not None and st.t + 1e-9 >= t_end:
                    return None
        finally:
            self.tool = ""
        return None

    def close(self) -> None:
        pass
