"""Geometry every layer shares: quaternions, rotations, yaw, slerp, frames and boxes.

Quaternions are `[w, x, y, z]` everywhere (spec §3; MuJoCo uses the same order); ROS
messages carry named fields and are converted field by field where they are built or read
(`mango.ros`, the nodes). Rotation matrices are 3x3 with the frame's axes as columns
(MuJoCo's flat `xmat` is reshaped where it is read). Boxes are world axis-aligned
`(xmin, ymin, zmin, xmax, ymax, zmax)`; footprints are their xy part `(xmin, ymin, xmax, ymax)`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

IDENTITY = (1.0, 0.0, 0.0, 0.0)
Box = tuple[float, float, float, float, float, float]  # xmin, ymin, zmin, xmax, ymax, zmax
Footprint = tuple[float, float, float, float]  # xmin, ymin, xmax, ymax


# ------------------------------------------------------------------------------ quaternions


def quat_multiply(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """The Hamilton product a * b (rotate by b, then by a)."""
    aw, ax, ay, az = (float(v) for v in a)
    bw, bx, by, bz = (float(v) for v in b)
    return np.array([
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ])


def quat_conjugate(q: Sequence[float]) -> np.ndarray:
    """The inverse rotation of a unit quaternion."""
    w, x, y, z = (float(v) for v in q)
    return np.array([w, -x, -y, -z])


def quat_to_mat(q: Sequence[float]) -> np.ndarray:
    """Rotation matrix of a quaternion (normalised first)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def mat_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternion (w >= 0) of a rotation matrix."""
    t = np.trace(m)
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k]) * 2
        q = [0.0, 0.0, 0.0, 0.0]
        q[0] = (m[k, j] - m[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (m[j, i] + m[i, j]) / s
        q[1 + k] = (m[k, i] + m[i, k]) / s
    out = np.asarray(q, float)
    out /= np.linalg.norm(out)
    return -out if out[0] < 0 else out


def frame_quat(x: Sequence[float], y: Sequence[float], z: Sequence[float]) -> np.ndarray:
    """Quaternion of the frame whose axes (orthonormal, right-handed) are x, y, z."""
    return mat_to_quat(np.column_stack([x, y, z]))


def axis_angle_to_mat(rotvec: Sequence[float]) -> np.ndarray:
    """Rotation matrix of a rotation vector (axis times angle in radians; Rodrigues)."""
    v = np.asarray(rotvec, float)
    th = float(np.linalg.norm(v))
    if th < 1e-12:
        return np.eye(3)
    k = v / th
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(th) * kx + (1 - math.cos(th)) * kx @ kx


def mat_to_axis_angle(m: np.ndarray) -> np.ndarray:
    """Rotation vector (angle in [0, pi]) of a rotation matrix."""
    q = mat_to_quat(m)
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return np.zeros(3)
    return q[1:] / s * 2 * math.atan2(s, q[0])


def rotation_angle(qa: Sequence[float], qb: Sequence[float]) -> float:
    """Angle (radians) of the rotation taking unit quaternion qb to qa."""
    d = abs(float(np.dot(np.asarray(qa, float), np.asarray(qb, float))))
    return 2.0 * math.acos(min(1.0, d))


def slerp(q0: np.ndarray, q1: np.ndarray, s: float) -> np.ndarray:
    """Spherical interpolation from q0 (s=0) to q1 (s=1) the short way round."""
    d = float(np.dot(q0, q1))
    if d < 0:
        q1, d = -q1, -d
    if d > 0.9995:  # nearly equal: normalised lerp avoids dividing by sin(~0)
        out = q0 + s * (q1 - q0)
        return out / np.linalg.norm(out)
    th = math.acos(d)
    return (math.sin((1 - s) * th) * q0 + math.sin(s * th) * q1) / math.sin(th)


# -------------------------------------------------------------------------------------- yaw


def yaw_quat(yaw: float) -> list[float]:
    """Quaternion of a rotation by `yaw` radians about world z."""
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def quat_yaw(q: Sequence[float] | None) -> float:
    """Heading (radians about z) of an orientation; no orientation means 0."""
    if q is None:
        return 0.0
    w, x, y, z = q
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def axis_yaw(q: Sequence[float], axis: int) -> float:
    """Heading of one axis (0 x, 1 y, 2 z) of the frame `q` (its xy projection)."""
    a = quat_to_mat(q)[:, axis]
    return math.atan2(a[1], a[0])


def nearest_angle(a: float, ref: float, period: float) -> float:
    """The angle a + k*period closest to ref (a symmetric grip is the same every period)."""
    return a + period * round((ref - a) / period)


def yaw_matrix_2d(yaw: float) -> np.ndarray:
    """2x2 rotation by `yaw` in the xy plane."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s], [s, c]])


# ----------------------------------------------------------------------------------- frames


def to_world(pos: np.ndarray, rot: np.ndarray, local: Sequence[float]) -> np.ndarray:
    """A point given in the frame (pos, rot) in world coordinates."""
    return pos + rot @ np.asarray(local, float)


def to_local(pos: np.ndarray, rot: np.ndarray, world: Sequence[float]) -> np.ndarray:
    """A world point in the coordinates of the frame (pos, rot)."""
    return rot.T @ (np.asarray(world, float) - pos)


# ------------------------------------------------------------------------------------ boxes


def footprint(position: Sequence[float], size: Sequence[float] | None,
              q: Sequence[float] | None) -> Footprint:
    """World xy box of a size box turned by its yaw only (tilt ignored): where it stands."""
    x, y = position[0], position[1]
    sx, sy, _ = size or (0.0, 0.0, 0.0)
    a = quat_yaw(q)
    hx = abs(math.cos(a)) * sx / 2 + abs(math.sin(a)) * sy / 2
    hy = abs(math.sin(a)) * sx / 2 + abs(math.cos(a)) * sy / 2
    return (x - hx, y - hy, x + hx, y + hy)


def footprint_box(position: Sequence[float], size: Sequence[float] | None,
                  q: Sequence[float] | None) -> Box:
    """The `footprint` with the size box's vertical extent."""
    x0, y0, x1, y1 = footprint(position, size, q)
    z, hz = position[2], (size or (0.0, 0.0, 0.0))[2] / 2
    return (x0, y0, z - hz, x1, y1, z + hz)


def rotated_half_extents(
    q: Sequence[float], hx: float, hy: float, hz: float
) -> tuple[float, float, float]:
    """Half extents of the world axis-aligned box around a box of half extents hx, hy, hz
    turned by unit quaternion q (full 3-D rotation)."""
    w, x, y, z = q
    r00, r01, r02 = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    r10, r11, r12 = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    r20, r21, r22 = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    return (
        abs(r00) * hx + abs(r01) * hy + abs(r02) * hz,
        abs(r10) * hx + abs(r11) * hy + abs(r12) * hz,
        abs(r20) * hx + abs(r21) * hy + abs(r22) * hz,
    )


def box_gap(a: Sequence[float], b: Sequence[float]) -> float:
    """Euclidean distance between two boxes (0 when they touch or overlap)."""
    dx = max(b[0] - a[3], a[0] - b[3], 0.0)
    dy = max(b[1] - a[4], a[1] - b[4], 0.0)
    dz = max(b[2] - a[5], a[2] - b[5], 0.0)
    return math.sqrt(dx * dx + dy * dy + dz * dz)
