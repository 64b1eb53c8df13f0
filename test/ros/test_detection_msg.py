"""perception Detection <-> mango_ros/Detection: lossless for the fields the message has, the
mask cropped to the box (sensor_msgs/RegionOfInterest: x_offset/y_offset the top-left pixel,
ros2/common_interfaces sensor_msgs/msg/RegionOfInterest.msg), and rviz markers."""

from __future__ import annotations

import numpy as np
from visualization_msgs.msg import Marker

from mango.perception.base import Detection, DetectResult
from mango.ros.detection_msg import (
    detection_from_msg,
    detection_markers,
    detection_to_msg,
    detections_msg,
)


def _detection() -> Detection:
    mask = np.zeros((48, 64), bool)
    mask[10:20, 30:35] = True
    mask[12, 30] = False
    return Detection(phrase="the black bowl", entity_id="akita_black_bowl_1", label="black bowl",
                     score=0.75, box_2d=(30, 10, 35, 20), mask=mask, centroid=(0.1, -0.2, 0.9),
                     size=(0.07, 0.07, 0.045), yaw=0.3, camera="front", stamp=12.25)


def test_round_trip() -> None:
    d = _detection()
    msg = detection_to_msg(d)
    assert (msg.box.x_offset, msg.box.y_offset, msg.box.width, msg.box.height) == (30, 10, 5, 10)
    assert (msg.mask.width, msg.mask.height, msg.mask.encoding) == (5, 10, "mono8")
    assert msg.header.frame_id == "world" and msg.camera_frame_id == "front_camera"
    back = detection_from_msg(msg, (48, 64))
    assert back.mask is not None and np.array_equal(back.mask, d.mask)
    assert back.stamp == d.stamp and back.box_2d == d.box_2d and back.entity_id == d.entity_id
    assert back.centroid == d.centroid and back.size == d.size and back.yaw == d.yaw
    assert back.score == np.float32(0.75)
    no_id = detection_from_msg(detection_to_msg(Detection(**{**d.__dict__, "entity_id": None,
                                                             "mask": None})))
    assert no_id.entity_id is None and no_id.mask is None


def test_detections_and_markers() -> None:
    d = _detection()
    res = DetectResult((d,), ("a unicorn",), ("'a unicorn': no scene entity matches it",
                                              "'the black bowl': touches the edge"))
    msg = detections_msg(res, "front", d.stamp)
    assert len(msg.detections) == 1 and msg.unmatched == ["a unicorn"]
    assert msg.reasons == ["'a unicorn': no scene entity matches it"]
    markers = detection_markers(res.detections, d.stamp).markers
    assert markers[0].action == Marker.DELETEALL
    cube = markers[1]
    assert cube.type == Marker.CUBE and cube.header.frame_id == "world"
    assert (cube.pose.position.x, cube.scale.z) == (0.1, 0.045)
    assert "akita_black_bowl_1" in markers[2].text
