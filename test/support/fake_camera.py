"""A camera of a test's own for perception nodes: colour, depth, CameraInfo and a tf pose,
published on the topics a real camera driver uses (`camera/<name>/...`), so a test can hand a
node exactly the frame it wants (a flat table with nothing on it, an empty depth image, no
CameraInfo yet)."""

from __future__ import annotations

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header
from tf2_msgs.msg import TFMessage

from mango.control.robot_state import FrameTransform
from mango.nodes.common import latched_qos
from mango.ros.images import camera_info, numpy_to_image
from mango.ros.tf_msg import tf_message


class FakeCamera:
    """`front`-style topics under `ns`; frames are `rgb` (H, W, 3) uint8 and `depth` (H, W)
    metres; the pose is a world -> `<name>_camera` transform on `tf_static`."""

    def __init__(self, node: Node, ns: str, name: str = "front", stamp_sec: int = 7) -> None:
        base = f"{ns}/camera/{name}"
        self.rgb_pub = node.create_publisher(Image, f"{base}/image_raw", 5)
        self.depth_pub = node.create_publisher(Image, f"{base}/depth", 5)
        self.seg_pub = node.create_publisher(Image, f"{base}/segmentation", 5)
        self.info_pub = node.create_publisher(CameraInfo, f"{base}/camera_info", 5)
        self.tf_pub = node.create_publisher(TFMessage, f"{ns}/tf_static", latched_qos(10))
        self.header = Header(frame_id=f"{name}_camera")
        self.header.stamp.sec = stamp_sec

    def send(self, rgb: np.ndarray, depth: np.ndarray, *, info: bool = True,
             segmentation: np.ndarray | None = None) -> None:
        h, w = depth.shape
        self.rgb_pub.publish(numpy_to_image(rgb, "rgb8", self.header))
        self.depth_pub.publish(numpy_to_image(depth.astype(np.float32), "32FC1", self.header))
        if segmentation is not None:
            self.seg_pub.publish(numpy_to_image(segmentation.astype(np.uint16), "16UC1",
                                                self.header))
        if info:
            f = 0.9 * w
            self.info_pub.publish(camera_info(w, h, f, f, (w - 1) / 2, (h - 1) / 2,
                                              self.header))

    def place(self, height: float = 1.0) -> None:
        """Looking straight down from `height` m above the world origin (camera z = -world z:
        a half turn about x, quaternion [w, x, y, z] = [0, 1, 0, 0])."""
        self.tf_pub.publish(tf_message([FrameTransform(
            "world", self.header.frame_id, (0.0, 0.0, height), (0.0, 1.0, 0.0, 0.0))],
            self.header.stamp))


def flat_table(width: int = 64, height: int = 48, distance: float = 1.0
               ) -> tuple[np.ndarray, np.ndarray]:
    """An empty grey table filling the view at `distance` m: a plane, nothing on it."""
    return np.full((height, width, 3), 128, np.uint8), np.full((height, width), distance)
