"""Reading the project's JSON (oracles, libraries, scenes, task lists, trace records, service
requests) with errors that name the file, line and column.

Every JSON input goes through `parse_json`, so every entry point refuses the same things:
invalid JSON, a key given twice in one object (JSON leaves it undefined; Python would keep
the last value silently), and nesting deeper than `MAX_DEPTH` levels (no format here needs
more than ~15; the limit keeps recursive readers far from Python's recursion limit). Files
are read only when they are regular files of sane size (`read_text`, `read_lines`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, BinaryIO

from mango.errors import (
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    InputError,
    byte_size,
    open_user_file,
    read_user_text,
)

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


def read_text(path: str | Path, what: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A UTF-8 text file a user named; `what` names the kind of file in messages. Only a
    regular file of at most `max_bytes` is read (`mango.errors.read_user_text`)."""
    return read_user_text(path, what, max_bytes)


def read_json(path: str | Path, what: str) -> Any:
    return parse_json(read_text(path, what), str(path))


def read_lines(path: str | Path, what: str, max_line_bytes: int = MAX_LINE_BYTES) -> Lines:
    """The UTF-8 lines of a file a user named (a JSON Lines trace of any length), streamed.
    The file is checked now (`mango.errors.open_user_file`: a FIFO or a device is refused
    before anything is read), read as the lines are taken."""
    return Lines(open_user_file(path, what, None), str(path), what, max_line_bytes)


class Lines:
    """An open file's lines; an `InputError` names the file and line of one longer than
    `max_line_bytes` or not UTF-8. Close it (or use it in a `with`) when done."""

    def __init__(self, fh: BinaryIO, file: str, what: str, max_line_bytes: int) -> None:
        self._fh, self.file, self.what, self.max_line_bytes = fh, file, what, max_line_bytes
        self.lineno = 0

    def __iter__(self) -> Lines:
        return self

    def __next__(self) -> str:
        self.lineno += 1
        try:
            raw = self._fh.readline(self.max_line_bytes + 1)
        except OSError as exc:
            raise InputError(f"cannot read {self.what}: {exc.strerror or exc}", file=self.file,
                             line=self.lineno) from None
        if not raw:
            raise StopIteration
        if len(raw) > self.max_line_bytes:
            raise InputError(f"a line longer than {byte_size(self.max_line_bytes)}",
                             file=self.file, line=self.lineno)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError("not UTF-8 text", file=self.file, line=self.lineno,
                             column=exc.start + 1) from None

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
