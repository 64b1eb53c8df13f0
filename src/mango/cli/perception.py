"""`mango perception ...`: perception tools (marker sheets)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import typer

app = typer.Typer(help="Perception: detections, fiducial marker sheets.", no_args_is_help=True)


def _fail(exc: Exception) -> NoReturn:
    sys.stderr.write(f"error: {exc}\n")
    raise typer.Exit(2)


def _ids(text: str) -> list[int]:
    """'0-4,7' -> [0, 1, 2, 3, 4, 7]."""
    from mango.errors import InputError

    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                a, b = part.split("-", 1)
                out.extend(range(int(a), int(b) + 1))
            elif part:
                out.append(int(part))
        except ValueError:
            raise InputError(f"'{part}' is not an id or a range like 0-4", field="--ids") from None
    return out


@app.command("markers")
def markers(
    ids: str = typer.Option(..., "--ids", help="marker ids: 0-4,7"),
    size_mm: float = typer.Option(..., "--size-mm", help="side of the black square, mm"),
    output: Path = typer.Option(..., "-o", "--output", help="sheet.png or sheet.pdf"),
    dictionary: str = typer.Option("4x4_50", "--dictionary",
                                   help="4x4_50, 5x5_100, apriltag_36h11, ..."),
    dpi: int = typer.Option(300, "--dpi", min=72, max=1200),
    page: str = typer.Option("a4", "--page", help="a4 or letter"),
) -> None:
    """Print a marker sheet at true size (print it at 100 % scale, no 'fit to page')."""
    from rich.console import Console

    from mango.cli.outputs import output_file, write_error
    from mango.errors import InputError
    from mango.perception.sheet import marker_sheet, write_sheet

    try:
        path = output_file(output, "marker sheet")
        img = marker_sheet(dictionary, _ids(ids), size_mm, dpi=dpi, page=page)
        try:
            write_sheet(path, img, dpi)
        except OSError as exc:
            raise write_error(exc, path) from None
    except InputError as exc:
        _fail(exc)
    Console().print(f"{output}: {len(_ids(ids))} markers ({dictionary}), {size_mm:g} mm "
                    f"squares at {dpi} DPI on {page}; print at 100 % scale")
