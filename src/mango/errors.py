"""User-facing input errors that say where the problem is.

Every reader of a user file (oracle, trace, scene, library, stack) raises `InputError`
so the CLI can print one clear line and exit 2 instead of a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.counts: dict[str, int] = {}
        self._said: dict[str, tuple[float, int]] = {}  # key -> (when, count) last said

    def note(self, text: str, now: float, key: str | None = None) -> str | None:
        """Count a problem (`key` groups texts that differ only in details such as a time);
        returns the line to log now, or None."""
        key = key or text
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


class UnreachableError(ValueError):
    """A Cartesian hand pose the arm cannot reach (the message says by how much)."""
