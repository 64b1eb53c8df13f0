"""StepTracker: spec §5 semantics, driven by facts-only world states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mango.errors import InputError
from mango.oracle import (
    EvaluationError,
    Report,
    StepTracker,
    WorldState,
    check_trace,
    load_oracle,
)


def act(name: str, expr: str) -> dict:
    return {"action_id": name, "monitoring": [{"oracle_id": name, "handle_as": expr}]}


def seq(*children: dict) -> dict:
    return {"execution_mode": "sequential", "actions": list(children)}


def anyo(*children: dict) -> dict:
    return {"execution_mode": "any_order", "actions": list(children)}


def oracle(mode: str, *steps: dict) -> dict:
    return {"instruction": "test", "execution_mode": mode, "plan": list(steps)}


NAMES = "abcpqrvwxyz"
ATOMS = [f"{p}({n})" for p in ("up", "grasped") for n in NAMES] + [f"in({n},box)" for n in NAMES]


def states(*true_sets: str, dt: float = 1.0) -> list[WorldState]:
    """One state per argument: the space-separated atoms true in it (all others false)."""
    atoms = ATOMS
    assert all(a in atoms for s in true_sets for a in s.split())
    return [
        WorldState(t=i * dt, facts={a: a in s.split() for a in atoms})
        for i, s in enumerate(true_sets)
    ]


# Two chains: pick/place a, pick/place b; g(x) = grasped(x), i(x) = in(x, box)
TWO_CHAINS = oracle(
    "any_order",
    seq(act("pick_a", "grasped(a)"), act("place_a", "in(a,box)")),
    seq(act("pick_b", "grasped(b)"), act("place_b", "in(b,box)")),
)


def test_sequential_completes_in_order_and_passes() -> None:
    o = oracle("sequential", seq(act("one", "up(a)"), act("two", "up(b)"), act("three", "up(c)")))
    rep = check_trace(o, states("", "up(a)", "up(b)", "up(c)"))
    assert rep.verdict == "pass" and rep.failed_step is None
    assert [s.completed_t for s in rep.steps] == [1.0, 2.0, 3.0]
    assert rep.events == ()


def test_sequential_rising_edge_before_enabled_is_out_of_order() -> None:
    o = oracle("sequential", seq(act("one", "up(a)"), act("two", "up(b)")))
    rep = check_trace(o, states("", "up(b)", "", "up(a)"))
    assert rep.verdict == "fail"
    assert rep.failed_step == "1.2"
    assert [(e.kind, e.path, e.t) for e in rep.events] == [("out_of_order", "1.2", 1.0)]
    assert rep.steps[1].status == "incomplete"


def test_out_of_order_condition_still_true_completes_once_enabled() -> None:
    o = oracle("sequential", seq(act("one", "up(a)"), act("two", "up(b)")))
    rep = check_trace(o, states("", "up(b)", "up(a) up(b)"))
    assert rep.verdict == "pass"
    assert [e.kind for e in rep.events] == ["out_of_order"]
    assert rep.steps[1].completed_t == 2.0  # completes in the state that enabled it


def test_conditions_true_in_first_state_are_not_events() -> None:
    o = oracle("sequential", seq(act("one", "up(a)"), act("two", "up(b)")))
    rep = check_trace(o, states("up(b)", "up(b)", "up(b)"))
    assert rep.events == ()
    # 1.1 never completes, so 1.2 stays disabled; it is not the failed step
    assert rep.failed_step == "1.1"


def test_single_state_with_everything_true_passes_by_cascade() -> None:
    o = oracle("sequential", seq(act("one", "up(a)"), act("two", "up(b)")))
    rep = check_trace(o, states("up(a) up(b)"))
    assert rep.verdict == "pass"
    assert [s.completed_t for s in rep.steps] == [0.0, 0.0]


def test_empty_trace_fails_at_first_action() -> None:
    rep = check_trace(TWO_CHAINS, [])
    assert rep.verdict == "fail" and rep.failed_step == "1.1"
    assert all(s.status == "incomplete" and s.completed_t is None for s in rep.steps)
    assert rep.n_states == 0 and rep.t_end is None


def test_single_state_partial_fails() -> None:
    rep = check_trace(TWO_CHAINS, states("grasped(b)"))
    assert rep.verdict == "fail"
    assert rep.failed_step == "2.2"  # chain b made progress
    assert rep.steps[2].completed_t == 0.0


def test_any_order_chains_complete_in_either_order() -> None:
    fwd = check_trace(
        TWO_CHAINS,
        states("", "grasped(a)", "in(a,box)", "in(a,box) grasped(b)", "in(a,box) in(b,box)"),
    )
    rev = check_trace(
        TWO_CHAINS,
        states("", "grasped(b)", "in(b,box)", "in(b,box) grasped(a)", "in(a,box) in(b,box)"),
    )
    assert fwd.verdict == rev.verdict == "pass"
    assert fwd.events == rev.events == ()


def test_interleaved_any_order_chains() -> None:
    rep = check_trace(
        TWO_CHAINS, states("", "grasped(a)", "grasped(b)", "in(a,box)", "in(b,box) in(a,box)")
    )
    assert rep.verdict == "pass"


def test_failed_step_prefers_chain_with_latest_progress() -> None:
    # a picked (t=1), then b picked (t=2) and dropped: the robot was working on b
    rep = check_trace(TWO_CHAINS, states("", "grasped(a)", "grasped(b)", ""))
    assert rep.failed_step == "2.2"
    # b picked first, then a: a is the latest progress
    rep = check_trace(TWO_CHAINS, states("", "grasped(b)", "grasped(a)", ""))
    assert rep.failed_step == "1.2"


def test_failed_step_is_plan_order_without_progress() -> None:
    rep = check_trace(TWO_CHAINS, states("", "", ""))
    assert rep.failed_step == "1.1"


def test_dropped_object_is_localized_at_the_place_step() -> None:
    o = oracle("sequential", seq(act("pick", "grasped(a) and up(a)"), act("place", "in(a,box)")))
    rep = check_trace(o, states("", "grasped(a) up(a)", "up(a)", ""))
    assert rep.steps[0].status == "completed"
    assert rep.failed_step == "1.2"
    assert rep.events == ()  # a pick is not a chain end: no regression when it stops holding


def test_regression_of_chain_end_while_task_incomplete() -> None:
    rep = check_trace(
        TWO_CHAINS,
        states("", "grasped(a)", "in(a,box)", "in(a,box) grasped(b)", "grasped(b)", "grasped(b)"),
    )
    assert [(e.kind, e.path, e.t) for e in rep.events] == [("regression", "1.2", 4.0)]
    assert rep.steps[1].status == "completed"  # completion is latched
    # the undone goal state outranks the step the robot was working on (spec §5)
    assert rep.failed_step == "1.2"


def test_a_goal_knocked_out_and_left_fails_the_task_at_its_step() -> None:
    rep = check_trace(
        TWO_CHAINS,
        states("grasped(a)", "in(a,box)", "grasped(b)", "in(b,box)", "in(b,box)"),
    )
    assert all(s.status == "completed" for s in rep.steps)
    assert [(e.kind, e.path) for e in rep.events] == [("regression", "1.2")]
    assert rep.verdict == "fail" and rep.failed_step == "1.2"


def test_a_goal_knocked_out_and_restored_passes_when_it_holds_again() -> None:
    tracker = StepTracker(TWO_CHAINS)
    trace = states("grasped(a)", "in(a,box)", "grasped(b)", "in(b,box)",
                   "in(b,box) grasped(a)", "in(b,box) in(a,box)", "")
    verdicts = []
    for state in trace:
        tracker.update(state)
        verdicts.append((tracker.done, tracker.outstanding))
    # every action completed at t=3, but 1.2 was undone at t=2 and put back only at t=5
    assert verdicts[3] == (False, ["1.2"]) and verdicts[4] == (False, ["1.2"])
    assert verdicts[5] == (True, [])
    rep = tracker.finish()
    assert rep.verdict == "pass" and rep.failed_step is None  # latched: t=6 changes nothing
    assert [(e.kind, e.path, e.t) for e in rep.events] == [("regression", "1.2", 2.0)]


def test_restoring_a_goal_needs_hold_states_like_completing_it() -> None:
    trace = states("grasped(a)", "grasped(a)", "in(a,box)", "in(a,box)", "grasped(b)",
                   "grasped(b)", "in(b,box)", "in(b,box)", "in(b,box) in(a,box)", "in(b,box)",
                   "in(b,box) in(a,box)", "in(b,box) in(a,box)")
    tracker = StepTracker(TWO_CHAINS, hold=2)
    passed_at = None
    for state in trace:
        tracker.update(state)
        if tracker.done and passed_at is None:
            passed_at = state.t
    # all done at t=7 with 1.2 undone at t=4; one state back (t=8) is not enough, two in a
    # row (t=10, 11) are
    assert passed_at == 11.0
    assert tracker.finish().verdict == "pass"


def test_a_goal_undone_while_the_last_step_completes_is_outstanding() -> None:
    rep = check_trace(TWO_CHAINS, states("grasped(a)", "in(a,box)", "grasped(b)", "in(b,box)"))
    assert rep.verdict == "fail" and rep.failed_step == "1.2"


def test_no_regression_after_task_completed() -> None:
    rep = check_trace(
        TWO_CHAINS,
        states("grasped(a)", "in(a,box)", "in(a,box) grasped(b)", "in(a,box) in(b,box)", ""),
    )
    assert rep.verdict == "pass"
    assert rep.events == ()


def test_regression_fires_on_each_falling_edge() -> None:
    rep = check_trace(
        TWO_CHAINS,
        states("", "grasped(a)", "in(a,box)", "", "in(a,box)", "", "grasped(b)"),
    )
    assert [e.t for e in rep.events if e.kind == "regression"] == [3.0, 5.0]


def test_nested_steps_and_series_parallel_order() -> None:
    # 1: x, then {y, z} in any order, then w; 2 (any order w.r.t. 1): v
    o = oracle(
        "any_order",
        seq(act("x", "up(x)"), anyo(act("y", "up(y)"), act("z", "up(z)")), act("w", "up(w)")),
        act("v", "up(v)"),
    )
    entries = load_oracle(o).actions()
    assert [p for p, _ in entries] == ["1.1", "1.2.1", "1.2.2", "1.3", "2"]
    rep = check_trace(o, states("", "up(x)", "up(z)", "up(y)", "up(w) up(v)"))
    assert rep.verdict == "pass"
    # w before {y, z}: out of order; the stuck step is the incomplete one of {y, z}
    rep = check_trace(o, states("", "up(x)", "up(y)", "up(w)"))
    assert [(e.kind, e.path) for e in rep.events] == [("out_of_order", "1.3")]
    assert rep.failed_step == "1.2.2"


def test_nested_steps_key() -> None:
    o = {
        "execution_mode": "sequential",
        "plan": [
            {
                "execution_mode": "sequential",
                "steps": [
                    {
                        "execution_mode": "any_order",
                        "actions": [act("p", "up(p)"), act("q", "up(q)")],
                    },
                    {"execution_mode": "sequential", "actions": [act("r", "up(r)")]},
                ],
            }
        ],
    }
    t = StepTracker(o)
    assert list(t.statuses) == ["1.1.1", "1.1.2", "1.2.1"]
    assert t.statuses == {"1.1.1": "enabled", "1.1.2": "enabled", "1.2.1": "pending"}
    for s in states("up(q)", "up(p)", "up(r)"):
        t.update(s)
    assert t.done and t.finish().verdict == "pass"


@pytest.mark.parametrize(("hold", "expected_t"), [(1, 1.0), (2, 2.0), (3, 6.0)])
def test_hold_needs_consecutive_states(hold: int, expected_t: float) -> None:
    o = oracle("sequential", act("one", "up(a)"))
    rep = check_trace(o, states("", "up(a)", "up(a)", "", "up(a)", "up(a)", "up(a)"), hold=hold)
    assert rep.verdict == "pass"
    assert rep.steps[0].completed_t == expected_t


def test_hold_that_is_never_reached_fails() -> None:
    o = oracle("sequential", act("one", "up(a)"))
    rep = check_trace(o, states("up(a)", "", "up(a)", "up(a)", ""), hold=3)
    assert rep.verdict == "fail" and rep.failed_step == "1"


def test_hold_counts_only_enabled_states() -> None:
    o = oracle("sequential", seq(act("one", "up(a)"), act("two", "up(b)")))
    rep = check_trace(o, states("up(b)", "up(b)", "up(a) up(b)", "up(a) up(b)", "up(b)"), hold=2)
    assert rep.steps[0].completed_t == 3.0
    assert rep.steps[1].completed_t == 4.0


def test_update_returns_status_changes() -> None:
    o = oracle("sequential", seq(act("one", "up(a)"), act("two", "up(b)")))
    t = StepTracker(o)
    s = states("", "up(b)", "up(a)")
    ev0 = t.update(s[0])
    assert [(e.kind, e.path) for e in ev0] == [("enabled", "1.1")]
    ev1 = t.update(s[1])
    assert [(e.kind, e.path, e.action_id) for e in ev1] == [("out_of_order", "1.2", "two")]
    assert t.report().verdict == "running"
    assert t.report().failed_step == "1.1"
    ev2 = t.update(s[2])
    assert [(e.kind, e.path) for e in ev2] == [("completed", "1.1"), ("enabled", "1.2")]
    assert t.statuses == {"1.1": "completed", "1.2": "enabled"}
    assert t.update(s[2]) == []


def test_reset_and_replay_give_the_same_report() -> None:
    trace = states("", "grasped(a)", "in(a,box)", "grasped(b)", "")
    t = StepTracker(TWO_CHAINS)
    for s in trace:
        t.update(s)
    first = t.finish()
    with pytest.raises(RuntimeError):
        t.update(trace[0])
    t.reset()
    for s in trace:
        t.update(s)
    assert t.finish() == first


def test_report_json_is_the_spec_object() -> None:
    rep = check_trace(TWO_CHAINS, states("", "grasped(b)", "grasped(a)", "", "grasped(a)"))
    data = rep.to_json()
    assert set(data) == {"verdict", "failed_step", "steps", "events"}
    assert data["steps"][0] == {
        "path": "1.1",
        "action_id": "pick_a",
        "status": "completed",
        "completed_t": 2.0,
    }
    assert data["steps"][1]["completed_t"] is None
    assert all(set(e) == {"t", "kind", "path", "detail"} for e in data["events"])
    assert Report.from_json(data).to_json() == data
    with pytest.raises(InputError):
        Report.from_json({"verdict": "pass"})


def test_time_going_backwards_is_an_input_error() -> None:
    t = StepTracker(TWO_CHAINS)
    t.update(WorldState(t=1.0, facts={a: False for a in ATOMS}))
    with pytest.raises(InputError, match="backwards"):
        t.update(WorldState(t=0.5, facts={a: False for a in ATOMS}))


def test_unknown_entity_is_an_evaluation_error_naming_it() -> None:
    o = oracle("sequential", act("one", "up(ghost)"))
    with pytest.raises(EvaluationError, match=r"step 1 \(one\).*'ghost'.*up\(ghost\)"):
        check_trace(o, [WorldState(t=0.0)])


def test_bad_expression_in_oracle_names_the_field() -> None:
    o = oracle("sequential", seq(act("one", "up(a)"), act("two", "up(b) and and")))
    with pytest.raises(InputError) as info:
        StepTracker(o)
    assert info.value.field == "plan[0].actions[1].monitoring[0].handle_as"
    assert "column 11" in str(info.value)


def test_unknown_predicate_and_arity_are_rejected_up_front() -> None:
    with pytest.raises(InputError, match="unknown predicate 'levitating'"):
        StepTracker(oracle("sequential", act("one", "levitating(a)")))
    with pytest.raises(InputError, match="'in' takes 2"):
        StepTracker(oracle("sequential", act("one", "in(a)")))


def test_hold_must_be_positive() -> None:
    with pytest.raises(ValueError):
        StepTracker(TWO_CHAINS, hold=0)


def test_multiple_monitoring_entries_are_a_conjunction() -> None:
    o = oracle(
        "sequential",
        {"action_id": "pick", "monitoring": [{"handle_as": "grasped(a)"}, {"handle_as": "up(a)"}]},
    )
    assert check_trace(o, states("grasped(a)", "up(a)")).verdict == "fail"
    assert check_trace(o, states("grasped(a)", "up(a) grasped(a)")).verdict == "pass"


def test_expression_error_names_line_and_column_in_the_oracle_file(tmp_path: Path) -> None:
    path = tmp_path / "o.json"
    path.write_text(
        json.dumps(oracle("sequential", act("one", "up(a)"), act("two", "up(b) or")), indent=2)
    )
    with pytest.raises(InputError) as info:
        StepTracker(path)
    err = info.value
    text_line = path.read_text().splitlines()[err.line - 1]
    assert text_line[err.column - 1 :].startswith('"')  # the end of "up(b) or"
    assert text_line.strip().startswith('"handle_as": "up(b) or"')
    assert str(err).startswith(f"{path}:{err.line}:{err.column}, field 'plan[1].monitoring[0]")


def test_precomputed_evaluation_error_is_the_one_update_raises() -> None:
    """An action whose condition could not be evaluated stops `update_values` with exactly
    the error `update` raises on that state."""
    from mango.oracle.predicates import EvaluationError

    oracle = {"execution_mode": "sequential", "plan": [
        {"action_id": "lift", "monitoring": [{"handle_as": "up(a)"}]},
        {"action_id": "drop", "monitoring": [{"handle_as": "up(ghost)"}]},
    ]}
    state = WorldState.model_validate(
        {"t": 0.0, "objects": {"a": {"position": [0, 0, 1.0], "size": [0.1, 0.1, 0.1]}}})
    live, fed = StepTracker(oracle), StepTracker(oracle)
    values, errors = fed.condition_values(state)
    assert values == [True, False] and list(errors) == [1] and "ghost" in errors[1]

    def value_of(i: int) -> bool:
        if i in errors:
            raise EvaluationError(errors[i])
        return values[i]

    with pytest.raises(EvaluationError) as want:
        live.update(state)
    with pytest.raises(EvaluationError) as got:
        fed.update_values(state.t, value_of)
    assert str(got.value) == str(want.value)
