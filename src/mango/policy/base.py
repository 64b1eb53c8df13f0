"""One small policy-backend protocol, chosen by configuration.

A backend turns an `Observation` into raw family actions (`infer`); the `Policy` wrapper adds
what every backend shares: the family preset's conversion to H x 8 joint targets and the
latency measurement. `make_policy(config)` looks the backend up in `BACKENDS` — the only place
that knows the names.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict

from mango.control.kinematics import Kinematics
from mango.policy.presets import Observation, ObservationPreset, PolicyError, get_preset


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


class PolicyBackend(Protocol):
    preset: ObservationPreset

    def reset(self, instruction: str) -> None:
        """Start a new episode."""
        ...

    def infer(self, obs: Observation) -> np.ndarray:
        """Raw actions (H x D) in the preset's action layout."""
        ...

    @property
    def done(self) -> bool:
        """True when the policy itself declares the task finished (the expert does)."""
        ...

    def close(self) -> None: ...

    # Optional: `info() -> dict`, JSON-able facts about the run so far (the scripted expert
    # reports its fault's ground truth); backends without it report nothing.


@dataclass(frozen=True)
class PolicyStep:
    chunk: np.ndarray  # H x 8: joint targets + gripper width
    raw: np.ndarray
    latency: float  # observation -> chunk, seconds


class Policy:
    """A backend plus its family conversion: what the vla_node and the CLI call."""

    def __init__(self, backend: PolicyBackend, kinematics: Kinematics | None = None) -> None:
        self.backend = backend
        self.kinematics = kinematics

    @property
    def preset(self) -> ObservationPreset:
        return self.backend.preset

    @property
    def done(self) -> bool:
        return self.backend.done

    def reset(self, instruction: str) -> None:
        self.backend.reset(instruction)

    def act(self, obs: Observation) -> PolicyStep:
        t0 = time.perf_counter()
        raw = np.asarray(self.backend.infer(obs))
        chunk = self.preset.to_chunk(raw, obs, self.kinematics)
        return PolicyStep(chunk, raw, time.perf_counter() - t0)

    def info(self) -> dict[str, Any]:
        """The backend's facts about the run (`{}` when it has none)."""
        info = getattr(self.backend, "info", None)
        return dict(info()) if callable(info) else {}

    def close(self) -> None:
        self.backend.close()


def _expert(cfg: PolicyConfig) -> PolicyBackend:
    from mango.policy.expert import ExpertBackend

    return ExpertBackend.from_config(cfg)


def _openpi(cfg: PolicyConfig) -> PolicyBackend:
    from mango.policy.openpi import OpenPIBackend

    return OpenPIBackend.from_config(cfg)


def _openvla(cfg: PolicyConfig) -> PolicyBackend:
    from mango.policy.openvla import OpenVLABackend

    return OpenVLABackend.from_config(cfg)


def _lerobot(cfg: PolicyConfig) -> PolicyBackend:
    from mango.policy.lerobot import LeRobotBackend

    return LeRobotBackend.from_config(cfg)


BACKENDS: dict[str, Callable[[PolicyConfig], PolicyBackend]] = {
    "expert": _expert, "openpi": _openpi, "openvla": _openvla, "lerobot": _lerobot,
}


def make_backend(cfg: PolicyConfig) -> PolicyBackend:
    factory = BACKENDS.get(cfg.backend)
    if factory is None:
        raise PolicyError(f"unknown policy backend {cfg.backend!r} "
                          f"(known: {', '.join(BACKENDS)})")
    return factory(cfg)


def make_policy(cfg: PolicyConfig, kinematics: Kinematics | None = None) -> Policy:
    return Policy(make_backend(cfg), kinematics)


def preset_for(cfg: PolicyConfig, default: str) -> ObservationPreset:
    return get_preset(cfg.preset or default)
