"""Grasp and place in the real embedded sim with the real `sim` perception backend: the
outcomes are measured (gripper width, finger contacts, `in`/`on` after the release), and a
phrase that matches nothing, an unreachable target and a grasp whose object moved away after
detection each end with their reason."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import yaml

from mango.perception.base import DetectResult, PerceptionConfig, RGBDFrame
from mango.perception.registry import make_backend
from mango.primitives import SimPrimitives, parse_destination
from mango.sim.env import SimEnv

ROOT = Path(__file__).resolve().parents[2]


def _prims(scene: str | Path, seed: int = 0, backend=None) -> tuple[SimEnv, SimPrimitives]:
    env = SimEnv(scene, seed, cameras=("front",), image_size=(640, 480))
    be = backend or make_backend(PerceptionConfig(backend="sim", scene=env.scene))
    return env, SimPrimitives(env, be)


def test_grasp_then_place_on_a_plate_is_measured() -> None:
    env, prims = _prims("libero10_mugs_plates", 1)
    with env:
        g = prims.grasp("the white mug")
        assert g.status == "succeeded" and g.grasped, g.message
        assert g.entity_id == "porcelain_mug_1"
        # measured, not assumed: fingers apart on the mug and both touching it
        assert 0.01 < g.width < 0.08 and g.finger_contacts == ["porcelain_mug_1"]
        p = prims.place(parse_destination("on the plate"), "the white mug")
        assert p.status == "succeeded" and p.satisfied and p.satisfied_truth, p.message
        assert p.destination_id in ("plate_1", "plate_2")
        assert env.world_state().fact("grasped(porcelain_mug_1)") is False
        mug = env.world_state().objects["porcelain_mug_1"].position
        assert np.hypot(mug[0] - p.release_position[0], mug[1] - p.release_position[1]) < 0.03


def test_empty_space_next_to_an_anchor_is_free_and_next_to_it() -> None:
    env, prims = _prims("libero10_soup_sauce_basket", 0)
    with env:
        assert prims.grasp("the tomato sauce").grasped
        p = prims.place(parse_destination("empty space left of the basket"), "the tomato sauce")
        assert p.satisfied and p.satisfied_truth, p.message
        st = env.world_state()
        sauce, basket = st.objects["tomato_sauce_1"].position, st.objects["basket_1"].position
        assert sauce[1] > basket[1] + 0.12  # left (+y) of the basket's 24 cm width
        assert not [c for c in st.contacts if "tomato_sauce_1" in c and "main_table" not in c]


def test_a_phrase_matching_nothing_is_rejected_with_the_reason() -> None:
    env, prims = _prims("libero10_soup_sauce_basket")
    with env:
        q0 = env.joint_positions().copy()
        g = prims.grasp("a purple unicorn")
        assert g.status == "rejected" and not g.grasped
        assert "'a purple unicorn' matches nothing" in g.message
        assert "no scene entity matches" in g.message  # the backend's own reason
        assert np.allclose(env.joint_positions(), q0)  # nothing moved
        p = prims.place(parse_destination("in the basket"))
        assert p.status == "rejected" and "nothing is held" in p.message


def test_an_unreachable_target_is_rejected_by_ik(tmp_path: Path) -> None:
    spec = yaml.safe_load((ROOT / "config/scenes/libero10_soup_sauce_basket.yaml").read_text())
    spec["oracle"] = None
    for e in spec["entities"]:
        if e["id"] == "alphabet_soup_1":  # the far edge of the table: ~1 m from the base
            e["position"], e["jitter"] = [0.45, 0.0], [0.0, 0.0]
    path = tmp_path / "far_soup.yaml"
    path.write_text(yaml.safe_dump(spec))
    env, prims = _prims(path)
    with env:
        q0 = env.joint_positions().copy()
        g = prims.grasp("the alphabet soup")
        assert g.status == "rejected" and g.entity_id == "alphabet_soup_1"
        assert "unreachable" in g.message and "pose unreachable: position" in g.message
        assert np.allclose(env.joint_positions(), q0)


class _MovesAfterDetecting:
    """The real backend; once it has seen the object, someone slides it 15 cm away."""

    name = "sim"

    def __init__(self, inner, env: SimEnv, entity: str) -> None:
        self.inner, self.env, self.entity = inner, env, entity

    def detect(self, frame: RGBDFrame, phrases, max_results: int = 1) -> DetectResult:
        res = self.inner.detect(frame, phrases, max_results)
        if any(d.entity_id == self.entity for d in res.detections):
            adr = self.env.built.free_qpos[self.entity]
            self.env.data.qpos[adr + 1] += 0.15
            mujoco.mj_forward(self.env.model, self.env.data)
        return res

    def close(self) -> None:
        self.inner.close()


def test_a_grasp_whose_object_moved_away_is_reported_failed() -> None:
    env = SimEnv("libero10_soup_sauce_basket", 0, cameras=("front",), image_size=(640, 480))
    inner = make_backend(PerceptionConfig(backend="sim", scene=env.scene))
    prims = SimPrimitives(env, _MovesAfterDetecting(inner, env, "alphabet_soup_1"))
    with env:
        g = prims.grasp("the alphabet soup")
        assert g.status == "failed" and not g.grasped
        assert g.width is not None and g.width < 0.003  # closed on air: measured
        assert "closed on nothing" in g.message
        assert prims.held is None
