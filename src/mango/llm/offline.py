"""The offline planner: a deterministic backend that plays every MANGO role without a model.

This is NOT a language model. It answers each `AgentCall` from the call's structured
`context` with rules:

- Generator: a real instruction parser and fuzzy scene grounding
  (`mango.generation.language`) and a table of robot skills (pick, place in/on/next to,
  open, close, turn on/off) with their effects. Its first reading of a task library is
  literal (one task per verb as written, "put_in"); it applies the edits that feedback asks
  for ("split 'put_in' into 'pick_up' and 'place_in'", "add 'grasped(obj_id)'").
- Assessors, Oracle Hacker and Judges: rule checks of atomicity, redundancy, repetition,
  loopholes of atomic oracles, plan logic, compliance with the oracle library and grounding.

It is the embedded default backend: fast, reproducible, and honest about what it is
(`name = "offline"`, model "offline-planner (rule-based, not an LLM)").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from mango.generation.language import (
    Goal,
    Grounder,
    ground_instruction,
    parse_instruction_clauses,
    tokens_of,
)
from mango.generation.models import (
    AssessorReport,
    AtomicLibraryAnswer,
    AtomicOracle,
    AtomicOracleLibrary,
    AtomicTask,
    Feedback,
    HackerReport,
    JudgeVerdict,
    OracleCandidate,
    SceneTask,
)
from mango.llm.backend import AgentCall, BackendError
from mango.oracle.world_state import ROBOT_PARTS

T = TypeVar("T", bound=BaseModel)

MODEL_NAME = "offline-planner (rule-based, not an LLM)"

_ATOM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*)\)")
_QUOTED = re.compile(r"'([^']+)'")


def atoms_of(expr: str) -> list[tuple[str, tuple[str, ...]]]:
    """(predicate, args) of every atom; tolerant of malformed text (rules must not crash)."""
    out = []
    for m in _ATOM.finditer(expr or ""):
        args = tuple(a.strip() for a in m.group(2).split(",") if a.strip())
        out.append((m.group(1), args))
    return out


def substitute(expr: str, mapping: dict[str, str]) -> str:
    """Replace parameter names by ids (whole words only)."""
    if not mapping:
        return expr
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in mapping) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], expr)


def _norm_expr(expr: str) -> str:
    return re.sub(r"\s+", "", expr or "").replace("&&", "and").lower()


# ----------------------------------------------------------------------------- skills


@dataclass(frozen=True)
class Skill:
    """An atomic robot skill: parameters, effect (post-condition) and guard conditions."""

    id: str
    description: str
    parameters: tuple[str, ...]
    effect: str  # post-condition over the parameters
    guards: tuple[str, ...] = ()  # what the hacker demands besides the effect
    pre: tuple[str, ...] = ()


SKILLS: dict[str, Skill] = {s.id: s for s in [
    Skill("approach", "Move the hand to the object.", ("obj_id",), "near(robot_hand, obj_id)"),
    Skill("pick_up", "Grasp the object and lift it off its support.", ("obj_id",),
          "grasped(obj_id)", ("up(obj_id)",), pre=("near(robot_hand, obj_id)",)),
    Skill("place_in", "Place the held object inside the container or region and release it.",
          ("obj_id", "target_id"), "in(obj_id, target_id)", ("not grasped(obj_id)",),
          pre=("grasped(obj_id)",)),
    Skill("place_on", "Place the held object on the surface, object or region and release it.",
          ("obj_id", "target_id"), "on(obj_id, target_id)", ("not grasped(obj_id)",),
          pre=("grasped(obj_id)",)),
    Skill("place_right_of", "Place the held object to the right of the reference object.",
          ("obj_id", "target_id"), "right_of(obj_id, target_id)", ("not grasped(obj_id)",),
          pre=("grasped(obj_id)",)),
    Skill("place_left_of", "Place the held object to the left of the reference object.",
          ("obj_id", "target_id"), "left_of(obj_id, target_id)", ("not grasped(obj_id)",),
          pre=("grasped(obj_id)",)),
    Skill("place_near", "Place the held object next to the reference object.",
          ("obj_id", "target_id"), "near(obj_id, target_id)", ("not grasped(obj_id)",),
          pre=("grasped(obj_id)",)),
    Skill("push_on", "Push the object, without lifting it, onto the region or surface.",
          ("obj_id", "target_id"), "on(obj_id, target_id)", ("not grasped(obj_id)",)),
    Skill("push_near", "Push the object, without lifting it, next to the reference object.",
          ("obj_id", "target_id"), "near(obj_id, target_id)", ("not grasped(obj_id)",)),
    Skill("open", "Open the drawer, door or fixture.", ("joint_id",), "open(joint_id)",
          pre=("close(joint_id)",)),
    Skill("close", "Close the drawer, door or fixture.", ("joint_id",), "close(joint_id)",
          pre=("open(joint_id)",)),
    Skill("turn_on", "Switch the device on.", ("device_id",), "turnon(device_id)",
          pre=("turnoff(device_id)",)),
    Skill("turn_off", "Switch the device off.", ("device_id",), "turnoff(device_id)",
          pre=("turnon(device_id)",)),
]}
_RELATION_SKILL = {"in": "place_in", "on": "place_on", "right_of": "place_right_of",
                   "left_of": "place_left_of", "near": "place_near"}
_EFFECT_PRED = {sid: atoms_of(s.effect)[0][0] for sid, s in SKILLS.items()}
# words for composite actions: a single verb that is really pick + place
_COMPOSITE = {"put", "move", "transfer", "bring", "relocate", "insert", "stack", "load",
              "position", "return", "deposit", "store", "leave", "set", "drop"}
_CONTAINERS = {"basket", "bowl", "box", "drawer", "microwave", "pot", "bin", "cabinet", "caddy",
               "fridge", "refrigerator", "sink", "oven", "compartment", "cup", "mug", "tray",
               "container", "jar", "bag", "pan", "shelf", "dishwasher", "crate"}


def skills_for_goal(goal: Goal) -> list[str]:
    if goal.kind == "pick_place":
        return ["approach", "pick_up", _RELATION_SKILL.get(goal.relation or "on", "place_on")]
    if goal.kind == "pick":
        return ["approach", "pick_up"]
    if goal.kind == "push":
        return ["approach", "push_on" if goal.relation in {"on", "in"} else "push_near"]
    return [goal.kind]


def _literal_tasks(instruction: str) -> list[tuple[str, list[str]]]:
    """The literal reading: one task per verb as written, and the atomic skills it needs."""
    out = []
    clauses = parse_instruction_clauses(instruction)
    for c in clauses:
        word = c.text.split()[0] if c.text else c.verb
        if c.verb in {"open", "close", "turn_on", "turn_off"}:
            out.append((c.verb, [c.verb]))
        elif c.verb == "pick":
            out.append(("pick_up", ["approach", "pick_up"]))
        elif c.verb == "push":
            push = "push_on" if c.relation in {"on", "in", "to", "onto"} else "push_near"
            out.append((push, ["approach", push]))
            if push == "push_near":  # the spot may be a named region of the scene
                out.append(("push_on", ["push_on"]))
        else:
            rel = c.relation or "on"
            if rel == "to":
                head = tokens_of(c.target.text)[-1] if c.target and tokens_of(c.target.text) \
                    else ""
                rel = "in" if head.rstrip("s") in _CONTAINERS else "on"
            rel = {"front_of": "near", "behind": "near", "under": "near"}.get(rel, rel)
            place = _RELATION_SKILL.get(rel, "place_on")
            verb = "place" if word in {"place", "placed"} else word
            # a spatial relation may be checked on a region the scene names ("the area to the
            # right of the plate"): the library needs the "on" form as well
            region_form = ["place_on"] if rel in {"right_of", "left_of", "near"} else []
            if verb in _COMPOSITE:
                out.append((f"{verb}_{place.split('_', 1)[1]}",
                            ["approach", "pick_up", place, *region_form]))
            else:
                if region_form:
                    out.append(("place_on", region_form))
                out.append((place, [place]))
                if not any(x[0] == "pick_up" for x in out):
                    out.append(("pick_up", ["approach", "pick_up"]))
    return out


def offered(cond_or_skill: str, functions: dict[str, Any] | None) -> bool:
    """Whether the scene's function library has every predicate a skill or condition needs."""
    if not functions:
        return True
    text = SKILLS[cond_or_skill].effect if cond_or_skill in SKILLS else cond_or_skill
    return all(p in functions for p, _ in atoms_of(text))


