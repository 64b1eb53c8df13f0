"""What the expert must achieve and how a run is labelled.

Each expert step of a scene has milestones (approach, pick and place for a pick-and-place;
close; turn on). Their `achieved`/`t` are measured from the physics, independent of the
oracle engine, so that a run's ground truth (the first milestone that failed, and when) can
judge the oracle.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from mango.geometry import IDENTITY, box_gap, footprint_box, quat_to_mat, to_local
from mango.oracle.world_state import WorldState
from mango.sim.scene import SceneSpec

MilestoneKind = Literal["approach", "pick", "place", "close", "turnon"]


@dataclass
class Milestone:
    """A task effect the expert must achieve; `achieved`/`t` are measured from the physics."""

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
        elif s.skill == "close":
            assert s.joint is not None
            joint = scene.joint_owner(s.joint).joint
            assert joint is not None
            out.append(Milestone("close", joint.id, None, k))
        else:
            assert s.device is not None
            out.append(Milestone("turnon", s.device, None, k))
    return out


def placed(scene: SceneSpec, ws: WorldState, obj: str, target: str,
           relation: str | None) -> bool:
    """Did obj end up in/on the target? (independent of the oracle engine)."""
    o, t = ws.objects[obj], ws.objects[target]
    ent = scene.entity(obj)
    p = np.asarray(o.position)
    tc = np.asarray(t.position)
    ts = np.asarray(t.size or (0.0, 0.0, 0.0))
    local = to_local(tc, quat_to_mat(t.orientation or IDENTITY), p)
    if t.kind == "region" and relation == "in":
        return bool(np.all(np.abs(local[:2]) <= ts[:2] / 2)
                    and -ts[2] / 2 - 0.01 <= local[2] <= ts[2] / 2)
    bottom = p[2] - ent.size[2] / 2
    over = bool(np.all(np.abs(local[:2]) <= ts[:2] / 2 + 0.01))
    if t.kind == "region":
        return over and tc[2] - ts[2] / 2 - 0.02 <= bottom <= tc[2] + ts[2] / 2 + 0.02
    return over and abs(bottom - (tc[2] + ts[2] / 2)) <= 0.02


class TaskProgress:
    """A run's milestones: achieved by the plan's own checks, or settled from the trace."""

    def __init__(self, scene: SceneSpec) -> None:
        self.scene = scene
        self.milestones = task_milestones(scene)
        self._first: WorldState | None = None  # the episode's first state (lift reference)

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
        if self._first is None:
            self._first = states[0]
        first = self._first
        prev_t: dict[int, float] = {}
        for m in self.milestones:
            start = prev_t.get(m.skill, first.t)
            if not m.achieved:
                for st in states:
                    if st.t >= start and self._holds(m, st, first):
                        m.achieved, m.t = True, st.t
                        break
            if m.achieved and m.t is not None:
                prev_t[m.skill] = m.t
            else:
                prev_t[m.skill] = math.inf

    def _holds(self, m: Milestone, st: WorldState, first: WorldState) -> bool:
        if m.kind == "approach":
            hand, obj = st.objects.get("robot_hand"), st.objects[m.subject]
            if hand is None:
                return False
            gap = box_gap(footprint_box(hand.position, hand.size, hand.orientation),
                          footprint_box(obj.position, obj.size, obj.orientation))
            return gap <= 0.05
        if m.kind == "pick":
            lifted = st.objects[m.subject].position[2] - first.objects[m.subject].position[2]
            return bool(st.fact(f"grasped({m.subject})")) and lifted >= 0.03
        if m.kind == "place":
            skill = self.scene.expert[m.skill]
            return not st.fact(f"grasped({m.subject})") and placed(
                self.scene, st, m.subject, skill.target or "", skill.relation)
        if m.kind == "close":
            j = st.joints.get(m.subject)
            return j is not None and j.openness <= 0.05
        dev = st.devices.get(m.subject)
        return dev is not None and dev.on

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
