"""`sim.parts` is where the compiled model has each moving part: drawer, door, knob."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mango.geometry import quat_to_mat
from mango.sim.env import SimEnv
from mango.sim.parts import joint_value, part_name, part_transform
from mango.sim.scene import ARTICULATED, as_scene

SCENES = ["libero10_bowl_drawer", "libero10_mug_microwave", "libero10_stove_moka"]


def _pose(pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3], t[:3, 3] = quat_to_mat(np.asarray(quat, float)), pos
    return t


@pytest.mark.parametrize("name", SCENES)
def test_part_transform_is_where_the_model_puts_the_part(name: str) -> None:
    scene = as_scene(name)
    with SimEnv(scene, cameras=()) as env:
        m, d, b = env.model, env.data, env.built
        for e in (e for e in scene.entities if e.shape in ARTICULATED):
            assert e.joint is not None
            lo, hi = e.joint.range
            for q in np.linspace(lo, hi, 5):
                d.qpos[b.joint_qpos[e.joint.id]] = q
                mujoco.mj_forward(m, d)
                world_e = _pose(d.xpos[b.entity_body[e.id]], d.xquat[b.entity_body[e.id]])
                pb = b.part_body[(e.id, part_name(e))]
                world_p = _pose(d.xpos[pb], d.xquat[pb])
                expect = world_e @ part_transform(e, float(q))
                np.testing.assert_allclose(world_p, expect, atol=1e-9)
                # and back: the joint value read off the part's pose
                rel = np.linalg.inv(world_e) @ world_p
                assert joint_value(e, rel) == pytest.approx(q, abs=1e-9)


def test_an_entity_without_a_moving_part_is_refused() -> None:
    scene = as_scene("libero10_stove_moka")
    with pytest.raises(ValueError, match="no moving part"):
        part_transform(scene.entity("moka_pot_1"), 0.0)
