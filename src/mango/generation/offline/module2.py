"""Module II rules: atomic task oracles, the Oracle Hacker and the library Judge.

The Generator writes a task's oracle from its post-conditions plus what the skill the task
is demands besides (its guards): its best candidate, which its own hacker finds tight.
Given a previous oracle (one another backend wrote) it adds the conditions feedback asks
for. The Oracle Hacker looks for loopholes in any oracle, whoever wrote it: a predicate the
function library lacks or calls with the wrong arity, a parameter the oracle ignores, and a
missing effect or guard of the skill the task is (a placed object that was never released,
a "picked" object that was never lifted). The Judge checks the library as a whole: every
task has an oracle, oracles use only their parameters, and the manipulated object has one
name throughout.
"""

from __future__ import annotations

from typing import Any

from mango.generation.models import (
    AtomicOracle,
    AtomicOracleLibrary,
    AtomicTask,
    HackerReport,
    JudgeVerdict,
)
from mango.generation.offline import module1
from mango.generation.offline.expressions import atoms_of, conjunct_set, substitute
from mango.generation.offline.skills import OBJECT_FIRST, SKILLS, offered, skill_of_task
from mango.generation.offline.verdicts import quoted
from mango.oracle.expr import (
    Atom,
    ExpressionError,
    Not,
    conjuncts,
    iter_atoms,
    parse_expression,
    parse_or_none,
)
from mango.oracle.world_state import ROBOT_PARTS


def demands(task: AtomicTask, parameters: list[str], functions: dict[str, Any] | None
            ) -> list[str]:
    """What an oracle of `task` must check: the effect and guards of the skill the task is,
    over the oracle's `parameters`, where the function library can observe them."""
    skill = skill_of_task(task, composite=True) or (task.id if task.id in SKILLS else None)
    if skill is None:
        return []
    s = SKILLS[skill]
    mapping = dict(zip(s.parameters, parameters or s.parameters, strict=False))
    return [substitute(g, mapping) for g in (s.effect, *s.guards) if offered(g, functions)]


def _with(expr: str, conds: list[str]) -> str:
    """`expr` and every condition it does not check yet."""
    for cond in conds:
        if atoms_of(cond) and not conjunct_set(cond) <= conjunct_set(expr):
            expr = f"{expr} and {cond.strip()}"
    return expr


def generate(ctx: dict[str, Any]) -> AtomicOracle:
    """The task's post-conditions and what its skill demands besides; or, given a previous
    oracle, that oracle with the conditions feedback asks to add."""
    task = AtomicTask.model_validate(ctx["task"])
    previous = ctx.get("previous")
    if previous is not None:
        asked = [cond for line in ctx.get("feedback", [])
                 if "add" in line.lower() or "require" in line.lower()
                 for cond in quoted(line)]
        expr = _with(previous["correctness_oracle"], asked)
    else:
        conds = [c for c in task.post_conditions if atoms_of(c)]
        if conds:
            expr = " and ".join(conds)
        else:
            skill = skill_of_task(task, composite=True) or "pick_up"
            params = task.parameters or list(SKILLS[skill].parameters)
            mapping = dict(zip(SKILLS[skill].parameters, params, strict=False))
            expr = substitute(SKILLS[skill].effect, mapping)
        expr = _with(expr, demands(task, task.parameters, ctx.get("functions")))
    return AtomicOracle(id=task.id, description=task.description,
                        parameters=task.parameters, correctness_oracle=expr)


def generate_library(ctx: dict[str, Any]) -> AtomicOracleLibrary:
    functions = ctx.get("functions")
    lib = ctx.get("atomic_library")
    if lib:
        tasks = [AtomicTask.model_validate(t) for t in lib]
    else:
        tasks = module1.generate({"instructions": ctx.get("instructions", []),
                                  "functions": functions}).atomic_library
    return AtomicOracleLibrary(atomic_oracle_library=[
        generate({"task": t.model_dump(), "functions": functions}) for t in tasks])


