"""Forward/inverse kinematics of the hand in the robot base frame, behind one small protocol.

`SimKinematics` is the embedded simulator's arm (the sim issue's `IKSolver` on `build_robot`
kinematics); `FR3Kinematics` is the real FR3 from Franka's published Denavit-Hartenberg table
(the simulated Panda's joint 6 zero differs from the real arm's, so one cannot stand in for
the other). Both answer in the base frame with quaternions [w, x, y, z].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from mango.control.robot import RobotConfig


class Unreachable(ValueError):
    """A Cartesian target the arm cannot reach (the message says by how much)."""


class Kinematics(Protocol):
    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Hand position (m) and orientation quaternion [w, x, y, z], base frame."""
        ...

    def ik(self, pos: Sequence[float], quat: Sequence[float],
           seed: Sequence[float]) -> np.ndarray:
        """Joint positions reaching the pose (near `seed`); raises `Unreachable`."""
        ...


class SimKinematics:
    """The simulator's arm model (base at the origin), solved with the sim's `IKSolver`."""

    def __init__(self) -> None:
        from mango.sim.build import build_robot
        from mango.sim.ik import IKSolver
        from mango.sim.scene import RobotSpec, SceneSpec

        bare = SceneSpec(name="robot", instruction="", goal="true", entities=[], expert=[],
                         robot=RobotSpec(base=(0.0, 0.0, 0.0)))
        kin = build_robot(bare)
        joint_ids = [int(kin.model.actuator_trnid[a, 0]) for a in kin.arm_actuators]
        self._solver = IKSolver(kin.model, kin.hand_site, kin.arm_qpos, kin.arm_dof, joint_ids,
                                random_starts=2)

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        return self._solver.fk(np.asarray(q, float))

    def ik(self, pos: Sequence[float], quat: Sequence[float],
           seed: Sequence[float]) -> np.ndarray:
        res = self._solver.solve(pos, quat, seed)
        if not res.ok:
            raise Unreachable(res.message)
        return res.q


# Franka's DH table (Craig's convention): a, d, alpha per joint, then the flange.
_FR3_DH = (
    (0.0, 0.333, 0.0), (0.0, 0.0, -math.pi / 2), (0.0, 0.316, math.pi / 2),
    (0.0825, 0.0, math.pi / 2), (-0.0825, 0.384, -math.pi / 2), (0.0, 0.0, math.pi / 2),
    (0.088, 0.0, math.pi / 2),
)
_FLANGE_D = 0.107
_TCP_D = 0.1034  # Franka Hand: flange to the fingertip centre
_TCP_YAW = -math.pi / 4


def _dh(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -d * sa],
                     [st * sa, ct * sa, ca, d * ca], [0, 0, 0, 1.0]])


def mat_to_quat(m: np.ndarray) -> np.ndarray:
    """Rotation matrix -> unit quaternion [w, x, y, z] (w >= 0)."""
    t = np.trace(m)
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k]) * 2
        q = [0.0, 0.0, 0.0, 0.0]
        q[0] = (m[k, j] - m[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (m[j, i] + m[i, j]) / s
        q[1 + k] = (m[k, i] + m[i, k]) / s
    out = np.asarray(q, float)
    out /= np.linalg.norm(out)
    return -out if out[0] < 0 else out


def quat_to_mat(q: Sequence[float]) -> np.ndarray:
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def axis_angle_to_mat(rotvec: Sequence[float]) -> np.ndarray:
    v = np.asarray(rotvec, float)
    th = float(np.linalg.norm(v))
    if th < 1e-12:
        return np.eye(3)
    k = v / th
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(th) * kx + (1 - math.cos(th)) * kx @ kx


def mat_to_axis_angle(m: np.ndarray) -> np.ndarray:
    q = mat_to_quat(m)
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return np.zeros(3)
    return q[1:] / s * 2 * math.atan2(s, q[0])


class FR3Kinematics:
    """The real FR3 + Franka Hand: DH forward kinematics, damped least-squares IK."""

    def __init__(self, robot: RobotConfig) -> None:
        self.lower, self.upper = robot.lower, robot.upper
        tcp = np.eye(4)
        tcp[:3, :3] = axis_angle_to_mat([0.0, 0.0, _TCP_YAW])
        tcp[2, 3] = _FLANGE_D + _TCP_D
        self._tcp = tcp

    def _transform(self, q: Sequence[float]) -> np.ndarray:
        t = np.eye(4)
        for (a, d, alpha), th in zip(_FR3_DH, q, strict=True):
            t = t @ _dh(a, d, alpha, float(th))
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
        raise Unreachable(f"pose unreachable: position {np.round(target_p, 4).tolist()}, "
                          f"best error {pe * 1000:.1f} mm, {math.degrees(re):.1f} deg")


def make_kinematics(robot: RobotConfig) -> Kinematics:
    """The kinematics the robot file names."""
    return SimKinematics() if robot.kinematics == "sim" else FR3Kinematics(robot)
