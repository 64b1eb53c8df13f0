"""The kinematics a robot file names: the simulated arm (MuJoCo) or the real FR3's DH model.

Control and sim are peers that never import each other; this is the layer above both, so
it is where the robot file's `kinematics` field picks the implementation.
"""

from __future__ import annotations

from mango.control.kinematics import FR3Kinematics, Kinematics
from mango.control.robot import RobotConfig


def make_kinematics(robot: RobotConfig) -> Kinematics:
    """The kinematics the robot file names (`sim` loads MuJoCo, `fr3_dh` does not)."""
    if robot.kinematics == "sim":
        from mango.sim.kinematics import SimKinematics

        return SimKinematics()
    return FR3Kinematics(robot)
