"""Scene names `libero/<suite>/<task>` (commands spec §7), parsed in one place."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mango.errors import InputError

SUITES: tuple[str, ...] = (
    "libero_10",
    "libero_goal",
    "libero_spatial",
    "libero_object",
    "libero_90",
)
PREFIX = "libero/"
_STEM = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class LiberoScene:
    """One LIBERO task: its suite and its index in LIBERO's benchmark order or BDDL stem."""

    suite: str
    task: int | str

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.suite}/{self.task}"


def is_libero_scene(name: str) -> bool:
    return name.startswith(PREFIX)


def parse_scene(name: str, field: str = "scene") -> LiberoScene:
    """`libero/libero_goal/3` or `libero/libero_goal/open_the_middle_drawer_of_the_cabinet`."""
    parts = name.split("/")
    if len(parts) != 3 or parts[0] != "libero":
        raise InputError(
            f"'{name}' is not a LIBERO scene name: expected libero/SUITE/TASK", field=field
        )
    suite, task = parts[1], parts[2]
    if suite not in SUITES:
        raise InputError(
            f"unknown LIBERO suite '{suite}' in '{name}' (one of {', '.join(SUITES)})",
            field=field,
        )
    if task.isdigit():
        return LiberoScene(suite, int(task))
    if not _STEM.match(task):
        raise InputError(
            f"LIBERO task '{task}' in '{name}' is neither an index nor a BDDL file stem",
            field=field,
        )
    return LiberoScene(suite, task)


def parse_init_state(seed: int | str, field: str = "seed") -> int:
    """`--seed K`: LIBERO's K-th initial state of the task (a non-negative index)."""
    try:
        k = int(seed)
    except (TypeError, ValueError):
        raise InputError(f"LIBERO init-state index must be an integer, got {seed!r}",
                         field=field) from None
    if k < 0:
        raise InputError(f"LIBERO init-state index must be >= 0, got {k}", field=field)
    return k
