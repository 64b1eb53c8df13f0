"""Embedded MuJoCo Franka: LIBERO-10 scenes, world state, cameras, IK, scripted expert, faults.

Public API (imported lazily so that `import mango.sim` does not load MuJoCo):

- `SimEnv(scene, seed, cameras=..., image_size=..., joint_names=...)`: `reset(seed)`,
  `step(action)`, `step_chunk(actions[Hx8])`, `set_joint_targets(q, width)`,
  `world_state()`, `render(camera)`, `camera_info(name)`, `joint_positions()`, `time`.
- `IKSolver` (from `SimEnv.ik_solver()`): the project's IK ladder (`mango.ik`) on the MuJoCo
  arm: `solve(pos, quat, seed, max_jump=) -> IKSolution`, `require`, `fk`.
- `SimKinematics()`: the simulated arm behind control's `Kinematics` protocol (`fk`, `ik`).
- `ExpertPolicy(scene, fault)`: `act(world_state, joint_positions) -> chunk`, `done`; its
  motion primitives and fixture skills live in `mango.sim.expert` (usable on their own).
- `run_episode(scene, seed, fault)`, `parse_fault("drop@0.5")`, `load_scene(path)`.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# Offscreen rendering without a display. MuJoCo picks its GL backend when it is first
# imported, and every submodule import runs this file first.
os.environ.setdefault("MUJOCO_GL", "egl")

_EXPORTS = {
    "SimEnv": "mango.sim.env",
    "CameraInfo": "mango.sim.env",
    "IKSolver": "mango.sim.ik",
    "SimKinematics": "mango.sim.kinematics",
    "ExpertPolicy": "mango.sim.expert.policy",
    "Milestone": "mango.sim.expert.milestones",
    "Fault": "mango.sim.faults",
    "parse_fault": "mango.sim.faults",
    "run_episode": "mango.sim.runner",
    "EpisodeResult": "mango.sim.runner",
    "SceneSpec": "mango.sim.scene",
    "load_scene": "mango.sim.scene",
    "resolve_scene": "mango.sim.scene",
    "list_scenes": "mango.sim.scene",
    "FR3_JOINTS": "mango.sim.scene",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mango.sim' has no attribute '{name}'")
    return getattr(importlib.import_module(module), name)
