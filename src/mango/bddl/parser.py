"""BDDL text -> `Problem`, with every error at its file, line and column.

Accepts what LIBERO's `robosuite_parse_problem` (libero/libero/envs/bddl_utils.py) accepts:
`(define (problem NAME) (:domain robosuite) (:language ...) (:regions ...) (:fixtures ...)
(:objects ...) (:obj_of_interest ...) (:init ...) (:goal ...))`, sections in any order,
keywords and names in any case, `;` comments. Where LIBERO would crash later or silently do
something else (an unknown region attribute, a name nobody declared, a predicate it does not
register, a goal atom of the wrong arity) this parser stops with the place instead.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from mango.bddl.model import (
    INIT_PREDICATES,
    NAME_RE,
    PREDICATE_ARITY,
    PREDICATE_SPELLING,
    Atom,
    Compound,
    Entity,
    Formula,
    Problem,
    Region,
)
from mango.bddl.sexpr import Node, SList, Token, read_sexpr
from mango.errors import InputError, from_validation_error
from mango.json_files import read_text

SECTIONS = (
    ":domain",
    ":requirements",
    ":language",
    ":scene_properties",
    ":regions",
    ":fixtures",
    ":objects",
    ":obj_of_interest",
    ":init",
    ":goal",
)
REGION_ATTRIBUTES = (":target", ":ranges", ":yaw_rotation", ":rgba")
CONNECTIVES = ("and", "or", "not")


def read_bddl(path: str | Path) -> Problem:
    """Read and validate a BDDL file."""
    return parse_bddl(read_text(path, "BDDL file"), str(path))


def parse_bddl(text: str, file: str | None = None) -> Problem:
    """Parse BDDL text; `file` names it in errors."""
    return _Parser(file).problem(read_sexpr(text, file))


def _where(node: Node) -> tuple[int, int]:
    return node.line, node.column


class _Parser:
    def __init__(self, file: str | None) -> None:
        self.file = file

    def error(self, message: str, node: Node) -> InputError:
        return InputError(message, self.file, *_where(node))

    # ------------------------------------------------------------------------- helpers

    def token(self, node: Node, what: str) -> Token:
        if not isinstance(node, Token):
            raise self.error(f"expected {what}, found a list", node)
        return node

    def name(self, node: Node, what: str) -> str:
        tok = self.token(node, what)
        name = tok.lower
        if not NAME_RE.fullmatch(name):
            raise self.error(f"'{tok.text}' is not a valid {what} (letters, digits, '_')", tok)
        return name

    def number(self, node: Node, what: str) -> float:
        tok = self.token(node, what)
        try:
            value = float(tok.text)
        except ValueError:
            raise self.error(f"expected a number for {what}, found '{tok.text}'", tok) from None
        if value != value or value in (float("inf"), float("-inf")):
            raise self.error(f"{what} must be finite, found '{tok.text}'", tok)
        return value

    def numbers(self, node: Node, count: int, what: str) -> tuple[float, ...]:
        if not isinstance(node, SList):
            raise self.error(f"expected ({count} numbers) for {what}", node)
        if len(node.items) != count:
            raise self.error(
                f"{what} needs {count} numbers, found {len(node.items)}", node
            )
        return tuple(self.number(x, what) for x in node.items)

    # ------------------------------------------------------------------------- problem

    def problem(self, top: SList) -> Problem:
        if top.head() != "define":
            found = top.items[0] if top.items else top
            raise self.error("a BDDL problem starts with '(define'", found)
        name: str | None = None
        sections: dict[str, SList] = {}
        for item in top.items[1:]:
            if not isinstance(item, SList) or item.head() is None:
                raise self.error("expected a section such as '(:goal ...)'", item)
            head = item.head()
            assert head is not None
            if head == "problem":
                if name is not None:
                    raise self.error("'(problem ...)' is given twice", item)
                if len(item.items) != 2:
                    raise self.error("expected '(problem NAME)'", item)
                tok = self.token(item.items[1], "problem name")
                name = tok.text
                continue
            if head not in SECTIONS:
                raise self.error(
                    f"unknown section '{item.items[0].text}' "  # type: ignore[union-attr]
                    f"(expected one of {', '.join(SECTIONS)})",
                    item,
                )
            if head in sections:
                first = sections[head]
                raise self.error(
                    f"'{head}' is given twice (first at line {first.line})", item
                )
            sections[head] = item
        if name is None:
            raise self.error("missing '(problem NAME)'", top)
        for required in (":language", ":goal"):
            if required not in sections:
                raise self.error(f"missing '({required} ...)'", top)

        domain = "robosuite"
        if ":domain" in sections:
            d = sections[":domain"]
            if len(d.items) != 2:
                raise self.error("expected '(:domain robosuite)'", d)
            domain = self.name(d.items[1], "domain")
            if domain != "robosuite":  # LIBERO raises "Different domain specified"
                raise self.error(
                    f"LIBERO problems are in the domain 'robosuite', not '{domain}'", d.items[1]
                )
        requirements = None
        if ":requirements" in sections:
            requirements = [
                self.token(x, "requirement").text for x in sections[":requirements"].items[1:]
            ]
        language = self.language(sections[":language"])
        scene_properties = (
            self.scene_properties(sections[":scene_properties"])
            if ":scene_properties" in sections
            else {}
        )
        fixtures = self.typed(sections.get(":fixtures"), "fixture")
        objects = self.typed(sections.get(":objects"), "object")
        declared: dict[str, Entity] = {}
        for entity, node in (*fixtures, *objects):
            if entity.name in declared:
                raise self.error(f"'{entity.name}' is declared twice", node)
            declared[entity.name] = entity
        regions = self.regions(sections.get(":regions"), set(declared))
        names = set(declared) | {r.full_name for r, _ in regions if r.target in declared}
        interest = []
        if ":obj_of_interest" in sections:
            for x in sections[":obj_of_interest"].items[1:]:
                n = self.name(x, "name")
                if n not in names:
                    raise self.error(self.unknown(n, names), x)
                interest.append(n)
        init = []
        if ":init" in sections:
            for x in sections[":init"].items[1:]:
                atom = self.atom(x, names, "init")
                init.append(atom)
        goal = self.goal(sections[":goal"], names)
        try:
            return Problem(
                name=name,
                domain=domain,
                language=language,
                requirements=requirements,
                scene_properties=scene_properties,
                regions=[r for r, _ in regions],
                fixtures=[e for e, _ in fixtures],
                objects=[e for e, _ in objects],
                obj_of_interest=interest,
                init=init,
                goal=goal,
            )
        except ValidationError as exc:  # the checks above should have caught it first
            err = from_validation_error(exc, file=self.file)
            raise InputError(err.message, self.file, top.line, top.column, err.field) from None

    def unknown(self, name: str, names: set[str]) -> str:
        msg = f"'{name}' is not a declared fixture, object or region"
        close = sorted(n for n in names if n.endswith(name) or name.endswith(n))
        if close:
            msg += f" (regions are named <target>_<region>: did you mean '{close[0]}'?)"
        return msg

    def language(self, node: SList) -> str:
        words = []
        for x in node.items[1:]:
            if isinstance(x, SList):
                raise self.error("parentheses are not allowed in ':language'", x)
            words.append(x.text)
        if not words:
            raise self.error("':language' is empty", node)
        return " ".join(words)

    def scene_properties(self, node: SList) -> dict[str, str]:
        out: dict[str, str] = {}
        for x in node.items[1:]:
            if not isinstance(x, SList) or len(x.items) != 2 or x.head() is None:
                raise self.error("expected '(:floor STYLE)' or '(:wall STYLE)'", x)
            key = x.head()
            assert key is not None
            if key not in (":floor", ":wall"):
                raise self.error(f"unknown scene property '{key}' (':floor', ':wall')", x)
            out[key[1:]] = self.token(x.items[1], "style").lower
        return out

    def typed(self, node: SList | None, what: str) -> list[tuple[Entity, Node]]:
        """`a b - category c - other`; trailing untyped names get the category `what`, as in
        LIBERO's parser."""
        if node is None:
            return []
        out: list[tuple[Entity, Node]] = []
        pending: list[tuple[str, Node]] = []
        items = node.items[1:]
        i = 0
        while i < len(items):
            x = items[i]
            if isinstance(x, Token) and x.text == "-":
                if not pending:
                    raise self.error(f"'-' without a {what} name before it", x)
                if i + 1 >= len(items):
                    raise self.error("'-' must be followed by a category", x)
                category = self.name(items[i + 1], "category")
                out.extend((Entity(name=n, category=category), nd) for n, nd in pending)
                pending = []
                i += 2
                continue
            pending.append((self.name(x, f"{what} name"), x))
            i += 1
        out.extend((Entity(name=n, category=what), nd) for n, nd in pending)
        return out

    def regions(self, node: SList | None, targets: set[str]) -> list[tuple[Region, Node]]:
        if node is None:
            return []
        out: list[tuple[Region, Node]] = []
        seen: dict[str, Node] = {}
        for r in node.items[1:]:
            if not isinstance(r, SList) or not r.items:
                raise self.error("expected a region '(NAME (:target T) ...)'", r)
            name = self.name(r.items[0], "region name")
            fields: dict[str, object] = {}
            for attr in r.items[1:]:
                key = attr.head() if isinstance(attr, SList) else None
                if key not in REGION_ATTRIBUTES:
                    raise self.error(
                        f"unknown region attribute (expected {', '.join(REGION_ATTRIBUTES)})",
                        attr,
                    )
                assert isinstance(attr, SList)
                if key[1:] in fields:
                    raise self.error(f"'{key}' is given twice in region '{name}'", attr)
                fields[key[1:]] = self.region_attribute(key, attr)
            if "target" not in fields:
                raise self.error(f"region '{name}' has no ':target'", r)
            # A target nobody declared is legal in LIBERO (libero_goal's files have regions of a
            # `bowl_drainer_1` they never declare): the region exists as a name but no site is
            # built for it, so no atom may use it (`Problem.entity_names` leaves it out).
            try:
                region = Region(name=name, **fields)  # type: ignore[arg-type]
            except ValidationError as exc:
                err = from_validation_error(exc)
                raise self.error(f"region '{name}': {err.message}", r) from None
            if region.full_name in seen or region.full_name in targets:
                raise self.error(f"region '{region.full_name}' is declared twice", r)
            seen[region.full_name] = r
            out.append((region, r))
        return out

    def region_attribute(self, key: str, attr: SList) -> object:
        args = attr.items[1:]
        if key == ":target":
            if len(args) != 1:
                raise self.error("expected '(:target NAME)'", attr)
            return self.name(args[0], "target")
        if key == ":rgba":
            if len(args) == 1 and isinstance(args[0], SList):
                return self.numbers(args[0], 4, "':rgba'")
            return self.numbers(SList(tuple(args), attr.line, attr.column), 4, "':rgba'")
        if len(args) != 1 or not isinstance(args[0], SList):
            raise self.error(f"expected '({key} ((...) ...))': a list of lists", attr)
        count, what = (4, "a range (x_min y_min x_max y_max)") if key == ":ranges" else (
            2, "a yaw interval (min max)"
        )
        rows = [self.numbers(row, count, what) for row in args[0].items]
        if not rows:
            raise self.error(f"'{key}' lists nothing", attr)
        return rows

    # ------------------------------------------------------------------------- atoms

    def atom(self, node: Node, names: set[str], section: str) -> Atom:
        if not isinstance(node, SList) or node.head() is None:
            raise self.error("expected an atom such as '(On a b)'", node)
        pred_tok = node.items[0]
        assert isinstance(pred_tok, Token)
        pred = pred_tok.lower
        if pred not in PREDICATE_ARITY:
            if pred in CONNECTIVES:
                raise self.error(f"'{pred_tok.text}' is not allowed in ':{section}'", node)
            hint = ""
            if pred == "stack":
                hint = " (Stack is defined in LIBERO but not registered: use On)"
            raise self.error(
                f"unknown predicate '{pred_tok.text}' (LIBERO registers "
                f"{', '.join(PREDICATE_SPELLING.values())}){hint}",
                pred_tok,
            )
        if section == "init" and pred not in INIT_PREDICATES:
            raise self.error(
                f"'{pred_tok.text}' cannot set an initial state (':init' takes "
                f"{', '.join(PREDICATE_SPELLING[p] for p in INIT_PREDICATES)})",
                pred_tok,
            )
        want = PREDICATE_ARITY[pred]
        args_nodes = node.items[1:]
        if want is not None and len(args_nodes) != want:
            raise self.error(
                f"'{pred_tok.text}' takes {want} argument(s), not {len(args_nodes)}", node
            )
        args = []
        for a in args_nodes:
            n = self.name(a, "name")
            if n not in names:
                raise self.error(self.unknown(n, names), a)
            args.append(n)
        return Atom(predicate=pred, args=tuple(args))

    def goal(self, node: SList, names: set[str]) -> Formula:
        body = node.items[1:]
        if len(body) != 1:
            raise self.error(
                f"':goal' holds one formula such as '(And ...)', found {len(body)}", node
            )
        return self.formula(body[0], names)

    def formula(self, node: Node, names: set[str]) -> Formula:
        if isinstance(node, SList) and node.head() in CONNECTIVES:
            kind = node.head()
            children = [self.formula(c, names) for c in node.items[1:]]
            if kind == "not" and len(children) != 1:
                raise self.error(f"'Not' takes one formula, not {len(children)}", node)
            if kind == "or" and not children:
                raise self.error("'Or' needs at least one formula", node)
            return Compound(kind=kind, children=children)  # type: ignore[arg-type]
        return self.atom(node, names, "goal")
