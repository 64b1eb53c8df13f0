"""One orchestrated episode of any mode: the mode's loop, chosen by configuration."""

from __future__ import annotations

from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.loop import TaskOutcome, run_task
from mango.orchestrator.motor import run_motor_task
from mango.orchestrator.schemas import EpisodeRecord
from mango.sim.faults import Fault
from mango.sim.scene import SceneSpec


def run_episode(scene: SceneSpec, seed: int, config: OrchestratorConfig,
                fault: Fault | None = None, instruction: str | None = None,
                record: EpisodeRecord | None = None) -> TaskOutcome:
    """`motor` runs MotorMind's roles (`motor`), every other mode VoLo's loop (`loop`)."""
    run = run_motor_task if config.spec.executor == "motion" else run_task
    return run(scene, seed, config, fault, instruction, record)
