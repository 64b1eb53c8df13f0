"""mango.geometry: quaternion conventions, round trips, known rotations, slerp, yaw, boxes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mango.geometry import (
    IDENTITY,
    axis_angle_to_mat,
    axis_yaw,
    box_gap,
    footprint,
    footprint_box,
    frame_quat,
    mat_to_axis_angle,
    mat_to_quat,
    nearest_angle,
    quat_conjugate,
    quat_multiply,
    quat_to_mat,
    quat_yaw,
    rotated_half_extents,
    rotation_angle,
    slerp,
    to_local,
    to_world,
    yaw_matrix_2d,
    yaw_quat,
)

RNG = np.random.default_rng(7)
RANDOM_QUATS = [q / np.linalg.norm(q) for q in RNG.normal(size=(200, 4))]
S = math.sqrt(0.5)


def _same_rotation(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, atol=1e-12) or np.allclose(a, -b, atol=1e-12))


@pytest.mark.parametrize(
    ("quat", "matrix"),
    [
        (IDENTITY, np.eye(3)),
        ((S, 0.0, 0.0, S), [[0, -1, 0], [1, 0, 0], [0, 0, 1]]),  # +90 deg about z
        ((S, S, 0.0, 0.0), [[1, 0, 0], [0, 0, -1], [0, 1, 0]]),  # +90 deg about x
        ((S, 0.0, S, 0.0), [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]),  # +90 deg about y
        ((0.0, 1.0, 0.0, 0.0), [[1, 0, 0], [0, -1, 0], [0, 0, -1]]),  # 180 deg about x
    ],
)
def test_known_rotations_in_wxyz_order(quat: tuple[float, ...], matrix: list) -> None:
    assert np.allclose(quat_to_mat(quat), matrix, atol=1e-12)
    assert _same_rotation(mat_to_quat(np.asarray(matrix, float)), np.asarray(quat))


def test_quaternion_matrix_round_trip_keeps_w_non_negative() -> None:
    for q in RANDOM_QUATS:
        back = mat_to_quat(quat_to_mat(q))
        assert back[0] >= 0 and _same_rotation(back, q)
        assert np.isclose(np.linalg.norm(back), 1.0)
    # every branch of the conversion (trace <= 0 with x, y or z largest)
    for q in [(0.1, 0.9, 0.3, 0.2), (0.1, 0.2, 0.9, 0.3), (0.1, 0.3, 0.2, 0.9)]:
        u = np.asarray(q) / np.linalg.norm(q)
        assert np.allclose(mat_to_quat(quat_to_mat(u)), u, atol=1e-12)


def test_quat_to_mat_normalises_and_is_orthonormal() -> None:
    m = quat_to_mat([2.0, 0.0, 0.0, 0.0])
    assert np.allclose(m, np.eye(3))
    for q in RANDOM_QUATS[:20]:
        r = quat_to_mat(q)
        assert np.allclose(r @ r.T, np.eye(3), atol=1e-12)
        assert np.isclose(np.linalg.det(r), 1.0)


def test_multiply_composes_like_matrices_and_conjugate_inverts() -> None:
    for a, b in zip(RANDOM_QUATS[:50], RANDOM_QUATS[50:100], strict=True):
        assert np.allclose(quat_to_mat(quat_multiply(a, b)), quat_to_mat(a) @ quat_to_mat(b),
                           atol=1e-12)
        assert np.allclose(quat_multiply(a, quat_conjugate(a)), IDENTITY, atol=1e-12)
    # two quarter turns about z make a half turn
    assert np.allclose(quat_multiply((S, 0, 0, S), (S, 0, 0, S)), (0, 0, 0, 1), atol=1e-12)


def test_axis_angle_round_trip_and_known_values() -> None:
    assert np.allclose(axis_angle_to_mat([0, 0, math.pi / 2]), quat_to_mat((S, 0, 0, S)))
    assert np.allclose(axis_angle_to_mat([0.0, 0.0, 0.0]), np.eye(3))
    assert np.allclose(mat_to_axis_angle(np.eye(3)), 0.0)
    for v in RNG.normal(size=(50, 3)):
        v = v / np.linalg.norm(v) * RNG.uniform(0.01, math.pi - 0.01)
        assert np.allclose(mat_to_axis_angle(axis_angle_to_mat(v)), v, atol=1e-9)


def test_frame_quat_from_axes() -> None:
    # x forward, fingers (y) to the left, z down: 180 deg about x
    q = frame_quat([1, 0, 0], [0, -1, 0], [0, 0, -1])
    assert _same_rotation(q, np.array([0.0, 1.0, 0.0, 0.0]))


def test_rotation_angle() -> None:
    assert rotation_angle(IDENTITY, IDENTITY) == 0.0
    assert math.isclose(rotation_angle((S, 0, 0, S), IDENTITY), math.pi / 2)
    # q and -q are the same rotation
    assert math.isclose(rotation_angle((-S, 0, 0, -S), (S, 0, 0, S)), 0.0, abs_tol=1e-7)


def test_slerp_endpoints_midpoint_and_short_way() -> None:
    q0, q1 = np.array(IDENTITY), np.array([S, 0.0, 0.0, S])
    assert np.allclose(slerp(q0, q1, 0.0), q0)
    assert np.allclose(slerp(q0, q1, 1.0), q1)
    mid = slerp(q0, q1, 0.5)
    assert np.allclose(mid, yaw_quat(math.pi / 4))
    assert math.isclose(np.linalg.norm(mid), 1.0)
    # the other sign of q1 is the same rotation: still 45 deg, not the long way round
    assert _same_rotation(slerp(q0, -q1, 0.5), np.asarray(yaw_quat(math.pi / 4)))
    # nearly equal quaternions take the normalised-lerp branch
    near = np.asarray(yaw_quat(1e-4))
    assert np.allclose(slerp(q0, near, 0.5), yaw_quat(5e-5))


@pytest.mark.parametrize("yaw", [0.0, 0.3, -1.2, math.pi / 2, 3.0])
def test_yaw_of_known_quaternions(yaw: float) -> None:
    q = yaw_quat(yaw)
    assert math.isclose(quat_yaw(q), yaw, abs_tol=1e-12)
    assert math.isclose(axis_yaw(q, 0), yaw, abs_tol=1e-12)  # the frame's x axis heading
    assert math.isclose(axis_yaw(q, 1), math.atan2(math.cos(yaw), -math.sin(yaw)),
                        abs_tol=1e-12)
    assert np.allclose(yaw_matrix_2d(yaw), quat_to_mat(q)[:2, :2])
    # tilt does not change the heading: yaw 0.3 then 180 deg about the new x axis
    tilted = quat_multiply(yaw_quat(0.3), (0.0, 1.0, 0.0, 0.0))
    assert math.isclose(quat_yaw(tilted), 0.3, abs_tol=1e-12)
    assert quat_yaw(None) == 0.0


def test_nearest_angle() -> None:
    assert math.isclose(nearest_angle(0.1, 3.0, math.pi), 0.1 + math.pi)
    assert math.isclose(nearest_angle(0.1, -3.0, math.pi), 0.1 - math.pi)
    assert nearest_angle(0.4, 0.5, math.pi / 2) == 0.4


def test_frames_round_trip() -> None:
    pos, rot = np.array([0.1, -0.2, 0.9]), quat_to_mat(RANDOM_QUATS[0])
    local = np.array([0.03, 0.2, -0.05])
    world = to_world(pos, rot, local)
    assert np.allclose(to_local(pos, rot, world), local)
    assert np.allclose(to_world(pos, np.eye(3), local), pos + local)


def test_footprints_and_boxes() -> None:
    # a 0.2 x 0.1 box turned 90 deg stands 0.1 wide in x, 0.2 in y
    fp = footprint((1.0, 2.0, 0.5), (0.2, 0.1, 0.3), yaw_quat(math.pi / 2))
    assert np.allclose(fp, (0.95, 1.9, 1.05, 2.1))
    assert np.allclose(footprint((1.0, 2.0, 0.5), (0.2, 0.1, 0.3), None), (0.9, 1.95, 1.1, 2.05))
    assert footprint((1.0, 2.0, 0.5), None, None) == (1.0, 2.0, 1.0, 2.0)
    box = footprint_box((1.0, 2.0, 0.5), (0.2, 0.1, 0.3), yaw_quat(math.pi / 2))
    assert np.allclose(box, (0.95, 1.9, 0.35, 1.05, 2.1, 0.65))
    # the full-rotation box agrees with the footprint for a pure yaw
    hx, hy, hz = rotated_half_extents(yaw_quat(math.pi / 2), 0.1, 0.05, 0.15)
    assert np.allclose((hx, hy, hz), (0.05, 0.1, 0.15))
    # tipped over 90 deg about x: height and depth swap
    assert np.allclose(rotated_half_extents((S, S, 0, 0), 0.1, 0.05, 0.15), (0.1, 0.15, 0.05))


def test_box_gap() -> None:
    a = (0.0, 0.0, 0.0, 1.0, 1.0, 1.0)
    assert box_gap(a, (0.5, 0.5, 0.5, 2.0, 2.0, 2.0)) == 0.0  # overlapping
    assert box_gap(a, (1.0, 0.0, 0.0, 2.0, 1.0, 1.0)) == 0.0  # touching
    assert math.isclose(box_gap(a, (4.0, 5.0, 0.0, 5.0, 6.0, 1.0)), 5.0)  # 3-4-5 apart
    assert box_gap(a, (4.0, 5.0, 0.0, 5.0, 6.0, 1.0)) == box_gap((4.0, 5.0, 0.0, 5.0, 6.0, 1.0), a)
