"""The LIBERO expert's plan: a BDDL goal's atoms as milestones, in the order the skills run."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

# a skill yields 7-D actions, one per control step, and returns whether its motion ran
Skill = Generator[list[float], None, bool]

# the order the atoms' skills run in: open a container before putting into it, close it after
_RANK = {"open": 0, "turnon": 1, "turnoff": 1, "on": 1, "in": 1, "close": 2}


@dataclass
class Milestone:
    """One step of the expert's plan and what was measured of it."""

    kind: str  # pick, place, open, close, turnon, turnoff
    subject: str
    target: str | None = None
    relation: str | None = None
    achieved: bool = False
    t: float | None = None
    attempts: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "subject": self.subject, "target": self.target,
                "relation": self.relation, "achieved": self.achieved, "t": self.t,
                "attempts": self.attempts}


def plan_goal(goal: tuple[tuple[str, ...], ...]) -> list[Milestone]:
    """The milestones of a BDDL goal (an AND of atoms), in the order the expert works them."""
    out: list[Milestone] = []
    for atom in sorted(goal, key=lambda a: _RANK.get(a[0].lower(), 1)):
        pred = atom[0].lower()
        if pred in ("on", "in"):
            out += [Milestone("pick", atom[1]),
                    Milestone("place", atom[1], atom[2], pred)]
        elif pred in ("open", "close", "turnon", "turnoff"):
            out.append(Milestone(pred, atom[1]))
        else:
            raise ValueError(f"the LIBERO expert has no skill for goal atom {atom}")
    return out


