"""Grasp and place in the real embedded sim with the real `sim` perception backend: the
outcomes are measured (gripper width, finger contacts, `in`/`on` after the release), and a
phrase that matches nothing, an unreachable target and a grasp whose object moved away after
detection each end with their reason. Side grasps: for the insertion into LIBERO-10 task 9's
microwave (the mug held across its body, its handle out of the fingers' way: turned to lead
when it crosses the insertion, or grasped from the side opposite it), and out from under its
roof; a mug wider than the hand carried by its handle."""

from __future__ import annotations

import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
import yaml

from mango.geometry import quat_to_mat, quat_yaw
from mango.oracle.predicates import StateView, Thresholds, p_in
from mango.perception.base import DetectResult, PerceptionConfig, RGBDFrame
from mango.perception.registry import make_backend
from mango.primitives import SimPrimitives, parse_destination
from mango.primitives.runner import relation_holds
from mango.sim.env import SimEnv

ROOT = Path(__file__).resolve().parents[2]


def _inside(state, obj: str, region: str) -> bool:
    """The oracle's `in` on the physics' world state."""
    return p_in(StateView(state, Thresholds()), obj, region)


def _prims(scene: str | Path, seed: int = 0, backend=None) -> tuple[SimEnv, SimPrimitives]:
    env = SimEnv(scene, seed, cameras=("front", "wrist"), image_size=(640, 480))
    be = backend or make_backend(PerceptionConfig(backend="sim", scene=env.scene))
    return env, SimPrimitives(env, be)


def _each_placed(prims: SimPrimitives, phrases: tuple[str, ...], where: str):
    """Grasp then place each object in turn where asked, each held and placed by perception
    and physics; the last place's outcome."""
    for phrase in phrases:
        g = prims.grasp(phrase)
        assert g.grasped, g.message
        p = prims.place(parse_destination(where), phrase)
        assert p.status == "succeeded" and p.satisfied_truth, p.message
    return p


def test_grasp_then_place_on_a_plate_is_measured() -> None:
    env, prims = _prims("libero10_mugs_plates", 1)
    with env:
        g = prims.grasp("the white mug")
        assert g.status == "succeeded" and g.grasped, g.message
        assert g.entity_id == "porcelain_mug_1"
        # measured, not assumed: fingers apart on the mug and both touching it
        assert 0.01 < g.width < 0.08 and g.finger_contacts == ["porcelain_mug_1"]
        # two plates: "the plate" is ambiguous (refused by the grounder), the left one is not
        p = prims.place(parse_destination("on the left plate"), "the white mug")
        assert p.status == "succeeded" and p.satisfied and p.satisfied_truth, p.message
        assert p.destination_id == "plate_1"
        assert env.world_state().fact("grasped(porcelain_mug_1)") is False
        mug = env.world_state().objects["porcelain_mug_1"].position
        assert np.hypot(mug[0] - p.release_position[0], mug[1] - p.release_position[1]) < 0.03


@pytest.mark.parametrize("seed", [0, 1])
def test_a_book_goes_into_one_compartment_of_the_caddy_not_onto_its_divider(seed: int) -> None:
    """LIBERO-10's desk caddy has two compartments either side of a divider under its
    middle: released over the middle the book rested on the divider or fell into either side
    (seed 0 out of it, seed 1 said "holds" while the physics had it in neither). The release
    spot comes from the caddy's depth (its raised parts inside), and "in the desk caddy" is
    in either compartment, by the oracle's `in` on the physics."""
    env, prims = _prims("libero10_book_caddy", seed)
    with env:
        g = prims.grasp("the black book")
        assert g.grasped, g.message
        p = prims.place(parse_destination("in the desk caddy"), "the black book")
        st = env.world_state()
        inside = [r for r in ("desk_caddy_1_front_contain_region",
                              "desk_caddy_1_back_contain_region")
                  if _inside(st, "black_book_1", r)]
        assert len(inside) == 1, (inside, p.message)
        assert p.status == "succeeded" and p.satisfied and p.satisfied_truth, p.message
        assert relation_holds(env.scene, st, "in", "black_book_1", "desk_caddy_1")