def required_skills(instructions: list[str], functions: dict[str, Any] | None = None
                    ) -> list[str]:
    """Atomic skills the instructions need (those the function library can observe)."""
    req: list[str] = []
    for ins in instructions:
        for _, skills in _literal_tasks(ins):
            for s in skills:
                if s not in req and offered(s, functions):
                    req.append(s)
    return req


def _task_from_skill(skill_id: str) -> AtomicTask:
    s = SKILLS[skill_id]
    return AtomicTask(id=s.id, description=s.description, parameters=list(s.parameters),
                      pre_conditions=list(s.pre), post_conditions=[s.effect])


def _composite_task(name: str, parts: list[str]) -> AtomicTask:
    place = SKILLS[parts[-1]]
    return AtomicTask(id=name, description=f"{name.replace('_', ' ').capitalize()}: move the "
                      "object to the target.", parameters=list(place.parameters),
                      post_conditions=[place.effect])


_OBJECT_FIRST = {"in", "on", "up", "grasped", "right_of", "left_of"}
_SKILL_PRIORITY = ("place_in", "place_on", "place_right_of", "place_left_of", "open", "close",
                   "turn_on", "turn_off", "place_near", "approach", "pick_up")


def _skill_atom(skill: str, atoms: list[tuple[str, tuple[str, ...]]], params: list[str] | None
                ) -> tuple[str, ...] | None:
    """The arguments of the atom that carries a skill's effect, or None."""
    pred = _EFFECT_PRED[skill]
    arity = len(SKILLS[skill].parameters)
    for p, args in atoms:
        if p != pred:
            continue
        vars_ = [a for a in args if a not in ROBOT_PARTS]
        if params is not None:
            vars_ = [a for a in vars_ if a in params]
        robot = any(a in ROBOT_PARTS for a in args)
        if len(vars_) == arity and (robot == (skill == "approach")):
            return tuple(vars_)
    return None


