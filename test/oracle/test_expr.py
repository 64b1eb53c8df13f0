"""Expression parser, printer and errors (spec §1)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mango.errors import InputError
from mango.oracle import (
    And,
    Atom,
    Const,
    Expr,
    ExpressionError,
    Not,
    Or,
    entities,
    format_expression,
    parse_expression,
)
from mango.oracle.expr import conjuncts, iter_literals, parse_or_none, rename_entities

a, b, c = Atom("up", ("a",)), Atom("up", ("b",)), Atom("up", ("c",))


def test_atoms_and_arguments() -> None:
    assert parse_expression("in(soup_1, basket_1_contain_region)") == Atom(
        "in", ("soup_1", "basket_1_contain_region")
    )
    assert parse_expression("  reset (  )  ") == Atom("reset", ())
    assert parse_expression("f(x,y,z)") == Atom("f", ("x", "y", "z"))


def test_precedence_not_binds_tighter_than_and_than_or() -> None:
    assert parse_expression("up(a) or up(b) and up(c)") == Or((a, And((b, c))))
    assert parse_expression("not up(a) and up(b)") == And((Not(a), b))
    assert parse_expression("not (up(a) and up(b))") == Not(And((a, b)))
    assert parse_expression("(up(a) or up(b)) and up(c)") == And((Or((a, b)), c))
    assert parse_expression("not not up(a)") == Not(Not(a))


def test_chains_flatten_but_parentheses_nest() -> None:
    assert parse_expression("up(a) and up(b) and up(c)") == And((a, b, c))
    assert parse_expression("(up(a) and up(b)) and up(c)") == And((And((a, b)), c))
    assert parse_expression("up(a) or up(b) or up(c)") == Or((a, b, c))


@pytest.mark.parametrize(
    "text",
    [
        "up(a) && up(b) || !up(c)",
        "up(a) AND up(b) OR NOT up(c)",
        "up(a)&&up(b)||!up(c)",
        "up(a)\n  and up(b)\n\tor not up(c)",
    ],
)
def test_keyword_spellings(text: str) -> None:
    assert parse_expression(text) == Or((And((a, b)), Not(c)))


def test_constants() -> None:
    assert parse_expression("true") == Const(True)
    assert parse_expression("FALSE or up(a)") == Or((Const(False), a))


def test_names_are_case_sensitive() -> None:
    assert parse_expression("In(A, B)") == Atom("In", ("A", "B"))
    with pytest.raises(ExpressionError):
        parse_expression("up(a) And up(b)")  # only lower or upper case keywords


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("", 1, "empty expression"),
        ("up(a) and", 10, "found end of expression"),
        ("up(a) and and up(b)", 11, "found 'and'"),
        ("up(a", 5, "',' or ')'"),
        ("up(a,)", 6, "an entity id"),
        ("up a", 4, "'(' after predicate name 'up'"),
        ("(up(a)", 7, "')' to close the '(' at column 1"),
        ("up(a))", 6, "end of expression"),
        ("up(a) & up(b)", 7, "did you mean '&&'"),
        ("up(a) $ up(b)", 7, "unexpected character '$'"),
        ("up(1a)", 4, "unexpected character '1'"),
        ("up(true)", 4, "an entity id"),
        ("up(a) up(b)", 7, "'and', 'or' or end"),
    ],
)
def test_errors_name_the_column_with_a_caret(text: str, column: int, fragment: str) -> None:
    with pytest.raises(ExpressionError) as info:
        parse_expression(text)
    err = info.value
    assert isinstance(err, InputError)
    assert err.expr_column == column
    assert fragment in str(err)
    assert f"column {column}" in str(err)
    caret_line = err.excerpt.splitlines()[-1]
    assert caret_line.index("^") - 4 == column - 1


def test_multiline_errors_name_line_and_column() -> None:
    with pytest.raises(ExpressionError) as info:
        parse_expression("up(a) and\n  up(b) or\n  ?x")
    assert (info.value.expr_line, info.value.expr_column) == (3, 3)
    assert "line 3, column 3" in str(info.value)
    assert "    ?x\n      ^" in str(info.value)


def test_relocated_error_names_file_and_field() -> None:
    with pytest.raises(ExpressionError) as info:
        parse_expression("up(a) or")
    err = info.value.relocated(file="o.json", field="plan[0].actions[0].monitoring[0].handle_as")
    assert str(err).startswith("o.json, field 'plan[0].actions[0].monitoring[0].handle_as': ")
    assert err.expr_column == 9


def test_nesting_limit_is_a_clean_error() -> None:
    with pytest.raises(ExpressionError, match="nested deeper"):
        parse_expression("(" * 5000 + "up(a)" + ")" * 5000)
    with pytest.raises(ExpressionError, match="nested deeper"):
        parse_expression("not " * 5000 + "up(a)")
    assert parse_expression("(" * 100 + "up(a)" + ")" * 100) == a


def test_non_string_is_an_input_error() -> None:
    with pytest.raises(InputError):
        parse_expression(42)  # type: ignore[arg-type]


def test_printer_is_canonical() -> None:
    e = parse_expression("NOT (up(a) || up(b))&&in( x ,y )")
    assert format_expression(e) == "not (up(a) or up(b)) and in(x, y)"
    assert format_expression(And((And((a, b)), c))) == "(up(a) and up(b)) and up(c)"
    assert format_expression(Or((a, Or((b, c))))) == "up(a) or (up(b) or up(c))"


def test_entities_in_first_use_order() -> None:
    assert entities(parse_expression("in(x, r) and not near(robot_hand, x)")) == [
        "x",
        "r",
        "robot_hand",
    ]


def test_literals_carry_their_polarity() -> None:
    e = parse_expression("in(x, r) and not grasped(x) and not (up(a) or not up(b))")
    assert [(str(atom), pos) for atom, pos in iter_literals(e)] == [
        ("in(x, r)", True), ("grasped(x)", False), ("up(a)", False), ("up(b)", True)]
    assert [pos for _, pos in iter_literals(parse_expression("not not up(a)"))] == [True]


def test_conjuncts_are_the_top_level_operands_of_and() -> None:
    assert conjuncts(parse_expression("up(a) and (up(b) or up(c))")) == (a, Or((b, c)))
    assert conjuncts(a) == (a,)
    assert conjuncts(parse_expression("up(a) or up(b)")) == (Or((a, b)),)


def test_rename_entities_touches_arguments_only() -> None:
    e = parse_expression("in(obj_id, target_id) && !grasped(obj_id) || obj_id(target_id)")
    renamed = rename_entities(e, {"obj_id": "bowl_1", "target_id": "drawer_1_region"})
    assert format_expression(renamed) == (
        "in(bowl_1, drawer_1_region) and not grasped(bowl_1) or obj_id(drawer_1_region)")
    assert rename_entities(Const(True), {"x": "y"}) == Const(True)


@pytest.mark.parametrize("text", ["", "pick_up", "up(a) and", "up(a", "up(a) & up(b)",
                                  "up(a))", None, 42, "(" * 300 + "up(a)" + ")" * 300])
def test_parse_or_none_is_none_for_what_does_not_parse(text: object) -> None:
    assert parse_or_none(text) is None


def test_parse_or_none_parses_what_parses() -> None:
    assert parse_or_none(" up(a)&&up(b) ") == And((a, b))


def test_n_ary_nodes_need_two_operands() -> None:
    with pytest.raises(ValueError):
        And((a,))
    with pytest.raises(ValueError):
        Or(())


# ---------------------------------------------------------------------- round trip

_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: s not in {"and", "or", "not", "true", "false", "AND", "OR", "NOT", "TRUE", "FALSE"}
)
_atoms = st.builds(Atom, _names, st.lists(_names, max_size=3).map(tuple))
_leaves = _atoms | st.builds(Const, st.booleans())
exprs = st.recursive(
    _leaves,
    lambda kids: (
        st.builds(Not, kids)
        | st.builds(And, st.lists(kids, min_size=2, max_size=4).map(tuple))
        | st.builds(Or, st.lists(kids, min_size=2, max_size=4).map(tuple))
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(exprs)
def test_print_parse_round_trip(expr: Expr) -> None:
    text = format_expression(expr)
    assert parse_expression(text) == expr
    assert format_expression(parse_expression(text)) == text


@settings(max_examples=200, deadline=None)
@given(exprs, st.sampled_from([("and", "&&"), ("or", "||"), ("not ", "!")]))
def test_symbol_spellings_parse_the_same(expr: Expr, swap: tuple[str, str]) -> None:
    text = format_expression(expr)
    word, symbol = swap
    # Replace keywords only where they are whole tokens (surrounded by spaces or at start).
    swapped = (
        text.replace(f" {word.strip()} ", f" {symbol} ")
        if word != "not "
        else text.replace("not ", "! ")
    )
    if any(n in swapped for n in ("&&", "||", "!")):
        assert parse_expression(swapped) == expr


def test_an_error_in_a_huge_expression_shows_a_window_around_the_problem() -> None:
    """A 10,000-parenthesis expression (or any long line) is not echoed whole: the message
    holds ~80 characters around the caret, which still points at the offending character."""
    from mango.oracle.expr import EXCERPT_HALF, ExpressionError, parse_expression

    text = "up(a) and " + "x" * 5000 + " ) " + "y" * 5000
    with pytest.raises(ExpressionError) as exc:
        parse_expression(text)
    excerpt, caret = str(exc.value).splitlines()[-2:]
    assert len(str(exc.value)) < 400
    assert len(excerpt) <= 4 + 2 * EXCERPT_HALF + 2  # the window and its two ellipses
    assert excerpt[caret.index("^")] == text[exc.value.offset] == ")"
    with pytest.raises(ExpressionError) as deep:
        parse_expression("(" * 10_000)
    assert len(str(deep.value)) < 400
