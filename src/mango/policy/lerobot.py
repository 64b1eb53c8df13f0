"""LeRobot checkpoints (`lerobot==0.4.4`, CPU torch): a local policy.

The checkpoint's `config.json` says which policy class it is and which features it was trained
on (`input_features`: `observation.state`, `observation.images.<camera>` with their shapes;
`output_features`: `action`). The backend builds its observation from those, not from a fixed
layout: one image per visual feature, resized to the feature's height and width; the state
from the preset's fields, which must add up to the feature's size. A checkpoint this stack
cannot feed is refused at load time, naming the feature.

Inference is what lerobot's own robot loop does (`lerobot/utils/control_utils.py`
`predict_action`, `lerobot/policies/utils.py` `prepare_observation_for_inference`): images as
float32 CHW in [0, 1] with a batch dimension, the checkpoint's saved pre-processor
(normalisation), `select_action`, the saved post-processor (un-normalisation with the policy's
own statistics). One chunk is the `n_action_steps` actions `select_action` gives before the
policy would look again.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from mango.errors import InputError, read_user_text
from mango.policy.config import PolicyConfig, preset_for
from mango.policy.presets import (
    STATE_SIZES,
    ImageSpec,
    Observation,
    ObservationPreset,
    PolicyError,
)
from mango.torch_support import declare_torchvision_ops

LEROBOT_PIN = "lerobot==0.4.4"
OBS_STATE = "observation.state"  # lerobot/utils/constants.py
OBS_IMAGES = "observation.images"
ACTION = "action"
_log = logging.getLogger(__name__)


def _import_lerobot() -> tuple[Any, Any, Any, Any]:
    try:
        import torch

        declare_torchvision_ops()
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    except ImportError as exc:
        raise InputError(
            f"the lerobot backend needs lerobot and torch (`make setup` installs them; by hand: "
            f"pip install torch==2.13.0 && pip install --no-deps {LEROBOT_PIN}) "
            f"({exc.name or 'lerobot'} is not installed)", field="backend") from None
    return torch, PreTrainedConfig, get_policy_class, make_pre_post_processors


def _kind(path: Path) -> str:
    config = path / "config.json"
    if not config.is_file():
        raise InputError("not a LeRobot checkpoint (no config.json)", file=str(path))
    try:
        return str(json.loads(read_user_text(config, "LeRobot config"))["type"])
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"config.json has no policy 'type' ({exc})",
                         file=str(config)) from None


def _type_name(feature: Any) -> str:
    return str(getattr(feature.type, "value", feature.type))


def preset_from_features(base: ObservationPreset, inputs: dict[str, Any],
                         outputs: dict[str, Any], where: str) -> ObservationPreset:
    """The preset `base` narrowed to what a checkpoint was trained on: one image per visual
    feature at the feature's size, one state entry per state feature. Raises `InputError`
    naming the feature this stack cannot provide."""
    cameras = {spec.key: spec.camera for spec in base.images}
    known = sorted({spec.camera for spec in base.images})
    state_fields = dict(base.state)
    images: list[ImageSpec] = []
    state: list[tuple[str, tuple[Any, ...]]] = []
    for key, feature in inputs.items():
        shape = tuple(int(s) for s in feature.shape)
        kind = _type_name(feature)
        if kind == "VISUAL":
            camera = cameras.get(key)
            if camera is None and key.startswith(OBS_IMAGES + "."):
                name = key[len(OBS_IMAGES) + 1:]
                camera = name if name in known else None
            if camera is None:
                raise InputError(f"checkpoint input feature '{key}': no camera of this stack "
                                 f"feeds it (cameras: {', '.join(known)}; name the feature "
                                 f"{OBS_IMAGES}.<camera>)", file=where)
            if len(shape) != 3 or shape[0] != 3:
                raise InputError(f"checkpoint input feature '{key}' has shape {list(shape)}: "
                                 f"the cameras give RGB images (3, height, width)", file=where)
            images.append(ImageSpec(camera, key, size=(shape[1], shape[2])))
        elif kind == "STATE":
            fields = state_fields.get(key)
            if fields is None:
                raise InputError(f"checkpoint input feature '{key}': preset {base.name} has no "
                                 f"state under that name (it has: {', '.join(state_fields)})",
                                 file=where)
            size = sum(STATE_SIZES[f] for f in fields)
            if shape != (size,):
                raise InputError(f"checkpoint input feature '{key}' has shape {list(shape)}, "
                                 f"preset {base.name} gives ({size},): {' + '.join(fields)}",
                                 file=where)
            state.append((key, fields))
        else:
            raise InputError(f"checkpoint input feature '{key}' is {kind}: this stack gives "
                             f"only camera images and the robot state", file=where)
    need = 7 if base.action.kind == "ee_delta" else 8
    action = outputs.get(ACTION)
    if action is None:
        raise InputError(f"checkpoint has no output feature '{ACTION}' "
                         f"(it has: {', '.join(outputs) or 'none'})", file=where)
    if tuple(int(s) for s in action.shape) != (need,):
        raise InputError(f"checkpoint output feature '{ACTION}' has shape "
                         f"{list(action.shape)}, preset {base.name} needs ({need},): "
                         f"{base.action.kind} rows + gripper", file=where)
    return dataclasses.replace(base, images=tuple(images), state=tuple(state))


class LeRobotBackend:
    """A LeRobot checkpoint folder, run in-process on `device`."""

    def __init__(self, checkpoint: str, preset: ObservationPreset, device: str = "cpu") -> None:
        path = Path(checkpoint)
        self.kind = _kind(path)
        torch, pretrained_config, get_policy_class, make_processors = _import_lerobot()
        where = str(path / "config.json")
        try:
            config = pretrained_config.from_pretrained(str(path))
        except Exception as exc:  # draccus/lerobot raise many kinds for a bad config
            raise InputError(f"lerobot cannot read the {self.kind} config: {exc}",
                             file=where) from None
        self.preset = preset_from_features(preset, dict(config.input_features),
                                           dict(config.output_features), where)
        config.device = device
        self.torch, self.device = torch, device
        self.policy = get_policy_class(self.kind).from_pretrained(str(path), config=config)
        self.policy.to(device)
        self.policy.eval()
        self.pre, self.post = make_processors(
            self.policy.config, pretrained_path=str(path),
            preprocessor_overrides={"device_processor": {"device": device}})
        # select_action answers from its queue this many times before it looks again
        self.steps = int(getattr(self.policy.config, "n_action_steps", 1) or 1)

    @classmethod
    def from_config(cls, cfg: PolicyConfig) -> LeRobotBackend:
        if not cfg.checkpoint:
            raise InputError("the lerobot backend needs a checkpoint", field="checkpoint")
        return cls(cfg.checkpoint, preset_for(cfg, "lerobot"), cfg.device)

    def reset(self, instruction: str) -> None:
        self.policy.reset()
        self.pre.reset()
        self.post.reset()

    def batch(self, obs: Observation) -> dict[str, Any]:
        """The observation as lerobot's `prepare_observation_for_inference` gives it."""
        torch = self.torch
        req = self.preset.encode(obs)
        batch: dict[str, Any] = {}
        for spec in self.preset.images:
            image = torch.from_numpy(req[spec.key]).to(torch.float32) / 255
            batch[spec.key] = image.permute(2, 0, 1).contiguous().unsqueeze(0).to(self.device)
        for key, _fields in self.preset.state:
            batch[key] = torch.from_numpy(req[key]).unsqueeze(0).to(self.device)
        batch["task"] = obs.instruction
        batch["robot_type"] = ""
        return batch

    def infer(self, obs: Observation) -> np.ndarray:
        with self.torch.inference_mode():
            processed = self.pre(self.batch(obs))
            rows = [self.post(self.policy.select_action(processed)) for _ in range(self.steps)]
        out = np.stack([np.asarray(r.detach().cpu().numpy(), float).reshape(-1) for r in rows])
        if not np.all(np.isfinite(out)):
            raise PolicyError("the lerobot policy returned non-finite actions (are its "
                              "normalisation statistics saved in the checkpoint?)")
        return out

    def info(self) -> dict[str, Any]:
        return {"policy_type": self.kind, "n_action_steps": self.steps,
                "cameras": self.preset.cameras()}

    @property
    def done(self) -> bool:
        return False

    def close(self) -> None:
        pass
