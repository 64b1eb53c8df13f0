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
           "checked_phrase", "seed_option"]


def seed_option(text: str) -> typer.models.OptionInfo:
    """`--seed` with help `text`: an integer in 0..SEED_MAX (`mango.sim.seeds`)."""
    return typer.Option("--seed", min=0, max=SEED_MAX, help=text)


SeedOpt = Annotated[int, seed_option("Initial-placement seed.")]


def checked_phrase(value: str | None) -> str | None:
    """A noun phrase a command grounds and detects (`primitives`' OBJECT, DESTINATION): within
    the bound of one `Detect` request (`mango.perception.base.phrases_problem`), checked while
    the command line is parsed, before the scene is built (a 120 KB phrase ran for 12 s)."""
    if value is None:
        return None
    from mango.perception.base import phrases_problem  # only when a command takes a phrase

    if (why := phrases_problem([value])) is not None:
        raise typer.BadParameter(why.replace("phrase 1 is", "the phrase is", 1))
    return value
