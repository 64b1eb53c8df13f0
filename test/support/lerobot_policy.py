"""Tiny LeRobot checkpoints with random weights, made with the real library (lerobot 0.4.4):
an ACT policy with a small transformer and no pretrained backbone, saved with its pre- and
post-processors (normalisation statistics) as `lerobot-train` saves a checkpoint."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from mango.torch_support import declare_torchvision_ops


def tiny_act_checkpoint(folder: Path, action_mean: Sequence[float],
                        action_std: float = 1e-3, state_size: int = 8,
                        cameras: Mapping[str, tuple[int, int, int]] | None = None,
                        chunk_size: int = 20, n_action_steps: int = 10, seed: int = 0) -> Path:
    """Save an ACT checkpoint to `folder`: actions are `action_mean + action_std * (network
    output)`, so a caller who sets the mean to a joint configuration gets rows near it."""
    import torch

    declare_torchvision_ops()
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    cams = {"front": (3, 96, 96), "wrist": (3, 96, 96)} if cameras is None else cameras
    inputs = {"observation.state": PolicyFeature(FeatureType.STATE, (state_size,))}
    inputs.update({f"observation.images.{c}": PolicyFeature(FeatureType.VISUAL, tuple(shape))
                   for c, shape in cams.items()})
    mean = torch.tensor(np.asarray(action_mean, np.float32))
    config = ACTConfig(
        input_features=inputs,
        output_features={"action": PolicyFeature(FeatureType.ACTION, (len(mean),))},
        chunk_size=chunk_size, n_action_steps=n_action_steps, pretrained_backbone_weights=None,
        dim_model=64, n_heads=4, dim_feedforward=128, n_encoder_layers=1, n_decoder_layers=1,
        n_vae_encoder_layers=1, latent_dim=16, device="cpu")
    torch.manual_seed(seed)
    policy = ACTPolicy(config)
    stats = {"observation.state": {"mean": torch.zeros(state_size),
                                   "std": torch.ones(state_size)},
             "action": {"mean": mean, "std": torch.full_like(mean, action_std)}}
    for c, shape in cams.items():  # ImageNet-like per-channel statistics
        stats[f"observation.images.{c}"] = {"mean": torch.full((shape[0], 1, 1), 0.45),
                                            "std": torch.full((shape[0], 1, 1), 0.25)}
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    folder.mkdir(parents=True, exist_ok=True)
    policy.save_pretrained(folder)
    pre.save_pretrained(folder)
    post.save_pretrained(folder)
    return folder
