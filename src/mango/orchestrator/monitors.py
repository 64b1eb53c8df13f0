"""Monitors: what says a subgoal is done or has gone wrong, behind one protocol.

- `oracle`: the fine-grained oracle's step tracker (`mango.oracle`). A subgoal is complete when
  every action of its oracle step is; failures are the tracker's regression and out-of-order
  events, progress lost inside the active step (an action it completed stops holding before
  the step is done: a drop, a release beside the target) and no completion for N s.
- `gt`: the simulator's ground truth through the world-failure events (`events`), as VoLo's
  GT monitor.
- `none`: sees nothing; the tools' own word is all there is.

Every world state reaches `update` (the stream); `poll` is the monitor context, read at the
configured rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mango.oracle.compile import compile_expression
from mango.oracle.expr import And, Atom, Expr, Or, parse_expression
from mango.oracle.model import FineGrainedOracle
from mango.oracle.predicates import EvaluationError, StateView
from mango.oracle.tracker import StepTracker
from mango.oracle.world_state import WorldState
from mango.orchestrator.events import WorldFailureDetector
from mango.orchestrator.schemas import Plan, Signal, Subgoal


class Monitor(Protocol):
    name: str

    def update(self, state: WorldState) -> None: ...

    def poll(self, t: float, active: Subgoal | None, tool_running: bool) -> list[Signal]: ...

    def completed(self) -> set[str]: ...

    def reset_progress_clock(self, t: float) -> None: ...


class NoMonitor:
    """No monitor: no completions, no failures."""

    name = "none"

    def update(self, state: WorldState) -> None:
        pass

    def poll(self, t: float, active: Subgoal | None, tool_running: bool) -> list[Signal]:
        return []

    def completed(self) -> set[str]:
        return set()

    def reset_progress_clock(self, t: float) -> None:
        pass


def _held_atoms(expr: Expr) -> list[Atom]:
    """The `grasped(X)` atoms an expression requires (not under a negation)."""
    if isinstance(expr, Atom):
        return [expr] if expr.predicate == "grasped" else []
    if isinstance(expr, And | Or):
        return [a for op in expr.operands for a in _held_atoms(op)]
    return []


class OracleMonitor:
    """The fine-grained oracle as the completion and failure monitor.

    Progress is lost when the last action the active step completed stops holding before the
    step is done: for an action that holds an object (`grasped(X)` in its condition) as soon
    as the object leaves the hand (`lost_states` states), for any other after `lost_s`, since
    a hand lowering an object into its container legitimately ends `up(X)` before the release
    completes the next action. A gripper closed on something (the state's `gripper`: closed,
    not empty) while the active step's holding action stays incomplete for `grasp_s` is an
    unexplained grasp: the hand holds what the step does not name. When the world state says
    *what* is held (`grasped(Y)` on one of its objects), a Y that no unfinished step's holding
    action names is that grasp at once: the wait is only for a closed gripper whose load the
    state cannot name.
    """

    name = "oracle"

    def __init__(self, oracle: FineGrainedOracle, plan: Plan, no_progress_s: float = 10.0,
                 lost_states: int = 1, lost_s: float = 1.5, grasp_s: float = 2.0,
                 empty_width: float = 0.003) -> None:
        self.tracker = StepTracker(oracle)
        self.lost_s = lost_s
        self.grasp_s, self.empty_width = grasp_s, empty_width
        self._closed_since: float | None = None
        self._grasp_reported = False
        lib = self.tracker.library
        self._held_conds: dict[str, list] = {
            e.path: [compile_expression(a, lib) for mon in e.action.monitoring
                     for a in _held_atoms(parse_expression(mon.handle_as))]
            for e in self.tracker.entries}
        self._held_objects: dict[str, set[str]] = {
            e.path: {a.args[0] for mon in e.action.monitoring
                     for a in _held_atoms(parse_expression(mon.handle_as)) if a.args}
            for e in self.tracker.entries}
        self._grasp_conds: dict[str, object] = {}
        self._named_grasps: set[str] = set()  # wrong objects reported while still held
        self._lost_since: dict[str, float] = {}
        self.plan = plan
        self.no_progress_s = no_progress_s
        self.lost_states = lost_states
        self._paths = {s.id: [e.path for e in self.tracker.entries
                              if s.oracle_step and e.path.split(".")[0] == s.oracle_step]
                       for s in plan.subgoals}
        self._pending: list[Signal] = []
        self._last_completion_t: float | None = None
        self._lost_count: dict[str, int] = {}
        self._reported_lost: set[str] = set()
        self._done: set[str] = set()
        self._t = 0.0
        self._active: Subgoal | None = None

    def _subgoal_of(self, path: str) -> str | None:
        for sid, paths in self._paths.items():
            if path in paths:
                return sid
        return None

    def update(self, state: WorldState) -> None:
        self._t = state.t
        if self._last_completion_t is None:
            self._last_completion_t = state.t
        for ev in self.tracker.update(state):
            sid = self._subgoal_of(ev.path)
            if ev.kind == "completed":
                self._last_completion_t = ev.t
                self._reported_lost.discard(ev.path)
            elif ev.kind in ("regression", "out_of_order"):
                self._pending.append(Signal(t=ev.t, kind="failure", subgoal=sid, reason=ev.kind,
                                            detail=f"{ev.path} {ev.action_id}: {ev.detail}",
                                            monitor=self.name))
        values, _ = self.tracker.condition_values(state)
        self._unexplained_grasp(state)
        for s in self.plan.subgoals:
            paths = self._paths[s.id]
            states = [self.tracker.step_state(p)[0] for p in paths]
            if paths and all(x == "completed" for x in states):
                if s.id not in self._done:
                    self._done.add(s.id)
                    self._pending.append(Signal(t=state.t, kind="completed", subgoal=s.id,
                                                reason="oracle_step_completed",
                                                detail=f"oracle step {s.oracle_step}",
                                                monitor=self.name))
                continue
            self._done.discard(s.id)
            # the last action the step completed no longer holds before the step is done
            done = [p for p, x in zip(paths, states, strict=True) if x == "completed"]
            if not done:
                continue
            last = done[-1]
            idx = next(e.index for e in self.tracker.entries if e.path == last)
            held = self._held_conds[last]
            if held:
                view = StateView(state, self.tracker.library.thresholds)
                lost = not all(_safe(c, view) for c in held)
                quick = True
            else:
                lost, quick = not values[idx], False
            if not lost:
                self._lost_count[last] = 0
                self._lost_since.pop(last, None)
                self._reported_lost.discard(last)  # holds again: a new loss is news
                continue
            self._lost_count[last] = self._lost_count.get(last, 0) + 1
            since = self._lost_since.setdefault(last, state.t)
            due = self._lost_count[last] >= self.lost_states if quick else \
                state.t - since >= self.lost_s
            if due and last not in self._reported_lost:
                self._reported_lost.add(last)
                entry = self.tracker.entries[idx]
                what = "the object left the hand" if quick else "its condition no longer holds"
                self._pending.append(Signal(
                    t=state.t, kind="failure", subgoal=s.id, reason="progress_lost",
                    detail=f"{last} {entry.action.action_id} was completed; {what} before "
                           f"step {s.oracle_step} was done", monitor=self.name))

    def _named_unexplained_grasp(self, state: WorldState) -> bool:
        """`grasped(Y)` for an object Y no unfinished step's holding action names: reported
        in the state it starts (the first one the tracker sees it in). True when the state
        names what the hand holds (explained or not), so the width rule is not needed."""
        view = StateView(state, self.tracker.library.thresholds)
        held = set()
        for oid, st in state.objects.items():
            if st.kind != "object":
                continue
            cond = self._grasp_conds.get(oid)
            if cond is None:
                cond = self._grasp_conds[oid] = compile_expression(
                    parse_expression(f"grasped({oid})"), self.tracker.library)
            if _safe(cond, view):
                held.add(oid)
        self._named_grasps &= held  # out of the hand: a new grasp of it is news again
        if not held:
            return False
        explained = {o for s in self.plan.subgoals if s.id not in self._done
                     for p in self._paths[s.id] for o in self._held_objects[p]}
        active = self._active
        for oid in sorted(held - explained - self._named_grasps):
            self._named_grasps.add(oid)
            sid = active.id if active is not None else None
            self._pending.append(Signal(
                t=state.t, kind="failure", subgoal=sid, reason="unexplained_grasp",
                detail=f"the hand holds {oid}, which no unfinished step's holding action "
                       "names", monitor=self.name))
        self._grasp_reported = self._grasp_reported or bool(held - explained)
        return True

    def _unexplained_grasp(self, state: WorldState) -> None:
        if self._named_unexplained_grasp(state):
            return
        g = state.gripper
        closed = g is not None and g.closed is True and (g.width or 0.0) > self.empty_width
        if not closed:
            self._closed_since, self._grasp_reported = None, False
            return
        if self._closed_since is None:
            self._closed_since = state.t
        for s in self.plan.subgoals:
            paths = [p for p in self._paths[s.id] if self._held_conds[p]]
            if not paths or s.id in self._done:
                continue
            status = [self.tracker.step_state(p)[0] for p in paths]
            if status[0] == "completed":
                return  # a holding action of some step is done: the grasp is explained
        active = self._active
        if active is None or active.id in self._done or self._grasp_reported:
            return
        if state.t - self._closed_since >= self.grasp_s:
            self._grasp_reported = True
            self._pending.append(Signal(
                t=state.t, kind="failure", subgoal=active.id, reason="unexplained_grasp",
                detail=f"the gripper holds something for {state.t - self._closed_since:.1f} s "
                       f"and step {active.oracle_step}'s holding action is not completed",
                monitor=self.name))

    def poll(self, t: float, active: Subgoal | None, tool_running: bool) -> list[Signal]:
        self._active = active
        out, self._pending = self._pending, []
        last = self._last_completion_t if self._last_completion_t is not None else t
        if tool_running and active is not None and active.id not in self._done \
                and t - last >= self.no_progress_s:
            self._last_completion_t = t  # fires again after another N s
            out.append(Signal(t=t, kind="failure", subgoal=active.id, reason="no_progress",
                              detail=f"no oracle step completed for {self.no_progress_s:g} s",
                              monitor=self.name))
        return out

    def reset_progress_clock(self, t: float) -> None:
        """A new tool started: the no-progress window starts now."""
        self._last_completion_t = t

    def completed(self) -> set[str]:
        return set(self._done)


class GroundTruthMonitor:
    """Sim ground truth as the monitor: world-failure events and goal completions."""

    name = "gt"

    def __init__(self, detector: WorldFailureDetector, plan: Plan) -> None:
        self.detector = detector
        self.plan = plan
        self._seen = 0
        self._pending: list[Signal] = []

    def _subgoal(self, subject: str | None) -> str | None:
        for s in self.plan.subgoals:
            goals = [g for g in self.detector.goals if g.step == s.expert_step]
            if subject is not None and (subject == s.object or any(
                    g.subject == subject for g in goals)):
                return s.id
        return None

    def update(self, state: WorldState) -> None:
        # the detector is fed by the loop (it is the run's ground truth too): read what's new
        events = self.detector.events[self._seen:]
        self._seen = len(self.detector.events)
        for ev in events:
            if ev.kind == "recovery":
                continue
            sid = self._subgoal(ev.subject)
            kind = "completed" if ev.kind == "completion" else "failure"
            self._pending.append(Signal(t=ev.t, kind=kind, subgoal=sid, reason=ev.kind,
                                        detail=ev.detail, monitor=self.name))

    def poll(self, t: float, active: Subgoal | None, tool_running: bool) -> list[Signal]:
        out, self._pending = self._pending, []
        return out

    def completed(self) -> set[str]:
        return {s.id for s in self.plan.subgoals if self.detector.holds(s.expert_step)}

    def reset_progress_clock(self, t: float) -> None:
        pass


def _safe(cond: object, view: StateView) -> bool:
    try:
        return bool(cond(view))  # type: ignore[operator]
    except EvaluationError:
        return False


def completed_in_order(plan: Plan, done: Sequence[str] | set[str]) -> list[str]:
    """The plan's subgoal ids not in `done`, in the plan's (original) order."""
    return [s.id for s in plan.subgoals if s.id not in set(done)]