def test_an_oblong_box_that_fits_beside_the_soup_only_turned_is_turned() -> None:
    """LIBERO-10's soup-and-cream-cheese task, seed 4: with the soup in the basket, the cream
    cheese (held long across the basket's short side) finds no free spot beside it as held;
    released over the middle it landed on the soup and fell out (4 of 10 seeds). Turned a
    quarter it fits beside the soup: both in the basket by the oracle's `in` on the physics."""
    env, prims = _prims("libero10_soup_cheese_basket", 4)
    with env:
        p = _each_placed(prims, ("the alphabet soup", "the cream cheese box"), "in the basket")
        assert "turned 90 deg to fit" in p.message or "turned -90 deg to fit" in p.message
        st = env.world_state()
        for obj in ("alphabet_soup_1", "cream_cheese_1"):
            assert relation_holds(env.scene, st, "in", obj, "basket_1"), obj


def test_a_box_let_go_beside_the_soup_leaves_the_hand_and_the_next_grasp_holds() -> None:
    """LIBERO-10's soup-and-cream-cheese task, seed 0: released beside the soup, the cream
    cheese's fingers were pressed against the soup and the basket's wall, could not open,
    and the retreat lifted it back out wedged between them; the place said it held, and the
    tomato sauce's grasp then closed on the cheese hanging from the hand. The release is
    raised until the opening fingers clear what is beside it: the cheese stays in the
    basket, and the sauce is held."""
    env, prims = _prims("libero10_soup_cheese_basket", 0)
    with env:
        p = _each_placed(prims, ("the alphabet soup", "the cream cheese box"), "in the basket")
        assert "higher for the fingers to open clear" in p.message, p.message
        st = env.world_state()
        cheese, hand = (st.objects[k].position for k in ("cream_cheese_1", "robot_hand"))
        assert hand[2] - cheese[2] > 0.1, (cheese, hand)  # not carried up with the hand
        assert st.fact("grasped(cream_cheese_1)") is False
        for obj in ("alphabet_soup_1", "cream_cheese_1"):
            assert relation_holds(env.scene, st, "in", obj, "basket_1"), obj
        g = prims.grasp("the tomato sauce")
        assert g.grasped and g.finger_contacts == ["tomato_sauce_1"], g.message


def test_the_second_moka_pot_goes_on_the_stove_beside_the_first() -> None:
    """LIBERO-10's "put both moka pots on the stove", seed 0: released over the stove's
    middle, the second pot came down on the first (the place said it failed). It goes to
    the free spot on the stove beside the first: both stand on its cooking area."""
    env, prims = _prims("libero10_two_moka_stove", 0)
    with env:
        _each_placed(prims, ("the right moka pot", "the left moka pot"), "on the stove")
        st = env.world_state()
        z1, z2 = (st.objects[k].position[2] for k in ("moka_pot_1", "moka_pot_2"))
        assert abs(z1 - z2) < 0.01, (z1, z2)  # side by side, not one on the other
        for pot in ("moka_pot_1", "moka_pot_2"):
            assert relation_holds(env.scene, st, "on", pot, "flat_stove_1"), pot


def test_an_object_seen_higher_than_it_was_let_go_went_up_with_the_hand() -> None:
    """What the place's verification says of an object still in the hand after its release
    (wedged between fingers that could not open, hung on one): the soup held up at cruise
    height, judged as if let go on the table, did not land there."""
    env, prims = _prims("libero10_soup_sauce_basket", 0)
    with env:
        g = prims.grasp("the alphabet soup")
        assert g.grasped, g.message
        ex = prims.executor
        req = parse_destination("empty space on the table")
        target = ex._target(req, ex.held)[0]
        ok, why = ex._judge_perceived(req, "the alphabet soup", None, target,
                                      ex.area.height + 0.02)
        assert not ok and why.startswith(": it went up with the hand ("), why


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


