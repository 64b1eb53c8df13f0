"""S-expressions as BDDL writes them: tokens and nested lists that remember where they stood.

LIBERO reads a BDDL file with `bddl.parsing.scan_tokens`: `;` starts a comment that runs to the
end of the line, `(` and `)` delimit lists, anything else between whitespace is a token. This
reader accepts the same text but keeps the line and column of every token and list, so the
parser above it can say where a problem is instead of failing somewhere in a nested list.
"""

from __future__ import annotations

from dataclasses import dataclass

from mango.errors import InputError

MAX_DEPTH = 100  # nesting limit: a clear error instead of a RecursionError on hostile input


@dataclass(frozen=True, slots=True)
class Token:
    """One bare token (a keyword, a name or a number) with its 1-based line and column."""

    text: str
    line: int
    column: int

    @property
    def lower(self) -> str:
        """BDDL keywords and names are case-insensitive (LIBERO lower-cases the whole file)."""
        return self.text.lower()


@dataclass(frozen=True, slots=True)
class SList:
    """A parenthesized list; `line`/`column` are those of its `(`."""

    items: tuple[Node, ...]
    line: int
    column: int

    def head(self) -> str | None:
        """The first item's lower-cased text when it is a token (a section or predicate name)."""
        if self.items and isinstance(self.items[0], Token):
            return self.items[0].lower
        return None


Node = Token | SList


def read_sexpr(text: str, file: str | None = None) -> SList:
    """The one top-level list of `text`; errors name the file, line and column."""
    stack: list[tuple[list[Node], int, int]] = []  # open lists: items, line, column
    top: list[Node] = []
    items = top
    line, col, i, n = 1, 1, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            line, col, i = line + 1, 1, i + 1
            continue
        if ch.isspace():
            i, col = i + 1, col + 1
            continue
        if ch == ";":
            end = text.find("\n", i)
            end = n if end < 0 else end
            col += end - i
            i = end
            continue
        if ch == "(":
            if len(stack) >= MAX_DEPTH:
                raise InputError(f"lists nested deeper than {MAX_DEPTH}", file, line, col)
            stack.append((items, line, col))
            items = []
            i, col = i + 1, col + 1
            continue
        if ch == ")":
            if not stack:
                raise InputError("')' without a matching '('", file, line, col)
            outer, oline, ocol = stack.pop()
            outer.append(SList(tuple(items), oline, ocol))
            items = outer
            i, col = i + 1, col + 1
            continue
        start = i
        while i < n and not text[i].isspace() and text[i] not in "();":
            i += 1
        items.append(Token(text[start:i], line, col))
        col += i - start
    if stack:
        _, oline, ocol = stack[-1]
        raise InputError("'(' is never closed", file, oline, ocol)
    if not top:
        raise InputError("no BDDL problem: the file holds no '(define ...)'", file, 1, 1)
    first = top[0]
    if isinstance(first, Token):
        raise InputError(
            f"expected '(define ...)', found '{first.text}'", file, first.line, first.column
        )
    if len(top) > 1:
        extra = top[1]
        raise InputError(
            "text after the problem's closing ')': a file holds one '(define ...)'",
            file,
            extra.line,
            extra.column,
        )
    return first
