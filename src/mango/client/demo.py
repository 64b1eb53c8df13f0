"""The main job: a LIBERO-10 task in the embedded sim, run through the robot stack
(RunPolicy -> ExecuteChunk -> sim) by the scripted expert and judged live by the oracle node.

Prints every step verdict as it happens, then the final report next to the run's ground truth
(the expert's label for an injected fault); the run is recorded to an MCAP bag and the report
written beside it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from mango.bags.states import episode_starts
from mango.client.episode import Episode, run_episode
from mango.oracle.cli_render import render_report
from mango.oracle.tracker import Report
from mango_ros.msg import StepVerdict

_STYLE = {"enabled": "yellow", "completed": "bold green", "incomplete": "red",
          "out_of_order": "magenta", "regression": "bold dark_orange"}


@dataclass
class DemoResult:
    report: Report
    run: dict[str, Any]
    report_file: Path

    @property
    def truth(self) -> dict[str, Any]:
        return self.run.get("policy_info") or {}

    @property
    def localized(self) -> bool:
        """The oracle's verdict agrees with the ground truth of the run."""
        expected = self.truth.get("failed_step")
        if self.truth.get("expected_verdict") == "pass" or expected is None:
            return self.report.verdict == "pass"
        return self.report.verdict == "fail" and self.report.failed_step == expected


def timeline(console: Console) -> Any:
    """A callback printing each step verdict as a coloured line."""
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
             console: Console | None = None, views: bool = False) -> DemoResult:
    console = console or Console()
    out_dir = Path(out_dir or "out/demo")
    out_dir.mkdir(parents=True, exist_ok=True)
    bag = out_dir / "bag"
    console.print(f"[bold]{scene}[/] (seed {seed}" + (f", fault {fault}" if fault else "")
                  + "): sim + control + expert policy + oracle node; steps as they happen:")
    report = run_episode(Episode(scene, fault=fault or None, seed=seed, bag=str(bag),
                                 views=views),
                         on_step=timeline(console))
    run = report.pop("run")
    report_file = out_dir / "report.json"
    report_file.write_text(json.dumps({"report": report, "run": run}, indent=2) + "\n")
    starts, count = episode_starts(bag, f"{run['namespace']}/world_state")
    states = count - starts[-1]
    full = dataclasses.replace(Report.from_json(report), n_states=states, t_end=run["t_end"])
    return DemoResult(full, run, report_file)


def print_result(result: DemoResult, console: Console) -> None:
    console.rule(result.run["instruction"])
    render_report(result.report, console)
    truth = result.truth
    if truth.get("failed_step"):
        t = truth.get("failed_t")
        told = f"labelled failure at step {truth['failed_step']}" + (
            f" (t={t:.2f}s)" if t is not None else "") + f" from {truth.get('fault')}"
    else:
        told = "no failure expected: the task should pass"
    mark = "[bold green]✓ oracle agrees[/]" if result.localized else "[bold red]✗ mismatch[/]"
    console.print(f"ground truth: {told}  {mark}", soft_wrap=True)
    console.print(f"policy: {result.run['policy_status']} ({result.run['steps_executed']} "
                  f"actions in {result.run['chunks_requested']} chunks, "
                  f"{result.run['wall_time']} s)")
    console.print(f"bag: {result.run['bag']}   report: {result.report_file}", soft_wrap=True)