def _mug_scene(tmp_path: Path, yaw: float) -> Path:
    """LIBERO-10 task 9 with the yellow and white mug turned `yaw` degrees (its handle, +x
    in its own frame, then points that way), where the scene file puts it."""
    spec = yaml.safe_load((ROOT / "config/scenes/libero10_mug_microwave.yaml").read_text())
    spec["oracle"] = None
    for e in spec["entities"]:
        if e["id"] == "white_yellow_mug_1":
            e["yaw"], e["jitter"], e["yaw_jitter"] = yaw, [0.0, 0.0], 0
    path = tmp_path / f"mug_yaw_{yaw:g}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _traced_primitives(env: SimEnv, mug: str) -> tuple[SimPrimitives, list[float]]:
    """The primitives on `env` with the sim's perception, and what they record: the gripper
    width at every control step the sim has the mug grasped (both fingers on it)."""
    widths: list[float] = []

    def on_state(state) -> None:
        if state.fact(f"grasped({mug})"):
            widths.append(env.gripper_width())

    prims = SimPrimitives(env, make_backend(PerceptionConfig(backend="sim", scene=env.scene)),
                          on_state=on_state)
    return prims, widths


def _handle_yaw(env: SimEnv, mug: str) -> float:
    """Where the mug's handle points (its body's +x), degrees: the physics' truth."""
    return math.degrees(quat_yaw(env.world_state().objects[mug].orientation))


def test_a_mug_whose_handle_crosses_the_insertion_is_turned_and_held_across_its_body() -> None:
    """Seed 0: the handle points along +x (-18 deg), across the insertion's axis (-y): a side
    grasp along it would close on body and handle. Taken from the top across the body (the
    handle seen in the detection's depth points), put down turned so the handle leads, taken
    again from the side, slid in; held across the body's 6.5 cm throughout (across body and
    handle the fingers stop at ~7.5 cm)."""
    env = SimEnv("libero10_mug_microwave", 0, cameras=("front", "wrist"), image_size=(640, 480))
    prims, widths = _traced_primitives(env, "white_yellow_mug_1")
    req = parse_destination("in the microwave")
    with env:
        g = prims.grasp("the yellow and white mug", req)
        assert g.status == "succeeded" and g.approach == "top", g.message
        assert "to be turned" in g.message and "protrusion" in g.message  # explained
        assert g.body is not None and g.body.handle is not None
        handle = math.degrees(math.atan2(g.body.handle[1], g.body.handle[0]))
        assert abs(handle - _handle_yaw(env, "white_yellow_mug_1")) < 8  # seen where it is
        p = prims.place(req, "the yellow and white mug")
        assert p.message.startswith("regrasped from the side") and "turned" in p.message, \
            p.message
        st = env.world_state()
        assert p.satisfied_truth is True, p.message
        assert _inside(st, "white_yellow_mug_1", "microwave_1_heating_region")
        assert st.fact("grasped(white_yellow_mug_1)") is False
        # the handle went in first: it points into the microwave (-y, -90 deg)
        assert abs(_handle_yaw(env, "white_yellow_mug_1") + 90) < 30
    assert len(widths) > 100 and max(widths) < 0.064, (min(widths), max(widths))


def test_a_mug_whose_handle_leads_the_insertion_is_grasped_from_the_side(
        tmp_path: Path) -> None:
    """The handle already points into the microwave (-y): the side grasp along the
    insertion's axis approaches from the side opposite it, closing across the body."""
    env = SimEnv(_mug_scene(tmp_path, -90), 0, cameras=("front", "wrist"),
                 image_size=(640, 480))
    prims, widths = _traced_primitives(env, "white_yellow_mug_1")
    req = parse_destination("in the microwave")
    with env:
        g = prims.grasp("the yellow and white mug", req)
        assert g.status == "succeeded" and g.approach == "side", g.message
        assert "horizontal insertion" in g.message and "across a round body" in g.message
        assert g.direction == pytest.approx([0.0, -1.0, 0.0], abs=0.05)
        assert g.finger_contacts == ["white_yellow_mug_1"] and 0.01 < g.width < 0.064
        assert abs(mujoco_hand_axis(env)[2]) < 0.1  # the hand is horizontal
        p = prims.place(req, "the yellow and white mug")
        assert not p.message.startswith("regrasped"), p.message
        assert p.satisfied_truth is True, p.message
        assert _inside(env.world_state(), "white_yellow_mug_1", "microwave_1_heating_region")
        assert p.destination_id == "microwave_1"
    assert widths and max(widths) < 0.064


