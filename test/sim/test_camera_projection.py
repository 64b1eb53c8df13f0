"""Published intrinsics project the scene onto the rendered pixels, natively and letterboxed.

Conventions: sensor_msgs/CameraInfo (ros2/common_interfaces sensor_msgs/msg/CameraInfo.msg):
K projects points of the camera's optical frame (x right, y down, z forward) to the pixels of
the image it comes with; pixel centres at integer coordinates as in OpenCV. Letterboxing as
openpi's client does it (openpi packages/openpi-client/src/openpi_client/image_tools.py,
`resize_with_pad`). Depth as REP 118 (ros-infrastructure/rep rep-0118.rst): metres along z,
NaN (REP 117) where there is no reading.

The check is exact: the silhouette of a box under a pinhole camera is the convex hull of its
projected corners, and a renderer marks a pixel when its centre is inside. So every pixel
where the rendered segmentation and the predicted silhouette disagree must lie on the
predicted edge (natively within 0.1 px: float noise; letterboxed with nearest-neighbour
within 1 px). A principal point off by half a pixel already fails the native check.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mango.camera import CameraCalibration, Frame, FrameFitter
from mango.camera.calibration import Matrix
from mango.geometry import quat_to_mat
from mango.imaging import letterbox, resize_with_pad
from mango.oracle.world_state import EntityState
from mango.sim.env import SimEnv

SCENE = Path(__file__).resolve().parents[1] / "data" / "sim" / "camera_cubes.yaml"
CUBES = ("cube_a", "cube_b", "cube_c")
COLOUR_CHANNEL = {"cube_a": 0, "cube_b": 1, "cube_c": 2}  # red, green, blue


def _hull(points: np.ndarray) -> np.ndarray:
    """Convex hull (counter-clockwise in image coordinates, y down) by the monotone chain."""
    pts = sorted(map(tuple, points))

    def turn(o: tuple, a: tuple, b: tuple) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple] = []
    upper: list[tuple] = []
    for p in pts:
        while len(lower) >= 2 and turn(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and turn(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def _silhouette(poly: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixels whose centre is inside the polygon, and each pixel's distance to its edge."""
    v, u = np.mgrid[0:height, 0:width].astype(float)
    inside = np.ones((height, width), bool)
    dist = np.full((height, width), np.inf)
    for a, b in zip(poly, np.roll(poly, -1, axis=0), strict=True):
        e = b - a
        inside &= e[0] * (v - a[1]) - e[1] * (u - a[0]) >= 0
        t = np.clip(((u - a[0]) * e[0] + (v - a[1]) * e[1]) / (e @ e), 0, 1)
        dist = np.minimum(dist, np.hypot(u - a[0] - t * e[0], v - a[1] - t * e[1]))
    return inside, dist


def _corners(ent: EntityState) -> np.ndarray:
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    return np.asarray(ent.position) + (signs * np.asarray(ent.size) / 2) @ quat_to_mat(
        ent.orientation).T


def _project(k: list[float], points_optical: np.ndarray) -> np.ndarray:
    uvw = points_optical @ np.asarray(k, float).reshape(3, 3).T
    return uvw[:, :2] / uvw[:, 2:]


def _edge_error(k: list[float], points_optical: np.ndarray, labels: np.ndarray,
                label: int) -> tuple[int, float]:
    """(pixels of the entity, largest distance to the predicted edge of a disagreeing pixel)."""
    inside, dist = _silhouette(_hull(_project(k, points_optical)), *labels.shape)
    mask = labels == label
    wrong = inside != mask
    return int(mask.sum()), float(dist[wrong].max()) if wrong.any() else 0.0


@pytest.fixture(scope="module", params=[(320, 240), (224, 224)], ids=["320x240", "224x224"])
def env(request: pytest.FixtureRequest) -> SimEnv:
    e = SimEnv(SCENE, seed=0, cameras=("front", "wrist"), image_size=request.param)
    yield e
    e.close()


def _views(env: SimEnv) -> list[tuple[str, str, np.ndarray]]:
    """(camera, cube, cube corners in that camera's optical frame) for the cubes in view."""
    state = env.world_state()
    out = []
    for cam in env.cameras:
        pos, rot = env.camera_pose(cam)
        for cube in CUBES:
            out.append((cam, cube, (_corners(state.objects[cube]) - pos) @ rot))
    return out


