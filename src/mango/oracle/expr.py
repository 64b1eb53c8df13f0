"""Predicate expressions (spec §1): tokenizer, recursive-descent parser, AST and printer.

Hand-written rather than generated so that errors can point at the exact column with a caret
excerpt, and so that parsing stays fast when thousands of generated candidates are checked.
`and`/`or` chains are flattened into one n-ary node; an explicitly parenthesized chain stays
nested, so `parse_expression(format_expression(e)) == e` holds for every AST.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from mango.errors import InputError

MAX_DEPTH = 200  # nesting limit: a clear error instead of a RecursionError on hostile input

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = {
    "and": "AND",
    "AND": "AND",
    "or": "OR",
    "OR": "OR",
    "not": "NOT",
    "NOT": "NOT",
    "true": "TRUE",
    "TRUE": "TRUE",
    "false": "FALSE",
    "FALSE": "FALSE",
}
_SYMBOLS = {"&&": "AND", "||": "OR", "!": "NOT", "(": "(", ")": ")", ",": ","}
_DESCRIBE = {
    "AND": "'and'",
    "OR": "'or'",
    "NOT": "'not'",
    "TRUE": "'true'",
    "FALSE": "'false'",
    "(": "'('",
    ")": "')'",
    ",": "','",
    "NAME": "a name",
    "EOF": "end of expression",
}


EXCERPT_HALF = 40  # characters of the expression shown each side of the problem


class ExpressionError(InputError):
    """A malformed expression, with the 1-based line/column and a caret excerpt.

    `expr_line`/`expr_column` locate the problem inside the expression text; `line`/`column`
    stay free for the enclosing file, so an error in an oracle's `handle_as` names both.
    """

    def __init__(
        self,
        message: str,
        text: str,
        offset: int,
        *,
        file: str | None = None,
        field: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.reason = message
        self.text = text
        self.offset = max(0, min(offset, len(text)))
        self.expr_line, self.expr_column, self.excerpt = _locate(text, self.offset)
        where = f"column {self.expr_column}"
        if "\n" in text:
            where = f"line {self.expr_line}, {where}"
        super().__init__(
            f"{message} at {where}\n{self.excerpt}",
            file=file,
            field=field,
            line=line,
            column=column,
        )

    def relocated(
        self,
        *,
        file: str | None = None,
        field: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> ExpressionError:
        """The same error attributed to a file, its line/column and field (e.g. `handle_as`)."""
        return ExpressionError(
            self.reason, self.text, self.offset, file=file, field=field, line=line, column=column
        )


def _clip(token: str) -> str:
    """A token as a message quotes it: whole, or its start when it is very long."""
    return token if len(token) <= EXCERPT_HALF else token[:EXCERPT_HALF] + "…"


def _locate(text: str, offset: int) -> tuple[int, int, str]:
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    column = offset - start + 1
    src = text[start:end].replace("\t", " ")
    caret = column - 1
    if len(src) > 2 * EXCERPT_HALF:  # a window around the problem, not 40 KB of input
        lo = max(0, min(caret - EXCERPT_HALF, len(src) - 2 * EXCERPT_HALF))
        head, tail = ("…" if lo > 0 else ""), ("…" if lo + 2 * EXCERPT_HALF < len(src) else "")
        src = head + src[lo:lo + 2 * EXCERPT_HALF] + tail
        caret = caret - lo + len(head)
    return line, column, f"    {src}\n    {' ' * caret}^"


# --------------------------------------------------------------------------------------- AST


@dataclass(frozen=True, slots=True)
class Atom:
    """A predicate applied to entity ids, e.g. `in(soup_1, basket_1_contain_region)`."""

    predicate: str
    args: tuple[str, ...]

    @property
    def key(self) -> str:
        """Whitespace-free ground atom, the form fact keys are compared in."""
        return f"{self.predicate}({','.join(self.args)})"

    def __str__(self) -> str:
        return f"{self.predicate}({', '.join(self.args)})"


@dataclass(frozen=True, slots=True)
class Const:
    value: bool


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expr


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if len(self.operands) < 2:
            raise ValueError("And needs at least two operands")


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if len(self.operands) < 2:
            raise ValueError("Or needs at least two operands")


Expr = Atom | Const | Not | And | Or


def iter_atoms(expr: Expr) -> Iterator[Atom]:
    """Every atom of an expression, left to right (duplicates included)."""
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Atom):
            yield node
        elif isinstance(node, Not):
            stack.append(node.operand)
        elif isinstance(node, And | Or):
            stack.extend(reversed(node.operands))


def iter_literals(expr: Expr) -> Iterator[tuple[Atom, bool]]:
    """Every atom with its polarity: True where an even number of `not`s is above it."""
    stack: list[tuple[Expr, bool]] = [(expr, True)]
    while stack:
        node, positive = stack.pop()
        if isinstance(node, Atom):
            yield node, positive
        elif isinstance(node, Not):
            stack.append((node.operand, not positive))
        elif isinstance(node, And | Or):
            stack.extend((op, positive) for op in reversed(node.operands))


def entities(expr: Expr) -> list[str]:
    """Entity ids an expression mentions, in first-use order."""
    seen: dict[str, None] = {}
    for atom in iter_atoms(expr):
        for a in atom.args:
            seen.setdefault(a, None)
    return list(seen)


def conjuncts(expr: Expr) -> tuple[Expr, ...]:
    """The top-level operands of a conjunction; any other expression is its own conjunct."""
    return expr.operands if isinstance(expr, And) else (expr,)


def rename_entities(expr: Expr, mapping: Mapping[str, str]) -> Expr:
    """The expression with entity arguments renamed (parameter names bound to scene ids);
    predicate names are never touched."""
    if isinstance(expr, Atom):
        return Atom(expr.predicate, tuple(mapping.get(a, a) for a in expr.args))
    if isinstance(expr, Not):
        return Not(rename_entities(expr.operand, mapping))
    if isinstance(expr, And | Or):
        return type(expr)(tuple(rename_entities(op, mapping) for op in expr.operands))
    return expr


# ---------------------------------------------------------------------------------- printing

_PREC = {Or: 1, And: 2, Not: 3, Atom: 4, Const: 4}


def format_expression(expr: Expr) -> str:
    """Canonical text: lower-case keywords, `, ` between arguments, minimal parentheses."""
    if isinstance(expr, Atom):
        return str(expr)
    if isinstance(expr, Const):
        return "true" if expr.value else "false"
    if isinstance(expr, Not):
        inner = format_expression(expr.operand)
        if _PREC[type(expr.operand)] < _PREC[Not]:
            inner = f"({inner})"
        return f"not {inner}"
    word = " and " if isinstance(expr, And) else " or "
    parts = []
    for op in expr.operands:
        s = format_expression(op)
        # Same-kind children are parenthesized too: the parser flattens unparenthesized chains.
        if _PREC[type(op)] <= _PREC[type(expr)]:
            s = f"({s})"
        parts.append(s)
    return word.join(parts)


# ----------------------------------------------------------------------------------- parsing


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str
    offset: int


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        m = NAME_RE.match(text, i)
        if m:
            word = m.group()
            toks.append(_Tok(_KEYWORDS.get(word, "NAME"), word, i))
            i = m.end()
            continue
        two = text[i : i + 2]
        if two in _SYMBOLS:
            toks.append(_Tok(_SYMBOLS[two], two, i))
            i += 2
            continue
        if c in _SYMBOLS:
            toks.append(_Tok(_SYMBOLS[c], c, i))
            i += 1
            continue
        if c in "&|":
            raise ExpressionError(f"unexpected '{c}' (did you mean '{c * 2}'?)", text, i)
        raise ExpressionError(f"unexpected character {c!r}", text, i)
    toks.append(_Tok("EOF", "", n))
    return toks


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def error(self, expected: str, tok: _Tok | None = None) -> ExpressionError:
        tok = tok or self.peek()
        got = _DESCRIBE["EOF"] if tok.kind == "EOF" else f"'{_clip(tok.text)}'"
        return ExpressionError(f"expected {expected}, found {got}", self.text, tok.offset)

    def expect(self, kind: str, expected: str) -> _Tok:
        if self.peek().kind != kind:
            raise self.error(expected)
        return self.take()

    def parse(self) -> Expr:
        if self.peek().kind == "EOF":
            raise ExpressionError("empty expression", self.text, 0)
        expr = self.parse_or()
        if self.peek().kind != "EOF":
            raise self.error("'and', 'or' or end of expression")
        return expr

    def enter(self, tok: _Tok) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(
                f"expression nested deeper than {MAX_DEPTH} levels", self.text, tok.offset
            )

    def parse_or(self) -> Expr:
        ops = [self.parse_and()]
        while self.peek().kind == "OR":
            self.take()
            ops.append(self.parse_and())
        return ops[0] if len(ops) == 1 else Or(tuple(ops))

    def parse_and(self) -> Expr:
        ops = [self.parse_not()]
        while self.peek().kind == "AND":
            self.take()
            ops.append(self.parse_not())
        return ops[0] if len(ops) == 1 else And(tuple(ops))

    def parse_not(self) -> Expr:
        negations = 0
        while self.peek().kind == "NOT":
            self.enter(self.take())
            negations += 1
        expr = self.parse_atom()
        self.depth -= negations
        for _ in range(negations):
            expr = Not(expr)
        return expr

    def parse_atom(self) -> Expr:
        tok = self.peek()
        if tok.kind == "TRUE" or tok.kind == "FALSE":
            self.take()
            return Const(tok.kind == "TRUE")
        if tok.kind == "(":
            self.enter(self.take())
            expr = self.parse_or()
            self.expect(")", "')' to close the '(' at column " + str(tok.offset + 1))
            self.depth -= 1
            return expr
        if tok.kind == "NAME":
            self.take()
            if self.peek().kind != "(":
                raise self.error(f"'(' after predicate name '{_clip(tok.text)}'")
            self.take()
            args: list[str] = []
            if self.peek().kind != ")":
                while True:
                    arg = self.peek()
                    if arg.kind != "NAME":
                        raise self.error("an entity id")
                    args.append(self.take().text)
                    if self.peek().kind == ",":
                        self.take()
                        continue
                    if self.peek().kind != ")":
                        raise self.error(
                            f"',' or ')' in the arguments of '{_clip(tok.text)}'")
                    break
            self.take()
            return Atom(tok.text, tuple(args))
        raise self.error("a predicate, '(', 'not', 'true' or 'false'")


def parse_expression(text: str) -> Expr:
    """Parse spec §1 syntax into an AST; raises `ExpressionError` with column and caret."""
    if not isinstance(text, str):
        raise InputError(f"an expression must be a string, not {type(text).__name__}")
    return _Parser(text).parse()


def parse_or_none(text: object) -> Expr | None:
    """The AST of `text`, or None where it is not a well-formed expression.

    For rules that judge a model's answers: they must report garbage, not crash on it.
    """
    if not isinstance(text, str):
        return None
    try:
        return _Parser(text).parse()
    except ExpressionError:
        return None