def _skill_of_task(task: dict[str, Any] | AtomicTask | AtomicOracle,
                   composite: bool = False) -> str | None:
    """Which atomic skill a (possibly foreign) task or oracle is, judged by effect, then id.

    Composite tasks ("put_in") are no atomic skill, unless `composite` asks for the skill
    whose effect they end with.
    """
    if isinstance(task, dict):
        task = (AtomicOracle.model_validate(task) if "correctness_oracle" in task
                else AtomicTask.model_validate(task))
    words = set(task.id.lower().split("_"))
    if words & _COMPOSITE and len(task.parameters) >= 2 and not composite:
        return None
    if isinstance(task, AtomicOracle):
        conds = [task.correctness_oracle]
    else:
        conds = list(task.post_conditions)
    atoms = [a for c in conds for a in atoms_of(c)]
    positive = [a for a in atoms if not re.search(r"\bnot\s+" + re.escape(a[0]) + r"\s*\(",
                                                 " ".join(conds))]
    if task.id in SKILLS and _skill_atom(task.id, positive, task.parameters or None):
        return task.id
    for skill in _SKILL_PRIORITY:
        if _skill_atom(skill, positive, task.parameters or None) is not None:
            if skill.startswith("place") and "pick" in words and not composite:
                return None
            return skill
    if task.id in SKILLS:
        return task.id
    if words & {"pick", "grasp", "lift"}:
        return "pick_up"
    return None


def _loophole(cond: str) -> str:
    """How a world state can pass an oracle that lacks `cond`."""
    text = _norm_expr(cond)
    if text.startswith("notgrasped"):
        return "the gripper still holds the object inside the target: it was not released"
    if text.startswith("grasped"):
        return "the object was knocked or tossed up, not held"
    if text.startswith("up"):
        return "the gripper closed on the object but never lifted it off its support"
    return "the task's effect is only partly checked"


def conjuncts(expr: str) -> set[str]:
    """The canonical top-level conjuncts of an expression (its text if it does not parse)."""
    from mango.oracle.expr import And, format_expression, parse_expression

    try:
        tree = parse_expression(expr)
    except Exception:
        return {_norm_expr(expr)}
    ops = tree.operands if isinstance(tree, And) else (tree,)
    return {_norm_expr(format_expression(op)) for op in ops}


# ----------------------------------------------------------------------------- the backend


