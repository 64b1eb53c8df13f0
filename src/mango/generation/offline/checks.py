"""Module III rule checks of a fine-grained oracle, whoever wrote it.

- logic: every placed object is picked up first, a fixture is closed only after what goes
  into it, every goal of the instruction is achieved, and independent steps are not forced
  into an order the instruction does not set;
- compliance: every action is monitored with its library oracle, parameters substituted;
- grounding: every id exists in the scene, containers are checked on their regions, and
  every object the instruction names is used.
"""

from __future__ import annotations

import re
from typing import Any

from mango.generation.models import AtomicOracle, OracleCandidate, SceneTask
from mango.generation.offline.expressions import atoms_of, canonical, substitute
from mango.generation.offline.grounding import ground_instruction
from mango.generation.offline.lexicon import LEXICON, tokens_of
from mango.generation.offline.matching import Grounder
from mango.generation.offline.plan import related
from mango.generation.offline.skills import EFFECT_PRED
from mango.oracle.world_state import ROBOT_PARTS

_PLACING = {"in", "on", "right_of", "left_of", "near"}


def _order(cand: OracleCandidate) -> dict[str, set[str]]:
    """For each action path, the paths that must complete before it."""
    before: dict[str, set[str]] = {}

    def walk(nodes: list[Any], mode: str, prefix: str, preds: set[str]) -> set[str]:
        mine: set[str] = set()
        current = set(preds)
        for i, node in enumerate(nodes, start=1):
            path = f"{prefix}{i}"
            if node.steps:
                added = walk(node.steps, node.execution_mode, path + ".", current)
            else:
                added = set()
                inner = set(current)
                for j in range(1, len(node.actions or []) + 1):
                    p = f"{path}.{j}"
                    before[p] = set(inner)
                    added.add(p)
                    if node.execution_mode == "sequential":
                        inner.add(p)
            mine |= added
            if mode == "sequential":
                current |= added
        return mine

    walk(cand.plan, cand.execution_mode, "", set())
    return before


def _step_entities(node: Any) -> list[str]:
    out: list[str] = []
    for child in node.steps or []:
        out.extend(_step_entities(child))
    for act in node.actions or []:
        out.extend(act.parameters.values())
    return out


def logic_issues(cand: OracleCandidate, scene: SceneTask) -> list[str]:
    issues: list[str] = []
    acts = cand.actions()
    before = _order(cand)
    if not acts:
        return ["the plan has no actions"]
    picks: dict[str, list[str]] = {}
    places: dict[str, list[tuple[str, str]]] = {}
    closes: list[tuple[str, str]] = []
    pushes: set[str] = set()
    seen: dict[str, str] = {}
    push_words = LEXICON.words_of("push")
    parsed = ground_instruction(cand.instruction, scene)
    pushed_objects = {g.obj for g in parsed.goals if g.kind == "push"}
    for path, act in acts:
        key = f"{act.action_id}{sorted(act.parameters.items())}"
        if key in seen:
            issues.append(f"step {path} repeats step {seen[key]} ({act.action_id})")
        seen.setdefault(key, path)
        atoms = [a for m in act.monitoring for a in atoms_of(m.handle_as)]
        preds = {a.predicate for a in atoms}
        if preds & {"up", "grasped"} and not preds & {"in", "on", "right_of", "left_of"}:
            for a in atoms:
                if a.args:
                    picks.setdefault(a.args[0], []).append(path)
        pushed = bool(set(act.action_id.lower().split("_")) & push_words) or bool(
            {a.args[0] for a in atoms if a.args} & pushed_objects)
        for a in atoms:
            if a.predicate in _PLACING and len(a.args) == 2 and a.args[0] not in ROBOT_PARTS:
                places.setdefault(a.args[0], []).append((path, a.args[1]))
                if pushed:
                    pushes.add(path)
            if a.predicate == "close" and a.args:
                closes.append((path, a.args[0]))
    for obj, plist in places.items():
        for path, _ in plist:
            if path in pushes:
                continue  # pushed, not carried
            pick_paths = picks.get(obj, [])
            if not pick_paths:
                issues.append(f"step {path} places '{obj}' but no step picks it up first")
            elif not any(pp in before.get(path, set()) for pp in pick_paths):
                issues.append(f"step {path} places '{obj}' before it is picked up "
                              f"(step {pick_paths[0]}): make them sequential")
    for path, fixture in closes:
        for obj, plist in places.items():
            for ppath, target in plist:
                if related(target, fixture) and ppath not in before.get(path, set()):
                    issues.append(f"step {path} closes '{fixture}' but placing '{obj}' into it "
                                  f"(step {ppath}) is not required to come first")
    for goal in parsed.goals:
        if goal.kind in {"pick_place", "push"}:
            ok = any(t in {goal.target, goal.landmark if goal.spatial else None}
                     for _, t in places.get(goal.obj, []))
            if not ok:
                issues.append(f"the instruction asks for '{goal.obj}' {goal.relation} "
                              f"'{goal.target}' but no step achieves it")
        elif goal.kind in {"open", "close", "turn_on", "turn_off"}:
            pred = EFFECT_PRED[goal.kind]
            if not any(a.predicate == pred and goal.obj in a.args
                       for _, act in acts for m in act.monitoring
                       for a in atoms_of(m.handle_as)):
                issues.append(f"the instruction asks to {goal.kind.replace('_', ' ')} "
                              f"'{goal.obj}' but no step checks {pred}({goal.obj})")
    ordered = bool(LEXICON.order_words & set(re.findall(r"\w+", cand.instruction.lower())))
    if cand.execution_mode == "sequential" and len(cand.plan) > 1 and not ordered:
        ents = [set(_step_entities(n)) for n in cand.plan]
        independent = all(
            not any(related(a, b) for a in ents[i] for b in ents[j])
            for i in range(len(ents)) for j in range(i + 1, len(ents)))
        if independent:
            issues.append("the top-level steps share no object and the instruction sets no "
                          "order: use execution_mode any_order")
    return issues


