"""What every judging command shares: `--exit-code` (oracles.md §6), which turns a `fail`
verdict into exit status 1 for CI scripts, as `git diff --exit-code` does for a diff."""

from __future__ import annotations

from typing import Annotated

import typer

ExitCodeOpt = Annotated[bool, typer.Option(
    "--exit-code", help="Exit 1 when the verdict is fail (default: 0 whenever it was judged).")]


def exit_for(verdict: str, exit_code: bool) -> None:
    """Exit 1 on a fail verdict when `--exit-code` asked for it; otherwise return."""
    if exit_code and verdict == "fail":
        raise typer.Exit(1)
