"""One small policy-backend protocol and the wrapper every backend shares.

A backend turns an `Observation` into raw family actions (`infer`); the `Policy` wrapper adds
what every backend shares: the family preset's conversion to H x 8 joint targets and the
latency measurement. Backends are chosen by configuration (`mango.policy.config`) through
`mango.policy.registry`, the only place that knows their names.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mango.control.kinematics import Kinematics
from mango.policy.presets import Observation, ObservationPreset


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
    # Optional: `continue_with(instruction)`, a new instruction in the same episode (the
    # expert keeps its milestones and a fault that already struck); without it, `reset`.


@dataclass(frozen=True)
class PolicyStep:
    chunk: np.ndarray  # H x 8: joint targets + gripper width
    raw: np.ndarray
    latency: float  # observation -> chunk, seconds


class Policy:
    """A backend plus its family conversion: what the vla_node and the CLI call."""

    def __init__(self, backend: PolicyBackend, kinematics: Kinematics | None = None,
                 needs_world_state: bool = False, plays_chunks_whole: bool = False) -> None:
        self.backend = backend
        self.kinematics = kinematics
        # reads `Observation.world_state`, not camera images (see `registry.BackendEntry`)
        self.needs_world_state = needs_world_state
        # each chunk is a step of its own plan: never queried asynchronously (same place)
        self.plays_chunks_whole = plays_chunks_whole

    @property
    def preset(self) -> ObservationPreset:
        return self.backend.preset

    @property
    def done(self) -> bool:
        return self.backend.done

    def reset(self, instruction: str, *, new_episode: bool = True) -> None:
        """Start on `instruction`; `new_episode=False` goes on in the same episode (an
        orchestrator's next subgoal) for a backend that keeps episode state
        (`continue_with`), and is a plain reset for the others."""
        if not new_episode and callable(getattr(self.backend, "continue_with", None)):
            self.backend.continue_with(instruction)  # type: ignore[attr-defined]
        else:
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
