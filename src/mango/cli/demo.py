"""`mango demo`: the main job on the embedded default (sim + oracle node, no robot)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    scene: Annotated[str, typer.Option(help="Scene name or file.")] = "libero10_soup_sauce_basket",
    seed: Annotated[int, typer.Option()] = 0,
    fault: Annotated[str, typer.Option(help="Inject a fault: KIND@WHEN (e.g. drop@0.5).")] = "",
    out: Annotated[Path | None, typer.Option(help="Output folder (bag, report).")] = None,
    speed: Annotated[float, typer.Option(help="Sim speed, x real time (0: flat out).")] = 1.0,
) -> None:
    """Run a LIBERO-10 task with the scripted expert; the oracle node judges it live."""
    import time

    from rich.console import Console

    from mango.bringup import NodeDied
    from mango.client.demo import print_result, run_demo
    from mango.errors import InputError

    console = Console()
    out = out or Path("out") / f"demo_{time.strftime('%Y%m%d_%H%M%S')}"
    try:
        result = run_demo(scene, seed, fault, out, speed, console)
    except (InputError, NodeDied, TimeoutError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None
    print_result(result, console)
