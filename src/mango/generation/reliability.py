"""Execution Reliability: the rule-based assessor of module III (not a model call).

It runs the candidate through the oracle engine the way the oracle node will: load the
oracle (structure), then the engine's static check (parse every `handle_as`, type-check it
against the function library: predicate names, arities, argument kinds where the scene
declares kinds; ground every id on the scene; evaluate each expression on a sample state of
the scene), and finally a dry run of the tracker over that state. Anything that would make
`mango oracle check` fail or error is an issue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mango.errors import InputError
from mango.generation import engine
from mango.generation.models import AssessorReport, FunctionCatalog, SceneTask
from mango.generation.offline.grounding import ground_instruction
from mango.generation.offline.matching import Grounder
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
    """Each predicate of `catalog` → the ids the dry run below evaluates it on: a
    `joint_or_fixture` argument takes what has a joint, a `device` what can be switched, any
    other every entity and robot part. Module III's answer schema holds the model to these."""
    g = Grounder(scene)
    every = [*scene.entities(), *ROBOT_PARTS]
    by_kind = {"joint_or_fixture": [e for e in scene.entities() if g.is_closable(e)],
               "device": [e for e in scene.entities() if g.is_switchable(e)]}
    out: dict[str, list[str]] = {}
    for name, info in catalog.predicates.items():
        args = set(info.input_arguments)
        kind = next(iter(args)) if len(args) == 1 else ""
        out[name] = by_kind.get(kind, every)
    return out


def plan_bound(instruction: str, scene: SceneTask) -> int | None:
    """How many top-level steps an oracle of `instruction` may need: one per goal the reader
    finds, and one more (an opening or a closing of its own); None when it reads none (the
    model is then not bounded by the reader)."""
    goals = ground_instruction(instruction, scene).goals
    return len(goals) + 1 if goals else None


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
