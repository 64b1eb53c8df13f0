"""Fault injection for expert runs: `KIND@WHEN` specs and their ground-truth labels."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from mango.errors import InputError

FaultKind = Literal["drop", "wrong_object", "stall", "skip", "wrong_place", "knock_out"]
FAULT_KINDS: tuple[str, ...] = ("drop", "wrong_object", "stall", "skip", "wrong_place", "knock_out")

# What WHEN means per kind, and its default.
WHEN_HELP: dict[str, str] = {
    "drop": "fraction (0..1) of the first transport at which the gripper opens (default 0.5)",
    "wrong_object": "1-based expert skill whose object is swapped for a distractor (default 1)",
    "stall": "seconds after which the robot freezes (default 5)",
    "skip": "1-based expert skill that is omitted (default 1)",
    "wrong_place": "1-based expert skill whose object is released beside the target (default 1)",
    "knock_out": "1-based expert skill whose placed object is taken out again later (default 1)",
}
_DEFAULT: dict[str, float] = {
    "drop": 0.5, "wrong_object": 1, "stall": 5.0, "skip": 1, "wrong_place": 1, "knock_out": 1,
}
_SPEC = re.compile(r"^\s*([a-z_]+)\s*(?:@\s*([0-9]*\.?[0-9]+)\s*)?$")


@dataclass(frozen=True)
class Fault:
    """One injected fault; `when` is a fraction, a time or a skill index (see WHEN_HELP)."""

    kind: FaultKind
    when: float

    @property
    def skill(self) -> int:
        """0-based skill index for the kinds that target a skill."""
        return int(self.when) - 1

    def __str__(self) -> str:
        w = int(self.when) if float(self.when).is_integer() else self.when
        return f"{self.kind}@{w}"


def parse_fault(text: str) -> Fault:
    """Parse `KIND@WHEN` (WHEN optional), raising `InputError` naming the problem."""
    m = _SPEC.match(text)
    if not m or m.group(1) not in FAULT_KINDS:
        raise InputError(
            f"bad fault '{text}': expected KIND@WHEN with KIND one of {', '.join(FAULT_KINDS)}",
            field="fault",
        )
    kind = m.group(1)
    when = float(m.group(2)) if m.group(2) is not None else _DEFAULT[kind]
    if kind == "drop" and not 0.0 < when < 1.0:
        raise InputError(f"bad fault '{text}': drop@F needs 0 < F < 1", field="fault")
    if kind in ("wrong_object", "skip", "wrong_place", "knock_out") and (
        when < 1 or not float(when).is_integer()
    ):
        raise InputError(f"bad fault '{text}': {kind}@K needs a skill number K >= 1", field="fault")
    return Fault(kind=kind, when=when)  # type: ignore[arg-type]
