"""One episode of the scripted expert on LIBERO itself (`mango sim run --scene libero/...`).

The trace is at LIBERO's control rate (20 Hz): a spec §3 world state after each control step
(and one at the init state, t = 0), `t` counting control steps from the init state. Beside each
world state, LIBERO's own simulator state (`get_sim_state()`), so anyone can reload it
(`set_init_state`) and ask LIBERO. The labels are the embedded run's fields
(`mango.sim.runner.make_labels`) for the expert's milestones, plus LIBERO's own verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mango.errors import InputError
from mango.oracle.world_state import WorldState
from mango.sim.libero.client import LiberoClient, LiberoTask
from mango.sim.libero.expert import SETTLE_STEPS, LiberoExpert
from mango.sim.libero.scene_names import LiberoScene
from mango.sim.libero.world import world_state
from mango.sim.runner import labels_record

CONTROL_HZ = 20.0  # LIBERO's ControlEnv control_freq
# Steps per episode after the settling no-ops, per suite: LeRobot's LIBERO environment
# (lerobot/envs/libero.py), as openpi's examples/libero/main.py counts them
MAX_STEPS = {"libero_spatial": 280, "libero_object": 280, "libero_goal": 300,
             "libero_10": 520, "libero_90": 400}
SETTLE_AFTER = 5  # control steps recorded after the expert has finished


@dataclass
class LiberoEpisode:
    scene: LiberoScene
    task: LiberoTask
    init: int
    states: list[WorldState]
    sim_states: list[list[float]]
    labels: dict[str, Any]
    libero_success: bool
    symbolic_success: bool
    milestones: list[dict[str, Any]] = field(default_factory=list)

    @property
    def times(self) -> list[float]:
        return [s.t for s in self.states]


def step_limit(suite: str) -> int:
    return MAX_STEPS[suite] + SETTLE_STEPS


def run_libero_episode(
    client: LiberoClient,
    scene: LiberoScene,
    init: int = 0,
    *,
    max_steps: int | None = None,
    on_state: Callable[[WorldState], None] | None = None,
) -> LiberoEpisode:
    """Open the task at LIBERO's `init`-th initial state and run the expert on it."""
    task = client.open(scene, init)
    expert = LiberoExpert(task)
    limit = step_limit(scene.suite) if max_steps is None else max_steps
    facts, sim = client.observe()
    states = [world_state(facts, task.articulation, 0.0)]
    sims = [sim]
    if on_state:
        on_state(states[-1])
    done_at: int | None = None
    first_success: int | None = None
    k = 0
    while k < limit:
        t = k / CONTROL_HZ
        # LIBERO's step says done when check_success() holds; its harnesses stop there, the
        # expert finishes its plan (lets go, backs off) and LIBERO is asked again at the end
        if client.step(expert.act(facts, t)) and first_success is None:
            first_success = k + 1
        k += 1
        facts, sim = client.observe()
        states.append(world_state(facts, task.articulation, k / CONTROL_HZ))
        sims.append(sim)
        if on_state:
            on_state(states[-1])
        if expert.done and done_at is None:
            done_at = k
        if done_at is not None and k >= done_at + SETTLE_AFTER:
            break
    if not expert.done and expert.error is None:
        expert.error = f"stopped at the step limit ({limit} control steps)"
    libero_success = client.check_success()
    expert.observe(facts, k / CONTROL_HZ)
    symbolic = all(expert.holds(atom) for atom in task.goal)
    milestones = [m.to_json() for m in expert.milestones]
    labels = episode_labels(scene, init, task, expert, milestones, k, libero_success, symbolic)
    labels["libero_first_success_step"] = first_success
    return LiberoEpisode(scene, task, init, states, sims, labels, libero_success, symbolic,
                         milestones)


def episode_labels(scene: LiberoScene, init: int, task: LiberoTask, expert: LiberoExpert,
                   milestones: list[dict[str, Any]], steps: int, libero_success: bool,
                   symbolic: bool) -> dict[str, Any]:
    """The embedded run's label fields (`mango.sim.runner.make_labels`), for a run without a
    fault: the first milestone the expert did not achieve is the expected failure."""
    missed = next((m for m in milestones if not m["achieved"]), None)
    return {
        **labels_record(scene=scene.name, seed=init, instruction=task.language,
                        failed_milestone=missed, milestones=milestones,
                        expert_error=expert.error),
        "libero_task": {"suite": task.suite, "index": task.index, "name": task.name,
                        "stem": task.stem},
        "goal_atoms": [list(a) for a in task.goal],
        "control_hz": CONTROL_HZ,
        "steps": steps,
        "symbolic_success": symbolic,
        "libero_success": libero_success,
    }


def write_states(path: str | Path, episode: LiberoEpisode) -> None:
    """`--states S.npz`: `states` (N x D, LIBERO's `get_sim_state()`) and `t` (N, the trace's
    times), one row per world state of the trace."""
    import numpy as np

    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with Path(path).open("wb") as fh:
            np.savez_compressed(fh, states=np.asarray(episode.sim_states, dtype=np.float64),
                                t=np.asarray(episode.times, dtype=np.float64))
    except OSError as exc:
        raise InputError(f"cannot write output: {exc.strerror}", file=str(path)) from None
