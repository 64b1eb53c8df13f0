"""The one range of a seed, wherever a user gives one (`--seed`, a campaign's `seeds`, a scene
reset): 0..2**32-1, numpy's 32-bit seed range, which every result file and SQLite's INTEGER
hold too. Checked before any work, so a seed of -1 or 1e20 is one error naming the field, not
a numpy traceback after the scene was built (or an overflow after the episode ran).

No MuJoCo here: the command line's option types read `SEED_MAX` at import time."""

from __future__ import annotations

import operator

from mango.errors import InputError

SEED_MAX = 2**32 - 1
MAX_SEED_COUNT = 10_000  # seeds one call runs in a row (a campaign's `seeds.count`, `sim eval`)


def check_seed(seed: object, field: str = "seed", file: str | None = None) -> int:
    """`seed` as an int when it is an integer (numpy's too) in 0..SEED_MAX, else an
    `InputError`."""
    try:
        value = None if isinstance(seed, bool) else operator.index(seed)  # type: ignore[arg-type]
    except TypeError:
        value = None
    if value is None or not 0 <= value <= SEED_MAX:
        raise InputError(f"a seed is an integer in 0..{SEED_MAX}, not {seed!r}", file=file,
                         field=field)
    return value


def check_seed_range(start: int, count: int, field: str = "seeds",
                     file: str | None = None) -> range:
    """Seeds `start .. start + count - 1`: 1..MAX_SEED_COUNT of them, each in 0..SEED_MAX."""
    check_seed(start, field, file)
    if not 1 <= count <= MAX_SEED_COUNT:
        raise InputError(f"the number of seeds is 1..{MAX_SEED_COUNT}, not {count}", file=file,
                         field=field)
    if start + count - 1 > SEED_MAX:
        raise InputError(f"{count} seeds from {start} run past the last seed, {SEED_MAX}",
                         file=file, field=field)
    return range(start, start + count)
