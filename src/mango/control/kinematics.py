"""Forward/inverse kinematics of the hand in the robot base frame, behind one small protocol.

`Kinematics` is what control needs from an arm model; `FR3Kinematics` is the real FR3 from
Franka's published Denavit-Hartenberg table. The simulated arm (`mango.sim.kinematics`, the
MuJoCo FR3 model) satisfies the same protocol and agrees with it to numerical precision;
control never imports the simulator, so the layer that composes them
(`mango.policy.kinematics.make_kinematics`) picks one per robot file. Both answer in the base
frame with quaternions [w, x, y, z] and raise `UnreachableError`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from mango.control.robot import RobotConfig
from mango.geometry import axis_angle_to_mat, mat_to_quat, quat_to_mat
from mango.ik import IKLadder, LadderSettings


class Kinematics(Protocol):
    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Hand position (m) and orientation quaternion [w, x, y, z], base frame."""
        ...

    def ik(self, pos: Sequence[float], quat: Sequence[float], seed: Sequence[float], *,
           max_jump: float | None = None) -> np.ndarray:
        """Joint positions reaching the pose (near `seed`); raises `UnreachableError`.

        `max_jump` (rad) is the branch cap: an answer moving any joint further than that from
        `seed` is refused (`UnreachableError`), so a caller following a path stays on its
        seed's branch (pass `mango.ik.BRANCH_CAP`)."""
        ...


# Franka's DH table (Craig's convention): a, d, alpha per joint, then the flange.
_FR3_DH = (
    (0.0, 0.333, 0.0), (0.0, 0.0, -math.pi / 2), (0.0, 0.316, math.pi / 2),
    (0.0825, 0.0, math.pi / 2), (-0.0825, 0.384, -math.pi / 2), (0.0, 0.0, math.pi / 2),
    (0.088, 0.0, math.pi / 2),
)
_FLANGE_D = 0.107
_TCP_D = 0.1034  # Franka Hand: flange to the fingertip centre
_TCP_YAW = -math.pi / 4


FR3_ARM_JOINTS = tuple(f"fr3_joint{i}" for i in range(1, 8))


def _dh(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -d * sa],
                     [st * sa, ct * sa, ca, d * ca], [0, 0, 0, 1.0]])


def fr3_joint_transform(joint: int, q: float) -> np.ndarray:
    """fr3_link{joint-1} -> fr3_link{joint} at angle q (4x4): one row of the DH table.

    With Craig's convention each row is exactly franka_description's joint (origin, then a
    rotation about z), so the frames the robot state publisher broadcasts are the frames
    control plans in.
    """
    return _dh(*_FR3_DH[joint - 1], float(q))


class FR3Kinematics:
    """The real FR3 + Franka Hand: DH forward kinematics, the analytic geometric Jacobian and
    the IK ladder (`mango.ik`) on them."""

    def __init__(self, robot: RobotConfig, settings: LadderSettings | None = None) -> None:
        self.lower, self.upper = robot.lower, robot.upper
        tcp = np.eye(4)
        tcp[:3, :3] = axis_angle_to_mat([0.0, 0.0, _TCP_YAW])
        tcp[2, 3] = _FLANGE_D + _TCP_D
        self._tcp = tcp
        self.ladder = IKLadder(self, np.asarray(robot.home, float),
                               settings or LadderSettings())

    def _check(self, q: Sequence[float]) -> None:
        if len(q) != len(_FR3_DH):
            raise ValueError(f"FR3 kinematics needs {len(_FR3_DH)} joint values, got {len(q)}")

    def _transform(self, q: Sequence[float]) -> np.ndarray:
        self._check(q)
        t = np.eye(4)
        for joint, th in enumerate(q, start=1):
            t = t @ fr3_joint_transform(joint, th)
        return t @ self._tcp

    def pose_matrix(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = self._transform(q)
        return t[:3, 3].copy(), t[:3, :3].copy()

    def pose_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """TCP pose and its geometric Jacobian: with Craig's convention joint i turns about
        the z axis of frame i, through that frame's origin."""
        self._check(q)
        t = np.eye(4)
        axes = np.empty((7, 3))
        origins = np.empty((7, 3))
        for joint, th in enumerate(q, start=1):
            t = t @ fr3_joint_transform(joint, th)
            axes[joint - 1] = t[:3, 2]
            origins[joint - 1] = t[:3, 3]
        t = t @ self._tcp
        p = t[:3, 3]
        jac = np.empty((6, 7))
        jac[:3] = np.cross(axes, p - origins).T
        jac[3:] = axes.T
        return p.copy(), t[:3, :3].copy(), jac

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        t = self._transform(q)
        return t[:3, 3].copy(), mat_to_quat(t[:3, :3])

    def ik(self, pos: Sequence[float], quat: Sequence[float],
           seed: Sequence[float], iters: int | None = None, *,
           max_jump: float | None = None) -> np.ndarray:
        """The ladder's answer nearest `seed`'s branch; `iters` overrides the per-start
        iteration cap, `max_jump` is the branch cap (see `IKLadder.solve`)."""
        ladder = self.ladder
        if iters is not None and iters != ladder.settings.iters:
            ladder = IKLadder(self, ladder.reset, replace(ladder.settings, iters=iters))
        return ladder.require(pos, quat_to_mat(quat), seed, max_jump=max_jump)
