"""A detector's 2-D box -> mask and world 3-D box, from depth alone.

Box detectors (OWLv2, Grounding DINO) give no mask. Inside the box, the object is the nearest
surface that fills it: the pixels whose depth lies within `band` of the box's foreground
depth (a low percentile, so the table behind a mug does not count); the rest is background.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mango.perception.base import Detection, RGBDFrame
from mango.perception.geometry import back_project, point_box, to_world

MIN_POINTS = 20
FOREGROUND_PERCENTILE = 20.0


def clip_box(box: Sequence[float], width: int, height: int) -> tuple[int, int, int, int] | None:
    """Float x0, y0, x1, y1 -> integer pixels inside the image (x1/y1 exclusive), None if
    nothing of it is inside."""
    x0 = int(np.clip(np.floor(box[0]), 0, width))
    y0 = int(np.clip(np.floor(box[1]), 0, height))
    x1 = int(np.clip(np.ceil(box[2]), 0, width))
    y1 = int(np.clip(np.ceil(box[3]), 0, height))
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1, y1


def box_detection(frame: RGBDFrame, box: Sequence[float], *, phrase: str, label: str,
                  score: float, band: float = 0.05) -> tuple[Detection | None, str]:
    """The detection of a box on a frame whose `problem()` is None, or why there is none
    (second value: the reason, or a remark on the detection; '' when there is nothing to say)."""
    assert frame.depth is not None and frame.intrinsics is not None and frame.pose is not None
    h, w = frame.depth.shape
    px = clip_box(box, w, h)
    if px is None:
        return None, f"its box {[round(float(v), 1) for v in box]} lies outside the image"
    x0, y0, x1, y1 = px
    crop = frame.depth[y0:y1, x0:x1]
    valid = np.isfinite(crop) & (crop > 0)
    if valid.sum() < MIN_POINTS:
        return None, f"its box {list(px)} has {int(valid.sum())} pixels with depth"
    near = float(np.percentile(crop[valid], FOREGROUND_PERCENTILE))
    mask = np.zeros((h, w), bool)
    mask[y0:y1, x0:x1] = valid & (crop <= near + band) & (crop >= near - band)
    points = back_project(frame.depth, frame.intrinsics, mask)
    if len(points) < MIN_POINTS:
        return None, f"its box {list(px)} has too few foreground depth pixels"
    pb = point_box(to_world(points, frame.pose), trim=0.02)
    assert pb is not None
    edge = x0 == 0 or y0 == 0 or x1 == w or y1 == h
    return Detection(phrase=phrase, entity_id=None, label=label, score=float(score),
                     box_2d=px, mask=mask, centroid=pb.centroid, size=pb.size, yaw=pb.yaw,
                     camera=frame.camera, stamp=frame.stamp), (
        "it touches the image edge: its box is the visible part only" if edge else "")
