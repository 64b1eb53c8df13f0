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
    owns_arm: bool = False  # set by `GoalSlot.begin`: the goal got its turn

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
    """The one active goal: preemption on arrival, cancel by handle, halt of whatever runs.

    A goal waits for the arm only while it is the newest: one preempted before its turn came
    ends at once, so a burst of goals never holds more than two executor threads (the goal
    handing the arm back and the newest), and every goal of the burst is answered.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active: GoalRun | None = None
        self._busy = False  # a goal holds the arm

    def begin(self, handle: Any) -> GoalRun:
        """Make `handle` the active goal, preempting the old one; returns once the old one
        has ended, or at once with `run.stop` set if a newer goal (or a cancel) came first
        (always pair with `end`)."""
        run = GoalRun(handle)
        with self._cond:
            old, self._active = self._active, run
            if old is not None:
                old.halt(PREEMPTED)
                self._cond.notify_all()  # wake it if it is still waiting for its turn
            while self._busy and not run.stop.is_set():
                self._cond.wait()
            run.owns_arm = not run.stop.is_set()
            if run.owns_arm:
                self._busy = True
        return run

    def end(self, run: GoalRun) -> None:
        with self._cond:
            if self._active is run:
                self._active = None
            if run.owns_arm:
                self._busy = False
            self._cond.notify_all()

    def active(self) -> GoalRun | None:
        with self._cond:
            return self._active

    def halt_active(self, reason: str) -> bool:
        """Stop the active goal, running or still waiting for its turn; whether there was one."""
        with self._cond:
            run = self._active
            if run is not None:
                run.halt(reason)
                self._cond.notify_all()
            return run is not None

    def cancel(self, handle: Any, at_boundary: bool) -> None:
        """Cancel the goal `handle` if it is the active one: now, or at its next command
        boundary (a motion batch)."""
        with self._cond:
            run = self._active
            if run is not None and run.handle is handle:
                if at_boundary and run.owns_arm:
                    run.cancel_at_boundary = True
                else:
                    run.halt("cancelled")
                self._cond.notify_all()
