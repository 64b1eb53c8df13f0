"""Observation presets against the peers' own conventions, with numbers worked by hand.

Each test transcribes the peer's formula (cited) and checks our encode/decode against it on
the real FR3 kinematics (Franka's DH table): in the "ready" pose the hand's TCP sits at
[0.30689, 0, 0.48688] in the base frame (flange 0.5903 m high, Franka Hand TCP 0.1034 m
below it) pointing straight down: rotation diag(1, -1, -1), quaternion (w, x, y, z) =
(0, 1, 0, 0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mango.control import load_robot
from mango.geometry import axis_angle_to_mat, mat_to_axis_angle, mat_to_quat, quat_to_mat
from mango.ik import LadderSettings
from mango.policy import PRESETS, Observation, PolicyError, get_preset
from mango.policy.config import PolicyConfig, preset_for
from mango.policy.kinematics import make_kinematics
from mango.policy.presets import (
    LIBERO_ROBOT_BASE,
    euler_to_mat,
    libero_robot_base,
    mat_to_euler,
)

ROBOT = load_robot("fr3")
KIN = make_kinematics(ROBOT)
READY_TCP = np.array([0.30689, 0.0, 0.48688])
# the IK ladder stops within this distance of a target (VoLo App. B.2: 5e-4 m)
IK_TOL = LadderSettings().pos_tol
IK_ROT_TOL = LadderSettings().rot_tol


def _obs(width: float = 0.06, q: np.ndarray | None = None) -> Observation:
    front = np.zeros((480, 640, 3), np.uint8)
    front[:20, :20] = (255, 0, 0)  # top-left marker
    return Observation({"front": front, "wrist": np.zeros((224, 224, 3), np.uint8)},
                       np.asarray(ROBOT.home if q is None else q), width, "do it")


def _robosuite_quat2axisangle(xyzw: np.ndarray) -> np.ndarray:
    """robosuite transform_utils.quat2axisangle, as openpi examples/libero/main.py applies it
    to `robot0_eef_quat` (x, y, z, w): angle 2 acos(w), axis xyz / sqrt(1 - w^2)."""
    w = min(max(float(xyzw[3]), -1.0), 1.0)
    den = math.sqrt(1.0 - w * w)
    return np.zeros(3) if math.isclose(den, 0.0) else xyzw[:3] * 2.0 * math.acos(w) / den


def _hand(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pos, quat = KIN.fk(q)
    return pos, quat_to_mat(quat)


def test_ready_pose_is_what_the_hand_numbers_assume() -> None:
    pos, rot = _hand(np.asarray(ROBOT.home))
    assert np.allclose(pos, READY_TCP, atol=1e-5)
    assert np.allclose(rot, np.diag([1.0, -1.0, -1.0]), atol=1e-5)


def test_libero_request_is_openpis_libero_client() -> None:
    # Physical-Intelligence/openpi examples/libero/main.py: both images turned 180 degrees
    # from LIBERO's upside-down renders, i.e. upright, resize_with_pad to 224; state =
    # robot0_eef_pos (world) ++ quat2axisangle(robot0_eef_quat) ++ robot0_gripper_qpos.
    req = get_preset("libero").encode(_obs(0.06), KIN)
    assert set(req) == {"observation/image", "observation/wrist_image", "observation/state",
                        "prompt"}
    img = req["observation/image"]
    assert img.shape == (224, 224, 3) and img.dtype == np.uint8
    # 640x480 -> 224x168 centred (28 px bars): the top-left marker stays top-left (upright)
    assert img[0].max() == 0 and img[-1].max() == 0
    assert img[30, 2, 0] > 200 and img[-31, -3, 0] == 0
    state = req["observation/state"]
    assert state.shape == (8,) and state.dtype == np.float32
    # LIBERO's world: Lifelong-Robot-Learning/LIBERO libero/libero/envs/robots/mounted_panda.py
    # puts the base at x = -0.16 - 1.0/2 (kitchen table 1.0 m long,
    # libero/libero/envs/problems/libero_kitchen_tabletop_manipulation.py), unrotated, and
    # robosuite raises it by the Rethink mount: 0.922 - 0.01 m.
    assert LIBERO_ROBOT_BASE == (-0.66, 0.0, 0.912)
    expected_pos = np.array([-0.66 + 0.30689, 0.0, 0.912 + 0.48688])
    # straight down = quaternion (x, y, z, w) = (1, 0, 0, 0): 2 acos(0) = pi about x
    expected_aa = _robosuite_quat2axisangle(np.array([1.0, 0.0, 0.0, 0.0]))
    assert np.allclose(expected_aa, [math.pi, 0.0, 0.0])
    # PandaGripper's finger joints: +w/2 and -w/2 (robosuite robot0_gripper_qpos)
    assert np.allclose(state, [*expected_pos, *expected_aa, 0.03, -0.03], atol=1e-4)


# Lifelong-Robot-Learning/LIBERO libero/libero/envs/robots/mounted_panda.py and
# on_the_ground_panda.py (`base_xpos_offset`: table -0.16 - L/2, study_table -0.25 - L/2,
# living_room_table (-0.16 - L/2, 0, 0.42), coffee_table (-0.16 - L/2, 0, 0.41), empty
# (-0.6, 0, 0)); the table lengths L from libero/libero/envs/problems/*.py (kitchen and
# tabletop 1.0, study 1.0, living room and coffee table 0.70); mounted robots stand on the
# Rethink mount (root at 0.912 m, as above), robots "on the ground" have none.
@pytest.mark.parametrize(("problem", "base"), [
    ("LIBERO_Kitchen_Tabletop_Manipulation", (-0.66, 0.0, 0.912)),
    ("LIBERO_Tabletop_Manipulation", (-0.66, 0.0, 0.912)),
    ("LIBERO_Study_Tabletop_Manipulation", (-0.75, 0.0, 0.912)),
    ("LIBERO_Living_Room_Tabletop_Manipulation", (-0.51, 0.0, 0.42)),
    ("LIBERO_Coffee_Table_Manipulation", (-0.51, 0.0, 0.41)),
    ("LIBERO_Floor_Manipulation", (-0.6, 0.0, 0.0)),
])
def test_liberos_robot_base_per_problem_class(problem: str, base: tuple) -> None:
    assert libero_robot_base(problem) == pytest.approx(base)
    assert libero_robot_base(problem.lower()) == pytest.approx(base)  # LIBERO: case-insensitive


def test_libero_state_is_in_the_scenes_arena() -> None:
    # libero10_soup_sauce_basket is LIVING_ROOM_SCENE2: the robot stands on the floor there
    preset = preset_for(PolicyConfig(backend="openpi", scene="soup_sauce_basket"), "libero")
    state = preset.encode(_obs(0.06), KIN)["observation/state"]
    assert state[:3] == pytest.approx([-0.51 + 0.30689, 0.0, 0.42 + 0.48688], abs=1e-4)
    # a scene without a class (and no scene: a real robot) reads the kitchen's, unless told
    assert preset_for(PolicyConfig(backend="openpi"), "libero").state_base == LIBERO_ROBOT_BASE
    told = preset_for(PolicyConfig(backend="openpi", scene="soup_sauce_basket",
                                   libero_problem="LIBERO_Study_Tabletop_Manipulation"),
                      "libero")
    assert told.state_base == pytest.approx((-0.75, 0.0, 0.912))
    # joint-space presets have no world frame to move
    assert preset_for(PolicyConfig(backend="openpi", scene="soup_sauce_basket"),
                      "droid").state_base is None
    with pytest.raises(PolicyError, match="unknown LIBERO problem class 'LIBERO_Moon'"):
        preset_for(PolicyConfig(backend="openpi", libero_problem="LIBERO_Moon"), "libero")


def test_libero_axis_angle_matches_robosuite_off_the_ready_pose() -> None:
    q = np.asarray(ROBOT.home) + np.array([0.3, 0.1, -0.2, 0.1, 0.4, -0.2, 0.5])
    state = get_preset("libero").encode(_obs(q=q), KIN)["observation/state"]
    wxyz = mat_to_quat(_hand(q)[1])
    expected = _robosuite_quat2axisangle(np.r_[wxyz[1:], wxyz[0]])
    assert np.allclose(state[3:6], expected, atol=1e-5)


def test_libero_actions_are_robosuite_osc_deltas() -> None:
    # robosuite OSC (the LIBERO controller, output_max 0.05 m / 0.5 rad): the input is clipped
    # to [-1, 1] and scaled; the rotation is a rotation vector applied on the left (base
    # frame): goal = R(delta) @ current. Gripper: -1 open, +1 close (LIBERO_DUMMY_ACTION in
    # openpi examples/libero/main.py is "stand still, gripper open": [0]*6 + [-1]).
    actions = np.array([[0.5, 0, 0, 0, 0, 0, -1.0],
                        [2.0, 0, -0.4, 0, 0, 0.2, 1.0]])
    chunk = get_preset("libero").to_chunk(actions, _obs(), KIN)
    assert chunk.shape == (2, 8)
    p1, r1 = _hand(chunk[0, :7])
    p2, r2 = _hand(chunk[1, :7])
    assert np.allclose(p1, READY_TCP + np.array([0.025, 0, 0]), atol=IK_TOL)  # 0.5 * 0.05 m
    assert np.allclose(r1, np.diag([1.0, -1, -1]), atol=1e-3)
    # x: 2.0 is clipped to 1 (+0.05 m); z: -0.4 * 0.05 m
    assert np.allclose(p2, READY_TCP + np.array([0.025 + 0.05, 0, -0.02]), atol=IK_TOL)
    assert np.allclose(r2, axis_angle_to_mat([0, 0, 0.1]) @ np.diag([1.0, -1, -1]), atol=1e-3)
    assert np.allclose(chunk[:, 7], [0.08, 0.0])


def test_droid_request_is_openpis_droid_client() -> None:
    # Physical-Intelligence/openpi examples/droid/main.py: exterior + wrist image (224, padded),
    # joint_position (7) and gripper_position (1); droid-dataset/droid droid/franka/robot.py
    # get_gripper_position: 1 - width / max_width.
    req = get_preset("droid").encode(_obs(0.06), KIN)
    assert set(req) == {"observation/exterior_image_1_left", "observation/wrist_image_left",
                        "observation/joint_position", "observation/gripper_position", "prompt"}
    assert req["observation/joint_position"].shape == (7,)
    assert np.allclose(req["observation/joint_position"], ROBOT.home, atol=1e-6)
    assert req["observation/gripper_position"].shape == (1,)
    assert req["observation/gripper_position"][0] == pytest.approx(0.25)  # 6 of 8 cm open


def test_droid_joint_velocities_are_droid_position_deltas() -> None:
    # openpi examples/droid/main.py: gripper binarised at 0.5, every dimension clipped to
    # [-1, 1], one row per 15 Hz step. droid-dataset/droid droid/robot_ik/robot_ik_solver.py
    # joint_velocity_to_delta: scaled so no joint exceeds 1, times max_joint_delta = 0.2 rad;
    # droid/franka/robot.py adds that delta to the joints: 0.2 rad per step = 3 rad/s at 1.0.
    vel = np.zeros((3, 8))
    vel[0, :2] = [0.5, 0.0]
    vel[1, :2] = [1.5, -0.25]  # 1.5 -> 1.0 by the clip
    vel[2, :2] = [-1.0, 0.5]
    vel[:, 7] = [0.3, 0.7, 0.51]
    chunk = get_preset("droid").to_chunk(vel, _obs(), KIN)
    assert chunk.shape == (3, 8)
    assert np.allclose(chunk[:, 0] - ROBOT.home[0], [0.1, 0.3, 0.1])
    assert np.allclose(chunk[:, 1] - ROBOT.home[1], [0.0, -0.05, 0.05])
    assert np.allclose(chunk[:, 2:7], np.asarray(ROBOT.home)[2:7])
    assert np.allclose(chunk[:, 7], [0.08, 0.0, 0.0])  # closed above 0.5
    assert get_preset("droid").rate_hz == 15.0


def test_openvla_bridge_actions_are_euler_deltas() -> None:
    # openvla/openvla prismatic/vla/datasets/rlds/utils/data_utils.py relabel_bridge_actions:
    # Bridge actions are differences of the state's [x, y, z, roll, pitch, yaw]; the gripper
    # is 1 open, 0 closed (oxe/transforms.py). The target orientation is the current Euler
    # angles plus the delta, which differs from a base-frame rotation vector once pitched.
    start_rot = euler_to_mat(np.array([math.pi, 0.4, 0.0]))
    q0 = KIN.ik(READY_TCP, mat_to_quat(start_rot), ROBOT.home)
    chunk = get_preset("openvla").to_chunk(
        np.array([[0.01, 0.0, -0.02, 0.2, 0.0, 0.0, 1.0]]), _obs(q=q0), KIN)
    pos, rot = _hand(chunk[0, :7])
    assert np.allclose(pos, READY_TCP + np.array([0.01, 0, -0.02]), atol=2 * IK_TOL)
    by_hand = (axis_angle_to_mat([0, 0, 0.0]) @ axis_angle_to_mat([0, 0.4, 0])
               @ axis_angle_to_mat([math.pi + 0.2, 0, 0]))
    # two IK answers in a row (the start pose, then the action): twice the tolerance
    assert np.linalg.norm(mat_to_axis_angle(rot @ by_hand.T)) < 2 * IK_ROT_TOL
    assert not np.allclose(rot, axis_angle_to_mat([0.2, 0, 0]) @ start_rot, atol=1e-2)
    assert chunk[0, 7] == pytest.approx(0.08)
    assert get_preset("openvla").encode(_obs(), KIN)["unnorm_key"] == "bridge_orig"


def test_openvla_libero_actions_and_unnorm_key() -> None:
    # openvla/openvla experiments/robot/libero/run_libero_eval.py: unnorm_key = the suite,
    # or "<suite>_no_noops" when only that is in the checkpoint (the released LIBERO
    # fine-tunes); gripper [0, 1] -> sign(2x - 1), inverted: > 0.5 opens (LIBERO -1).
    # The actions are LIBERO's OSC inputs, as for the `libero` preset.
    preset = get_preset("openvla_libero")
    req = preset.encode(_obs(), KIN)
    assert req["unnorm_key"] == "libero_10_no_noops" and req["instruction"] == "do it"
    assert req["image"][30, 2, 0] > 200  # upright (get_libero_image turns renders upright)
    chunk = preset.to_chunk(np.array([[0, 0.4, 0, 0, 0, 0, 0.9], [0, 0, 0, 0, 0, 0, 0.1]]),
                            _obs(), KIN)
    assert np.allclose(_hand(chunk[0, :7])[0], READY_TCP + np.array([0, 0.02, 0]), atol=IK_TOL)
    assert np.allclose(chunk[:, 7], [0.08, 0.0])


def test_euler_round_trip() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        rpy = rng.uniform([-3, -1.5, -3], [3, 1.5, 3])
        assert np.allclose(mat_to_euler(euler_to_mat(rpy)), rpy, atol=1e-9)
    # static x-y-z: yaw about the base z axis last
    assert np.allclose(euler_to_mat([0, 0, 0.3]), axis_angle_to_mat([0, 0, 0.3]))


def test_joint_preset_passes_absolute_targets() -> None:
    actions = np.column_stack([np.tile(ROBOT.home, (4, 1)), np.full(4, 0.5)])
    chunk = get_preset("joint").to_chunk(actions, _obs())
    assert np.allclose(chunk[:, :7], ROBOT.home) and np.allclose(chunk[:, 7], 0.08)  # clipped


@pytest.mark.parametrize(
    ("actions", "message"),
    [(np.zeros((2, 3)), "actions must be H x 8"), (np.full((1, 8), np.nan), "non-finite"),
     (np.zeros((0, 8)), "actions must be H x 8")],
)
def test_bad_replies_are_policy_errors(actions: np.ndarray, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        get_preset("joint").to_chunk(actions, _obs())


def test_unreachable_first_action_is_an_error() -> None:
    # the arm nearly straight up (joint 4 at its stretched limit): 5 cm higher is out of reach
    q = np.zeros(7)
    q[3], q[5] = ROBOT.upper[3], math.pi / 2
    with pytest.raises(PolicyError, match="first action of the chunk is unreachable"):
        get_preset("libero").to_chunk(np.array([[0, 0, 1.0, 0, 0, 0, -1.0]]), _obs(q=q), KIN)


def test_end_effector_state_without_kinematics_is_an_error() -> None:
    with pytest.raises(PolicyError, match="state field eef_pos needs kinematics"):
        get_preset("libero").encode(_obs(), None)


def test_every_preset_sends_upright_images_of_its_size() -> None:
    for name, preset in PRESETS.items():
        req = preset.encode(_obs(), KIN)
        assert req[preset.prompt_key] == "do it", name
        for spec in preset.images:
            img = req[spec.key]
            assert img.shape == (*spec.size, 3) and img.dtype == np.uint8, name
            if spec.camera == "front":
                assert img[30, 2, 0] > 200, f"{name}: the front image is not upright"


def test_ee_delta_chunk_stops_where_the_ik_would_change_branch() -> None:
    # The seed/pose of test/control/test_ik.py's wrist flip: uncapped, the ladder answers the
    # second row from its "joint 7 - pi" start and the chunk would swing joint 7 by 3 rad in
    # one step (the controller refused such a chunk in test/bringup/test_attach.py). Capped,
    # the reachable prefix is the chunk, as for an unreachable row.
    seed = np.array([2.4664, 0.8006, -1.4376, -0.626, 1.2006, 4.0179, 1.5665])
    near = np.array([2.4572, 0.8569, -1.4214, -0.5371, 1.2515, 4.0006, 1.5895])
    (p0, r0), (p1, r1) = _hand(seed), _hand(near)
    spec = get_preset("libero").action
    row = np.r_[(p1 - p0) / spec.pos_scale, mat_to_axis_angle(r1 @ r0.T) / spec.rot_scale, -1]
    assert np.all(np.abs(row) <= 1.0)  # inside the preset's clip: the row is as sent
    chunk = get_preset("libero").to_chunk(np.array([np.r_[np.zeros(6), -1], row]),
                                          _obs(q=seed), KIN)
    assert chunk.shape == (1, 8)
    assert np.allclose(chunk[0, :7], seed, atol=1e-9)
    with pytest.raises(PolicyError, match="first action of the chunk is unreachable: no "
                                          "continuous joint path"):
        get_preset("libero").to_chunk(np.array([row]), _obs(q=seed), KIN)
