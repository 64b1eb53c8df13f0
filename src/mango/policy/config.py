"""The policy configuration: which backend, which observation preset, and each backend's
connection or model settings. Configuration is kept apart from the backends (as LeRobot
does) so that they, the registry and the nodes read one model without importing each other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mango.policy.presets import ObservationPreset, get_preset


class PolicyConfig(BaseModel):
    """Everything a backend may need; each backend reads its own fields."""

    model_config = ConfigDict(extra="forbid")
    backend: str = "expert"
    preset: str | None = None  # default: the backend's own
    host: str = "127.0.0.1"  # openpi
    port: int = 8000
    url: str = "http://127.0.0.1:8000/act"  # openvla
    unnorm_key: str | None = None
    checkpoint: str | None = None  # lerobot
    device: str = "cpu"
    scene: str | None = None  # expert
    fault: str | None = None
    timeout: float = 30.0


def preset_for(cfg: PolicyConfig, default: str) -> ObservationPreset:
    """The configured observation preset, or the backend's `default` when none is set."""
    return get_preset(cfg.preset or default)