class OfflinePlanner:
    """Deterministic rule-based backend for every MANGO role (not a language model)."""

    name = "offline"

    def __init__(self, **_opts: Any) -> None:
        self._handlers = {
            "module1.generate": self._m1_generate,
            "module1.assess.atomicity": self._m1_atomicity,
            "module1.assess.redundancy": self._m1_redundancy,
            "module1.assess.repetition": self._m1_repetition,
            "module1.judge": self._m1_judge,
            "module1.interpret": self._interpret,
            "module2.generate": self._m2_generate,
            "module2.generate_library": self._m2_generate_library,
            "module2.hack": self._m2_hack,
            "module2.judge": self._m2_judge,
            "module2.interpret": self._interpret,
            "module3.generate": self._m3_generate,
            "module3.assess.logic": self._m3_logic,
            "module3.assess.compliance": self._m3_compliance,
            "module3.assess.grounding": self._m3_grounding,
            "module3.judge": self._judge_from_reports,
            "module3.interpret": self._interpret,
        }

    def model_for(self, role: str) -> str:
        return MODEL_NAME

    def complete(self, call: AgentCall, schema: type[T]) -> T:
        handler = self._handlers.get(call.task)
        if handler is None:
            raise BackendError(f"the offline planner does not know the task '{call.task}'")
        answer = handler(call.context)
        if not isinstance(answer, schema):
            try:
                answer = schema.model_validate(answer.model_dump())
            except Exception as exc:
                raise BackendError(
                    f"offline planner answered {call.task} with {type(answer).__name__}, "
                    f"not {schema.__name__}: {exc}") from None
        return answer

    # ------------------------------------------------------------------ shared

    @staticmethod
    def _interpret(ctx: dict[str, Any]) -> Feedback:
        """The judge's instructions and every assessor issue, each once, in that order."""
        items: list[str] = list((ctx.get("verdict") or {}).get("refinement_instructions", []))
        for rep in ctx.get("reports", []):
            items.extend(f"[{rep.get('aspect', '')}] {i}" for i in rep.get("issues", []))
        out: dict[str, str] = {}
        for item in items:
            out.setdefault(re.sub(r"^\[[^\]]*\]\s*", "", item), item)
        return Feedback(feedback=list(out.values()))

    @staticmethod
    def _judge_from_reports(ctx: dict[str, Any], extra: list[str] | None = None) -> JudgeVerdict:
        issues = [f"[{r.get('aspect', '')}] {i}" for r in ctx.get("reports", [])
                  for i in r.get("issues", [])]
        issues.extend(extra or [])
        if not issues:
            return JudgeVerdict(verdict="APPROVED", reasons=["no assessor reports a problem"])
        return JudgeVerdict(verdict="REJECTED", reasons=[f"{len(issues)} open issue(s)"],
                            refinement_instructions=issues)

    # ------------------------------------------------------------------ module I

    def _m1_generate(self, ctx: dict[str, Any]) -> AtomicLibraryAnswer:
        instructions: list[str] = ctx.get("instructions", [])
        functions = ctx.get("functions")
        previous = ctx.get("previous")
        feedback: list[str] = ctx.get("feedback", [])
        if previous is None or not feedback:
            tasks: dict[str, AtomicTask] = {}
            for ins in instructions:
                for name, parts in _literal_tasks(ins):
                    if name not in tasks:
                        tasks[name] = (_task_from_skill(name) if name in SKILLS
                                       else _composite_task(name, parts))
            return AtomicLibraryAnswer(atomic_library=list(tasks.values()))
        lib = {t["id"]: AtomicTask.model_validate(t) for t in previous["atomic_library"]}
        edited = False
        for line in feedback:
            names = _QUOTED.findall(line)
            low = line.lower()
            if "split" in low and len(names) >= 2:
                lib.pop(names[0], None)
                for n in names[1:]:
                    if n in SKILLS and n not in lib and offered(n, functions):
                        lib[n] = _task_from_skill(n)
                edited = True
            elif ("merge" in low or "parameteriz" in low) and len(names) >= 2:
                for n in names[:-1]:
                    lib.pop(n, None)
                if names[-1] in SKILLS:
                    lib.setdefault(names[-1], _task_from_skill(names[-1]))
                edited = True
            elif ("remove" in low or "drop" in low) and names:
                lib.pop(names[0], None)
                edited = True
            elif "add" in low and names:
                for n in names:
                    if n in SKILLS and offered(n, functions):
                        lib.setdefault(n, _task_from_skill(n))
                edited = True
        if not edited:  # free-text feedback: fall back to the atomic decomposition
            lib = {s: _task_from_skill(s) for s in required_skills(instructions, functions)}
        return AtomicLibraryAnswer(atomic_library=list(lib.values()))

    @staticmethod
    def _m1_tasks(ctx: dict[str, Any]) -> list[AtomicTask]:
        return [AtomicTask.model_validate(t) for t in ctx["candidate"]["atomic_library"]]

    def _m1_atomicity(self, ctx: dict[str, Any]) -> AssessorReport:
        issues = []
        for t in self._m1_tasks(ctx):
            words = t.id.lower().split("_")
            if words[0] in _COMPOSITE or ("pick" in words and "place" in words):
                place = _skill_of_task(AtomicTask(id="x", parameters=t.parameters,
                                                  post_conditions=t.post_conditions))
                place = place if place and place.startswith("place") else "place_on"
                issues.append(f"'{t.id}' is composite (approach, pick and place): split "
                              f"'{t.id}' into 'approach', 'pick_up' and '{place}'")
        return AssessorReport(issues=issues, score=max(0, 10 - 3 * len(issues)))

    def _m1_redundancy(self, ctx: dict[str, Any]) -> AssessorReport:
        tasks = self._m1_tasks(ctx)
        needed = set(required_skills(ctx.get("instructions", []), ctx.get("functions")))
        issues = []
        effects: dict[str, str] = {}
        for t in tasks:
            eff = " and ".join(sorted(_norm_expr(c) for c in t.post_conditions))
            words = t.id.lower().split("_")
            if words[0] in _COMPOSITE:
                continue  # atomicity splits it; its effect is not a duplicate
            if eff and eff in effects:
                issues.append(f"'{t.id}' has the same effect as '{effects[eff]}': remove '{t.id}'")
                continue
            effects.setdefault(eff, t.id)
            skill = _skill_of_task(t)
            if skill is not None and skill not in needed and t.id in SKILLS:
                issues.append(f"no instruction needs '{t.id}': remove '{t.id}'")
        return AssessorReport(issues=issues, score=max(0, 10 - 3 * len(issues)))

    def _m1_repetition(self, ctx: dict[str, Any]) -> AssessorReport:
        tasks = self._m1_tasks(ctx)
        issues = []
        by_skill: dict[str, list[str]] = {}
        for t in tasks:
            skill = _skill_of_task(t)
            if skill is not None and t.id != skill:
                by_skill.setdefault(skill, []).append(t.id)
        for skill, ids in by_skill.items():
            if len(ids) > 1 or (ids and any(
                    not set(tokens_of(i)) <= set(tokens_of(skill)) | _COMPOSITE for i in ids)):
                quoted = ", ".join(f"'{i}'" for i in ids)
                issues.append(f"{quoted} differ only by the object: merge {quoted} into one "
                              f"parameterized task '{skill}'")
        return AssessorReport(issues=issues, score=max(0, 10 - 3 * len(issues)))

    def _m1_judge(self, ctx: dict[str, Any]) -> JudgeVerdict:
        tasks = self._m1_tasks(ctx)
        have = {_skill_of_task(t) for t in tasks} | {t.id for t in tasks}
        missing = [s for s in required_skills(ctx.get("instructions", []), ctx.get("functions"))
                   if s not in have]
        extra = [f"the library does not cover the instructions: add '{s}'" for s in missing]
        return self._judge_from_reports(ctx, extra)

    # ------------------------------------------------------------------ module II

    def _m2_generate(self, ctx: dict[str, Any]) -> AtomicOracle:
        task = AtomicTask.model_validate(ctx["task"])
        previous = ctx.get("previous")
        expr = None
        if previous is not None:
            expr = previous["correctness_oracle"]
            for line in ctx.get("feedback", []):
                low = line.lower()
                if "add" in low or "require" in low:
                    for cond in _QUOTED.findall(line):
                        if atoms_of(cond) and not conjuncts(cond) <= conjuncts(expr):
                            expr = f"{expr} and {cond.strip()}"
        if expr is None:
            conds = [c for c in task.post_conditions if atoms_of(c)]
            if conds:
                expr = " and ".join(conds)
            else:
                skill = _skill_of_task(task, composite=True) or "pick_up"
                params = task.parameters or list(SKILLS[skill].parameters)
                mapping = dict(zip(SKILLS[skill].parameters, params, strict=False))
                expr = substitute(SKILLS[skill].effect, mapping)
        return AtomicOracle(id=task.id, description=task.description,
                            parameters=task.parameters, correctness_oracle=expr)

    def _m2_generate_library(self, ctx: dict[str, Any]) -> AtomicOracleLibrary:
        lib = ctx.get("atomic_library")
        if lib:
            tasks = [AtomicTask.model_validate(t) for t in lib]
        else:
            tasks = self._m1_generate({"instructions": ctx.get("instructions", [])}).atomic_library
        out = []
        for t in tasks:
            o = self._m2_generate({"task": t.model_dump()})
            out.append(o)
        return AtomicOracleLibrary(atomic_oracle_library=out)

    def _m2_hack(self, ctx: dict[str, Any]) -> HackerReport:
        task = AtomicTask.model_validate(ctx["task"])
        oracle = AtomicOracle.model_validate(ctx["oracle"])
        functions: dict[str, Any] = ctx.get("functions", {})
        atoms = atoms_of(oracle.correctness_oracle)
        issues: list[str] = []
        if not atoms:
            return HackerReport(exploit_found=True, counterexample="any state at all",
                                issues=[f"'{oracle.id}' checks no predicate: it always passes"])
        used = {a for _, args in atoms for a in args}
        used |= set(ROBOT_PARTS)
        for p in oracle.parameters:
            if p not in used:
                issues.append(f"'{oracle.id}' ignores its parameter '{p}': any value passes")
        for pred, args in atoms:
            spec = functions.get(pred)
            if functions and spec is None:
                issues.append(f"'{pred}' is not in the function library")
            elif spec is not None and len(spec.get("arguments", [])) != len(args):
                issues.append(f"'{pred}' takes {len(spec['arguments'])} argument(s), not "
                              f"{len(args)}")
        skill = _skill_of_task(task, composite=True) or (task.id if task.id in SKILLS else None)
        counter = ""
        if skill is not None:
            s = SKILLS[skill]
            mapping = dict(zip(s.parameters, oracle.parameters or s.parameters, strict=False))
            present = conjuncts(oracle.correctness_oracle)
            needed = [substitute(g, mapping) for g in (s.effect, *s.guards)
                      if offered(g, functions)]
            for cond in needed:
                if not conjuncts(cond) <= present:
                    issues.append(f"'{oracle.id}' passes when the task was not done: "
                                  f"add '{cond}'")
                    if not counter:
                        counter = (f"a state where '{oracle.correctness_oracle}' holds while "
                                   f"'{cond}' is false: {_loophole(cond)}")
        if issues:
            return HackerReport(exploit_found=True, counterexample=counter, issues=issues)
        return HackerReport(exploit_found=False)

    def _m2_judge(self, ctx: dict[str, Any]) -> JudgeVerdict:
        lib = AtomicOracleLibrary.model_validate(ctx["candidate"])
        functions: dict[str, Any] = ctx.get("functions", {})
        issues: list[str] = []
        for task in ctx.get("atomic_library") or []:
            if lib.get(task["id"]) is None:
                issues.append(f"task '{task['id']}' has no oracle")
        object_names: dict[str, str] = {}
        for o in lib.atomic_oracle_library:
            for pred, args in atoms_of(o.correctness_oracle):
                if functions and pred not in functions:
                    issues.append(f"'{o.id}': predicate '{pred}' is not in the function library")
                for a in args:
                    if a not in o.parameters and a not in ROBOT_PARTS:
                        issues.append(f"'{o.id}': '{a}' is not one of its parameters "
                                      f"{o.parameters}")
                if pred in _OBJECT_FIRST and args and args[0] in o.parameters:
                    object_names.setdefault(args[0], o.id)
        if len(object_names) > 1:
            names = ", ".join(f"'{p}' ({i})" for p, i in object_names.items())
            issues.append("the manipulated object is named differently across oracles: "
                          f"{names}; use one parameter name")
        if issues:
            return JudgeVerdict(verdict="REJECTED", reasons=issues, refinement_instructions=issues)
        return JudgeVerdict(verdict="APPROVED", reasons=["consistent library"])

    # ------------------------------------------------------------------ module III

    def _m3_generate(self, ctx: dict[str, Any]) -> OracleCandidate:
        scene = SceneTask.model_validate(ctx["scene"])
        instruction = ctx["instruction"]
        parsed = ground_instruction(instruction, scene)
        binder = _LibraryBinder(ctx.get("atomic_oracle_library") or [],
                                ctx.get("atomic_library") or [], ctx.get("functions"))
        return build_plan(instruction, parsed.goals, binder, Grounder(scene))

    @staticmethod
    def _m3_candidate(ctx: dict[str, Any]) -> OracleCandidate | None:
        try:
            return OracleCandidate.model_validate(ctx["candidate"])
        except Exception:
            return None

    def _m3_logic(self, ctx: dict[str, Any]) -> AssessorReport:
        cand = self._m3_candidate(ctx)
        if cand is None:
            return AssessorReport(issues=["the candidate is not a valid oracle"], score=0)
        scene = SceneTask.model_validate(ctx["scene"])
        issues = logic_issues(cand, scene)
        return AssessorReport(issues=issues, score=max(0, 10 - 3 * len(issues)))

    def _m3_compliance(self, ctx: dict[str, Any]) -> AssessorReport:
        cand = self._m3_candidate(ctx)
        if cand is None:
            return AssessorReport(issues=["the candidate is not a valid oracle"], score=0)
        lib = [AtomicOracle.model_validate(o) for o in ctx.get("atomic_oracle_library") or []]
        issues = compliance_issues(cand, lib)
        return AssessorReport(issues=issues, score=max(0, 10 - 2 * len(issues)))

    def _m3_grounding(self, ctx: dict[str, Any]) -> AssessorReport:
        cand = self._m3_candidate(ctx)
        if cand is None:
            return AssessorReport(issues=["the candidate is not a valid oracle"], score=0)
        scene = SceneTask.model_validate(ctx["scene"])
        issues = grounding_issues(cand, scene)
        return AssessorReport(issues=issues, score=max(0, 10 - 2 * len(issues)))


