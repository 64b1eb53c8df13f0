"""World-failure events from ground-truth world states (after VoLo, App. K.1).

A `WorldFailureDetector` reads the world-state stream of a run and says, as it happens, when
the world went wrong — independent of what any monitor or decider believed:

- `wrong_object_picked`: an object no remaining goal moves became held;
- `wrong_target_place`: a task object was set down (released low, resting) outside its goal;
- `object_regression`: a task object lost progress — dropped on the way (released from
  height) or taken out of a goal it had reached (a goal that held no longer holds);
- `stuck`: neither hand progress nor a completion for `stuck_s` seconds; fires again after
  every further `stuck_s` of the same stillness;
- `recovery`: the failure it names (by index) was undone — paired one to one.

Goals are the scene's task effects, judged by the oracle's predicates through the same
expressions the expert's milestones use (one implementation per relation). A failure opens a
spell; its recovery closes it; spells still open at the end are the unrecovered ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mango.oracle.compile import compile_expression
from mango.oracle.expr import parse_expression
from mango.oracle.library import FunctionLibrary
from mango.oracle.predicates import EvaluationError, StateView
from mango.oracle.world_state import WorldState
from mango.sim.expert.milestones import milestone_condition, task_milestones
from mango.sim.scene import SceneSpec

FailureKind = Literal["wrong_object_picked", "wrong_target_place", "object_regression", "stuck"]
EventKind = Literal["wrong_object_picked", "wrong_target_place", "object_regression", "stuck",
                    "recovery", "completion"]
FAILURE_KINDS: tuple[str, ...] = ("wrong_object_picked", "wrong_target_place",
                                  "object_regression", "stuck")


@dataclass(frozen=True)
class TaskGoal:
    """One effect the task needs: its subject and the condition (a §1 expression)."""

    subject: str
    condition: str
    kind: str  # "place" | "close" | "turnon"
    target: str | None = None
    step: int = -1  # the expert step that achieves it (0-based)


def task_goals(scene: SceneSpec) -> list[TaskGoal]:
    """The scene's task effects, from its expert plan (the same conditions as the milestones)."""
    return [TaskGoal(m.subject, milestone_condition(m), m.kind, m.target, m.skill)
            for m in task_milestones(scene) if m.kind in ("place", "close", "turnon")]


@dataclass(frozen=True)
class WorldEvent:
    """A world-failure event, a recovery (of failure `pairs`), or a goal's completion."""

    t: float
    kind: EventKind
    subject: str | None = None
    detail: str = ""
    index: int = -1  # this failure's number (failures only)
    pairs: int | None = None  # the failure a recovery undoes

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"t": round(self.t, 4), "kind": self.kind, "subject": self.subject,
                               "detail": self.detail}
        if self.kind in FAILURE_KINDS:
            out["index"] = self.index
        if self.pairs is not None:
            out["pairs"] = self.pairs
        return out


@dataclass
class FailureSpell:
    """From a failure to its recovery (None while unrecovered)."""

    failure: WorldEvent
    recovery: WorldEvent | None = None

    @property
    def recovered(self) -> bool:
        return self.recovery is not None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.failure.kind, "subject": self.failure.subject,
                "start_t": round(self.failure.t, 4),
                "end_t": None if self.recovery is None else round(self.recovery.t, 4),
                "recovered": self.recovered}


@dataclass
class _Release:
    subject: str
    t: float
    height: float  # the object's bottom above the table at the release
    due: float


