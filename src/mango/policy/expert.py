"""The sim's scripted expert as a policy backend: the same planner (`ExpertPolicy`), driven by
the world state the robot publishes instead of the simulator's internals, conditioned on its
instruction (`policy.instructions`: the whole task or one subgoal of it)."""

from __future__ import annotations

import numpy as np

from mango.errors import InputError
from mango.policy.config import PolicyConfig, preset_for
from mango.policy.presets import Observation, ObservationPreset, PolicyError


class ExpertBackend:

    def __init__(self, scene: str, fault: str | None, preset: ObservationPreset) -> None:
        from mango.sim.env import as_scene
        from mango.sim.expert.policy import ExpertPolicy
        from mango.sim.faults import parse_fault

        self.scene = as_scene(scene)
        self._fault = parse_fault(fault) if fault else None
        self.expert = ExpertPolicy(self.scene, self._fault)
        self.preset = preset

    @classmethod
    def from_config(cls, cfg: PolicyConfig) -> ExpertBackend:
        if not cfg.scene:
            raise InputError("the expert backend needs the scene it plans for", field="scene")
        return cls(cfg.scene, cfg.fault, preset_for(cfg, "joint"))

    def reset(self, instruction: str) -> None:
        """Start the expert on `instruction`: the scene's task, or the subgoal it names
        (`UngroundedInstruction`, a `PolicyError`, says why one cannot be done)."""
        self._start(instruction, new_episode=True)

    def continue_with(self, instruction: str) -> None:
        """The next instruction of the same episode (an orchestrator's subgoal, a rewrite):
        the milestones reached stay, and a fault that already struck stays spent."""
        self._start(instruction, new_episode=False)

    def _start(self, instruction: str, *, new_episode: bool) -> None:
        from mango.policy.instructions import expert_subgoal

        sub = expert_subgoal(self.scene, instruction)
        self.expert.reset(None if sub.whole_task and sub.steps == tuple(
            range(len(self.scene.expert))) else sub.steps, new_episode=new_episode)

    def infer(self, obs: Observation) -> np.ndarray:
        if obs.world_state is None:
            raise PolicyError("the expert backend needs the world state (/world_state)")
        return self.expert.act(obs.world_state, obs.joint_positions)

    @property
    def done(self) -> bool:
        return self.expert.done

    @property
    def error(self) -> str | None:
        return self.expert.error

    def info(self) -> dict[str, object]:
        """Ground truth of the run: the oracle step that fails first and when (spec §5 rule),
        as `mango sim run` labels it."""
        from mango.sim.runner import make_labels

        labels = make_labels(self.scene, 0, self.expert)
        keys = ("fault", "fault_note", "fault_t", "expected_verdict", "failed_step",
                "failed_t", "event", "expert_error")
        return {k: labels.get(k) for k in keys}

    def close(self) -> None:
        pass
