"""Human-readable rendering of reports (shared by `mango oracle check` and `mango replay`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from mango.oracle.tracker import Report

if TYPE_CHECKING:
    from rich.console import Console

    from mango.oracle.static_check import Problem
    from mango.oracle.symbolic import SymbolicReport

_STATUS_STYLE = {"completed": "green", "incomplete": "red"}
_EVENT_STYLE = {"out_of_order": "yellow", "regression": "magenta"}


def _t(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def render_report(report: Report, console: Console, json_output: bool = False) -> None:
    """Print a report: one JSON object, or a coloured table of steps and events."""
    if json_output:
        console.file.write(json.dumps(report.to_json()) + "\n")
        return
    from rich.table import Table

    table = Table(title="Steps", title_justify="left")
    table.add_column("step", style="bold", overflow="fold")
    table.add_column("action", overflow="fold")
    table.add_column("status", overflow="fold")
    table.add_column("completed t", justify="right", overflow="fold")
    for s in report.steps:
        status, style = s.status, _STATUS_STYLE[s.status]
        if s.path == report.failed_step:
            # a completed failed step is a goal state the robot undid and never restored
            status = ("completed, then undone ← failed here" if s.status == "completed"
                      else "incomplete ← failed here")
            style = "red"
        table.add_row(s.path, s.action_id, f"[{style}]{status}[/]", _t(s.completed_t))
    console.print(table)
    if report.events:
        ev = Table(title="Events", title_justify="left")
        ev.add_column("t", justify="right", overflow="fold")
        ev.add_column("kind", overflow="fold")
        ev.add_column("step", style="bold", overflow="fold")
        ev.add_column("detail", overflow="fold")
        for e in report.events:
            ev.add_row(
                _t(e.t), f"[{_EVENT_STYLE.get(e.kind, 'white')}]{e.kind}[/]", e.path, e.detail
            )
        console.print(ev)
    else:
        console.print("[dim]no out-of-order or regression events[/]")
    verdict_style = {"pass": "bold green", "fail": "bold red"}.get(report.verdict, "bold yellow")
    line = f"verdict: [{verdict_style}]{report.verdict.upper()}[/]"
    if report.failed_step is not None:
        line += f"  failed step: [bold]{report.failed_step}[/]"
    done = sum(s.status == "completed" for s in report.steps)
    line += f"  ({done}/{len(report.steps)} steps, {report.n_states} states"
    line += f", t_end={_t(report.t_end)})" if report.t_end is not None else ")"
    console.print(line)


def render_problems(problems: Iterable[Problem], console: Console) -> None:
    """A table of static-check problems, or a green all-clear line."""
    from rich.table import Table

    problems = list(problems)
    if not problems:
        console.print("[bold green]no problems[/]: every expression is well-formed and grounded")
        return
    table = Table(title=f"{len(problems)} problem(s)", title_justify="left")
    table.add_column("step", style="bold", overflow="fold")
    table.add_column("kind", style="red", overflow="fold")
    table.add_column("message", overflow="fold")
    table.add_column("field", style="dim", overflow="fold")
    for p in problems:
        table.add_row(p.path or "(oracle)", p.kind, p.message, p.field)
    console.print(table)


def render_symbolic(report: SymbolicReport, console: Console) -> None:
    style = "bold green" if report.verdict == "pass" else "bold red"
    console.print(f"goal: {report.goal}")
    console.print(
        f"verdict: [{style}]{report.verdict.upper()}[/] on the last state (t={_t(report.t_end)}, "
        f"{report.n_states} states); first satisfied at t={_t(report.first_satisfied_t)}"
    )
