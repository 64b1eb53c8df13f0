"""Reading the project's JSON files (oracles, libraries, scenes, task lists) with errors that
name the file, line and column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mango.errors import InputError


def read_text(path: str | Path, what: str) -> str:
    """A UTF-8 text file; `what` names the kind of file in messages."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", file=str(p)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=str(p)) from None


def parse_json(text: str, file: str | None = None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=file, line=exc.lineno,
                         column=exc.colno) from None


def read_json(path: str | Path, what: str) -> Any:
    return parse_json(read_text(path, what), str(path))
