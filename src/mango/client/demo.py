"""The main job: a LIBERO-10 task in the embedded sim, judged live by the oracle node.

Brings up `config/stacks/demo.yaml`, resets the scene, loads the scene's fine-grained oracle,
runs the scripted expert (optionally with a fault), prints every step verdict as it happens,
then the final report next to the fault's ground truth; the run is recorded to an MCAP bag.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from std_srvs.srv import Trigger

from mango.client.session import StackSession, VerdictFollower
from mango.errors import InputError
from mango.oracle.cli_render import render_report
from mango.oracle.tracker import Report
from mango.ros.bag_states import bag_episode
from mango.sim.scene import load_scene, resolve_scene
from mango.stack import load_stack
from mango_ros.msg import StepVerdict
from mango_ros.srv import LoadOracle, ResetScene, RunExpert

_STYLE = {"enabled": "yellow", "completed": "bold green", "incomplete": "red",
          "out_of_order": "magenta", "regression": "bold dark_orange"}


@dataclass
class DemoResult:
    report: Report
    expected_failed_step: str | None
    expected_fail_t: float | None
    expert_message: str
    bag: Path
    report_file: Path

    @property
    def localized(self) -> bool:
        """The oracle's verdict agrees with the ground truth of the run."""
        if self.expected_failed_step is None:
            return self.report.verdict == "pass"
        return self.report.failed_step == self.expected_failed_step


def _timeline(console: Console) -> Any:
    def show(msg: StepVerdict) -> None:
        if msg.status == "pending" and not msg.event:
            return
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        kind = msg.event or msg.status
        extra = f"  [dim]{msg.detail}[/]" if msg.detail else ""
        console.print(f"  t={t:7.2f}s  [bold]{msg.path:<6}[/] {msg.action_id:<14} "
                      f"[{_STYLE.get(kind, 'white')}]{kind}[/]{extra}", highlight=False)
    return show


def run_demo(scene: str, seed: int = 0, fault: str = "", out_dir: Path | None = None,
             real_time_factor: float = 1.0, console: Console | None = None) -> DemoResult:
    console = console or Console()
    spec = load_scene(resolve_scene(scene))
    if spec.oracle is None:
        raise InputError("the scene names no fine-grained oracle", field="oracle")
    oracle_path = Path(spec.oracle)
    out_dir = Path(out_dir or Path("out") / f"demo_{spec.name}")
    out_dir.mkdir(parents=True, exist_ok=True)
    bag = out_dir / "bag"
    if bag.exists():
        raise InputError("bag directory exists; choose another --out", file=str(bag))

    stack = load_stack("demo")
    params = {n.name: n.parameters for n in stack.nodes}
    params["sim_node"].update(scene=spec.name, seed=seed, real_time_factor=real_time_factor)
    params["bag_recorder"]["output"] = str(bag.resolve())

    console.print(f"[bold]{spec.instruction}[/]  (scene {spec.name}, seed {seed}"
                  + (f", fault {fault}" if fault else "") + ")")
    with StackSession(stack) as session:
        node = session.node
        assert node is not None
        follower = VerdictFollower(node, on_step=_timeline(console))
        # The sim starts in this scene; the oracle is grounded on its world state. The reset
        # then restarts world time, which starts the oracle's episode: live tracking and the
        # bag's last episode hold exactly the same states.
        session.wait(lambda: node.count_publishers("/world_state") >= 1, 60, "the sim")
        loaded = session.call(LoadOracle, "/oracle_node/load_oracle",
                              LoadOracle.Request(oracle_path=str(oracle_path.resolve())))
        if not loaded.success:
            raise InputError("oracle refused: " + "; ".join(loaded.problems),
                             file=str(oracle_path))
        # The recorder must hear the world state and the verdicts before the episode starts.
        session.wait(lambda: node.count_subscribers("/world_state") >= 2
                     and node.count_subscribers("/oracle/step_verdicts") >= 2, 20,
                     "the recorder")
        reply = session.call(ResetScene, "/sim_node/reset",
                             ResetScene.Request(scene=spec.name, seed=seed), timeout=120)
        if not reply.success:
            raise InputError(f"sim reset failed: {reply.message}")
        console.print(f"oracle: {oracle_path.name} ({loaded.num_actions} steps); running the "
                      "scripted expert …")
        seen = len(follower.tasks)
        run = session.call(RunExpert, "/sim_node/run_expert", RunExpert.Request(fault=fault),
                           timeout=max(120.0, 4 * spec.horizon / max(real_time_factor, 0.25)))
        session.call(Trigger, "/oracle_node/finish", Trigger.Request())
        task = session.wait(lambda: follower.task_after(seen), 20, "the task verdict")
        t_end = task.header.stamp.sec + task.header.stamp.nanosec * 1e-9
    n_states = len(bag_episode(bag))
    report = dataclasses.replace(Report.from_json(json.loads(task.report_json)),
                                 n_states=n_states, t_end=t_end)
    expected = run.expected_failed_step or None
    fail_t = None if math.isnan(run.expected_fail_t) else run.expected_fail_t
    report_file = out_dir / "report.json"
    report_file.write_text(json.dumps({
        "scene": spec.name, "seed": seed, "fault": fault or None,
        "report": report.to_json(),
        "ground_truth": {"failed_step": expected, "failed_t": fail_t},
        "expert": run.message, "bag": str(bag)}, indent=2) + "\n")
    return DemoResult(report, expected, fail_t, run.message, bag, report_file)


def print_result(result: DemoResult, console: Console) -> None:
    console.rule("final report")
    render_report(result.report, console)
    truth = (f"labelled failure at step {result.expected_failed_step}"
             f" (t={result.expected_fail_t:.2f}s)" if result.expected_failed_step
             else "no fault expected: the task should pass")
    mark = "[bold green]✓ oracle agrees[/]" if result.localized else "[bold red]✗ mismatch[/]"
    console.print(f"ground truth: {truth}  {mark}")
    console.print(f"bag: {result.bag}   report: {result.report_file}")
