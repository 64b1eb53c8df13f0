"""The embedded MuJoCo Franka as a ROS node.

Physics runs in real time (scaled by `real_time_factor`; 0 = as fast as possible) in its own
thread, holding the latest `joint_command` targets, and publishes `joint_states`,
`world_state` and `/clock` every `1/state_rate` s of sim time. Cameras render in another
thread at `camera_rate`; each camera's optical frame `<name>_camera` goes to `tf_static`
(fixed in the world) or to `tf` with every frame (carried by the arm), and the robot's base
frame (`base_frame`, the URDF's root) to `tf_static`, all children of `world` (the
`robot_state_node` adds the arm's links under the base). `~/run_expert` runs the scene's
scripted expert (optionally with a fault) to the end of the task and answers with the fault's
ground truth; during it the world state is published after every 15 Hz action, exactly as
`mango sim run` records it. `~/set_entity_pose` (SetEntityPose) puts a movable object at a
pose, at rest: a hand in the world for tests and demos.
With `segmentation` on, each camera also gives `camera/<name>/segmentation` (16UC1 from the
same render as its depth: entity ids[v - 1], 0 background) and the latched
`camera/segmentation_labels` says what the values mean (the privileged input of the `sim`
perception backend).
`markers` renders fiducial plates on the entities (what a lab sticks on, read by the `aruco`
perception backend and `world_state_node`): "" none (the default: scenes look as without),
`auto` the scene's own map (`mango.sim.markers.auto_marker_map`, made again for a new scene
on reset), or a marker map YAML.
Parameters: `scene`, `seed`, `joint_names`, `state_rate`, `camera_rate`, `cameras`,
`image_width`, `image_height`, `real_time_factor`, `base_frame`, `segmentation`, `markers`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from mango.control.robot_state import FrameTransform
from mango.errors import InputError
from mango.geometry import mat_to_quat
from mango.nodes.common import (
    Param,
    declare_parameters,
    latched_qos,
    rate_param,
    run_node,
    service_qos,
)
from mango.nodes.request_ids import OncePerRequestId
from mango.ros.images import camera_info, numpy_to_image
from mango.ros.tf_msg import tf_message
from mango.ros.world_state_msg import WORLD_FRAME, stamp_from_seconds, state_to_msg
from mango.sim.env import SimEnv
from mango.sim.expert.policy import ExpertPolicy
from mango.sim.faults import parse_fault
from mango.sim.markers import auto_marker_map, load_marker_map
from mango.sim.realtime import RealTimeSim, joint_targets
from mango.sim.scene import FR3_JOINTS, SceneSpec, as_scene
from mango_ros.msg import SegmentationLabels
from mango_ros.msg import WorldState as WorldStateMsg
from mango_ros.srv import ResetScene, RunExpert, SetEntityPose

FINGER_JOINTS = ("fr3_finger_joint1", "fr3_finger_joint2")
AUTO_MARKERS = "auto"  # the `markers` value for the scene's own marker map


class SimNode(Node):
    def __init__(self) -> None:
        super().__init__("sim_node")
        size = Param(224, lambda v: 16 <= v <= 4096, "between 16 and 4096 pixels")
        p = declare_parameters(self, {
            "scene": "libero10_soup_sauce_basket", "seed": 0, "joint_names": list(FR3_JOINTS),
            "state_rate": rate_param(100.0), "camera_rate": rate_param(10.0, off_allowed=True),
            "cameras": ["front", "wrist"], "image_width": size, "image_height": size,
            "real_time_factor": Param(1.0, lambda v: 0 <= v <= 100,
                                      "0 (as fast as possible) to 100"),
            "base_frame": "base", "segmentation": False, "markers": ""})
        self.joint_names = tuple(p["joint_names"])
        self.cameras = tuple(c for c in p["cameras"] if c)
        self.image_size = (int(p["image_width"]), int(p["image_height"]))
        self.state_period = 1.0 / float(p["state_rate"])
        self.camera_rate = float(p["camera_rate"])
        self.rtf = float(p["real_time_factor"])
        self.base_frame = str(p["base_frame"])
        self.seed = int(p["seed"])
        self.segmentation = bool(p["segmentation"])
        self.markers = str(p["markers"]).strip()
        self._marker_file = (load_marker_map(self.markers)
                             if self.markers not in ("", AUTO_MARKERS) else None)
        self.env = self._make_env(p["scene"], self.seed)
        self.episode = 0  # resets so far (SegmentationLabels.episode)
        # one capture (render + publish) or one reset at a time: no image of a world is
        # published after the reset that ended it, and no render reads a world being reset
        self._capture = threading.Lock()

        self.js_pub = self.create_publisher(JointState, "joint_states", 10)
        self.ws_pub = self.create_publisher(WorldStateMsg, "world_state", 100)
        # deep: a recorder a moment behind must not lose ticks (bags are checked against them)
        self.clock_pub = self.create_publisher(Clock, "/clock", 100)
        self.cam_pubs: dict[str, tuple[Any, Any, Any]] = {
            c: (self.create_publisher(Image, f"camera/{c}/image_raw", 5),
                self.create_publisher(Image, f"camera/{c}/depth", 5),
                self.create_publisher(CameraInfo, f"camera/{c}/camera_info", 5))
            for c in self.cameras}
        self.seg_pubs = {c: self.create_publisher(Image, f"camera/{c}/segmentation", 5)
                         for c in self.cameras} if self.segmentation else {}
        self.labels_pub = self.create_publisher(
            SegmentationLabels, "camera/segmentation_labels", latched_qos(1)) \
            if self.segmentation else None
        self.tf_pub = self.create_publisher(TFMessage, "tf", 100)
        self.tf_static_pub = self.create_publisher(TFMessage, "tf_static", latched_qos(1))
        self._publish_static_frames()
        self.create_subscription(JointState, "joint_command", self._on_command, 10,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        services = ReentrantCallbackGroup()  # they block until the physics thread is done
        once = OncePerRequestId()  # a reset or expert run resent by its client runs once
        self.create_service(ResetScene, "~/reset", once.wrap(self._reset),
                            callback_group=services, qos_profile=service_qos())
        self.create_service(RunExpert, "~/run_expert", once.wrap(self._run_expert),
                            callback_group=services, qos_profile=service_qos())
        self.create_service(SetEntityPose, "~/set_entity_pose", self._on_set_entity_pose,
                            callback_group=services, qos_profile=service_qos())

        self._stop = threading.Event()
        self.physics = RealTimeSim(
            self.env, self.state_period, self.rtf, self._publish_state,
            lambda text: self.get_logger().warning(text, throttle_duration_sec=5.0),
            self._running)
        self.physics.start()
        self._camera = None
        if self.cameras and self.camera_rate > 0:
            self._camera = threading.Thread(target=self._camera_loop, name="camera", daemon=True)
            self._camera.start()
        self.get_logger().info(
            f"scene {self.env.scene.name} (seed {p['seed']}): {self.env.scene.instruction}")

    def _make_env(self, scene: str | SceneSpec, seed: int) -> SimEnv:
        spec = as_scene(scene)
        markers = self._marker_file
        if self.markers == AUTO_MARKERS:
            markers = auto_marker_map(spec)
        elif markers is not None:
            markers.check_scene(spec, file=self.markers)
        return SimEnv(spec, seed=seed, cameras=self.cameras, image_size=self.image_size,
                      joint_names=self.joint_names, markers=markers)

    def _frames(self, fixed: bool) -> list[FrameTransform]:
        """world -> the base (fixed) and world -> each camera fixed in the world, or carried."""
        env = self.env
        out = []
        if fixed:
            pos, quat = env.robot_base_pose()
            out.append(FrameTransform(WORLD_FRAME, self.base_frame, tuple(pos), tuple(quat)))
        for name in self.cameras:
            if env.camera_fixed(name) == fixed:
                pos, rot = env.camera_pose(name)
                out.append(FrameTransform(WORLD_FRAME, f"{name}_camera", tuple(pos),
                                          tuple(mat_to_quat(rot))))
        return out

    def _publish_static_frames(self) -> None:
        header = Header()
        header.stamp.sec, header.stamp.nanosec = stamp_from_seconds(self.env.time)
        self.tf_static_pub.publish(tf_message(self._frames(fixed=True), header.stamp))
        self._publish_labels()

    def _publish_labels(self) -> None:
        if self.labels_pub is not None:
            self.labels_pub.publish(SegmentationLabels(
                scene=self.env.scene.name, ids=list(self.env.segmentation_ids),
                episode=self.episode))

    def _running(self) -> bool:
        # Ctrl-C shuts the context down before destroy_node: stop publishing then.
        return not self._stop.is_set() and self.context.ok()

    def _publish_state(self) -> None:
        env = self.env
        t = env.time
        header = Header(frame_id=WORLD_FRAME)
        header.stamp.sec, header.stamp.nanosec = stamp_from_seconds(t)
        clock = Clock()
        clock.clock = header.stamp
        self.clock_pub.publish(clock)
        q = env.joint_positions()
        w = env.gripper_width()
        js = JointState(header=header, name=[*self.joint_names, *FINGER_JOINTS])
        js.position = [*q.tolist(), w / 2, w / 2]
        self.js_pub.publish(js)
        self.ws_pub.publish(state_to_msg(env.world_state()))

    def _camera_loop(self) -> None:
        try:
            self._camera_frames()
        except Exception:
            if self._running():
                raise

    def _camera_frames(self) -> None:
        period = 1.0 / self.camera_rate
        next_t = time.monotonic()
        while self._running():
            next_t += period
            with self._capture:
                self._capture_frames()
            time.sleep(max(0.0, next_t - time.monotonic()))

    def _capture_frames(self) -> None:
        """Every camera rendered and published once, with the carried cameras' frames."""
        env = self.env
        stamp = Header().stamp
        stamp.sec, stamp.nanosec = stamp_from_seconds(env.time)
        carried = self._frames(fixed=False)  # where the arm holds its cameras now
        if carried:
            self.tf_pub.publish(tf_message(carried, stamp))
        for name, (rgb_pub, depth_pub, info_pub) in self.cam_pubs.items():
            rgb, depth, seg = env.render(name, seg=self.segmentation)
            header = Header(frame_id=f"{name}_camera")
            # acquisition time (CameraInfo.msg): the physics state drawn, not after drawing
            header.stamp.sec, header.stamp.nanosec = stamp_from_seconds(env.last_render_time)
            ci = env.camera_info(name)
            rgb_pub.publish(numpy_to_image(rgb, "rgb8", header))
            depth_pub.publish(numpy_to_image(depth, "32FC1", header))
            info_pub.publish(camera_info(ci.width, ci.height, ci.fx, ci.fy, ci.cx, ci.cy,
                                         header))
            if seg is not None and name in self.seg_pubs:
                self.seg_pubs[name].publish(numpy_to_image(seg + 1, "16UC1", header))

    # ------------------------------------------------------------------ ROS callbacks

    def _on_command(self, msg: JointState) -> None:
        try:
            q, width = joint_targets(self.env, self.joint_names, msg.name, msg.position)
        except ValueError as exc:
            self.get_logger().error(f"joint_command ignored: {exc}")
            return
        self.env.set_joint_targets(q, width)

    def _reset(self, request: ResetScene.Request,
               response: ResetScene.Response) -> ResetScene.Response:
        spec = None
        if request.scene and request.scene != self.env.scene.name:
            try:  # read here: a user's file (a FIFO, a device) never reaches the physics thread
                spec = as_scene(request.scene)
            except InputError as exc:
                response.success, response.message = False, str(exc)
                return response

        def reset() -> None:
            self.seed = int(request.seed)
            with self._capture:
                if spec is not None:
                    old, self.env = self.env, self._make_env(spec, int(request.seed))
                    self.physics.env = self.env
                    old.close()
                else:
                    self.env.reset(int(request.seed))
                self.episode += 1
                self._publish_static_frames()
            self._publish_state()

        try:
            self.physics.submit(reset, timeout=120)
        except (InputError, OSError, ValueError, RuntimeError, TimeoutError) as exc:
            response.success, response.message = False, str(exc)
            return response
        # the parameters say what runs now, for a client that attaches later
        self.set_parameters([Parameter("scene", value=self.env.scene.name),
                             Parameter("seed", value=int(request.seed))])
        response.success = True
        response.message = f"scene {self.env.scene.name}, seed {request.seed}"
        response.instruction = self.env.scene.instruction
        self.get_logger().info(response.message)
        return response

    def _run_expert(self, request: RunExpert.Request,
                    response: RunExpert.Response) -> RunExpert.Response:
        try:
            fault = parse_fault(request.fault) if request.fault.strip() else None
            expert = ExpertPolicy(self.env.scene, fault)
        except (InputError, ValueError) as exc:
            response.success, response.message = False, str(exc)
            return response
        try:
            labels = self.physics.submit(lambda: self.physics.run_expert(expert, self.seed))
        except RuntimeError as exc:  # the physics thread ended: say so, do not hang
            response.success, response.message = False, str(exc)
            return response
        response.success = expert.error is None
        response.message = (f"expert finished at t={self.env.time:.2f} s" if expert.error is None
                            else f"expert stopped: {expert.error}")
        response.expected_failed_step = labels.get("failed_step") or ""
        ft = labels.get("failed_t")
        response.expected_fail_t = float("nan") if ft is None else float(ft)
        self.get_logger().info(response.message)
        return response

    def _on_set_entity_pose(self, request: SetEntityPose.Request,
                            response: SetEntityPose.Response) -> SetEntityPose.Response:
        p, o = request.pose.position, request.pose.orientation
        try:
            self.physics.submit(lambda: self.env.place_entity(
                request.entity_id, (p.x, p.y, p.z), (o.w, o.x, o.y, o.z)), timeout=10)
        except (InputError, TimeoutError, RuntimeError) as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.message = (f"'{request.entity_id}' at "
                            f"{[round(v, 3) for v in (p.x, p.y, p.z)]}")
        self.get_logger().info(f"set_entity_pose: {response.message}")
        return response

    def destroy_node(self) -> None:
        self._stop.set()
        self.physics.stop()
        if self._camera is not None:
            self._camera.join(timeout=2.0)
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    # One executor thread: the physics thread needs the GIL back after every mj_step, and
    # rclpy's multi-threaded executor (its threads polling futures in Python) kept it from the
    # physics for 0.3-0.8 s at a time, long enough for the control node to give up on a
    # "stopped" simulation. The services only hand work to the physics thread and wait.
    run_node(SimNode, args, threads=1)


if __name__ == "__main__":
    main()
