"""Trajectory time on the simulator's clock, estimated from joint-state stamps.

A simulator that falls behind real time (a loaded machine) must see every trajectory at its
own speed: targets timed by the wall clock run ahead and jerk the arm (and shake a grasped
object loose). Joint states arrive unevenly (bursts after a busy moment), so the simulator's
time now is estimated from the latest one plus the wall time since it came, up to
`EXTRAPOLATE` s: smooth while the simulator keeps real time, held back by it when it does
not. The estimate never goes back and never runs ahead of the wall clock times `speed`, the
simulator's real-time factor (1 unless it was told to run faster): a backlog of joint states
taken late starts a trajectory from an old stamp, and the next fresh one would otherwise
jump it ahead by the backlog.
"""

from __future__ import annotations

from mango.control.joint_state import Measured

EXTRAPOLATE = 0.1  # s of wall time a joint state's stamp is carried forward, at most


def sim_time(m: Measured, now: float) -> float:
    """The simulator's time at wall time `now` (monotonic), from joint state `m`."""
    return m.stamp + min(now - m.t, EXTRAPOLATE)


class SimClock:
    """Time into a trajectory started at wall time `t0` from joint state `start`.

    `t` is where to sample the trajectory next: one `period` ahead of the simulator's
    estimated time, since a target is for the simulator's next step.
    """

    def __init__(self, start: Measured, t0: float, period: float, speed: float = 1.0) -> None:
        self.period = period
        self.speed = speed
        self._t0 = t0
        self._sim0 = sim_time(start, t0)
        self.t = period

    def advance(self, m: Measured, now: float) -> float:
        """Move on to the latest joint state `m` at wall time `now`; returns the new `t`."""
        self.t = max(self.t, min(sim_time(m, now) - self._sim0,
                                    (now - self._t0) * self.speed) + self.period)
        return self.t
