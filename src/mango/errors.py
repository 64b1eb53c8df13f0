"""User-facing input errors that say where the problem is.

Every reader of a user file (oracle, trace, scene, library, stack) raises `InputError`
so the CLI can print one clear line and exit 2 instead of a traceback. A file a user names is
opened through `open_user_file` (or read through `read_user_text`): a regular file of sane
size, checked before a byte is read, so a FIFO, a device or a folder is refused at once.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError


@dataclass
class InputError(Exception):
    """Bad input: what is wrong and where (file, line, column, field)."""

    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    field: str | None = None

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        where = []
        if self.file:
            loc = self.file
            if self.line is not None:
                loc += f":{self.line}"
                if self.column is not None:
                    loc += f":{self.column}"
            where.append(loc)
        elif self.line is not None:
            where.append(f"line {self.line}" + (f", column {self.column}" if self.column else ""))
        if self.field:
            where.append(f"field '{self.field}'")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


def field_path(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic error location as `objects.soup_1.position[2]`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def from_validation_error(
    exc: ValidationError, file: str | None = None, line: int | None = None, prefix: str = ""
) -> InputError:
    """Turn the first pydantic error into an `InputError` naming the field."""
    err = exc.errors()[0]
    path = field_path(tuple(err["loc"]))
    if prefix:
        path = f"{prefix}.{path}" if path else prefix
    msg = err["msg"]
    more = len(exc.errors()) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return InputError(msg, file=file, line=line, field=path or None)


class ProblemLog:
    """Says each distinct problem of a stream once, then again at most every `every` seconds
    with how often it recurred: a broken stream is loud once, not on every message."""

    OTHERS = "(other problems)"  # the key of every distinct problem past `max_keys`

    def __init__(self, every: float = 10.0, max_keys: int = 1000) -> None:
        self.every = every
        self.max_keys = max_keys  # distinct problems remembered: a hostile stream's are endless
        self.counts: dict[str, int] = {}
        self._said: dict[str, tuple[float, int]] = {}  # key -> (when, count) last said

    def note(self, text: str, now: float, key: str | None = None) -> str | None:
        """Count a problem (`key` groups texts that differ only in details such as a time);
        returns the line to log now, or None."""
        key = key or text
        if key not in self.counts and len(self.counts) >= self.max_keys:
            key = self.OTHERS
        n = self.counts[key] = self.counts.get(key, 0) + 1
        said = self._said.get(key)
        if said is None:
            self._said[key] = (now, n)
            return text
        if now - said[0] >= self.every:
            self._said[key] = (now, n)
            return f"{text} ({n - said[1]} more since it was last reported)"
        return None

    def summary(self) -> list[str]:
        """One line per distinct problem with its count, first seen first."""
        return [f"{n}x {key}" for key, n in self.counts.items()]

    def digest(self, top: int = 3) -> str:
        """One line for all of them: how many, how many distinct, the most frequent first."""
        ranked = sorted(self.counts.items(), key=lambda kv: -kv[1])
        more = len(ranked) - top
        return (f"{sum(self.counts.values())} problems, {len(ranked)} distinct: "
                + "; ".join(f"{n}x {key}" for key, n in ranked[:top])
                + (f"; and {more} more distinct" if more > 0 else ""))


class UnreachableError(ValueError):
    """A Cartesian hand pose the arm cannot reach (the message says by how much)."""


# ----------------------------------------------------------------------------- a user's files

MAX_FILE_BYTES = 64 * 2**20
"""The most a file read whole may hold (an oracle, function library, scene, stack, robot file,
BDDL task, URDF): over 100 times the largest file the project ships."""

MAX_LINE_BYTES = 64 * 2**20
"""The most one line of a file read line by line (a trace's world state) may hold; such a file
may be of any length."""

_NOT_REGULAR = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def byte_size(n: int) -> str:
    """`n` bytes for people: `64 MiB`, `3 GiB`, `120 bytes`."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} bytes"


def _check_user_file(st: os.stat_result, file: str, what: str, max_bytes: int | None) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _NOT_REGULAR if test(st.st_mode)), "no file")
        raise InputError(f"cannot read {what}: {kind}, not a regular file", file=file)
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputError(f"cannot read {what}: {byte_size(st.st_size)}, more than the "
                         f"{byte_size(max_bytes)} a file read whole may hold", file=file)


def open_user_file(path: str | Path, what: str, max_bytes: int | None = MAX_FILE_BYTES
                   ) -> BinaryIO:
    """Open a file a user named, in binary; `what` names its kind in messages. An `InputError`
    naming the file unless it is a regular file of at most `max_bytes` (None: any size, for a
    reader that streams it and bounds each line). Checked before it is opened (opening a
    device can do things), then the opened file again (it may have been swapped since), and
    opened without blocking: a FIFO is refused, never waited on."""
    file = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        _check_user_file(os.stat(file), file, what, max_bytes)
        fd = os.open(file, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=file) from None
    except ValueError:  # a NUL in the path
        raise InputError(f"cannot read {what}: the path holds a NUL character",
                         file=repr(file)) from None
    try:
        _check_user_file(os.fstat(fd), file, what, max_bytes)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_user_text(path: str | Path, what: str, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A UTF-8 text file a user named, read whole (see `open_user_file`); CRLF and CR line
    ends read as LF, as Python's text files read them."""
    file = str(path)
    with open_user_file(path, what, max_bytes) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=file) from None
    if len(data) > max_bytes:  # it grew after the check
        raise InputError(f"cannot read {what}: more than the {byte_size(max_bytes)} a file read "
                         "whole may hold", file=file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("not UTF-8 text", file=file,
                         line=data.count(b"\n", 0, exc.start) + 1) from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
