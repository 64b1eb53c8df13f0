"""Point tracking: the joint error at each trajectory point's time, reported as it passes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mango.control.joint_state import Measured
from mango.control.trajectory import JointTrajectory

PointFeedback = Callable[[int, float], None]  # (point index, max joint error in rad or nan)


class PointTracker:
    """Records the joint error at each point's time and sends feedback once per point."""

    def __init__(self, traj: JointTrajectory, measured: Callable[[], Measured | None],
                 on_point: PointFeedback) -> None:
        self.traj, self.measured, self.on_point = traj, measured, on_point
        self.done = 0
        self.max_error = 0.0

    def update(self, t: float) -> None:
        """Report every point whose time has passed at trajectory time `t`."""
        last = self.traj.point_index(t)
        while self.done <= last:
            m = self.measured()
            err = float(np.max(np.abs(m.q - self.traj.positions[self.done]))) if m else np.nan
            self.max_error = max(self.max_error, err) if np.isfinite(err) else self.max_error
            self.on_point(self.done, err)
            self.done += 1
