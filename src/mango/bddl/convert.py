"""BDDL <-> this project's formats: scene objects (oracles.md §4), goal expressions (§1), task.json.

Import maps LIBERO's predicates one to one onto the default function library's: In -> in,
On -> on, Up -> up, Open -> open, Close -> close, Turnon -> turnon, Turnoff -> turnoff,
InContact -> incontact; True/False -> true/false; PrintJointState (LIBERO's debug predicate,
always true) -> true. And/Or/Not become and/or/not (LIBERO itself only evaluates an And of
atoms). Export goes back from an oracle's end state to `(:goal (And ...))`.
"""

from __future__ import annotations

from typing import Any

from mango.bddl.categories import category_info
from mango.bddl.model import Atom, Compound, Formula, Problem
from mango.oracle.expr import And, Const, Expr, Not, Or, format_expression
from mango.oracle.expr import Atom as ExprAtom
from mango.oracle.model import FineGrainedOracle
from mango.oracle.world_state import ROBOT_PARTS

# BDDL predicate -> §1 predicate (the default library's names)
TO_EXPR: dict[str, str] = {
    "in": "in",
    "on": "on",
    "up": "up",
    "open": "open",
    "close": "close",
    "turnon": "turnon",
    "turnoff": "turnoff",
    "incontact": "incontact",
}
FROM_EXPR: dict[str, str] = {v: k for k, v in TO_EXPR.items()}
# End-state relations an oracle's plan leaves behind; a later one about the same slot wins.
_STATE_PREDICATES = ("in", "on", "open", "close", "turnon", "turnoff")


# ----------------------------------------------------------------------------- import


def atom_expression(atom: Atom) -> Expr:
    """One BDDL atom as a §1 expression."""
    if atom.predicate in ("true", "printjointstate"):
        return Const(True)
    if atom.predicate == "false":
        return Const(False)
    return ExprAtom(TO_EXPR[atom.predicate], atom.args)


def formula_expression(f: Formula) -> Expr:
    """A BDDL goal as a §1 expression; a one-child And/Or is its child."""
    if isinstance(f, Atom):
        return atom_expression(f)
    parts = tuple(formula_expression(c) for c in f.children)
    if f.kind == "not":
        return Not(parts[0])
    if not parts:
        return Const(f.kind == "and")  # LIBERO: an empty goal list holds
    if len(parts) == 1:
        return parts[0]
    return And(parts) if f.kind == "and" else Or(parts)


def libero_expression(expr: Expr) -> Expr:
    """The same goal over the optional `libero` library's predicates (LIBERO's semantics:
    `config/functions/libero.json`): in -> libero_in, ..., turnoff -> libero_turnoff."""
    if isinstance(expr, ExprAtom):
        if expr.predicate in _STATE_PREDICATES:
            return ExprAtom(f"libero_{expr.predicate}", expr.args)
        return expr
    if isinstance(expr, Not):
        return Not(libero_expression(expr.operand))
    if isinstance(expr, And | Or):
        return type(expr)(tuple(libero_expression(op) for op in expr.operands))
    return expr


def goal_expression(problem: Problem) -> str:
    """The `:goal` as §1 text, e.g. `turnon(flat_stove_1) and on(moka_pot_1, ...)`."""
    return format_expression(formula_expression(problem.goal))


def _table_of(problem: Problem, name: str, seen: frozenset[str] = frozenset()) -> str | None:
    """The surface an entity ends up on through its `:init` chain (for the layout frame)."""
    for a in problem.init:
        if a.predicate in ("on", "in") and a.args[0] == name and name not in seen:
            region = problem.region(a.args[1])
            support = region.target if region is not None else a.args[1]
            if category_info(problem.category_of(support) or "", "fixture").kind == "surface":
                return support
            return _table_of(problem, support, seen | {name})
    return None


