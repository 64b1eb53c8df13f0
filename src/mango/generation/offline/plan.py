"""Module III planning: grounded goals become a series-parallel fine-grained oracle.

Each goal becomes a step of monitored actions (its skills, bound to an oracle of the
libraries the run has, whatever their ids and parameter names); goals are grouped in
stages by their dependencies ("then", placing into what was just opened, closing what
something was put in), and independent goals of a stage may run in any order.
"""

from __future__ import annotations

from typing import Any

from mango.generation.models import AtomicOracle, AtomicTask, OracleCandidate
from mango.generation.offline.expressions import atoms_of, substitute
from mango.generation.offline.grounding import Goal
from mango.generation.offline.skills import (
    SKILLS,
    offered,
    skill_atom,
    skill_of_task,
    skills_for_goal,
)

_SAME_CHECK = {"push_on": "place_on", "push_near": "place_near"}


class LibraryBinder:
    """Maps a skill to an oracle of the (possibly foreign) library and substitutes it."""

    def __init__(self, oracles: list[dict[str, Any]], tasks: list[dict[str, Any]],
                 functions: dict[str, Any] | None = None) -> None:
        self.oracles = [AtomicOracle.model_validate(o) for o in oracles]
        self.tasks = [AtomicTask.model_validate(t) for t in tasks]
        self.functions = functions

    def offers(self, skill: str) -> bool:
        """Whether the given libraries have this skill (True when there are no libraries)."""
        if not self.oracles and not self.tasks:
            return offered(skill, self.functions)
        return self._find(skill) is not None or any(
            skill_of_task(t) == skill for t in self.tasks)

    def _find(self, skill: str) -> AtomicOracle | None:
        best, best_score = None, -1
        for o in self.oracles:
            atomic = skill_of_task(o) == skill
            if not atomic and skill_of_task(o, composite=True) != skill:
                continue
            score = (4 * atomic + 2 * (o.id == skill)
                     + len(set(o.id.split("_")) & set(skill.split("_"))))
            if score > best_score:
                best, best_score = o, score
        if best is None and skill in _SAME_CHECK:
            # a push ends where a placement ends (on the target, not held): the library's
            # placing oracle checks it, whatever moved the object there
            alt = _SAME_CHECK[skill]
            best = next((o for o in self.oracles if skill_of_task(o) == alt), None)
        return best

    def bind(self, skill: str, values: list[str]) -> tuple[str, dict[str, str], str]:
        """(action_id, parameters, handle_as) of a skill applied to ids."""
        s = SKILLS[skill]
        oracle = self._find(skill)
        if oracle is not None:
            atom = skill_atom(skill, atoms_of(oracle.correctness_oracle), oracle.parameters)
            mapping = dict(zip(atom or oracle.parameters, values, strict=False))
            for p in oracle.parameters:
                mapping.setdefault(p, values[0])
            params = {p: mapping[p] for p in oracle.parameters}
            return oracle.id, params, substitute(oracle.correctness_oracle, mapping)
        task = next((t for t in self.tasks if skill_of_task(t) == skill), None)
        if task is not None and task.post_conditions:
            mapping = dict(zip(task.parameters, values, strict=False))
            return task.id, mapping, substitute(" and ".join(task.post_conditions), mapping)
        mapping = dict(zip(s.parameters, values, strict=False))
        return skill, mapping, substitute(s.effect, mapping)


_SPATIAL_SKILL = {("place", "right_of"): "place_right_of", ("place", "left_of"): "place_left_of",
                  ("place", "near"): "place_near", ("push", "right_of"): "push_near",
                  ("push", "left_of"): "push_near", ("push", "near"): "push_near"}


def _goal_step(goal: Goal, binder: LibraryBinder) -> dict[str, Any]:
    actions = []
    for skill in skills_for_goal(goal):
        if skill == "approach" and not binder.offers(skill):
            continue  # a library without an approach task does not monitor the approach
        target = goal.target
        if not binder.offers(skill) and goal.spatial and goal.landmark:
            # the scene names the spot as a region, but the library only knows the relation
            alt = _SPATIAL_SKILL.get((skill.split("_")[0], goal.spatial))
            if alt is not None and binder.offers(alt):
                skill, target = alt, goal.landmark
        values = [goal.obj] if len(SKILLS[skill].parameters) == 1 else [goal.obj, target]
        action_id, params, handle = binder.bind(skill, [v for v in values if v])
        actions.append({"action_id": action_id, "parameters": params,
                        "monitoring": [{"oracle_id": action_id, "handle_as": handle}]})
    return {"execution_mode": "sequential", "actions": actions}


def related(a: str | None, b: str | None) -> bool:
    """Whether two ids are the same thing or one is a part of the other (by id prefix)."""
    return bool(a and b and (a == b or a.startswith(b + "_") or b.startswith(a + "_")))


def _depends(later: Goal, earlier: Goal) -> bool:
    if later.after_previous:
        return True
    if later.kind in {"close", "turn_on", "turn_off"} and earlier.kind == "pick_place":
        return later.kind == "close" and related(earlier.target, later.obj)
    if later.kind == "pick_place" and earlier.kind == "open":
        return related(later.target, earlier.obj)
    if later.kind == "pick_place" and earlier.kind == "pick_place":
        return later.target == earlier.obj  # stacking on what was just placed
    return False


def build_plan(instruction: str, goals: list[Goal], binder: LibraryBinder) -> OracleCandidate:
    """A series-parallel plan: goals grouped in stages by their dependencies."""
    if not goals:
        return OracleCandidate(instruction=instruction, execution_mode="sequential", plan=[])
    stage = [0] * len(goals)
    for i, g in enumerate(goals):
        for j in range(i):
            if _depends(g, goals[j]) or (g.after_previous and j == i - 1):
                stage[i] = max(stage[i], stage[j] + 1)
    steps_by_stage: dict[int, list[dict[str, Any]]] = {}
    for g, s in zip(goals, stage, strict=True):
        steps_by_stage.setdefault(s, []).append(_goal_step(g, binder))
    stages = [steps_by_stage[k] for k in sorted(steps_by_stage)]

    def number(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"step": i, **n} for i, n in enumerate(nodes, start=1)]

    if len(stages) == 1:
        mode = "any_order" if len(stages[0]) > 1 else "sequential"
        plan = number(stages[0])
    else:
        mode = "sequential"
        nodes = []
        for st in stages:
            if len(st) == 1:
                nodes.append(st[0])
            else:
                nodes.append({"execution_mode": "any_order", "steps": number(st)})
        plan = number(nodes)
    return OracleCandidate.model_validate(
        {"instruction": instruction, "execution_mode": mode, "plan": plan})
