"""`mango doctor`: is this environment able to run the stack?"""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def doctor(robot: Annotated[str | None, typer.Option(
        "--robot", help="A Franka robot's address: check it through libfranka instead (reachable, "
        "FCI, state, errors, hand, real-time kernel).")] = None) -> None:
    """Check Python, rclpy, the RMW, the project's interfaces and a DDS round trip; or, with
    --robot, a Franka robot."""
    from rich.console import Console
    from rich.table import Table

    from mango.doctor import check_robot, run_checks

    console = Console()
    results = check_robot(robot) if robot else run_checks()
    table = Table(title=f"mango doctor: robot {robot}" if robot else "mango doctor")
    table.add_column("check", overflow="fold")
    table.add_column("status", overflow="fold")
    table.add_column("detail", overflow="fold")
    style = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}
    for r in results:
        table.add_row(r.name, f"[{style[r.status]}]{r.status}[/]", r.detail)
    console.print(table)
    failed = [r for r in results if r.status == "fail"]
    if failed:
        err = Console(stderr=True)
        for r in failed:
            err.print(f"[bold red]broken:[/] {r.name}: {r.detail}", highlight=False, soft_wrap=True)
        raise typer.Exit(1)
