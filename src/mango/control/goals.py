"""Goal bookkeeping: one goal runs at a time, a new goal preempts the active one, and every
goal ends in exactly one terminal status.

A goal that arrives while another runs stops the old one at once (its control loop wakes on
`GoalRun.stop`) and starts when the old one has handed the arm back, so two goals never
command the arm together.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any


class GoalStatus(IntEnum):
    """How a goal ended (the STATUS_* constants of ExecuteChunk and ExecuteMotion)."""

    SUCCEEDED = 0
    CANCELLED = 1
    PREEMPTED = 2
    REJECTED = 3
    FAILED = 4


PREEMPTED = "preempted by a new goal"


@dataclass
class GoalRun:
    """One goal being executed; `stop` wakes its control loop at once."""

    handle: Any  # the caller's goal handle: what a cancel request names
    stop: threading.Event = field(default_factory=threading.Event)
    reason: str = ""
    cancel_at_boundary: bool = False

    def halt(self, reason: str) -> None:
        """Stop the goal now; the first reason given is the one reported."""
        if not self.stop.is_set():
            self.reason = reason
            self.stop.set()

    @property
    def stop_status(self) -> GoalStatus:
        """The status of a goal that was stopped: preempted, or cancelled (or halted)."""
        return GoalStatus.PREEMPTED if self.reason.startswith("preempted") else \
            GoalStatus.CANCELLED


@dataclass
class Outcome:
    """What a backend's execution of one trajectory came to."""

    ok: bool
    stopped: bool = False
    message: str = ""
    points_executed: int = 0
    max_error: float = 0.0


class GoalSlot:
    """The one active goal: preemption on arrival, cancel by handle, halt of whatever runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._exec_lock = threading.Lock()
        self._active: GoalRun | None = None

    def begin(self, handle: Any) -> GoalRun:
        """Make `handle` the active goal, preempting the old one; returns once the old one
        has ended (always pair with `end`)."""
        run = GoalRun(handle)
        with self._lock:
            old, self._active = self._active, run
        if old is not None:
            old.halt(PREEMPTED)
        self._exec_lock.acquire()
        return run

    def end(self, run: GoalRun) -> None:
        with self._lock:
            if self._active is run:
                self._active = None
        self._exec_lock.release()

    def active(self) -> GoalRun | None:
        with self._lock:
            return self._active

    def cancel(self, handle: Any, at_boundary: bool) -> None:
        """Cancel the goal `handle` if it is the active one: now, or at its next command
        boundary (a motion batch)."""
        run = self.active()
        if run is not None and run.handle is handle:
            if at_boundary:
                run.cancel_at_boundary = True
            else:
                run.halt("cancelled")
