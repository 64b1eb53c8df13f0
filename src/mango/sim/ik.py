"""The simulator's IK: the project's one ladder (`mango.ik.IKLadder`, VoLo App. B.2) on the
MuJoCo arm.

`MujocoArm` is the `ArmModel` the ladder solves on: the hand site's pose and `mj_jacSite`
Jacobian in the model's world frame, on a private scratch `MjData`. `IKSolver` only binds the
two together and speaks quaternions, as the sim's callers (the scripted expert, `SimEnv`) do.
"""

from __future__ import annotations

from collections.abc import Sequence

import mujoco
import numpy as np

from mango.geometry import mat_to_quat, quat_to_mat
from mango.ik import IKLadder, IKSolution, LadderSettings
from mango.sim.scene import FR3_READY


class MujocoArm:
    """One site of a MuJoCo model as an arm for the ladder (thread-confined scratch data).

    `qpos_idx`/`dof_idx` select the arm joints (in `joint_ids` order); other joints stay at
    the model's reference positions, so the answers are in the model's world frame.
    """

    def __init__(self, model: mujoco.MjModel, site: int, qpos_idx: Sequence[int],
                 dof_idx: Sequence[int], joint_ids: Sequence[int]) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.site = site
        self.qpos_idx = np.asarray(qpos_idx, int)
        self.dof_idx = np.asarray(dof_idx, int)
        rng = np.asarray([model.jnt_range[j] for j in joint_ids], float)
        self.lower, self.upper = rng[:, 0].copy(), rng[:, 1].copy()
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))

    def pose_matrix(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        d.qpos[self.qpos_idx] = q
        mujoco.mj_kinematics(self.model, d)
        return d.site_xpos[self.site].copy(), d.site_xmat[self.site].reshape(3, 3).copy()

    def pose_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Site pose and its geometric Jacobian (world frame, linear rows first)."""
        p, r = self.pose_matrix(q)
        mujoco.mj_comPos(self.model, self.data)  # mj_jacSite reads the com-based frames
        mujoco.mj_jacSite(self.model, self.data, self._jacp, self._jacr, self.site)
        return p, r, np.vstack([self._jacp[:, self.dof_idx], self._jacr[:, self.dof_idx]])


class IKSolver:
    """IK of a site of a model: `IKLadder` on `MujocoArm`, restarting from the FR3's ready
    pose. `max_jump` is the branch cap every answer gets (a solver for path following)."""

    def __init__(self, model: mujoco.MjModel, site: int, qpos_idx: Sequence[int],
                 dof_idx: Sequence[int], joint_ids: Sequence[int], *,
                 settings: LadderSettings | None = None, max_jump: float | None = None) -> None:
        self.arm = MujocoArm(model, site, qpos_idx, dof_idx, joint_ids)
        self.lower, self.upper = self.arm.lower, self.arm.upper
        self.ladder = IKLadder(self.arm, np.asarray(FR3_READY, float),
                               settings or LadderSettings())
        self.max_jump = max_jump

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Site position and quaternion [w, x, y, z] for arm joints q."""
        p, r = self.arm.pose_matrix(np.asarray(q, float))
        return p, mat_to_quat(r)

    def solve(self, pos: Sequence[float], quat: Sequence[float],
              seed: Sequence[float] | None = None, *,
              max_jump: float | None = None) -> IKSolution:
        """Joints putting the site at `pos` with orientation `quat` ([w, x, y, z])."""
        cap = self.max_jump if max_jump is None else max_jump
        return self.ladder.solve(pos, quat_to_mat(quat), seed, max_jump=cap)

    def require(self, pos: Sequence[float], quat: Sequence[float],
                seed: Sequence[float] | None = None, *,
                max_jump: float | None = None) -> np.ndarray:
        """Like `solve`, raising `UnreachableError` with the reason when no start succeeds."""
        cap = self.max_jump if max_jump is None else max_jump
        return self.ladder.require(pos, quat_to_mat(quat), seed, max_jump=cap)
