"""Reading the project's JSON (oracles, libraries, scenes, task lists, trace records, service
requests) with errors that name the file, line and column.

Every JSON input goes through `parse_json`, so every entry point refuses the same things:
invalid JSON, a key given twice in one object (JSON leaves it undefined; Python would keep
the last value silently), and nesting deeper than `MAX_DEPTH` levels (no format here needs
more than ~15; the limit keeps recursive readers far from Python's recursion limit).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mango.errors import InputError

MAX_DEPTH = 100  # nesting levels of arrays and objects any JSON input may have


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_pairs)


def _too_deep(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else ()
        if children and depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def _key_line(text: str, key: str) -> int | None:
    """The line of a duplicated key's second occurrence, when the text makes it certain."""
    hits = [m.start() for m in re.finditer(re.escape(json.dumps(key)) + r"\s*:", text)]
    return text.count("\n", 0, hits[1]) + 1 if len(hits) == 2 else None


def parse_json(text: str, file: str | None = None, line: int | None = None) -> Any:
    """Parse one JSON document; `line` is where `text` starts in its file (a JSON Lines
    record), so positions in errors are the file's."""
    first = line or 1
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=file, line=first + exc.lineno - 1,
                         column=exc.colno) from None
    except _DuplicateKey as exc:
        at = _key_line(text, exc.key)
        raise InputError(f"key {exc.key!r} appears twice in one object",
                         file=file, line=first + at - 1 if at else line) from None
    except RecursionError:  # nested too deep for the decoder itself
        deep = True
    else:
        deep = _too_deep(value, MAX_DEPTH)
    if deep:
        raise InputError(f"JSON nested deeper than {MAX_DEPTH} levels", file=file, line=line)
    return value


def read_text(path: str | Path, what: str) -> str:
    """A UTF-8 text file; `what` names the kind of file in messages."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", file=str(p)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=str(p)) from None


def read_json(path: str | Path, what: str) -> Any:
    return parse_json(read_text(path, what), str(path))