def compliance_issues(cand: OracleCandidate, library: list[AtomicOracle]) -> list[str]:
    issues: list[str] = []
    by_id = {o.id: o for o in library}
    for path, act in cand.actions():
        if not act.monitoring:
            issues.append(f"step {path} ({act.action_id}) is not monitored: add a monitoring "
                          "entry")
            continue
        for k, mon in enumerate(act.monitoring):
            where = f"step {path} monitoring[{k}]"
            oracle = by_id.get(mon.oracle_id)
            if "(" not in mon.handle_as:
                hint = ""
                if oracle is not None:
                    mapping = {p: act.parameters.get(p, p) for p in oracle.parameters}
                    hint = f": use '{substitute(oracle.correctness_oracle, mapping)}'"
                issues.append(f"{where}: handle_as '{mon.handle_as}' is the oracle id, not a "
                              f"predicate expression{hint}")
                continue
            if not library:
                continue
            if oracle is None:
                issues.append(f"{where}: oracle_id '{mon.oracle_id}' is not in the atomic "
                              f"oracle library ({', '.join(sorted(by_id))})")
                continue
            missing = [p for p in oracle.parameters if p not in act.parameters]
            if missing:
                issues.append(f"{where}: action parameters lack {missing} required by "
                              f"'{oracle.id}'")
                continue
            expected = substitute(oracle.correctness_oracle,
                                  {p: act.parameters[p] for p in oracle.parameters})
            if canonical(expected) != canonical(mon.handle_as):
                issues.append(f"{where}: handle_as '{mon.handle_as}' differs from the library "
                              f"oracle '{oracle.id}' with parameters substituted: "
                              f"use '{expected}'")
            if act.action_id != mon.oracle_id and act.action_id not in by_id:
                issues.append(f"step {path}: action_id '{act.action_id}' is not a library task")
    return issues


def _region_hint(g: Grounder, path: str, pred: str, obj: str, target: str) -> str | None:
    """Where a containment or support should be checked on the target's region instead."""
    region = next((c for c in g.children(target) if g.is_region(c)), None)
    if region is None:
        return None
    if pred == "in" and not g.is_region(target) and not g.is_movable(target):
        return f"step {path}: in({obj}, {target}) needs a region: use '{region}'"
    if pred == "in" and g.is_movable(target):
        return f"step {path}: in({obj}, {target}) should use the container's region '{region}'"
    if pred == "on" and g.kind(target) in {"fixture", "device"}:
        return f"step {path}: on({obj}, {target}) should use the region '{region}'"
    return None


def grounding_issues(cand: OracleCandidate, scene: SceneTask) -> list[str]:
    g = Grounder(scene)
    known = set(scene.entities()) | set(ROBOT_PARTS)
    issues: list[str] = []
    reported: set[str] = set()
    used: set[str] = set()
    for path, act in cand.actions():
        ids = list(act.parameters.values())
        atoms = [a for m in act.monitoring for a in atoms_of(m.handle_as)]
        ids.extend(x for a in atoms for x in a.args)
        for ent in ids:
            used.add(ent)
            if ent not in known and ent not in reported:
                reported.add(ent)
                closest = g.rank(tokens_of(ent))
                hint = f" (closest scene id: '{closest[0][0]}')" if closest and closest[0][
                    1] > 0.3 else ""
                issues.append(f"step {path}: '{ent}' does not exist in the scene{hint}")
        for a in atoms:
            if len(a.args) != 2 or a.args[1] not in known:
                continue
            hint = _region_hint(g, path, a.predicate, a.args[0], a.args[1])
            if hint is not None:
                issues.append(hint)
    parsed = ground_instruction(cand.instruction, scene)
    for goal in parsed.goals:
        if goal.obj not in used:
            issues.append(f"the instruction refers to '{goal.obj}' but the oracle never uses it")
    issues.extend(f"instruction: {p}" for p in parsed.problems)
    return issues