# ----------------------------------------------------------------------------- planning


class _LibraryBinder:
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
            _skill_of_task(t) == skill for t in self.tasks)

    def _find(self, skill: str) -> AtomicOracle | None:
        best, best_score = None, -1
        for o in self.oracles:
            atomic = _skill_of_task(o) == skill
            if not atomic and _skill_of_task(o, composite=True) != skill:
                continue
            score = (4 * atomic + 2 * (o.id == skill)
                     + len(set(o.id.split("_")) & set(skill.split("_"))))
            if score > best_score:
                best, best_score = o, score
        return best

    def bind(self, skill: str, values: list[str]) -> tuple[str, dict[str, str], str]:
        """(action_id, parameters, handle_as) of a skill applied to ids."""
        s = SKILLS[skill]
        oracle = self._find(skill)
        if oracle is not None:
            atom = _skill_atom(skill, atoms_of(oracle.correctness_oracle), oracle.parameters)
            mapping = dict(zip(atom or oracle.parameters, values, strict=False))
            for p in oracle.parameters:
                mapping.setdefault(p, values[0])
            params = {p: mapping[p] for p in oracle.parameters}
            return oracle.id, params, substitute(oracle.correctness_oracle, mapping)
        task = next((t for t in self.tasks if _skill_of_task(t) == skill), None)
        if task is not None and task.post_conditions:
            mapping = dict(zip(task.parameters, values, strict=False))
            return task.id, mapping, substitute(" and ".join(task.post_conditions), mapping)
        mapping = dict(zip(s.parameters, values, strict=False))
        return skill, mapping, substitute(s.effect, mapping)


