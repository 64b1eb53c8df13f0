"""Orchestrator node: the ExecuteTask action on a running stack (issue #16).

Action `execute_task` (ExecuteTask): the core's `orchestrator.loop.Orchestrator` — the same
routing `mango task run` runs embedded — on a ROS port (`RosPort`): the tools are action
clients with cancel (`run_policy` RunPolicy with the subgoal text, `grasp` / `place` from the
primitives_node), `halt` the controller's Halt service; perception is the perception_node's
`detect`; the world states (the oracle / gt monitors' feed, the ground truth in the sim) come
from `world_state`, the proprioception from `joint_states`. A monitor signal cancels the
running tool goal and halts the arm; a cancel of the task does the same and ends the goal
CANCELLED. Every decision goes out on `~/decisions` and every world-failure event on
`~/events` (std_msgs/String, one JSON line each), and into the episode record
(`record_dir`, one JSONL file per goal). Parameters: `scene`, `robot`, the tools' names
(`run_policy_action`, `grasp_action`, `place_action`, `execute_chunk_action`, `halt_service`,
`detect_service`), `world_state_topic`, `joint_states_topic`, `monitor_hz`, `no_progress_s`,
`tool_timeout` (s of wall time any one tool may take), `record_dir`.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rclpy.action import CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String

from mango.bags.world_state_cdr import decode_world_state
from mango.control import chunk_to_trajectory, load_robot
from mango.errors import InputError
from mango.nodes.actions import ActionClient, action_server
from mango.nodes.common import declare_parameters, positive, rate_param, run_node
from mango.oracle.world_state import WorldState
from mango.orchestrator.config import OrchestratorConfig, parse_backend_opts
from mango.orchestrator.loop import Orchestrator, TaskOutcome
from mango.orchestrator.ports import Observer, TaskCancelled, at_rest
from mango.orchestrator.schemas import EpisodeRecord, Subgoal
from mango.orchestrator.tools import Interrupted, ToolResult
from mango.orchestrator.vlm import check_backend_config
from mango.primitives.planning import GRIPPER_OPEN, parse_destination
from mango.ros.detection_msg import detection_from_msg
from mango.ros.images import image_to_numpy
from mango.ros.trajectory_msg import chunk_goal
from mango.sim.env import as_scene
from mango.sim.scene import SceneSpec
from mango_ros.action import ExecuteChunk, ExecuteTask, Grasp, Place, RunPolicy
from mango_ros.msg import WorldState as WorldStateMsg
from mango_ros.srv import Detect, Halt

FINGERS = ("fr3_finger_joint1", "fr3_finger_joint2")
RELEASE_S = 0.6  # how long a wrong object in the hand is given to fall free (as embedded)
CLOSED_WIDTH = 0.0
REST_WAIT_S = 1.0  # a hold counts from the hand at rest, or this long after the halt


class RosPort:
    """The robot port on a ROS stack (`orchestrator.ports.RobotPort`): every world state the
    node receives while a tool runs reaches the loop's observer; an `Interrupted` or
    `TaskCancelled` from it cancels the tool's goal and halts the arm at once."""

    def __init__(self, node: OrchestratorNode, scene: SceneSpec) -> None:
        self.node, self.scene = node, scene
        self.dt = node.state_period
        self.states: queue.Queue[WorldState] = queue.Queue()
        self._first_vla = True
        self._held: str | None = None  # what the last grasp of this task took
        self.tool = ""

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
        cli = self.node.detect_client
        if not cli.wait_for_service(timeout_sec=self.node.obs_timeout):
            return {}, f"{self.node.detect_name} is not available"
        now = self.time
        deadline = time.monotonic() + self.node.obs_timeout
        while True:
            fut = cli.call_async(Detect.Request(phrases=list(phrases), camera="",
                                                max_results=1))
            if not self._wait(fut, self.node.obs_timeout):
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
    def _wait(self, fut: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not fut.done():
            if time.monotonic() > deadline or not self.node.context.ok():
                return False
            time.sleep(0.002)
        return True

    def halt_now(self) -> Any:
        """Ask the controller to stop and hold (the answer is not waited for here)."""
        return self.node.halt_client.call_async(Halt.Request())

    def _run_goal(self, tool: str, client: ActionClient, goal: Any, observe: Observer,
                  budget_t: float | None = None) -> tuple[str, Any]:
        """Run one tool goal, feeding the world to `observe`: ("result", result) or
        ("interrupted", signals) or ("budget", None) or ("refused"/"lost", why)."""
        self.tool = tool
        if not client.wait_for_server(timeout_sec=self.node.obs_timeout):
            return "lost", f"the {tool} action server is not available"
        sent = client.send_goal_async(goal)
        if not self._wait(sent, self.node.obs_timeout):
            return "lost", f"the {tool} action server did not answer the goal"
        gh = sent.result()
        if not gh.accepted:
            return "refused", f"the {tool} action server refused the goal"
        res = gh.get_result_async()
        deadline = time.monotonic() + self.node.tool_timeout
        try:
            while not res.done():
                st = self._next_state()
                if time.monotonic() > deadline:
                    self._stop(gh, res)
                    return "lost", f"{tool} took longer than {self.node.tool_timeout:g} s"
                if st is None:
                    continue
                observe(st)
                if budget_t is not None and st.t >= budget_t:
                    self._stop(gh, res)
                    return "budget", None
        except Interrupted as exc:
            self._stop(gh, res)
            return "interrupted", exc
        except TaskCancelled:
            self._stop(gh, res)
            raise
        finally:
            self.tool = ""
        return "result", res.result().result

    def _stop(self, gh: Any, res: Any) -> None:
        """Cancel the tool's goal and halt the arm; wait for the goal to end."""
        gh.cancel_goal_async()
        self.halt_now()
        self._wait(res, 10.0)

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
        while self.node._image is None and time.monotonic() < deadline:
            time.sleep(0.02)
        msg = self.node._image
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
        self._wait(fut, self.node.obs_timeout)
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


class OrchestratorNode(Node):
    def __init__(self) -> None:
        super().__init__("orchestrator_node")
        p = declare_parameters(self, {
            "scene": "libero10_soup_sauce_basket", "robot": "fr3",
            "run_policy_action": "run_policy", "grasp_action": "grasp",
            "place_action": "place", "execute_chunk_action": "execute_chunk",
            "halt_service": "halt", "detect_service": "perception_node/detect",
            "world_state_topic": "world_state", "joint_states_topic": "joint_states",
            "state_rate": rate_param(100.0), "control_rate": rate_param(100.0),
            "monitor_hz": rate_param(15.0), "no_progress_s": positive(10.0),
            "observation_timeout": positive(10.0), "tool_timeout": positive(300.0),
            "record_dir": "",
            # what a model decider / the vlm monitor is shown, and the model behind them
            "camera_topic": "camera/front/image_raw",
            "model_backend": "", "model": "", "model_options": "",  # KEY=VALUE, space-separated
        })
        self.scene = as_scene(p["scene"])
        self.robot = load_robot(p["robot"])
        self.state_period = 1.0 / float(p["state_rate"])
        self.control_rate = float(p["control_rate"])
        self.monitor_hz, self.no_progress_s = float(p["monitor_hz"]), float(p["no_progress_s"])
        self.obs_timeout, self.tool_timeout = float(p["observation_timeout"]), \
            float(p["tool_timeout"])
        self.record_dir = Path(p["record_dir"]) if p["record_dir"] else None
        self.camera_topic = p["camera_topic"]
        self.model_backend, self.model = p["model_backend"] or None, p["model"] or None
        self.model_options = parse_backend_opts(p["model_options"].split(), "model_options")
        self._image: Image | None = None
        self.world_topic, self.detect_name = p["world_state_topic"], p["detect_service"]
        self._latest_raw: bytes | None = None
        self._latest: tuple[bytes, WorldState] | None = None
        self.joints: JointState | None = None
        self.port: RosPort | None = None
        self._orch: Orchestrator | None = None
        self._busy = threading.Lock()
        self._episodes = 0

        sensors = MutuallyExclusiveCallbackGroup()  # states are taken one at a time, in order
        group = ReentrantCallbackGroup()
        self.create_subscription(WorldStateMsg, p["world_state_topic"], self._on_world, 10,
                                 callback_group=sensors, raw=True)
        self.create_subscription(JointState, p["joint_states_topic"], self._on_joints, 10,
                                 callback_group=sensors)
        self.create_subscription(Image, self.camera_topic, self._on_image,
                                 qos_profile_sensor_data, callback_group=sensors)
        self.vla_client = ActionClient(self, RunPolicy, p["run_policy_action"],
                                       callback_group=group)
        self.grasp_client = ActionClient(self, Grasp, p["grasp_action"], callback_group=group)
        self.place_client = ActionClient(self, Place, p["place_action"], callback_group=group)
        self.chunk_client = ActionClient(self, ExecuteChunk, p["execute_chunk_action"],
                                         callback_group=group)
        self.halt_client = self.create_client(Halt, p["halt_service"], callback_group=group)
        self.detect_client = self.create_client(Detect, p["detect_service"],
                                                callback_group=group)
        self.decisions_pub = self.create_publisher(String, "~/decisions", 100)
        self.events_pub = self.create_publisher(String, "~/events", 100)
        action_server(self, ExecuteTask, "execute_task", execute_callback=self._execute,
                      goal_callback=lambda _g: GoalResponse.ACCEPT,
                      cancel_callback=self._on_cancel, callback_group=group)
        self.get_logger().info(f"execute_task on scene {self.scene.name}")

    # -------------------------------------------------------------- inputs
    @property
    def latest(self) -> WorldState | None:
        """The latest world state (decoded on demand: an idle node decodes nothing)."""
        raw = self._latest_raw
        if raw is not None and (self._latest is None or self._latest[0] is not raw):
            try:
                self._latest = (raw, decode_world_state(raw))
            except InputError:
                return self._latest[1] if self._latest else None
        return self._latest[1] if self._latest else None

    def _on_world(self, data: bytes) -> None:
        self._latest_raw = data
        port = self.port
        if port is None:
            return
        try:
            state = decode_world_state(data)
        except InputError as exc:
            self.get_logger().warning(f"world state skipped: {exc}")
            return
        self._latest = (data, state)
        port.push(state)

    def _on_image(self, msg: Image) -> None:
        self._image = msg  # kept as it came; decoded only when a model is shown it

    def _on_joints(self, msg: JointState) -> None:
        if set(self.robot.joint_names) <= set(msg.name):
            self.joints = msg

    def _on_cancel(self, _gh: Any) -> CancelResponse:
        orch = self._orch
        if orch is not None:
            orch.cancel()  # at the next world state: the tool's goal cancelled, the arm held
        return CancelResponse.ACCEPT

    # -------------------------------------------------------------- ExecuteTask
    def _execute(self, gh: Any) -> ExecuteTask.Result:
        if not self._busy.acquire(blocking=False):
            return self._end(gh, ExecuteTask.Result.STATUS_REJECTED,
                             "another task is running (one at a time)")
        try:
            return self._run(gh)
        finally:
            self._busy.release()

    def _end(self, gh: Any, status: int, message: str,
             result: ExecuteTask.Result | None = None) -> ExecuteTask.Result:
        result = result or ExecuteTask.Result()
        result.status, result.message = status, message
        if status == result.STATUS_SUCCEEDED:
            gh.succeed()
        elif status == result.STATUS_CANCELLED:
            gh.canceled()
        else:
            gh.abort()
        self.get_logger().info(f"execute_task: {message}")
        return result

    def _run(self, gh: Any) -> ExecuteTask.Result:
        goal = gh.request
        R = ExecuteTask.Result
        try:
            cfg = OrchestratorConfig(
                mode=goal.mode or "full", monitor=goal.monitor or "oracle",
                decider=goal.decider or "offline", monitor_hz=self.monitor_hz,
                no_progress_s=self.no_progress_s, horizon_s=goal.time_budget or None,
                backend=self.model_backend, model=self.model,
                backend_opts=self.model_options)
            check_backend_config(cfg)
            if goal.time_budget < 0:
                raise InputError("time_budget must be 0 (the default) or positive",
                                 field="time_budget")
        except InputError as exc:
            return self._end(gh, R.STATUS_REJECTED, f"goal rejected: {exc}")
        self._episodes += 1
        path = self.record_dir / f"task_{self._episodes:03d}.jsonl" if self.record_dir else None
        fb = ExecuteTask.Feedback()
        plan_ids: dict[str, str] = {}

        def on_line(line: dict[str, Any]) -> None:
            kind = line["record"]
            text = json.dumps(line, default=str)
            if kind == "plan":
                plan_ids.update({s["id"]: s["instruction"] for s in line["subgoals"]})
            elif kind == "decision":
                self.decisions_pub.publish(String(data=text))
                fb.last_decision = text
                if line.get("subgoal"):
                    fb.subgoal_id = str(line["subgoal"])
                    fb.subgoal = plan_ids.get(fb.subgoal_id, "")
            elif kind == "world_event":
                if line.get("kind") != "completion":  # failures and recoveries (K.1)
                    self.events_pub.publish(String(data=text))
                return
            elif kind in ("tool_start", "halt"):
                fb.tool = line.get("tool", "halt")
            elif kind == "tool_end":
                fb.tool = ""
            else:
                return
            gh.publish_feedback(fb)

        try:
            record = EpisodeRecord(path, on_line=on_line)
        except InputError as exc:
            return self._end(gh, R.STATUS_REJECTED, f"goal rejected: {exc}")
        port = RosPort(self, self.scene)
        try:
            orch = Orchestrator(self.scene, 0, cfg, instruction=goal.instruction or None,
                                record=record, port=port,
                                max_decisions=goal.step_budget or None)
        except InputError as exc:
            record.close()
            return self._end(gh, R.STATUS_REJECTED, f"goal rejected: {exc}")
        self._orch, self.port = orch, port
        if gh.is_cancel_requested:
            orch.cancel()
        try:
            out = orch.run()
        except InputError as exc:
            return self._end(gh, R.STATUS_FAILED, f"the task could not run: {exc}")
        finally:
            self._orch, self.port = None, None
            record.close()
        return self._result(gh, out)

    def _result(self, gh: Any, out: TaskOutcome) -> ExecuteTask.Result:
        R = ExecuteTask.Result
        j = out.to_json()
        r = R(success=out.success, decisions=j["decisions"], recovered=j["recovered"],
              unrecovered=j["unrecovered"], wall_time=out.wall_s, robot_time=j["robot_s"],
              pp_per_min=j["pp_per_min"], verdict_json=json.dumps(out.verdict or {}))
        r.subgoals = [s["instruction"] for s in out.subgoals]
        r.subgoal_outcomes = [s["outcome"] for s in out.subgoals]
        r.events = [json.dumps(e) for e in j["events"]]
        n_done = sum(s["outcome"] == "completed" for s in out.subgoals)
        tally = f"{n_done}/{len(out.subgoals)} subgoals, {j['decisions']} decisions"
        if out.cancelled:
            return self._end(gh, R.STATUS_CANCELLED, f"cancelled ({tally}); the arm is held",
                             r)
        if out.success:
            return self._end(gh, R.STATUS_SUCCEEDED, f"task done ({tally})", r)
        if out.aborted:
            return self._end(gh, R.STATUS_ABORTED, f"aborted: {out.aborted} ({tally})", r)
        return self._end(gh, R.STATUS_FAILED, f"the task-level check fails ({tally})", r)


def main(args: list[str] | None = None) -> None:
    run_node(OrchestratorNode, args, threads=6)


if __name__ == "__main__":
    main()