def layout(problem: Problem) -> dict[str, dict[str, Any]]:
    """Where `:init` puts each entity: `{id: {"position": [x, y], "on": SUPPORT_OR_REGION}}`.

    A table region's position is the centre of its first range in the table's frame (metres,
    as LIBERO's samplers read `:ranges`); an entity placed on or in another entity or a site of
    one (a cabinet's drawer, a stove's cook region) takes that entity's position. `relation`
    says whether `:init` said On or In, `frame` names the table whose frame the position is in.
    """
    placed: dict[str, tuple[str, str]] = {}  # entity -> (relation, region or support)
    for a in problem.init:
        if a.predicate in ("on", "in") and a.args[0] not in placed:
            placed[a.args[0]] = (a.predicate, a.args[1])

    positions: dict[str, tuple[float, float] | None] = {}

    def position(name: str, depth: int = 0) -> tuple[float, float] | None:
        if name in positions:
            return positions[name]
        positions[name] = None  # a cycle in :init ends here, without a position
        result = None
        if name in placed and depth < 50:
            where = placed[name][1]
            region = problem.region(where)
            if region is not None and region.centre() is not None:
                result = region.centre()
            elif region is not None:
                result = position(region.target, depth + 1)
            else:
                result = position(where, depth + 1)
        positions[name] = result
        return result

    out: dict[str, dict[str, Any]] = {}
    for name, (relation, where) in placed.items():
        pos = position(name)
        entry: dict[str, Any] = {"on": where, "relation": relation}
        if pos is not None:
            entry["position"] = [round(pos[0], 6), round(pos[1], 6)]
        frame = _table_of(problem, name)
        if frame is not None:
            entry["frame"] = frame
        out[name] = entry
    return out


def _regions(problem: Problem) -> list[str]:
    declared = {e.name for e in (*problem.fixtures, *problem.objects)}
    return [r.full_name for r in problem.regions if r.target in declared]


def scene_entry(problem: Problem) -> dict[str, Any]:
    """The §4 scene-objects entry: `id` = the instruction, movable `objects`, every id in
    `states`, `kinds` and `descriptions` from LIBERO's categories, and the initial `layout`."""
    kinds: dict[str, str] = {}
    descriptions: dict[str, str] = {}
    for section, entities in (("fixture", problem.fixtures), ("object", problem.objects)):
        for e in entities:
            info = category_info(e.category, section)
            kinds[e.name] = info.kind
            descriptions[e.name] = info.description
    for r in _regions(problem):
        kinds[r] = "region"
    objects = [e.name for e in problem.objects]
    states = [*[e.name for e in problem.fixtures], *objects, *_regions(problem)]
    return {
        "id": problem.language,
        "objects": objects,
        "states": states,
        "descriptions": descriptions,
        "kinds": kinds,
        "layout": layout(problem),
    }


def scene_json(problem: Problem) -> dict[str, Any]:
    """scene.json: the §4 `{"task_objects": [entry]}` form."""
    return {"task_objects": [scene_entry(problem)]}


def task_json(problem: Problem) -> dict[str, Any]:
    """task.json (commands.md §6): instruction, §1 goal, problem name, objects, fixtures; plus
    the goal in LIBERO's semantics (`goal_libero`, for `--functions config/functions/libero.json`),
    the goal's atoms, `:obj_of_interest`, `:init` as §1 atoms and each id's LIBERO category."""
    goal = formula_expression(problem.goal)
    notes = [
        f"region '{r.full_name}' targets '{r.target}', which the file does not declare: "
        "left out of the scene (LIBERO builds no site for it either)"
        for r in problem.dangling_regions()
    ]
    if any(a.predicate == "printjointstate" for a in problem.goal_atoms()):
        notes.append("PrintJointState is LIBERO's debug predicate (always true): imported as true")
    if any(a.predicate == "up" for a in problem.goal_atoms()):
        notes.append(
            "Up is LIBERO's 'body higher than 1.0 m in the world'; imported as up (lifted off "
            "its support), which does not depend on the table's height"
        )
    top = problem.goal.children if isinstance(problem.goal, Compound) else [problem.goal]
    if (isinstance(problem.goal, Compound) and problem.goal.kind != "and") or any(
        isinstance(c, Compound) for c in top
    ):
        notes.append(
            "the goal uses Or/Not: imported as or/not, but LIBERO's _check_success evaluates "
            "only an And of atoms"
        )
    return {
        "instruction": problem.language,
        "goal": format_expression(goal),
        "goal_libero": format_expression(libero_expression(goal)),
        "problem": problem.name,
        "objects": [e.name for e in problem.objects],
        "fixtures": [e.name for e in problem.fixtures],
        "regions": _regions(problem),
        "goal_atoms": [
            format_expression(atom_expression(a))
            for a in problem.goal_atoms()
            if a.predicate in TO_EXPR
        ],
        "obj_of_interest": list(problem.obj_of_interest),
        "init": [format_expression(atom_expression(a)) for a in problem.init],
        "categories": {e.name: e.category for e in (*problem.fixtures, *problem.objects)},
        "notes": notes,
    }


