"""Incremental step tracking with exactly the runtime semantics of spec §5.

`StepTracker.update` takes one world state at a time (the ROS node calls it at 100 Hz; a bag
replay calls it as fast as it can), returns the status changes it caused, and keeps what the
final `Report` needs. Conditions are compiled to closures once; each state is wrapped in one
`StateView` so geometry is computed at most once per entity and state.

Choices where the spec leaves room (documented so users can rely on them):
- Completion is non-strict in time: when an action completes, the actions it enables are
  considered in the same state, so a state in which several steps hold completes them all.
- With `hold` > 1 an action completes on the `hold`-th consecutive state in which it is
  enabled and its conditions hold; `completed_t` is the time of that state.
- An out-of-order event is the rising edge of an action's whole condition (the conjunction
  of its `monitoring`) while the action is not yet enabled.
- A regression is the falling edge of a completed chain-end action's condition before the
  task passed. Completion stays latched, but the regressed action is *outstanding* until its
  condition holds again (for `hold` consecutive states, like a completion); the task passes
  only when every action completed and none is outstanding, and an outstanding one at the end
  is the failed step.
- `report()` before `finish()` says `running` until the task has passed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mango.errors import InputError
from mango.oracle.compile import Condition, compile_expression
from mango.oracle.expr import ExpressionError, parse_expression
from mango.oracle.library import FunctionLibrary
from mango.oracle.model import (
    FineGrainedOracle,
    PlanEntry,
    load_oracle,
    oracle_source,
    plan_entries,
    source_position,
)
from mango.oracle.predicates import EvaluationError, StateView
from mango.oracle.world_state import WorldState

EventKind = Literal["enabled", "completed", "out_of_order", "regression"]
StepStatus = Literal["pending", "enabled", "completed"]
REPORTED_KINDS = ("out_of_order", "regression")


@dataclass(frozen=True)
class TrackerEvent:
    """A status change: an action became enabled or completed, or an ordering/goal event."""

    t: float
    kind: EventKind
    path: str
    action_id: str
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """The spec §6 event object."""
        return {"t": self.t, "kind": self.kind, "path": self.path, "detail": self.detail}


@dataclass(frozen=True)
class StepResult:
    path: str
    action_id: str
    status: Literal["completed", "incomplete"]
    completed_t: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "action_id": self.action_id,
            "status": self.status,
            "completed_t": self.completed_t,
        }


@dataclass(frozen=True)
class Report:
    """A verdict with per-step completion and the ordering/regression events."""

    verdict: Literal["pass", "fail", "running"]
    failed_step: str | None
    steps: tuple[StepResult, ...]
    events: tuple[TrackerEvent, ...]  # out_of_order and regression only
    n_states: int = 0
    t_end: float | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def to_json(self) -> dict[str, Any]:
        """Exactly the spec §6 object."""
        return {
            "verdict": self.verdict,
            "failed_step": self.failed_step,
            "steps": [s.to_json() for s in self.steps],
            "events": [e.to_json() for e in self.events],
        }

    @classmethod
    def from_json(cls, data: Any) -> Report:
        """Read back a spec §6 object (e.g. a recorded `mango oracle check --json`)."""
        try:
            steps = tuple(
                StepResult(str(s["path"]), str(s["action_id"]), s["status"], s["completed_t"])
                for s in data["steps"]
            )
            events = tuple(
                TrackerEvent(float(e["t"]), e["kind"], str(e["path"]), "", str(e.get("detail", "")))
                for e in data["events"]
            )
            verdict, failed = data["verdict"], data["failed_step"]
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not a verdict report object ({exc!r})") from None
        if verdict not in ("pass", "fail", "running"):
            raise InputError(f"unknown verdict {verdict!r}", field="verdict")
        return cls(verdict, failed, steps, events)


def compile_conditions(
    oracle: FineGrainedOracle, library: FunctionLibrary, entries: list[PlanEntry] | None = None
) -> list[Condition]:
    """One closure per action (the conjunction of its monitoring); errors name the field."""
    file = oracle_source(oracle)
    out: list[Condition] = []
    for entry in entries if entries is not None else plan_entries(oracle):
        parts: list[Condition] = []
        for k, mon in enumerate(entry.action.monitoring):
            field = f"{entry.field}.monitoring[{k}].handle_as"
            try:
                parts.append(compile_expression(parse_expression(mon.handle_as), library))
            except ExpressionError as exc:
                line, column = source_position(oracle, mon.handle_as, exc.offset) or (None, None)
                raise exc.relocated(file=file, field=field, line=line, column=column) from None
            except InputError as exc:
                raise InputError(
                    f"step {entry.path}: {exc.message}", file=file, field=field
                ) from None
        out.append(_conjunction(parts))
    return out


def _conjunction(parts: list[Condition]) -> Condition:
    if len(parts) == 1:
        return parts[0]

    def all_hold(v: StateView) -> bool:
        return all(p(v) for p in parts)

    return all_hold


class StepTracker:
    """Follows an oracle's actions through a stream of world states (spec §5)."""

    def __init__(
        self,
        oracle: FineGrainedOracle | str | Path | dict[str, Any],
        library: FunctionLibrary | None = None,
        hold: int = 1,
    ) -> None:
        if isinstance(hold, bool) or not isinstance(hold, int) or hold < 1:
            raise ValueError(f"hold must be a positive integer, not {hold!r}")
        self.oracle = load_oracle(oracle)
        self.library = library or FunctionLibrary.default()
        self.hold = hold
        self.entries = plan_entries(self.oracle)
        self._index = {e.path: e.index for e in self.entries}
        self._conds = compile_conditions(self.oracle, self.library, self.entries)
        self._extents: dict[tuple, tuple[float, float, float]] = {}
        n = len(self.entries)
        self._successors: list[list[int]] = [[] for _ in range(n)]
        for e in self.entries:
            for p in e.predecessors:
                self._successors[p].append(e.index)
        self.reset()

    def reset(self) -> None:
        """Forget every state seen, as before the first `update`."""
        n = len(self.entries)
        self._waiting = [len(e.predecessors) for e in self.entries]  # incomplete predecessors
        self._completed = [False] * n
        self._completed_t: list[float | None] = [None] * n
        self._order: list[int] = [-1] * n  # completion sequence number
        self._held = [0] * n
        self._prev = [False] * n
        self._announced = [False] * n  # "enabled" event sent
        self._events: list[TrackerEvent] = []
        self._n_states = 0
        self._n_done = 0
        self._outstanding = [False] * n  # regressed chain ends not yet restored
        self._n_outstanding = 0
        self._passed = not self.entries  # nothing to do: passed before any state
        self._active = list(range(n))  # actions whose condition is evaluated per state
        self._last_t: float | None = None
        self._finished = False

    # ------------------------------------------------------------------------------ queries

    @property
    def done(self) -> bool:
        """The task passed: every action completed with no regression outstanding (latched)."""
        return self._passed

    @property
    def outstanding(self) -> list[str]:
        """Paths of completed goal states that were undone and not yet restored."""
        return [e.path for e in self.entries if self._outstanding[e.index]]

    @property
    def statuses(self) -> dict[str, StepStatus]:
        """Current status per step path."""
        return {e.path: self._status(e.index) for e in self.entries}

    def step_state(self, path: str) -> tuple[StepStatus, float | None]:
        """One step's current status and completion time (what a verdict message carries)."""
        i = self._index[path]
        return self._status(i), self._completed_t[i]

    def _status(self, i: int) -> StepStatus:
        if self._completed[i]:
            return "completed"
        return "pending" if self._waiting[i] else "enabled"

    # ------------------------------------------------------------------------------ updates

    def update(self, state: WorldState) -> list[TrackerEvent]:
        """Advance by one state; returns the events it caused (enabled, completed, ...)."""
        view = StateView(state, self.library.thresholds, self._extents)
        conds = self._conds
        return self._advance(state.t, lambda i: conds[i](view))

    def update_values(self, t: float, value_of: Callable[[int], bool]) -> list[TrackerEvent]:
        """`update` for a state whose action conditions were evaluated elsewhere (a replay
        worker): `value_of(i)` is action i's condition, or raises its EvaluationError."""
        return self._advance(t, value_of)

    def condition_values(self, state: WorldState) -> tuple[list[bool], dict[int, str]]:
        """Every action's condition in `state`, whatever the tracker's progress, and the
        messages of those that could not be evaluated (False in the list); what a replay
        worker computes for `update_values`."""
        view = StateView(state, self.library.thresholds, self._extents)
        values: list[bool] = []
        errors: dict[int, str] = {}
        for i, cond in enumerate(self._conds):
            try:
                values.append(cond(view))
            except EvaluationError as exc:
                values.append(False)
                errors[i] = exc.message
        return values, errors

    def _advance(self, t: float, value_of: Callable[[int], bool]) -> list[TrackerEvent]:
        if self._finished:
            raise RuntimeError("the tracker was finished; call reset() to start again")
        if self._last_t is not None and t < self._last_t:
            raise InputError(f"time goes backwards ({t} after {self._last_t})", field="t")
        entries = self.entries
        active = self._active
        # Every condition first: a state that cannot be evaluated changes nothing (the node
        # and a replay skip it alike), rather than half of its actions.
        values: list[bool] = []
        i = -1
        try:
            for i in active:
                values.append(value_of(i))
        except EvaluationError as exc:
            e = entries[i]
            err = EvaluationError(f"step {e.path} ({e.action.action_id}) at t={t}: {exc.message}")
            err.key = f"step {e.path} ({e.action.action_id}): {exc.message}"
            raise err from None
        first = self._n_states == 0
        self._n_states += 1
        self._last_t = t
        events: list[TrackerEvent] = []
        if self.done:
            return events
        completed, waiting, prev, held = self._completed, self._waiting, self._prev, self._held
        if first:
            for e in entries:
                if not waiting[e.index]:
                    self._announced[e.index] = True
                    events.append(TrackerEvent(t, "enabled", e.path, e.action.action_id))
        n_done = self._n_done
        outstanding = self._outstanding
        # Plan order: an action completed here enables its successors in this same pass.
        for i, value in zip(active, values, strict=True):
            if completed[i]:  # a chain end that completed earlier
                if outstanding[i]:
                    held[i] = held[i] + 1 if value else 0
                    if held[i] >= self.hold:  # the robot put it back
                        outstanding[i] = False
                        self._n_outstanding -= 1
                elif prev[i] and not value:
                    events.append(self._event(t, "regression", entries[i]))
                    outstanding[i] = True
                    self._n_outstanding += 1
                    held[i] = 0
            elif waiting[i]:
                held[i] = 0
                if value and not prev[i] and not first:
                    events.append(self._event(t, "out_of_order", entries[i]))
            elif value:
                held[i] += 1
                if held[i] >= self.hold:
                    self._complete(entries[i], t, events)
            else:
                held[i] = 0
            prev[i] = value
        if self._n_done == len(entries) and not self._n_outstanding:
            self._passed = True
            self._active = []
        elif self._n_done != n_done:
            # Completed intermediate actions need no more evaluation; chain ends do until done.
            self._active = [j for j in self._active if not completed[j] or entries[j].chain_end]
        if events:
            self._events.extend(ev for ev in events if ev.kind in REPORTED_KINDS)
        return events

    def _event(self, t: float, kind: EventKind, e: PlanEntry) -> TrackerEvent:
        aid = e.action.action_id
        if kind == "regression":
            detail = f"{aid} no longer holds after completing at t={self._completed_t[e.index]}"
        else:
            detail = (
                f"{aid} holds before its predecessors completed (waiting for "
                + ", ".join(self.entries[p].path for p in e.predecessors if not self._completed[p])
                + ")"
            )
        return TrackerEvent(t, kind, e.path, aid, detail)

    def _complete(self, e: PlanEntry, t: float, events: list[TrackerEvent]) -> None:
        i = e.index
        self._completed[i] = True
        self._completed_t[i] = t
        self._order[i] = self._n_done
        self._n_done += 1
        events.append(TrackerEvent(t, "completed", e.path, e.action.action_id))
        for j in self._successors[i]:
            self._waiting[j] -= 1
            if not self._waiting[j] and not self._announced[j]:
                self._announced[j] = True
                succ = self.entries[j]
                events.append(TrackerEvent(t, "enabled", succ.path, succ.action.action_id))

    # ------------------------------------------------------------------------------ reports

    def failed_step(self) -> str | None:
        """Where the task is stuck (spec §5): the first outstanding regressed action in plan
        order (the robot undid that step), else the first incomplete enabled action,
        preferring the chain that made the latest progress, else plan order. None when done."""
        if self._passed:
            return None
        for e in self.entries:
            if self._outstanding[e.index]:
                return e.path
        best: tuple[int, int] | None = None
        best_path = None
        for e in self.entries:
            i = e.index
            if self._completed[i] or self._waiting[i]:
                continue
            progress = max((self._order[p] for p in e.predecessors), default=-1)
            key = (-progress, i)
            if best is None or key < best:
                best, best_path = key, e.path
        return best_path

    def report(self) -> Report:
        """The report as of now; `running` until the task passes or `finish()` is called."""
        verdict: Literal["pass", "fail", "running"]
        verdict = "pass" if self.done else "fail" if self._finished else "running"
        steps = tuple(
            StepResult(
                e.path,
                e.action.action_id,
                "completed" if self._completed[e.index] else "incomplete",
                self._completed_t[e.index],
            )
            for e in self.entries
        )
        return Report(
            verdict=verdict,
            failed_step=None if self.done else self.failed_step(),
            steps=steps,
            events=tuple(self._events),
            n_states=self._n_states,
            t_end=self._last_t,
        )

    def finish(self) -> Report:
        """End the stream: pass if the task passed, else fail with `failed_step`."""
        self._finished = True
        return self.report()


def check_trace(
    oracle: FineGrainedOracle | str | Path | dict[str, Any],
    states: Iterable[WorldState],
    library: FunctionLibrary | None = None,
    hold: int = 1,
) -> Report:
    """Evaluate a whole trace and return the final report."""
    tracker = StepTracker(oracle, library, hold=hold)
    for state in states:
        tracker.update(state)
    return tracker.finish()
