"""LeRobot checkpoints (optional extra, `pip install lerobot==0.6.1`): a local policy.

Loaded with `<PolicyClass>.from_pretrained(checkpoint)` (the class named by the checkpoint's
`config.json` `type`) and its saved pre/post-processors (normalisation), queried with
`predict_action_chunk`. lerobot and torch are imported only when this backend is used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mango.errors import InputError
from mango.policy.config import PolicyConfig, preset_for
from mango.policy.presets import Observation, ObservationPreset, PolicyError

LEROBOT_PIN = "lerobot==0.6.1"


def _import_lerobot() -> tuple[Any, Any, Any]:
    try:
        import torch
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors
    except ImportError as exc:
        raise InputError(
            f"the lerobot backend needs the optional extra: pip install {LEROBOT_PIN} "
            f"({exc.name or 'lerobot'} is not installed)", field="backend") from None
    return torch, get_policy_class, make_pre_post_processors


class LeRobotBackend:

    def __init__(self, checkpoint: str, preset: ObservationPreset, device: str = "cpu") -> None:
        path = Path(checkpoint)
        config = path / "config.json"
        if not config.is_file():
            raise InputError("not a LeRobot checkpoint (no config.json)", file=str(path))
        try:
            kind = json.loads(config.read_text(encoding="utf-8"))["type"]
        except (json.JSONDecodeError, KeyError) as exc:
            raise InputError(f"config.json has no policy 'type' ({exc})",
                             file=str(config)) from None
        torch, get_policy_class, make_processors = _import_lerobot()
        self.torch, self.device, self.preset = torch, device, preset
        self.policy = get_policy_class(kind).from_pretrained(str(path))
        self.policy.to(device)
        self.policy.eval()
        self.pre, self.post = make_processors(self.policy.config, pretrained_path=str(path))

    @classmethod
    def from_config(cls, cfg: PolicyConfig) -> LeRobotBackend:
        if not cfg.checkpoint:
            raise InputError("the lerobot backend needs a checkpoint", field="checkpoint")
        return cls(cfg.checkpoint, preset_for(cfg, "lerobot"), cfg.device)

    def reset(self, instruction: str) -> None:
        self.policy.reset()

    def infer(self, obs: Observation) -> np.ndarray:
        torch = self.torch
        req = self.preset.encode(obs)
        batch: dict[str, Any] = {}
        for key, value in req.items():
            if isinstance(value, np.ndarray) and value.dtype == np.uint8:  # HWC image
                t = torch.from_numpy(value.copy()).permute(2, 0, 1).float() / 255.0
                batch[key] = t.unsqueeze(0).to(self.device)
            elif isinstance(value, np.ndarray):
                batch[key] = torch.from_numpy(value).float().unsqueeze(0).to(self.device)
            else:
                batch[key] = [value]
        with torch.inference_mode():
            chunk = self.post(self.policy.predict_action_chunk(self.pre(batch)))
        out = np.asarray(chunk.detach().cpu().numpy(), float)
        if out.ndim == 3:
            out = out[0]
        if out.ndim != 2:
            raise PolicyError(f"lerobot policy returned actions of shape {list(out.shape)}")
        return out

    @property
    def done(self) -> bool:
        return False

    def close(self) -> None:
        pass
