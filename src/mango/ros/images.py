"""numpy <-> sensor_msgs/Image and CameraInfo, without cv_bridge (not available as a wheel,
and the PyPI `cv-bridge` is ROS 1 and breaks on numpy 2)."""

from __future__ import annotations

import numpy as np
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from mango.camera import CameraCalibration
from mango.errors import InputError

# encoding -> (dtype, channels)
ENCODINGS: dict[str, tuple[str, int]] = {
    "rgb8": ("uint8", 3), "bgr8": ("uint8", 3), "rgba8": ("uint8", 4), "bgra8": ("uint8", 4),
    "mono8": ("uint8", 1), "mono16": ("uint16", 1), "16UC1": ("uint16", 1),
    "32FC1": ("float32", 1), "32SC1": ("int32", 1),
}


def numpy_to_image(array: np.ndarray, encoding: str, header: Header | None = None) -> Image:
    """An `Image` from an HxW or HxWxC array (copied once into the message)."""
    if encoding not in ENCODINGS:
        raise InputError(f"unsupported image encoding {encoding!r}")
    dtype, channels = ENCODINGS[encoding]
    a = np.ascontiguousarray(array, dtype=dtype)
    if a.ndim == 2 and channels == 1:
        h, w = a.shape
    elif a.ndim == 3 and a.shape[2] == channels:
        h, w = a.shape[:2]
    else:
        raise InputError(f"array of shape {array.shape} does not fit encoding {encoding}")
    msg = Image(header=header or Header(), height=h, width=w, encoding=encoding,
                is_bigendian=0, step=w * channels * a.itemsize)
    msg.data = a.tobytes()
    return msg


def image_to_numpy(msg: Image) -> np.ndarray:
    """A read-only view of an `Image`'s pixels as HxW or HxWxC."""
    if msg.encoding not in ENCODINGS:
        raise InputError(f"unsupported image encoding {msg.encoding!r}")
    dtype, channels = ENCODINGS[msg.encoding]
    dt = np.dtype(dtype).newbyteorder(">" if msg.is_bigendian else "<")
    row = msg.width * channels * dt.itemsize
    if msg.step < row or len(msg.data) < msg.step * msg.height:
        raise InputError(f"image data too short for {msg.width}x{msg.height} {msg.encoding}")
    buf = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.step)
    pixels = buf[:, :row].view(dt)
    shape = (msg.height, msg.width) if channels == 1 else (msg.height, msg.width, channels)
    return pixels.reshape(shape)


def camera_info(width: int, height: int, fx: float, fy: float, cx: float, cy: float,
                header: Header | None = None, distortion: list[float] | None = None) -> CameraInfo:
    """A pinhole `CameraInfo` (plumb_bob, no distortion unless given)."""
    d = list(distortion or [0.0] * 5)
    return CameraInfo(
        header=header or Header(), width=width, height=height, distortion_model="plumb_bob",
        d=d, k=[fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
        r=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p=[fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0])


def calibration_info(cal: CameraCalibration | None, width: int, height: int,
                     header: Header | None = None) -> CameraInfo:
    """The `CameraInfo` of a width x height image with calibration `cal` (already fitted to
    that size); None leaves D, K, R, P zero, which CameraInfo.msg defines as uncalibrated."""
    info = CameraInfo(header=header or Header(), width=width, height=height)
    if cal is not None:
        if (cal.image_width, cal.image_height) != (width, height):
            raise ValueError(f"calibration for {cal.image_width}x{cal.image_height} given "
                             f"for a {width}x{height} image")
        info.distortion_model = cal.distortion_model
        info.k, info.d, info.r, info.p = cal.k, cal.d, cal.r, cal.p
    return info
