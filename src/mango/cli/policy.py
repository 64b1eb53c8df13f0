"""`mango policy run`: one closed-loop episode in the embedded sim, judged live by the oracle.

Brings up the sim stack (`config/stacks/sim.yaml`: sim_node, franka_control_node, vla_node,
oracle_node, optionally the bag recorder) as processes, loads the oracle (`--oracle`, else the
fine-grained oracle the scene names), sends `RunPolicy`, waits, asks the oracle node to finish,
shuts everything down and prints the task verdict (the spec §6 report with `--json`, plus a
`run` entry). `--attach` does the same on a stack already running (`mango bringup sim`, under
`--namespace`, default the root) and leaves it running. Exit 0 when the run was judged (pass
or fail; with `--exit-code`, 1 on fail), 1 when it could not run, 2 on bad input.
`mango.client.episode.run_episode` is the same as a Python API.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mango.cli.bounds import SeedOpt
from mango.cli.verdicts import ExitCodeOpt, exit_for

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(help="Run VLA policies on the robot stack.", no_args_is_help=True)

@app.command("run")
def run(
    scene: Annotated[str | None, typer.Option(
        "--scene", "-s", help="Scene name or scene YAML (with --attach: default the stack's).")
                     ] = None,
    oracle: Annotated[str | None, typer.Option(
        help="Fine-grained oracle JSON (default: the one the scene names).")] = None,
    backend: Annotated[str | None, typer.Option(
        help="expert | openpi | openvla | lerobot (default expert).")] = None,
    fault: Annotated[str | None, typer.Option(
        help="Fault for the expert, KIND@WHEN (e.g. drop@0.5, skip@1).")] = None,
    seed: SeedOpt = 0,
    bag: Annotated[str | None, typer.Option(help="Record the run to this bag directory.")] = None,
    record_views: Annotated[bool, typer.Option(
        "--record-views", help="With --bag: also record what the rviz/Foxglove layouts show "
        "(cameras, markers, tf, robot_description), in the root namespace.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the §6 report as JSON.")
                           ] = False,
    preset: Annotated[str | None, typer.Option(help="Observation preset (policy family).")
                      ] = None,
    host: Annotated[str | None, typer.Option(help="openpi server host.")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="openpi server port.")
                    ] = None,
    url: Annotated[str | None, typer.Option(help="OpenVLA /act URL.")] = None,
    checkpoint: Annotated[str | None, typer.Option(help="LeRobot checkpoint directory.")
                          ] = None,
    namespace: Annotated[str | None, typer.Option(
        help="ROS namespace for the stack (default: a fresh one; with --attach, the root).")
                         ] = None,
    attach: Annotated[bool, typer.Option(
        "--attach", help="Run on the stack `mango bringup sim` left running, not a new one.")
                      ] = False,
    chunk_threshold: Annotated[float | None, typer.Option(
        "--chunk-threshold", min=0.0, max=1.0,
        help="Send the next observation when the unexecuted part of the current chunk falls "
        "to this fraction of its length (0 = synchronous: observe, infer, execute; default "
        "0.5, asynchronous).")] = None,
    aggregate: Annotated[str | None, typer.Option(
        help="How overlapping chunks merge: weighted_average (default) | latest_only | "
        "average | conservative.")] = None,
    max_steps: Annotated[int | None, typer.Option(
        "--max-steps", min=1, max=1_000_000, help="Stop the policy after this many actions "
        "(default: the scene's horizon at 15 Hz).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show the nodes' output.")
                       ] = False,
    exit_code: ExitCodeOpt = False,
) -> None:
    """Run a policy on a scene in the embedded sim and print the oracle's verdict."""
    from rich.console import Console

    from mango.cli.bringup import node_output
    from mango.cli.outputs import output_dir
    from mango.client.episode import Episode, RunFailed, run_episode
    from mango.errors import InputError

    err = Console(stderr=True)
    out = node_output(err) if verbose else None
    options = {"preset": preset, "host": host, "port": port, "url": url,
               "checkpoint": checkpoint, "chunk_threshold": chunk_threshold,
               "aggregate": aggregate}
    try:
        if aggregate is not None:
            from mango.policy.action_queue import aggregator

            aggregator(aggregate)
        if scene is None and not attach:
            raise InputError("give --scene (or --attach to a running `mango bringup sim`)",
                             field="scene")
        if bag is not None and not attach:  # first: a recorder that cannot write ends late
            bag = str(output_dir(Path(bag).expanduser().resolve(), "bag folder", new=True))
        report = run_episode(Episode(scene, oracle, backend or "expert", fault, seed, bag,
                                     namespace, options, views=record_views, attach=attach,
                                     max_steps=max_steps),
                             output=out)
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None
    except RunFailed as exc:
        sys.stderr.write(f"error: could not run: {exc}\n")
        raise typer.Exit(1) from None
    if json_output:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        exit_for(report["verdict"], exit_code)
        return
    print_run(report, Console())
    exit_for(report["verdict"], exit_code)


def print_run(report: dict[str, Any], console: Console) -> None:
    """The verdict, the step table, the events and the policy's account, as a person reads
    them (times to 0.01 s, no raw Python values)."""
    from rich.table import Table

    run_info = report["run"]
    colour = "green" if report["verdict"] == "pass" else "red"
    where = f" at step {report['failed_step']}" if report["failed_step"] else ""
    with_fault = f", fault {run_info['fault']}" if run_info["fault"] else ""
    on = f", on the stack in {run_info['namespace']}" if run_info.get("attached") else ""
    console.print(f"[bold]{run_info['instruction']}[/] ({run_info['scene']}, "
                  f"{run_info['backend']}{with_fault}{on})", highlight=False)
    console.print(f"verdict: [bold {colour}]{report['verdict']}[/]{where}", highlight=False)
    table = Table()
    for col in ("step", "action", "status", "completed at (s)"):
        table.add_column(col, overflow="fold")
    for s in report["steps"]:
        t = s.get("completed_t")
        table.add_row(s["path"], s["action_id"], s["status"], "" if t is None else f"{t:.2f}")
    console.print(table)
    for e in report.get("events", []):
        detail = f": {e['detail']}" if e.get("detail") else ""
        console.print(f"  t={e['t']:.2f} s {e['kind']} at {e['path']}{detail}", highlight=False)
    said = f" ({run_info['policy_message']})" if run_info["policy_message"] else ""
    console.print(f"policy: {run_info['policy_status']}{said}, {run_info['steps_executed']} "
                  f"steps in {run_info['chunks_requested']} chunks, "
                  f"{run_info['wall_time']:.1f} s", highlight=False)
    if run_info.get("bag"):
        kept = " (the stack's recorder; it records until the stack stops)" if run_info.get(
            "attached") else ""
        console.print(f"bag: {run_info['bag']}{kept}", highlight=False, soft_wrap=True)
