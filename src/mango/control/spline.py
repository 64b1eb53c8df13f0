"""Knot velocities and accelerations for FollowJointTrajectory goals, and the motion the joint
trajectory controller plays from them.

ros2_controllers' joint trajectory controller interpolates linearly between points that carry
positions only (velocity steps at every point: 15 per second for a policy chunk), cubically
when they carry velocities and quintically when they carry accelerations too; its first
segment starts from the arm's current position and velocity with zero acceleration, and after
the last point it holds that point. So a goal here gets, at every point, the velocity and
acceleration of a C2 cubic spline through the measured start and the points (start velocity
measured, end velocity 0: a chunk is not known to be followed by another), with the last
acceleration 0 so the end joins the controller's hold smoothly; `QuinticPath` is then
exactly what the controller samples, and the limits are checked on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def knot_derivatives(times: np.ndarray, positions: np.ndarray,
                     v0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Velocities and accelerations (N x J) at each point of a C2 cubic spline through
    (0, q0), (times[k], positions[k]), where positions[0] is q0 at t = 0 (N + 1 rows in all),
    clamped to velocity `v0` at the start and 0 at the end; the returned rows are the points
    after the start, the last acceleration set to 0."""
    t = np.asarray(times, float)
    p = np.asarray(positions, float)
    n = len(t) - 1  # segments
    h = np.diff(t)
    slope = np.diff(p, axis=0) / h[:, None]
    v = np.zeros_like(p)
    v[0] = v0
    if n > 1:
        # continuity of acceleration at the interior knots: a tridiagonal system in their
        # velocities (h[i] v[i-1] + 2 (h[i-1] + h[i]) v[i] + h[i-1] v[i+1] = ...)
        m = n - 1
        a = np.zeros((m, m))
        rhs = 3.0 * (h[1:, None] * slope[:-1] + h[:-1, None] * slope[1:])
        for i in range(m):
            a[i, i] = 2.0 * (h[i] + h[i + 1])
            if i > 0:
                a[i, i - 1] = h[i + 1]
            if i < m - 1:
                a[i, i + 1] = h[i]
        rhs[0] -= h[1] * v[0]
        v[1:n] = np.linalg.solve(a, rhs)
    # acceleration at the start of each segment (the cubic Hermite segment's second derivative)
    acc = np.zeros_like(p)
    acc[:n] = (6.0 * slope - 4.0 * v[:n] - 2.0 * v[1:]) / h[:, None]
    return v[1:], acc[1:]


@dataclass(frozen=True)
class Extreme:
    """The largest |derivative| / limit found on a path: where, and how large."""

    ratio: float
    segment: int  # 0 is the segment from the measured start to point 0
    joint: int
    value: float  # the signed derivative there
    limit: float


class QuinticPath:
    """Quintic Hermite segments through (t, q, v, a) knots, as the joint trajectory
    controller builds them; sampled at `rate_hz` (its update rate) for the limit checks."""

    def __init__(self, times: np.ndarray, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> None:
        self.times = np.asarray(times, float)
        h = np.diff(self.times)[:, None]
        q0, q1, v0, v1, a0, a1 = q[:-1], q[1:], v[:-1], v[1:], a[:-1], a[1:]
        d = q1 - q0
        # coefficients of q(s) = sum c_k s^k on each segment, s in [0, h]
        self.c = np.stack([
            q0, v0, a0 / 2.0,
            (20 * d - (8 * v1 + 12 * v0) * h - (3 * a0 - a1) * h**2) / (2 * h**3),
            (-30 * d + (14 * v1 + 16 * v0) * h + (3 * a0 - 2 * a1) * h**2) / (2 * h**4),
            (12 * d - 6 * (v1 + v0) * h + (a1 - a0) * h**2) / (2 * h**5),
        ])  # 6 x segments x joints

    def derivatives(self, rate_hz: float = 1000.0) -> tuple[np.ndarray, list[np.ndarray]]:
        """Segment index per sample and [velocity, acceleration, jerk] at each (S x J), on
        a grid of 1 / rate_hz plus every knot."""
        grid = np.arange(0.0, self.times[-1], 1.0 / rate_hz)
        ts = np.unique(np.concatenate([grid, self.times]))
        seg = np.clip(np.searchsorted(self.times, ts, side="right") - 1, 0, len(self.times) - 2)
        s = (ts - self.times[seg])[:, None]
        c = self.c[:, seg]  # 6 x S x J
        vel = c[1] + s * (2 * c[2] + s * (3 * c[3] + s * (4 * c[4] + s * 5 * c[5])))
        acc = 2 * c[2] + s * (6 * c[3] + s * (12 * c[4] + s * 20 * c[5]))
        jerk = 6 * c[3] + s * (24 * c[4] + s * 60 * c[5])
        return seg, [vel, acc, jerk]

    def position(self, t: float) -> np.ndarray:
        k = int(np.clip(np.searchsorted(self.times, t, side="right") - 1, 0,
                        len(self.times) - 2))
        s = t - self.times[k]
        return sum(self.c[i, k] * s**i for i in range(6))

    def worst(self, limits: list[np.ndarray],
              rate_hz: float = 1000.0) -> tuple[list[Extreme], np.ndarray]:
        """Per derivative (velocity, acceleration, jerk), the sample with the largest
        |value| / limit; and per segment the largest ratio of each (3 x segments)."""
        seg, ders = self.derivatives(rate_hz)
        out, per_seg = [], np.zeros((3, len(self.times) - 1))
        for i, (x, lim) in enumerate(zip(ders, limits, strict=True)):
            r = np.abs(x) / lim
            k, j = np.unravel_index(int(np.argmax(r)), r.shape)
            out.append(Extreme(float(r[k, j]), int(seg[k]), int(j), float(x[k, j]),
                               float(lim[j])))
            np.maximum.at(per_seg[i], seg, np.max(r, axis=1))
        return out, per_seg
