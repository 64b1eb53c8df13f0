"""`mango task run`: an orchestrated task in the embedded sim (commands.md §4, issue #16).

The orchestrator plans the instruction into subgoals, runs them through interruptible tools
(the expert as the VLA, the grasp/place primitives), monitors, halts and recovers; `--fault`
goes into the VLA. `--json` prints the §4 object; otherwise a timeline: subgoals, tool runs,
monitor signals, halts, decisions, the oracle's step verdicts and the world's failures.
Exit 0 when the episode ran (success or not), 2 on bad input; with `--exit-code` a `fail`
oracle verdict exits 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from mango.cli.bounds import SeedOpt
from mango.cli.verdicts import ExitCodeOpt, exit_for

app = typer.Typer(help="Orchestrated tasks: plan, act, monitor, halt, recover (embedded sim).",
                  no_args_is_help=True)


def _fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


@app.callback()
def _group() -> None:
    """Orchestrated tasks: plan, act, monitor, halt, recover (embedded sim)."""


@app.command()
def run(
    scene: Annotated[str, typer.Option("--scene", "-s", help="Scene name or YAML path.")],
    mode: Annotated[str, typer.Option(
        "--mode", help="vla_only | tools_only | full | motor.")],
    monitor: Annotated[str, typer.Option(
        "--monitor", help="none | oracle | gt | vlm (a model looks at the camera).")],
    seed: SeedOpt = 0,
    instruction: Annotated[str | None, typer.Option(
        "--instruction", help="What to do (default: the scene's task).")] = None,
    decider: Annotated[str, typer.Option(
        "--decider", help="offline (rules, not a model) | vlm (an OpenAI-compatible model "
        "at every decision point) | local (llama.cpp: plan and replans; rules for the "
        "rest).")] = "offline",
    fault: Annotated[str | None, typer.Option(
        "--fault", help="KIND@WHEN injected into the VLA (drop, wrong_object, stall, skip, "
        "wrong_place, knock_out).")] = None,
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="Write the ground-truth world states (JSON Lines).")] = None,
    record: Annotated[Path | None, typer.Option(
        "--record", help="Folder for the episode record (episode.jsonl), result.json and "
        "trace.jsonl.")] = None,
    monitor_hz: Annotated[float, typer.Option(
        "--monitor-hz", min=0, max=1000, help="How often the monitor context is read.")] = 15.0,
    no_progress_s: Annotated[float, typer.Option(
        "--no-progress-s", min=0, help="Oracle monitor: no step completion for this long fails.")
    ] = 10.0,
    backend: Annotated[str | None, typer.Option(
        "--backend", help="The model's backend: openai (default for vlm), local (default for "
        "local), record:DIR[@NAME], replay:DIR (record/replay cache).")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Model name (or GGUF for local).")] = None,
    opt: Annotated[list[str] | None, typer.Option(
        "--opt", help="Backend option KEY=VALUE (repeatable), e.g. "
        "base_url=http://127.0.0.1:8080/v1")] = None,
    vlm_monitor_hz: Annotated[float, typer.Option(
        "--vlm-monitor-hz", min=0, max=1000,
        help="How often the vlm monitor sends images (VoLo: 0.2).")
    ] = 0.2,
    json_output: Annotated[bool, typer.Option("--json")] = False,
    exit_code: ExitCodeOpt = False,
) -> None:
    """Run one orchestrated episode and print its outcome (commands.md §4)."""
    from mango.cli.outputs import output_dir, output_file, write_error
    from mango.errors import InputError
    from mango.generation.models import instruction_problem
    from mango.oracle.world_state import write_trace
    from mango.orchestrator.config import OrchestratorConfig, parse_backend_opts
    from mango.orchestrator.runs import run_episode
    from mango.orchestrator.schemas import EpisodeRecord
    from mango.orchestrator.vlm import check_backend_config
    from mango.policy.presets import PolicyError
    from mango.sim.env import as_scene
    from mango.sim.faults import parse_fault

    try:
        opts = parse_backend_opts(opt or [])
        cfg = OrchestratorConfig(mode=mode, monitor=monitor, decider=decider,
                                 monitor_hz=monitor_hz, no_progress_s=no_progress_s,
                                 backend=backend, model=model, backend_opts=opts,
                                 vlm_monitor_hz=vlm_monitor_hz)
        check_backend_config(cfg)
        if instruction is not None and (why := instruction_problem(instruction)) is not None:
            raise InputError(why, field="--instruction")
        sc = as_scene(scene)
        flt = parse_fault(fault) if fault else None
        if flt is not None:
            from mango.sim.faults import FaultInjector

            FaultInjector(sc, flt)  # refuses a fault this task cannot have, before any work
        trace_path = output_file(trace, "trace") if trace is not None else None
        rec_dir = output_dir(record, "record folder") if record is not None else None
        rec = EpisodeRecord(rec_dir / "episode.jsonl" if rec_dir else None)
    except (InputError, PolicyError) as exc:
        _fail(str(exc), 2)
    from mango.llm.backend import BackendError

    try:
        out = run_episode(sc, seed, cfg, flt, instruction, rec)
    except (InputError, PolicyError, BackendError) as exc:
        _fail(str(exc), 2)
    result = out.to_json()
    try:
        if trace_path is not None:
            write_trace(trace_path, out.states)
        if rec_dir is not None:
            write_trace(rec_dir / "trace.jsonl", out.states)
            (rec_dir / "result.json").write_text(json.dumps(result, indent=2) + "\n",
                                                 encoding="utf-8")
    except OSError as exc:
        _fail(str(write_error(exc, trace_path or rec_dir or "")), 2)
    if json_output:
        print(json.dumps(result))
    else:
        _timeline(out, rec.lines, result)
    if out.verdict is not None:
        exit_for(out.verdict["verdict"], exit_code)


def _motor_decision(ln: dict[str, Any]) -> str:
    """One role decision of mode motor, in a line."""
    head = f"{ln['role']} [{ln['decider']}:{ln['rule']}]"
    if ln["action"] == "propose":
        acts = ", ".join(a["kind"] if a["kind"] == "home" else
                         " ".join(str(a[k]) for k in ("kind", "gripper", "direction", "mm",
                                                      "axis", "degrees", "width_mm",
                                                      "seconds") if a.get(k) is not None)
                         for a in ln["actions"])
        return f"{head} {ln['assessment']} -> [{acts}] expect {ln['expect']!r}" + (
            " (done)" if ln["done"] else "")
    if ln["action"] == "verify":
        return f"{head} {ln['outcome']}: {ln['reason']}"
    return f"{head} revise: remaining {ln.get('remaining')} - {ln.get('reason', '')}"


def _timeline(out: Any, lines: list[dict[str, Any]], result: dict[str, Any]) -> None:
    """A readable account of the episode, in robot time."""
    plan = out.plan
    print(f"{out.scene} seed {out.seed}  fault {out.fault or 'none'}")
    print(f"plan ({plan.source}, {'ordered' if plan.ordered else 'any order'}):")
    for s in plan.subgoals:
        print(f"  {s.id}. {s.instruction}")
    first = next((ln for ln in lines if ln["record"] == "plan"), None)
    if first is not None and first.get("rejected"):
        print(f"  (the rules' plan: {first['rejected']})")
    rows: list[tuple[float, str]] = []
    for ln in lines:
        t, r = ln["t"], ln["record"]
        if r == "tool_start":
            what = f" '{ln['instruction']}'" if ln.get("instruction") else ""
            rows.append((t, f"tool {ln['tool']}{what} (subgoal {ln['subgoal']})"))
        elif r == "tool_end":
            rows.append((t, f"tool {ln['tool']} {ln['status']}: {ln['message']}"))
        elif r == "signal":
            rows.append((t, f"monitor {ln['monitor']}: {ln['kind']} {ln['reason']} "
                            f"(subgoal {ln['subgoal']}) {ln['detail']}"))
        elif r == "halt":
            rows.append((t, f"HALT ({ln['reason']})"))
        elif r == "decision" and "role" in ln:  # mode motor: MotorMind's roles
            rows.append((t, _motor_decision(ln)))
        elif r == "motion":
            rows.append((t, f"controller {ln['status']}: {ln['executed']}/{ln['total']} "
                            f"commands, hand moved {ln['displacement_mm']} mm, gripper "
                            f"{ln['widths_mm']} mm"))
        elif r in ("alert", "alert_discarded", "verdict_discarded"):
            what = ln.get("level") or ln.get("outcome")
            late = " (late: discarded)" if r != "alert" else ""
            rows.append((t, f"{r.split('_')[0]} attempt {ln['attempt']}: {what} "
                            f"{ln['reason']}{late}"))
        elif r == "fault":
            rows.append((t, f"FAULT {ln['fault']}: {ln['note']}"))
        elif r == "decision":
            extra = ""
            if ln.get("instruction") and ln["action"] in ("rewrite", "continue"):
                extra = f" '{ln['instruction']}'"
            if ln.get("remaining") is not None:
                extra = f" remaining {ln['remaining']}"
            who = ln["rule"] or f"model {ln.get('model')}"
            rows.append((t, f"decide [{ln['decider']}:{who}] {ln['action']}"
                            f"/{ln['tool']}{extra} - {ln['reason']}"))
    if out.verdict is not None:
        for st in out.verdict["steps"]:
            if st["completed_t"] is not None:
                rows.append((st["completed_t"], f"oracle step {st['path']} {st['action_id']}: "
                                                "completed"))
    for ev in out.world["events"]:
        rows.append((ev["t"], f"world {ev['kind']} {ev.get('subject') or ''} {ev['detail']}"))
    for t, text in sorted(rows, key=lambda r: r[0]):
        print(f"{t:7.2f}  {text}")
    v = out.verdict
    if v is not None:
        print(f"oracle verdict: {v['verdict']}" + (f" (failed step {v['failed_step']})"
                                                  if v["failed_step"] else ""))
    print(f"success: {result['success']}  recovered {result['recovered']}, unrecovered "
          f"{result['unrecovered']}  decisions {result['decisions']}  robot "
          f"{result['robot_s']:.1f} s, wall {result['wall_s']:.1f} s")
