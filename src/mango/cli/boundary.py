"""The command line's error boundary: what a user or the system can cause is one `error:` line
on stderr, never a traceback; a bug stays a traceback. Exit codes as `shared/spec/commands.md`
has them: 2 on bad input, 1 when the run itself could not be carried out.

- a bad option value (out of its range, not a number): `error: field '--seed': ...`, exit 2;
- an `InputError` any command lets through (a campaign's store, a file read late), exit 2;
- an `OSError` about a path (a full disk, a folder made read-only or removed meanwhile): the
  path and what the system said, exit 1 — inputs and outputs are checked before the work
  starts (as `InputError`s), so what the system refuses later stopped a run under way. One with
  no path and no disk trouble (a refused connection, a broken pipe) is not ours to word and
  goes on as it is.

Commands still catch what they can say better; this is where the rest ends."""

from __future__ import annotations

import errno
import sys
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

# what the system says when the disk (not the program) is the trouble
_DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}


class ErrorBoundary(TyperGroup):
    """The root command group: every sub-command runs inside its `invoke`."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:
            from typer._click.exceptions import MissingParameter

            if isinstance(exc, MissingParameter):  # a usage error: click shows the usage
                raise
            _fail(_bad_parameter(exc))
        except OSError as exc:
            said = os_error_line(exc)
            if said is None:
                raise
            _fail(said, RUN_FAILED)
        except Exception as exc:
            from mango.errors import InputError

            if not isinstance(exc, InputError):
                raise
            _fail(str(exc))


def os_error_line(exc: OSError) -> str | None:
    """`PATH: what the system said` (or `A -> B: ...` for a rename), or None when the error
    names no path and is no disk trouble."""
    what = exc.strerror or str(exc)
    if exc.filename is not None:
        where = str(exc.filename)
        if exc.filename2 is not None:
            where += f" -> {exc.filename2}"
        return f"{where}: {what}"
    if exc.errno in _DISK_ERRNOS:
        return f"cannot write: {what}"
    return None


def _bad_parameter(exc: Any) -> str:
    from mango.errors import InputError

    param = exc.param
    name = exc.param_hint if isinstance(exc.param_hint, str) else None
    if name is None and param is not None:
        opts = [o for o in (getattr(param, "opts", None) or []) if o.startswith("-")]
        # an argument is named as the usage line shows it (ORACLE, OBJECT; BAG for BAG...)
        name = max(opts, key=len) if opts else str(
            getattr(param, "display_name_raw", None) or param.name).upper().removesuffix("...")
    message = exc.message
    lo, hi = getattr(param, "min", None), getattr(param, "max", None)
    if lo is not None or hi is not None:  # the whole range, not only the side crossed
        message += (f" (allowed: {lo}..{hi})" if lo is not None and hi is not None
                    else f" (allowed: at least {lo})" if lo is not None
                    else f" (allowed: at most {hi})")
    return str(InputError(message, field=name))


BAD_INPUT, RUN_FAILED = 2, 1  # commands.md's exit codes


def _fail(line: str, code: int = BAD_INPUT) -> NoReturn:
    sys.stderr.write("error: " + line.replace("\r", " ").replace("\n", " ") + "\n")
    raise typer.Exit(code)
