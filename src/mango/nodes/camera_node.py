"""Camera node: publishes `image_raw` (rgb8), `camera_info` and, when the source has depth,
`depth` (32FC1, metres) at `rate` Hz from a frame source.

Parameters: `backend` (files|opencv|realsense), `source` (folder, video, device index, URL or
RealSense serial), `rate`, `loop` (files), `width`/`height` (0 = the source's size; frames are
letterboxed to it, depth with nearest-neighbour, and the intrinsics follow: scale and padding
offset, `mango.camera.FrameFitter`), `calibration_file` (ROS calibration YAML for the captured
size or its aspect; without one, CameraInfo carries K = 0, ROS's "uncalibrated"), `frame_id`,
`depth` (realsense).
"""

from __future__ import annotations

import threading
import time

from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from mango.camera import Frame, FrameFitter, load_calibration, open_source
from mango.errors import InputError
from mango.nodes.common import Param, declare_parameters, rate_param, run_node
from mango.ros.images import calibration_info, numpy_to_image


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
        calibration = (load_calibration(p["calibration_file"]) if p["calibration_file"]
                       else None)
        self.fitter = FrameFitter(*self.size, calibration)
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

    def publish(self, frame: Frame) -> None:
        fitted = self.fitter.fit(frame)
        header = Header(frame_id=self.frame_id)
        header.stamp = self.get_clock().now().to_msg()
        self.image_pub.publish(numpy_to_image(fitted.rgb, "rgb8", header))
        h, w = fitted.rgb.shape[:2]
        info = self._info_cache.get((w, h))
        if info is None:
            info = self._info_cache[(w, h)] = calibration_info(fitted.calibration, w, h)
        info.header = header
        self.info_pub.publish(info)
        if self.depth_pub is not None and fitted.depth is not None:
            self.depth_pub.publish(numpy_to_image(fitted.depth, "32FC1", header))
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
