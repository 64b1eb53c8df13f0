"""The world-state estimator's rules on hand-made observations (no rendering): tracks, stale
entities, confirmed jumps, the gripper's grasp, joints off part markers, riding objects."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from mango.geometry import mat_to_quat, quat_to_mat
from mango.oracle.predicates import StateView, Thresholds, p_grasped, p_in
from mango.perception.aruco import MarkerPose
from mango.perception.estimator import EstimatorConfig, WorldStateEstimator
from mango.sim.markers import auto_marker_map
from mango.sim.parts import part_transform
from mango.sim.scene import as_scene

DOWN = np.diag([1.0, -1.0, -1.0])  # a hand pointing down


class HandAt:
    """Kinematics whose FK puts the TCP wherever the test says (base frame = world)."""

    def __init__(self) -> None:
        self.pos = np.array([0.0, 0.0, 1.3])

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        return self.pos.copy(), mat_to_quat(DOWN)

    def ik(self, pos: Sequence[float], quat: Sequence[float], seed: Sequence[float]) -> np.ndarray:
        raise NotImplementedError


def marker(entity: str, pos: Sequence[float], rot: np.ndarray | None = None, part: str = "base",
           mid: int = 0) -> MarkerPose:
    return MarkerPose(mid, entity, part, np.asarray(pos, float),
                      np.eye(3) if rot is None else rot, np.zeros((4, 2)), True)


def estimator(scene: str, **cfg: float) -> tuple[WorldStateEstimator, HandAt]:
    sc = as_scene(scene)
    kin = HandAt()
    return WorldStateEstimator(sc, auto_marker_map(sc), kin, np.eye(4),
                               EstimatorConfig(**cfg)), kin


def test_seen_objects_are_where_their_markers_say_and_unseen_ones_stay_and_go_stale() -> None:
    est, _ = estimator("libero10_stove_moka", stale_after=1.0)
    est.observe_markers([marker("moka_pot_1", (0.01, 0.2, 0.955))], 0.0)
    s = est.state()
    assert s.objects["moka_pot_1"].position == pytest.approx((0.01, 0.2, 0.955))
    assert s.objects["moka_pot_1"].kind == "object"
    assert s.objects["flat_stove_1_cook_region"].parent == "flat_stove_1"
    # not seen for 1.5 s: the same pose, called stale; the never-seen pan comes from the scene
    est.observe_markers([], 1.5)
    assert est.state().objects["moka_pot_1"].position == pytest.approx((0.01, 0.2, 0.955))
    tracks = {t.entity: t for t in est.tracks()}
    assert tracks["moka_pot_1"].stale and tracks["moka_pot_1"].age == pytest.approx(1.5)
    assert tracks["moka_pot_1"].source == "marker 0"
    pan = tracks["chefmate_8_frypan_1"]
    assert pan.stale and pan.age is None and pan.source == "scene"
    earlier = {t.entity: t for t in est.tracks(0.5)}["moka_pot_1"]
    assert not earlier.stale and earlier.age == pytest.approx(0.5)


def test_one_far_detection_does_not_move_an_object_two_agreeing_ones_do() -> None:
    est, _ = estimator("libero10_stove_moka", confirm_jump=0.05, confirm_frames=2)
    est.observe_markers([marker("moka_pot_1", (0.0, 0.2, 0.955))], 0.0)
    est.observe_markers([marker("moka_pot_1", (0.3, 0.2, 0.955))], 0.1)  # an outlier
    assert est.state().objects["moka_pot_1"].position[0] == pytest.approx(0.0)
    est.observe_markers([marker("moka_pot_1", (0.0, 0.2, 0.955))], 0.2)
    est.observe_markers([marker("moka_pot_1", (0.2, 0.2, 0.955))], 0.3)  # it really moved
    assert est.state().objects["moka_pot_1"].position[0] == pytest.approx(0.0)
    est.observe_markers([marker("moka_pot_1", (0.201, 0.2, 0.955))], 0.4)
    assert est.state().objects["moka_pot_1"].position[0] == pytest.approx(0.201)


def _close_on(est: WorldStateEstimator, widths: Sequence[float], t0: float = 0.0) -> float:
    t = t0
    for w in widths:
        est.observe_joints([0.0] * 7, w, t)
        t += 0.1
    return t


def test_a_grasp_holds_the_object_between_the_fingers_and_carries_it() -> None:
    est, hand = estimator("libero10_stove_moka")
    pot = (0.0, 0.2, 0.955)
    est.observe_markers([marker("moka_pot_1", pot)], 0.0)
    hand.pos = np.array([0.0, 0.2, 0.98])  # the fingertips around the pot's upper half
    t = _close_on(est, [0.08, 0.08, 0.07, 0.065, 0.06])
    assert est.held is None  # still closing: the fingers have not met it
    t = _close_on(est, [0.06, 0.0604, 0.0605], t)  # stalled on it (springing back a little)
    assert est.held == "moka_pot_1"
    s = est.state()
    assert s.gripper is not None and s.gripper.closed and s.gripper.width == pytest.approx(0.0605)
    assert ("moka_pot_1", "robot_left_finger") in s.contacts
    assert s.facts["grasped(moka_pot_1)"] and not s.facts["grasped(chefmate_8_frypan_1)"]
    v = StateView(s, Thresholds())
    assert p_grasped(v, "moka_pot_1")  # the oracle's predicate agrees with the fact
    # lifted with the hand, marker hidden by it: the pot rides along
    hand.pos = np.array([0.1, 0.1, 1.1])
    t = _close_on(est, [0.0605], t)
    moved = est.state().objects["moka_pot_1"].position
    assert moved == pytest.approx((0.1, 0.1, 1.075))
    assert {tr.entity: tr.source for tr in est.tracks()}["moka_pot_1"] == "hand"
    # opened: released where it was
    _close_on(est, [0.07, 0.08], t)
    assert est.held is None and not est.state().facts["grasped(moka_pot_1)"]
    assert est.state().objects["moka_pot_1"].position == pytest.approx(moved)


def test_closing_on_nothing_is_no_grasp() -> None:
    est, hand = estimator("libero10_stove_moka")
    est.observe_markers([marker("moka_pot_1", (0.0, 0.2, 0.955))], 0.0)
    hand.pos = np.array([0.0, 0.2, 0.98])
    _close_on(est, [0.08, 0.06, 0.03, 0.01, 0.002, 0.001, 0.001])  # missed: fully closed
    s = est.state()
    assert est.held is None and s.gripper is not None and s.gripper.closed
    assert not s.facts["grasped(moka_pot_1)"]
    # beside the object, closed on air above the table: nothing either
    est2, hand2 = estimator("libero10_stove_moka")
    hand2.pos = np.array([-0.2, -0.3, 1.0])
    _close_on(est2, [0.08, 0.07, 0.05, 0.05])
    assert est2.held is None


def test_a_knob_marker_gives_the_joint_and_the_device_a_topic_overrides_it() -> None:
    est, _ = estimator("libero10_stove_moka")
    sc = est.scene
    stove = sc.entity("flat_stove_1")
    base = np.eye(4)
    base[:3, 3] = (0.1, -0.14, 0.915)
    est.observe_markers([marker("flat_stove_1", base[:3, 3])], 0.0)
    knob = base @ part_transform(stove, 0.8)
    est.observe_markers([marker("flat_stove_1", knob[:3, 3], knob[:3, :3], "knob", 5)], 0.1)
    s = est.state()
    assert s.joints["flat_stove_1_knob"].q == pytest.approx(0.8)
    assert s.devices["flat_stove_1"].on  # 0.8 >= on_threshold 0.5: the scene's rule
    est.observe_device("flat_stove_1", False, 0.2)
    assert not est.state().devices["flat_stove_1"].on
    with pytest.raises(KeyError, match="not a device"):
        est.observe_device("moka_pot_1", True, 0.3)


def test_an_object_in_a_drawer_rides_with_it_when_no_camera_sees_it() -> None:
    est, _ = estimator("libero10_bowl_drawer")
    sc = est.scene
    cab = sc.entity("white_cabinet_1")
    world_cab = np.eye(4)
    world_cab[:3, 3] = (0.19, 0.14, 0.9 + cab.size[2] / 2)
    open_q = -0.2
    drawer = world_cab @ part_transform(cab, open_q)
    est.observe_markers([marker("white_cabinet_1", world_cab[:3, 3], mid=1),
                         marker("white_cabinet_1", drawer[:3, 3], drawer[:3, :3], "drawer", 2)],
                        0.0)
    region = est.state().objects["white_cabinet_1_bottom_region"]
    bowl_at = np.asarray(region.position) + np.array([0.0, 0.0, -0.02])
    est.observe_markers([marker("akita_black_bowl_1", bowl_at, mid=3)], 0.1)
    assert p_in(StateView(est.state(), Thresholds()), "akita_black_bowl_1",
                "white_cabinet_1_bottom_region")
    # the drawer closes; the bowl's marker is inside, out of sight
    for k, q in enumerate(np.linspace(open_q, 0.0, 6)[1:]):
        d = world_cab @ part_transform(cab, float(q))
        est.observe_markers([marker("white_cabinet_1", d[:3, 3], d[:3, :3], "drawer", 2)],
                            0.2 + 0.1 * k)
    s = est.state()
    assert s.joints["white_cabinet_1_bottom_region"].q == pytest.approx(0.0, abs=1e-9)
    assert s.objects["akita_black_bowl_1"].position[0] == pytest.approx(bowl_at[0] - open_q)
    assert p_in(StateView(s, Thresholds()), "akita_black_bowl_1", "white_cabinet_1_bottom_region")
    assert {t.entity: t.source for t in est.tracks()}["akita_black_bowl_1"] == (
        "white_cabinet_1 drawer")


def test_the_estimate_is_a_valid_spec_record() -> None:
    from mango.oracle.world_state import WorldState

    est, _ = estimator("libero10_mug_microwave")
    est.observe_joints([0.0] * 7, 0.08, 0.5)
    s = est.state()
    again = WorldState.model_validate(s.to_record())  # what a trace file would hold
    assert again == s and s.t == 0.5
    assert set(s.joints) == {e.joint.id for e in est.scene.entities if e.joint is not None}
    assert "robot_hand" in s.objects and s.objects["robot_hand"].kind == "robot"
    q = quat_to_mat(s.objects["robot_hand"].orientation)
    np.testing.assert_allclose(q, DOWN, atol=1e-9)


def test_a_region_on_the_table_is_where_the_scene_puts_it() -> None:
    est, _ = estimator("libero10_mug_pudding_plate")
    r = est.scene.region("living_room_table_plate_right_region")
    got = est.state().objects[r.id]
    assert got.parent == "main_table" and got.kind == "region"
    assert got.position == pytest.approx((r.offset[0], r.offset[1],
                                          est.scene.table.height + r.offset[2]))
