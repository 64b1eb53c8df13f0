"""Motions -> joint waypoints -> the 8-D chunks a VLA emits.

Primitives plan with the real FR3's kinematics and the IK ladder (`FR3Kinematics`, no
simulator) in the world frame of the robot's base, and reuse the expert's `PlannedArm` for
the Cartesian lines and holds (eased straight lines, a joint-jump guard, width ramps): the
adapter below gives it the interface of the sim's IK solver.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mango.control.ik import IKSolution
from mango.control.kinematics import FR3Kinematics
from mango.geometry import mat_to_quat, quat_to_mat

CHUNK_ROWS = 16  # rows per chunk: about one second at the sim's 15 Hz control rate


class WorldFrameIK:
    """`FR3Kinematics` with the base placed in the world: FK and the ladder in world terms,
    with each answer capped to `max_jump` from its seed (the path must stay on one branch)."""

    def __init__(self, kin: FR3Kinematics, base_pos: Sequence[float],
                 base_quat: Sequence[float], max_jump: float = 0.5) -> None:
        self.kin = kin
        self.lower, self.upper = kin.lower, kin.upper
        self._bp = np.asarray(base_pos, float)
        self._br = quat_to_mat(base_quat)
        self.max_jump = max_jump

    def to_base(self, pos: Sequence[float], quat: Sequence[float]) -> tuple[np.ndarray,
                                                                           np.ndarray]:
        return self._br.T @ (np.asarray(pos, float) - self._bp), self._br.T @ quat_to_mat(quat)

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        p, r = self.kin.pose_matrix(np.asarray(q, float))
        return self._bp + self._br @ p, mat_to_quat(self._br @ r)

    def solve(self, pos: Sequence[float], quat: Sequence[float],
              seed: Sequence[float] | None = None, *,
              max_jump: float | None = None) -> IKSolution:
        """As `IKSolver.solve`: `max_jump` None keeps this solver's cap."""
        p, r = self.to_base(pos, quat)
        cap = self.max_jump if max_jump is None else max_jump
        return self.kin.ladder.solve(p, r, seed, max_jump=cap)


def to_chunks(rows: Sequence[np.ndarray], size: int = CHUNK_ROWS) -> list[np.ndarray]:
    """Cut joint-target rows (7 joints + width) into H x 8 chunks of at most `size` rows."""
    arr = np.asarray(rows, float).reshape(-1, 8)
    return [arr[i:i + size] for i in range(0, len(arr), size)]
