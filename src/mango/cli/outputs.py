"""Where a command writes: checked before any work starts, so `-o` naming a file where a folder
is wanted, or a place that cannot be written, is one clear error (exit 2), not a traceback
after minutes of work; and writing itself never raises past the command.

One rule for every `-o` that names a file: a path ending in `/` or an existing folder means
"in this folder", under the command's default name (as `cp` treats a folder), so
`-o out/min/` never becomes a file called `min`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from mango.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress


def output_file(path: Path, what: str = "output file") -> Path:
    """A file to create or overwrite; its folder is made if missing."""
    if path.is_dir():
        raise InputError(f"the {what} is a directory: give a file name", file=str(path))
    _make_folder(path.parent, what)
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"cannot overwrite the {what} (permission denied)", file=str(path))
    return path


def output_file_in(path: str | Path, default_name: str, what: str = "output file") -> Path:
    """The file `-o PATH` names: PATH itself, or `PATH/default_name` when PATH ends in `/` or is
    an existing folder. Takes the option's text: `Path` drops a trailing slash."""
    text = str(path)
    target = Path(text)
    if text.endswith(("/", os.sep)) or target.is_dir():
        _make_folder(target, what)
        target = target / default_name
    return output_file(target, what)


def beside(source: Path, suffix: str) -> Path:
    """A default output next to `source` (a bag folder or file): `run` -> `run<suffix>`, and a
    bag's own `.mcap` counts as its folder, so nothing is written inside a bag."""
    source = Path(str(source).rstrip("/") or "/")
    if source.is_file() and (source.parent / "metadata.yaml").is_file():
        source = source.parent
    name = source.stem if source.is_file() else source.name
    return source.with_name(name + suffix)


def output_dir(path: Path, what: str = "output folder", new: bool = False) -> Path:
    """A folder to write into (made if missing); `new`: one that must not exist yet, as a bag's,
    so nothing a user recorded is ever overwritten."""
    if path.exists() and not path.is_dir():
        raise InputError(f"the {what} is a file, not a folder", file=str(path))
    if new and path.exists() and any(path.iterdir()):
        raise InputError(f"the {what} exists and is not empty: give a new one", file=str(path))
    if new and not path.exists():
        _make_folder(path.parent, what)
        return path
    _make_folder(path, what)
    return path


def _make_folder(folder: Path, what: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder for the {what}: {exc.strerror}",
                         file=str(folder)) from None
    if not os.access(folder, os.W_OK):
        raise InputError(f"cannot write the {what} here (permission denied)", file=str(folder))


def write_error(exc: OSError, path: Path | str) -> InputError:
    """An OSError met while writing (disk full, a folder removed meanwhile), as the error the
    user sees."""
    return InputError(f"cannot write: {exc.strerror or exc}", file=str(getattr(exc, "filename",
                      None) or path))


def run_progress(console: Console, *, rate: bool = False, transient: bool = True) -> Progress:
    """The bar long runs show: what runs now, done of total, (a `rate` field), elapsed, ETA."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn()]
    if rate:
        columns.append(TextColumn("{task.fields[rate]}"))
    columns += [TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn()]
    return Progress(*columns, console=console, transient=transient)
