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

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from mango.nodes.camera_inputs import CameraInputs
from mango.nodes.common import (
    declare_parameters,
    latched_qos,
    one_line,
    rate_param,
    run_node,
    service_qos,
)
from mango.perception.base import (
    DetectResult,
    PerceptionBackend,
    PerceptionConfig,
    PerceptionError,
    phrases_problem,
)
from mango.perception.poses import Extrinsics, load_extrinsics
from mango.perception.registry import backend_entry, make_backend
from mango.ros.detection_msg import (
    detection_markers,
    detection_to_msg,
    detections_msg,
    unmatched_reasons,
)
from mango.ros.world_state_msg import WORLD_FRAME
from mango.sim.scene import as_scene
from mango_ros.msg import Detections, SegmentationLabels
from mango_ros.srv import Detect


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
        if (why := phrases_problem(self.phrases)) is not None:
            raise PerceptionError(f"parameter 'phrases': {why}")
        self.max_results = int(p["max_results"])
        self._cfg = PerceptionConfig(
            backend=self.backend_name,
            weights=Path(p["weights"]) if p["weights"] else None,
            score_threshold=float(p["score_threshold"]),
            options={"markers": p["markers"]} if p["markers"] else {})
        self._lock = threading.Lock()  # the backend and the labels
        self._backend: PerceptionBackend | None = None
        self._backend_scene: str | None = None
        self._episode: int | None = None  # the sim's reset count its labels last gave
        self._scene = str(p["scene"])
        self._seg_ids: tuple[str, ...] = ()
        if self._scene or not self.entry.needs_scene:
            self._backend = self._make(self._scene)
        extrinsics: Extrinsics | None = (
            load_extrinsics(p["extrinsics"]) if p["extrinsics"] else None)
        sensors = MutuallyExclusiveCallbackGroup()
        self.required = ("depth", "segmentation") if self.entry.privileged else ("depth",)
        self.inputs = CameraInputs(
            self, self.cameras, kinds=("rgb", *self.required), extrinsics=extrinsics,
            world_frame=self.world_frame, robot=str(p["robot"]), callback_group=sensors,
            required=self.required)
        if self.entry.privileged:
            self.create_subscription(SegmentationLabels, "camera/segmentation_labels",
                                     self._on_labels, latched_qos(1), callback_group=sensors)
        self.det_pub = self.create_publisher(Detections, "detections", 10)
        self.marker_pub = self.create_publisher(MarkerArray, "detection_markers", 10)
        self.create_service(Detect, "~/detect", self._on_detect,
                            callback_group=ReentrantCallbackGroup(), qos_profile=service_qos())
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

    def _on_labels(self, msg: SegmentationLabels) -> None:
        with self._lock:
            if msg.episode != self._episode:  # a reset: what was seen is of another world
                self.inputs.clear()
            self._seg_ids, self._scene, self._episode = tuple(msg.ids), msg.scene, msg.episode

    # ------------------------------------------------------------------ detecting

    def detect(self, phrases: list[str], camera: str, max_results: int
               ) -> tuple[DetectResult, str | None, float]:
        """(result, why nothing could be tried or None, stamp): never raises."""
        try:
            with self._lock:
                frame, why = self.inputs.frame(camera, segmentation_ids=self._seg_ids)
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
        if (why := phrases_problem(phrases)) is not None:  # refused before any work
            response.success, response.message = False, why
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
