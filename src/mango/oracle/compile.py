"""Compile expressions to closures over a `StateView`, once per oracle.

The tracker evaluates every pending condition on every state (100 Hz live), so the AST walk,
predicate lookup, fact-key normalisation and arity checks all happen here, ahead of time.
"""

from __future__ import annotations

from collections.abc import Callable

from mango.errors import InputError
from mango.oracle.expr import And, Atom, Const, Expr, Not, Or
from mango.oracle.library import FunctionLibrary
from mango.oracle.predicates import EvaluationError, StateView

Condition = Callable[[StateView], bool]


def check_atom(atom: Atom, library: FunctionLibrary) -> None:
    """Raise `InputError` if the atom names an undeclared predicate or has the wrong arity."""
    spec = library.get(atom.predicate)
    if spec is None:
        raise InputError(library.unknown(atom.predicate))
    if spec.arity != len(atom.args):
        raise InputError(
            f"'{atom.predicate}' takes {spec.arity} argument(s) "
            f"({', '.join(spec.input_arguments)}), got {len(atom.args)} in {atom}"
        )


# Relative cost of evaluating a predicate from geometry (unlisted: a lookup, cost 1).
PREDICATE_COST = {"up": 8, "in": 2, "on": 2, "near": 2, "left_of": 2, "right_of": 2}


def cost(expr: Expr) -> int:
    """Rough evaluation cost of an expression, used to order and/or operands."""
    if isinstance(expr, Atom):
        return PREDICATE_COST.get(expr.predicate, 1)
    if isinstance(expr, Const):
        return 0
    if isinstance(expr, Not):
        return cost(expr.operand)
    return sum(cost(op) for op in expr.operands)


def compile_expression(expr: Expr, library: FunctionLibrary) -> Condition:
    """A closure `f(view) -> bool`; raises `InputError` for unknown predicates or arity."""
    if isinstance(expr, Atom):
        return _compile_atom(expr, library)
    if isinstance(expr, Const):
        value = expr.value
        return lambda _v: value
    if isinstance(expr, Not):
        inner = compile_expression(expr.operand, library)
        return lambda v: not inner(v)
    # Operands run cheapest first (a boolean and/or is commutative): with `up(x) and
    # grasped(x)` the contact lookup usually short-circuits the support search.
    ordered = sorted(expr.operands, key=cost)
    parts = [compile_expression(op, library) for op in ordered]
    if isinstance(expr, And):
        if len(parts) == 2:
            f, g = parts
            return lambda v: f(v) and g(v)

        def all_of(v: StateView) -> bool:
            return all(p(v) for p in parts)

        return all_of
    assert isinstance(expr, Or)
    if len(parts) == 2:
        f, g = parts
        return lambda v: f(v) or g(v)

    def any_of(v: StateView) -> bool:
        return any(p(v) for p in parts)

    return any_of


def _compile_atom(atom: Atom, library: FunctionLibrary) -> Condition:
    check_atom(atom, library)
    spec = library.predicates[atom.predicate]
    key, text, args = atom.key, str(atom), atom.args
    impl = spec.implementation

    if impl is None:

        def fact_only(v: StateView) -> bool:
            r = v.memo.get(key)
            if r is None:
                raise EvaluationError(
                    f"no fact for {text} in the state, and '{atom.predicate}' has no built-in "
                    "implementation to compute it from geometry"
                )
            return r

        return fact_only

    # Specialised by arity: this closure runs for every atom of every pending action per state.
    if len(args) == 1:
        (a0,) = args

        def evaluate1(v: StateView) -> bool:
            memo = v.memo
            r = memo.get(key)
            if r is None:
                try:
                    r = memo[key] = impl(v, a0)
                except EvaluationError as exc:
                    raise EvaluationError(f"{exc.message} in {text}") from None
            return r

        return evaluate1
    if len(args) == 2:
        a0, a1 = args

        def evaluate2(v: StateView) -> bool:
            memo = v.memo
            r = memo.get(key)
            if r is None:
                try:
                    r = memo[key] = impl(v, a0, a1)
                except EvaluationError as exc:
                    raise EvaluationError(f"{exc.message} in {text}") from None
            return r

        return evaluate2

    def evaluate(v: StateView) -> bool:
        memo = v.memo
        r = memo.get(key)
        if r is None:
            try:
                r = memo[key] = impl(v, *args)
            except EvaluationError as exc:
                raise EvaluationError(f"{exc.message} in {text}") from None
        return r

    return evaluate
