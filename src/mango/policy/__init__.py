"""VLA policies behind one protocol: observation presets per family, backends `expert`,
`openpi`, `openvla`, `lerobot` chosen by configuration (no rclpy here).

`presets` (the canonical observation and the per-family wire layouts) < `config` (the
configuration model) < the backends; `base` holds the protocol and the `Policy` wrapper;
`registry` maps backend names to factories.
"""

from mango.policy.base import Policy, PolicyBackend, PolicyStep
from mango.policy.config import PolicyConfig
from mango.policy.presets import (
    PRESETS,
    ActionSpec,
    ImageSpec,
    Observation,
    ObservationPreset,
    PolicyError,
    get_preset,
)
from mango.policy.registry import BACKENDS, make_backend, make_policy

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
]
