"""Spline derivatives for FollowJointTrajectory goals and their retiming to the FR3's limits.

The conventions come from ros2_controllers (joint_trajectory_controller/src/trajectory.cpp:
quintic segments between points with positions, velocities and accelerations; the first
segment starts from the current state, its acceleration zero-filled when the state has none;
the last point is held) and libfranka (include/franka/rate_limiting.h: FR3 joint acceleration
10 rad/s^2, jerk 5000 rad/s^3)."""

from __future__ import annotations

import numpy as np
import pytest

from mango.control import GoalRejected, JointTrajectory, load_robot
from mango.control.spline import QuinticPath, knot_derivatives
from mango.control.validation import fit_limits

FR3 = load_robot("fr3")
HOME = np.asarray(FR3.home, float)
RNG = np.random.default_rng(7)


def _reference_spline(t: np.ndarray, p: np.ndarray, v0: float, vn: float) -> np.ndarray:
    """The clamped cubic spline as 4 coefficients per segment, from the full linear system
    (interpolation, C1 and C2 at interior knots, end velocities) - independent of the
    tridiagonal velocity form under test."""
    n = len(t) - 1
    rows, rhs = [], []

    def row(seg: int, coeffs: list[float]) -> None:
        r = np.zeros(4 * n)
        r[4 * seg:4 * seg + 4] = coeffs
        rows.append(r)

    for i in range(n):
        h = t[i + 1] - t[i]
        row(i, [1, 0, 0, 0])
        rhs.append(p[i])
        row(i, [1, h, h**2, h**3])
        rhs.append(p[i + 1])
    for i in range(n - 1):
        h = t[i + 1] - t[i]
        r = np.zeros(4 * n)
        r[4 * i:4 * i + 4] = [0, 1, 2 * h, 3 * h**2]
        r[4 * i + 5] = -1
        rows.append(r)
        rhs.append(0.0)
        r = np.zeros(4 * n)
        r[4 * i:4 * i + 4] = [0, 0, 2, 6 * h]
        r[4 * i + 6] = -2
        rows.append(r)
        rhs.append(0.0)
    row(0, [0, 1, 0, 0])
    rhs.append(v0)
    h = t[-1] - t[-2]
    row(n - 1, [0, 1, 2 * h, 3 * h**2])
    rhs.append(vn)
    return np.linalg.solve(np.asarray(rows), np.asarray(rhs)).reshape(n, 4)


def test_knot_derivatives_are_the_clamped_c2_cubic_spline() -> None:
    t = np.concatenate([[0.0], np.cumsum(RNG.uniform(0.04, 0.12, 8))])
    p = RNG.normal(size=(9, 7)) * 0.2
    v0 = RNG.normal(size=7) * 0.3
    v, a = knot_derivatives(t, p, v0)
    for j in range(7):
        c = _reference_spline(t, p[:, j], v0[j], 0.0)
        np.testing.assert_allclose(v[:, j], [*c[1:, 1], 0.0], atol=1e-9)
        np.testing.assert_allclose(a[:-1, j], 2 * c[1:, 2], atol=1e-7)


def test_quintic_segments_match_the_controllers_boundary_states() -> None:
    """Each segment starts and ends at its knots' position, velocity and acceleration (what
    the controller's quintic interpolation guarantees), and a cubic's own (q, v, a) at both
    ends reproduce that cubic exactly."""
    t = np.array([0.0, 0.07, 0.15, 0.2])
    q, v, a = (RNG.normal(size=(4, 7)) for _ in range(3))
    path = QuinticPath(t, q, v, a)
    for k in range(3):
        h = t[k + 1] - t[k]
        c = path.c[:, k]
        s = np.array([h**i for i in range(6)])
        np.testing.assert_allclose(c.T @ s, q[k + 1], atol=1e-9)
        np.testing.assert_allclose(c.T @ (np.arange(6) * np.r_[0, s[:5]]), v[k + 1], atol=1e-8)
        np.testing.assert_allclose(
            c.T @ (np.arange(6) * np.arange(-1, 5) * np.r_[0, 0, s[:4]]), a[k + 1], atol=1e-6)
        np.testing.assert_allclose(c[:3].T, np.stack([q[k], v[k], a[k] / 2]).T)
    # a cubic x(s) = 1 + 2s - s^2 + 4s^3 on [0, 0.5]
    cub = np.polynomial.Polynomial([1, 2, -1, 4])
    ends = np.array([0.0, 0.5])
    qq = np.stack([cub(ends)] * 7, axis=1)
    vv = np.stack([cub.deriv()(ends)] * 7, axis=1)
    aa = np.stack([cub.deriv(2)(ends)] * 7, axis=1)
    np.testing.assert_allclose(QuinticPath(ends, qq, vv, aa).c[4:], 0.0, atol=1e-9)


