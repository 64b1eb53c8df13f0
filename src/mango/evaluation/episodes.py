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

from mango.evaluation.campaign import EpisodeSpec, TaskSystem
from mango.sim.libero.scene_names import is_libero_scene


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
        if is_libero_scene(spec.task):
            _run_libero(spec, result, files)
            result["wall_s"] = round(time.perf_counter() - t0, 3)
            return result, files
        scene = with_oracle(as_scene(spec.task), (system.get("oracles") or {}).get(spec.task))
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


def _run_libero(spec: EpisodeSpec, result: dict[str, Any], files: dict[str, str]) -> None:
    """The scripted expert on LIBERO itself from init state `seed`: success is LIBERO's
    `check_success()`, which is also the symbolic reference (the benchmark's own end-state
    check); the fine-grained verdict is the oracle generated from the task's instruction, read
    in LIBERO's semantics (`bddl.libero_oracle`). The truth the two are judged against is
    LIBERO's verdict; the labelled failed step stays unknown (None) until labels come from
    LIBERO's predicates along the episode. An expert that stops short (the step limit) is a
    failed episode, not an error: its reason is the labels' `expert_error`."""
    from mango.bddl.libero_oracle import judge, task_oracle
    from mango.oracle.world_state import trace_lines
    from mango.sim.libero import LiberoClient, parse_scene
    from mango.sim.libero.episode import CONTROL_HZ, run_libero_episode

    with LiberoClient() as client:
        ep = run_libero_episode(client, parse_scene(spec.task), spec.seed)
    oracle, approved = task_oracle(ep.task.bddl)
    report = judge(oracle, ep.states).to_json()
    verdict = "pass" if ep.libero_success else "fail"
    labels = {**ep.labels, "expected_verdict": verdict, "failed_step": None,
              "failed_step_labelled": False,
              "oracle_verdict": report["verdict"], "oracle_failed_step": report["failed_step"],
              "oracle_approved": approved}
    files["trace.jsonl"] = "".join(trace_lines(ep.states))
    files["labels.json"] = json.dumps(labels, indent=2) + "\n"
    result.update(success=ep.libero_success, verdict=report,
                  symbolic={"verdict": verdict, "goal": "check_success()",
                            "t_end": ep.states[-1].t, "first_satisfied_t": None if
                            ep.labels["libero_first_success_step"] is None else
                            ep.labels["libero_first_success_step"] / CONTROL_HZ,
                            "n_states": len(ep.states)},
                  labels=labels, libero_success=ep.libero_success)


def with_oracle(scene: Any, oracle: str | None) -> Any:
    """The scene judged by another oracle file (a generated one): the labels map the
    physics' milestones onto that oracle's steps, so verdict and truth name the same paths."""
    return scene if oracle is None else scene.model_copy(update={"oracle": oracle})


def timeline(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The episode record's lines as a timeline: tool runs and halts as spans, decisions and
    signals as instants (what the report's Gantt chart draws; the inputs digests stay in
    `record.jsonl`)."""
    out: list[dict[str, Any]] = []
    open_tool: dict[str, Any] | None = None
    open_halt: dict[str, Any] | None = None
    end = lines[-1]["t"] if lines else 0.0
    for line in lines:
        kind, t = line["record"], line["t"]
        if open_halt is not None and kind in ("tool_start", "result"):
            open_halt["end"] = t
            open_halt = None
        if kind == "tool_start":
            open_tool = {"kind": "tool", "tool": line.get("tool"), "subgoal": line.get("subgoal"),
                         "start": t, "end": None, "status": None}
            out.append(open_tool)
        elif kind == "tool_end" and open_tool is not None:
            open_tool.update(end=t, status=line.get("status"))
            open_tool = None
        elif kind == "halt":
            open_halt = {"kind": "halt", "tool": "halt", "subgoal": None, "start": t,
                         "end": None, "status": line.get("reason")}
            out.append(open_halt)
        elif kind == "decision":
            out.append({"kind": "decision", "t": t, "phase": line.get("phase"),
                        "action": line.get("action"), "tool": line.get("tool"),
                        "subgoal": line.get("subgoal"), "rule": line.get("rule")})
        elif kind == "signal":
            out.append({"kind": "signal", "t": t, "signal": line.get("kind"),
                        "subgoal": line.get("subgoal"), "reason": line.get("reason")})
    for span in out:
        if span.get("start") is not None and span.get("end") is None:
            span["end"] = end
    return out


def write_episode(out: str | Path, result: dict[str, Any], files: dict[str, str]) -> None:
    """The episode's folder `out/episodes/<id>/`: its files and `result.json`."""
    folder = Path(out) / "episodes" / result["episode"]
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in [*files.items(), ("result.json", json.dumps(result, indent=2) + "\n")]:
        path = folder / name
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:  # a full disk fails the write, which names no file: name it
            if exc.filename is None:
                exc.filename = str(path)
            raise


def _run_task(scene: Any, spec: EpisodeSpec, system: dict[str, Any], fault: Any,
              result: dict[str, Any], files: dict[str, str]) -> None:
    """An orchestrated episode (`mango task run`): success by the task-level check, the
    world-failure events and recoveries from the physics, the oracle's report. Its labels are
    the world events, not a policy's expected failed step, so it stays out of the oracle's
    confusion table (which judges oracles on runs with a known failure)."""
    from mango.oracle.symbolic import SymbolicOracle
    from mango.oracle.world_state import trace_lines
    from mango.orchestrator.runs import run_episode
    from mango.orchestrator.schemas import EpisodeRecord

    cfg = TaskSystem.model_validate({k: v for k, v in system.items() if k != "oracles"}
                                    ).config()
    record = EpisodeRecord()  # in memory: the worker hands its lines back as a file
    out = run_episode(scene, spec.seed, cfg, fault, record=record)
    task = out.to_json()
    files["trace.jsonl"] = "".join(trace_lines(out.states))
    files["record.jsonl"] = "".join(json.dumps(line, default=str) + "\n"
                                    for line in record.lines)
    result.update(success=bool(out.success), verdict=out.verdict,
                  symbolic=SymbolicOracle(scene.goal).check(out.states).to_json(), labels=None,
                  orchestrated={**{k: task[k] for k in ("subgoals", "decisions", "events",
                                                        "recovered", "unrecovered",
                                                        "pp_per_min", "robot_s", "aborted")},
                                "spells": out.world.get("spells", []),
                                "timeline": timeline(record.lines)},
                  error=None)
