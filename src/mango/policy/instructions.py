"""Which of a scene's expert steps an instruction asks for: the language conditioning of the
scripted expert.

The instruction is read by the generator's parser and grounder (`generation.offline`: one
parser for oracles and for the expert) into goals over scene ids; each goal is then matched to
the step of the scene's `expert:` plan that achieves it (a pick-and-place of that object to
that destination, closing that fixture, turning on that device). The expert knows exactly
those skills, so an instruction outside them is refused with the reason, never guessed at.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from mango.generation.models import SceneTask
from mango.generation.offline.grounding import Goal, ground_instruction
from mango.generation.offline.lexicon import tokens_of
from mango.generation.offline.parsing import parse_instruction_clauses
from mango.policy.presets import PolicyError
from mango.sim.scene import ARTICULATED, SceneSpec, SkillSpec


class UngroundedInstruction(PolicyError):
    """The expert cannot carry out an instruction in this scene (the message says why)."""


@dataclass(frozen=True)
class ExpertSubgoal:
    """An instruction read as expert steps (0-based indices into `scene.expert`)."""

    instruction: str
    steps: tuple[int, ...]
    whole_task: bool


def scene_task(scene: SceneSpec) -> SceneTask:
    """The grounding input of a sim scene (spec §4 scene objects)."""
    return SceneTask.model_validate(scene.task_objects()["task_objects"][0])  # type: ignore[index]


def _same_place(scene: SceneSpec, a: str | None, b: str | None) -> bool:
    """Whether two destination ids mean one place: equal, or a fixture's or container's region
    and its parent (a spot on the table is not "the table")."""
    if a is None or b is None:
        return False
    if a == b:
        return True
    parents = {r.id: r.parent for r in scene.regions if r.parent != scene.table.id}
    return parents.get(a) == b or parents.get(b) == a


def _owner(scene: SceneSpec, ref: str) -> str:
    """The entity a joint, a fixture or a region of a fixture's part belongs to."""
    with contextlib.suppress(KeyError):
        return scene.joint_owner(ref).id
    parents = {r.id: r.parent for r in scene.regions}
    return parents.get(ref, ref)


def _skill_name(s: SkillSpec) -> str:
    return {"pick_place": "pick_place", "close": "close", "turn_on": "turn_on", "open": "open",
            "push": "push"}[s.skill]


# the parser's canonical verbs -> the expert skill that carries them out (a lone "pick" is
# refused later, once grounded: "pick up X and place it in Y" is one pick-and-place)
_VERB_SKILL = {"place": "pick_place", "pick": "pick_place", "close": "close",
               "turn_on": "turn_on"}


def _match(scene: SceneSpec, goal: Goal) -> int:
    """The expert step that achieves one grounded goal, or `UngroundedInstruction`."""
    known = sorted({_skill_name(s) for s in scene.expert})
    kind = "turn_on" if goal.kind == "turn_on" else goal.kind
    if kind not in known:
        raise UngroundedInstruction(
            f"'{goal.text}': the expert has no '{goal.kind}' skill in scene {scene.name} "
            f"(it knows: {', '.join(known)})")
    for k, s in enumerate(scene.expert):
        if s.skill != kind:
            continue
        if kind == "pick_place" and s.obj == goal.obj and _same_place(scene, s.target,
                                                                      goal.target):
            return k
        if kind in ("close", "open") and _owner(scene, s.joint or "") == _owner(scene, goal.obj):
            return k
        if kind == "turn_on" and s.device == goal.obj:
            return k
        if kind == "push" and s.obj == goal.obj and _same_place(scene, s.target, goal.target):
            return k
    if kind in ("pick_place", "push"):
        moves = [s for s in scene.expert if s.skill == kind and s.obj == goal.obj]
        verb = "puts" if kind == "pick_place" else "pushes"
        if moves:
            raise UngroundedInstruction(
                f"'{goal.text}': the expert {verb} {goal.obj} only {moves[0].relation} "
                f"{moves[0].target}, not {goal.relation} {goal.target}")
        objs = ", ".join(s.obj or "" for s in scene.expert if s.skill == "pick_place")
        raise UngroundedInstruction(
            f"'{goal.text}': the expert's plan moves no {goal.obj} (it moves: {objs})")
    raise UngroundedInstruction(f"'{goal.text}': no expert step acts on {goal.obj}")


def _fixture_words(scene: SceneSpec, s: SkillSpec) -> set[str]:
    """What people call the fixture a close or open step acts on: its description, id and
    part."""
    e = scene.joint_owner(s.joint or "")
    return set(tokens_of(e.description or "")) | set(tokens_of(e.id)) | {ARTICULATED[e.shape]}


def _step_by_part(scene: SceneSpec, skill: str, text: str) -> int | None:
    """A close or open clause whose noun phrase names a fixture's part ("close the drawer"),
    which the scene objects do not list as an entity of its own: the step of that skill whose
    fixture's words share the phrase's content words."""
    words = set(tokens_of(text)) - {"close", "shut", "open", "the", "a", "an"}
    best, best_n = None, 0
    for k, s in enumerate(scene.expert):
        if s.skill == skill:
            n = len(words & _fixture_words(scene, s))
            if n > best_n:
                best, best_n = k, n
    return best


def expert_subgoal(scene: SceneSpec, instruction: str) -> ExpertSubgoal:
    """The expert steps an instruction asks for, in the instruction's order.

    The scene's own instruction (or none) is the whole plan; anything the expert cannot ground
    raises `UngroundedInstruction` naming the clause and the reason."""
    text = instruction.strip()
    n = len(scene.expert)
    if not text or " ".join(text.lower().split()) == " ".join(scene.instruction.lower().split()):
        return ExpertSubgoal(instruction, tuple(range(n)), True)
    clauses = parse_instruction_clauses(text)
    known = {_skill_name(s) for s in scene.expert}
    for c in clauses:
        kind = _VERB_SKILL.get(c.verb, c.verb)
        if kind not in known:
            raise UngroundedInstruction(
                f"'{c.text}': the expert has no '{c.verb}' skill in scene {scene.name} "
                f"(it knows: {', '.join(sorted(known))})")
    result = ground_instruction(text, scene_task(scene))
    order = {c.text: i for i, c in reversed(list(enumerate(clauses)))}
    found: list[tuple[int, int]] = []  # (clause index, expert step)
    problems = list(result.problems)
    if problems:
        # a part the scene does not list as an entity ("close the drawer") is still a step
        for i, clause in enumerate(clauses):
            if clause.verb in ("close", "open") and clause.obj is not None:
                k = _step_by_part(scene, clause.verb, clause.obj.text)
                if k is not None:
                    found.append((i, k))
                    problems = [p for p in problems if f"'{clause.obj.text}'" not in p]
    if problems:
        raise UngroundedInstruction(f"cannot ground '{text}' in scene {scene.name}: "
                                    + "; ".join(problems))
    found += [(order.get(g.text, len(clauses)), _match(scene, g)) for g in result.goals]
    if not found:
        raise UngroundedInstruction(f"'{text}' asks the expert for nothing it can do")
    steps = [k for _, k in sorted(found, key=lambda e: e[0])]
    ordered = tuple(dict.fromkeys(steps))
    return ExpertSubgoal(instruction, ordered, sorted(ordered) == list(range(n)))
