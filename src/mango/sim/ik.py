"""Damped least-squares inverse kinematics for the 7-DoF arm, with a multi-start ladder.

A single DLS descent gets stuck near joint limits or in the wrong wrist branch, so solve()
tries a ladder of starts (the caller's seed, its wrist flipped, a well-conditioned pose,
then random draws) and only accepts an answer whose forward kinematics really match the
target pose.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np

from mango.errors import UnreachableError
from mango.geometry import mat_to_quat, rotation_angle
from mango.sim.scene import FR3_READY

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IKResult:
    """The outcome of one IK request; `ok` is False for unreachable poses (see `message`)."""

    q: np.ndarray
    ok: bool
    pos_err: float  # metres
    rot_err: float  # radians
    starts: int  # how many starts of the ladder were tried
    message: str = ""


# the FR3 ready pose (hand down above the table, elbow up, wrist mid-range): a good restart
WELL_CONDITIONED = np.array(FR3_READY)


class IKSolver:
    """IK for one site of a model on a private scratch `MjData` (thread-confined).

    `qpos_idx`/`dof_idx` select the arm joints; other joints stay at `base_qpos`.
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        site: int,
        qpos_idx: Sequence[int],
        dof_idx: Sequence[int],
        joint_ids: Sequence[int],
        *,
        pos_tol: float = 1e-4,
        rot_tol: float = 1e-3,
        accept_pos: float = 1e-3,
        accept_rot: float = math.radians(1.0),
        damping: float = 1e-2,
        max_step: float = 0.25,
        iters: int = 150,
        random_starts: int = 12,
        seed: int = 0,
    ) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.site = site
        self.qpos_idx = np.asarray(qpos_idx, int)
        self.dof_idx = np.asarray(dof_idx, int)
        rng = np.asarray([model.jnt_range[j] for j in joint_ids], float)
        self.lower, self.upper = rng[:, 0], rng[:, 1]
        self.mid = (self.lower + self.upper) / 2
        self.pos_tol, self.rot_tol = pos_tol, rot_tol
        self.accept_pos, self.accept_rot = accept_pos, accept_rot
        self.damping, self.max_step, self.iters = damping, max_step, iters
        self.random_starts = random_starts
        self._seed = seed
        self.reset_pose = np.clip(WELL_CONDITIONED, self.lower + 0.05, self.upper - 0.05)
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Site position and quaternion [w, x, y, z] for arm joints q."""
        d = self.data
        d.qpos[self.qpos_idx] = q
        mujoco.mj_kinematics(self.model, d)
        return d.site_xpos[self.site].copy(), mat_to_quat(d.site_xmat[self.site].reshape(3, 3))

    def _descend(self, q0: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        m, d = self.model, self.data
        q = np.clip(q0.astype(float), self.lower, self.upper)
        lam2 = self.damping**2
        err = np.zeros(6)
        cur_q = np.zeros(4)
        local = np.zeros(3)
        eye6, eye7 = np.eye(6), np.eye(7)
        for _ in range(self.iters):
            d.qpos[self.qpos_idx] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            err[:3] = pos - d.site_xpos[self.site]
            # MuJoCo's own routines on its data in the hot loop (mango.geometry elsewhere)
            mujoco.mju_mat2Quat(cur_q, d.site_xmat[self.site])
            if np.dot(cur_q, quat) < 0:
                cur_q = -cur_q
            mujoco.mju_subQuat(local, quat, cur_q)
            # subQuat gives the error in the site frame; the Jacobian is in the world frame
            err[3:] = d.site_xmat[self.site].reshape(3, 3) @ local
            if np.linalg.norm(err[:3]) < self.pos_tol and np.linalg.norm(err[3:]) < self.rot_tol:
                break
            mujoco.mj_jacSite(m, d, self._jacp, self._jacr, self.site)
            jac = np.vstack([self._jacp[:, self.dof_idx], self._jacr[:, self.dof_idx]])
            # damping fades near the target (Levenberg-Marquardt style): robust far away,
            # fast final convergence close by
            e2 = float(err @ err)
            jjt = jac @ jac.T + (lam2 * min(1.0, e2 / 1e-4) + 1e-10) * eye6
            pinv = jac.T @ np.linalg.inv(jjt)
            dq = pinv @ err
            # null-space pull toward mid-range keeps the elbow away from its limits
            dq += (eye7 - pinv @ jac) @ (0.05 * (self.mid - q))
            step = np.max(np.abs(dq))
            if step > self.max_step:
                dq *= self.max_step / step
            q = np.clip(q + dq, self.lower, self.upper)
        return q

    def _starts(self, seed: np.ndarray) -> list[np.ndarray]:
        flip = seed.copy()
        flip[6] = flip[6] - math.pi if flip[6] > self.mid[6] else flip[6] + math.pi
        rng = np.random.default_rng(self._seed)
        starts = [seed, flip, self.reset_pose.copy()]
        starts += [rng.uniform(self.lower, self.upper) for _ in range(self.random_starts)]
        return starts

    def solve(
        self,
        pos: Sequence[float],
        quat: Sequence[float],
        seed: Sequence[float] | None = None,
    ) -> IKResult:
        """Joint angles putting the site at `pos` with orientation `quat` ([w, x, y, z])."""
        target_p = np.asarray(pos, float)
        target_q = np.asarray(quat, float)
        target_q = target_q / np.linalg.norm(target_q)
        s = self.reset_pose.copy() if seed is None else np.asarray(seed, float)
        best: IKResult | None = None
        starts = self._starts(s)
        for i, start in enumerate(starts, start=1):
            q = self._descend(start, target_p, target_q)
            p, r = self.fk(q)  # independent FK check of the answer
            pe = float(np.linalg.norm(p - target_p))
            re = rotation_angle(target_q, r)
            res = IKResult(q=q, ok=pe < self.accept_pos and re < self.accept_rot, pos_err=pe,
                           rot_err=re, starts=i)
            if res.ok:
                return res
            if best is None or pe + 0.1 * re < best.pos_err + 0.1 * best.rot_err:
                best = res
        assert best is not None
        msg = (
            f"pose unreachable: position {np.round(target_p, 4).tolist()}, best position error "
            f"{best.pos_err * 1000:.1f} mm, rotation error {math.degrees(best.rot_err):.1f} deg "
            f"after {len(starts)} starts"
        )
        return IKResult(q=best.q, ok=False, pos_err=best.pos_err, rot_err=best.rot_err,
                        starts=len(starts), message=msg)

    def require(
        self, pos: Sequence[float], quat: Sequence[float], seed: Sequence[float] | None = None
    ) -> np.ndarray:
        """Like `solve`, raising `UnreachableError` with the reason when no start succeeds."""
        res = self.solve(pos, quat, seed)
        if not res.ok:
            raise UnreachableError(res.message)
        return res.q
