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
from typing import Protocol

import numpy as np

from mango.control.robot import RobotConfig
from mango.errors import UnreachableError
from mango.geometry import axis_angle_to_mat, mat_to_axis_angle, mat_to_quat, quat_to_mat


class Kinematics(Protocol):
    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Hand position (m) and orientation quaternion [w, x, y, z], base frame."""
        ...

    def ik(self, pos: Sequence[float], quat: Sequence[float],
           seed: Sequence[float]) -> np.ndarray:
        """Joint positions reaching the pose (near `seed`); raises `UnreachableError`."""
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
    """The real FR3 + Franka Hand: DH forward kinematics, damped least-squares IK."""

    def __init__(self, robot: RobotConfig) -> None:
        self.lower, self.upper = robot.lower, robot.upper
        tcp = np.eye(4)
        tcp[:3, :3] = axis_angle_to_mat([0.0, 0.0, _TCP_YAW])
        tcp[2, 3] = _FLANGE_D + _TCP_D
        self._tcp = tcp

    def _transform(self, q: Sequence[float]) -> np.ndarray:
        if len(q) != len(_FR3_DH):
            raise ValueError(f"FR3 kinematics needs {len(_FR3_DH)} joint values, got {len(q)}")
        t = np.eye(4)
        for joint, th in enumerate(q, start=1):
            t = t @ fr3_joint_transform(joint, th)
        return t @ self._tcp

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        t = self._transform(q)
        return t[:3, 3].copy(), mat_to_quat(t[:3, :3])

    def ik(self, pos: Sequence[float], quat: Sequence[float],
           seed: Sequence[float], iters: int = 200) -> np.ndarray:
        target_p, target_r = np.asarray(pos, float), quat_to_mat(quat)
        q = np.clip(np.asarray(seed, float), self.lower, self.upper)
        err = np.zeros(6)
        for _ in range(iters):
            t = self._transform(q)
            err[:3] = target_p - t[:3, 3]
            err[3:] = mat_to_axis_angle(target_r @ t[:3, :3].T)
            if np.linalg.norm(err[:3]) < 1e-5 and np.linalg.norm(err[3:]) < 1e-4:
                return q
            jac = np.zeros((6, 7))
            for j in range(7):  # numerical Jacobian: 7 extra FK calls, cheap in numpy
                dq = q.copy()
                dq[j] += 1e-6
                tj = self._transform(dq)
                jac[:3, j] = (tj[:3, 3] - t[:3, 3]) / 1e-6
                jac[3:, j] = mat_to_axis_angle(tj[:3, :3] @ t[:3, :3].T) / 1e-6
            step = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(6), err)
            big = float(np.max(np.abs(step)))
            if big > 0.2:
                step *= 0.2 / big
            q = np.clip(q + step, self.lower, self.upper)
        pe, re = float(np.linalg.norm(err[:3])), float(np.linalg.norm(err[3:]))
        if pe < 1e-3 and re < math.radians(1.0):
            return q
        raise UnreachableError(f"pose unreachable: position {np.round(target_p, 4).tolist()}, "
                               f"best error {pe * 1000:.1f} mm, {math.degrees(re):.1f} deg")

