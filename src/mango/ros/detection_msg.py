"""perception Detection <-> mango_ros/Detection, Detections, and rviz markers of detections.

The mask travels cropped to the box (mono8, 255 = object), so a small object costs a small
message; `detection_from_msg` gives it back as a full-image mask when the image size is known.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from sensor_msgs.msg import RegionOfInterest
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from mango.perception.base import Detection, DetectResult
from mango.ros.images import image_to_numpy, numpy_to_image
from mango.ros.world_state_msg import WORLD_FRAME, stamp_from_seconds
from mango_ros.msg import Detection as DetectionMsg
from mango_ros.msg import Detections as DetectionsMsg

DETECTION_COLOUR = (0.1, 0.6, 1.0, 0.5)


def _header(stamp: float, frame_id: str) -> Header:
    h = Header(frame_id=frame_id)
    h.stamp.sec, h.stamp.nanosec = stamp_from_seconds(stamp)
    return h


def detection_to_msg(d: Detection, world_frame: str = WORLD_FRAME) -> DetectionMsg:
    x0, y0, x1, y1 = d.box_2d
    header = _header(d.stamp, world_frame)
    msg = DetectionMsg(
        header=header, phrase=d.phrase, entity_id=d.entity_id or "", label=d.label,
        score=float(d.score), camera=d.camera, camera_frame_id=f"{d.camera}_camera",
        box=RegionOfInterest(x_offset=x0, y_offset=y0, width=x1 - x0, height=y1 - y0),
        centroid=Point(x=d.centroid[0], y=d.centroid[1], z=d.centroid[2]),
        size=Vector3(x=d.size[0], y=d.size[1], z=d.size[2]), yaw=float(d.yaw))
    if d.mask is not None:
        crop = d.mask[y0:y1, x0:x1].astype(np.uint8) * 255
        msg.mask = numpy_to_image(crop, "mono8", _header(d.stamp, msg.camera_frame_id))
    return msg


def detection_from_msg(msg: DetectionMsg, image_size: tuple[int, int] | None = None
                       ) -> Detection:
    """Back to the core type; the mask is full-image when `image_size` (height, width) is
    given, else None."""
    b = msg.box
    box = (int(b.x_offset), int(b.y_offset), int(b.x_offset + b.width),
           int(b.y_offset + b.height))
    mask = None
    if image_size is not None and msg.mask.width > 0:
        mask = np.zeros(image_size, bool)
        mask[box[1]:box[3], box[0]:box[2]] = image_to_numpy(msg.mask) > 0
    stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
    return Detection(phrase=msg.phrase, entity_id=msg.entity_id or None, label=msg.label,
                     score=float(msg.score), box_2d=box, mask=mask,
                     centroid=(msg.centroid.x, msg.centroid.y, msg.centroid.z),
                     size=(msg.size.x, msg.size.y, msg.size.z), yaw=float(msg.yaw),
                     camera=msg.camera, stamp=stamp)


def unmatched_reasons(result: DetectResult) -> list[str]:
    """One reason per unmatched phrase: the messages that name it (begin with `'phrase'`),
    joined; else the messages that name no phrase. One pass over the messages, whatever the
    number of phrases."""
    wanted = set(result.unmatched)
    lengths = {len(p) for p in wanted}
    said: dict[str, list[str]] = {}
    general = []
    for m in result.messages:
        if not m.startswith("'"):
            general.append(m)
            continue
        # every quote could close the phrase (a phrase may hold quotes: "the chef's bowl")
        end = m.find("'", 1)
        while end != -1:
            if end - 1 in lengths and m[1:end] in wanted:
                said.setdefault(m[1:end], []).append(m)
            end = m.find("'", end + 1)
    fallback = "; ".join(general)
    return ["; ".join(said.get(p, ())) or fallback or f"nothing matches '{p}'"
            for p in result.unmatched]


def detections_msg(result: DetectResult, camera: str, stamp: float,
                   world_frame: str = WORLD_FRAME) -> DetectionsMsg:
    return DetectionsMsg(header=_header(stamp, world_frame), camera=camera,
                         detections=[detection_to_msg(d, world_frame) for d in result.detections],
                         unmatched=list(result.unmatched), reasons=unmatched_reasons(result))


def detection_markers(detections: Sequence[Detection], stamp: float,
                      world_frame: str = WORLD_FRAME) -> MarkerArray:
    """A box turned by the footprint's yaw and a label per detection (rviz), after a
    DELETEALL so boxes of objects no longer seen go away."""
    header = _header(stamp, world_frame)
    markers = [Marker(header=header, action=Marker.DELETEALL)]
    r, g, b, a = DETECTION_COLOUR
    for i, d in enumerate(detections):
        cx, cy, cz = d.centroid
        # size is along world axes, so the box is drawn unturned; the yaw is in the label
        markers.append(Marker(
            header=header, ns="detections", id=2 * i + 1, type=Marker.CUBE, action=Marker.ADD,
            pose=Pose(position=Point(x=cx, y=cy, z=cz), orientation=Quaternion(w=1.0)),
            scale=Vector3(x=max(d.size[0], 1e-3), y=max(d.size[1], 1e-3),
                          z=max(d.size[2], 1e-3)),
            color=ColorRGBA(r=r, g=g, b=b, a=a)))
        markers.append(Marker(
            header=header, ns="detection_labels", id=2 * i + 2, type=Marker.TEXT_VIEW_FACING,
            action=Marker.ADD, pose=Pose(position=Point(x=cx, y=cy, z=cz + d.size[2] / 2 + 0.04),
                                         orientation=Quaternion(w=1.0)),
            scale=Vector3(z=0.025), color=ColorRGBA(r=r, g=g, b=b, a=1.0),
            text=f"{d.phrase} -> {d.entity_id or d.label} ({d.score:.2f}, "
                 f"yaw {math.degrees(d.yaw):.0f} deg)"))
    return MarkerArray(markers=markers)
