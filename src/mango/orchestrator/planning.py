"""The plan phase: an instruction → atomic subgoals with an `ordered` flag.

For the scene's own task the fine-grained oracle supplies the plan (each top-level oracle step
is one subgoal, its execution mode the `ordered` flag); another instruction is read by the
expert's grounding (the generator's parser) into the expert steps it names. Each subgoal's
instruction is phrased so that the language-conditioned expert grounds it back to the same
step — checked here, so a plan never hands the VLA words it cannot follow.
"""

from __future__ import annotations

import contextlib

from mango.oracle.model import FineGrainedOracle, load_oracle
from mango.oracle.world_state import WorldState
from mango.orchestrator.schemas import Plan, Subgoal
from mango.policy.instructions import UngroundedInstruction, expert_subgoal
from mango.sim.expert.milestones import task_milestones
from mango.sim.runner import load_oracle_json, milestone_path, oracle_actions
from mango.sim.scene import SceneSpec, SkillSpec

_DROP = {"region", "contain", "1", "2", "3"}


def entity_phrase(scene: SceneSpec, entity_id: str) -> str:
    """How people call an entity: its description, else its id's words ("basket")."""
    try:
        e = scene.entity(entity_id)
    except KeyError:
        e = None
    if e is not None and e.description:
        return e.description
    words = [w for w in entity_id.split("_") if not w.isdigit()]
    return " ".join(words)


# a side word of a table region's id -> how an empty-space destination says it
_SIDES = {"right": "right of", "left": "left of", "front": "in front of", "back": "behind"}


def part_phrase(scene: SceneSpec, region_id: str) -> str:
    """How people call a fixture's part by its region ("the top drawer of the wooden
    cabinet")."""
    region = scene.region(region_id)
    extra = [w for w in region_id.split("_") if w not in _DROP and
             w not in region.parent.split("_")]
    return f"the {' '.join([*extra, region.part])} of the {entity_phrase(scene, region.parent)}"


def _destination_phrases(scene: SceneSpec, s: SkillSpec) -> list[tuple[str, str]]:
    """(instruction tail, place phrasing) candidates for a pick-and-place destination."""
    target = s.target or ""
    rel = s.relation
    try:
        region = scene.region(target)
    except KeyError:
        region = None
    if region is None:
        p = entity_phrase(scene, target)
        return [(f"{rel} the {p}", f"{rel} the {p}")]
    out: list[tuple[str, str]] = []
    words = [w for w in target.split("_") if w not in _DROP]
    on_table = region.parent == scene.table.id
    for side, space in _SIDES.items():
        if side in words and on_table:
            land = [w for w in words if w not in (side, "living", "room", "table", "kitchen",
                                                  "main", "study")]
            lp = " ".join(land) or entity_phrase(scene, scene.table.id)
            out.append((f"to the {side} of the {lp}", f"empty space {space} the {lp}"))
    parent = entity_phrase(scene, region.parent)
    if region.part != "base":
        out.append((f"{rel} {part_phrase(scene, target)}", f"{rel} the {parent}"))
    if ("back" in words or "front" in words) and not on_table:
        side = "back" if "back" in words else "front"
        out.append((f"{rel} the {side} compartment of the {parent}", f"{rel} the {parent}"))
    out.append((f"{rel} the {parent}", f"{rel} the {parent}"))
    return out


def subgoal_texts(scene: SceneSpec, k: int) -> tuple[list[str], str | None, str | None]:
    """Instructions for expert step k (first: the plan's; the rest: rewrites), the object
    phrase and the place phrasing; each instruction grounds back to step k."""
    s = scene.expert[k]
    cands: list[tuple[str, str | None]] = []
    obj_phrase = None
    if s.skill == "pick_place":
        obj_phrase = entity_phrase(scene, s.obj or "")
        for tail, place in _destination_phrases(scene, s):
            cands.append((f"put the {obj_phrase} {tail}", place))
            cands.append((f"pick up the {obj_phrase} and place it {tail}", place))
    elif s.skill in ("close", "open"):
        owner = scene.joint_owner(s.joint or "")
        with contextlib.suppress(KeyError):  # a drawer's region: the part by its name
            cands.append((f"{s.skill} {part_phrase(scene, s.joint or '')}", None))
        part = "door" if owner.shape == "microwave" else "drawer"
        cands.append((f"{s.skill} the {entity_phrase(scene, owner.id)}", None))
        cands.append((f"{s.skill} the {entity_phrase(scene, owner.id)} {part}", None))
    elif s.skill == "push":
        obj_phrase = entity_phrase(scene, s.obj or "")
        for tail, _place in _destination_phrases(scene, s):
            to = tail if tail.startswith("to ") else f"to {tail.split(' ', 1)[1]}"
            cands.append((f"push the {obj_phrase} {to}", None))
    else:
        cands.append((f"turn on the {entity_phrase(scene, s.device or '')}", None))
        cands.append((f"switch on the {entity_phrase(scene, s.device or '')}", None))
    good: list[str] = []
    place_phrase = None
    for text, place in cands:
        try:
            if expert_subgoal(scene, text).steps == (k,):
                good.append(text)
                place_phrase = place_phrase or place
        except UngroundedInstruction:
            continue
    if not good:
        raise UngroundedInstruction(f"no instruction for expert step {k + 1} of {scene.name} "
                                    "grounds back to it")
    return list(dict.fromkeys(good)), obj_phrase, place_phrase


