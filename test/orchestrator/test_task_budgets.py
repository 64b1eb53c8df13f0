"""An ExecuteTask goal's numbers, checked before anything runs (issue #41, class 5): a NaN,
infinite or negative time budget is refused naming `time_budget` (a NaN passed `< 0` and the
task then "failed" with the arm never moved); 0 keeps the documented default; the run's own
float settings are held to the same rule."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mango.errors import InputError
from mango.orchestrator.config import (
    MAX_STEP_BUDGET,
    OrchestratorConfig,
    TaskBudgets,
    task_budgets,
)


@pytest.mark.parametrize("budget", [math.nan, -math.nan, math.inf, -math.inf, -1.0, -1e-300,
                                    "5", None])
def test_a_nan_infinite_or_negative_time_budget_is_refused_naming_the_field(
        budget: object) -> None:
    with pytest.raises(InputError) as err:
        task_budgets(budget, 0)  # type: ignore[arg-type]
    assert err.value.field == "time_budget"
    assert "finite number of seconds" in str(err.value) and repr(budget) in str(err.value)


def test_zero_keeps_the_defaults_and_a_finite_budget_is_taken() -> None:
    assert task_budgets(0.0, 0) == TaskBudgets(None, None)
    assert task_budgets(-0.0, 0) == TaskBudgets(None, None)
    assert task_budgets(12.5, 7) == TaskBudgets(12.5, 7)
    assert task_budgets(5e-324, MAX_STEP_BUDGET) == TaskBudgets(5e-324, MAX_STEP_BUDGET)


@pytest.mark.parametrize("steps", [-1, MAX_STEP_BUDGET + 1, 2.0, True])
def test_a_step_budget_outside_uint32_is_refused_naming_the_field(steps: object) -> None:
    with pytest.raises(InputError) as err:
        task_budgets(1.0, steps)  # type: ignore[arg-type]
    assert err.value.field == "step_budget"


@given(st.floats(allow_nan=True, allow_infinity=True), st.integers(0, MAX_STEP_BUDGET))
def test_every_time_budget_is_refused_or_a_finite_positive_horizon(budget: float,
                                                                    steps: int) -> None:
    try:
        got = task_budgets(budget, steps)
    except InputError as exc:
        assert exc.field == "time_budget"
        assert not (math.isfinite(budget) and budget >= 0)
        return
    assert got.horizon_s is None if budget == 0 else (
        got.horizon_s == budget and math.isfinite(budget) and budget > 0)
    assert got.max_decisions == (steps or None)


@pytest.mark.parametrize("key", ["monitor_hz", "no_progress_s", "halt_settle_s",
                                 "finish_grace_s", "vlm_monitor_hz", "horizon_s"])
@pytest.mark.parametrize("value", [math.nan, math.inf, 0.0, -2.0])
def test_the_runs_float_settings_must_be_finite_and_positive(key: str, value: float) -> None:
    with pytest.raises(InputError) as err:
        OrchestratorConfig(**{key: value})  # type: ignore[arg-type]
    assert err.value.field == key
