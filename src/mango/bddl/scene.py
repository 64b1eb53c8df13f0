"""A BDDL task as a sim scene (`config/scenes/*.yaml` format), for the categories the sim builds.

Each LIBERO category is built as the shipped scenes build it (their entities and regions are
the templates: a `moka_pot` is the cylinder `libero10_stove_moka.yaml` uses, a
`white_cabinet`'s `bottom_region` the drawer of `libero10_bowl_drawer.yaml`), so there is one
geometry per category. Placements come from `:init`: the centre of the init region's range,
moved from LIBERO's table frame to ours so that the offset from the robot's base is LIBERO's
(`mounted_panda.py`'s `base_xpos_offset`, the problem classes' table sizes and workspace
offsets), with the range's half-extents as the per-seed jitter (LIBERO samples uniformly in
the range). The expert's plan is the goal's atoms in order (On/In -> pick_place, Close ->
close, Turnon -> turn_on). What cannot be built is named, never approximated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mango.bddl.builds import (
    BUILT,
    BUILT_REGIONS,
    FRONT_YAW_DEG,
    LEVELS,
    SHELF_LAYERS,
    drawer_region,
    origin_shift,
    shelf_region,
    top_region,
)
from mango.bddl.categories import CATEGORIES, SURFACES
from mango.bddl.convert import goal_expression
from mango.bddl.model import Atom, Compound, Problem
from mango.oracle.libero_predicates import category_of
from mango.sim.scene import (
    EntitySpec,
    JointSpec,
    RegionSpec,
    RobotSpec,
    SceneSpec,
    SkillSpec,
    list_scenes,
    load_scene,
)

# x of LIBERO's robot base relative to each arena's table-frame origin (the ranges' frame):
# robot x = -0.16 - L/2 (kitchen, table: L 1.0; living room, coffee table: L 0.70), study
# -0.25 - 0.5 with the workspace offset -0.2, floor ("empty") -0.6.
ROBOT_FROM_TABLE_X: dict[str, float] = {
    "kitchen_table": 0.66,
    "main_table": 0.66,
    "table": 0.66,
    "living_room_table": 0.51,
    "coffee_table": 0.51,
    "study_table": 0.55,
    "floor": 0.60,
}
# Categories built like another one the shipped scenes have (same shape and size class).
ALIASES: dict[str, str] = {
    "white_bowl": "akita_black_bowl",
    "yellow_book": "black_book",
    "wooden_tray": "basket",
    "bbq_sauce": "ketchup",
    "salad_dressing": "ketchup",
    "new_salad_dressing": "ketchup",
    "cookies": "cream_cheese",
}
TABLE_REGION_HEIGHT = 0.05  # a table region's box: the top surface and 5 cm above it
# Nearest a fixture's centre may stand in front of the robot's base (x): LIBERO puts a stove
# 0.25 m ahead of its Panda, where the FR3's gripper, pointing down, cannot follow a
# continuous joint path to the knob or the burner; closer fixtures move out to this.
MIN_FIXTURE_AHEAD = 0.38
GRIPPER_OPENING = 0.08  # the Franka Hand's widest opening: anything wider is pushed
DRAWER_RELEASE_X = -0.03  # release point in an open drawer, toward its front


@dataclass
class SimScene:
    """The scene (None when something cannot be built), what is missing, what was left out,
    and where the scene departs from LIBERO's layout."""

    scene: SceneSpec | None
    missing: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Templates:
    entities: dict[str, EntitySpec]
    regions: dict[tuple[str, str], RegionSpec]  # (parent category, region name) -> region
    # (target category, region name or "") -> how the expert puts one object there
    placing: dict[tuple[str, str], SkillSpec]


