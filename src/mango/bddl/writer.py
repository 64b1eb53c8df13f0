"""`Problem` -> BDDL text laid out as LIBERO's own files are (so a diff against one is readable).

`parse_bddl(write_bddl(p)) == p` for every problem; numbers are written with `repr`, which
reads back to the same float.
"""

from __future__ import annotations

from mango.bddl.model import PREDICATE_SPELLING, Atom, Compound, Entity, Formula, Problem

_CONNECTIVE = {"and": "And", "or": "Or", "not": "Not"}


def _num(x: float) -> str:
    return repr(float(x))


def format_atom(atom: Atom) -> str:
    """`(On moka_pot_1 flat_stove_1_cook_region)`."""
    return "(" + " ".join([PREDICATE_SPELLING[atom.predicate], *atom.args]) + ")"


def format_formula(f: Formula) -> str:
    """A goal formula on one line, as LIBERO writes `(And (...) (...))`."""
    if isinstance(f, Atom):
        return format_atom(f)
    assert isinstance(f, Compound)
    return "(" + " ".join([_CONNECTIVE[f.kind], *(format_formula(c) for c in f.children)]) + ")"


def _typed(entities: list[Entity]) -> list[str]:
    """One line per category, instances in their order (`plate_1 plate_2 - plate`)."""
    lines: list[str] = []
    groups: list[tuple[str, list[str]]] = []
    for e in entities:
        if groups and groups[-1][0] == e.category:
            groups[-1][1].append(e.name)
        else:
            groups.append((e.category, [e.name]))
    for category, names in groups:
        lines.append(f"    {' '.join(names)} - {category}")
    return lines


def write_bddl(problem: Problem) -> str:
    """The problem as BDDL text."""
    out = ["(define (problem " + problem.name + ")", f"  (:domain {problem.domain})"]
    if problem.requirements is not None:
        out.append("  (:requirements " + " ".join(problem.requirements) + ")")
    out.append(f"  (:language {problem.language})")
    if problem.scene_properties:
        props = " ".join(f"(:{k} {v})" for k, v in problem.scene_properties.items())
        out.append(f"  (:scene_properties {props})")
    out.append("    (:regions")
    for r in problem.regions:
        out.append(f"      ({r.name}")
        out.append(f"          (:target {r.target})")
        if r.ranges:
            out.append("          (:ranges (")
            out.extend(f"              ({' '.join(_num(v) for v in row)})" for row in r.ranges)
            out.append("            )")
            out.append("          )")
        if r.yaw_rotation:
            out.append("          (:yaw_rotation (")
            out.extend(
                f"              ({' '.join(_num(v) for v in row)})" for row in r.yaw_rotation
            )
            out.append("            )")
            out.append("          )")
        if r.rgba is not None:
            out.append(f"          (:rgba ({' '.join(_num(v) for v in r.rgba)}))")
        out.append("      )")
    out.append("    )")
    out.append("")
    out.append("  (:fixtures")
    out.extend(_typed(problem.fixtures))
    out.append("  )")
    out.append("")
    out.append("  (:objects")
    out.extend(_typed(problem.objects))
    out.append("  )")
    out.append("")
    out.append("  (:obj_of_interest")
    out.extend(f"    {n}" for n in problem.obj_of_interest)
    out.append("  )")
    out.append("")
    out.append("  (:init")
    out.extend(f"    {format_atom(a)}" for a in problem.init)
    out.append("  )")
    out.append("")
    out.append("  (:goal")
    out.append(f"    {format_formula(problem.goal)}")
    out.append("  )")
    out.append("")
    out.append(")")
    return "\n".join(out) + "\n"


def write_goal(goal: Formula) -> str:
    """Only the goal section, `(:goal (And ...))`, for `mango bddl export`."""
    return f"(:goal\n  {format_formula(goal)}\n)\n"