# ----------------------------------------------------------------------------- export


class ExportError(ValueError):
    """An expression with nothing BDDL can say."""


def _is_robot(atom: ExprAtom) -> bool:
    return any(a in ROBOT_PARTS for a in atom.args)


def expression_formula(expr: Expr, dropped: list[str]) -> Formula | None:
    """A §1 expression as a BDDL formula. Atoms BDDL has no predicate for (grasped, near, ...)
    or that name the robot are dropped and listed in `dropped`; a `not` or `or` that loses a
    part is dropped whole (it would mean something else without it)."""
    if isinstance(expr, ExprAtom):
        if expr.predicate not in FROM_EXPR or _is_robot(expr):
            dropped.append(str(expr))
            return None
        return Atom(predicate=FROM_EXPR[expr.predicate], args=expr.args)
    if isinstance(expr, Const):
        return Atom(predicate="true" if expr.value else "false", args=())
    if isinstance(expr, Not):
        inner = expression_formula(expr.operand, dropped)
        return None if inner is None else Compound(kind="not", children=[inner])
    parts = [expression_formula(op, dropped) for op in expr.operands]
    kept = [p for p in parts if p is not None]
    if isinstance(expr, Or):
        if len(kept) < len(parts):
            return None
        return Compound(kind="or", children=kept)
    if not kept:
        return None
    flat: list[Atom | Compound] = []
    for p in kept:
        flat.extend(p.children if isinstance(p, Compound) and p.kind == "and" else [p])
    return Compound(kind="and", children=flat)


def plan_end_state(oracle: FineGrainedOracle) -> Expr:
    """The state a fine-grained oracle's plan leaves: every positive in/on/open/close/turnon/
    turnoff atom its actions check, a later one about the same slot (an object's place, a
    joint's or device's state) replacing an earlier one, in plan order."""
    from mango.oracle.expr import iter_literals, parse_expression

    slots: dict[tuple[str, str], ExprAtom] = {}
    for _, action in oracle.actions():
        for m in action.monitoring:
            for atom, positive in iter_literals(parse_expression(m.handle_as)):
                if not positive or atom.predicate not in _STATE_PREDICATES or _is_robot(atom):
                    continue
                group = "place" if atom.predicate in ("in", "on") else (
                    "joint" if atom.predicate in ("open", "close") else "device"
                )
                key = (group, atom.args[0])
                slots.pop(key, None)  # re-insert: the end state keeps plan order
                slots[key] = atom
    atoms = list(slots.values())
    if not atoms:
        raise ExportError("the oracle's plan checks no in/on/open/close/turnon/turnoff state")
    return atoms[0] if len(atoms) == 1 else And(tuple(atoms))


def export_goal(oracle: FineGrainedOracle) -> tuple[Formula, list[str], str]:
    """The oracle's end-state goal as `(And ...)`: its `goal` field when it has one, else its
    plan's end state. Returns the formula, the atoms left out and which source was used."""
    from mango.oracle.expr import parse_expression

    source = "goal" if oracle.goal is not None else "plan"
    expr = parse_expression(oracle.goal) if oracle.goal is not None else plan_end_state(oracle)
    dropped: list[str] = []
    f = expression_formula(expr, dropped)
    if f is None:
        raise ExportError(
            f"nothing of the {source}'s end state has a BDDL predicate (dropped: "
            f"{', '.join(dropped)})"
        )
    if not (isinstance(f, Compound) and f.kind == "and"):
        f = Compound(kind="and", children=[f])
    return f, dropped, source
