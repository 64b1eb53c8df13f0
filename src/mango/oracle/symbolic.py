"""The benchmark-style baseline: one goal expression checked on the last state only.

LIBERO and similar benchmarks judge a run by its end state. `SymbolicOracle` reproduces that
so users can compare it with a fine-grained oracle on the same trace: it says whether the goal
held at the end, and when it first held, but nothing about order or where a run went wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from mango.errors import InputError
from mango.oracle.compile import compile_expression
from mango.oracle.expr import Expr, ExpressionError, format_expression, parse_expression
from mango.oracle.library import FunctionLibrary
from mango.oracle.predicates import EvaluationError, StateView
from mango.oracle.world_state import WorldState


@dataclass(frozen=True)
class SymbolicReport:
    verdict: Literal["pass", "fail"]
    goal: str
    t_end: float | None  # time of the last state (None for an empty trace)
    first_satisfied_t: float | None  # first state where the goal held, if ever
    n_states: int

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "goal": self.goal,
            "t_end": self.t_end,
            "first_satisfied_t": self.first_satisfied_t,
            "n_states": self.n_states,
        }


class SymbolicOracle:
    """Checks a goal expression on the final state of a trace."""

    def __init__(self, goal: str | Expr, library: FunctionLibrary | None = None) -> None:
        self.library = library or FunctionLibrary.default()
        if isinstance(goal, str):
            try:
                goal = parse_expression(goal)
            except ExpressionError as exc:
                raise exc.relocated(field="goal") from None
        self.goal = goal
        self._extents: dict[tuple, tuple[float, float, float]] = {}
        try:
            self._cond = compile_expression(goal, self.library)
        except InputError as exc:
            raise InputError(exc.message, field="goal") from None

    def holds(self, state: WorldState) -> bool:
        """Whether the goal holds in one state."""
        try:
            return self._cond(StateView(state, self.library.thresholds, self._extents))
        except EvaluationError as exc:
            raise EvaluationError(f"goal at t={state.t}: {exc.message}") from None

    def check(self, states: Iterable[WorldState]) -> SymbolicReport:
        """Pass when the goal holds in the last state."""
        n, first, last_value, t_end = 0, None, False, None
        for state in states:
            n += 1
            t_end = state.t
            last_value = self.holds(state)
            if last_value and first is None:
                first = state.t
        return SymbolicReport(
            verdict="pass" if n and last_value else "fail",
            goal=format_expression(self.goal),
            t_end=t_end,
            first_satisfied_t=first,
            n_states=n,
        )
