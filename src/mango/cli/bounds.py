"""The bounds of the counts a user gives the command line, as option types: each range shows in
`--help` and is checked while the command line is parsed, before any work starts; a value
outside is one `error:` line naming the option, exit 2 (`cli/boundary.py`).

Kept light (typer and a constant): every command module reads these at import time."""

from __future__ import annotations

from typing import Annotated

import typer

from mango.sim.seeds import MAX_SEED_COUNT, SEED_MAX

# Processes a command may start: each is a Python interpreter (with MuJoCo for a campaign's
# worker); past this a machine forks itself to a standstill, never faster.
MAX_PROCESSES = 64
# A rendered image's side: the renderers' framebuffer (and the orchestrator's check) stop here.
MAX_IMAGE_SIDE = 4096

__all__ = ["MAX_IMAGE_SIDE", "MAX_PROCESSES", "MAX_SEED_COUNT", "SEED_MAX", "SeedOpt",
           "seed_option"]


def seed_option(text: str) -> typer.models.OptionInfo:
    """`--seed` with help `text`: an integer in 0..SEED_MAX (`mango.sim.seeds`)."""
    return typer.Option("--seed", min=0, max=SEED_MAX, help=text)


SeedOpt = Annotated[int, seed_option("Initial-placement seed.")]
