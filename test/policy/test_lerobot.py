"""The lerobot backend against the real library (lerobot 0.4.4 on CPU torch), on tiny ACT
checkpoints with random weights saved by lerobot itself.

The conventions are lerobot's, checked with lerobot's own functions
(huggingface/lerobot, v0.4.4):
- `src/lerobot/policies/utils.py` `prepare_observation_for_inference`: every observation
  array becomes a tensor with a batch dimension; images (HWC uint8) become float32 CHW / 255;
  `task` and `robot_type` are strings.
- `src/lerobot/utils/control_utils.py` `predict_action`: that batch through the saved
  pre-processor, `policy.select_action`, the saved post-processor (un-normalisation with the
  checkpoint's statistics), once per control step.
- `src/lerobot/configs/policies.py` `PreTrainedConfig.input_features` / `output_features`:
  the feature names (`observation.state`, `observation.images.<camera>`, `action`) and shapes
  a checkpoint was trained on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.lerobot_policy import tiny_act_checkpoint

from mango.errors import InputError
from mango.policy import Observation
from mango.policy.config import PolicyConfig
from mango.policy.lerobot import LeRobotBackend
from mango.policy.presets import get_preset
from mango.policy.registry import make_policy

HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
MEAN = np.r_[HOME + 0.05 * np.eye(7)[0], 0.04]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_act_checkpoint(tmp_path_factory.mktemp("act") / "ckpt", MEAN, action_std=1e-3,
                               n_action_steps=10)


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Unit action statistics: the actions are the network's output itself, so any difference
    in what reaches the network shows in them."""
    return tiny_act_checkpoint(tmp_path_factory.mktemp("act") / "wide", np.zeros(8),
                               action_std=1.0, n_action_steps=10)


def _obs(seed: int = 0, size: tuple[int, int] = (96, 96)) -> Observation:
    rng = np.random.default_rng(seed)
    return Observation(
        images={c: rng.integers(0, 256, (*size, 3), dtype=np.uint8) for c in ("front", "wrist")},
        joint_positions=HOME + rng.normal(0, 0.01, 7), gripper_width=0.07,
        instruction="put the bowl in the drawer")


def _peer_observation(obs: Observation) -> dict[str, np.ndarray]:
    """The robot-side observation lerobot's loop starts from: HWC uint8 images under their
    feature names, the state as float32 (joint positions, gripper width: the preset's)."""
    return {"observation.images.front": obs.images["front"].copy(),
            "observation.images.wrist": obs.images["wrist"].copy(),
            "observation.state": np.r_[obs.joint_positions, obs.gripper_width].astype(
                np.float32)}


def test_the_batch_is_what_lerobots_prepare_observation_for_inference_builds(
        checkpoint: Path) -> None:
    import torch
    from lerobot.policies.utils import prepare_observation_for_inference

    backend = LeRobotBackend(str(checkpoint), get_preset("lerobot"))
    obs = _obs()
    ours = backend.batch(obs)
    theirs = prepare_observation_for_inference(_peer_observation(obs), torch.device("cpu"),
                                               task=obs.instruction)
    assert set(ours) == set(theirs)
    for key, value in theirs.items():
        if isinstance(value, str):
            assert ours[key] == value, key
            continue
        assert ours[key].dtype == value.dtype == torch.float32, key
        assert ours[key].shape == value.shape, key
        assert torch.equal(ours[key], value), key
    front = ours["observation.images.front"]
    assert front.shape == (1, 3, 96, 96) and 0.0 <= float(front.min()) <= float(front.max()) <= 1
    # channel-first: pixel (row 5, col 7) of the green channel
    assert float(front[0, 1, 5, 7]) == pytest.approx(obs.images["front"][5, 7, 1] / 255)


def test_a_chunk_is_lerobots_predict_action_for_n_action_steps(wide: Path) -> None:
    import torch
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors
    from lerobot.utils.control_utils import predict_action

    backend = LeRobotBackend(str(wide), get_preset("lerobot"))
    obs = _obs(1)
    backend.reset(obs.instruction)
    rows = backend.infer(obs)

    peer = ACTPolicy.from_pretrained(str(wide))
    pre, post = make_pre_post_processors(peer.config, pretrained_path=str(wide))
    peer.reset()
    theirs = np.stack([predict_action(_peer_observation(obs), peer, torch.device("cpu"), pre,
                                      post, use_amp=False, task=obs.instruction).numpy()[0]
                       for _ in range(peer.config.n_action_steps)])
    assert rows.shape == (10, 8)
    np.testing.assert_allclose(rows, theirs, rtol=0, atol=1e-6)
    # the next query looks again: a new observation gives a new chunk
    assert not np.allclose(backend.infer(_obs(2)), rows)


