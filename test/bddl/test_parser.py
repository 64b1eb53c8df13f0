"""The BDDL reader, parser and writer on our own files in LIBERO's format.

LIBERO's conventions these tests pin, read from Lifelong-Robot-Learning/LIBERO:
- `libero/libero/envs/bddl_utils.py` (`robosuite_parse_problem`, `get_regions`): regions are
  named `<target>_<region>`; `:ranges` rows are 4 numbers, `:yaw_rotation` pairs (the last
  wins), `:rgba` 4 numbers; `a b - category` typed lists, trailing untyped names get the
  section's default category; a goal that is not an `And` is one atom.
- `bddl/parsing.py` (StanfordVL/bddl, `scan_tokens`, which LIBERO calls): `;` comments to the
  end of the line, the whole file lower-cased (so keywords and names are case-insensitive).
- `libero/libero/envs/problems/libero_kitchen_tabletop_manipulation.py`: a range is
  (x_min, y_min, x_max, y_max) and LIBERO asserts x_max >= x_min, y_max >= y_min.
- `libero/libero/envs/predicates/__init__.py`: the predicate table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mango.bddl.model import Atom, Compound, Problem
from mango.bddl.parser import parse_bddl, read_bddl
from mango.bddl.writer import write_bddl
from mango.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "bddl"
FILES = sorted(DATA.glob("*.bddl"))


def test_there_are_test_files() -> None:
    assert len(FILES) >= 3


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_round_trip(path: Path) -> None:
    parsed = read_bddl(path)
    text = write_bddl(parsed)
    again = parse_bddl(text, "written")
    assert again == parsed
    assert write_bddl(again) == text  # the writer is a fixed point after one pass


def test_kitchen_sections() -> None:
    p = read_bddl(DATA / "kitchen_every_section.bddl")
    assert p.name == "LIBERO_Kitchen_Tabletop_Manipulation"
    assert p.domain == "robosuite"
    # the language keeps its words and case; the comment after a range is gone
    assert p.language == (
        "Put the bowl on the table in the top drawer, close the microwave and turn on the stove"
    )
    names = [r.full_name for r in p.regions]
    assert "kitchen_table_bowl_init_region" in names  # mixed-case name, lower-cased
    assert "wooden_cabinet_1_top_region" in names and "flat_stove_1_cook_region" in names
    cab = p.region("kitchen_table_wooden_cabinet_init_region")
    assert cab is not None and cab.ranges == [(-0.02, -0.32, 0.0, -0.3)]
    assert cab.centre() == pytest.approx((-0.01, -0.31))
    assert cab.yaw == pytest.approx((3.141592653589793, 3.141592653589793))
    mw = p.region("kitchen_table_microwave_init_region")
    assert mw is not None and mw.rgba == (0, 0, 1, 0)
    assert mw.yaw == pytest.approx((-1.5707963267948966, -0.7853981633974483))
    assert p.region("flat_stove_1_cook_region").ranges == []  # a site of the fixture
    assert [(e.name, e.category) for e in p.objects] == [
        ("akita_black_bowl_1", "akita_black_bowl"),
        ("akita_black_bowl_2", "akita_black_bowl"),
        ("plate_1", "plate"),
        ("butter_1", "butter"),
    ]
    assert [e.name for e in p.fixtures] == [
        "kitchen_table", "wooden_cabinet_1", "flat_stove_1", "microwave_1"
    ]
    assert p.obj_of_interest == ["akita_black_bowl_1", "wooden_cabinet_1"]
    preds = [a.predicate for a in p.init]
    assert set(preds) == {"on", "in", "open", "close", "turnoff"}
    assert Atom(predicate="on", args=("akita_black_bowl_1", "kitchen_table_bowl_init_region")) \
        in p.init  # `ON` in the file
    assert isinstance(p.goal, Compound) and p.goal.kind == "and"
    assert [a.predicate for a in p.goal_atoms()] == ["in", "close", "turnon", "on", "open"]


def test_floor_connectives_and_defaults() -> None:
    p = read_bddl(DATA / "floor_not_or.bddl")
    assert p.requirements == [":typing"]
    assert p.scene_properties == {"floor": "gray-ceramic", "wall": "yellow-linen"}
    mystery = next(e for e in p.objects if e.name == "mystery_1")
    assert mystery.category == "object"  # LIBERO's default for an untyped name
    assert isinstance(p.goal, Compound)
    kinds = [c.kind for c in p.goal.children]
    assert kinds == ["or", "not", "not", "atom", "atom", "not", "atom"]
    preds = {a.predicate for a in p.goal_atoms()}
    assert preds == {"up", "in", "incontact", "turnoff", "true", "false", "printjointstate"}


def test_single_atom_goal_and_dangling_region() -> None:
    p = read_bddl(DATA / "study_single_atom.bddl")
    shelf_top = "wooden_two_layer_shelf_1_top_side"
    assert p.goal == Atom(predicate="on", args=("black_book_1", shelf_top))
    assert [r.full_name for r in p.dangling_regions()] == ["bowl_drainer_1_right_region"]
    assert "bowl_drainer_1_right_region" not in p.entity_names()
    assert p.obj_of_interest == []


def test_every_predicate_is_covered_by_the_test_files() -> None:
    seen = set()
    for f in FILES:
        p = read_bddl(f)
        seen |= {a.predicate for a in (*p.init, *p.goal_atoms())}
    from mango.bddl.model import PREDICATE_ARITY

    assert seen == set(PREDICATE_ARITY)


MINI = """(define (problem p)
  (:domain robosuite)
  (:language do it)
  (:regions
    (r1 (:target table) (:ranges ((0 0 1 1)))))
  (:fixtures table - table)
  (:objects a b - thing)
  (:init (On a table_r1))
  (:goal (And (On a b)))
)
"""


def _error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        parse_bddl(text, "task.bddl")
    return info.value


def test_the_mini_problem_parses() -> None:
    p = parse_bddl(MINI)
    assert isinstance(p, Problem) and p.goal_atoms()[0].args == ("a", "b")


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        (MINI.replace("(:goal (And (On a b)))", "(:goal (And (On a b))"), 1, 1, "never closed"),
        (MINI + ")", 11, 1, "without a matching"),
        (MINI + "(define)", 11, 1, "text after"),
        ("", 1, 1, "no BDDL problem"),
        ("define", 1, 1, "expected '(define"),
        (MINI.replace("(define", "(defne"), 1, 2, "starts with '(define'"),
        (MINI.replace("(:init", "(:inti"), 8, 3, "unknown section"),
        (MINI.replace("(:init (On a table_r1))", "(:init)\n  (:init)"), 9, 3, "given twice"),
        (MINI.replace("(:goal (And (On a b)))", ""), 1, 1, "missing '(:goal"),
        (MINI.replace("(:language do it)", ""), 1, 1, "missing '(:language"),
        (MINI.replace("robosuite", "kitchen"), 2, 12, "domain 'robosuite'"),
        (MINI.replace("(On a b)", "(Onto a b)"), 9, 16, "unknown predicate 'Onto'"),
        (MINI.replace("(On a b)", "(Stack a b)"), 9, 16, "not registered"),
        (MINI.replace("(On a b)", "(On a)"), 9, 15, "takes 2 argument(s), not 1"),
        (MINI.replace("(On a b)", "(Open a b)"), 9, 15, "takes 1 argument(s), not 2"),
        (MINI.replace("(On a b)", "(On a c)"), 9, 21, "'c' is not a declared"),
        (MINI.replace("(On a table_r1)", "(On a r1)"), 8, 16, "did you mean 'table_r1'"),
        (MINI.replace("(On a table_r1)", "(Up a)"), 8, 11, "cannot set an initial state"),
        (MINI.replace("(On a table_r1)", "(And (On a b))"), 8, 10, "not allowed in ':init'"),
        (MINI.replace("(And (On a b))", "(Not (On a b) (On b a))"), 9, 10, "'Not' takes one"),
        (MINI.replace("(And (On a b))", "(Or)"), 9, 10, "'Or' needs"),
        (MINI.replace("(:goal (And (On a b)))", "(:goal (On a b) (On b a))"), 9, 3, "one formula"),
        (MINI.replace("(0 0 1 1)", "(0 0 1)"), 5, 35, "needs 4 numbers, found 3"),
        (MINI.replace("(0 0 1 1)", "(0 0 x 1)"), 5, 40, "expected a number"),
        (MINI.replace("(0 0 1 1)", "(0 0 1 nan)"), 5, 42, "must be finite"),
        (MINI.replace("(0 0 1 1)", "(1 0 0 1)"), 5, 5, "not (x_min y_min x_max y_max)"),
        (MINI.replace("(:target table)", "(:parent table)"), 5, 9, "unknown region attribute"),
        (MINI.replace("(:target table)", ""), 5, 5, "has no ':target'"),
        (MINI.replace("(:ranges ((0 0 1 1)))", "(:target table)"), 5, 25, "given twice"),
        (MINI.replace("a b - thing", "a a - thing"), 7, 15, "declared twice"),
        (MINI.replace("a b - thing", "a b -"), 7, 17, "followed by a category"),
        (MINI.replace("a b - thing", "- thing"), 7, 13, "without a object name"),
        (MINI.replace("a b - thing", "a b-c - thing"), 7, 15, "not a valid object name"),
        (MINI.replace("(:language do it)", "(:language do (it))"), 3, 17, "parentheses"),
        (MINI.replace("(problem p)", "(problem)"), 1, 9, "expected '(problem NAME)'"),
    ],
)
def test_errors_name_line_and_column(text: str, line: int, column: int, words: str) -> None:
    err = _error(text)
    assert words in err.message, err.message
    assert (err.file, err.line, err.column) == ("task.bddl", line, column), str(err)
    assert str(err).startswith(f"task.bddl:{line}:{column}: ")


def test_comments_and_case() -> None:
    text = MINI.replace("(:goal (And (On a b)))", "(:GOAL ; the goal\n (AND (on A B)))")
    assert parse_bddl(text).goal_atoms() == parse_bddl(MINI).goal_atoms()


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    err = _error("(" * 5000 + ")" * 5000)
    assert "nested deeper" in err.message


def test_read_bddl_names_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_bddl(tmp_path / "none.bddl")
    assert "cannot read BDDL file" in str(info.value)
