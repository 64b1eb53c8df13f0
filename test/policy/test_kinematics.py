"""The robot file picks the kinematics: the simulated arm or the FR3's DH model, one protocol."""

from __future__ import annotations

import numpy as np
import pytest

from mango.control import FR3Kinematics, load_robot
from mango.errors import UnreachableError
from mango.policy.kinematics import make_kinematics
from mango.sim.kinematics import SimKinematics


@pytest.mark.parametrize(("name", "kind"), [("sim", SimKinematics), ("fr3_dh", FR3Kinematics)])
def test_robot_file_picks_the_kinematics(name: str, kind: type) -> None:
    cfg = load_robot("fr3").model_copy(update={"kinematics": name})
    kin = make_kinematics(cfg)
    assert isinstance(kin, kind)
    p, q = kin.fk(cfg.home)
    assert p.shape == (3,) and np.isclose(np.linalg.norm(q), 1.0)
    target = p + np.array([0.03, -0.04, 0.05])
    sol = kin.ik(target, q, cfg.home)
    assert np.allclose(kin.fk(sol)[0], target, atol=1e-3)
    with pytest.raises(UnreachableError, match="unreachable"):
        kin.ik([2.0, 0.0, 0.5], q, cfg.home)
