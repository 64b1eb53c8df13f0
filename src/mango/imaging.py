"""Pure-numpy image helpers shared by cameras, policies and nodes (no ROS, no OpenCV).

ROS message conversion stays in `mango.ros.images`; this module holds what works on arrays
alone, so a frame source, a policy preset and a node resize and convert frames the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Letterbox:
    """Where a `src_width` x `src_height` image lands when fitted, aspect kept, into a
    `width` x `height` frame: resized to `inner_width` x `inner_height` and placed at
    (`left`, `top`), the rest padded.

    Pixel coordinates follow OpenCV/ROS: the centre of pixel (i, j) is at (i, j). The resize
    maps centres to centres (as PIL and `cv2.resize` do), so a source point (u, v) lands at
    ((u + 0.5) sx - 0.5 + left, (v + 0.5) sy - 0.5 + top) with sx = inner_width / src_width;
    `camera_matrix` applies the same map to intrinsics, so a letterboxed frame keeps a
    `CameraInfo` that projects exactly onto it.
    """

    src_width: int
    src_height: int
    width: int
    height: int
    inner_width: int
    inner_height: int
    left: int
    top: int

    @property
    def sx(self) -> float:
        return self.inner_width / self.src_width

    @property
    def sy(self) -> float:
        return self.inner_height / self.src_height

    def point(self, u: float, v: float) -> tuple[float, float]:
        """A source pixel coordinate in the letterboxed frame."""
        return ((u + 0.5) * self.sx - 0.5 + self.left, (v + 0.5) * self.sy - 0.5 + self.top)

    def camera_matrix(self, m: Sequence[float]) -> list[float]:
        """A row-major 3x3 K or 3x4 P of the source image, for the letterboxed one: each
        output row is an affine map of the source's (u, v) applied to the matrix rows."""
        a = np.asarray(m, float)
        if a.size not in (9, 12):
            raise ValueError(f"a camera matrix has 9 (K) or 12 (P) values, not {a.size}")
        a = a.reshape(3, -1)
        if not np.any(a):  # K = 0: "uncalibrated" (sensor_msgs/CameraInfo) stays that way
            return a.ravel().tolist()
        ox, oy = 0.5 * self.sx - 0.5 + self.left, 0.5 * self.sy - 0.5 + self.top
        t = np.array([[self.sx, 0.0, ox], [0.0, self.sy, oy], [0.0, 0.0, 1.0]])
        return (t @ a).ravel().tolist()


def letterbox(src_height: int, src_width: int, height: int, width: int) -> Letterbox:
    """The letterbox of openpi's client `resize_with_pad` (openpi
    packages/openpi-client/src/openpi_client/image_tools.py): the size divided by the larger
    ratio and truncated, the padding split with the odd pixel at the end."""
    if min(src_height, src_width, height, width) < 1:
        raise ValueError(f"image sizes must be positive: {src_width}x{src_height} -> "
                         f"{width}x{height}")
    ratio = max(src_width / width, src_height / height)
    nh = min(height, max(1, int(src_height / ratio)))
    nw = min(width, max(1, int(src_width / ratio)))
    return Letterbox(src_width, src_height, width, height, nw, nh, (width - nw) // 2,
                     (height - nh) // 2)


def resize_with_pad(img: np.ndarray, height: int, width: int, *,
                    interpolation: str = "bilinear", pad: float = 0) -> np.ndarray:
    """Resize keeping the aspect ratio, padded with `pad` (black, as openpi's client does).

    `interpolation="nearest"` takes every output pixel from one source pixel: what depth and
    label images need (blending a foreground and a background depth invents a surface between
    them); give depth `pad=nan` (REP 117/118: no reading). Geometry: `letterbox`.
    """
    h, w = img.shape[:2]
    if (h, w) == (height, width):
        return img
    box = letterbox(h, w, height, width)
    nh, nw = box.inner_height, box.inner_width
    ys = (np.arange(nh) + 0.5) / box.sy - 0.5
    xs = (np.arange(nw) + 0.5) / box.sx - 0.5
    if interpolation == "nearest":
        yi = np.clip(np.floor(ys + 0.5).astype(int), 0, h - 1)
        xi = np.clip(np.floor(xs + 0.5).astype(int), 0, w - 1)
        inner = img[yi][:, xi]
        out = np.full((height, width, *img.shape[2:]), pad, dtype=img.dtype)
        out[box.top:box.top + nh, box.left:box.left + nw] = inner
        return out
    if interpolation != "bilinear":
        raise ValueError(f"interpolation must be 'bilinear' or 'nearest', not {interpolation!r}")
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
    out = np.full((height, width, f.shape[2]), pad, np.float32)
    out[box.top:box.top + nh, box.left:box.left + nw] = top * (1 - fy) + bot * fy
    if np.issubdtype(img.dtype, np.integer):
        info = np.iinfo(img.dtype)
        out = np.clip(np.rint(out), info.min, info.max)
    out = out.astype(img.dtype)
    return out if img.ndim == 3 else out[..., 0]
