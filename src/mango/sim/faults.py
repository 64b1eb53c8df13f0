"""Fault injection for expert runs: `KIND@WHEN` specs, where each one strikes, what it did.

`FaultInjector` answers the expert's questions at the points a fault can change its plan
(skip this step? pick which object? drop when? put it where? freeze now?) and keeps the
`FaultRecord` the run's ground-truth labels report. It needs no physics (no MuJoCo), so
parsing a fault stays cheap for clients.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from mango.errors import InputError
from mango.sim.scene import SceneSpec, SkillSpec

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


@dataclass
class FaultRecord:
    """What an injected fault did: when it took effect, at which expert step, a note."""

    fault: Fault
    t: float | None = None  # when the fault took effect
    skill: int | None = None
    note: str = ""


class FaultInjector:
    """One fault (or none) for one scene's expert plan; refuses faults the task cannot have."""

    def __init__(self, scene: SceneSpec, fault: Fault | None) -> None:
        self.scene = scene
        self.fault = fault
        self.record: FaultRecord | None = None
        self._picks = [i for i, s in enumerate(scene.expert) if s.skill == "pick_place"]
        self._check()
        self.reset()

    def reset(self, *, new_episode: bool = True) -> None:
        """Arm the fault again for a new episode; between two instructions of one episode
        (an orchestrator's subgoals) a fault that already struck stays spent: one fault per
        episode, as the recovery measurements count them."""
        if new_episode or self.record is None:
            self.record = FaultRecord(self.fault) if self.fault is not None else None
            self.spent = False
            self._applied = False  # the plan was changed by it (its effect may be pending)
            self._first_transport: int | None = None
        else:
            self.spent = self.record.t is not None or self._applied

    def _check(self) -> None:
        f = self.fault
        if f is None or f.kind in ("stall", "drop"):
            if f is not None and f.kind == "drop" and not self._picks:
                raise InputError(f"fault {f}: this scene's task has no pick-and-place")
            return
        n = len(self.scene.expert)
        if f.skill >= n:
            raise InputError(f"fault {f}: the task has only {n} expert steps", field="fault")
        skill = self.scene.expert[f.skill]
        if f.kind in ("wrong_object", "wrong_place", "knock_out") and skill.skill != "pick_place":
            raise InputError(f"fault {f}: expert step {f.skill + 1} is not a pick-and-place",
                             field="fault")
        if f.kind in ("knock_out", "wrong_object") and skill.grasp == "side":
            # the side grasp reaches into a cavity from one direction only; a distractor or
            # a placed object elsewhere is generally not reachable that way
            raise InputError(f"fault {f}: {f.kind} is not available for a side-grasp step",
                             field="fault")
        if f.kind == "knock_out" and f.skill >= n - 1:
            raise InputError(
                f"fault {f}: a placed object can only be knocked out before the last step",
                field="fault",
            )
        if f.kind == "wrong_object" and self._distractor(skill) is None:
            raise InputError(f"fault {f}: the scene has no other movable object", field="fault")

    def _distractor(self, skill: SkillSpec) -> str | None:
        """The small movable object nearest to the step's object that no step uses."""
        used = {s.obj for s in self.scene.expert} | {s.target for s in self.scene.expert}
        cands = [e for e in self.scene.entities
                 if e.movable and e.id not in used and e.shape not in ("basket", "plate", "caddy")
                 and max(min(e.size[0], e.size[1]), 0) < 0.075]
        if not cands:
            return None
        src = self.scene.entity(skill.obj or "")
        cands.sort(key=lambda e: math.dist(e.position, src.position))
        return cands[0].id

    def _at(self, kind: str, k: int) -> bool:
        f = self.fault
        hit = not self.spent and f is not None and f.kind == kind and f.skill == k
        self._applied = self._applied or hit
        return hit

    def note(self, skill: int | None, note: str, t: float) -> None:
        """Record the fault's effect (only its first)."""
        fr = self.record
        if fr is not None and fr.t is None:
            fr.t, fr.skill, fr.note = t, skill, note

    def skips(self, k: int, t: float) -> bool:
        """Is expert step k left out (`skip`)?"""
        if not self._at("skip", k):
            return False
        self.note(k, f"skipped expert step {k + 1}", t)
        return True

    def object_for(self, k: int, skill: SkillSpec, t: float) -> str:
        """The object step k picks: a distractor instead of its own under `wrong_object`."""
        obj = skill.obj or ""
        if not self._at("wrong_object", k):
            return obj
        wrong = self._distractor(skill) or obj
        self.note(k, f"picked {wrong} instead of {obj}", t)
        return wrong

    def misplaces(self, k: int) -> bool:
        """Is step k's object released beside its target (`wrong_place`)?"""
        return self._at("wrong_place", k)

    def drop_fraction(self, k: int) -> float | None:
        """The fraction of the transport after which step k drops its object (`drop` strikes
        the first pick-and-place the episode runs: the plan's first, or the first subgoal's
        an orchestrator gave), or None."""
        f = self.fault
        if self.spent or f is None or f.kind != "drop":
            return None
        if self._first_transport is None:
            self._first_transport = k
        if self._first_transport != k:
            return None
        self._applied = True
        return f.when

    def knocks_out(self, k: int) -> bool:
        """Is step k's placed object taken out again (`knock_out`)?"""
        return self._at("knock_out", k)

    def no_effect(self, note: str) -> None:
        """The fault was tried but changed nothing (say why)."""
        if self.record is not None:
            self.record.note = note

    def stalls(self, t: float) -> bool:
        """Is the robot frozen at time t (`stall`)? The first such time is recorded."""
        fr = self.record
        if self.spent or fr is None or fr.fault.kind != "stall" or t < fr.fault.when:
            return False
        if fr.t is None:
            fr.t, fr.note = t, "robot froze"
        return True
