"""A generated oracle scored against its BDDL task: the one rule the LIBERO generation
benchmark and its replay tests share."""

from __future__ import annotations

from typing import Any

from mango.generation.models import SceneTask
from mango.generation.reliability import ExecutionReliabilityAssessor
from mango.oracle.goal_order import goal_order_problems


def score_oracle(goal_atoms: list[str], scene: SceneTask, oracle: dict[str, Any] | None,
                 approved: bool, refusal: str | None) -> tuple[bool, str]:
    """(counts, why not). A task counts when its oracle was not refused, has a plan, passes
    the static check (Execution Reliability: parse, types, grounding, dry run), checks every
    BDDL goal atom in a valid order and was approved; the first failure is the cause."""
    if refusal is not None:
        return False, f"refused: {refusal}"
    if oracle is None or not oracle.get("plan"):
        return False, "empty plan"
    er = ExecutionReliabilityAssessor(scene).check(oracle)
    if not er.ok:
        return False, f"static check: {er.issues[0]}"
    problems = goal_order_problems(oracle, goal_atoms)
    if problems:
        return False, f"goal {problems[0].kind}: {problems[0].message}"
    if not approved:
        return False, "not approved"
    return True, ""
