"""The simulated arm behind control's `Kinematics` protocol: the MuJoCo model's hand site,
solved with the project's IK ladder (`mango.sim.ik.IKSolver`; base at the origin, so poses are
in the robot base frame)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mango.sim.build import build_robot
from mango.sim.ik import IKSolver
from mango.sim.scene import RobotSpec, SceneSpec


class SimKinematics:
    """Forward/inverse kinematics of the simulator's arm; `ik` raises `UnreachableError`."""

    def __init__(self) -> None:
        bare = SceneSpec(name="robot", instruction="", goal="true", entities=[], expert=[],
                         robot=RobotSpec(base=(0.0, 0.0, 0.0)))
        kin = build_robot(bare)
        joint_ids = [int(kin.model.actuator_trnid[a, 0]) for a in kin.arm_actuators]
        self._solver = IKSolver(kin.model, kin.hand_site, kin.arm_qpos, kin.arm_dof, joint_ids)

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        return self._solver.fk(np.asarray(q, float))

    def ik(self, pos: Sequence[float], quat: Sequence[float], seed: Sequence[float], *,
           max_jump: float | None = None) -> np.ndarray:
        return self._solver.require(pos, quat, seed, max_jump=max_jump)
