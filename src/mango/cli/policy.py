"""`mango policy run`: one closed-loop episode in the embedded sim, judged live by the oracle.

Brings up the sim stack (`config/stacks/sim.yaml`: sim_node, franka_control_node, vla_node,
oracle_node, optionally the bag recorder) as processes, loads the oracle (`--oracle`, else the
fine-grained oracle the scene names), sends `RunPolicy`, waits, asks the oracle node to finish,
shuts everything down and prints the task verdict (the spec §6 report with `--json`, plus a
`run` entry). Exit 0 when the run was judged (pass or fail), 1 when it could not run, 2 on
bad input. `run_episode` is the same as a Python API.
"""

from __future__ import annotations

import json
import math
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

app = typer.Typer(help="Run VLA policies on the robot stack.", no_args_is_help=True)

POLICY_BACKENDS = ("expert", "openpi", "openvla", "lerobot")


class RunFailed(RuntimeError):
    """The episode could not run (a node died, the policy never executed, a timeout)."""


def _wait(pred: Callable[[], Any], timeout: float, what: str,
          check: Callable[[], None] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check is not None:
            check()
        value = pred()
        if value:
            return value
        time.sleep(0.02)
    raise RunFailed(f"timed out after {timeout:g} s waiting for {what}")


def run_episode(
    scene: str,
    oracle: str | None = None,
    backend: str = "expert",
    fault: str | None = None,
    seed: int = 0,
    bag: str | None = None,
    namespace: str | None = None,
    options: dict[str, Any] | None = None,
    output: Callable[[str, str], None] | None = None,
    startup_timeout: float = 90.0,
) -> dict[str, Any]:
    """Run one episode; returns the oracle's §6 report with a `run` entry.

    Raises `InputError` on bad input and `RunFailed` when the episode could not run.
    """
    import rclpy
    from action_msgs.msg import GoalStatus
    from rclpy.action import ActionClient
    from std_srvs.srv import Trigger

    from mango.bringup import Bringup, NodeDied
    from mango.errors import InputError
    from mango.nodes.common import latched_qos
    from mango.sim.faults import parse_fault
    from mango.sim.scene import REPO_ROOT, load_scene, resolve_scene
    from mango.stack import load_stack
    from mango_ros.action import RunPolicy
    from mango_ros.msg import TaskVerdict

    if backend not in POLICY_BACKENDS:
        raise InputError(f"unknown backend {backend!r} (known: {', '.join(POLICY_BACKENDS)})",
                         field="backend")
    scene_path = resolve_scene(scene).resolve()
    spec = load_scene(scene_path)
    if fault:
        if backend != "expert":
            raise InputError("--fault injects into the scripted expert: use --backend expert",
                             field="fault")
        parse_fault(fault)
    if oracle is None:
        if not spec.oracle:
            raise InputError(f"scene {spec.name} names no oracle file; give --oracle",
                             file=str(scene_path))
        oracle_path = (REPO_ROOT / spec.oracle).resolve()
    else:
        oracle_path = Path(oracle).resolve()
    if not oracle_path.is_file():
        raise InputError("oracle file not found", file=str(oracle_path))

    ns = namespace if namespace is not None else f"/mango_{uuid.uuid4().hex[:6]}"
    ns = "/" + ns.strip("/") if ns.strip("/") else ""
    stack = load_stack("sim")
    nodes = {n.name: n for n in stack.nodes}
    nodes["sim_node"].parameters.update(scene=str(scene_path), seed=seed)
    if backend == "expert":
        nodes["sim_node"].parameters["camera_rate"] = 0.0  # the expert reads the world state
    vla = nodes["vla_node"].parameters
    vla.update(backend=backend, scene=str(scene_path), fault=fault or "")
    vla.update({k: v for k, v in (options or {}).items() if v is not None})
    nodes["oracle_node"].parameters["oracle_file"] = str(oracle_path)
    if bag:
        rec = nodes["bag_recorder"].parameters
        rec["output"] = str(Path(bag).resolve())
        rec["topics"] = [f"{ns}{t}" for t in rec["topics"]]  # type: ignore[union-attr]
        keep = list(nodes.values())
    else:
        keep = [n for n in nodes.values() if n.name != "bag_recorder"]
    stack = stack.model_copy(update={"nodes": [n.model_copy(update={"namespace": ns})
                                               for n in keep]})

    runner = Bringup(stack, output=output)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(f"mango_policy_run_{uuid.uuid4().hex[:6]}", context=ctx)
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    import threading

    spin = threading.Thread(target=executor.spin, daemon=True)
    verdicts: list[TaskVerdict] = []
    feedback: list[Any] = []
    t_start = time.monotonic()
    try:
        runner.start()
        spin.start()
        node.create_subscription(TaskVerdict, f"{ns}/oracle/task_verdict", verdicts.append,
                                 latched_qos(10))
        client = ActionClient(node, RunPolicy, f"{ns}/run_policy")
        _wait(lambda: client.server_is_ready(), startup_timeout, "the vla_node", runner.check)

        def call(name: str) -> Any:
            cli = node.create_client(Trigger, f"{ns}/oracle_node/{name}")
            _wait(cli.service_is_ready, startup_timeout, f"oracle_node/{name}", runner.check)
            fut = cli.call_async(Trigger.Request())
            _wait(fut.done, 30.0, f"oracle_node/{name}", runner.check)
            return fut.result()

        reply = call("reset")
        if not reply.success:
            raise RunFailed(f"oracle node: {reply.message}")
        goal = RunPolicy.Goal(instruction=spec.instruction,
                              max_steps=math.ceil(spec.horizon * 15.0), steps_per_chunk=0)
        sent = client.send_goal_async(goal, feedback_callback=lambda f: feedback.append(
            f.feedback))
        gh = _wait(lambda: sent.done() and sent.result(), 30.0, "goal acceptance", runner.check)
        if not gh.accepted:
            raise RunFailed("the vla_node refused the RunPolicy goal")
        res_future = gh.get_result_async()
        _wait(res_future.done, spec.horizon * 3 + 60.0, "the policy run", runner.check)
        wrapped = res_future.result()
        res = wrapped.result
        if wrapped.status == GoalStatus.STATUS_ABORTED and not res.message:
            raise RunFailed("the vla_node aborted the run without a result (see its log, -v)")
        if res.status == res.STATUS_FAILED and res.chunks_requested <= 1 and \
                res.steps_executed == 0:
            raise RunFailed(f"the policy could not run: {res.message}")
        time.sleep(1.0)  # let the last placement settle before judging
        call("finish")
        verdict = _wait(lambda: verdicts and verdicts[-1], 10.0, "the task verdict",
                        runner.check)
    except NodeDied as exc:
        raise RunFailed(f"{exc}" + ("\n  " + "\n  ".join(exc.tail[-5:]) if exc.tail else "")
                        ) from None
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)
        runner.stop()
    report = json.loads(verdict.report_json)
    latency = [f.last_inference_latency for f in feedback]
    status_names = {res.STATUS_SUCCEEDED: "succeeded", res.STATUS_CANCELLED: "cancelled",
                    res.STATUS_MAX_STEPS: "max_steps", res.STATUS_FAILED: "failed"}
    report["run"] = {
        "scene": spec.name, "instruction": spec.instruction, "oracle": str(oracle_path),
        "backend": backend, "fault": fault, "seed": seed, "bag": bag,
        "policy_status": status_names.get(res.status, str(res.status)),
        "policy_message": res.message, "steps_executed": res.steps_executed,
        "chunks_requested": res.chunks_requested,
        "inference_latency_p50": sorted(latency)[len(latency) // 2] if latency else None,
        "wall_time": round(time.monotonic() - t_start, 2),
    }
    return report


@app.command("run")
def run(
    scene: Annotated[str, typer.Option("--scene", "-s", help="Scene name or scene YAML.")],
    oracle: Annotated[str | None, typer.Option(
        help="Fine-grained oracle JSON (default: the one the scene names).")] = None,
    backend: Annotated[str, typer.Option(help="expert | openpi | openvla | lerobot")] = "expert",
    fault: Annotated[str | None, typer.Option(
        help="Fault for the expert, KIND@WHEN (e.g. drop@0.5, skip@1).")] = None,
    seed: Annotated[int, typer.Option(help="Scene seed.")] = 0,
    bag: Annotated[str | None, typer.Option(help="Record the run to this bag directory.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the §6 report as JSON.")
                           ] = False,
    preset: Annotated[str | None, typer.Option(help="Observation preset (policy family).")
                      ] = None,
    host: Annotated[str | None, typer.Option(help="openpi server host.")] = None,
    port: Annotated[int | None, typer.Option(help="openpi server port.")] = None,
    url: Annotated[str | None, typer.Option(help="OpenVLA /act URL.")] = None,
    checkpoint: Annotated[str | None, typer.Option(help="LeRobot checkpoint directory.")
                          ] = None,
    namespace: Annotated[str | None, typer.Option(
        help="ROS namespace for the stack (default: a fresh one).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show the nodes' output.")
                       ] = False,
) -> None:
    """Run a policy on a scene in the embedded sim and print the oracle's verdict."""
    from rich.console import Console
    from rich.table import Table

    from mango.errors import InputError

    err = Console(stderr=True)
    out = (lambda label, line: err.print(f"[cyan]\\[{label}][/] {line}", highlight=False,
                                         soft_wrap=True)) if verbose else None
    options = {"preset": preset, "host": host, "port": port, "url": url,
               "checkpoint": checkpoint}
    try:
        report = run_episode(scene, oracle, backend, fault, seed, bag, namespace, options, out)
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None
    except RunFailed as exc:
        sys.stderr.write(f"error: could not run: {exc}\n")
        raise typer.Exit(1) from None
    if json_output:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return
    run_info = report["run"]
    console = Console()
    colour = "green" if report["verdict"] == "pass" else "red"
    where = f" at step {report['failed_step']}" if report["failed_step"] else ""
    with_fault = f", fault {run_info['fault']}" if run_info["fault"] else ""
    console.print(f"[bold]{run_info['instruction']}[/] ({run_info['scene']}, "
                  f"{run_info['backend']}{with_fault})")
    console.print(f"verdict: [bold {colour}]{report['verdict']}[/]{where}")
    table = Table()
    for col in ("step", "action", "status", "completed at (s)"):
        table.add_column(col)
    for s in report["steps"]:
        t = s.get("completed_t")
        table.add_row(s["path"], s["action_id"], s["status"], "" if t is None else f"{t:.2f}")
    console.print(table)
    for e in report.get("events", []):
        console.print(f"  t={e['t']:.2f} {e['kind']} at {e['path']}: {e.get('detail', '')}")
    console.print(f"policy: {run_info['policy_status']} ({run_info['policy_message']}), "
                  f"{run_info['steps_executed']} steps in {run_info['chunks_requested']} chunks, "
                  f"{run_info['wall_time']} s")
