"""Module I rules: the atomic task library, its three assessors and its judge.

The Generator proposes its best candidate: the atomic decomposition the instructions need
(one task per robot skill the function library can observe), which its own assessors
approve. Given a previous library and feedback (a library another backend wrote, which the
assessors rejected) it applies the edits the feedback asks for ("split 'put_in' into ...",
"add 'approach'", "remove ...", "merge ..."). The assessors check any library, whoever
wrote it: atomicity (no composite pick-and-place task), redundancy (no duplicate effect,
no task nobody needs) and repetition (no tasks that differ only by their object).
"""

from __future__ import annotations

from typing import Any

from mango.generation.models import AssessorReport, AtomicLibraryAnswer, AtomicTask, JudgeVerdict
from mango.generation.offline.expressions import canonical
from mango.generation.offline.lexicon import LEXICON, tokens_of
from mango.generation.offline.skills import (
    SKILLS,
    offered,
    required_skills,
    skill_of_task,
    task_from_skill,
)
from mango.generation.offline.verdicts import judge_from_reports, quoted, report


def _decomposition(instructions: list[str], functions: dict[str, Any] | None
                   ) -> dict[str, AtomicTask]:
    """One task per atomic skill the instructions need and the function library observes."""
    return {s: task_from_skill(s) for s in required_skills(instructions, functions)}


def generate(ctx: dict[str, Any]) -> AtomicLibraryAnswer:
    """The atomic decomposition; or, given a rejected library, the edits feedback asks for."""
    instructions: list[str] = ctx.get("instructions", [])
    functions = ctx.get("functions")
    previous = ctx.get("previous")
    feedback: list[str] = ctx.get("feedback", [])
    if previous is None or not feedback:
        return AtomicLibraryAnswer(
            atomic_library=list(_decomposition(instructions, functions).values()))
    lib = {t["id"]: AtomicTask.model_validate(t) for t in previous["atomic_library"]}
    edited = False
    for line in feedback:
        names = quoted(line)
        low = line.lower()
        if "split" in low and len(names) >= 2:
            lib.pop(names[0], None)
            for n in names[1:]:
                if n in SKILLS and n not in lib and offered(n, functions):
                    lib[n] = task_from_skill(n)
            edited = True
        elif ("merge" in low or "parameteriz" in low) and len(names) >= 2:
            for n in names[:-1]:
                lib.pop(n, None)
            if names[-1] in SKILLS:
                lib.setdefault(names[-1], task_from_skill(names[-1]))
            edited = True
        elif ("remove" in low or "drop" in low) and names:
            lib.pop(names[0], None)
            edited = True
        elif "add" in low and names:
            for n in names:
                if n in SKILLS and offered(n, functions):
                    lib.setdefault(n, task_from_skill(n))
            edited = True
    if not edited:  # free-text feedback: fall back to the atomic decomposition
        lib = _decomposition(instructions, functions)
    return AtomicLibraryAnswer(atomic_library=list(lib.values()))


def _tasks(ctx: dict[str, Any]) -> list[AtomicTask]:
    return [AtomicTask.model_validate(t) for t in ctx["candidate"]["atomic_library"]]


def _is_composite(task_id: str) -> bool:
    return task_id.lower().split("_")[0] in LEXICON.composite_verbs


def atomicity(ctx: dict[str, Any]) -> AssessorReport:
    issues = []
    for t in _tasks(ctx):
        words = t.id.lower().split("_")
        if _is_composite(t.id) or ("pick" in words and "place" in words):
            place = skill_of_task(AtomicTask(id="x", parameters=t.parameters,
                                             post_conditions=t.post_conditions))
            place = place if place and place.startswith("place") else "place_on"
            issues.append(f"'{t.id}' is composite (approach, pick and place): split "
                          f"'{t.id}' into 'approach', 'pick_up' and '{place}'")
    return report(issues)


def redundancy(ctx: dict[str, Any]) -> AssessorReport:
    tasks = _tasks(ctx)
    needed = set(required_skills(ctx.get("instructions", []), ctx.get("functions")))
    issues = []
    effects: dict[str, str] = {}
    for t in tasks:
        eff = " and ".join(sorted(canonical(c) for c in t.post_conditions))
        if _is_composite(t.id):
            continue  # atomicity splits it; its effect is not a duplicate
        if eff and eff in effects:
            issues.append(f"'{t.id}' has the same effect as '{effects[eff]}': remove '{t.id}'")
            continue
        effects.setdefault(eff, t.id)
        skill = skill_of_task(t)
        if skill is not None and skill not in needed and t.id in SKILLS:
            issues.append(f"no instruction needs '{t.id}': remove '{t.id}'")
    return report(issues)


def repetition(ctx: dict[str, Any]) -> AssessorReport:
    issues = []
    by_skill: dict[str, list[str]] = {}
    for t in _tasks(ctx):
        skill = skill_of_task(t)
        if skill is not None and t.id != skill:
            by_skill.setdefault(skill, []).append(t.id)
    allowed = LEXICON.composite_verbs
    for skill, ids in by_skill.items():
        if len(ids) > 1 or (ids and any(
                not set(tokens_of(i)) <= set(tokens_of(skill)) | allowed for i in ids)):
            quoted = ", ".join(f"'{i}'" for i in ids)
            issues.append(f"{quoted} differ only by the object: merge {quoted} into one "
                          f"parameterized task '{skill}'")
    return report(issues)


def judge(ctx: dict[str, Any]) -> JudgeVerdict:
    tasks = _tasks(ctx)
    have = {skill_of_task(t) for t in tasks} | {t.id for t in tasks}
    missing = [s for s in required_skills(ctx.get("instructions", []), ctx.get("functions"))
               if s not in have]
    extra = [f"the library does not cover the instructions: add '{s}'" for s in missing]
    return judge_from_reports(ctx, extra)
