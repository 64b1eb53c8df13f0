"""Frames brought to the size a camera node publishes, with the calibration that fits them.

A `CameraInfo` must describe the image it comes with (sensor_msgs/CameraInfo: K projects
camera-frame points to that image's pixels). Resizing to another aspect letterboxes (as
openpi's client does) and moves the principal point by the padding; depth is resized with
nearest-neighbour so each depth pixel stays the depth of the RGB pixel at the same place.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from mango.camera.calibration import CameraCalibration
from mango.camera.sources import Frame
from mango.errors import InputError
from mango.imaging import resize_with_pad

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FittedFrame:
    rgb: np.ndarray  # height x width x 3 uint8
    depth: np.ndarray | None  # height x width float32 metres, NaN where padded
    calibration: CameraCalibration | None  # None: uncalibrated (CameraInfo K = 0)
    stamp: float


class FrameFitter:
    """Fits frames to `width` x `height` (0 x 0: as captured) and keeps their calibration."""

    def __init__(self, width: int = 0, height: int = 0,
                 calibration: CameraCalibration | None = None) -> None:
        if (width == 0) != (height == 0):
            raise InputError("give both width and height, or neither (0: as captured)",
                             field="width" if width == 0 else "height")
        self.size = (width, height)
        self.calibration = calibration
        self._cache: dict[tuple[int, int], CameraCalibration | None] = {}

    def _calibration(self, w0: int, h0: int) -> CameraCalibration | None:
        key = (w0, h0)
        if key not in self._cache:
            cal, out = self.calibration, None
            if cal is not None:
                if (cal.image_width, cal.image_height) == key:
                    out = cal
                elif cal.same_aspect(w0, h0):
                    out = cal.letterboxed(w0, h0)  # same aspect: a pure rescale
                else:
                    log.error("frames are %dx%d but the calibration is for %dx%d (another "
                              "aspect): publishing them as uncalibrated", w0, h0,
                              cal.image_width, cal.image_height)
            w, h = self.size
            if out is not None and w and (w, h) != key:
                out = out.letterboxed(w, h)
            self._cache[key] = out
        return self._cache[key]

    def fit(self, frame: Frame) -> FittedFrame:
        h0, w0 = frame.rgb.shape[:2]
        depth = frame.depth
        if depth is not None and depth.shape[:2] != (h0, w0):
            raise InputError(f"depth is {depth.shape[1]}x{depth.shape[0]} but colour is "
                             f"{w0}x{h0}: depth must be aligned to the colour image",
                             field="depth")
        w, h = self.size
        rgb = frame.rgb
        if w and (w, h) != (w0, h0):
            rgb = resize_with_pad(rgb, h, w)
            if depth is not None:
                depth = resize_with_pad(np.asarray(depth, np.float32), h, w,
                                        interpolation="nearest", pad=np.nan)
        return FittedFrame(rgb, None if depth is None else np.asarray(depth, np.float32),
                           self._calibration(w0, h0), frame.stamp)
