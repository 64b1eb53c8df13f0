"""What a model decider sees on ROS: `RosPort.camera_image` (real rclpy, in-process).

sensor_msgs/Image encodings as REP 104 / sensor_msgs `image_encodings.hpp` name them
(ros2/common_interfaces sensor_msgs/include/sensor_msgs/image_encodings.hpp): `bgr8` is
blue-green-red, so the model is shown it turned to RGB.
"""

from __future__ import annotations

import threading
import time
import uuid

import numpy as np
import pytest
import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image

from mango.errors import InputError
from mango.nodes.orchestrator_node import OrchestratorNode
from mango.nodes.orchestrator_port import RosPort
from mango.ros.images import numpy_to_image


def test_the_camera_image_a_model_sees() -> None:
    ns = f"/cam_{uuid.uuid4().hex[:8]}"
    rclpy.init(args=["--ros-args", "-r", f"__ns:={ns}", "-p", "observation_timeout:=0.3"])
    try:
        node = OrchestratorNode()
        port = RosPort(node, node.scene)
        with pytest.raises(InputError, match="no image on 'camera/front/image_raw'"):
            port.camera_image()
        sender = rclpy.create_node("camera_sender")
        pub = sender.create_publisher(Image, "camera/front/image_raw", qos_profile_sensor_data)
        ex = MultiThreadedExecutor()
        ex.add_node(node)
        ex.add_node(sender)
        threading.Thread(target=ex.spin, daemon=True).start()
        bgr = np.zeros((4, 6, 3), np.uint8)
        bgr[..., 0] = 200  # blue
        bgr[0, 0] = (0, 0, 255)  # one red pixel, top left
        deadline = time.monotonic() + 10
        while node.image is None and time.monotonic() < deadline:
            pub.publish(numpy_to_image(bgr, "bgr8"))
            time.sleep(0.05)
        rgb = port.camera_image()
        assert rgb.shape == (4, 6, 3) and rgb.dtype == np.uint8
        assert tuple(rgb[0, 0]) == (255, 0, 0) and tuple(rgb[1, 1]) == (0, 0, 200)
        ex.shutdown()
        sender.destroy_node()
        node.destroy_node()
    finally:
        rclpy.shutdown()