def test_published_intrinsics_project_onto_the_rendered_pixels(env: SimEnv) -> None:
    ids = env.segmentation_ids
    checked, off_errors = 0, []
    for cam, cube, pts in _views(env):
        _, _, seg = env.render(cam, rgb=False, depth=False)
        info = env.camera_info(cam)
        assert (info.width, info.height) == (seg.shape[1], seg.shape[0])
        n, err = _edge_error(info.k, pts, seg, ids.index(cube))
        if n == 0:
            continue  # out of this camera's view
        checked += 1
        assert n > 20 and err <= 0.1, (cam, cube, n, err)
        # the principal point at W/2, H/2 (half a pixel off, the usual slip) is caught
        off = list(info.k)
        off[2], off[5] = info.width / 2, info.height / 2
        off_errors.append(_edge_error(off, pts, seg, ids.index(cube))[1])
    assert checked >= 4  # both cameras see cubes
    assert max(off_errors) > 0.3, off_errors


@pytest.mark.parametrize("target", [(224, 224), (256, 160), (200, 300)],
                         ids=["square", "wider", "taller"])
def test_letterboxed_frames_keep_projecting_with_the_fitted_intrinsics(
        env: SimEnv, target: tuple[int, int]) -> None:
    ids = env.segmentation_ids
    width, height = target
    checked = 0
    for cam, cube, pts in _views(env):
        rgb, depth, seg = env.render(cam)
        info = env.camera_info(cam)
        cal = CameraCalibration(image_width=info.width, image_height=info.height,
                                camera_matrix=Matrix(rows=3, cols=3, data=info.k))
        # the camera node's path: letterbox RGB, depth with nearest-neighbour, intrinsics along
        fitted = FrameFitter(width, height, cal).fit(Frame(rgb, depth))
        assert fitted.rgb.shape == (height, width, 3) and fitted.depth.shape == (height, width)
        fcal = fitted.calibration
        assert fcal is not None and (fcal.image_width, fcal.image_height) == target
        assert fcal.p[:3] == fcal.k[:3] and fcal.p[4:7] == fcal.k[3:6]
        labels = resize_with_pad(seg, height, width, interpolation="nearest", pad=-1)
        n, err = _edge_error(fcal.k, pts, labels, ids.index(cube))
        if n == 0:
            continue
        checked += 1
        assert err <= 1.0, (cam, cube, target, err)
        # depth stayed aligned: inside the cube (away from its edge) every depth pixel, back-
        # projected through the fitted K, lands on the cube (within 3 mm of its box: depth-buffer
        # precision; a pixel taken from beside the cube would be centimetres off)
        inside, dist = _silhouette(_hull(_project(fcal.k, pts)), height, width)
        core = inside & (dist > 1.5)
        vs, us = np.nonzero(core)
        k = np.asarray(fcal.k).reshape(3, 3)
        rays = np.linalg.solve(k, np.stack([us, vs, np.ones_like(us)]).astype(float))
        xyz = (rays * fitted.depth[vs, us]).T  # optical frame
        # the cube's box in the optical frame is not axis-aligned: test in the cube's frame
        centre = pts.mean(axis=0)
        axes = np.stack([pts[4] - pts[0], pts[2] - pts[0], pts[1] - pts[0]])
        half = np.linalg.norm(axes, axis=1) / 2
        local = (xyz - centre) @ (axes / np.linalg.norm(axes, axis=1)[:, None]).T
        assert len(xyz) and np.all(np.abs(local) <= half + 0.003), (cam, cube, target)
        # and so did colour: the cube's colour channel dominates there
        colours = fitted.rgb[vs, us].astype(int)
        ch = COLOUR_CHANNEL[cube]
        assert np.all(colours[:, ch] > np.delete(colours, ch, axis=1).max(axis=1))
    assert checked >= 4
    box = letterbox(env.height, env.width, height, width)
    pad = np.ones((height, width), bool)
    pad[box.top:box.top + box.inner_height, box.left:box.left + box.inner_width] = False
    if pad.any():
        assert np.isnan(fitted.depth[pad]).all() and fitted.rgb[pad].max() == 0
        assert np.isfinite(fitted.depth[~pad]).all()