@dataclass
class WorldFailureDetector:
    """World-failure events over one run's world states (ground truth, no monitor's view)."""

    goals: Sequence[TaskGoal]
    movable: Sequence[str]
    table_height: float
    stuck_s: float = 10.0
    hand_progress_m: float = 0.02  # the hand moved this far: progress
    drop_height_m: float = 0.08  # released with the bottom this high above the table: a drop
    settle_s: float = 0.5  # a released object is judged once it had this long to come to rest
    library: FunctionLibrary = field(default_factory=FunctionLibrary.default)

    def __post_init__(self) -> None:
        self._conds = [compile_expression(parse_expression(g.condition), self.library)
                       for g in self.goals]
        self._extents: dict[tuple, tuple[float, float, float]] = {}
        self._task_objects = {g.subject for g in self.goals if g.kind == "place"}
        self._goal_of = {g.subject: i for i, g in enumerate(self.goals) if g.kind == "place"}
        self._destinations = {g.target for g in self.goals if g.target}
        self._dest_conds = {
            (obj, d): compile_expression(parse_expression(f"in({obj}, {d}) or on({obj}, {d})"),
                                         self.library)
            for obj in self.movable for d in self._destinations}
        self._grasp_conds = {o: compile_expression(parse_expression(f"grasped({o})"),
                                                   self.library) for o in self.movable}
        self.events: list[WorldEvent] = []
        self.spells: list[FailureSpell] = []
        self._held: set[str] = set()
        self._holds: list[bool] = [False] * len(self.goals)
        self.goal_log: list[tuple[float, int, bool]] = []  # (t, goal index, holds from t on)
        self._releases: list[_Release] = []
        self._anchor: tuple[float, tuple[float, float, float]] | None = None  # since, hand
        self._last_progress_t: float | None = None
        self._stuck_fired_t: float | None = None

    # ------------------------------------------------------------------ helpers
    def _view(self, state: WorldState) -> StateView:
        return StateView(state, self.library.thresholds, self._extents)

    def _eval(self, cond: Any, view: StateView) -> bool:
        try:
            return bool(cond(view))
        except EvaluationError:
            return False

    def _fail(self, t: float, kind: FailureKind, subject: str | None,
              detail: str) -> WorldEvent:
        ev = WorldEvent(t, kind, subject, detail, index=len(self.spells))
        self.spells.append(FailureSpell(ev))
        self.events.append(ev)
        return ev

    def _recover(self, spell: FailureSpell, t: float, detail: str) -> WorldEvent:
        ev = WorldEvent(t, "recovery", spell.failure.subject, detail, pairs=spell.failure.index)
        spell.recovery = ev
        self.events.append(ev)
        return ev

    def open_spells(self, kind: str | None = None) -> list[FailureSpell]:
        return [s for s in self.spells if not s.recovered
                and (kind is None or s.failure.kind == kind)]

    @property
    def unrecovered(self) -> list[FailureSpell]:
        return self.open_spells()

    def _in_destination(self, obj: str, view: StateView) -> bool:
        return any(self._eval(self._dest_conds[(obj, d)], view) for d in self._destinations)

    # ------------------------------------------------------------------ the stream
    def update(self, state: WorldState) -> list[WorldEvent]:
        """The events this state brings (also appended to `events`)."""
        start = len(self.events)
        t = state.t
        view = self._view(state)
        if self._last_progress_t is None:
            self._last_progress_t = t
        # goals: completions and regressions
        for i, cond in enumerate(self._conds):
            now = self._eval(cond, view)
            g = self.goals[i]
            if now != self._holds[i]:
                self.goal_log.append((t, i, now))
            if now and not self._holds[i]:
                self._last_progress_t = t
                self.events.append(WorldEvent(t, "completion", g.subject,
                                              f"{g.condition} holds"))
                for s in self.open_spells():
                    if s.failure.kind == "stuck" or (
                            s.failure.subject == g.subject
                            and s.failure.kind != "wrong_object_picked"):
                        self._recover(s, t, f"{g.condition} holds")
            elif not now and self._holds[i]:
                self._fail(t, "object_regression", g.subject,
                           f"{g.condition} held and no longer does")
            self._holds[i] = now
        # what the hand holds: wrong objects, releases
        held = self._held_now(view)
        remaining = {g.subject for i, g in enumerate(self.goals)
                     if g.kind == "place" and not self._holds[i]}
        for obj in sorted(held - self._held):
            if obj not in remaining:
                self._fail(t, "wrong_object_picked", obj,
                           f"holding {obj}, which no remaining goal moves")
        for obj in sorted(self._held - held):
            if obj in self._task_objects:
                o = state.objects.get(obj)
                h = (o.position[2] - o.size[2] / 2 - self.table_height) if o else 0.0
                self._releases.append(_Release(obj, t, h, t + self.settle_s))
        for s in self.open_spells("wrong_object_picked"):
            obj = s.failure.subject or ""
            if obj not in held and not self._in_destination(obj, view):
                self._recover(s, t, f"{obj} is out of the hand and in no destination")
        self._held = held
        # releases, judged once settled
        for r in [r for r in self._releases if t >= r.due]:
            self._releases.remove(r)
            i = self._goal_of[r.subject]
            if self._holds[i] or r.subject in held:
                continue
            if r.height > self.drop_height_m:
                self._fail(r.t, "object_regression", r.subject,
                           f"released {r.subject} {r.height * 100:.0f} cm above the table, "
                           "short of its goal")
            else:
                self._fail(r.t, "wrong_target_place", r.subject,
                           f"set {r.subject} down where {self.goals[i].condition} "
                           "does not hold")
        if not all(self._holds):  # a finished task standing still is not stuck
            self._stuck(state, t)
        return self.events[start:]

    def holds(self, step: int) -> bool:
        """Whether the goal of expert step `step` holds in the latest state."""
        return any(h for g, h in zip(self.goals, self._holds, strict=True) if g.step == step)

    def _held_now(self, view: StateView) -> set[str]:
        return {o for o, cond in self._grasp_conds.items() if self._eval(cond, view)}

    def _stuck(self, state: WorldState, t: float) -> None:
        hand = state.objects.get("robot_hand")
        if hand is None:
            return
        pos = tuple(hand.position)
        if self._anchor is None or math.dist(pos, self._anchor[1]) > self.hand_progress_m:
            if self._anchor is not None:
                for s in self.open_spells("stuck"):
                    self._recover(s, t, "the hand moves again")
            self._anchor = (t, pos)  # type: ignore[assignment]
            self._stuck_fired_t = None
            return
        assert self._last_progress_t is not None
        still_since = max(self._anchor[0], self._last_progress_t)
        last = self._stuck_fired_t if self._stuck_fired_t is not None else still_since
        if t - last >= self.stuck_s:
            self._stuck_fired_t = t
            self._fail(t, "stuck", None,
                       f"no hand progress and no completion for {t - still_since:.1f} s")

    def summary(self) -> dict[str, Any]:
        """Failures, recoveries and spells (the episode record's ground-truth part)."""
        return {"events": [e.to_json() for e in self.events if e.kind != "completion"],
                "spells": [s.to_json() for s in self.spells],
                "goals": [{"subject": g.subject, "target": g.target, "step": g.step,
                           "kind": g.kind} for g in self.goals],
                "goal_log": [[round(t, 4), i, h] for t, i, h in self.goal_log],
                "failures": len(self.spells),
                "recovered": sum(s.recovered for s in self.spells),
                "unrecovered": len(self.unrecovered)}


def detector_for(scene: SceneSpec, **kw: Any) -> WorldFailureDetector:
    """The detector of a sim scene's task."""
    return WorldFailureDetector(task_goals(scene), [e.id for e in scene.entities if e.movable],
                                scene.table.height, **kw)
