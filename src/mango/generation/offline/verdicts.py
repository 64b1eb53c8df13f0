"""What every module's Judge and Report Interpreter do in the offline planner, and how its
generators read feedback."""

from __future__ import annotations

import re
from typing import Any

from mango.generation.models import AssessorReport, Feedback, JudgeVerdict

_QUOTED = re.compile(r"'([^']+)'")


def report(issues: list[str], cost: int = 3) -> AssessorReport:
    """An assessor's report: its issues and a score that drops by `cost` per issue."""
    return AssessorReport(issues=issues, score=max(0, 10 - cost * len(issues)))


def judge_from_reports(ctx: dict[str, Any], extra: list[str] | None = None) -> JudgeVerdict:
    """Approve when no assessor (and no extra check) reports a problem; else pass them on."""
    issues = [f"[{r.get('aspect', '')}] {i}" for r in ctx.get("reports", [])
              for i in r.get("issues", [])]
    issues.extend(extra or [])
    if not issues:
        return JudgeVerdict(verdict="APPROVED", reasons=["no assessor reports a problem"])
    return JudgeVerdict(verdict="REJECTED", reasons=[f"{len(issues)} open issue(s)"],
                        refinement_instructions=issues)


def interpret(ctx: dict[str, Any]) -> Feedback:
    """The judge's instructions and every assessor issue, each once, in that order."""
    items: list[str] = list((ctx.get("verdict") or {}).get("refinement_instructions", []))
    for rep in ctx.get("reports", []):
        items.extend(f"[{rep.get('aspect', '')}] {i}" for i in rep.get("issues", []))
    out: dict[str, str] = {}
    for item in items:
        out.setdefault(re.sub(r"^\[[^\]]*\]\s*", "", item), item)
    return Feedback(feedback=list(out.values()))


def quoted(line: str) -> list[str]:
    """The names or conditions a feedback line quotes ("split 'put_in' into 'pick_up' ...")."""
    return _QUOTED.findall(line)
