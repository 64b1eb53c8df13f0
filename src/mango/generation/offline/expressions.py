"""Predicate expressions as the rules read them: parsed by `mango.oracle.expr`, tolerantly.

The rules judge text a model wrote, so a malformed expression must not crash them: it has
no atoms here, and the checks that care (the Oracle Hacker, the library Judge, Execution
Reliability) report the parse error itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from mango.oracle.expr import (
    Atom,
    conjuncts,
    format_expression,
    iter_atoms,
    iter_literals,
    parse_or_none,
    rename_entities,
)


def atoms_of(text: str) -> list[Atom]:
    """Every atom of the expression, left to right; none where it does not parse."""
    tree = parse_or_none(text)
    return [] if tree is None else list(iter_atoms(tree))


def positive_atoms(text: str) -> list[Atom]:
    """The atoms that must hold for the expression to hold (not under a `not`)."""
    tree = parse_or_none(text)
    return [] if tree is None else [a for a, positive in iter_literals(tree) if positive]


def substitute(text: str, mapping: Mapping[str, str]) -> str:
    """The expression with parameter names bound to ids (arguments only, never predicates).

    Text that does not parse is returned as it is; the checks report it.
    """
    if not mapping:
        return text
    tree = parse_or_none(text)
    return text if tree is None else format_expression(rename_entities(tree, mapping))


def canonical(text: str) -> str:
    """One spelling per expression (keywords, spacing, parentheses), to compare two."""
    tree = parse_or_none(text)
    return " ".join((text or "").split()) if tree is None else format_expression(tree)


def conjunct_set(text: str) -> set[str]:
    """The canonical top-level conjuncts (the whole text if it does not parse)."""
    tree = parse_or_none(text)
    if tree is None:
        return {canonical(text)}
    return {format_expression(op) for op in conjuncts(tree)}
