"""One campaign episode, run in-process against the embedded sim, judged three ways: the
fine-grained oracle (verdict + failed step), the symbolic end-state goal (the reference the
papers compare against) and the ground-truth labels from the physics.

The function takes and returns plain data so a worker process (or a Ray task) can run it; the
files it writes (`trace.jsonl`, `labels.json`, `result.json` under the episode's folder) are
what `mango sim run` writes, plus the result.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from mango.evaluation.campaign import EpisodeSpec


def run_episode_spec(spec: EpisodeSpec, system: dict[str, Any], out: str | Path
                     ) -> dict[str, Any]:
    """Run one episode and write its files under `out/episodes/<id>/`; returns the result.

    A failure of the episode itself (the expert raising, the orchestrator refusing) is a
    result with `error` set, never an exception: one bad episode must not end a campaign.
    """
    from mango.oracle.symbolic import SymbolicOracle
    from mango.oracle.tracker import check_trace
    from mango.oracle.world_state import write_trace
    from mango.sim.env import as_scene
    from mango.sim.faults import parse_fault
    from mango.sim.runner import load_oracle_json, run_episode

    folder = Path(out) / "episodes" / spec.id
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result: dict[str, Any] = {"episode": spec.id, "system": spec.system, "task": spec.task,
                              "seed": spec.seed, "fault": spec.fault, "error": None}
    try:
        scene = as_scene(spec.task)
        if system["kind"] != "policy":
            raise NotImplementedError(f"system kind '{system['kind']}' is not runnable yet")
        res = run_episode(scene, spec.seed, parse_fault(spec.fault) if spec.fault else None)
        states, labels = res.states, res.labels
        oracle, _ = load_oracle_json(scene)
        report = check_trace(oracle, states).to_json() if oracle else None
        symbolic = SymbolicOracle(scene.goal).check(states).to_json()
        write_trace(folder / "trace.jsonl", states)
        (folder / "labels.json").write_text(json.dumps(labels, indent=2) + "\n")
        result.update(success=symbolic["verdict"] == "pass", verdict=report,
                      symbolic=symbolic, labels=labels, error=res.error)
    except Exception as exc:  # the episode's failure is its result
        result.update(success=False, verdict=None, symbolic=None, labels=None,
                      error=f"{type(exc).__name__}: {exc}")
    result["wall_s"] = round(time.perf_counter() - t0, 3)
    (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
