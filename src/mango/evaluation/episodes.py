"""One campaign episode, run in-process against the embedded sim, judged three ways: the
fine-grained oracle (verdict + failed step), the symbolic end-state goal (the reference the
papers compare against) and the ground-truth labels from the physics.

`execute_episode` takes and returns plain data so a worker process (or a Ray task) can run
it; `write_episode` stores its files (`trace.jsonl`, `labels.json` as `mango sim run` writes
them, plus `result.json`) under the episode's folder.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from mango.evaluation.campaign import EpisodeSpec


def execute_episode(spec: EpisodeSpec, system: dict[str, Any]
                    ) -> tuple[dict[str, Any], dict[str, str]]:
    """Run one episode; returns its result and its files' texts (name -> text).

    Nothing is written here: a worker process or a Ray task on another machine hands the
    files back, and the campaign's one writer stores them. A failure of the episode itself
    (the expert raising, the orchestrator refusing) is a result with `error` set, never an
    exception: one bad episode must not end a campaign.
    """
    from mango.oracle.symbolic import SymbolicOracle
    from mango.oracle.tracker import check_trace
    from mango.oracle.world_state import trace_lines
    from mango.sim.env import as_scene
    from mango.sim.faults import parse_fault
    from mango.sim.runner import load_oracle_json, run_episode

    t0 = time.perf_counter()
    result: dict[str, Any] = {"episode": spec.id, "system": spec.system, "task": spec.task,
                              "seed": spec.seed, "fault": spec.fault, "error": None}
    files: dict[str, str] = {}
    try:
        scene = as_scene(spec.task)
        fault = parse_fault(spec.fault) if spec.fault else None
        if system["kind"] == "task":
            _run_task(scene, spec, system, fault, result, files)
        else:
            res = run_episode(scene, spec.seed, fault)
            states, labels = res.states, res.labels
            oracle, _ = load_oracle_json(scene)
            report = check_trace(oracle, states).to_json() if oracle else None
            symbolic = SymbolicOracle(scene.goal).check(states).to_json()
            files["trace.jsonl"] = "".join(trace_lines(states))
            files["labels.json"] = json.dumps(labels, indent=2) + "\n"
            result.update(success=symbolic["verdict"] == "pass", verdict=report,
                          symbolic=symbolic, labels=labels, error=res.error)
    except Exception as exc:  # the episode's failure is its result
        result.update(success=False, verdict=None, symbolic=None, labels=None,
                      error=f"{type(exc).__name__}: {exc}")
    result["wall_s"] = round(time.perf_counter() - t0, 3)
    return result, files


def write_episode(out: str | Path, result: dict[str, Any], files: dict[str, str]) -> None:
    """The episode's folder `out/episodes/<id>/`: its files and `result.json`."""
    folder = Path(out) / "episodes" / result["episode"]
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def _run_task(scene: Any, spec: EpisodeSpec, system: dict[str, Any], fault: Any,
              result: dict[str, Any], files: dict[str, str]) -> None:
    """An orchestrated episode (`mango task run`): success by the task-level check, the
    world-failure events and recoveries from the physics, the oracle's report. Its labels are
    the world events, not a policy's expected failed step, so it stays out of the oracle's
    confusion table (which judges oracles on runs with a known failure)."""
    from mango.oracle.symbolic import SymbolicOracle
    from mango.oracle.world_state import trace_lines
    from mango.orchestrator.config import OrchestratorConfig
    from mango.orchestrator.loop import run_task

    cfg = OrchestratorConfig(mode=system["mode"], monitor=system["monitor"],
                             decider=system["decider"])
    out = run_task(scene, spec.seed, cfg, fault)
    task = out.to_json()
    files["trace.jsonl"] = "".join(trace_lines(out.states))
    result.update(success=bool(out.success), verdict=out.verdict,
                  symbolic=SymbolicOracle(scene.goal).check(out.states).to_json(), labels=None,
                  orchestrated={k: task[k] for k in ("subgoals", "decisions", "events",
                                                     "recovered", "unrecovered",
                                                     "pp_per_min", "robot_s", "aborted")},
                  error=None)
