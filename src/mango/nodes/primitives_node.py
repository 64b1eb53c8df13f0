"""Grasp and place primitives as ROS actions: `grasp` (Grasp) and `place` (Place).

The core is `mango.primitives.PrimitiveExecutor`, kept between goals by a
`primitives.session.PrimitiveSession`; this node gives it ROS ports: it sees
through the perception node's `Detect` service (`detect_service`), with the depth image of
the capture each detection was made on (`camera/<camera>/depth`, posed by tf or by
`extrinsics`: an object's shape, a mug's handle, is read from it), moves through the control
node's `ExecuteChunk` action (`execute_chunk_action`: the controller validates every chunk,
and a cancel of a Grasp/Place goal cancels the chunk in flight, which the controller stops
within one control period, holding position), and measures the joint states (arm joints and
finger width) and, where one is published, the world state (`world_state_topic`: contacts
for the oracle's `grasped`). One primitive runs at a time (a second goal is refused); every
goal ends in a terminal state with a reason.
Parameters: `scene` (name or YAML; "" follows the sim's `camera/segmentation_labels`),
`robot`, `camera` (default camera), `extrinsics` (its pose; "": tf), `detect_service`,
`execute_chunk_action`, `joint_states_topic`, `world_state_topic` ("" for none),
`chunk_rate` (Hz the chunks' rows are played at), `timeout` (s to wait for a service, a
server or a fresh measurement),
`planner` (`ik`: the IK ladder, the default; `moveit`: MoveIt plans the free-space legs
through moveit_py, `mango.primitives.transit`), `moveit_group`, `moveit_link`,
`moveit_base_frame`.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import Point, Pose, Quaternion
from rclpy.action import CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

from mango.bags.world_state_cdr import decode_world_state
from mango.control import chunk_to_trajectory, load_robot
from mango.control.kinematics import FR3Kinematics
from mango.errors import InputError
from mango.nodes.actions import ActionClient, action_server, wait_for_chunk
from mango.nodes.camera_inputs import CameraInputs
from mango.nodes.common import (
    Param,
    declare_parameters,
    latched_qos,
    one_line,
    positive,
    rate_param,
    run_node,
)
from mango.oracle.world_state import WorldState
from mango.perception.poses import load_extrinsics
from mango.primitives import (
    Executed,
    GraspOutcome,
    Measurement,
    Perceived,
    PrimitiveExecutor,
    PrimitivePorts,
)
from mango.primitives.motion import WorldFrameIK
from mango.primitives.session import PrimitiveSession
from mango.primitives.transit import MoveItTransit, TransitPlanner
from mango.ros.detection_msg import detection_from_msg, detection_to_msg
from mango.ros.trajectory_msg import chunk_goal
from mango.ros.world_state_msg import WORLD_FRAME
from mango.sim.build import CONTROL_HZ
from mango.sim.scene import SceneSpec, as_scene
from mango_ros.action import ExecuteChunk, Grasp, Place
from mango_ros.msg import SegmentationLabels
from mango_ros.msg import WorldState as WorldStateMsg
from mango_ros.srv import Detect

FINGERS = ("fr3_finger_joint1", "fr3_finger_joint2")
SCENE_SETTLE = 2.0  # s after a scene change during which "nothing matched" is asked again
_STATUS = {"succeeded": 0, "failed": 1, "cancelled": 2, "rejected": 3}


class PrimitivesNode(Node):
    def __init__(self) -> None:
        super().__init__("primitives_node")
        p = declare_parameters(self, {
            "scene": "", "robot": "fr3", "camera": "front", "extrinsics": "",
            "detect_service": "perception_node/detect",
            "execute_chunk_action": "execute_chunk", "joint_states_topic": "joint_states",
            "world_state_topic": "world_state",
            "chunk_rate": rate_param(float(CONTROL_HZ)), "timeout": positive(10.0),
            "planner": Param("ik", lambda v: v in ("ik", "moveit"), "'ik' or 'moveit'"),
            "moveit_group": "fr3_arm", "moveit_link": "fr3_hand_tcp",
            "moveit_base_frame": "fr3_link0"})
        self.robot = load_robot(p["robot"])
        self.kin = FR3Kinematics(self.robot)
        self.camera = str(p["camera"])
        self.rate = float(p["chunk_rate"])
        self.timeout = float(p["timeout"])
        self.session = PrimitiveSession(self._make_executor,
                                        as_scene(p["scene"]) if p["scene"] else None)
        self._moveit = self._make_moveit(p) if p["planner"] == "moveit" else None
        self._busy = threading.Lock()
        self._state_lock = threading.Lock()
        self._joints: JointState | None = None
        self._joints_at = 0.0  # monotonic receipt times
        self._world: bytes | None = None
        self._world_at = 0.0
        self._scene_at = -math.inf  # when the sim's labels last named another scene
        self._episode: int | None = None  # the sim's reset count its labels last gave

        sensors = MutuallyExclusiveCallbackGroup()
        group = ReentrantCallbackGroup()
        self.create_subscription(JointState, p["joint_states_topic"], self._on_joints,
                                 qos_profile_sensor_data,
                                 callback_group=sensors)
        self.uses_world = bool(p["world_state_topic"])
        if self.uses_world:
            self.create_subscription(WorldStateMsg, p["world_state_topic"], self._on_world, 10,
                                     callback_group=sensors, raw=True)
        if not p["scene"]:
            self.create_subscription(SegmentationLabels, "camera/segmentation_labels",
                                     self._on_labels, latched_qos(1), callback_group=sensors)
        self.inputs = CameraInputs(
            self, [self.camera], kinds=("depth",), world_frame=WORLD_FRAME,
            extrinsics=load_extrinsics(p["extrinsics"]) if p["extrinsics"] else None,
            robot=str(p["robot"]), callback_group=MutuallyExclusiveCallbackGroup())
        self.detect_client = self.create_client(Detect, p["detect_service"],
                                                callback_group=group)
        self.chunk_client = ActionClient(self, ExecuteChunk, p["execute_chunk_action"],
                                         callback_group=group)
        for kind, name, cb in ((Grasp, "grasp", self._grasp), (Place, "place", self._place)):
            action_server(self, kind, name, execute_callback=cb, goal_callback=self._on_goal,
                          cancel_callback=lambda _g: CancelResponse.ACCEPT,
                          callback_group=group)
        scene = self.session.scene
        self.get_logger().info(
            f"grasp/place through {p['detect_service']} and {p['execute_chunk_action']}"
            + (f", scene {scene.name}" if scene else ", scene from the sim"))

    def _make_moveit(self, p: dict[str, Any]) -> Any:
        """moveit_py's MoveItPy (a system ROS 2 with MoveIt and franka_fr3_moveit_config's
        parameters for it, as its launch file gives them)."""
        try:
            from moveit.planning import MoveItPy
        except ImportError as exc:
            raise InputError(f"planner 'moveit' needs moveit_py (a system ROS 2 with MoveIt "
                             f"2): {exc}", field="planner") from None
        self._moveit_params = (p["moveit_group"], p["moveit_link"], p["moveit_base_frame"])
        return MoveItPy(node_name=f"{self.get_name()}_moveit")

    def _make_executor(self, scene: SceneSpec, ports: PrimitivePorts) -> PrimitiveExecutor:
        ik = WorldFrameIK(self.kin, scene.robot.base, (1.0, 0.0, 0.0, 0.0))
        transit: TransitPlanner | None = None  # the IK ladder
        if self._moveit is not None:
            group, link, frame = self._moveit_params
            transit = MoveItTransit(self._moveit, (scene.robot.base, (1.0, 0.0, 0.0, 0.0)),
                                    self.robot.joint_names, group=group, link=link,
                                    base_frame=frame)
        return PrimitiveExecutor(ports, ik, scene, transit)

    # ------------------------------------------------------------------ inputs

    def _on_joints(self, msg: JointState) -> None:
        # a state that cannot be read is no state: the last good one stays the latest
        if len(msg.position) == len(msg.name) and set(self.robot.joint_names) <= set(msg.name) \
                and all(math.isfinite(v) for v in msg.position):
            with self._state_lock:
                self._joints, self._joints_at = msg, time.monotonic()

    def _on_world(self, data: bytes) -> None:
        with self._state_lock:
            self._world, self._world_at = data, time.monotonic()

    def _on_labels(self, msg: SegmentationLabels) -> None:
        if msg.episode != self._episode:  # a reset: the depth images kept are of another world
            self._episode = msg.episode
            self.inputs.clear()
        before = self.session.scene
        try:
            self.session.follow_scene(msg.scene)  # a new scene: nothing is held
        except InputError as exc:
            self.get_logger().error(f"segmentation_labels names scene '{msg.scene}': {exc}")
            return
        if self.session.scene is not before:
            self._scene_at = time.monotonic()

    def _on_goal(self, _goal: Any) -> GoalResponse:
        # one primitive at a time: both drive the same arm
        return GoalResponse.REJECT if self._busy.locked() else GoalResponse.ACCEPT

    # ------------------------------------------------------------------ ports

    def measure(self) -> Measurement:
        """Joint states (and the world state) received after this call: what the arm and the
        world are now, not before the last chunk ended."""
        since = time.monotonic()
        deadline = since + self.timeout
        while True:
            with self._state_lock:
                js, js_at, world, world_at = (self._joints, self._joints_at, self._world,
                                              self._world_at)
            fresh_world = not self.uses_world or (world is not None and world_at > since)
            if js is not None and js_at > since and fresh_world:
                break
            if time.monotonic() > deadline:
                what = "joint states" if js is None or js_at <= since else "world state"
                raise RuntimeError(f"no fresh {what} within {self.timeout:g} s")
            time.sleep(0.002)
        names = list(js.name)
        pos = np.asarray(js.position, float)
        q = pos[[names.index(n) for n in self.robot.joint_names]]
        fingers = [names.index(f) for f in FINGERS if f in names]
        width = float(pos[fingers].sum()) if len(fingers) == 2 else float("nan")
        try:
            state: WorldState | None = (decode_world_state(world) if world is not None
                                        else None)
        except Exception as exc:  # what a publisher may get wrong: the goal says so
            raise RuntimeError(f"the world state received is malformed: {one_line(exc)}"
                               ) from None
        t = state.t if state is not None else js.header.stamp.sec + js.header.stamp.nanosec * 1e-9
        return Measurement(q, width, t, state)

    def detect(self, phrases: list[str], camera: str) -> Perceived:
        """The perception node's answer on a frame taken after this call: a camera lags the
        world by a frame or more (more on a loaded machine), and a grasp planned on the
        frame before a reset or a slide goes where the object was. Perception that cannot
        look yet (no frame since a reset) is asked again until `timeout`."""
        now = self.measure().t  # a state sent after this call: after a reset, if there was one
        deadline = time.monotonic() + self.timeout
        while True:
            seen, stamp = self._detect_once(phrases, camera)
            # the perception node takes a new scene from the same latched labels as this node:
            # for a moment after a scene change it may still ground phrases on the old one
            settling = time.monotonic() - self._scene_at < SCENE_SETTLE and not seen.found
            # a stamp ahead of the arm's is a capture from before a sim reset (time restarted)
            if seen.error is None and not settling and (
                    stamp is None or now <= stamp <= self._sim_now() + 0.2):
                return seen
            if time.monotonic() > deadline:  # perception not ready (no frame yet), or stale
                if seen.error is not None or settling:
                    return seen
                return Perceived({}, {}, error=(
                    f"no camera frame newer than t={now:.2f} s within {self.timeout:g} s "
                    f"(the latest is t={stamp:.2f} s)"))
            time.sleep(0.05)

    def _sim_now(self) -> float:
        """The latest joint state's stamp: the robot's clock, the one images are stamped on."""
        with self._state_lock:
            js = self._joints
        return js.header.stamp.sec + js.header.stamp.nanosec * 1e-9 if js is not None else 0.0

    def _detect_once(self, phrases: list[str], camera: str) -> tuple[Perceived, float | None]:
        """One Detect call: what it saw, and the oldest detection's image stamp (None when
        nothing was detected)."""
        if not self.detect_client.wait_for_service(timeout_sec=self.timeout):
            return Perceived({}, {}, error=f"the Detect service "
                             f"'{self.detect_client.srv_name}' is not available"), None
        future = self.detect_client.call_async(Detect.Request(phrases=phrases, camera=camera,
                                                              max_results=1))
        deadline = time.monotonic() + self.timeout * 3
        while not future.done():
            if time.monotonic() > deadline or not self.context.ok():
                return Perceived({}, {}, error="the Detect service did not answer"), None
            time.sleep(0.002)
        reply = future.result()
        if not reply.success:
            return Perceived({}, {}, error=reply.message), None
        stamps = [d.header.stamp.sec + d.header.stamp.nanosec * 1e-9 for d in reply.detections]
        # the depth of the capture the detections were made on: their masks' 3-D
        frame = self.inputs.frame(camera, stamp=stamps[0])[0] if stamps else None
        size = frame.depth.shape if frame is not None and frame.depth is not None else None
        found: dict[str, Any] = {}
        for d in reply.detections:  # each phrase's best first
            if d.phrase not in found:
                found[d.phrase] = detection_from_msg(d, size)
        return (Perceived(found, dict(zip(reply.unmatched, reply.reasons, strict=False)), frame),
                min(stamps) if stamps else None)

    def _wait(self, future: Any, gh: Any, inflight: Any = None, timeout: float = 60.0
              ) -> str | None:
        """`wait_for_chunk` (nodes/actions.py): None once done, else why not."""
        return wait_for_chunk(self, self.chunk_client, future, gh, inflight, timeout,
                              poll=0.001)

    def execute_chunk(self, chunk: np.ndarray, gh: Any) -> Executed:
        if not self.chunk_client.wait_for_server(timeout_sec=self.timeout):
            return Executed("failed", "the execute_chunk action server is not available")
        q = self.measure().q
        goal = chunk_goal(chunk_to_trajectory(chunk, self.rate, self.robot.joint_names, q,
                                              self.robot.vmax))
        sent = self.chunk_client.send_goal_async(goal)
        why = self._wait(sent, gh, timeout=self.timeout)
        if why is not None:
            return Executed("failed", f"execute_chunk did not answer: {why}")
        chunk_gh = sent.result()
        if not chunk_gh.accepted:
            return Executed("failed", "execute_chunk refused the goal")
        res_future = chunk_gh.get_result_async()
        why = self._wait(res_future, gh, chunk_gh, timeout=len(chunk) / self.rate + 30.0)
        if why is not None:
            return Executed("failed", f"execute_chunk did not finish: {why}")
        res = res_future.result().result
        if res.status == res.STATUS_SUCCEEDED:
            return Executed("done")
        if res.status == res.STATUS_CANCELLED and gh.is_cancel_requested:
            return Executed("cancelled", "cancelled during a chunk")
        names = {res.STATUS_CANCELLED: "cancelled by another client",
                 res.STATUS_PREEMPTED: "preempted", res.STATUS_REJECTED: "rejected by the "
                 "controller", res.STATUS_FAILED: "failed"}
        return Executed("failed", f"chunk {names.get(res.status, res.status)}: {res.message}")

    # ------------------------------------------------------------------ goals

    def _goal_ports(self, gh: Any, feedback: type) -> PrimitivePorts:
        """The executor's ports for one goal: its camera, its cancel and its feedback."""
        camera = gh.request.camera or self.camera
        return PrimitivePorts(
            detect=lambda phrases: self.detect(phrases, camera),
            execute_chunk=lambda chunk: self.execute_chunk(chunk, gh),
            measure=self.measure, cancelled=lambda: bool(gh.is_cancel_requested),
            feedback=lambda phase, progress: gh.publish_feedback(
                feedback(phase=phase, progress=float(progress))))

    def _finish(self, gh: Any, result: Any, status: str, message: str, kind: str) -> Any:
        result.status, result.message = _STATUS[status], message
        if status == "succeeded":
            gh.succeed()
        elif gh.is_cancel_requested:
            gh.canceled()
        else:
            gh.abort()
        self.get_logger().info(f"{kind}: {status}: {message}")
        return result

    def _grasp(self, gh: Any) -> Grasp.Result:
        with self._busy:
            out = self.session.grasp(gh.request.target, self._goal_ports(gh, Grasp.Feedback))
            result = Grasp.Result(gripper_width=float("nan"))
            self._grasp_result(result, out)
            return self._finish(gh, result, out.status, out.message, "grasp")

    def _grasp_result(self, result: Grasp.Result, out: GraspOutcome) -> None:
        result.entity_id = out.entity_id or ""
        result.held = bool(out.grasped)
        result.gripper_width = float("nan") if out.width is None else float(out.width)
        result.finger_contacts = list(out.finger_contacts)
        if out.detection is not None:
            result.detection = detection_to_msg(out.detection)
        if out.hand_pose is not None:
            result.final_hand_pose = _pose(*out.hand_pose)

    def _place(self, gh: Any) -> Place.Result:
        with self._busy:
            out = self.session.place(gh.request.destination, gh.request.object_hint,
                                     self._goal_ports(gh, Place.Feedback))
            result = Place.Result(destination_id=out.destination_id or "",
                                  satisfied=bool(out.satisfied))
            if out.release_position is not None:
                result.release_pose = _pose(out.release_position,
                                            out.release_quat or [1.0, 0.0, 0.0, 0.0])
            return self._finish(gh, result, out.status, out.message, "place")


def _pose(p: Any, quat: Any) -> Pose:
    if not all(math.isfinite(v) for v in (*p, *quat)):
        return Pose()
    return Pose(position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                orientation=Quaternion(w=float(quat[0]), x=float(quat[1]), y=float(quat[2]),
                                       z=float(quat[3])))


def main(args: list[str] | None = None) -> None:
    run_node(PrimitivesNode, args, threads=4)


if __name__ == "__main__":
    main()
