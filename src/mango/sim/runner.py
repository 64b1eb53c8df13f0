"""Run the scripted expert in a scene: world-state trace, ground-truth labels, optional video."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mango.errors import InputError
from mango.json_files import read_json
from mango.oracle.expr import Atom, iter_atoms, parse_expression
from mango.oracle.model import FineGrainedOracle, load_oracle, plan_entries
from mango.oracle.world_state import WorldState, write_trace
from mango.sim.build import CONTROL_HZ
from mango.sim.env import SimEnv, as_scene
from mango.sim.expert.milestones import Milestone
from mango.sim.expert.policy import ExpertPolicy
from mango.sim.faults import Fault
from mango.sim.scene import REPO_ROOT, SceneSpec

log = logging.getLogger(__name__)


@dataclass
class EpisodeResult:
    scene: SceneSpec
    seed: int
    fault: Fault | None
    states: list[WorldState]
    labels: dict[str, Any]
    success: bool  # every expert milestone achieved (measured from the physics)
    error: str | None = None
    frames: list[np.ndarray] = field(default_factory=list)
    video_every: int = 2


@dataclass(frozen=True)
class MonitoredAction:
    """An oracle action: its step path and the atoms its monitoring conditions mention."""

    path: str
    atoms: tuple[Atom, ...]


def oracle_actions(oracle: FineGrainedOracle) -> list[MonitoredAction]:
    """Actions of a spec §2 oracle with their step paths and the atoms they monitor."""
    return [
        MonitoredAction(e.path, tuple(
            atom for mon in e.action.monitoring
            for atom in iter_atoms(parse_expression(mon.handle_as))))
        for e in plan_entries(oracle)
    ]


def milestone_path(m: Milestone, actions: list[MonitoredAction], scene: SceneSpec) -> str | None:
    """The oracle action that monitors the milestone's effect (matched by its atoms)."""
    aliases = {m.subject}
    if m.kind in ("close", "open"):
        with contextlib.suppress(KeyError):
            aliases.add(scene.joint_owner(m.subject).id)
    wanted = {
        "approach": lambda n, a: n == "near" and "robot_hand" in a and bool(aliases & set(a)),
        "pick": lambda n, a: n in ("grasped", "up") and a[:1] and a[0] in aliases,
        "place": lambda n, a: n in ("in", "on") and a[:1] and a[0] in aliases,
        "close": lambda n, a: n == "close" and a[:1] and a[0] in aliases,
        "open": lambda n, a: n == "open" and a[:1] and a[0] in aliases,
        "turnon": lambda n, a: n == "turnon" and a[:1] and a[0] in aliases,
    }[m.kind]
    for act in actions:
        if m.kind == "pick" and any(a.predicate in ("in", "on") for a in act.atoms):
            continue
        if any(wanted(a.predicate, a.args) for a in act.atoms):
            return act.path
    return None


def load_oracle_json(scene: SceneSpec) -> tuple[dict[str, Any] | None, Path | None]:
    if not scene.oracle:
        return None, None
    p = Path(scene.oracle)
    if not p.is_absolute():
        p = REPO_ROOT / p
    if not p.exists():
        return None, p
    return read_json(p, "oracle"), p


def make_labels(scene: SceneSpec, seed: int, expert: ExpertPolicy) -> dict[str, Any]:
    """Ground truth of a run: the oracle step that fails first and when (spec §5 rule)."""
    oracle, path = load_oracle_json(scene)
    actions = oracle_actions(load_oracle(oracle, file=str(path))) if oracle else []
    paths = {id(m): milestone_path(m, actions, scene) for m in expert.milestones}
    if actions:
        gt = expert.ground_truth(lambda m: paths[id(m)] is not None)
    else:
        gt = expert.ground_truth(lambda m: m.kind != "approach")
    fr = expert.fault_record
    failed_step = None
    m = gt["milestone"]
    if m is not None and actions:
        ms = next(x for x in expert.milestones if x.to_json() == m)
        failed_step = paths[id(ms)]
    return labels_record(
        scene=scene.name, seed=seed, instruction=scene.instruction,
        oracle=scene.oracle if oracle is not None else None,
        fault=str(fr.fault) if fr else None, fault_note=fr.note if fr else None,
        fault_t=fr.t if fr else None, failed_step=failed_step, failed_t=gt["t"],
        # an undone goal (knocked out, never put back) fails too: oracles.md §5
        failed_milestone=m, event=gt["event"],
        milestones=[x.to_json() for x in expert.milestones], expert_error=expert.error)


