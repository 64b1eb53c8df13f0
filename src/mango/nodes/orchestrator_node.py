"""Orchestrator node: the ExecuteTask action on a running stack (issue #16).

Action `execute_task` (ExecuteTask): the core's `orchestrator.loop.Orchestrator` — the same
routing `mango task run` runs embedded — on a ROS port (`orchestrator_port.RosPort`): the
tools are action clients with cancel (`run_policy` RunPolicy with the subgoal text, `grasp` /
`place` from the primitives_node), `halt` the controller's Halt service; perception is the
perception_node's `detect`; the world states (the oracle / gt monitors' feed, the ground
truth in the sim) come from `world_state`, the proprioception from `joint_states`. A monitor
signal cancels the running tool goal and halts the arm; a cancel of the task does the same and
ends the goal CANCELLED. Every decision goes out on `~/decisions` and every world-failure
event on `~/events` (std_msgs/String, one JSON line each), and into the episode record
(`record_dir`, one JSONL file per goal). Parameters: `scene`, `robot`, the tools' names
(`run_policy_action`, `grasp_action`, `place_action`, `execute_chunk_action`, `halt_service`,
`detect_service`), `world_state_topic`, `joint_states_topic`, `monitor_hz`, `no_progress_s`,
`tool_timeout` (s of wall time any one tool may take), `server_lost_after` (s a tool server
seen before may be missing from the graph before the task ends, naming it:
`orchestrator.liveness`; a killed node leaves the graph when its DDS lease ends, 4 s in the
project's profiles), `record_dir`.

A goal's numbers are checked before anything runs (`orchestrator.config.task_budgets`): a NaN,
infinite or negative `time_budget` is STATUS_REJECTED naming the field.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from rclpy.action import CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String

from mango.bags.world_state_cdr import decode_world_state
from mango.control import load_robot
from mango.errors import InputError
from mango.nodes.actions import ActionClient, action_server
from mango.nodes.common import declare_parameters, positive, rate_param, run_node
from mango.nodes.orchestrator_port import RosPort, server_watch
from mango.oracle.world_state import WorldState
from mango.orchestrator.config import OrchestratorConfig, parse_backend_opts, task_budgets
from mango.orchestrator.liveness import SERVER_GRACE_S
from mango.orchestrator.loop import Orchestrator, TaskOutcome
from mango.orchestrator.schemas import EpisodeRecord
from mango.orchestrator.vlm import check_backend_config
from mango.sim.env import as_scene
from mango_ros.action import ExecuteChunk, ExecuteTask, Grasp, Place, RunPolicy
from mango_ros.msg import WorldState as WorldStateMsg
from mango_ros.srv import Detect, Halt


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
            "server_lost_after": positive(SERVER_GRACE_S, 60.0),
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
        self.image: Image | None = None
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
        self.create_subscription(JointState, p["joint_states_topic"], self._on_joints,
                                 qos_profile_sensor_data,
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
        grace = float(p["server_lost_after"])
        self.servers = {tool: server_watch(self, client, p[name], grace) for tool, client, name
                        in (("vla", self.vla_client, "run_policy_action"),
                            ("grasp", self.grasp_client, "grasp_action"),
                            ("place", self.place_client, "place_action"),
                            ("release", self.chunk_client, "execute_chunk_action"),
                            ("halt", self.halt_client, "halt_service"),
                            ("detect", self.detect_client, "detect_service"))}
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
        self.image = msg  # kept as it came; decoded only when a model is shown it

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
            budgets = task_budgets(goal.time_budget, goal.step_budget)
            cfg = OrchestratorConfig(
                mode=goal.mode or "full", monitor=goal.monitor or "oracle",
                decider=goal.decider or "offline", monitor_hz=self.monitor_hz,
                no_progress_s=self.no_progress_s, horizon_s=budgets.horizon_s,
                backend=self.model_backend, model=self.model,
                backend_opts=self.model_options)
            check_backend_config(cfg)
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
                                max_decisions=budgets.max_decisions)
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
