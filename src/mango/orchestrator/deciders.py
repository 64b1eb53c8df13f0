"""Deciders: who chooses the next decision, behind one protocol.

`offline` is the embedded default: deterministic rules over the monitor's signal, what
perception sees (`Perceived`) and the run's bookkeeping. Every decision it makes names its
rule (`rule`); it is never presented as a model. A rule states an intent (take the right
object, put it where it belongs, tell the VLA again, replan, give up); the mode's vocabulary
(`config.MODES`) decides which allowed (action, tool) carries it out, so no rule is written
for one mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from mango.orchestrator.config import ModeSpec
from mango.orchestrator.monitors import completed_in_order
from mango.orchestrator.schemas import Decision, Plan, Signal, Subgoal


@dataclass(frozen=True)
class Perceived:
    """What perception and proprioception say at a decision point."""

    held: str | None  # the entity perceived between the fingers (None: empty hand)
    gripper_width: float  # m, measured
    object_position: tuple[float, float, float] | None  # the active subgoal's object
    destination_position: tuple[float, float, float] | None
    object_at_destination: bool | None  # perceived relation (None: cannot tell)
    object_moved_m: float | None  # from where it stood in the initial scene
    table_height: float
    hand_travel_m: float  # how far the hand moved over the monitor's last window
    hand_height_at_signal: float | None = None  # above the table, when the signal's event was

    def to_json(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass
class DecisionContext:
    """The deliberation context at a planning point (monitor signal or tool end)."""

    phase: str  # "route" | "recovery"
    plan: Plan
    active: Subgoal
    mode: ModeSpec
    event: str  # "start" | "signal" | "tool_ended"
    signal: Signal | None = None
    tool: str | None = None  # the tool that ran last
    tool_status: str | None = None  # its outcome: "done", "succeeded", "failed", "rejected"
    tool_running: bool = False
    perceived: Perceived | None = None
    completed: set[str] = field(default_factory=set)  # the monitor's completed subgoals
    monitored: bool = True
    attempts: int = 0  # recoveries so far for this subgoal
    max_attempts: int = 3
    rewrites: list[str] = field(default_factory=list)  # instructions the VLA may be given
    last_instruction: str | None = None
    spent_tools: set[str] = field(default_factory=set)  # recovery tools that did not help here
    # for model deciders (filled by the loop when the decider `wants_images`/context):
    images: dict[str, Any] = field(default_factory=dict)  # "before" / "now": RGB arrays
    recent: list[dict[str, Any]] = field(default_factory=list)  # the last decisions
    history: list[dict[str, Any]] = field(default_factory=list)  # signals, tool runs, halts

    def digest_input(self) -> dict[str, Any]:
        return {"phase": self.phase, "active": self.active.id, "event": self.event,
                "signal": self.signal.model_dump() if self.signal else None,
                "tool": self.tool, "tool_status": self.tool_status,
                "tool_running": self.tool_running,
                "perceived": self.perceived.to_json() if self.perceived else None,
                "completed": sorted(self.completed), "attempts": self.attempts,
                "spent_tools": sorted(self.spent_tools), "mode": self.mode.name}


class Decider(Protocol):
    name: str

    def decide(self, ctx: DecisionContext) -> Decision: ...


# intent -> the (action, tool) choices that carry it out, best first
_INTENTS: dict[str, list[tuple[str, str]]] = {
    "execute": [("continue", "vla"), ("continue", "grasp")],
    "regrasp": [("grasp_tool", "grasp"), ("continue", "grasp"), ("rewrite", "vla")],
    "replace": [("place_tool", "place"), ("continue", "grasp"), ("rewrite", "vla")],
    "retell": [("rewrite", "vla"), ("continue", "grasp")],
    "carry_on": [("rewrite", "vla"), ("continue", "place"), ("place_tool", "place")],
    "resume": [("continue", "vla"), ("continue", "noop")],
    "replan": [("replan", "noop"), ("rewrite", "vla"), ("continue", "grasp")],
    "advance": [("next_subgoal", "noop")],
    "abort": [("abort", "noop")],
}
NEAR_DESTINATION_M = 0.25  # set down this close to the destination: misplaced, not dropped
MOVED_M = 0.03
DROP_HAND_M = 0.2  # the object left a hand this high above the table: it fell


class OfflineDecider:
    """Deterministic rules (named in every decision): the embedded default, not a model."""

    name = "offline"

    def decide(self, ctx: DecisionContext) -> Decision:
        intent, rule, reason = self._rule(ctx)
        return self._carry_out(ctx, intent, rule, reason)

    def _carry_out(self, ctx: DecisionContext, intent: str, rule: str,
                   reason: str) -> Decision:
        for action, tool in _INTENTS[intent]:
            if not ctx.mode.allows(action, tool) or action in ctx.spent_tools:
                continue  # a recovery tool that already failed this subgoal is not tried again
            d = Decision(phase=ctx.phase, action=action, tool=tool,  # type: ignore[arg-type]
                         subgoal=ctx.active.id, rule=rule, reason=reason)
            if action == "replan":
                d.remaining = completed_in_order(ctx.plan, ctx.completed)
            if action == "rewrite":
                d.instruction = self._rewrite(ctx)
            if tool == "vla" and d.instruction is None:
                d.instruction = ctx.active.instruction
            return d
        return Decision(phase=ctx.phase, action="abort", subgoal=ctx.active.id,
                        rule=f"{rule}+no_allowed_action",
                        reason=f"{reason}; mode {ctx.mode.name} allows nothing for '{intent}'")

    @staticmethod
    def _rewrite(ctx: DecisionContext) -> str:
        options = [t for t in ctx.rewrites if t != ctx.last_instruction] or ctx.rewrites
        return options[ctx.attempts % len(options)] if options else ctx.active.instruction

    def _rule(self, ctx: DecisionContext) -> tuple[str, str, str]:
        sg, p = ctx.active, ctx.perceived
        if ctx.event == "start":
            return "execute", "route.start", f"subgoal {sg.id}: {sg.instruction}"
        if sg.id in ctx.completed:
            return "advance", "route.monitor_completed", f"the monitor says {sg.id} is done"
        sig = ctx.signal
        if ctx.phase == "route" and ctx.tool_running and sig is not None \
                and sig.kind == "completed":
            return "resume", "route.other_subgoal_completed", \
                f"subgoal {sig.subgoal} completed meanwhile; {sg.id} goes on"
        if ctx.phase == "route" and ctx.tool == "grasp" and ctx.tool_status == "succeeded" \
                and p is not None and p.held == sg.object:
            return "carry_on", "route.grasped_now_place", f"holding {sg.object}"
        if ctx.phase == "route" and not ctx.monitored and ctx.tool in ("place", "vla") \
                and ctx.tool_status in ("done", "succeeded"):
            return "advance", "route.no_monitor_trusts_the_tool", \
                f"no monitor; the {ctx.tool} tool ended ({ctx.tool_status})"
        if ctx.attempts >= ctx.max_attempts:
            return "abort", "recovery.budget_spent", \
                f"{ctx.attempts} recoveries for subgoal {sg.id} did not finish it"
        if p is None:
            return "retell", "recovery.blind_retry", "no perception at this point"
        if ctx.signal is not None and ctx.signal.reason == "no_progress" and ctx.tool_running \
                and p.hand_travel_m > MOVED_M:
            return "resume", "recovery.false_alarm_hand_moving", (
                f"the hand moved {p.hand_travel_m * 100:.0f} cm in the last window: "
                "the tool is working")
        if p.held is not None and p.held != sg.object:
            return "regrasp", "recovery.wrong_object_in_hand", \
                f"perceived {p.held} in the hand, the subgoal moves {sg.object}"
        if p.object_at_destination and p.held is None and not ctx.monitored:
            # with a monitor, completion is the monitor's word (the oracle's step): perception
            # of a box "in" a fixture's bounding box is too weak to overrule it
            return "advance", "recovery.perceived_done", \
                f"{sg.object} is perceived at its destination"
        if p.held is not None and p.held == sg.object:
            if ctx.signal is not None and ctx.tool_running and ctx.signal.kind == "failure" \
                    and ctx.signal.reason in ("no_progress",):
                return "resume", "recovery.false_alarm_object_in_hand", \
                    f"{sg.object} is in the hand: the tool is carrying it"
            return "carry_on", "recovery.object_in_hand", f"{sg.object} is held, not placed"
        if sg.relation is None:  # close / turn on: nothing to pick
            return "retell", "recovery.fixture_not_done", f"{sg.instruction} is not done"
        if p.object_position is None:
            return "replan", "recovery.object_not_seen", f"{sg.object} is not in view"
        if p.object_moved_m is not None and p.object_moved_m < MOVED_M:
            return "retell", "recovery.object_untouched", \
                f"{sg.object} has not moved: tell the VLA again"
        low = p.object_position[2] - p.table_height < 0.12
        fell = p.hand_height_at_signal is not None and p.hand_height_at_signal > DROP_HAND_M
        if fell and (ctx.signal.reason if ctx.signal else "") == "progress_lost":
            return "replan", "recovery.dropped_in_transport", (
                f"{sg.object} left the hand {p.hand_height_at_signal * 100:.0f} cm above the "
                "table: replan from what is done")
        if p.destination_position is not None and low:
            dx = p.object_position[0] - p.destination_position[0]
            dy = p.object_position[1] - p.destination_position[1]
            if (dx * dx + dy * dy) ** 0.5 < NEAR_DESTINATION_M:
                return "replace", "recovery.misplaced_near_destination", \
                    f"{sg.object} rests beside its destination"
        return "replan", "recovery.dropped_elsewhere", \
            f"{sg.object} lies away from its destination: replan from what is done"


def decision_problem(d: Decision, plan: Plan, mode: ModeSpec) -> str | None:
    """Why a decision cannot be carried out (any decider's answer is checked alike), or None:
    its (action, tool) must be one the mode allows, a replan must return original subgoal
    ids (never new ones, none twice), a rewrite must say the new instruction."""
    if d.action == "plan":
        return None
    if not mode.allows(d.action, d.tool):
        return f"mode {mode.name} does not allow {d.action} with tool {d.tool}"
    if d.action == "replan":
        ids = [s.id for s in plan.subgoals]
        rem = d.remaining or []
        unknown = [i for i in rem if i not in ids]
        if unknown:
            return f"replan names subgoals the plan does not have: {', '.join(unknown)}"
        if len(set(rem)) != len(rem):
            return "replan lists a subgoal twice"
    if d.action == "rewrite" and not (d.instruction or "").strip():
        return "rewrite gives no instruction"
    return None