def labels_record(*, scene: str, seed: int, instruction: str, failed_milestone: Any,
                  milestones: list[dict[str, Any]], expert_error: str | None,
                  oracle: str | None = None, fault: str | None = None,
                  fault_note: str | None = None, fault_t: float | None = None,
                  failed_step: str | None = None, failed_t: float | None = None,
                  event: Any = None) -> dict[str, Any]:
    """The labels file's fields, in their order: one writer for both simulators (the embedded
    one and LIBERO itself); the verdict expected follows from the first milestone missed."""
    return {
        "scene": scene,
        "seed": seed,
        "instruction": instruction,
        "oracle": oracle,
        "fault": fault,
        "fault_note": fault_note,
        "fault_t": fault_t,
        "expected_verdict": "fail" if failed_milestone is not None else "pass",
        "failed_step": failed_step,
        "failed_t": failed_t,
        "failed_milestone": failed_milestone,
        "event": event,
        "goal_expected": failed_milestone is None,
        "milestones": milestones,
        "expert_error": expert_error,
    }


def run_episode(
    scene: SceneSpec | str | Path,
    seed: int = 0,
    fault: Fault | None = None,
    *,
    video_camera: str | None = None,
    video_every: int = 2,
    settle: float = 1.0,
    on_state: Callable[[WorldState], None] | None = None,
    env: SimEnv | None = None,
    expert: ExpertPolicy | None = None,
) -> EpisodeResult:
    """Run the expert for one seed; returns the 15 Hz world-state trace and the labels."""
    sc = as_scene(scene)
    cams = (video_camera,) if video_camera else ()
    env = env or SimEnv(sc, seed=seed, cameras=cams)
    state = env.reset(seed)
    if expert is None:
        expert = ExpertPolicy(sc, fault)
    else:
        expert.reset()
    states = [state]
    frames: list[np.ndarray] = []
    if on_state:
        on_state(state)
    done_at: float | None = None
    step = 0
    while state.t < sc.horizon:
        chunk = expert.act(state, env.joint_positions())
        for row in chunk:
            env.step(row)
            state = env.world_state()
            states.append(state)
            step += 1
            if on_state:
                on_state(state)
            if video_camera and step % video_every == 0:
                frames.append(env.render(video_camera, depth=False, seg=False)[0])
        if expert.done and done_at is None:
            done_at = state.t
        if done_at is not None and state.t >= done_at + settle:
            break
    expert.review(states)
    labels = make_labels(sc, seed, expert)
    success = all(m.achieved for m in expert.milestones) and expert.error is None
    return EpisodeResult(sc, seed, fault, states, labels, success, expert.error, frames,
                         video_every)


def write_run_files(
    states: list[WorldState],
    labels: dict[str, Any],
    trace: str | Path,
    labels_path: str | Path | None = None,
    *others: str | Path | None,
) -> None:
    """A run's world-state trace (JSON Lines) and labels (JSON): the one writer of both, for the
    embedded sim and LIBERO alike; `others` are further outputs whose folders are made too."""
    writing: str | Path = trace  # named in the error: a full disk's error names no file
    try:
        for p in (trace, labels_path, *others):
            if p is not None:
                writing = p
                Path(p).parent.mkdir(parents=True, exist_ok=True)
        writing = trace
        write_trace(trace, states)
        if labels_path is not None:
            writing = labels_path
            Path(labels_path).write_text(json.dumps(labels, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write output: {exc.strerror}",
                         file=exc.filename or str(writing)) from None


def write_outputs(
    result: EpisodeResult,
    trace: str | Path,
    labels: str | Path | None = None,
    video: str | Path | None = None,
) -> None:
    write_run_files(result.states, result.labels, trace, labels, video)
    if video is not None and result.frames:
        import imageio.v2 as imageio

        fps = CONTROL_HZ / result.video_every
        try:
            if str(video).lower().endswith(".gif"):
                imageio.mimwrite(str(video), result.frames, duration=1000 / fps, loop=0)
            else:
                imageio.mimwrite(str(video), result.frames, fps=fps, macro_block_size=1)
        except (ImportError, ValueError, RuntimeError) as exc:
            raise InputError(f"cannot write video ({exc}); MP4 needs imageio-ffmpeg",
                             file=str(video)) from None
