"""MotorMind's roles for mode `motor`: what each reads and answers, its protocol, and the
offline (rule-based) implementation of each.

- Planner: subgoals with a success criterion each; revises the unfinished plan after a failed
  attempt (only ever a subset of the original subgoals, in their order).
- Executor: a short batch of mid-level actions for the active subgoal, with an assessment,
  done, what to expect and a confidence. Its offline rules derive the motions from perception
  (the object's detected box relative to the hand, the destination's) and proprioception.
- Monitor: alerts while an attempt runs; `info` alerts are evidence, a `stop` alert cancels
  the batch at the next command boundary. It never proposes motions.
- Verifier: the attempt's outcome (done, progress, failed).
- Memory: condenses the evidence of each assessment into a short note.

The schemas and protocols are `motor_schemas`' (re-exported here), the executor's rules
`executor_rules`' and `fixture_rules`'. Nothing here moves the arm: the controller
(`motor_control`) does.
"""

from __future__ import annotations

from mango.orchestrator.executor_rules import OfflineExecutor
from mango.orchestrator.motor_schemas import (
    MAX_BATCH,
    OPEN_MARGIN,
    ActionBatch,
    Alert,
    AlertList,
    ConversionError,
    ExecutorRole,
    Measured,
    MemoryNote,
    MemoryRole,
    MonitorRole,
    MonitorView,
    MotionAction,
    MotorSubgoal,
    Observation,
    PlannerRole,
    Revision,
    Verdict,
    VerifierRole,
)
from mango.orchestrator.schemas import Plan, Subgoal
from mango.primitives.executor import MIN_HELD_WIDTH
from mango.primitives.planning import GRIPPER_OPEN

__all__ = ["MAX_BATCH", "ActionBatch", "Alert", "AlertList", "ConversionError", "ExecutorRole",
           "Measured", "MemoryNote", "MemoryRole", "MonitorRole", "MonitorView", "MotionAction",
           "MotorSubgoal", "Observation", "OfflineExecutor", "OfflineMemory", "OfflineMonitor",
           "OfflinePlanner", "OfflineVerifier", "PlannerRole", "Revision", "Verdict",
           "VerifierRole", "criterion", "measure_grip", "settled_by_measurement"]


# ---------------------------------------------------------------------- offline roles


class OfflinePlanner:
    """plan.oracle_steps: the plan the other modes use, each subgoal's criterion its oracle
    step (or its relation); plan.keep_unfinished: a revision keeps the original subgoals not
    yet done, the failed one first."""

    name = "offline"

    def plan(self, plan: Plan) -> list[MotorSubgoal]:
        return [MotorSubgoal(subgoal=s, criterion=criterion(s)) for s in plan.subgoals]

    def revise(self, plan: Plan, unfinished: list[str], failed: str, why: str,
               memory: str) -> Revision:
        order = [s.id for s in plan.subgoals if s.id in unfinished]
        if failed in order:
            order.remove(failed)
            order.insert(0, failed)
        return Revision(remaining=order, reason=f"after '{why}': retry {failed}, keep the rest",
                        rule="plan.keep_unfinished")


def criterion(s: Subgoal) -> str:
    if s.oracle_step:
        return f"oracle step {s.oracle_step} completed"
    if s.relation and s.destination:
        return f"{s.relation}({s.object}, {s.destination})"
    return s.instruction


class OfflineMonitor:
    """monitor.oracle_failure: the oracle monitor reports a failure (stop);
    monitor.grasp_lost: the batch should hold the object and the fingers closed on nothing
    (stop); monitor.oracle_completed: a subgoal completed (info)."""

    name = "offline"
    synchronous = True  # rules answer at once: a boundary waits for them (reproducible runs)

    def __init__(self, empty_width: float = 0.003) -> None:
        self.empty_width = empty_width

    def assess(self, obs: MonitorView) -> list[Alert]:
        out: list[Alert] = []
        for kind, reason, detail in obs.signals:
            if kind == "failure":
                out.append(Alert(level="stop", reason=reason, detail=detail,
                                 rule="monitor.oracle_failure"))
            else:
                out.append(Alert(level="info", reason=reason, detail=detail,
                                 rule="monitor.oracle_completed"))
        if obs.expect_holding and obs.width_cmd < 0.01 and obs.width <= self.empty_width \
                and obs.hand_z > obs.table_z + 0.05:
            out.append(Alert(level="stop", reason="grasp_lost",
                             detail=f"fingers at {obs.width * 1000:.1f} mm while carrying",
                             rule="monitor.grasp_lost"))
        return out


def measure_grip(measured: Measured, held_before: bool, after: Observation) -> None:
    """What the fingers say about a grasp the attempt started with (commanded closed all
    along): on nothing now (lost), or wide open (let go without a command)."""
    closed = after.width_cmd < 0.01
    measured.lost_grasp = held_before and closed and after.width <= MIN_HELD_WIDTH
    measured.released = held_before and closed and after.width > GRIPPER_OPEN - OPEN_MARGIN


def settled_by_measurement(obs: Observation, measured: Measured) -> Verdict | None:
    """A measured lost grasp or release settles an attempt before any verifier is asked."""
    if not (measured.lost_grasp or measured.released):
        return None
    what = "lost_grasp" if measured.lost_grasp else "release"
    return Verdict(outcome="failed", reason=f"measured {what.replace('_', ' ')}: fingers at "
                   f"{obs.width * 1000:.1f} mm, commanded {obs.width_cmd * 1000:.0f} mm",
                   rule=f"verify.measured_{what}", settled_by="measurement")


class OfflineVerifier:
    """verify.criterion_holds: the monitor or perception says the subgoal is done;
    verify.stopped: a stop alert cut the batch; verify.expectation_met / _missed: the
    batch's expected grip is (not) what the hand measures."""

    name = "offline"

    def verify(self, obs: Observation, batch: ActionBatch, measured: Measured,
               alerts: list[Alert]) -> Verdict:
        if obs.criterion_holds():
            return Verdict(outcome="done", reason="the subgoal's criterion holds",
                           rule="verify.criterion_holds")
        stops = [a for a in alerts if a.level == "stop"]
        if stops:
            return Verdict(outcome="failed", reason=f"stopped: {stops[0].reason}",
                           rule="verify.stopped")
        if measured.status in ("rejected", "failed"):
            return Verdict(outcome="failed", reason=measured.message, rule="verify.not_executed")
        if not batch.actions:
            return Verdict(outcome="failed", reason=batch.assessment, rule="verify.no_motion")
        if batch.expect_holding is not None and batch.expect_holding != obs.holding:
            return Verdict(outcome="failed", reason=f"expected {batch.expect!r}; the hand "
                           f"{'holds' if obs.holding else 'holds nothing'}",
                           rule="verify.expectation_missed")
        return Verdict(outcome="progress", reason=f"as expected: {batch.expect}",
                       rule="verify.expectation_met")


class OfflineMemory:
    """memory.condense: the last few assessments, one line each, newest last."""

    name = "offline"

    def __init__(self, keep: int = 6) -> None:
        self.keep = keep

    def condense(self, previous: str, evidence: dict[str, object]) -> MemoryNote:
        line = (f"attempt {evidence.get('attempt')} on subgoal {evidence.get('subgoal')}: "
                f"{evidence.get('outcome')} ({evidence.get('reason')})")
        lines = [*[x for x in previous.splitlines() if x][-(self.keep - 1):], line]
        return MemoryNote(note="\n".join(lines))
