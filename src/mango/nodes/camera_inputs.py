"""Camera input of a node that sees in 3-D: per camera in `cameras`, the images of
`camera/<name>/{image_raw,depth[,segmentation]}` kept by stamp (`perception.frames`), its
last `camera/<name>/camera_info`, and the camera's pose in the world at an image's instant:
from an extrinsics file (`perception.poses`; a hand-mounted camera from `joint_states` and
FK) or, without one, from `tf`/`tf_static` (`<name>_camera` in `world_frame`).

One place for what `perception_node` (a frame on a Detect call) and `world_state_node`
(every frame as it completes) both need, so both read cameras the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image, JointState
from tf2_msgs.msg import TFMessage

from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.control.robot_state import FrameTransform
from mango.nodes.common import latched_qos
from mango.perception.base import CameraPose, Intrinsics, PerceptionError, RGBDFrame
from mango.perception.frames import FrameAssembler
from mango.perception.poses import Extrinsics, FrameTree
from mango.ros.images import image_to_numpy

TOPICS = {"rgb": "image_raw", "depth": "depth", "segmentation": "segmentation"}


def seconds(stamp: Any) -> float:
    """A `builtin_interfaces/Time` in seconds."""
    return stamp.sec + stamp.nanosec * 1e-9


class CameraInputs:
    """Subscriptions and state for the cameras of `node`; thread-safe (one lock).

    `on_frame(camera, stamp)` is called (in the sensor callback) whenever a capture newer than
    the last one reported has every kind in `required`; `on_joints(msg)` with every joint
    state when given (a node that needs the joints itself shares this subscription).
    """

    def __init__(self, node: Node, cameras: Sequence[str], *, kinds: Sequence[str],
                 extrinsics: Extrinsics | None, world_frame: str, robot: str,
                 callback_group: CallbackGroup, required: Sequence[str] = ("depth",),
                 on_frame: Callable[[str, float], None] | None = None,
                 on_joints: Callable[[JointState], None] | None = None,
                 joints_topic: str = "joint_states") -> None:
        self.cameras = tuple(cameras)
        if not self.cameras:
            raise PerceptionError("parameter 'cameras' names no camera")
        self.world_frame = world_frame
        self.extrinsics = extrinsics
        self.required = tuple(required)
        self._on_frame = on_frame
        self._on_joints_hook = on_joints
        model = load_robot(robot) if extrinsics is not None else None
        self.joint_names = model.joint_names if model else ()
        self.kinematics = FR3Kinematics(model) if model else None
        self._lock = threading.Lock()
        self._joints: dict[str, float] = {}
        self.tree = FrameTree()
        self.frames = {c: FrameAssembler() for c in self.cameras}
        self.infos: dict[str, CameraInfo] = {}
        self._reported: dict[str, float] = {}
        group = callback_group
        for cam in self.cameras:
            for kind in kinds:
                node.create_subscription(
                    Image, f"camera/{cam}/{TOPICS[kind]}",
                    lambda m, c=cam, k=kind: self._on_image(c, k, m),
                    qos_profile_sensor_data, callback_group=group)
            node.create_subscription(CameraInfo, f"camera/{cam}/camera_info",
                                     lambda m, c=cam: self._on_info(c, m),
                                     qos_profile_sensor_data, callback_group=group)
        if extrinsics is None:
            node.create_subscription(TFMessage, "tf", lambda m: self._on_tf(m, False), 100,
                                     callback_group=group)
            node.create_subscription(TFMessage, "tf_static", lambda m: self._on_tf(m, True),
                                     latched_qos(100), callback_group=group)
        if extrinsics is not None or on_joints is not None:
            node.create_subscription(JointState, joints_topic, self._on_joints,
                                     qos_profile_sensor_data,
                                     callback_group=group)

    # ------------------------------------------------------------------ callbacks

    def _on_image(self, camera: str, kind: str, msg: Image) -> None:
        stamp = seconds(msg.header.stamp)
        with self._lock:
            assembler = self.frames[camera]
            assembler.add(kind, stamp, msg)
            got = assembler.latest(self.required) if self._on_frame is not None else None
            new = got is not None and got[0] > self._reported.get(camera, -np.inf)
            if new and got is not None:
                self._reported[camera] = got[0]
        if new and got is not None and self._on_frame is not None:
            self._on_frame(camera, got[0])

    def _on_info(self, camera: str, msg: CameraInfo) -> None:
        with self._lock:
            self.infos[camera] = msg

    def _on_tf(self, msg: TFMessage, static: bool) -> None:
        items = [FrameTransform(t.header.frame_id, t.child_frame_id,
                                (t.transform.translation.x, t.transform.translation.y,
                                 t.transform.translation.z),
                                (t.transform.rotation.w, t.transform.rotation.x,
                                 t.transform.rotation.y, t.transform.rotation.z))
                 for t in msg.transforms]
        stamp = None if static or not msg.transforms else seconds(msg.transforms[0].header.stamp)
        with self._lock:
            self.tree.update(items, stamp)

    def _on_joints(self, msg: JointState) -> None:
        with self._lock:
            self._joints.update(zip(msg.name, msg.position, strict=False))
        if self._on_joints_hook is not None:
            self._on_joints_hook(msg)

    # ------------------------------------------------------------------ frames

    def clear(self) -> None:
        """Forget the images (time restarted: a simulator reset); CameraInfo and tf stay
        (tf_static is latched and comes once)."""
        with self._lock:
            self.frames = {c: FrameAssembler() for c in self.cameras}
            self._reported.clear()

    def lookup(self, root: str, frame: str) -> np.ndarray | None:
        """`root`_T_`frame` (4x4) from the newest tf, None until the chain reaches `root`."""
        with self._lock:
            return self.tree.lookup(root, frame)

    def frame(self, camera: str, required: Sequence[str] | None = None,
              segmentation_ids: tuple[str, ...] = (), stamp: float | None = None
              ) -> tuple[RGBDFrame | None, str | None]:
        """The camera's newest capture with every `required` kind (default: the inputs'),
        or the one taken at `stamp`, or why there is none. Raises `InputError` for an image
        its encoding cannot hold."""
        if camera not in self.frames:
            return None, f"unknown camera '{camera}' (this node has: {', '.join(self.cameras)})"
        need = tuple(self.required if required is None else required)
        with self._lock:
            assembler = self.frames[camera]
            got = assembler.latest(need, stamp)
            if got is None and stamp is not None:
                return None, f"camera '{camera}': no capture taken at t={stamp:.3f} s kept"
            if got is None:
                missing = [k for k in need if not assembler.has(k)]
                return None, (f"camera '{camera}': no {' or '.join(missing)} image received yet"
                              if missing else f"camera '{camera}': no "
                              f"{' and '.join(need)} of the same instant yet")
            stamp, msgs = got
            info = self.infos.get(camera)
            pose = self._pose(camera, stamp)
        intr = None
        if info is not None:
            try:
                intr = Intrinsics.from_k(info.width, info.height, list(info.k))
            except PerceptionError:
                intr = None  # an uncalibrated CameraInfo (K zero) is no CameraInfo
        depth = None
        if "depth" in msgs:
            depth = image_to_numpy(msgs["depth"]).astype("float32")
            if msgs["depth"].encoding in ("16UC1", "mono16"):
                depth = depth / 1000.0  # REP 118: integer depth is millimetres
                depth[depth == 0] = float("nan")
        seg, ids = None, ()
        if "segmentation" in msgs:
            seg = image_to_numpy(msgs["segmentation"]).astype("int32") - 1
            ids = segmentation_ids
        rgb = image_to_numpy(msgs["rgb"])[..., :3] if "rgb" in msgs else None
        return RGBDFrame(camera=camera, rgb=rgb, depth=depth, intrinsics=intr, pose=pose,
                         stamp=stamp, segmentation=seg, segmentation_ids=ids), None

    def _pose(self, camera: str, stamp: float) -> CameraPose | None:
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
