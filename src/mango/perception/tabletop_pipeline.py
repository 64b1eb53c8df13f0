"""The classical tabletop pipeline over one RGB-D frame, with no learned weights.

Fit the table plane (seeded RANSAC on the back-projected depth), keep what stands on it,
split that into clusters (image-space connected components cut at depth edges), and describe
each cluster by what geometry and colour alone can say: a 3-D box, a footprint yaw, a
dominant colour word and a shape class. `mango.perception.grounding` then picks clusters for
phrases. Works the same on real RGB-D and on the sim's renders, because it reads only the
images, the intrinsics and the camera pose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import cv2
import numpy as np

from mango.perception.base import Intrinsics

# HSV (OpenCV: H 0..180, S and V 0..255) -> basic colour words. Achromatic first: a dark or
# unsaturated pixel has no meaningful hue.
_HUE_WORDS: tuple[tuple[float, str], ...] = (
    (8.0, "red"), (20.0, "orange"), (34.0, "yellow"), (80.0, "green"), (100.0, "cyan"),
    (128.0, "blue"), (150.0, "purple"), (170.0, "pink"), (181.0, "red"),
)
COLOUR_WORDS: frozenset[str] = frozenset(
    {w for _, w in _HUE_WORDS} | {"black", "white", "grey", "brown"}
)


@dataclass(frozen=True)
class TabletopConfig:
    """Thresholds of the pipeline; the defaults suit a table seen from 0.5-1.5 m."""

    stride: int = 2  # back-project every stride-th pixel (speed); masks are full resolution
    ransac_iterations: int = 120
    ransac_sample: int = 3000  # points RANSAC scores each hypothesis on
    plane_threshold: float = 0.008  # metres from the plane that count as the plane
    max_tilt_deg: float = 25.0  # the table's normal within this of world +z
    min_height: float = 0.008  # a point this far above the plane stands on it
    max_height: float = 0.6  # higher points (the arm, a person) are not on the table
    depth_edge: float = 0.02  # neighbours further apart in depth (m, at 1 m) are cut
    min_pixels: int = 60  # at the strided resolution
    touch_distance: float = 0.03  # a cluster's lowest point at most this above the plane
    seed: int = 0


@dataclass(frozen=True)
class TablePlane:
    """The plane n . p = offset (world frame, n unit, pointing up) and its xy extent."""

    normal: np.ndarray
    offset: float
    extent: tuple[float, float, float, float]  # x0, y0, x1, y1 of its inliers (2nd-98th pct.)
    inliers: int

    def height(self, points: np.ndarray) -> np.ndarray:
        """Signed distance of world points above the plane."""
        return points @ self.normal - self.offset


@dataclass(frozen=True)
class TabletopCluster:
    """One thing standing on the table, described from its visible surface."""

    index: int
    mask: np.ndarray  # HxW bool, full image resolution
    box_2d: tuple[int, int, int, int]  # x0, y0, x1, y1 pixels (inclusive-exclusive)
    centroid: np.ndarray  # world xyz of the box centre
    size: tuple[float, float, float]  # axis-aligned world box extents
    footprint: tuple[float, float]  # length, width of the minimum-area footprint rectangle
    yaw: float  # radians, of the footprint's major axis in the world xy plane
    height: float  # top above the table plane
    colour: str
    colour_share: float  # fraction of its pixels with that colour word
    colours: dict[str, float] = field(default_factory=dict)  # every word's share
    shape: str = "object"  # flat | container | round | boxy | large | object
    points: int = 0

    @property
    def volume(self) -> float:
        return self.footprint[0] * self.footprint[1] * self.height


@dataclass(frozen=True)
class TabletopScene:
    plane: TablePlane | None
    clusters: list[TabletopCluster]
    message: str = ""  # why nothing was found, when nothing was


def backproject(depth: np.ndarray, intr: Intrinsics, stride: int = 1) -> tuple[np.ndarray, ...]:
    """Camera-frame points (optical frame: z forward) of every stride-th pixel.

    Returns (points HxWx3 at the strided size, valid HxW bool): NaN, non-positive and
    non-finite depths are invalid.
    """
    d = np.asarray(depth, np.float32)[::stride, ::stride]
    h, w = d.shape
    v, u = np.mgrid[0:h, 0:w].astype(np.float32)
    u *= stride
    v *= stride
    valid = np.isfinite(d) & (d > 0)
    z = np.where(valid, d, np.float32(0))
    x = (u - np.float32(intr.cx)) * z / np.float32(intr.fx)
    y = (v - np.float32(intr.cy)) * z / np.float32(intr.fy)
    return np.stack([x, y, z], axis=-1), valid


def fit_plane_ransac(
    points: np.ndarray, cfg: TabletopConfig, up: np.ndarray | None = None
) -> tuple[np.ndarray, float, np.ndarray] | None:
    """The plane with the most inliers among near-horizontal candidates, refined by least
    squares on its inliers: (unit normal, offset, inlier mask over `points`), or None.

    Seeded (`cfg.seed`), so a frame always gives the same plane.
    """
    n = len(points)
    if n < 3:
        return None
    rng = np.random.default_rng(cfg.seed)
    up = np.array([0.0, 0.0, 1.0]) if up is None else np.asarray(up, float)
    sample = points[rng.choice(n, size=min(n, cfg.ransac_sample), replace=False)]
    cos_tilt = math.cos(math.radians(cfg.max_tilt_deg))
    best_n, best_d, best_count = None, 0.0, 0
    for _ in range(cfg.ransac_iterations):
        p = sample[rng.choice(len(sample), size=3, replace=False)]
        normal = np.cross(p[1] - p[0], p[2] - p[0])
        norm = np.linalg.norm(normal)
        if norm < 1e-9:
            continue
        normal /= norm
        if normal @ up < 0:
            normal = -normal
        if normal @ up < cos_tilt:
            continue
        d = float(normal @ p[0])
        count = int(np.count_nonzero(np.abs(sample @ normal - d) < cfg.plane_threshold))
        if count > best_count:
            best_n, best_d, best_count = normal, d, count
    if best_n is None:
        return None
    inl = np.abs(points @ best_n - best_d) < cfg.plane_threshold
    if np.count_nonzero(inl) < 3:
        return None
    q = points[inl]
    c = q.mean(axis=0)
    # the direction of least spread of the inliers is the refined normal
    _, _, vt = np.linalg.svd((q - c)[:: max(1, len(q) // 20000)], full_matrices=False)
    normal = vt[2] if vt[2] @ up > 0 else -vt[2]
    d = float(normal @ c)
    inl = np.abs(points @ normal - d) < cfg.plane_threshold
    return normal, d, inl


def colour_words(hsv: np.ndarray) -> np.ndarray:
    """A colour word index per HSV pixel (Nx3 uint8, OpenCV ranges) into `colour_vocabulary`."""
    h = hsv[:, 0].astype(np.float32)
    s = hsv[:, 1].astype(np.float32) / 255.0
    v = hsv[:, 2].astype(np.float32) / 255.0
    vocab = colour_vocabulary()
    out = np.empty(len(hsv), np.int32)
    hue_idx = np.searchsorted(np.array([b for b, _ in _HUE_WORDS]), h, side="right")
    hue_idx = np.minimum(hue_idx, len(_HUE_WORDS) - 1)
    hue_word = np.array([vocab.index(w) for _, w in _HUE_WORDS])[hue_idx]
    out[:] = hue_word
    # brown: a dark orange/red
    brown = (h >= 8) & (h < 25) & (v < 0.65) & (s > 0.3)
    out[brown] = vocab.index("brown")
    grey = s < 0.22
    out[grey & (v >= 0.72)] = vocab.index("white")
    out[grey & (v < 0.72)] = vocab.index("grey")
    out[v < 0.2] = vocab.index("black")
    return out


def colour_vocabulary() -> list[str]:
    """The colour words `colour_words` indexes, in a fixed order."""
    return sorted(COLOUR_WORDS)


def segment_tabletop(
    rgb: np.ndarray,
    depth: np.ndarray,
    intr: Intrinsics,
    cam_pos: np.ndarray,
    cam_rot: np.ndarray,
    cfg: TabletopConfig | None = None,
) -> TabletopScene:
    """Table plane and the clusters standing on it, in the world frame.

    `cam_rot` has the optical frame's axes (x right, y down, z forward) as columns in world.
    """
    cfg = cfg or TabletopConfig()
    rgb = np.asarray(rgb)
    depth = np.asarray(depth, np.float32)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.shape[:2] != depth.shape:
        raise ValueError(f"rgb {rgb.shape} and depth {depth.shape} must be HxWx3 and HxW")
    pc, valid = backproject(depth, intr, cfg.stride)
    if not np.any(valid):
        return TabletopScene(None, [], "no valid depth in the frame")
    rot = np.asarray(cam_rot, np.float32)
    world = pc @ rot.T + np.asarray(cam_pos, np.float32)
    # far background (a sky, a render's clear colour) never makes a table
    valid &= pc[..., 2] < 8.0
    fit = fit_plane_ransac(world[valid], cfg)
    if fit is None:
        return TabletopScene(None, [], "no table plane in the depth image")
    normal, offset, inl = fit
    inl_pts = world[valid][inl]
    x0, x1 = np.percentile(inl_pts[:, 0], [2, 98])
    y0, y1 = np.percentile(inl_pts[:, 1], [2, 98])
    plane = TablePlane(normal=normal, offset=offset, extent=(float(x0), float(y0), float(x1),
                       float(y1)), inliers=int(np.count_nonzero(inl)))
    height = np.where(valid, world @ normal.astype(np.float32) - np.float32(offset), -1.0)
    above = valid & (height > cfg.min_height) & (height < cfg.max_height)
    above &= (world[..., 0] >= x0) & (world[..., 0] <= x1)
    above &= (world[..., 1] >= y0) & (world[..., 1] <= y1)
    fg = above & ~_depth_edges(pc[..., 2], valid, cfg.depth_edge)
    n_lab, labels, stats, _ = cv2.connectedComponentsWithStats(fg.astype(np.uint8), connectivity=4)
    hsv_full = cv2.cvtColor(np.ascontiguousarray(rgb, np.uint8), cv2.COLOR_RGB2HSV)
    hsv = hsv_full[:: cfg.stride, :: cfg.stride]
    vocab = colour_vocabulary()
    clusters: list[TabletopCluster] = []
    for lab in range(1, n_lab):
        if stats[lab, cv2.CC_STAT_AREA] < cfg.min_pixels:
            continue
        m = labels == lab
        pts = world[m]
        h = height[m]
        if float(h.min()) > cfg.touch_distance:
            continue  # floats above the table: an arm, a hand, something held
        clusters.append(
            _describe(len(clusters), m, pts, h, hsv[m], plane, cfg, rgb.shape[:2], vocab)
        )
    msg = "" if clusters else "nothing stands on the table"
    return TabletopScene(plane, clusters, msg)


def _depth_edges(z: np.ndarray, valid: np.ndarray, thresh: float) -> np.ndarray:
    """Pixels next to a depth jump larger than `thresh` * depth (an occlusion boundary)."""
    zz = np.where(valid, z, np.float32(np.inf))
    edge = np.zeros(z.shape, bool)
    for dy, dx in ((0, 1), (1, 0)):
        a = zz[: z.shape[0] - dy, : z.shape[1] - dx]
        b = zz[dy:, dx:]
        with np.errstate(invalid="ignore"):
            jump = np.abs(a - b) > thresh * np.minimum(a, b)
        edge[: z.shape[0] - dy, : z.shape[1] - dx] |= jump
        edge[dy:, dx:] |= jump
    return edge


def _describe(
    index: int,
    m: np.ndarray,
    pts: np.ndarray,
    h: np.ndarray,
    hsv: np.ndarray,
    plane: TablePlane,
    cfg: TabletopConfig,
    full_shape: tuple[int, int],
    vocab: list[str],
) -> TabletopCluster:
    s = cfg.stride
    full = cv2.resize(m.astype(np.uint8), (full_shape[1], full_shape[0]) if s > 1 else
                      (m.shape[1], m.shape[0]), interpolation=cv2.INTER_NEAREST).astype(bool)
    ys, xs = np.nonzero(m)
    box_2d = (int(xs.min()) * s, int(ys.min()) * s, min(full_shape[1], (int(xs.max()) + 1) * s),
              min(full_shape[0], (int(ys.max()) + 1) * s))
    top = float(np.percentile(h, 98))
    xy = pts[:, :2].astype(np.float32)
    (cx, cy), (w, l_), ang = cv2.minAreaRect(xy)
    length, width = (w, l_) if w >= l_ else (l_, w)
    yaw = math.radians(ang if w >= l_ else ang + 90.0)
    yaw = (yaw + math.pi / 2) % math.pi - math.pi / 2
    lo = np.percentile(pts, 1, axis=0)
    hi = np.percentile(pts, 99, axis=0)
    mx, my = (lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2
    base_z = (plane.offset - plane.normal[0] * mx - plane.normal[1] * my) / plane.normal[2]
    centre = np.array([mx, my, base_z + top / 2])
    size = (float(hi[0] - lo[0]), float(hi[1] - lo[1]), top)
    words = colour_words(hsv)
    counts = np.bincount(words, minlength=len(vocab)) / max(1, len(words))
    shares = {vocab[i]: float(c) for i, c in enumerate(counts) if c > 0.05}
    best = int(np.argmax(counts))
    shape = _shape_class(length, width, top, h, pts, np.array([cx, cy]))
    return TabletopCluster(
        index=index, mask=full, box_2d=box_2d, centroid=centre, size=size,
        footprint=(float(length), float(width)), yaw=yaw, height=top, colour=vocab[best],
        colour_share=float(counts[best]), colours=shares, shape=shape, points=len(pts),
    )


def _shape_class(
    length: float, width: float, top: float, h: np.ndarray, pts: np.ndarray, centre: np.ndarray
) -> str:
    """A coarse shape word from the footprint and the height profile of the visible surface."""
    if max(length, width, top) > 0.2:
        return "large"
    if top < 0.03:
        return "flat"
    r = np.linalg.norm(pts[:, :2] - centre, axis=1)
    inner = h[r < 0.35 * max(width, 1e-3)]
    if top < 0.09 and width > 0.05 and len(inner) > 5 and np.median(inner) < 0.6 * top:
        return "container"  # the middle is lower than the rim: open at the top
    if length < 1.35 * width:
        return "round" if top > 0.06 else "boxy"
    return "boxy"