def _chunk(speed: float, joint: int = 0, n: int = 8, rate: float = 15.0) -> JointTrajectory:
    times = np.arange(1, n + 1) / rate
    pos = HOME + np.outer(speed * times, np.eye(7)[joint])
    return JointTrajectory(FR3.joint_names, times, pos, np.full(n, 0.08))


def _finite_difference_limits(traj: JointTrajectory, start_v: np.ndarray) -> tuple[float, ...]:
    """Max |velocity|, |acceleration|, |jerk| of the played path, by finite differences of
    its positions on a 0.5 ms grid (not the analytic derivatives the retiming uses)."""
    t = np.concatenate([[0.0], traj.times])
    q = np.vstack([HOME, traj.positions])
    assert traj.velocities is not None and traj.accelerations is not None
    path = QuinticPath(t, q, np.vstack([start_v, traj.velocities]),
                       np.vstack([np.zeros(7), traj.accelerations]))
    dt = 5e-4
    x = np.array([path.position(s) for s in np.arange(0.0, t[-1], dt)])
    d1 = np.diff(x, axis=0) / dt
    d2 = np.diff(d1, axis=0) / dt
    d3 = np.diff(d2, axis=0) / dt
    return float(np.abs(d1).max()), float(np.abs(d2).max()), float(np.abs(d3).max())


def test_a_slow_chunk_keeps_its_times_and_ends_at_rest() -> None:
    traj = _chunk(0.05)
    out = fit_limits(traj, FR3, HOME)
    np.testing.assert_allclose(out.times, traj.times)
    assert out.velocities is not None and out.accelerations is not None
    assert out.velocities[3, 0] == pytest.approx(0.05, rel=0.05)
    assert np.all(out.velocities[-1] == 0) and np.all(out.accelerations[-1] == 0)
    np.testing.assert_array_equal(out.gripper, traj.gripper)


@pytest.mark.parametrize("speed", [0.5, 1.2, 2.0])
def test_a_fast_chunk_from_rest_is_slowed_at_its_ends_to_fit_the_fr3_limits(speed: float
                                                                            ) -> None:
    """An expert-like chunk, at rest at both ends within 67 ms segments, needs more than
    10 rad/s^2: its first and last segments get longer, the middle keeps the policy's pace."""
    traj = _chunk(speed)
    out = fit_limits(traj, FR3, HOME)
    h0, h = np.diff(np.r_[0.0, traj.times]), np.diff(np.r_[0.0, out.times])
    assert h[0] > h0[0] and h[-1] > h0[-1]
    if speed < 0.9 * FR3.vmax[0] * 0.75:  # near the velocity limit the spline's overshoot
        np.testing.assert_allclose(h[3:5], h0[3:5], rtol=0.02)  # slows the middle too
    vmax, amax, jmax = _finite_difference_limits(out, np.zeros(7))
    assert vmax <= FR3.vmax[0] and amax <= 10.0 * 1.01 and jmax <= 5000.0 * 1.01
    assert out.duration < traj.duration + 1.0


def test_the_measured_start_velocity_is_where_the_first_segment_starts() -> None:
    traj = _chunk(0.3)
    v0 = np.zeros(7)
    v0[0] = -0.4  # moving the other way when the goal arrives
    out = fit_limits(traj, FR3, HOME, start_v=v0)
    assert out.times[0] > traj.times[0]
    _, amax, _ = _finite_difference_limits(out, v0)
    assert amax <= 10.0 * 1.01


def test_what_cannot_fit_within_the_stretch_is_refused_with_the_reason() -> None:
    traj = _chunk(2.0, joint=3)
    with pytest.raises(GoalRejected) as exc:
        fit_limits(traj, FR3, HOME, max_slowdown=0.1)
    reason = exc.value.reason
    assert reason.startswith("point ") and "fr3_joint4" in reason
    assert "acceleration" in reason and "exceeds the limit 10 rad/s^2" in reason
    assert "slowed down by the 0.1 s allowed (max_slowdown)" in reason


def test_without_acceleration_limits_only_velocity_is_checked() -> None:
    # a robot file without acceleration/jerk limits (they are optional)
    sim = load_robot("fr3").model_copy(update={"acceleration_limits": None, "jerk_limits": None})
    traj = JointTrajectory(sim.joint_names, _chunk(1.2).times,
                           np.asarray(sim.home) + np.outer(1.2 * _chunk(1.2).times, np.eye(7)[0]))
    out = fit_limits(traj, sim, np.asarray(sim.home), max_slowdown=0.0)
    np.testing.assert_allclose(out.times, traj.times)
