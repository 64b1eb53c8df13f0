"""Pixels to 3-D: depth back-projection, masks to world point clouds, boxes and yaw.

Pure numpy. Depth is metres along the optical axis (what a RealSense's aligned depth and the
sim's depth are), NaN or <= 0 where there is none. A pixel (u, v) with depth z is the optical-
frame point ((u - cx) z / fx, (v - cy) z / fy, z): the pinhole model of sensor_msgs/CameraInfo
(image_geometry's PinholeCameraModel.projectPixelTo3dRay scaled by z).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mango.geometry import nearest_angle
from mango.perception.base import CameraPose, Intrinsics


def pixel_rays(intr: Intrinsics) -> tuple[np.ndarray, np.ndarray]:
    """Per-column x/z and per-row y/z factors of the camera (shapes (W,) and (H,))."""
    u = (np.arange(intr.width, dtype=np.float64) - intr.cx) / intr.fx
    v = (np.arange(intr.height, dtype=np.float64) - intr.cy) / intr.fy
    return u, v


def back_project(depth: np.ndarray, intr: Intrinsics,
                 mask: np.ndarray | None = None) -> np.ndarray:
    """Optical-frame points (N x 3) of the pixels of `mask` (all pixels if None) that have a
    depth reading."""
    if depth.shape != (intr.height, intr.width):
        raise ValueError(f"depth is {depth.shape[1]}x{depth.shape[0]}, CameraInfo says "
                         f"{intr.width}x{intr.height}")
    valid = np.isfinite(depth) & (depth > 0)
    if mask is not None:
        valid &= mask
    rows, cols = np.nonzero(valid)
    z = depth[rows, cols].astype(np.float64)
    u, v = pixel_rays(intr)
    return np.column_stack((u[cols] * z, v[rows] * z, z))


def to_world(points: np.ndarray, pose: CameraPose) -> np.ndarray:
    """Optical-frame points (N x 3) in the world."""
    return points @ np.asarray(pose.rotation, float).T + np.asarray(pose.position, float)


def project(points_world: np.ndarray, pose: CameraPose, intr: Intrinsics
            ) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (N x 2, u v) of world points and their depth (N,); points behind the
    camera get NaN pixels."""
    p = (np.atleast_2d(points_world) - pose.position) @ np.asarray(pose.rotation, float)
    z = p[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(z > 0, p[:, 0] / z * intr.fx + intr.cx, np.nan)
        v = np.where(z > 0, p[:, 1] / z * intr.fy + intr.cy, np.nan)
    return np.column_stack((u, v)), z


def mask_box(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """Pixel box (x0, y0, x1, y1; x1/y1 exclusive) of a mask's pixels, None if it has none."""
    rows = np.flatnonzero(mask.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(mask.any(axis=0))
    return int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1


def footprint_yaw(xy: np.ndarray) -> float:
    """Heading of the major axis of a footprint (N x 2 points), in (-pi/2, pi/2]: the axis
    has no direction, so yaw and yaw + pi are the same (0 for a round or single point)."""
    if len(xy) < 3:
        return 0.0
    c = np.cov((xy - xy.mean(axis=0)).T)
    evals, evecs = np.linalg.eigh(c)
    if evals[1] <= 1e-12 or (evals[1] - evals[0]) / evals[1] < 1e-6:
        return 0.0
    major = evecs[:, 1]
    yaw = nearest_angle(math.atan2(major[1], major[0]), 0.0, math.pi)
    return math.pi / 2 if yaw <= -math.pi / 2 else yaw


@dataclass(frozen=True)
class PointBox:
    """The world axis-aligned box around a point cloud, and its footprint's heading."""

    centroid: tuple[float, float, float]  # the box's centre
    size: tuple[float, float, float]  # its extents along world x, y, z
    yaw: float
    points: int  # how many points it was made from


def point_box(points: np.ndarray, trim: float = 0.0) -> PointBox | None:
    """Box of world points; `trim` drops that fraction of points at each end of each axis
    (depth noise and mask edges that catch the background). None for no points."""
    if len(points) == 0:
        return None
    if trim > 0:
        lo = np.quantile(points, trim, axis=0)
        hi = np.quantile(points, 1 - trim, axis=0)
    else:
        lo, hi = points.min(axis=0), points.max(axis=0)
    c, s = (lo + hi) / 2, hi - lo
    return PointBox((float(c[0]), float(c[1]), float(c[2])),
                    (float(s[0]), float(s[1]), float(s[2])),
                    footprint_yaw(points[:, :2]), len(points))