def test_actions_are_unnormalised_with_the_checkpoints_statistics(checkpoint: Path) -> None:
    backend = LeRobotBackend(str(checkpoint), get_preset("lerobot"))
    rows = backend.infer(_obs())
    # action = mean + std * network output; with std 1e-3 rad a row sits within millimetres
    # of the saved mean and still differs from it (the network's output is not zero)
    assert np.max(np.abs(rows - MEAN)) < 0.02
    assert np.max(np.abs(rows - MEAN)) > 1e-5
    # ... and becomes 8-D chunk rows as the lerobot preset says: absolute joint positions and
    # the gripper width (clipped to the hand's range)
    policy = make_policy(PolicyConfig(backend="lerobot", checkpoint=str(checkpoint)))
    obs = _obs()
    policy.reset(obs.instruction)
    step = policy.act(obs)
    assert step.chunk.shape == (10, 8)
    np.testing.assert_allclose(step.chunk[:, :7], step.raw[:, :7])
    np.testing.assert_allclose(step.chunk[:, 7], np.clip(step.raw[:, 7], 0.0, 0.08))
    assert policy.info() == {"policy_type": "act", "n_action_steps": 10,
                             "cameras": ["front", "wrist"]}


def test_the_observation_follows_the_checkpoints_features(tmp_path: Path) -> None:
    ckpt = tiny_act_checkpoint(tmp_path / "wrist_only", MEAN,
                               cameras={"wrist": (3, 64, 80)}, n_action_steps=5)
    backend = LeRobotBackend(str(ckpt), get_preset("lerobot"))
    assert backend.preset.cameras() == ["wrist"]  # the vla_node subscribes to this one only
    assert [s.size for s in backend.preset.images] == [(64, 80)]
    batch = backend.batch(_obs(size=(120, 160)))
    assert set(batch) == {"observation.images.wrist", "observation.state", "task",
                          "robot_type"}
    assert tuple(batch["observation.images.wrist"].shape) == (1, 3, 64, 80)
    assert backend.infer(_obs(size=(120, 160))).shape == (5, 8)


def _edited(checkpoint: Path, folder: Path, edit: dict) -> Path:
    """A copy of `checkpoint` whose config.json says other features (a checkpoint trained
    for another robot or camera set)."""
    folder.mkdir()
    for f in checkpoint.iterdir():
        (folder / f.name).symlink_to(f)
    config = json.loads((checkpoint / "config.json").read_text())
    for section, features in edit.items():
        config[section] = features(config[section])
    (folder / "config.json").unlink()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _with(key: str, type_: str, shape: list[int]):
    return lambda features: {**features, key: {"type": type_, "shape": shape}}


def _renamed(old: str, new: str):
    return lambda features: {new if k == old else k: v for k, v in features.items()}


@pytest.mark.parametrize(("section", "edit", "message"), [
    ("input_features", _with("observation.state", "STATE", [9]),
     r"'observation\.state' has shape \[9\], preset lerobot gives \(8,\)"),
    ("output_features", _with("action", "ACTION", [6]),
     r"output feature 'action' has shape \[6\], preset lerobot needs \(8,\)"),
    ("input_features", _with("observation.images.front", "VISUAL", [1, 96, 96]),
     r"'observation\.images\.front' has shape \[1, 96, 96\]"),
    ("input_features", _renamed("observation.images.front", "observation.images.top"),
     r"'observation\.images\.top': no camera of this stack feeds it \(cameras: front, wrist"),
    ("input_features", _with("observation.environment_state", "ENV", [12]),
     r"'observation\.environment_state' is ENV"),
], ids=["state", "action", "channels", "camera", "env"])
def test_a_checkpoint_the_stack_cannot_feed_is_refused_naming_the_feature(
        checkpoint: Path, tmp_path: Path, section: str, edit, message: str) -> None:
    bad = _edited(checkpoint, tmp_path / "bad", {section: edit})
    with pytest.raises(InputError, match=message) as info:
        make_policy(PolicyConfig(backend="lerobot", checkpoint=str(bad)))
    assert str(bad / "config.json") in str(info.value)


def test_not_a_checkpoint_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no config\.json"):
        make_policy(PolicyConfig(backend="lerobot", checkpoint=str(tmp_path)))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(InputError, match=r"config\.json has no policy 'type'"):
        make_policy(PolicyConfig(backend="lerobot", checkpoint=str(tmp_path)))


def test_without_lerobot_the_error_says_how_to_install(tmp_path: Path) -> None:
    # A process where `import lerobot` fails as on an install without it (a None entry in
    # sys.modules makes the import raise ImportError).
    (tmp_path / "config.json").write_text(json.dumps({"type": "act"}))
    code = ("import sys; sys.modules['lerobot'] = None\n"
            "from mango.errors import InputError\n"
            "from mango.policy.config import PolicyConfig\n"
            "from mango.policy.registry import make_backend\n"
            "try:\n"
            f"    make_backend(PolicyConfig(backend='lerobot', checkpoint={str(tmp_path)!r}))\n"
            "except InputError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=REPO, check=True).stdout
    assert "pip install --no-deps lerobot==0.4.4" in out, out
    assert "make setup" in out
