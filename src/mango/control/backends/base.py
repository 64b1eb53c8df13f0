"""The one protocol every arm backend implements; the control node and `ArmController` know
only this."""

from __future__ import annotations

from typing import Protocol

from mango.control.goals import GoalRun, Outcome
from mango.control.joint_state import Measured
from mango.control.tracking import PointFeedback
from mango.control.trajectory import JointTrajectory


class ControlBackend(Protocol):
    """Executes trajectories on one kind of arm and reports its measured state."""

    def measured(self) -> Measured | None:
        """The latest measured joint state, or None before the first."""
        ...

    def prepare(self, traj: JointTrajectory, start: Measured) -> JointTrajectory:
        """`traj` as this backend will play it from `start` (retimed, with derivatives), or
        `GoalRejected` when it cannot be played within the arm's limits."""
        ...

    def execute(self, traj: JointTrajectory, run: GoalRun, on_point: PointFeedback) -> Outcome:
        """Run `traj` from the measured state until it ends, fails, or `run.stop` is set
        (then hold position and return a stopped outcome with `run.reason`)."""
        ...

    def hold(self) -> None:
        """Stop any motion and hold the current position."""
        ...
