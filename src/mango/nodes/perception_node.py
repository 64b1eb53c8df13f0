"""Perception as a ROS node: `~/detect` (mango_ros/Detect) finds phrases in a camera's latest
RGB-D frame; `detections` and `detection_markers` (rviz) publish each answer, and at
`publish_rate` the detections of the `phrases` parameter.

Per camera in `cameras`: `camera/<name>/{image_raw,depth,camera_info}`, and for a privileged
backend (`sim`) `camera/<name>/segmentation` + the latched `camera/segmentation_labels`
(whose scene the backend then grounds on). Camera poses come from `extrinsics` (a YAML, see
`mango.perception.poses`; a hand-mounted camera from `joint_states` and FK) or, without one,
from `tf`/`tf_static` (`<name>_camera` in `world_frame`). Every problem a camera or a user may
present is an answer with a reason, never an exception out of the service.
Parameters: `backend`, `cameras`, `scene`, `extrinsics`, `world_frame`, `robot`,
`publish_rate`, `phrases`, `max_results`, `weights`, `score_threshold`, `markers` (the
`aruco` marker map).
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path
from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.control.robot_state import FrameTransform
from mango.nodes.common import declare_parameters, latched_qos, one_line, rate_param, run_node
from mango.perception.base import (
    DetectResult,
    Intrinsics,
    PerceptionBackend,
    PerceptionConfig,
    PerceptionError,
    RGBDFrame,
)
from mango.perception.frames import FrameAssembler
from mango.perception.poses import Extrinsics, FrameTree, load_extrinsics
from mango.perception.registry import backend_entry, make_backend
from mango.ros.detection_msg import (
    detection_markers,
    detection_to_msg,
    detections_msg,
    unmatched_reasons,
)
from mango.ros.images import image_to_numpy
from mango.ros.world_state_msg import WORLD_FRAME
from mango.sim.scene import as_scene
from mango_ros.msg import Detections, SegmentationLabels
from mango_ros.srv import Detect


def _seconds(stamp: Any) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


class PerceptionNode(Node):
    def __init__(self) -> None:
        super().__init__("perception_node")
        p = declare_parameters(self, {
            "backend": "sim", "cameras": ["front"], "scene": "", "extrinsics": "",
            "world_frame": WORLD_FRAME, "robot": "fr3",
            "publish_rate": rate_param(0.0, off_allowed=True), "phrases": [""],
            "max_results": 1, "weights": "", "score_threshold": 0.1, "markers": ""})
        self.entry = backend_entry(str(p["backend"]))
        self.backend_name = str(p["backend"])
        self.cameras = tuple(c for c in p["cameras"] if c)
        if not self.cameras:
            raise PerceptionError("parameter 'cameras' names no camera")
        self.world_frame = str(p["world_frame"])
        self.phrases = [s for s in p["phrases"] if s]
        self.max_results = int(p["max_results"])
        self._cfg = PerceptionConfig(
            backend=self.backend_name,
            weights=Path(p["weights"]) if p["weights"] else None,
            score_threshold=float(p["score_threshold"]),
            options={"markers": p["markers"]} if p["markers"] else {})
        self._lock = threading.Lock()  # backend + the frames' state
        self._backend: PerceptionBackend | None = None
        self._backend_scene: str | None = None
        self._scene = str(p["scene"])
        self._seg_ids: tuple[str, ...] = ()
        if self._scene or not self.entry.needs_scene:
            self._backend = self._make(self._scene)
        self.extrinsics: Extrinsics | None = (
            load_extrinsics(p["extrinsics"]) if p["extrinsics"] else None)
        robot = load_robot(p["robot"]) if self.extrinsics else None
        self.joint_names = robot.joint_names if robot else ()
        self.kinematics = FR3Kinematics(robot) if robot else None
        self._joints: dict[str, float] = {}
        self.tree = FrameTree()
        self.frames = {c: FrameAssembler() for c in self.cameras}
        self.infos: dict[str, CameraInfo] = {}

        sensors = MutuallyExclusiveCallbackGroup()
        for cam in self.cameras:
            for kind, topic in (("rgb", "image_raw"), ("depth", "depth"),
                                *((("segmentation", "segmentation"),)
                                  if self.entry.privileged else ())):
                self.create_subscription(
                    Image, f"camera/{cam}/{topic}",
                    lambda m, c=cam, k=kind: self._on_image(c, k, m),
                    qos_profile_sensor_data, callback_group=sensors)
            self.create_subscription(CameraInfo, f"camera/{cam}/camera_info",
                                     lambda m, c=cam: self.infos.__setitem__(c, m),
                                     qos_profile_sensor_data, callback_group=sensors)
        if self.entry.privileged:
            self.create_subscription(SegmentationLabels, "camera/segmentation_labels",
                                     self._on_labels, latched_qos(1), callback_group=sensors)
        if self.extrinsics is None:
            self.create_subscription(TFMessage, "tf", lambda m: self._on_tf(m, False), 100,
                                     callback_group=sensors)
            self.create_subscription(TFMessage, "tf_static", lambda m: self._on_tf(m, True),
                                     latched_qos(100), callback_group=sensors)
        else:
            self.create_subscription(JointState, "joint_states", self._on_joints, 10,
                                     callback_group=sensors)
        self.det_pub = self.create_publisher(Detections, "detections", 10)
        self.marker_pub = self.create_publisher(MarkerArray, "detection_markers", 10)
        self.create_service(Detect, "~/detect", self._on_detect,
                            callback_group=ReentrantCallbackGroup())
        if float(p["publish_rate"]) > 0 and self.phrases:
            self.create_timer(1.0 / float(p["publish_rate"]), self._on_timer,
                              callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"backend {self.backend_name} on {', '.join(self.cameras)}")

    # ------------------------------------------------------------------ inputs

    def _make(self, scene: str) -> PerceptionBackend:
        # a scene grounds `sim`'s phrases; the others use it where given (ids, the base)
        cfg = dataclasses.replace(self._cfg, scene=as_scene(scene) if scene else None)
        self._backend_scene = scene
        return make_backend(cfg)

    def _on_image(self, camera: str, kind: str, msg: Image) -> None:
        with self._lock:
            self.frames[camera].add(kind, _seconds(msg.header.stamp), msg)

    def _on_labels(self, msg: SegmentationLabels) -> None:
        with self._lock:
            self._seg_ids = tuple(msg.ids)
            self._scene = msg.scene

    def _on_tf(self, msg: TFMessage, static: bool) -> None:
        items = [FrameTransform(t.header.frame_id, t.child_frame_id,
                                (t.transform.translation.x, t.transform.translation.y,
                                 t.transform.translation.z),
                                (t.transform.rotation.w, t.transform.rotation.x,
                                 t.transform.rotation.y, t.transform.rotation.z))
                 for t in msg.transforms]
        stamp = None if static or not msg.transforms else _seconds(msg.transforms[0].header.stamp)
        with self._lock:
            self.tree.update(items, stamp)

    def _on_joints(self, msg: JointState) -> None:
        with self._lock:
            self._joints.update(zip(msg.name, msg.position, strict=False))

    # ------------------------------------------------------------------ detecting

    def _frame(self, camera: str) -> tuple[RGBDFrame | None, str | None]:
        """The camera's newest complete frame, or why there is none."""
        if camera not in self.frames:
            return None, f"unknown camera '{camera}' (this node has: {', '.join(self.cameras)})"
        required = ("depth", "segmentation") if self.entry.privileged else ("depth",)
        assembler = self.frames[camera]
        got = assembler.latest(required)
        if got is None:
            missing = [k for k in required if not assembler.has(k)]
            return None, (f"camera '{camera}': no {' or '.join(missing)} image received yet"
                          if missing else f"camera '{camera}': no depth and segmentation "
                          "of the same instant yet")
        stamp, msgs = got
        info = self.infos.get(camera)
        intr = None
        if info is not None:
            try:
                intr = Intrinsics.from_k(info.width, info.height, list(info.k))
            except PerceptionError:
                intr = None  # an uncalibrated CameraInfo (K zero) is no CameraInfo
        depth = image_to_numpy(msgs["depth"]).astype("float32")
        if msgs["depth"].encoding in ("16UC1", "mono16"):
            depth = depth / 1000.0  # REP 118: integer depth is millimetres
            depth[depth == 0] = float("nan")
        seg, ids = None, ()
        if "segmentation" in msgs:
            seg = image_to_numpy(msgs["segmentation"]).astype("int32") - 1
            ids = self._seg_ids
        rgb = image_to_numpy(msgs["rgb"])[..., :3] if "rgb" in msgs else None
        return RGBDFrame(camera=camera, rgb=rgb, depth=depth, intrinsics=intr,
                         pose=self._pose(camera, stamp), stamp=stamp, segmentation=seg,
                         segmentation_ids=ids), None

    def _pose(self, camera: str, stamp: float) -> Any:
        if self.extrinsics is None:
            return self.tree.camera_pose(self.world_frame, f"{camera}_camera", stamp)
        if camera not in self.extrinsics.cameras:
            return None
        joints = None
        if self.extrinsics.carried(camera):
            if not all(n in self._joints for n in self.joint_names):
                return None  # no joint_states yet: the frame says "no pose"
            joints = [self._joints[n] for n in self.joint_names]
        return self.extrinsics.camera_pose(camera, self.kinematics, joints)

    def detect(self, phrases: list[str], camera: str, max_results: int
               ) -> tuple[DetectResult, str | None, float]:
        """(result, why nothing could be tried or None, stamp): never raises."""
        try:
            with self._lock:
                frame, why = self._frame(camera)
                if frame is None:
                    return DetectResult((), tuple(phrases), (why or "",)), why, 0.0
                if self.entry.needs_scene and self._scene and (
                        self._backend is None or self._backend_scene != self._scene):
                    if self._backend is not None:
                        self._backend.close()
                    self._backend = self._make(self._scene)
                backend = self._backend
                if backend is None:
                    why = (f"backend '{self.backend_name}' has no scene yet (set the 'scene' "
                           "parameter, or run sim_node with segmentation:=true)")
                    return DetectResult((), tuple(phrases), (why,)), why, frame.stamp
                why = frame.problem()
                if why is not None:
                    return DetectResult((), tuple(phrases), (why,)), why, frame.stamp
                result = backend.detect(frame, phrases, max_results)
            return result, None, frame.stamp
        except Exception as exc:  # an answer with the reason, never a failed service call
            why = one_line(exc)
            self.get_logger().error(f"detect failed: {why}")
            return DetectResult((), tuple(phrases), (why,)), why, 0.0

    def _publish(self, result: DetectResult, camera: str, stamp: float) -> None:
        self.det_pub.publish(detections_msg(result, camera, stamp, self.world_frame))
        self.marker_pub.publish(detection_markers(result.detections, stamp, self.world_frame))

    def _on_detect(self, request: Detect.Request, response: Detect.Response) -> Detect.Response:
        phrases = [s for s in request.phrases if s.strip()]
        camera = request.camera or self.cameras[0]
        if not phrases:
            response.success, response.message = False, "no phrase given"
            return response
        result, why, stamp = self.detect(phrases, camera, int(request.max_results))
        response.success = why is None
        response.detections = [detection_to_msg(d, self.world_frame) for d in result.detections]
        response.unmatched = list(result.unmatched)
        response.reasons = unmatched_reasons(result)
        found = len({d.phrase for d in result.detections})
        response.message = why or (f"{found} of {len(phrases)} phrases found in camera "
                                   f"'{camera}'")
        if why is None:
            self._publish(result, camera, stamp)
        return response

    def _on_timer(self) -> None:
        result, why, stamp = self.detect(self.phrases, self.cameras[0], self.max_results)
        if why is None:
            self._publish(result, self.cameras[0], stamp)


def main(args: list[str] | None = None) -> None:
    run_node(PerceptionNode, args)


if __name__ == "__main__":
    main()
