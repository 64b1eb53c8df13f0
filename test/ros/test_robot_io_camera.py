"""camera_node publishes a looping folder of 640x480 frames with the calibration's CameraInfo."""

from __future__ import annotations

from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from support.ros import Processes, wait_for

from mango.camera import load_calibration
from mango.ros.images import image_to_numpy

REPO = Path(__file__).resolve().parents[2]
CALIBRATION = REPO / "config" / "cameras" / "example_640x480.yaml"


def test_files_camera_publishes_frames_and_info(
    ros_node: Node, processes: Processes, namespace: str, tmp_path: Path
) -> None:
    folder = tmp_path / "frames"
    folder.mkdir()
    for k in range(3):
        img = np.zeros((480, 640, 3), np.uint8)
        img[..., k] = 200  # red, green, blue
        imageio.imwrite(folder / f"{k}.png", img)
    msgs: list[Image] = []
    infos: list[CameraInfo] = []
    ros_node.create_subscription(Image, f"{namespace}/camera/image_raw", msgs.append, 10)
    ros_node.create_subscription(CameraInfo, f"{namespace}/camera/camera_info", infos.append, 10)
    processes.start("camera", "mango.nodes.camera_node", "-r", f"__ns:={namespace}/camera",
                    "-p", "backend:=files", "-p", f"source:={folder}", "-p", "rate:=20.0",
                    "-p", f"calibration_file:={CALIBRATION}", "-p", "frame_id:=front_camera")
    wait_for(lambda: len(msgs) >= 30, timeout=30, what="30 frames")
    assert all((m.width, m.height, m.encoding) == (640, 480, "rgb8") for m in msgs)
    colours = [int(np.argmax(image_to_numpy(m)[0, 0])) for m in msgs]
    start = colours.index(0)
    assert colours[start:start + 6] == [0, 1, 2, 0, 1, 2]  # looping in name order
    # The rate by the frames' own stamps: arrival times here also measure this process's
    # scheduling (a loaded CI machine delivered a backlog in a burst: 27 "Hz").
    stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs[5:30]]
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    assert 15.0 < rate < 25.0, rate
    info = infos[-1]
    assert info.header.frame_id == "front_camera" and (info.width, info.height) == (640, 480)
    assert list(info.k) == [615.0, 0.0, 320.0, 0.0, 615.0, 240.0, 0.0, 0.0, 1.0]
    assert list(info.d)[:2] == [0.05, -0.1]


def test_letterboxed_frames_come_with_their_camera_info(
    ros_node: Node, processes: Processes, namespace: str, tmp_path: Path
) -> None:
    """640x480 frames published at 320x320: letterboxed, and CameraInfo describes that image
    (sensor_msgs/CameraInfo.msg, ros2/common_interfaces: K projects onto the image it is
    sent with; width/height are that image's)."""
    folder = tmp_path / "frames"
    folder.mkdir()
    imageio.imwrite(folder / "0.png", np.full((480, 640, 3), 200, np.uint8))
    images: list[Image] = []
    infos: list[CameraInfo] = []
    ros_node.create_subscription(Image, f"{namespace}/cam/image_raw", images.append, 10)
    ros_node.create_subscription(CameraInfo, f"{namespace}/cam/camera_info", infos.append, 10)
    processes.start("camera", "mango.nodes.camera_node", "-r", f"__ns:={namespace}/cam",
                    "-p", "backend:=files", "-p", f"source:={folder}", "-p", "rate:=20.0",
                    "-p", "width:=320", "-p", "height:=320",
                    "-p", f"calibration_file:={CALIBRATION}")
    wait_for(lambda: len(images) >= 3 and len(infos) >= 3, timeout=30, what="frames")
    img = image_to_numpy(images[-1])
    assert img.shape == (320, 320, 3)
    assert img[:40].max() == 0 and img[280:].max() == 0 and img[40:280].min() == 200  # 320x240
    info = infos[-1]
    assert (info.width, info.height) == (320, 320)
    expected = load_calibration(CALIBRATION).letterboxed(320, 320)
    assert list(info.k) == pytest.approx(expected.k) and list(info.p) == pytest.approx(expected.p)
    s = 0.5  # 640 -> 320; principal point about pixel centres, plus the 40 rows of padding
    assert list(info.k) == pytest.approx([615 * s, 0, 320.5 * s - 0.5, 0, 615 * s,
                                          240.5 * s - 0.5 + 40, 0, 0, 1])


def test_bad_source_is_one_error_line(processes: Processes, namespace: str,
                                      tmp_path: Path) -> None:
    proc = processes.start("camera", "mango.nodes.camera_node", "-r", f"__ns:={namespace}",
                           "-p", "backend:=files", "-p", f"source:={tmp_path / 'missing'}")
    assert proc.wait(timeout=30) == 1
    log = processes.log("camera")
    assert "error:" in log and "no such folder or video file" in log and "Traceback" not in log
