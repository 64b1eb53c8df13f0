"""Point tracking: each point reported once, in order, with its joint error then."""

from __future__ import annotations

import numpy as np
import pytest

from mango.control import JointTrajectory, Measured
from mango.control.tracking import PointTracker

NAMES = tuple(f"j{i}" for i in range(7))


def _traj() -> JointTrajectory:
    pos = np.array([np.full(7, 0.1 * (k + 1)) for k in range(4)])
    return JointTrajectory(NAMES, np.array([0.1, 0.2, 0.3, 0.4]), pos)


def test_reports_each_passed_point_once_with_its_error() -> None:
    state = {"q": np.full(7, 0.1)}
    seen: list[tuple[int, float]] = []
    tracker = PointTracker(_traj(), lambda: Measured(state["q"], None, 0.0, 0.0),
                           lambda i, e: seen.append((i, e)))
    tracker.update(0.05)
    assert seen == []
    tracker.update(0.25)  # points 0 and 1 passed
    assert [i for i, _ in seen] == [0, 1]
    assert seen[0][1] == pytest.approx(0.0) and seen[1][1] == pytest.approx(0.1)
    state["q"] = np.full(7, 0.45)
    tracker.update(10.0)
    tracker.update(11.0)
    assert [i for i, _ in seen] == [0, 1, 2, 3]
    assert tracker.done == 4
    assert tracker.max_error == pytest.approx(0.15)


def test_without_a_measurement_the_error_is_nan_and_not_counted() -> None:
    seen: list[float] = []
    tracker = PointTracker(_traj(), lambda: None, lambda _i, e: seen.append(e))
    tracker.update(1.0)
    assert len(seen) == 4 and all(np.isnan(e) for e in seen)
    assert tracker.max_error == 0.0
