"""Goal coverage of an oracle: every goal atom is checked by a step, in an order that can work.

The static check says an oracle can run; this says it asks for the task's goal. Each goal atom
(a benchmark's end-state goal, e.g. BDDL's `(In bowl drawer_region)`) must be a positive atom
of some step's `handle_as`, and that step must not be allowed before a step its precondition
needs: putting into a fixture's region needs the fixture opened first (where the oracle opens
it), closing a fixture needs what goes into it placed first, and placing a carried object needs
it grasped first. (Stacking on an object that moves later is no such need: LIBERO's "stack the
left bowl on the right bowl and place them in the tray" moves the stack.) "Before"
is the plan's order: the needed step is a predecessor (sequential), not merely a sibling of
an `any_order` group.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mango.oracle.expr import Atom, ExpressionError, iter_literals, parse_expression
from mango.oracle.model import FineGrainedOracle, PlanEntry, load_oracle, plan_entries

GoalProblemKind = Literal["missing", "order"]
_PLACING = frozenset({"in", "on", "right_of", "left_of", "near"})


@dataclass(frozen=True)
class GoalProblem:
    """A goal atom no step checks, or checks too early; `path` is the step path ("" if none)."""

    atom: str
    kind: GoalProblemKind
    message: str
    path: str = ""

    def __str__(self) -> str:
        where = f"step {self.path}" if self.path else "oracle"
        return f"{where} [{self.kind}] {self.message}"


def related(a: str, b: str) -> bool:
    """The same id, or one is a part of the other by LIBERO's `<owner>_<part>` naming."""
    return a == b or a.startswith(b + "_") or b.startswith(a + "_")


def _atom(text: str | Atom) -> Atom:
    if isinstance(text, Atom):
        return text
    expr = parse_expression(text)
    if not isinstance(expr, Atom):
        raise ExpressionError("a goal atom must be one predicate, not a formula", text, 0,
                              field="goal_atoms")
    return expr


def _positive_atoms(entry: PlanEntry) -> list[Atom]:
    out: list[Atom] = []
    for mon in entry.action.monitoring:
        try:
            out.extend(a for a, positive in iter_literals(parse_expression(mon.handle_as))
                       if positive)
        except ExpressionError:
            continue  # the static check reports it
    return out


def _needed(goal: Atom, entries: list[PlanEntry], atoms: list[list[Atom]], at: int
            ) -> list[tuple[int, str]]:
    """(entry index, why) of the steps the goal atom's step at `at` needs done before it."""
    out: list[tuple[int, str]] = []
    pred, args = goal.predicate, goal.args
    for i, found in enumerate(atoms):
        if i == at:
            continue
        for a in found:
            if not a.args:
                continue
            if pred == "in" and len(args) == 2 and a.predicate == "open" and related(
                    a.args[0], args[1]):
                out.append((i, f"opening {a.args[0]}"))
            elif pred == "close" and a.predicate == "in" and len(a.args) == 2 and related(
                    a.args[1], args[0]):
                out.append((i, f"putting {a.args[0]} into {a.args[1]}"))
    if pred in _PLACING and len(args) == 2:
        grasps = [i for i, found in enumerate(atoms) if i != at and any(
            a.predicate == "grasped" and a.args == (args[0],) for a in found)]
        if grasps and not any(i in entries[at].predecessors for i in grasps):
            out.append((grasps[0], f"grasping {args[0]}"))
    return out


def goal_order_problems(
    oracle: FineGrainedOracle | str | Path | dict[str, Any],
    goal_atoms: Iterable[str | Atom],
) -> list[GoalProblem]:
    """Every goal atom no step checks, or whose step may run before one it needs (empty: ok)."""
    oracle = load_oracle(oracle)
    entries = plan_entries(oracle)
    atoms = [_positive_atoms(e) for e in entries]
    problems: list[GoalProblem] = []
    for raw in goal_atoms:
        goal = _atom(raw)
        where = [i for i, found in enumerate(atoms) if any(a.key == goal.key for a in found)]
        if not where:
            problems.append(GoalProblem(str(goal), "missing", f"no step checks {goal}"))
            continue
        at = where[-1]  # the last step that checks it is the one whose result stays
        for i, why in _needed(goal, entries, atoms, at):
            if i not in entries[at].predecessors:
                problems.append(GoalProblem(
                    str(goal), "order",
                    f"{goal} may be checked before step {entries[i].path} ({why}) is done: "
                    "make that step come first", entries[at].path))
    return problems