def shipped_templates() -> _Templates:
    """The shipped scenes' entities per category and their regions per (category, name)."""
    entities: dict[str, EntitySpec] = {}
    regions: dict[tuple[str, str], RegionSpec] = {}
    placing: dict[tuple[str, str], SkillSpec] = {}
    for path in list_scenes():
        sc = load_scene(path)
        targets = [k.target for k in sc.expert if k.skill == "pick_place"]
        for k in sc.expert:
            if k.skill == "pick_place" and k.target is not None and targets.count(k.target) == 1:
                placing.setdefault(_target_key(k.target, sc), k)
        for e in sc.entities:
            cat = category_of(e.id)
            if cat is not None:
                entities.setdefault(cat, e)
        for r in sc.regions:
            cat = category_of(r.parent)
            if cat is not None and r.id.startswith(r.parent + "_"):
                regions.setdefault((cat, r.id[len(r.parent) + 1:]), r)
    for cat, fields in BUILT.items():
        entities[cat] = EntitySpec.model_validate({"id": f"{cat}_1", "position": [0, 0],
                                                   **fields})
    for (cat, name), fields in BUILT_REGIONS.items():
        regions[(cat, name)] = RegionSpec.model_validate(
            {"id": f"{cat}_1_{name}", "parent": f"{cat}_1", **fields})
    return _Templates(entities, regions, placing)


