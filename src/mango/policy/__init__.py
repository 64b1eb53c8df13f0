"""VLA policies behind one protocol: observation presets per family, backends `expert`,
`openpi`, `openvla`, `lerobot` (no rclpy here)."""

from mango.policy.base import (
    BACKENDS,
    Policy,
    PolicyBackend,
    PolicyConfig,
    PolicyStep,
    make_backend,
    make_policy,
)
from mango.policy.presets import (
    PRESETS,
    ActionSpec,
    ImageSpec,
    Observation,
    ObservationPreset,
    PolicyError,
    get_preset,
    resize_with_pad,
)

__all__ = [
    "BACKENDS",
    "PRESETS",
    "ActionSpec",
    "ImageSpec",
    "Observation",
    "ObservationPreset",
    "Policy",
    "PolicyBackend",
    "PolicyConfig",
    "PolicyError",
    "PolicyStep",
    "get_preset",
    "make_backend",
    "make_policy",
    "resize_with_pad",
]
