"""The world state of a real robot as a ROS node: fiducial markers seen by the cameras, the
arm's joint states and the gripper's width go into `perception.estimator.WorldStateEstimator`,
and at `rate` Hz its spec §3 estimate goes out on `world_state` (what `oracle_node` judges),
stamped with the estimate's time: the newest input stamp, so it is in the sensors' time base
whatever this node's clock. `~/tracks` (diagnostic_msgs/DiagnosticArray) says per entity
and moving part where its pose comes from and how old it is: OK while seen, WARN once stale.

Every camera frame (`camera/<name>/{image_raw,depth,camera_info}` of one stamp, with the
camera's pose from `extrinsics` or tf: `mango.nodes.camera_inputs`, as perception_node reads
them) goes through `ArucoBackend.poses`. No message stops the node: an image its CameraInfo
does not fit, no CameraInfo, NaN depth or joints are logged (throttled) and skipped. Joint
states going back in time (a simulator reset) start a fresh estimate, as the oracle node
starts a new episode.
Parameters: `scene` (scene name or file), `markers` (marker map YAML; "" = the scene's auto
map), `extrinsics` (calibration YAML; "" = camera and base poses from tf), `cameras`,
`use_depth` (refine marker poses with the depth image; false for colour-only cameras),
`joint_states_topic`, `rate`, `device_topics` (`<device>=<topic>`, std_msgs/Bool), `robot`,
`world_frame`, `base_frame` (the robot base's tf frame when there are no extrinsics),
`stale_after` (s).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Header

from mango.control.joint_state import JointStateReader
from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.errors import InputError
from mango.nodes.camera_inputs import CameraInputs, seconds
from mango.nodes.common import declare_parameters, one_line, positive, rate_param, run_node
from mango.perception.aruco import ArucoBackend
from mango.perception.estimator import EstimatorConfig, Track, WorldStateEstimator
from mango.perception.poses import Extrinsics, load_extrinsics
from mango.ros.world_state_msg import WORLD_FRAME, stamp_from_seconds, state_to_msg
from mango.sim.markers import MarkerMap, auto_marker_map, load_marker_map
from mango.sim.scene import SceneSpec, as_scene
from mango_ros.msg import WorldState as WorldStateMsg

THROTTLE = 5.0  # s between repeats of one complaint about the inputs
BACKWARDS = 0.5  # s a joint state's stamp may fall behind the last one before time restarted
GRACE = 0.5  # s (wall) after a restart in which camera frames are dropped: those in flight
# were taken before it, and the stamps of a short episode cannot tell them from new ones


class Complaints:
    """Warnings about inputs, each distinct one at most every `THROTTLE` s: rclpy throttles
    per call site, which would hide a second kind of bad message behind the first."""

    def __init__(self, node: Node) -> None:
        self._node = node
        self._last: dict[str, float] = {}

    def warn(self, key: str, text: str) -> None:
        now = time.monotonic()
        if now - self._last.get(key, -math.inf) >= THROTTLE:
            self._last[key] = now
            self._node.get_logger().warning(text)


def parse_device_topics(items: list[str], scene: SceneSpec) -> dict[str, str]:
    """`['stove_1=/stove/on']` -> {device: topic}; each must name a device of the scene."""
    devices = {e.id for e in scene.entities if e.device is not None}
    out: dict[str, str] = {}
    for item in (s.strip() for s in items):
        if not item:
            continue
        device, sep, topic = (s.strip() for s in item.partition("="))
        if not sep or not device or not topic:
            raise InputError(f"parameter 'device_topics': {item!r} is not <device>=<topic>")
        if device not in devices:
            raise InputError(f"parameter 'device_topics': '{device}' is not a device of scene "
                             f"'{scene.name}' (devices: {', '.join(sorted(devices)) or 'none'})")
        out[device] = topic
    return out


def tracks_msg(tracks: list[Track], t: float, node_name: str) -> DiagnosticArray:
    """One status per track: OK while seen (or carried), WARN once stale."""
    msg = DiagnosticArray(header=Header(frame_id=""))
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_from_seconds(t)
    for tr in tracks:
        if tr.stale:
            text = "never seen" if tr.age is None else f"stale: unseen for {tr.age:.2f} s"
        else:
            text = "seen" if tr.source.startswith("marker") else f"carried ({tr.source})"
        msg.status.append(DiagnosticStatus(
            level=DiagnosticStatus.WARN if tr.stale else DiagnosticStatus.OK,
            name=f"{node_name}: {tr.entity}", hardware_id=tr.entity, message=text,
            values=[KeyValue(key="age", value="" if tr.age is None else f"{tr.age:.3f}"),
                    KeyValue(key="source", value=tr.source)]))
    return msg


class WorldStateNode(Node):
    def __init__(self) -> None:
        super().__init__("world_state_node")
        p = declare_parameters(self, {
            "scene": "", "markers": "", "extrinsics": "", "cameras": ["front", "wrist"],
            "use_depth": True, "joint_states_topic": "joint_states", "rate": rate_param(15.0),
            "device_topics": [""], "robot": "fr3", "world_frame": WORLD_FRAME,
            "base_frame": "base", "stale_after": positive(EstimatorConfig().stale_after)})
        if not str(p["scene"]).strip():
            raise InputError("parameter 'scene' is required: the scene file (or shipped name) "
                             "listing the entities, regions and devices to estimate")
        self.scene = as_scene(str(p["scene"]))
        self.markers: MarkerMap = (load_marker_map(p["markers"]) if p["markers"]
                                   else auto_marker_map(self.scene))
        self.markers.check_scene(self.scene, file=p["markers"] or None)
        self.extrinsics: Extrinsics | None = (
            load_extrinsics(p["extrinsics"]) if p["extrinsics"] else None)
        devices = parse_device_topics(list(p["device_topics"]), self.scene)
        robot = load_robot(str(p["robot"]))
        self.kinematics = FR3Kinematics(robot)
        self.reader = JointStateReader(robot.joint_names)
        self.config = EstimatorConfig(stale_after=float(p["stale_after"]))
        self.world_frame = str(p["world_frame"])
        self.base_frame = str(p["base_frame"])
        self.aruco = ArucoBackend(self.markers, self.scene, use_depth=bool(p["use_depth"]))
        self._lock = threading.Lock()  # the estimator
        self.estimator: WorldStateEstimator | None = None  # made once the base is known
        self._published_t: float | None = None
        self._newest = 0.0  # the newest input stamp (a device's Bool has none of its own)
        self._joints_t: float | None = None  # the newest joint state's stamp
        self._restarted = -math.inf  # monotonic time of the last restart
        self.frames_seen = 0  # camera frames that reached the estimator
        self.complaints = Complaints(self)

        required = ("rgb", "depth") if p["use_depth"] else ("rgb",)
        group = MutuallyExclusiveCallbackGroup()
        self.inputs = CameraInputs(
            self, [c for c in p["cameras"] if c], kinds=required, extrinsics=self.extrinsics,
            world_frame=self.world_frame, robot=str(p["robot"]),
            callback_group=group, required=required,
            on_frame=self._on_frame, joints_topic=str(p["joint_states_topic"]),
            on_joints=self._on_joints)
        for device, topic in devices.items():
            self.create_subscription(Bool, topic, lambda m, d=device: self._on_device(d, m),
                                     10, callback_group=group)
        self.ws_pub = self.create_publisher(WorldStateMsg, "world_state", 10)
        self.tracks_pub = self.create_publisher(DiagnosticArray, "~/tracks", 10)
        self.create_timer(1.0 / float(p["rate"]), self._on_timer, callback_group=group)
        self.get_logger().info(
            f"estimating scene {self.scene.name} from {len(self.markers.markers)} markers on "
            f"{', '.join(self.inputs.cameras)}")

    def _estimator(self, robot_base: np.ndarray) -> WorldStateEstimator:
        return WorldStateEstimator(self.scene, self.markers, self.kinematics, robot_base,
                                   self.config)

    def _ready(self) -> WorldStateEstimator | None:
        """The estimator, made once the robot base's pose is known (from the extrinsics, or
        tf without them)."""
        if self.estimator is None:
            base = (self.extrinsics.robot_base.matrix() if self.extrinsics is not None
                    else self.inputs.lookup(self.world_frame, self.base_frame))
            if base is None:
                self.complaints.warn("base", f"no tf from '{self.world_frame}' to the robot "
                                     f"base '{self.base_frame}' yet: no estimate")
                return None
            self.estimator = self._estimator(base)
        return self.estimator

    # ------------------------------------------------------------------ inputs

    def _on_joints(self, msg: JointState) -> None:
        try:
            self.reader.update(list(msg.name), list(msg.position), seconds(msg.header.stamp))
        except (IndexError, ValueError, TypeError) as exc:
            self.complaints.warn(f"joints {one_line(exc)}",
                                 f"joint state skipped: {one_line(exc)}")
            return
        m = self.reader.measured()
        if m is None:
            return
        if not np.all(np.isfinite(m.q)):
            self.complaints.warn("joints nan", "joint state skipped: a joint position is not "
                                 "finite")
            return
        with self._lock:
            if self._joints_t is not None and m.stamp < self._joints_t - BACKWARDS:
                self._restart(m.stamp)
            est = self._ready()
            if est is not None:
                width = m.width if m.width is not None and math.isfinite(m.width) else None
                est.observe_joints(m.q.tolist(), width, m.stamp)
                self._newest = max(self._newest, m.stamp)
                self._joints_t = m.stamp

    def _restart(self, stamp: float) -> None:
        """Time went back (a simulator reset, a bag from the start): a new episode, as the
        oracle node takes it: a fresh estimate from the scene file, no old images."""
        self.get_logger().info(f"time went back ({self._joints_t:.3f} -> {stamp:.3f} s): "
                               "a fresh estimate")
        self.estimator = None
        self.inputs.clear()
        self._joints_t = None
        self._restarted = time.monotonic()
        self._newest = stamp
        self._published_t = None

    def _on_frame(self, camera: str, stamp: float) -> None:
        try:
            self._observe_frame(camera)
        except Exception as exc:  # a message this node cannot read: say so, go on
            why = one_line(exc)
            self.complaints.warn(f"{camera} {why}",
                                 f"camera '{camera}' frame at {stamp:.3f} skipped: {why}")

    def _observe_frame(self, camera: str) -> None:
        if time.monotonic() - self._restarted < GRACE:
            return  # taken before time went back (see GRACE)
        frame, why = self.inputs.frame(camera)
        if frame is None:
            raise InputError(why or "no frame")
        intr, shape = frame.intrinsics, frame.shape
        if intr is not None and shape is not None and shape != (intr.height, intr.width):
            raise InputError(f"the image is {shape[1]}x{shape[0]} but CameraInfo says "
                             f"{intr.width}x{intr.height}")
        if self._joints_t is not None and frame.stamp > self._joints_t + BACKWARDS:
            # ahead of the arm's clock: rendered before time went back (an old episode)
            raise InputError(f"stamped {frame.stamp - self._joints_t:.2f} s ahead of the joint "
                             "states (from before time went back?)")
        poses, notes = self.aruco.poses(frame)
        if not poses and notes:
            self.complaints.warn(f"{camera} {notes[0]}", notes[0])
        with self._lock:
            est = self._ready()
            if est is not None:
                est.observe_markers(poses, frame.stamp)
                self._newest = max(self._newest, frame.stamp)
                self.frames_seen += 1

    def _on_device(self, device: str, msg: Bool) -> None:
        with self._lock:
            est = self._ready()
            if est is not None:
                # a Bool has no stamp: it holds from the newest instant the estimate knows
                est.observe_device(device, bool(msg.data), self._newest)

    # ------------------------------------------------------------------ output

    def _on_timer(self) -> None:
        with self._lock:
            est = self.estimator
            if est is None:
                return
            state = est.state()
            tracks = est.tracks(state.t)
        if self._published_t is None or state.t > self._published_t:
            self.ws_pub.publish(state_to_msg(state, self.world_frame))
            self._published_t = state.t
        self.tracks_pub.publish(tracks_msg(tracks, state.t, self.get_name()))


def main(args: Any = None) -> None:
    # One executor thread: a frame's markers take ~6 ms (640x480), well inside a 15 Hz tick,
    # and rclpy's multi-threaded executor cost more than it saved (bench, loaded 2-core
    # machine: 14.3 Hz published with three threads, 14.9-15 Hz with one).
    run_node(WorldStateNode, args, threads=1)


if __name__ == "__main__":
    main()
