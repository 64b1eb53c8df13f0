"""The policy configuration: which backend, which observation preset, and each backend's
connection or model settings. Configuration is kept apart from the backends (as LeRobot
does) so that they, the registry and the nodes read one model without importing each other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mango.policy.presets import ObservationPreset, get_preset, with_libero_problem


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
    # LIBERO presets: the BDDL problem class whose world frame the end-effector state is read
    # in (default: the scene's `libero_problem`, else LIBERO's kitchen table)
    libero_problem: str | None = None


def preset_for(cfg: PolicyConfig, default: str) -> ObservationPreset:
    """The configured observation preset, or the backend's `default` when none is set, with
    a LIBERO preset's state in the arena of the task it runs (the configured problem class,
    else the scene's)."""
    preset = get_preset(cfg.preset or default)
    if preset.state_base is None:
        return preset
    problem = cfg.libero_problem
    if problem is None and cfg.scene:
        from mango.sim.scene import as_scene

        problem = as_scene(cfg.scene).libero_problem
    return with_libero_problem(preset, problem)
