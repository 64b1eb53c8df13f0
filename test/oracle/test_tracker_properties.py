"""Property-based tests of the tracker over random series-parallel oracles and traces."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mango.oracle import StepTracker, WorldState, load_oracle, plan_entries

POOL = [f"up(o{i})" for i in range(8)]


@st.composite
def plans(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    """A random step: sequential or any-order children, each an action or a nested step."""
    n = draw(st.integers(1, 3))
    children = []
    for _ in range(n):
        if depth < 2 and draw(st.booleans()):
            children.append(draw(plans(depth + 1)))
        else:
            atoms = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=2, unique=True))
            op = draw(st.sampled_from([" and ", " or "]))
            children.append({"action_id": "a", "monitoring": [{"handle_as": op.join(atoms)}]})
    return {
        "execution_mode": draw(st.sampled_from(["sequential", "any_order"])),
        "actions": children,
    }


oracles = st.builds(
    lambda mode, steps: {"execution_mode": mode, "plan": steps},
    st.sampled_from(["sequential", "any_order"]),
    st.lists(plans(), min_size=1, max_size=3),
)
traces = st.lists(st.sets(st.sampled_from(POOL)), max_size=15).map(
    lambda sets: [
        WorldState(t=0.5 * i, facts={a: a in s for a in POOL}) for i, s in enumerate(sets)
    ]
)


@settings(max_examples=200, deadline=None)
@given(oracles, traces, st.integers(1, 3))
def test_tracker_invariants(oracle: dict, trace: list[WorldState], hold: int) -> None:
    tracker = StepTracker(oracle, hold=hold)
    streamed = []
    for state in trace:
        streamed.extend(tracker.update(state))
    report = tracker.finish()
    entries = plan_entries(load_oracle(oracle))
    steps = {s.path: s for s in report.steps}

    # completions respect the partial order
    for e in entries:
        s = steps[e.path]
        if s.status == "completed":
            for p in e.predecessors:
                pred = steps[entries[p].path]
                assert pred.status == "completed"
                assert pred.completed_t <= s.completed_t
    # pass => every step completed; failed_step is None exactly on a pass
    all_done = all(s.status == "completed" for s in report.steps)
    assert report.verdict in ("pass", "fail")
    assert report.verdict == "fail" or all_done
    assert (report.failed_step is None) == (report.verdict == "pass")
    regressed = {e.path for e in report.events if e.kind == "regression"}
    if report.failed_step is not None:
        failed = next(e for e in entries if e.path == report.failed_step)
        assert all(steps[entries[p].path].status == "completed" for p in failed.predecessors)
        if steps[failed.path].status == "completed":
            # an undone goal state: a chain end that regressed and was not restored
            assert failed.chain_end and failed.path in regressed
            assert failed.path == tracker.outstanding[0]
        else:
            # an enabled incomplete step, only when no goal state is left undone
            assert not tracker.outstanding
    if all_done and report.verdict == "fail":
        assert tracker.outstanding and set(tracker.outstanding) <= regressed
    # the streamed events contain exactly the reported ones, in order
    assert tuple(e for e in streamed if e.kind in ("out_of_order", "regression")) == report.events
    completed = {e.path: e.t for e in streamed if e.kind == "completed"}
    assert completed == {s.path: s.completed_t for s in report.steps if s.status == "completed"}
    # replaying gives the same report, with a reset tracker and a new one
    tracker.reset()
    for state in trace:
        tracker.update(state)
    assert tracker.finish() == report
    again = StepTracker(oracle, hold=hold)
    for state in trace:
        again.update(state)
    assert again.finish() == report


@settings(max_examples=100, deadline=None)
@given(oracles)
def test_executing_the_plan_in_order_passes_without_events(oracle: dict) -> None:
    """Make each action's condition true in plan order and keep it true: a clean pass."""
    o = load_oracle(oracle)
    actions = [a for _, a in o.actions()]
    for i, action in enumerate(actions):  # one independent atom per action
        action.monitoring = [action.monitoring[0].model_copy(update={"handle_as": f"up(x{i})"})]
    atoms = [f"up(x{i})" for i in range(len(actions))]
    trace = [
        WorldState(t=float(k), facts={a: j < k for j, a in enumerate(atoms)})
        for k in range(len(atoms) + 1)
    ]
    tracker = StepTracker(o)
    for s in trace:
        tracker.update(s)
    report = tracker.finish()
    assert report.verdict == "pass"
    assert report.events == ()
    assert [s.completed_t for s in report.steps] == [float(k + 1) for k in range(len(atoms))]


@settings(max_examples=150, deadline=None)
@given(oracles, traces, st.integers(1, 3))
def test_precomputed_conditions_track_like_states(oracle: dict, trace: list[WorldState],
                                                  hold: int) -> None:
    """What a replay worker does (every condition, then `update_values`) gives the events
    and report of `update` state by state."""
    live, fed = StepTracker(oracle, hold=hold), StepTracker(oracle, hold=hold)
    for state in trace:
        values, errors = fed.condition_values(state)
        assert not errors
        assert fed.update_values(state.t, values.__getitem__) == live.update(state)
    assert fed.finish() == live.finish()
