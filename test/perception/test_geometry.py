"""Pixels <-> 3-D: the pinhole model of sensor_msgs/CameraInfo (ros2/common_interfaces
sensor_msgs/msg/CameraInfo.msg: K maps optical-frame points, x right, y down, z forward, to
pixels) and image_geometry's PinholeCameraModel (ros-perception/vision_opencv
image_geometry/image_geometry/cameramodels.py: projectPixelTo3dRay = ((u - cx) / fx,
(v - cy) / fy, 1)), boxes and footprint yaw."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mango.geometry import axis_angle_to_mat
from mango.perception.base import CameraPose, Intrinsics, PerceptionError
from mango.perception.geometry import (
    back_project,
    footprint_yaw,
    mask_box,
    point_box,
    project,
    to_world,
)

INTR = Intrinsics(width=64, height=48, fx=50.0, fy=55.0, cx=31.5, cy=23.5)


def test_back_projection_inverts_projection() -> None:
    rng = np.random.default_rng(0)
    depth = rng.uniform(0.3, 2.0, (48, 64)).astype(np.float32)
    depth[5, 7] = np.nan
    depth[6, 8] = 0.0  # no reading either
    pose = CameraPose(np.array([0.1, -0.2, 1.5]), axis_angle_to_mat([0.3, -2.0, 0.4]))
    pts = to_world(back_project(depth, INTR), pose)
    assert len(pts) == 64 * 48 - 2
    uv, z = project(pts, pose, INTR)
    rows, cols = np.nonzero(np.isfinite(depth) & (depth > 0))
    np.testing.assert_allclose(uv[:, 0], cols, atol=1e-6)
    np.testing.assert_allclose(uv[:, 1], rows, atol=1e-6)
    np.testing.assert_allclose(z, depth[rows, cols], rtol=1e-6)


def test_pixel_geometry_follows_k() -> None:
    """The principal point looks along +z; a pixel right of it is +x, below it +y."""
    depth = np.full((48, 64), 2.0, np.float32)
    mask = np.zeros((48, 64), bool)
    mask[23, 31] = mask[23, 41] = mask[33, 31] = True
    p = back_project(depth, INTR, mask)
    by_pixel = {(round(x * 50 / 2 + 31.5), round(y * 55 / 2 + 23.5)): (x, y) for x, y, _ in p}
    assert by_pixel[(31, 23)] == pytest.approx((-0.5 * 2 / 50, -0.5 * 2 / 55))
    assert by_pixel[(41, 23)][0] == pytest.approx(9.5 * 2 / 50)
    assert by_pixel[(31, 33)][1] == pytest.approx(9.5 * 2 / 55)


def test_depth_of_another_size_is_refused() -> None:
    with pytest.raises(ValueError, match="depth is 32x24, CameraInfo says 64x48"):
        back_project(np.ones((24, 32)), INTR)


def test_points_behind_the_camera_have_no_pixel() -> None:
    uv, z = project(np.array([[0.0, 0.0, -1.0]]), CameraPose(np.zeros(3), np.eye(3)), INTR)
    assert z[0] < 0 and np.isnan(uv).all()


def test_mask_box_is_exclusive_at_the_far_end() -> None:
    m = np.zeros((10, 20), bool)
    assert mask_box(m) is None
    m[2:5, 3:9] = True
    assert mask_box(m) == (3, 2, 9, 5)


@pytest.mark.parametrize("yaw_deg", [0.0, 30.0, 89.0, 90.0, 135.0, -60.0])
def test_footprint_yaw_is_the_major_axis_modulo_pi(yaw_deg: float) -> None:
    rng = np.random.default_rng(1)
    local = np.column_stack((rng.uniform(-0.1, 0.1, 2000), rng.uniform(-0.03, 0.03, 2000)))
    a = math.radians(yaw_deg)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    yaw = footprint_yaw(local @ rot.T + [0.4, -0.2])
    assert -math.pi / 2 < yaw <= math.pi / 2
    diff = (yaw - a + math.pi / 2) % math.pi - math.pi / 2
    assert abs(diff) < math.radians(2)


def test_round_footprint_has_yaw_zero() -> None:
    t = np.linspace(0, 2 * math.pi, 360, endpoint=False)
    assert footprint_yaw(np.column_stack((np.cos(t), np.sin(t)))) == 0.0
    assert footprint_yaw(np.zeros((2, 2))) == 0.0


def test_point_box_and_trim() -> None:
    pts = np.array([[0, 0, 0], [1, 2, 3], [0.5, 1, 1.5]], float)
    b = point_box(pts)
    assert b is not None and b.centroid == (0.5, 1.0, 1.5) and b.size == (1.0, 2.0, 3.0)
    assert b.points == 3
    assert point_box(np.zeros((0, 3))) is None
    cloud = np.vstack([np.random.default_rng(2).uniform(0, 1, (1000, 3)), [[50, 50, 50]]])
    trimmed = point_box(cloud, trim=0.01)
    assert trimmed is not None and max(trimmed.size) < 1.01


def test_intrinsics_from_k() -> None:
    i = Intrinsics.from_k(64, 48, INTR.k)
    assert i == INTR
    with pytest.raises(PerceptionError, match="not calibrated"):
        Intrinsics.from_k(64, 48, [0.0] * 9)
    with pytest.raises(PerceptionError, match="9 values"):
        Intrinsics.from_k(64, 48, [1.0] * 4)


def test_camera_pose_matrix_round_trip() -> None:
    t = np.eye(4)
    t[:3, :3] = axis_angle_to_mat([0.1, 0.2, 0.3])
    t[:3, 3] = [1, 2, 3]
    np.testing.assert_allclose(CameraPose.from_matrix(t).matrix(), t)