def _loophole(cond: str) -> str:
    """How a world state can pass an oracle that lacks `cond`."""
    tree = parse_or_none(cond)
    first = conjuncts(tree)[0] if tree is not None else None
    negated = isinstance(first, Not) and isinstance(first.operand, Atom)
    atom = first.operand if negated else first
    pred = atom.predicate if isinstance(atom, Atom) else ""
    if negated and pred == "grasped":
        return "the gripper still holds the object inside the target: it was not released"
    if not negated and pred == "grasped":
        return "the object was knocked or tossed up, not held"
    if not negated and pred == "up":
        return "the gripper closed on the object but never lifted it off its support"
    return "the task's effect is only partly checked"


def hack(ctx: dict[str, Any]) -> HackerReport:
    task = AtomicTask.model_validate(ctx["task"])
    oracle = AtomicOracle.model_validate(ctx["oracle"])
    functions: dict[str, Any] = ctx.get("functions", {})
    try:
        atoms = list(iter_atoms(parse_expression(oracle.correctness_oracle)))
    except ExpressionError as exc:
        return HackerReport(exploit_found=True, counterexample="",
                            issues=[f"'{oracle.id}': {_syntax(exc)}"])
    issues: list[str] = []
    if not atoms:
        return HackerReport(exploit_found=True, counterexample="any state at all",
                            issues=[f"'{oracle.id}' checks no predicate: it always passes"])
    used = {a for atom in atoms for a in atom.args}
    used |= set(ROBOT_PARTS)
    for p in oracle.parameters:
        if p not in used:
            issues.append(f"'{oracle.id}' ignores its parameter '{p}': any value passes")
    for atom in atoms:
        spec = functions.get(atom.predicate)
        if functions and spec is None:
            issues.append(f"'{atom.predicate}' is not in the function library")
        elif spec is not None and len(spec.get("arguments", [])) != len(atom.args):
            issues.append(f"'{atom.predicate}' takes {len(spec['arguments'])} argument(s), "
                          f"not {len(atom.args)}")
    counter = ""
    present = conjunct_set(oracle.correctness_oracle)
    for cond in demands(task, oracle.parameters, functions):
        if not conjunct_set(cond) <= present:
            issues.append(f"'{oracle.id}' passes when the task was not done: add '{cond}'")
            if not counter:
                counter = (f"a state where '{oracle.correctness_oracle}' holds while "
                           f"'{cond}' is false: {_loophole(cond)}")
    if issues:
        return HackerReport(exploit_found=True, counterexample=counter, issues=issues)
    return HackerReport(exploit_found=False)


def _syntax(exc: ExpressionError) -> str:
    return (f"correctness_oracle '{exc.text}' is not a valid expression: {exc.reason} at "
            f"column {exc.expr_column}")


def judge(ctx: dict[str, Any]) -> JudgeVerdict:
    lib = AtomicOracleLibrary.model_validate(ctx["candidate"])
    functions: dict[str, Any] = ctx.get("functions", {})
    issues: list[str] = []
    for task in ctx.get("atomic_library") or []:
        if lib.get(task["id"]) is None:
            issues.append(f"task '{task['id']}' has no oracle")
    object_names: dict[str, str] = {}
    for o in lib.atomic_oracle_library:
        try:
            atoms = list(iter_atoms(parse_expression(o.correctness_oracle)))
        except ExpressionError as exc:
            issues.append(f"'{o.id}': {_syntax(exc)}")
            continue
        for atom in atoms:
            if functions and atom.predicate not in functions:
                issues.append(f"'{o.id}': predicate '{atom.predicate}' is not in the function "
                              "library")
            for a in atom.args:
                if a not in o.parameters and a not in ROBOT_PARTS:
                    issues.append(f"'{o.id}': '{a}' is not one of its parameters "
                                  f"{o.parameters}")
            if atom.predicate in OBJECT_FIRST and atom.args and atom.args[0] in o.parameters:
                object_names.setdefault(atom.args[0], o.id)
    if len(object_names) > 1:
        names = ", ".join(f"'{p}' ({i})" for p, i in object_names.items())
        issues.append("the manipulated object is named differently across oracles: "
                      f"{names}; use one parameter name")
    if issues:
        return JudgeVerdict(verdict="REJECTED", reasons=issues, refinement_instructions=issues)
    return JudgeVerdict(verdict="APPROVED", reasons=["consistent library"])
