"""Module III rules: the fine-grained oracle of one instruction and its three assessors.

The Generator grounds the instruction on the scene (`grounding`) and plans it with the
libraries of the run (`plan`); the assessors run the rule checks of `checks` on any
candidate, whoever wrote it.
"""

from __future__ import annotations

from typing import Any

from mango.generation.models import AssessorReport, AtomicOracle, OracleCandidate, SceneTask
from mango.generation.offline.checks import compliance_issues, grounding_issues, logic_issues
from mango.generation.offline.grounding import ground_instruction
from mango.generation.offline.plan import LibraryBinder, build_plan
from mango.generation.offline.verdicts import report
from mango.llm.backend import Refusal


def _invalid() -> AssessorReport:
    return AssessorReport(issues=["the candidate is not a valid oracle"], score=0)


def generate(ctx: dict[str, Any]) -> OracleCandidate:
    scene = SceneTask.model_validate(ctx["scene"])
    instruction = ctx["instruction"]
    parsed = ground_instruction(instruction, scene)
    if parsed.problems or not parsed.goals:
        raise Refusal(f"cannot read '{instruction}': "
                      + "; ".join(parsed.problems or ["it asks for nothing"]))
    binder = LibraryBinder(ctx.get("atomic_oracle_library") or [],
                           ctx.get("atomic_library") or [], ctx.get("functions"))
    return build_plan(instruction, parsed.goals, binder)


def _candidate(ctx: dict[str, Any]) -> OracleCandidate | None:
    try:
        return OracleCandidate.model_validate(ctx["candidate"])
    except Exception:
        return None


def logic(ctx: dict[str, Any]) -> AssessorReport:
    cand = _candidate(ctx)
    if cand is None:
        return _invalid()
    return report(logic_issues(cand, SceneTask.model_validate(ctx["scene"])))


def compliance(ctx: dict[str, Any]) -> AssessorReport:
    cand = _candidate(ctx)
    if cand is None:
        return _invalid()
    lib = [AtomicOracle.model_validate(o) for o in ctx.get("atomic_oracle_library") or []]
    return report(compliance_issues(cand, lib), cost=2)


def grounding(ctx: dict[str, Any]) -> AssessorReport:
    cand = _candidate(ctx)
    if cand is None:
        return _invalid()
    return report(grounding_issues(cand, SceneTask.model_validate(ctx["scene"])), cost=2)
