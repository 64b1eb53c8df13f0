"""The robot skills the offline planner knows, and which skill a (foreign) task or oracle is.

Each skill has parameters, an effect (its post-condition) and the guards the Oracle Hacker
demands besides the effect (a placed object was released, a picked one is off its support).
A task or oracle written by someone else is recognized by its effect first, then by its id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mango.generation.models import AtomicOracle, AtomicTask
from mango.generation.offline.expressions import atoms_of, positive_atoms
from mango.generation.offline.grounding import Goal
from mango.generation.offline.lexicon import LEXICON, tokens_of
from mango.generation.offline.parsing import parse_instruction_clauses
from mango.oracle.expr import Atom
from mango.oracle.world_state import ROBOT_PARTS


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
RELATION_SKILL = {"in": "place_in", "on": "place_on", "right_of": "place_right_of",
                  "left_of": "place_left_of", "near": "place_near"}
EFFECT_PRED = {sid: atoms_of(s.effect)[0].predicate for sid, s in SKILLS.items()}
# predicates whose first argument is the manipulated object
OBJECT_FIRST = {"in", "on", "up", "grasped", "right_of", "left_of"}
_SKILL_PRIORITY = ("place_in", "place_on", "place_right_of", "place_left_of", "open", "close",
                   "turn_on", "turn_off", "place_near", "approach", "pick_up")
_SPATIAL = {"right_of", "left_of", "near"}


def skills_for_goal(goal: Goal) -> list[str]:
    if goal.kind == "pick_place":
        return ["approach", "pick_up", RELATION_SKILL.get(goal.relation or "on", "place_on")]
    if goal.kind == "pick":
        return ["approach", "pick_up"]
    if goal.kind == "push":
        return ["approach", "push_on" if goal.relation in {"on", "in"} else "push_near"]
    return [goal.kind]


def _place_relation(relation: str | None, target_text: str) -> str:
    """The predicate-level relation of a placing clause, read without a scene."""
    rel = relation or "on"
    if rel == "to":
        words = tokens_of(target_text)
        rel = "in" if words and words[-1].rstrip("s") in LEXICON.containers else "on"
    return {"front_of": "near", "behind": "near", "under": "near"}.get(rel, rel)


def instruction_skills(instruction: str) -> list[str]:
    """The atomic skills an instruction needs, clause by clause (repeats included).

    A spatial relation may be checked on a region the scene names ("the area to the right
    of the plate"): the "on" form is needed as well. A pushed object may end on a region.
    """
    out: list[str] = []
    picked = False  # a clause of this instruction already picks the object up
    for c in parse_instruction_clauses(instruction):
        word = c.text.split()[0] if c.text else c.verb
        if c.verb in {"open", "close", "turn_on", "turn_off"}:
            out.append(c.verb)
        elif c.verb == "pick":
            out.extend(["approach", "pick_up"])
            picked = True
        elif c.verb == "push":
            push = "push_on" if c.relation in {"on", "in", "to", "onto"} else "push_near"
            out.extend(["approach", push, *(["push_on"] if push == "push_near" else [])])
        else:
            rel = _place_relation(c.relation, c.target.text if c.target else "")
            place = RELATION_SKILL.get(rel, "place_on")
            region_form = ["place_on"] if rel in _SPATIAL else []
            if word in LEXICON.composite_verbs:  # one verb that is really pick + place
                out.extend(["approach", "pick_up", place, *region_form])
            else:
                out.extend([*region_form, place])
                if not picked:
                    out.extend(["approach", "pick_up"])
                    picked = True
    return out


def offered(cond_or_skill: str, functions: dict[str, Any] | None) -> bool:
    """Whether the scene's function library has every predicate a skill or condition needs."""
    if not functions:
        return True
    text = SKILLS[cond_or_skill].effect if cond_or_skill in SKILLS else cond_or_skill
    return all(a.predicate in functions for a in atoms_of(text))


def required_skills(instructions: list[str], functions: dict[str, Any] | None = None
                    ) -> list[str]:
    """Atomic skills the instructions need (those the function library can observe), and
    the skills that establish their pre-conditions: closing needs a drawer open, so a library
    that closes also opens (a task whose drawer starts closed says "open ... and put ...")."""
    req: list[str] = []
    for ins in instructions:
        for s in instruction_skills(ins):
            if s not in req and offered(s, functions):
                req.append(s)
    for s in req:  # grows while it is walked: the closure
        for pre in SKILLS[s].pre:
            maker = next((k for k, sk in SKILLS.items() if sk.effect == pre), None)
            if maker is not None and maker not in req and offered(maker, functions):
                req.append(maker)
    return req


def task_from_skill(skill_id: str) -> AtomicTask:
    s = SKILLS[skill_id]
    return AtomicTask(id=s.id, description=s.description, parameters=list(s.parameters),
                      pre_conditions=list(s.pre), post_conditions=[s.effect])


def skill_atom(skill: str, atoms: list[Atom], params: list[str] | None
               ) -> tuple[str, ...] | None:
    """The arguments of the atom that carries a skill's effect, or None."""
    pred = EFFECT_PRED[skill]
    arity = len(SKILLS[skill].parameters)
    for atom in atoms:
        if atom.predicate != pred:
            continue
        vars_ = [a for a in atom.args if a not in ROBOT_PARTS]
        if params is not None:
            vars_ = [a for a in vars_ if a in params]
        robot = any(a in ROBOT_PARTS for a in atom.args)
        if len(vars_) == arity and (robot == (skill == "approach")):
            return tuple(vars_)
    return None


def skill_of_task(task: dict[str, Any] | AtomicTask | AtomicOracle,
                  composite: bool = False) -> str | None:
    """Which atomic skill a (possibly foreign) task or oracle is, judged by effect, then id.

    Composite tasks ("put_in") are no atomic skill, unless `composite` asks for the skill
    whose effect they end with.
    """
    if isinstance(task, dict):
        task = (AtomicOracle.model_validate(task) if "correctness_oracle" in task
                else AtomicTask.model_validate(task))
    words = set(task.id.lower().split("_"))
    if words & LEXICON.composite_verbs and len(task.parameters) >= 2 and not composite:
        return None
    if isinstance(task, AtomicOracle):
        conds = [task.correctness_oracle]
    else:
        conds = list(task.post_conditions)
    positive = [a for c in conds for a in positive_atoms(c)]
    if task.id in SKILLS and skill_atom(task.id, positive, task.parameters or None):
        return task.id
    for skill in _SKILL_PRIORITY:
        if skill_atom(skill, positive, task.parameters or None) is not None:
            if skill.startswith("place") and "pick" in words and not composite:
                return None
            return skill
    if task.id in SKILLS:
        return task.id
    if words & {"pick", "grasp", "lift"}:
        return "pick_up"
    return None
