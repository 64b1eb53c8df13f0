"""Camera node: publishes `image_raw` (rgb8), `camera_info` and, when the source has depth,
`depth` (32FC1, metres) at `rate` Hz from a frame source.

Parameters: `backend` (files|opencv|realsense), `source` (folder, video, device index, URL or
RealSense serial), `rate`, `loop` (files), `width`/`height` (0 = the source's size; frames are
resized and the intrinsics scaled), `calibration_file` (ROS calibration YAML; without one,
CameraInfo carries K = 0, ROS's "uncalibrated"), `frame_id`, `depth` (realsense).
"""

from __future__ import annotations

import threading
import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from mango.camera import CameraCalibration, Frame, load_calibration, open_source
from mango.errors import InputError
from mango.imaging import resize_with_pad
from mango.nodes.common import Param, declare_parameters, rate_param, run_node
from mango.ros.images import numpy_to_image


class CameraNode(Node):
    def __init__(self) -> None:
        super().__init__("camera_node")
        size = Param(0, lambda v: v == 0 or 16 <= v <= 8192, "0 (as captured) or 16 to 8192")
        p = declare_parameters(self, {
            "backend": "files", "source": "", "rate": rate_param(30.0), "loop": True,
            "width": size, "height": size, "calibration_file": "", "frame_id": "camera",
            "depth": False})
        if not p["source"] and p["backend"] != "realsense":
            raise InputError("parameter 'source' is required (folder, video, device or URL)",
                             field="source")
        self.period = 1.0 / float(p["rate"])
        self.size = (int(p["width"]), int(p["height"]))
        self.frame_id = p["frame_id"]
        self.calibration: CameraCalibration | None = (
            load_calibration(p["calibration_file"]) if p["calibration_file"] else None)
        self.source = open_source(p["backend"], p["source"], loop=bool(p["loop"]),
                                  width=self.size[0], height=self.size[1],
                                  depth=bool(p["depth"]))
        self.image_pub = self.create_publisher(Image, "image_raw", 5)
        self.info_pub = self.create_publisher(CameraInfo, "camera_info", 5)
        self.depth_pub = self.create_publisher(Image, "depth", 5) if p["depth"] else None
        self._info_cache: dict[tuple[int, int], CameraInfo] = {}
        self.frames = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="camera", daemon=True)
        self._thread.start()
        self.get_logger().info(f"{p['backend']} camera {p['source']} at {p['rate']:g} Hz")

    def _info(self, width: int, height: int) -> CameraInfo:
        info = self._info_cache.get((width, height))
        if info is None:
            info = CameraInfo(width=width, height=height)
            cal = self.calibration
            if cal is not None:
                if (cal.image_width, cal.image_height) != (width, height):
                    cal = cal.scaled(width, height)
                info.distortion_model = cal.distortion_model
                info.k, info.d, info.r, info.p = cal.k, cal.d, cal.r, cal.p
            self._info_cache[(width, height)] = info
        return info

    def publish(self, frame: Frame) -> None:
        rgb = frame.rgb
        w, h = self.size
        if w and h and rgb.shape[:2] != (h, w):
            rgb = resize_with_pad(rgb, h, w)
        header = Header(frame_id=self.frame_id)
        header.stamp = self.get_clock().now().to_msg()
        self.image_pub.publish(numpy_to_image(rgb, "rgb8", header))
        info = self._info(rgb.shape[1], rgb.shape[0])
        info.header = header
        self.info_pub.publish(info)
        if self.depth_pub is not None and frame.depth is not None:
            self.depth_pub.publish(numpy_to_image(frame.depth.astype(np.float32), "32FC1",
                                                  header))
        self.frames += 1

    def _loop(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            try:
                frame = self.source.read()
            except InputError as exc:
                self.get_logger().error(str(exc))
                return
            if frame is None:
                self.get_logger().info(f"source ended after {self.frames} frames")
                return
            self.publish(frame)
            next_t += self.period
            delay = next_t - time.monotonic()
            if delay < -self.period:  # fell behind (slow source): do not burst
                next_t = time.monotonic()
            self._stop.wait(max(0.0, delay))

    def destroy_node(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.source.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_node(CameraNode, args)


if __name__ == "__main__":
    main()
