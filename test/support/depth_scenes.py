"""Synthetic depth frames of a tabletop seen from straight above: boxes and cylinders whose
tops a planner reads from depth as it would a camera's."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from mango.perception.base import CameraPose, Intrinsics, RGBDFrame

Mask = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def down_frame(surfaces: Sequence[tuple[float, ...]], masks: Sequence[Mask] = (),
               n: int = 200, f: float = 200.0) -> tuple[RGBDFrame, list[np.ndarray]]:
    """A camera 2 m up looking straight down (optical x = world x, y = world -y), `n` pixels
    square at focal length `f`: depth from the highest surface over each pixel, a box top
    (x0, y0, x1, y1, z) or a disc (cx, cy, r, z), the table (0.9) elsewhere; and each mask
    of `masks(u, v, depth)`."""
    intr = Intrinsics(width=n, height=n, fx=f, fy=f, cx=n / 2, cy=n / 2)
    pose = CameraPose(np.array([0.0, 0.0, 2.0]), np.array([[1.0, 0, 0], [0, -1, 0], [0, 0, -1]]))
    v, u = np.mgrid[0:n, 0:n]
    depth = np.full((n, n), 1.1, np.float32)
    for s in surfaces:
        d = 2.0 - s[-1]
        x, y = (u - n / 2) / f * d, -(v - n / 2) / f * d
        if len(s) == 5:
            x0, y0, x1, y1, _ = s
            inside = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
        else:
            cx, cy, r, _ = s
            inside = np.hypot(x - cx, y - cy) <= r
        depth = np.where(inside, np.minimum(depth, d), depth).astype(np.float32)
    return RGBDFrame(camera="down", rgb=None, depth=depth, intrinsics=intr, pose=pose), \
        [m(u, v, depth) for m in masks]
