"""Pure-numpy image helpers shared by cameras, policies and nodes (no ROS, no OpenCV).

ROS message conversion stays in `mango.ros.images`; this module holds what works on arrays
alone, so a frame source, a policy preset and a node resize and convert frames the same way.
"""

from __future__ import annotations

import math

import numpy as np


def to_rgb8(img: np.ndarray) -> np.ndarray:
    """Any decoded image (grey, RGB or RGBA; uint8 or a wider type) as contiguous HxWx3 uint8:
    values clipped to 0..255, grey repeated into three channels, alpha dropped."""
    a = np.asarray(img)
    if a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, axis=2)
    return np.ascontiguousarray(a[..., :3])


def resize_with_pad(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """Bilinear resize keeping the aspect ratio, padded with black (as openpi's client does)."""
    h, w = img.shape[:2]
    if (h, w) == (height, width):
        return img
    scale = min(height / h, width / w)
    nh, nw = max(1, math.floor(h * scale)), max(1, math.floor(w * scale))
    ys = (np.arange(nh) + 0.5) / scale - 0.5
    xs = (np.arange(nw) + 0.5) / scale - 0.5
    y0 = np.clip(np.floor(ys).astype(int), 0, h - 1)
    x0 = np.clip(np.floor(xs).astype(int), 0, w - 1)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy = np.clip(ys - y0, 0, 1)[:, None, None]
    fx = np.clip(xs - x0, 0, 1)[None, :, None]
    f = img.astype(np.float32)
    if f.ndim == 2:
        f = f[..., None]
    top = f[y0][:, x0] * (1 - fx) + f[y0][:, x1] * fx
    bot = f[y1][:, x0] * (1 - fx) + f[y1][:, x1] * fx
    out = np.zeros((height, width, f.shape[2]), np.float32)
    oy, ox = (height - nh) // 2, (width - nw) // 2
    out[oy:oy + nh, ox:ox + nw] = top * (1 - fy) + bot * fy
    out = np.clip(np.rint(out), 0, 255).astype(img.dtype)
    return out if img.ndim == 3 else out[..., 0]

