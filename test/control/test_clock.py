"""The sim-clock estimate: trajectory time follows the simulator's stamps, is smooth between
bursts of joint states, never goes back and never runs ahead of the wall clock (times the
simulator's real-time factor, where it was told one)."""

from __future__ import annotations

import numpy as np
import pytest

from mango.control import Measured
from mango.control.clock import EXTRAPOLATE, SimClock, sim_time

PERIOD = 0.01
Q = np.zeros(7)


def _m(stamp: float, received: float) -> Measured:
    return Measured(Q, None, received, stamp)


def test_sim_time_extrapolates_a_stamp_by_the_wall_time_since_up_to_a_limit() -> None:
    m = _m(50.0, 10.0)
    assert sim_time(m, 10.03) == pytest.approx(50.03)
    assert sim_time(m, 11.0) == pytest.approx(50.0 + EXTRAPOLATE)


def test_starts_one_period_ahead() -> None:
    assert SimClock(_m(5.0, 1.0), 1.0, PERIOD).t == PERIOD


def test_a_simulator_at_real_time_gives_wall_time() -> None:
    clock = SimClock(_m(5.0, 1.0), 1.0, PERIOD)
    for k in range(1, 50):
        t = clock.advance(_m(5.0 + k * PERIOD, 1.0 + k * PERIOD), 1.0 + k * PERIOD)
        assert t == pytest.approx(k * PERIOD + PERIOD)


def test_a_slow_simulator_holds_trajectory_time_back() -> None:
    clock = SimClock(_m(5.0, 1.0), 1.0, PERIOD)
    for k in range(1, 200):  # half real time
        now = 1.0 + k * PERIOD
        t = clock.advance(_m(5.0 + k * PERIOD / 2, now), now)
    assert t == pytest.approx(199 * PERIOD / 2 + PERIOD)


def _twice_real_time(clock: SimClock) -> float:
    for k in range(1, 200):  # a state every 5 ms of wall time, 10 ms of sim time apart
        now = 1.0 + k * PERIOD / 2
        t = clock.advance(_m(5.0 + k * PERIOD, now), now)
    return t


def test_a_fast_simulator_is_followed_up_to_the_factor_it_was_given() -> None:
    assert _twice_real_time(SimClock(_m(5.0, 1.0), 1.0, PERIOD, speed=2.0)) == pytest.approx(
        199 * PERIOD + PERIOD)
    # told nothing, the clock keeps to real time: a backlog of states taken late must not
    # jump a trajectory ahead
    assert _twice_real_time(SimClock(_m(5.0, 1.0), 1.0, PERIOD)) == pytest.approx(
        199 * PERIOD / 2 + PERIOD)


def test_a_burst_after_a_gap_is_smooth() -> None:
    """No joint state for 50 ms: time keeps moving with the wall clock meanwhile."""
    clock = SimClock(_m(5.0, 1.0), 1.0, PERIOD)
    ts = [clock.advance(_m(5.0, 1.0), 1.0 + k * PERIOD) for k in range(1, 6)]
    assert np.allclose(np.diff(ts), PERIOD)


def test_never_goes_back_and_never_ahead_of_the_wall_clock() -> None:
    rng = np.random.default_rng(0)
    t0, clock = 1.0, SimClock(_m(5.0, 1.0), 1.0, PERIOD)
    prev, now, stamp = clock.t, t0, 5.0
    for _ in range(2000):
        now += rng.uniform(0.0, 0.03)
        stamp += rng.uniform(-0.02, 0.05)  # jitter, resets, a simulator running fast
        received = now - rng.uniform(0.0, 0.2)
        t = clock.advance(_m(stamp, received), now)
        assert t >= prev
        assert t <= now - t0 + PERIOD + 1e-12
        prev = t
