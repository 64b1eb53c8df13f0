"""Execution Reliability: the rule-based assessor of module III (not a model call).

It runs the candidate through the oracle engine the way the oracle node will: load the
oracle (structure), then the engine's static check (parse every `handle_as`, type-check it
against the function library: predicate names, arities, argument kinds where the scene
declares kinds; ground every id on the scene; evaluate each expression on a sample state of
the scene), and finally a dry run of the tracker over that state. Anything that would make
`mango oracle check` fail or error is an issue.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from mango.errors import InputError
from mango.generation import engine
from mango.generation.models import (
    AssessorReport,
    AtomicOracle,
    AtomicTask,
    FunctionCatalog,
    SceneTask,
)
from mango.generation.offline.grounding import ParseResult
from mango.generation.offline.matching import Grounder
from mango.oracle.expr import Atom
from mango.oracle.static_check import kind_accepted
from mango.oracle.world_state import ROBOT_PARTS

ASPECT = "execution_reliability"


@dataclass
class ReliabilityResult:
    issues: list[str]
    parsed: bool = True
    typed: bool = True
    grounded: bool = True
    dry_run: bool = True

    @property
    def ok(self) -> bool:
        return not self.issues


def predicate_arguments(scene: SceneTask, catalog: FunctionCatalog) -> dict[str, list[str]]:
    """Each predicate of `catalog` → the ids the dry run below evaluates it on, which module
    III's answer schema holds the model to. A `joint_or_fixture` argument takes what has a
    joint, but not a fixture whose drawers are joints of their own (close the top drawer, not
    "the cabinet"); a `device` what can be switched. Where a thing goes (`in`'s container,
    `on`'s support) is never a thing with regions of its own but a surface (the stove's
    cooking region, not the stove; the basket's inside, not the basket; a table's placement
    regions do not stop "on the table"), nor a spot on a surface that a thing starts in (the
    thing names it: "the left plate" is the plate, not the table region it stands in): the
    prompt's rule "where a predicate needs a region use the region id". `in` takes no region
    one cannot be inside (a top side, a spot on the table), `on` none one is inside (a
    drawer, a compartment). LIBERO's goals, all 130, keep to these; any other argument
    takes every entity and robot part. None of them is a kind the static check refuses at
    every position (a table as `in`'s container)."""
    g = Grounder(scene)
    entities = scene.entities()
    every = [*entities, *ROBOT_PARTS]
    not_places = {e for e in entities if g.kind(e) != "surface"
                  and any(g.is_region(c) for c in g.children(e))}
    # the spot a thing starts on is named by the thing: "on the left plate" is plate_1, not
    # the table region the plate stands in (no LIBERO goal names such a spot)
    taken = {g.support(e) for e in entities} & {
        e for e in entities if g.is_region(e) and not g.is_inner(e)
        and g.kind(g.parent(e) or "") == "surface"}
    not_places |= taken
    closable = [e for e in entities if g.is_closable(e)]
    joints = [e for e in closable if not any(c in closable for c in g.children(e))]
    by_kind = {
        "joint_or_fixture": joints,
        "device": [e for e in entities if g.is_switchable(e)],
        "container_object": [e for e in every if e not in not_places
                             and not (g.is_region(e) and not g.is_inner(e))],
        "support_surface": [e for e in every if e not in not_places
                            and not (g.is_region(e) and g.is_inner(e))],
    }
    have = engine.scene_entities(scene)
    out: dict[str, list[str]] = {}
    for name, info in catalog.predicates.items():
        kinds = [by_kind[a] for a in info.input_arguments if a in by_kind]
        # the static check's rule at any position (the pattern gives a predicate one id set)
        out[name] = [e for e in (kinds[-1] if kinds else every)
                     if info.argument_kinds is None
                     or any(kind_accepted(have.kinds_of(e), a) for a in info.argument_kinds)]
    return out


def _atoms(texts: Iterable[str]) -> Iterator[Atom]:
    """Every atom of the expressions that parse (the static check reports those that don't)."""
    for text in texts:
        try:
            yield from engine.iter_atoms(engine.parse_expression(text)) if text else ()
        except InputError:
            continue


def parameter_ids(tasks: list[AtomicTask], oracles: list[AtomicOracle],
                  arguments: dict[str, list[str]]) -> dict[str, dict[str, list[str]]]:
    """Each atomic task's parameters → the ids it may take: those every predicate it is an
    argument of (in the task's conditions and its correctness oracle) takes, so an answer
    that names the stove as place_on's target cannot be written any more than a `handle_as`
    `on(pot, stove)` can. A parameter no predicate names, or whose predicates share no id,
    is left out (the schema gives it every scene id)."""
    checks = {o.id: o.correctness_oracle for o in oracles}
    out: dict[str, dict[str, list[str]]] = {}
    for task in tasks:
        allowed: dict[str, set[str]] = {}
        for atom in _atoms([*task.pre_conditions, *task.post_conditions,
                            checks.get(task.id, "")]):
            ids = arguments.get(atom.predicate)
            for arg in atom.args:
                if ids is not None and arg in task.parameters:
                    allowed[arg] = allowed.get(arg, set(ids)) & set(ids)
        out[task.id] = {p: sorted(ids) for p, ids in allowed.items() if ids}
    return out


def plan_bound(reading: ParseResult) -> int | None:
    """How many top-level steps an oracle of the instruction `reading` read may need: one per
    goal the reader finds, and one more (an opening or a closing of its own); None when it
    reads none (the model is then not bounded by the reader)."""
    return len(reading.goals) + 1 if reading.goals else None


def named_ids(reading: ParseResult, scene: SceneTask) -> set[str] | None:
    """The ids the instruction names as the reader grounded it (each goal's thing, place,
    landmark and source), with what holds them short of a table (a drawer's cabinet, the
    stove of its cooking region: "turn on the stove" after "on the stove"). None when the
    reader did not read it all: the model then chooses among every id."""
    if not reading.read_in_full:
        return None
    g = Grounder(scene)
    out: set[str] = set()
    for goal in reading.goals:
        for ent in (goal.obj, goal.target, goal.landmark, goal.source):
            while ent is not None and ent not in out and g.kind(ent) != "surface":
                out.add(ent)
                ent = g.parent(ent)
    return out


def narrowed(arguments: dict[str, list[str]], named: set[str] | None) -> dict[str, list[str]]:
    """`predicate_arguments` held to the ids the instruction names (and the robot's parts);
    a predicate none of whose ids is named keeps them all, None keeps everything."""
    if named is None:
        return arguments
    return {p: [e for e in ids if e in named or e in ROBOT_PARTS] or ids
            for p, ids in arguments.items()}


def _placings(parameters: list[str], texts: Iterable[str]) -> set[str]:
    """The relations the expressions put one parameter in to another (place_on's
    `on(obj_id, target_id)`); a relation to a robot part (approach's `near(robot_hand, …)`)
    places nothing."""
    return {a.predicate for a in _atoms(texts)
            if len(a.args) == 2 and all(x in parameters for x in a.args)}


def asked_actions(tasks: list[AtomicTask], oracles: list[AtomicOracle], reading: ParseResult
                  ) -> tuple[list[AtomicTask], list[AtomicOracle], set[str]]:
    """The library's tasks and oracles an instruction can need, as the reader read it, and the
    relations no longer asked for: a task that places its object in a relation no goal has
    (place_in where the instruction says "on the plate") is left out, with its oracle and a
    relation only those used, so a plan cannot put the bowl `in` the plate. Every task that
    places nothing (pick, open, turn on) stays; an instruction the reader does not read in
    full keeps the whole library."""
    if not reading.read_in_full:
        return tasks, oracles, set()
    asked = {g.relation for g in reading.goals if g.relation}
    checks = {o.id: o.correctness_oracle for o in oracles}
    dropped = {t.id for t in tasks
               if not _placings(t.parameters, [*t.post_conditions, checks.get(t.id, "")])
               <= asked}
    dropped |= {o.id for o in oracles if not _placings(o.parameters, [o.correctness_oracle])
                <= asked}
    kept_tasks = [t for t in tasks if t.id not in dropped]
    kept_oracles = [o for o in oracles if o.id not in dropped]
    if (tasks and not kept_tasks) or (oracles and not kept_oracles):
        return tasks, oracles, set()
    used = {a.predicate for a in _atoms([
        *(c for t in kept_tasks for c in [*t.pre_conditions, *t.post_conditions]),
        *(o.correctness_oracle for o in kept_oracles)])}
    gone = {a.predicate for a in _atoms([
        *(c for t in tasks if t.id in dropped for c in t.post_conditions),
        *(o.correctness_oracle for o in oracles if o.id in dropped)])}
    return kept_tasks, kept_oracles, gone - used - asked


class ExecutionReliabilityAssessor:
    """Parse, type-check, ground and dry-run a candidate oracle on one scene."""

    def __init__(self, scene: SceneTask, library: engine.FunctionLibrary | None = None) -> None:
        self.scene = scene
        self.library = library or engine.FunctionLibrary.default()
        g = Grounder(scene)
        self.entities = engine.scene_entities(scene)
        self.state = engine.sample_state(scene, g.kind, g.is_closable, g.is_switchable, g.parent)

    def __call__(self, context: dict[str, Any]) -> AssessorReport:
        return self.report(context["candidate"])

    def report(self, candidate: dict[str, Any]) -> AssessorReport:
        res = self.check(candidate)
        score = 10 if res.ok else max(0, 10 - 2 * len(res.issues))
        return AssessorReport(aspect=ASPECT, issues=res.issues, score=score)

    def check(self, candidate: dict[str, Any]) -> ReliabilityResult:
        try:
            oracle = engine.load_oracle(candidate)
        except InputError as exc:
            return ReliabilityResult([f"oracle structure: {exc}"], False, False, False, False)
        res = ReliabilityResult([])
        problems = engine.static_check(oracle, self.library, self.entities, self.state)
        for p in problems:
            res.issues.append(str(p))
            if p.kind == "parse_error":
                res.parsed = False
            elif p.kind in {"unknown_predicate", "arity", "argument_kind"}:
                res.typed = False
            elif p.kind == "ungrounded":
                res.grounded = False
            else:
                res.dry_run = False
        for path, action in oracle.actions():
            for k, mon in enumerate(action.monitoring):
                try:
                    atoms = list(engine.iter_atoms(engine.parse_expression(mon.handle_as)))
                except InputError:
                    continue
                if not atoms:
                    res.typed = False
                    res.issues.append(f"step {path} monitoring[{k}]: handle_as "
                                      f"'{mon.handle_as}' checks no predicate")
        if not problems:
            try:
                engine.check_trace(oracle, [self.state], self.library)
            except InputError as exc:
                res.dry_run = False
                res.issues.append(f"dry run of the tracker on the scene's first state: {exc}")
        return res