def _oracle_steps(scene: SceneSpec, oracle: FineGrainedOracle) -> dict[int, str]:
    """Expert step → the oracle's top-level step that monitors its effects."""
    actions = oracle_actions(oracle)
    out: dict[int, str] = {}
    for m in task_milestones(scene):
        path = milestone_path(m, actions, scene)
        if path is not None and m.kind != "approach":
            out.setdefault(m.skill, path.split(".")[0])
    return out


def _subgoal(scene: SceneSpec, k: int, i: int, oracle_step: str | None) -> Subgoal:
    s = scene.expert[k]
    texts, obj_phrase, place = subgoal_texts(scene, k)
    obj = s.obj or (scene.joint_owner(s.joint).id if s.joint else s.device)
    return Subgoal(id=str(i + 1), instruction=texts[0], expert_step=k, oracle_step=oracle_step,
                   object=obj, destination=s.target, relation=s.relation if s.target else None,
                   object_phrase=obj_phrase, destination_phrase=place)


def make_plan(scene: SceneSpec, instruction: str | None, initial: WorldState,
              oracle: FineGrainedOracle | None = None) -> Plan:
    """The plan phase (deterministic): subgoals from the oracle for the scene's task, from the
    expert's grounding for any other instruction; `UngroundedInstruction` when neither can."""
    text = instruction or scene.instruction
    sub = expert_subgoal(scene, text)
    if oracle is None:
        data, path = load_oracle_json(scene)
        oracle = load_oracle(data, file=str(path)) if data is not None else None
    steps_of = _oracle_steps(scene, oracle) if oracle is not None else {}
    if oracle is not None and sub.whole_task:
        # the oracle's top-level steps, in its order, are the subgoals
        by_step = sorted(steps_of.items(), key=lambda kv: int(kv[1]))
        order = [k for k, _ in by_step] + [k for k in sub.steps if k not in steps_of]
        ordered = oracle.execution_mode == "sequential"
        source = f"oracle {scene.oracle}"
    else:
        order = list(sub.steps)
        ordered = True
        source = "instruction"
    subgoals = [_subgoal(scene, k, i, steps_of.get(k)) for i, k in enumerate(order)]
    layout = {e: [round(float(v), 4) for v in st.position]
              for e, st in initial.objects.items() if not e.startswith("robot_")}
    return Plan(instruction=text, subgoals=subgoals, ordered=ordered, source=source,
                initial_scene=layout)


def plan_from_instructions(scene: SceneSpec, instruction: str, texts: list[str], ordered: bool,
                           initial: WorldState, oracle: FineGrainedOracle | None,
                           source: str) -> Plan:
    """A plan a model wrote (subgoal instructions in its order), checked against what the
    expert grounds: each subgoal one step of the instruction, none twice, none left out.
    Raises `ValueError` saying which subgoal is wrong and why (the re-ask's feedback)."""
    want = expert_subgoal(scene, instruction).steps
    steps: list[int] = []
    for i, text in enumerate(texts, 1):
        try:
            got = expert_subgoal(scene, text).steps
        except UngroundedInstruction as exc:
            raise ValueError(f"subgoal {i} ('{text}') names nothing in the scene: {exc}") \
                from None
        if len(got) != 1:
            raise ValueError(f"subgoal {i} ('{text}') is not atomic: it covers {len(got)} "
                             "steps; give one object and one place (or one device) each")
        if got[0] in steps:
            raise ValueError(f"subgoal {i} ('{text}') repeats subgoal {steps.index(got[0]) + 1}")
        if got[0] not in want:
            raise ValueError(f"subgoal {i} ('{text}') is not part of the instruction")
        steps.append(got[0])
    missing = [k for k in want if k not in steps]
    if missing:
        left = "; ".join(subgoal_texts(scene, k)[0][0] for k in missing)
        raise ValueError(f"the plan leaves out part of the instruction ({len(missing)} "
                         f"subgoal{'s' if len(missing) > 1 else ''} missing: {left})")
    if oracle is None:
        data, path = load_oracle_json(scene)
        oracle = load_oracle(data, file=str(path)) if data is not None else None
    steps_of = _oracle_steps(scene, oracle) if oracle is not None else {}
    subgoals = []
    for i, (k, text) in enumerate(zip(steps, texts, strict=True)):
        sg = _subgoal(scene, k, i, steps_of.get(k))
        subgoals.append(sg.model_copy(update={"instruction": text.strip()}))
    layout = {e: [round(float(v), 4) for v in st.position]
              for e, st in initial.objects.items() if not e.startswith("robot_")}
    return Plan(instruction=instruction, subgoals=subgoals, ordered=ordered, source=source,
                initial_scene=layout)
