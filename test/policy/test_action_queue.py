"""The action queue of an asynchronous policy run (`mango.policy.action_queue`).

Conventions from LeRobot's async inference (huggingface/lerobot v0.4.4, installed in .venv):
- `src/lerobot/async_inference/configs.py` `AGGREGATE_FUNCTIONS`: the four aggregators,
  `fn(old, new)`; checked below against the installed file's own lambdas.
- `src/lerobot/async_inference/robot_client.py` `_ready_to_send_observation`: an observation
  goes out when `queue size / chunk size <= chunk_size_threshold`; `_aggregate_action_queues`:
  actions for timesteps already executed are dropped, overlapping timesteps are aggregated,
  the rest appended.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from mango.control import load_robot
from mango.errors import InputError
from mango.policy.action_queue import (
    AGGREGATORS,
    ActionLimits,
    ActionQueue,
    aggregator,
    check_threshold,
)

RATE = 10.0
ROBOT = load_robot("fr3")
HOME = np.array([*ROBOT.home, 0.04])


def lerobot_aggregate_functions() -> dict[str, object]:
    """`AGGREGATE_FUNCTIONS` read from the installed lerobot's source (importing the module
    pulls in torchvision, which this CPU venv cannot load)."""
    spec = importlib.util.find_spec("lerobot")
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "async_inference" / "configs.py"
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "AGGREGATE_FUNCTIONS" for t in node.targets):
            assert isinstance(node.value, ast.Dict)
            return {ast.literal_eval(k): eval(compile(ast.Expression(v), str(path), "eval"))
                    for k, v in zip(node.value.keys, node.value.values, strict=True)}
    raise AssertionError(f"no AGGREGATE_FUNCTIONS in {path}")


def queue(threshold: float = 0.5, rule: str = "weighted_average") -> ActionQueue:
    return ActionQueue(ActionLimits.for_robot(ROBOT, RATE), aggregator(rule), threshold)


def ramp(n: int, start: float = 0.0, step: float = 0.01) -> np.ndarray:
    """n actions moving joint 1 from home by `step` rad each (well within the limits)."""
    a = np.tile(HOME, (n, 1))
    a[:, 0] = start + step * np.arange(1, n + 1)
    return a


def test_the_aggregators_are_lerobots() -> None:
    theirs = lerobot_aggregate_functions()
    assert set(theirs) == set(AGGREGATORS)
    old, new = np.array([1.0, -2.0]), np.array([3.0, 5.0])
    for name, fn in theirs.items():
        np.testing.assert_allclose(AGGREGATORS[name].merge(old, new), fn(old, new))


def test_unknown_aggregator_and_threshold_out_of_range_are_input_errors() -> None:
    with pytest.raises(InputError) as exc:
        aggregator("median")
    assert exc.value.field == "aggregate" and "weighted_average" in str(exc.value)
    for bad in (-0.1, 1.5):
        with pytest.raises(InputError) as exc:
            check_threshold(bad)
        assert exc.value.field == "chunk_threshold"


def test_the_threshold_rule() -> None:
    q = queue(threshold=0.5)
    assert q.should_request()  # empty: the first observation
    q.add_chunk(ramp(10), 0, HOME, now=0.0)
    assert q.depth == 10 and not q.should_request()
    q.advance(4, now=0.4)
    assert q.depth == 6 and not q.should_request()
    q.advance(5, now=0.5)
    assert q.should_request()  # 5 of 10 left


def test_threshold_zero_is_the_synchronous_loop() -> None:
    q = queue(threshold=0.0)
    q.add_chunk(ramp(10), 0, HOME, now=0.0)
    q.advance(9, now=0.9)
    assert not q.should_request()  # one action left
    q.advance(10, now=1.0)
    assert q.should_request()


def test_a_chunk_is_aligned_by_its_observation_timestep() -> None:
    q = queue(rule="latest_only")
    q.add_chunk(ramp(10), 0, HOME, now=0.0)
    q.advance(5, now=0.5)
    # observed at step 3, answered once step 5 was executed: rows 0, 1 are for steps 3, 4
    new = ramp(10, start=0.02)
    report = q.add_chunk(new, 3, HOME, now=0.5)
    assert (report.stale, report.merged, report.appended) == (2, 5, 3)
    assert q.executed == 5 and q.depth == 8
    np.testing.assert_allclose(q.pending(), new[2:])


def test_overlap_is_merged_by_the_rule_and_the_tail_appended() -> None:
    for name, rule in AGGREGATORS.items():
        q = queue(rule=name)
        old = ramp(6)
        q.add_chunk(old, 0, HOME, now=0.0)
        q.advance(2, now=0.2)
        new = ramp(6, start=0.03)
        q.add_chunk(new, 2, HOME, now=0.2)
        expect = np.vstack([[rule.merge(o, n) for o, n in zip(old[2:], new[:4], strict=True)],
                            new[4:]])
        np.testing.assert_allclose(q.pending(), expect, err_msg=name)


def test_an_answer_older_than_everything_executed_is_dropped_whole() -> None:
    q = queue()
    q.add_chunk(ramp(10), 0, HOME, now=0.0)
    q.advance(8, now=0.8)
    before = q.pending()
    report = q.add_chunk(ramp(5), 0, HOME, now=0.8)
    assert report.stale == 5 and report.kept == 0
    np.testing.assert_allclose(q.pending(), before)


def test_every_action_is_clipped_to_position_velocity_and_gripper_limits() -> None:
    q = queue()
    wild = np.tile(HOME, (4, 1))
    wild[0, 3] = 0.5  # joint 4's upper limit is -0.1518, and far from home in one step
    wild[1, 0] = 10.0  # beyond joint 1's range
    wild[2, 7] = 0.2  # wider than the hand opens
    report = q.add_chunk(wild, 0, HOME, now=0.0)
    out = q.pending()
    step = 0.9 * ROBOT.vmax / RATE
    prev = HOME[:7]
    for a in out:
        assert np.all(a[:7] >= ROBOT.lower - 1e-12) and np.all(a[:7] <= ROBOT.upper + 1e-12)
        assert np.all(np.abs(a[:7] - prev) <= step + 1e-12)
        assert 0.0 <= a[7] <= ROBOT.gripper_max_width
        prev = a[:7]
    assert report.clipped >= 3 and q.clipped_total == report.clipped
    assert report.clip_warning and "clipped" in report.describe()


def test_a_chunk_within_the_limits_is_untouched_and_not_flagged() -> None:
    q = queue()
    chunk = ramp(8)
    report = q.add_chunk(chunk, 0, HOME, now=0.0)
    assert report.clipped == 0 and not report.clip_warning
    np.testing.assert_allclose(q.pending(), chunk)


def test_clipping_continues_from_the_last_action_sent() -> None:
    q = queue(rule="latest_only")
    q.add_chunk(ramp(4), 0, HOME, now=0.0)
    q.advance(4, now=0.4)
    jump = np.tile(HOME, (3, 1))
    jump[:, 0] = 1.0  # the last sent joint-1 target is 0.04
    q.add_chunk(jump, 4, HOME, now=0.4)
    step = 0.9 * ROBOT.vmax[0] / RATE
    np.testing.assert_allclose(q.pending()[:, 0], 0.04 + step * np.arange(1, 4))


def test_an_answer_later_than_the_queue_covers_is_reported_with_the_idle_time() -> None:
    q = queue()
    first = q.add_chunk(ramp(5), 0, HOME, now=0.0)
    assert not first.late and first.idle == 0.0  # the first answer is nobody's fault
    q.advance(3, now=0.3)
    on_time = q.add_chunk(ramp(5, start=0.03), 3, HOME, now=0.35)
    assert not on_time.late
    q.advance(8, now=0.8)  # ran dry at 0.8: the arm holds its last target
    assert q.depth == 0 and q.should_request()
    late = q.add_chunk(ramp(5, start=0.08), 8, HOME, now=1.1)
    assert late.late and late.idle == pytest.approx(0.3)
    assert q.idle_total == pytest.approx(0.3) and "late" in late.describe()
    q.advance(9, now=1.2)
    assert q.add_chunk(ramp(5, start=0.09), 9, HOME, now=1.25).idle == 0.0


def test_bad_chunks_are_refused() -> None:
    q = queue()
    with pytest.raises(ValueError, match="H x 8"):
        q.add_chunk(np.zeros((3, 7)), 0, HOME, now=0.0)
    with pytest.raises(ValueError, match="future"):
        q.add_chunk(ramp(3), 1, HOME, now=0.0)


def test_only_the_scripted_expert_plays_its_chunks_whole() -> None:
    """The expert moves on in its own plan at every query: asked again halfway through a
    chunk, it would skip the rest of that step (LIBERO-10 episodes failed that way), so the
    vla_node runs it synchronously; the model backends are asked asynchronously."""
    from mango.policy.registry import BACKENDS

    assert {n for n, e in BACKENDS.items() if e.plays_chunks_whole} == {"expert"}
