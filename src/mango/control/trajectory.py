"""Joint trajectories: what policy chunks become, what goals are validated into, what the
control loop samples.

A policy emits an H x 8 chunk (7 joint targets + gripper width) meant to be played at its rate;
`chunk_to_trajectory` gives each row its time, and `JointTrajectory.sample` interpolates
between rows so a faster control loop moves smoothly from the measured start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JointTrajectory:
    """Timed joint targets (N x 7, in `joint_names` order), optional gripper widths (N) and,
    once retimed for a spline-following controller (`validation.fit_limits`), the velocities
    and accelerations at each point (N x 7)."""

    joint_names: tuple[str, ...]
    times: np.ndarray  # seconds from the start, strictly increasing, first > 0
    positions: np.ndarray
    gripper: np.ndarray | None = None
    velocities: np.ndarray | None = None
    accelerations: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.times)
        if self.positions.shape != (n, len(self.joint_names)):
            raise ValueError(f"positions must be {n} x {len(self.joint_names)}, "
                             f"got {self.positions.shape}")
        if self.gripper is not None and self.gripper.shape != (n,):
            raise ValueError(f"gripper widths must have {n} values, got {self.gripper.shape}")
        for name in ("velocities", "accelerations"):
            x = getattr(self, name)
            if x is not None and x.shape != self.positions.shape:
                raise ValueError(f"{name} must be {n} x {len(self.joint_names)}, got {x.shape}")

    @property
    def duration(self) -> float:
        return float(self.times[-1]) if len(self.times) else 0.0

    def __len__(self) -> int:
        return len(self.times)

    def sample(self, t: float, start_q: np.ndarray,
               start_width: float | None) -> tuple[np.ndarray, float | None]:
        """Targets at time t: linear between points, from the start state at t = 0."""
        times = np.concatenate([[0.0], self.times])
        i = int(np.searchsorted(times, t, side="right"))
        if i >= len(times):
            a, b, f = len(times) - 1, len(times) - 1, 0.0
        else:
            a, b = i - 1, i
            f = (t - times[a]) / (times[b] - times[a])
        qs = np.vstack([start_q, self.positions])
        q = qs[a] + f * (qs[b] - qs[a])
        if self.gripper is None:
            return q, None
        w0 = self.gripper[0] if start_width is None else start_width
        ws = np.concatenate([[w0], self.gripper])
        return q, float(ws[a] + f * (ws[b] - ws[a]))

    def point_index(self, t: float) -> int:
        """Index of the last point whose time has passed (-1 before the first)."""
        return int(np.searchsorted(self.times, t, side="right")) - 1


def chunk_to_trajectory(chunk: np.ndarray | Sequence[Sequence[float]], rate_hz: float,
                        joint_names: Sequence[str], start_q: np.ndarray | None = None,
                        velocity_limits: np.ndarray | None = None,
                        fraction: float = 0.9) -> JointTrajectory:
    """An H x 8 chunk played at `rate_hz`: row k is reached at (k + 1) / rate.

    With `start_q` and `velocity_limits`, a segment that would move a joint faster than
    `fraction` of its limit is slowed down instead (policies do not know the robot's limits;
    the control node rejects what exceeds them).
    """
    a = np.asarray(chunk, float)
    if a.ndim != 2 or a.shape[1] != 8:
        raise ValueError(f"an action chunk must be H x 8 (7 joints + gripper), got {a.shape}")
    if rate_hz <= 0:
        raise ValueError("the policy rate must be positive")
    dt = np.full(len(a), 1.0 / rate_hz)
    if start_q is not None and velocity_limits is not None:
        prev = np.vstack([np.asarray(start_q, float), a[:-1, :7]])
        needed = np.max(np.abs(a[:, :7] - prev) / (fraction * np.asarray(velocity_limits)),
                        axis=1)
        dt = np.maximum(dt, needed)
    return JointTrajectory(tuple(joint_names), np.cumsum(dt), a[:, :7].copy(), a[:, 7].copy())
