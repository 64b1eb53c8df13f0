"""`mango demo`: the main job on the embedded default (sim + oracle node, no robot)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from mango.cli.bounds import SeedOpt


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    scene: Annotated[str, typer.Option(help="Scene name or file.")] = "libero10_soup_sauce_basket",
    seed: SeedOpt = 0,
    fault: Annotated[str, typer.Option(help="Inject a fault: KIND@WHEN (e.g. drop@0.5).")] = "",
    out: Annotated[Path | None, typer.Option(help="Output folder (bag, report).")] = None,
    record_views: Annotated[bool, typer.Option(
        "--record-views", help="Also record what the rviz/Foxglove layouts show (cameras, "
        "markers, tf, robot_description), in the root namespace.")] = False,
) -> None:
    """Run a LIBERO-10 task through RunPolicy -> ExecuteChunk -> sim; the oracle judges it live.

    The scripted expert is the policy; a fault shows a failure localized at its step.
    """
    import time

    from rich.console import Console

    from mango.cli.outputs import output_dir
    from mango.client.demo import print_result, run_demo
    from mango.client.episode import RunFailed
    from mango.errors import InputError

    console = Console()
    out = out or Path("out") / f"demo_{time.strftime('%Y%m%d_%H%M%S')}"
    try:
        # checked first: a recorder that cannot write its bag ends the run late
        output_dir(output_dir(out, "demo output folder") / "bag", "bag folder", new=True)
        result = run_demo(scene, seed, fault, out, console, views=record_views)
    except InputError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise typer.Exit(2) from None
    except RunFailed as exc:
        sys.stderr.write(f"error: could not run: {exc}\n")
        raise typer.Exit(1) from None
    print_result(result, console)
