"""The oracle's subtask at every frame: which step the robot was pursuing, and how it went.

One rule, whatever the report came from (the task verdict recorded in the bag, or the bag's
world states judged with an oracle), built on the steps' completion times and plan order:

- a step that never completes is *due* from the moment every step before it (in plan order)
  that does complete has, until a step after it completes (the robot moved on): its frames
  say `failed` when the verdict localises the failure there, else `incomplete`;
- otherwise the step being pursued is the next one to complete (`in_progress`), whatever
  the plan order (steps of an unordered group complete in any order);
- after the last completion: `done` (empty path) when every step completed, else the empty
  path with status `incomplete` (the run went on, or stopped, without the task).

So every completion time is a label boundary (at the first frame at or after it), and the
failed step labels the frames from its predecessor's completion until the robot completed
something after it. What completion times cannot tell, neither do the labels: when a failed
step was given up for the next, so the step completed right after a failure gets no frames
of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mango.bags.frames import TIE
from mango.oracle.tracker import Report

IN_PROGRESS, FAILED, INCOMPLETE, DONE = "in_progress", "failed", "incomplete", "done"


@dataclass(frozen=True)
class SubtaskLabels:
    """Per-frame labels, and the episode's verdict."""

    path: list[str]
    action: list[str]
    status: list[str]
    index: np.ndarray  # (N,) int64: the step's index in the report, -1 when none
    success: bool


def pursued_step(done_at: np.ndarray, t: float) -> int:
    """The index of the step pursued at `t` (-1: none), from completion times in plan order
    (inf: never)."""
    done = done_at <= t + TIE
    never = np.isinf(done_at)
    last_done = int(np.nonzero(done)[0].max()) if done.any() else -1
    for f in np.nonzero(never)[0]:
        if f > last_done and (done[:f] | never[:f]).all():
            due = int(f)
            break
    else:
        due = None
    upcoming = np.nonzero(~done & ~never)[0]
    nxt = int(upcoming[np.argmin(done_at[upcoming])]) if len(upcoming) else None
    if due is not None and (nxt is None or due < nxt):
        return due
    return -1 if nxt is None else nxt


def label_frames(report: Report, times: np.ndarray) -> SubtaskLabels:
    """The labels of frames at `times` (s, the clock of the report's completion times)."""
    steps = report.steps
    done_at = np.array([np.inf if s.completed_t is None else s.completed_t for s in steps])
    index = np.array([pursued_step(done_at, float(t)) for t in times], dtype=np.int64)
    finished = DONE if all(s.completed_t is not None for s in steps) else INCOMPLETE
    path, action, status = [], [], []
    for i in index:
        if i < 0:
            path.append("")
            action.append("")
            status.append(finished)
            continue
        s = steps[i]
        path.append(s.path)
        action.append(s.action_id)
        if s.completed_t is not None:
            status.append(IN_PROGRESS)
        else:
            status.append(FAILED if s.path == report.failed_step else INCOMPLETE)
    return SubtaskLabels(path, action, status, index, report.verdict == "pass")
