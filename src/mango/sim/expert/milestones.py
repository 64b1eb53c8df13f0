"""What the expert must achieve and how a run is labelled.

Each expert step of a scene has milestones (approach, pick and place for a pick-and-place;
close; turn on). Whether one was achieved, and when, is decided on the recorded states by the
oracle engine's predicates with their thresholds — one implementation of each relation, so
the ground truth and a fine-grained oracle never disagree about the same physics (a pot on
the stove's edge is `on` it for both or for neither). What stays independent of any oracle
is which effects the task needs and where the expert injected its fault: a run's ground
truth is the first needed effect that failed, and when.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from mango.oracle.compile import compile_expression
from mango.oracle.expr import parse_expression
from mango.oracle.library import FunctionLibrary
from mango.oracle.predicates import EvaluationError, StateView
from mango.oracle.world_state import WorldState
from mango.sim.scene import SceneSpec

MilestoneKind = Literal["approach", "pick", "place", "close", "open", "turnon"]


@dataclass
class Milestone:
    """A task effect the expert must achieve; `achieved`/`t` are measured on the states."""

    kind: MilestoneKind
    subject: str  # object, joint or device id
    target: str | None
    skill: int  # 0-based index into the scene's expert plan
    relation: str | None = None
    achieved: bool = False
    t: float | None = None
    lost_t: float | None = None  # when a fault undid it (knock_out)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind, "subject": self.subject, "target": self.target,
            "skill": self.skill + 1, "achieved": self.achieved, "t": self.t,
            "lost_t": self.lost_t,
        }


def task_milestones(scene: SceneSpec) -> list[Milestone]:
    """The milestones of a scene's expert plan, in plan order."""
    out: list[Milestone] = []
    for k, s in enumerate(scene.expert):
        if s.skill == "pick_place":
            assert s.obj is not None
            out.append(Milestone("approach", s.obj, None, k))
            out.append(Milestone("pick", s.obj, None, k))
            out.append(Milestone("place", s.obj, s.target, k, relation=s.relation))
        elif s.skill in ("close", "open"):
            assert s.joint is not None
            joint = scene.joint_owner(s.joint).joint
            assert joint is not None
            out.append(Milestone(s.skill, joint.id, None, k))
        elif s.skill == "push":
            assert s.obj is not None
            out.append(Milestone("approach", s.obj, None, k))
            out.append(Milestone("place", s.obj, s.target, k, relation=s.relation))
        else:
            assert s.device is not None
            out.append(Milestone("turnon", s.device, None, k))
    return out


# Each kind's effect, as a predicate expression over the milestone's subject, target, relation.
_CONDITIONS: dict[str, str] = {
    "approach": "near(robot_hand, {s})",
    "pick": "grasped({s}) and up({s})",
    "place": "{r}({s}, {t}) and not grasped({s})",
    "close": "close({s})",
    "open": "open({s})",
    "turnon": "turnon({s})",
}


def milestone_condition(m: Milestone) -> str:
    """What the milestone's effect is, as a predicate expression over the scene's ids: the
    labels are decided by the same predicates (and thresholds) the oracle judges with."""
    return _CONDITIONS[m.kind].format(s=m.subject, t=m.target, r=m.relation or "on")


class TaskProgress:
    """A run's milestones: achieved by the plan's own checks, or settled from the trace."""

    def __init__(self, scene: SceneSpec, library: FunctionLibrary | None = None) -> None:
        self.scene = scene
        self.milestones = task_milestones(scene)
        self.library = library or FunctionLibrary.default()
        self._conditions = {id(m): compile_expression(parse_expression(milestone_condition(m)),
                                                      self.library) for m in self.milestones}
        self._extents: dict[tuple, tuple[float, float, float]] = {}

    def find(self, kind: str, skill: int) -> Milestone:
        for m in self.milestones:
            if m.kind == kind and m.skill == skill:
                return m
        raise KeyError((kind, skill))

    @staticmethod
    def achieve(m: Milestone, t: float) -> None:
        if not m.achieved:
            m.achieved, m.t = True, t

    def approached(self, obj: str, t: float) -> None:
        """The hand closed on `obj`: every approach of it counts as achieved."""
        for m in self.milestones:
            if m.kind == "approach" and m.subject == obj and not m.achieved:
                self.achieve(m, t)

    def review(self, states: Sequence[WorldState]) -> None:
        """Settle unachieved milestones from the recorded physics.

        The plan checks its effects only at sync points; a run frozen or cut short between
        two checks (or a hand that brushed an object on its way elsewhere) may still have
        achieved an effect, so each milestone not yet achieved is looked up in the trace,
        after the previous milestone of its step.
        """
        if not states:
            return
        prev_t: dict[int, float] = {}
        for m in self.milestones:
            start = prev_t.get(m.skill, states[0].t)
            if not m.achieved:
                for st in states:
                    if st.t >= start and self.holds(m, st):
                        m.achieved, m.t = True, st.t
                        break
            if m.achieved and m.t is not None:
                prev_t[m.skill] = m.t
            else:
                prev_t[m.skill] = math.inf

    def holds(self, m: Milestone, st: WorldState) -> bool:
        """Whether the milestone's effect holds in a recorded state (oracle predicates); a
        state the predicates cannot evaluate (an entity missing) shows no effect."""
        try:
            return self._conditions[id(m)](StateView(st, self.library.thresholds,
                                                     self._extents))
        except EvaluationError:
            return False

    def ground_truth(
        self, fault_t: float | None, monitored: Callable[[Milestone], bool] | None = None
    ) -> dict[str, object]:
        """The first milestone the run failed (plan order) and when; None when all held.

        `monitored` filters the milestones an oracle actually watches (e.g. no `approach`);
        an unachieved milestone failed when the fault struck (`fault_t`).
        """
        for m in self.milestones:
            if m.lost_t is not None:
                return {"milestone": m.to_json(), "t": m.lost_t, "event": "regression"}
        for m in self.milestones:
            if not m.achieved and (monitored is None or monitored(m)):
                return {"milestone": m.to_json(), "t": fault_t, "event": "incomplete"}
        return {"milestone": None, "t": None, "event": None}