_SPATIAL_SKILL = {("place", "right_of"): "place_right_of", ("place", "left_of"): "place_left_of",
                  ("place", "near"): "place_near", ("push", "right_of"): "push_near",
                  ("push", "left_of"): "push_near", ("push", "near"): "push_near"}


def _goal_step(goal: Goal, binder: _LibraryBinder) -> dict[str, Any]:
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


def _related(a: str | None, b: str | None) -> bool:
    return bool(a and b and (a == b or a.startswith(b + "_") or b.startswith(a + "_")))


def _depends(later: Goal, earlier: Goal) -> bool:
    if later.after_previous:
        return True
    if later.kind in {"close", "turn_on", "turn_off"} and earlier.kind == "pick_place":
        return later.kind == "close" and _related(earlier.target, later.obj)
    if later.kind == "pick_place" and earlier.kind == "open":
        return _related(later.target, earlier.obj)
    if later.kind == "pick_place" and earlier.kind == "pick_place":
        return later.target == earlier.obj  # stacking on what was just placed
    return False


def build_plan(instruction: str, goals: list[Goal], binder: _LibraryBinder,
               grounder: Grounder) -> OracleCandidate:
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


# ----------------------------------------------------------------------------- rule checks


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
    for path, act in acts:
        key = f"{act.action_id}{sorted(act.parameters.items())}"
        if key in seen:
            issues.append(f"step {path} repeats step {seen[key]} ({act.action_id})")
        seen.setdefault(key, path)
        atoms = [a for m in act.monitoring for a in atoms_of(m.handle_as)]
        preds = {p for p, _ in atoms}
        if preds & {"up", "grasped"} and not preds & {"in", "on", "right_of", "left_of"}:
            for _, args in atoms:
                picks.setdefault(args[0], []).append(path)
        pushed = bool(set(act.action_id.lower().split("_")) & {"push", "slide", "shove", "nudge"})
        for p, args in atoms:
            if (p in {"in", "on", "right_of", "left_of", "near"} and len(args) == 2
                    and args[0] not in ROBOT_PARTS):
                places.setdefault(args[0], []).append((path, args[1]))
                if pushed:
                    pushes.add(path)
            if p == "close" and args:
                closes.append((path, args[0]))
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
                if _related(target, fixture) and ppath not in before.get(path, set()):
                    issues.append(f"step {path} closes '{fixture}' but placing '{obj}' into it "
                                  f"(step {ppath}) is not required to come first")
    parsed = ground_instruction(cand.instruction, scene)
    for goal in parsed.goals:
        if goal.kind in {"pick_place", "push"}:
            ok = any(t in {goal.target, goal.landmark if goal.spatial else None}
                     for _, t in places.get(goal.obj, []))
            if not ok:
                issues.append(f"the instruction asks for '{goal.obj}' {goal.relation} "
                              f"'{goal.target}' but no step achieves it")
        elif goal.kind in {"open", "close", "turn_on", "turn_off"}:
            pred = _EFFECT_PRED[goal.kind]
            if not any(p == pred and goal.obj in a
                       for _, act in acts for m in act.monitoring
                       for p, a in atoms_of(m.handle_as)):
                issues.append(f"the instruction asks to {goal.kind.replace('_', ' ')} "
                              f"'{goal.obj}' but no step checks {pred}({goal.obj})")
    if cand.execution_mode == "sequential" and len(cand.plan) > 1 and not re.search(
            r"\b(then|after|before|first|finally|next)\b", cand.instruction.lower()):
        ents = [set(_step_entities(n)) for n in cand.plan]
        independent = all(
            not any(_related(a, b) for a in ents[i] for b in ents[j])
            for i in range(len(ents)) for j in range(i + 1, len(ents)))
        if independent:
            issues.append("the top-level steps share no object and the instruction sets no "
                          "order: use execution_mode any_order")
    return issues


