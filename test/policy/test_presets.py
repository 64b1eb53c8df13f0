"""Observation presets as data: request layouts and action conversion per policy family."""

from __future__ import annotations

import numpy as np
import pytest

from mango.control import load_robot
from mango.policy import PRESETS, Observation, PolicyError, get_preset
from mango.policy.kinematics import make_kinematics

ROBOT = load_robot("fr3")
KIN = make_kinematics(ROBOT)


def _obs(width: float = 0.06) -> Observation:
    front = np.zeros((480, 640, 3), np.uint8)
    front[:20, :20] = (255, 0, 0)  # top-left marker
    return Observation({"front": front, "wrist": np.zeros((224, 224, 3), np.uint8)},
                       np.asarray(ROBOT.home), width, "do it")


def test_droid_layout_and_velocity_integration() -> None:
    preset = get_preset("droid")
    req = preset.encode(_obs(0.06), KIN)
    assert set(req) == {"observation/exterior_image_1_left", "observation/wrist_image_left",
                        "observation/joint_position", "observation/gripper_position", "prompt"}
    assert req["observation/joint_position"].shape == (7,)
    assert req["observation/gripper_position"][0] == pytest.approx(0.25)  # 6 of 8 cm open
    vel = np.zeros((3, 8))
    vel[:, 0] = 1.5  # rad/s on joint 1
    vel[:, 7] = [0.0, 0.5, 1.0]  # closedness
    chunk = preset.to_chunk(vel, _obs(), KIN)
    assert chunk.shape == (3, 8)
    assert np.allclose(chunk[:, 0] - ROBOT.home[0], [0.1, 0.2, 0.3])
    assert np.allclose(chunk[:, 7], [0.08, 0.04, 0.0])


def test_libero_images_rotated_and_padded() -> None:
    req = get_preset("libero").encode(_obs(), KIN)
    img = req["observation/image"]
    assert img.shape == (224, 224, 3)
    # 640x480 -> 224x168 centred with 28 px bars, then rotated 180 degrees
    assert img[0].max() == 0 and img[-1].max() == 0
    assert img[-31, -3, 0] > 200 and img[30, 2, 0] == 0  # top-left marker ends bottom-right
    state = req["observation/state"]
    pos, _ = KIN.fk(ROBOT.home)
    assert np.allclose(state[:3], pos, atol=1e-5) and np.allclose(state[6:], [0.03, -0.03])


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
    far = np.array([[40.0, 0, 0, 0, 0, 0, -1.0]])  # 2 m at LIBERO's 0.05 m per unit
    with pytest.raises(PolicyError, match="first action of the chunk is unreachable"):
        get_preset("libero").to_chunk(far, _obs(), KIN)


def test_every_preset_encodes_the_canonical_observation() -> None:
    for name, preset in PRESETS.items():
        req = preset.encode(_obs(), KIN)
        assert req[preset.prompt_key] == "do it", name
        for spec in preset.images:
            assert req[spec.key].shape == (*spec.size, 3), name
