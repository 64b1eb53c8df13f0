"""The per-frame subtask rule (`mango.bags.subtasks`) on reports whose steps complete out of
plan order, as an unordered group's do, and on a failure followed by more completions."""

from __future__ import annotations

import numpy as np

from mango.bags.subtasks import label_frames
from mango.oracle.tracker import Report, StepResult


def _report(done: dict[str, float | None], failed: str | None = None) -> Report:
    steps = tuple(StepResult(p, f"a{p}", "completed" if t is not None else "incomplete", t)
                  for p, t in done.items())
    return Report("pass" if failed is None else "fail", failed, steps, ())


def test_steps_completed_out_of_plan_order_are_pursued_in_completion_order() -> None:
    labels = label_frames(_report({"1": 3.0, "2": 1.0}), np.arange(0.0, 4.0, 0.5))
    assert labels.path == ["2", "2", "1", "1", "1", "1", "", ""]
    assert labels.status == ["in_progress"] * 6 + ["done"] * 2
    assert labels.success


def test_a_failed_step_holds_until_the_robot_completes_something_after_it() -> None:
    report = _report({"1": 1.0, "2": None, "3": 2.0, "4": 3.0}, failed="2")
    labels = label_frames(report, np.arange(0.0, 4.0, 0.5))
    assert labels.path == ["1", "1", "2", "2", "4", "4", "", ""]
    assert labels.status == ["in_progress"] * 2 + ["failed"] * 2 + ["in_progress"] * 2 + [
        "incomplete"] * 2
    assert labels.action[2] == "a2" and not labels.success