def _step_entities(node: Any) -> list[str]:
    out: list[str] = []
    for child in node.steps or []:
        out.extend(_step_entities(child))
    for act in node.actions or []:
        out.extend(act.parameters.values())
    return out


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
            if _norm_expr(expected) != _norm_expr(mon.handle_as):
                issues.append(f"{where}: handle_as '{mon.handle_as}' differs from the library "
                              f"oracle '{oracle.id}' with parameters substituted: "
                              f"use '{expected}'")
            if act.action_id != mon.oracle_id and act.action_id not in by_id:
                issues.append(f"step {path}: action_id '{act.action_id}' is not a library task")
    return issues


def grounding_issues(cand: OracleCandidate, scene: SceneTask) -> list[str]:
    from mango.oracle.world_state import ROBOT_PARTS

    g = Grounder(scene)
    known = set(scene.entities()) | set(ROBOT_PARTS)
    issues: list[str] = []
    reported: set[str] = set()
    used: set[str] = set()
    for path, act in cand.actions():
        ids = list(act.parameters.values())
        atoms = [a for m in act.monitoring for a in atoms_of(m.handle_as)]
        ids.extend(x for _, args in atoms for x in args)
        for ent in ids:
            used.add(ent)
            if ent not in known and ent not in reported:
                reported.add(ent)
                closest = g.rank(tokens_of(ent))
                hint = f" (closest scene id: '{closest[0][0]}')" if closest and closest[0][
                    1] > 0.3 else ""
                issues.append(f"step {path}: '{ent}' does not exist in the scene{hint}")
        for pred, args in atoms:
            if len(args) != 2 or args[1] not in known:
                continue
            target = args[1]
            if pred == "in" and not g.is_region(target) and not g.is_movable(target):
                region = next((c for c in g.children(target) if g.is_region(c)), None)
                if region:
                    issues.append(f"step {path}: in({args[0]}, {target}) needs a region: use "
                                  f"'{region}'")
            if pred == "in" and g.is_movable(target):
                region = next((c for c in g.children(target) if g.is_region(c)), None)
                if region:
                    issues.append(f"step {path}: in({args[0]}, {target}) should use the "
                                  f"container's region '{region}'")
            if pred == "on" and g.kind(target) in {"fixture", "device"}:
                region = next((c for c in g.children(target) if g.is_region(c)), None)
                if region:
                    issues.append(f"step {path}: on({args[0]}, {target}) should use the region "
                                  f"'{region}'")
    parsed = ground_instruction(cand.instruction, scene)
    for goal in parsed.goals:
        if goal.obj not in used:
            issues.append(f"the instruction refers to '{goal.obj}' but the oracle never uses it")
    issues.extend(f"instruction: {p}" for p in parsed.problems)
    return issues
