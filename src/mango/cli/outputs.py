"""Where a command writes: checked before any work starts, so `-o` naming a directory where a
file is wanted, a file where a folder is wanted, or a place that cannot be written is one clear
error (exit 2), not a traceback after minutes of work; and writing itself never raises past
the command."""

from __future__ import annotations

import os
from pathlib import Path

from mango.errors import InputError


def output_file(path: Path, what: str = "output file") -> Path:
    """A file to create or overwrite; its folder is made if missing."""
    if path.is_dir():
        raise InputError(f"the {what} is a directory: give a file name", file=str(path))
    _make_folder(path.parent, what)
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"cannot overwrite the {what} (permission denied)", file=str(path))
    return path


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