def _supports_first(problem: Problem, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The goal's order, except that an object others are put on or in moves before them
    ("stack the left bowl on the right bowl and place them in the tray": the right bowl goes
    into the tray first, then the left bowl onto it); a cycle keeps the goal's order."""
    def owner(step: dict[str, Any]) -> str | None:
        if step["skill"] != "pick_place":
            return None
        region = problem.region(step["target"])
        return region.target if region is not None else step["target"]

    out = list(steps)
    for _ in range(len(out) ** 2):
        moved = False
        for i, step in enumerate(out):
            j = next((k for k in range(i + 1, len(out))
                      if out[k].get("obj") is not None and out[k]["obj"] == owner(step)), None)
            if j is not None:
                out.insert(i, out.pop(j))
                moved = True
                break
        if not moved:
            return out
    return list(steps)


def _open_first(steps: list[dict[str, Any]], drawers: dict[str, bool]) -> list[dict[str, Any]]:
    """An open step before the first put into a drawer that starts closed, unless the plan
    opens it already ("open the top drawer and put the bowl inside": the goal says In)."""
    out: list[dict[str, Any]] = []
    opened = {k for k, closed in drawers.items() if not closed}
    for step in steps:
        target = step.get("target")
        if step["skill"] == "pick_place" and target in drawers and target not in opened:
            out.append({"skill": "open", "joint": target})
            opened.add(target)
        if step["skill"] == "open":
            opened.add(step["joint"])
        out.append(step)
    return out


def _initial_q(template: EntitySpec, init_state: dict[str, str], name: str, joint: str) -> float:
    """The joint's start from `:init` (Open/Turnon on the fixture or its joint's region):
    fully open (the end of its range away from closed, as LIBERO may sample up to it), closed,
    or the template's start when `:init` says nothing."""
    assert template.joint is not None
    j = template.joint
    state = init_state.get(joint) or init_state.get(name)
    if state in ("open", "turnon"):
        lo, hi = j.range
        far = lo if abs(lo - j.q_closed) > abs(hi - j.q_closed) else hi
        return far if state == "open" else j.q_open
    if state in ("close", "turnoff"):
        return j.q_closed
    return j.q_init


def _target_key(target: str, sc: SceneSpec) -> tuple[str, str]:
    """(category, region name) of a pick-and-place target, "" for an entity itself."""
    for r in sc.regions:
        if r.id == target and target.startswith(r.parent + "_"):
            return (category_of(r.parent) or r.parent, target[len(r.parent) + 1:])
    return (category_of(target) or target, "")


def sim_scene(problem: Problem, name: str, templates: _Templates | None = None) -> SimScene:
    """The sim scene of a BDDL problem, or what it would need that the sim does not build."""
    t = templates or shipped_templates()
    missing: list[str] = []
    left_out: list[str] = []
    tables = [f.name for f in problem.fixtures if f.category in SURFACES]
    if len(tables) != 1:
        missing.append(f"one table or floor fixture (found {len(tables)})")
        return SimScene(None, missing)
    table = tables[0]
    table_cat = problem.category_of(table) or table
    to_robot = ROBOT_FROM_TABLE_X.get(table_cat, 0.66) + RobotSpec().base[0]

    def sim_xy(cx: float, cy: float) -> tuple[float, float]:
        return (round(cx + to_robot, 4), round(cy, 4))

    init_state: dict[str, str] = {}  # entity -> open/close/turnon/turnoff
    placement: dict[str, str] = {}
    for a in problem.init:
        if a.predicate in ("on", "in"):
            placement.setdefault(a.args[0], a.args[1])
        else:
            init_state[a.args[0]] = a.predicate

    entities: list[dict[str, Any]] = []
    supported: set[str] = set()  # regions and entities something starts on
    refused: set[str] = set()  # entities named in `missing`
    moved: list[str] = []
    built: dict[str, EntitySpec] = {}
    mirrored: set[str] = set()
    for e in (*problem.fixtures, *problem.objects):
        if e.name == table:
            continue
        template = t.entities.get(ALIASES.get(e.category, e.category))
        if template is None:
            missing.append(f"category '{e.category}' ({e.name}): the sim builds no such entity")
            continue
        where = placement.get(e.name)
        region = problem.region(where) if where else None
        data = template.model_dump(mode="json", exclude_none=True)
        data["id"] = e.name
        if where is None:
            missing.append(f"{e.name} has no placement in :init")
            continue
        if region is not None and region.target == table and region.centre() is not None:
            x0, y0, x1, y1 = region.ranges[0]
            data["position"] = list(sim_xy(*region.centre()))  # type: ignore[misc]
            data["jitter"] = [round((x1 - x0) / 2, 4), round((y1 - y0) / 2, 4)]
            yaw = region.yaw
            if e.category in FRONT_YAW_DEG and yaw is not None:
                # LIBERO's facing (the middle of its yaw range: a fixture does not jitter)
                mid = math.degrees((yaw[0] + yaw[1]) / 2) + FRONT_YAW_DEG[e.category]
                data["yaw"] = round((mid + 180.0) % 360.0 - 180.0, 2)
                # LIBERO places the asset's origin there, not the centre of its box
                dx, dy = origin_shift(e.category, data["yaw"])
                data["position"] = [round(data["position"][0] + dx, 4),
                                    round(data["position"][1] + dy, 4)]
            near = RobotSpec().base[0] + MIN_FIXTURE_AHEAD
            if not template.movable and data["position"][0] < near:
                moved.append(f"{e.name} moved {near - data['position'][0]:.2f} m away from "
                             "the robot (LIBERO's place is out of the FR3's reach)")
                data["position"][0] = near
        elif template.movable and (region is not None or problem.category_of(where)):
            # on or in another entity or one of its regions (a bowl on the cookie box, in a
            # drawer, on a cook region): starts at that support's centre
            data["on"], data["position"], data["jitter"] = where, [0.0, 0.0], [0.0, 0.0]
            supported.add(where)
        else:
            missing.append(f"{e.name} starts on/in '{where}', which the sim cannot place a "
                           f"{e.category} on")
            continue
        data["description"] = CATEGORIES[e.category].description if e.category in CATEGORIES \
            else e.category.replace("_", " ")
        mentioned = {arg[len(e.name) + 1:] for a in (*problem.goal_atoms(), *problem.init)
                     for arg in a.args if arg.startswith(e.name + "_")}
        if template.shape == "drawer_cabinet" and template.drawers == 1 and \
                "top_region" in mentioned:
            # a one-drawer cabinet whose upper part the task uses: two equal drawers
            data["drawers"] = 2
            template = template.model_copy(update={"drawers": 2})
        levels = LEVELS.get(template.drawers, ()) if template.shape == "drawer_cabinet" else ()
        if len(levels) > 1:
            # one drawer slides: the one the task opens, closes or fills (goal, then :init)
            named = [a.args[-1] for a in (*problem.goal_atoms(), *problem.init)
                     if a.predicate in ("open", "close", "in") and a.args]
            mine = [n[len(e.name) + 1:] for n in named if n.startswith(e.name + "_")
                    and n[len(e.name) + 1:] in levels]
            moving = {a.args[0] for a in (*problem.goal_atoms(), *problem.init)
                      if a.predicate in ("open", "close") and a.args[0].startswith(e.name + "_")}
            if len(moving) > 1:
                missing.append(f"{e.name}: the task opens or closes {len(moving)} of its "
                               f"drawers ({', '.join(sorted(moving))}); the sim slides one per "
                               "cabinet")
                refused.add(e.name)
                continue
            level = levels.index(mine[0]) if mine else 0
            data["drawer"] = level
            data["joint"] = {**data["joint"], "id": f"{template.id}_{levels[level]}"}
            template = template.model_copy(update={"joint": JointSpec.model_validate(
                data["joint"])})
        if template.joint is not None:
            # An articulated fixture faces the table's centre line as its template does (a
            # microwave's cavity, a cabinet's drawer): on the other side of it, mirrored.
            if template.position[1] * data["position"][1] < 0 and template.yaw:
                data["yaw"] = -template.yaw
                mirrored.add(e.name)
            joint = dict(data["joint"])
            # the joint keeps its name relative to its entity (`_knob`, `_bottom_region`)
            joint["id"] = e.name + template.joint.id.removeprefix(template.id)
            joint["q_init"] = _initial_q(template, init_state, e.name, joint["id"])
            data["joint"] = joint
        built[e.name] = EntitySpec.model_validate(data)
        entities.append(data)

    regions: list[dict[str, Any]] = []
    used = {arg for a in problem.goal_atoms() for arg in a.args}
    used |= {arg for a in problem.init if a.predicate not in ("on", "in") for arg in a.args}
    used |= supported
    for r in problem.regions:
        if r.target == table:
            if r.full_name in used and r.centre() is not None:
                x0, y0, x1, y1 = r.ranges[0]
                cx, cy = sim_xy(*r.centre())  # type: ignore[misc]
                regions.append({"id": r.full_name, "parent": table,
                                "offset": [cx, cy, TABLE_REGION_HEIGHT / 2],
                                "size": [round(x1 - x0, 4), round(y1 - y0, 4),
                                         TABLE_REGION_HEIGHT]})
            continue
        if r.target in refused:
            continue  # its entity is named as not built already
        owner = built.get(r.target)
        cat = problem.category_of(r.target)
        template_r = t.regions.get((ALIASES.get(cat or "", cat or ""), r.name))
        levels = LEVELS.get(owner.drawers, ()) if owner is not None and \
            owner.shape == "drawer_cabinet" else ()
        if owner is not None and owner.shape == "shelf" and r.name in SHELF_LAYERS:
            regions.append({"id": r.full_name, "parent": r.target,
                            **shelf_region(owner, SHELF_LAYERS.index(r.name))})
            continue
        if owner is not None and r.name == "top_side" and template_r is None:
            # any built fixture's top face (a microwave's, a cabinet's)
            regions.append({"id": r.full_name, "parent": r.target, **top_region(owner.size)})
            continue
        if owner is not None and r.name in levels and len(levels) > 1:
            # every drawer of a built cabinet is in the scene (the world state has them all)
            regions.append({"id": r.full_name, "parent": r.target,
                            **drawer_region(owner, levels.index(r.name))})
            continue
        if owner is None or template_r is None:
            what = f"region '{r.full_name}'"
            if r.full_name in used:
                missing.append(f"{what}: the sim builds no '{r.name}' on a {cat}")
            else:
                left_out.append(f"{what} (unused by the goal)")
            continue
        data = template_r.model_dump(mode="json")
        data["id"], data["parent"] = r.full_name, r.target
        regions.append(data)

    expert: list[dict[str, Any]] = []
    # drawer joints (named as their drawer's region) -> whether they start closed
    drawer_joints = {e["joint"]["id"]: e["joint"]["q_init"] == e["joint"]["q_closed"]
                     for e in entities if e["shape"] == "drawer_cabinet"}
    goal = problem.goal
    top = goal.children if isinstance(goal, Compound) and goal.kind == "and" else [goal]
    sizes = {r["id"]: r["size"] for r in regions} | {e["id"]: e["size"] for e in entities}
    targets = [g.args[1] for g in top if isinstance(g, Atom) and g.predicate in ("on", "in")]
    placed = 0
    for g in top:
        if not isinstance(g, Atom):
            missing.append("a goal with Or/Not: the expert plans an And of atoms")
            continue
        if g.predicate in ("on", "in"):
            placed += 1
            region = problem.region(g.args[1])
            obj = built.get(g.args[0])
            if obj is not None and min(obj.size[:2]) > GRIPPER_OPENING:
                # too wide to grasp (a plate): pushed over the table into a table region
                if region is None or region.target != table:
                    missing.append(f"goal ({g.predicate} {g.args[0]} {g.args[1]}): the hand "
                                   f"cannot grasp a {obj.size[0]:.2f} m wide {obj.shape}, "
                                   "only push it over the table")
                else:
                    expert.append({"skill": "push", "obj": g.args[0], "target": g.args[1],
                                   "relation": "on"})
                continue
            step: dict[str, Any] = {"skill": "pick_place", "obj": g.args[0], "target": g.args[1],
                                    "relation": g.predicate}
            owner_cat = problem.category_of(region.target if region else g.args[1]) or ""
            how = t.placing.get((ALIASES.get(owner_cat, owner_cat), region.name if region else ""))
            offset = list(how.offset) if how is not None else [0.0, 0.0]
            r_spec = next((r for r in regions if r["id"] == g.args[1]), None)
            holder = built.get(region.target) if region is not None else None
            if holder is not None and holder.shape == "shelf" and region.name in SHELF_LAYERS:
                step["grasp"] = "side"  # into a layer: level, from its open front
            if how is None and r_spec is not None and r_spec.get("part") == "drawer":
                offset[0] = DRAWER_RELEASE_X  # the drawer's front half, out of the cabinet
            if region is not None and region.target in mirrored:
                offset[1] = -offset[1]
            if how is not None and how.grasp != "top":
                step["grasp"] = how.grasp
            # several objects to one target: side by side across its width, as the shipped
            # scenes release two groceries in a basket at +/- a quarter of its width
            n, i = targets.count(g.args[1]), targets[:placed].count(g.args[1]) - 1
            if n > 1 and g.args[1] in sizes:
                width = sizes[g.args[1]][1]
                offset[1] += round(width * ((i + 0.5) / n - 0.5), 4)
            if offset != [0.0, 0.0]:
                step["offset"] = offset
            expert.append(step)
        elif g.predicate == "close":
            expert.append({"skill": "close", "joint": g.args[0]})
        elif g.predicate == "turnon":
            expert.append({"skill": "turn_on", "device": g.args[0]})
        elif g.predicate == "open" and g.args[0] in drawer_joints:
            expert.append({"skill": "open", "joint": g.args[0]})
        else:
            missing.append(f"goal ({g.predicate} ...): the expert has no such skill")
    if missing:
        return SimScene(None, missing, left_out)
    expert = _open_first(_supports_first(problem, expert), drawer_joints)
    data = {
        "name": name,
        "libero_problem": problem.name,
        "instruction": problem.language,
        "goal": goal_expression(problem),
        "table": {"id": table},
        "entities": entities,
        "regions": regions,
        "expert": expert,
    }
    return SimScene(SceneSpec.model_validate(data), [], left_out, moved)