def test_a_mug_wider_than_the_hand_is_carried_by_its_handle(tmp_path: Path) -> None:
    """The white mug of LIBERO-10 task 4 made 9 cm across (the hand opens 8): pinched by its
    handle from above, carried upright, and set down centred on the plate (the release
    puts the mug's axis, not the hand, over the plate)."""
    spec = yaml.safe_load((ROOT / "config/scenes/libero10_mugs_plates.yaml").read_text())
    spec["oracle"] = None
    for e in spec["entities"]:
        if e["id"] == "porcelain_mug_1":
            e["size"] = [0.09, 0.09, 0.08]
    path = tmp_path / "wide_mug.yaml"
    path.write_text(yaml.safe_dump(spec))
    env, prims = _prims(path, 0)
    req = parse_destination("on the left plate")
    with env:
        g = prims.grasp("the white mug", req)
        assert g.status == "succeeded" and "by the protrusion" in g.message, g.message
        assert g.finger_contacts == ["porcelain_mug_1"] and g.width < 0.015  # the handle
        st = env.world_state()
        assert abs(quat_to_mat(st.objects["porcelain_mug_1"].orientation)[2, 2]) > 0.99
        p = prims.place(req, "the white mug")
        assert p.status == "succeeded" and p.satisfied_truth, p.message
        st = env.world_state()
        mug, plate = st.objects["porcelain_mug_1"], st.objects["plate_1"]
        assert quat_to_mat(mug.orientation)[2, 2] > 0.99  # upright
        assert math.dist(mug.position[:2], plate.position[:2]) < 0.02  # centred


def mujoco_hand_axis(env: SimEnv) -> np.ndarray:
    """The direction the hand points (its z axis), from the measured joints."""
    from mango.control.kinematics import FR3Kinematics
    from mango.control.robot import load_robot

    _, rot = FR3Kinematics(load_robot("fr3")).pose_matrix(env.joint_positions())
    return rot[:, 2]


def test_an_object_under_a_roof_is_grasped_from_the_side_and_backed_out(tmp_path: Path) -> None:
    spec = yaml.safe_load((ROOT / "config/scenes/libero10_mug_microwave.yaml").read_text())
    spec["oracle"] = None
    for e in spec["entities"]:
        if e["id"] == "white_yellow_mug_1":  # inside the microwave, 4 cm behind its opening
            e["position"], e["jitter"], e["yaw_jitter"] = [0.06, -0.2], [0.0, 0.0], 0
    path = tmp_path / "mug_in_microwave.yaml"
    path.write_text(yaml.safe_dump(spec))
    env, prims = _prims(path)
    with env:
        g = prims.grasp("the yellow and white mug")
        assert g.status == "succeeded" and g.grasped and g.approach == "side", g.message
        assert "top-down blocked by 'microwave_1' overhead" in g.message
        assert g.direction == pytest.approx([0.0, -1.0, 0.0], abs=1e-3)  # out of the opening
        st = env.world_state()
        assert st.fact("grasped(white_yellow_mug_1)") is True
        mug = st.objects["white_yellow_mug_1"].position
        assert mug[1] > -0.16 + 0.03  # backed out of the cavity (its opening is at y = -0.16)


def test_into_the_cabinet_is_the_open_drawer_and_a_top_held_mug_is_regrasped() -> None:
    env, prims = _prims("libero10_bowl_drawer", 0)
    with env:
        req = parse_destination("in the white cabinet")
        g = prims.grasp("the black bowl", req)
        assert g.grasped and g.approach == "top", g.message  # a drawer is open on top
        p = prims.place(req, "the black bowl")
        assert p.satisfied_truth is True, p.message
        assert _inside(env.world_state(), "akita_black_bowl_1", "white_cabinet_1_bottom_region")
    env, prims = _prims("libero10_mug_microwave", 0)
    with env:
        g = prims.grasp("the yellow and white mug")  # destination not known: from the top
        assert g.grasped and g.approach == "top", g.message
        p = prims.place(parse_destination("in the microwave"), "the yellow and white mug")
        # put down next to the microwave, grasped again from the side, slid in
        assert p.message.startswith("regrasped from the side"), p.message
        assert p.satisfied_truth is True, p.message
        st = env.world_state()
        assert _inside(st, "white_yellow_mug_1", "microwave_1_heating_region")
