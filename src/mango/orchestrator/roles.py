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

Every answer is a validated model; a model's answer is validated against the same schema as
the rules' own. Nothing here moves the arm: the controller (`motor`) does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mango.control.motion import MotionCommand
from mango.orchestrator.schemas import Plan, Subgoal
from mango.perception.base import Detection
from mango.primitives.executor import MIN_HELD_WIDTH
from mango.primitives.planning import (
    GRIPPER_OPEN,
    PlaceRequest,
    PlaceTarget,
    TableArea,
    container_target,
    empty_space_target,
    footprint_extents,
    parse_destination,
    plan_grasp,
    surface_target,
)

MAX_BATCH = 6  # actions one proposal may hold: a short batch, then a fresh look
Direction = Literal["forward", "backward", "left", "right", "up", "down"]
# the robot base frame: x forward, y left, z up (REP 103, as the FR3's base)
DIRECTIONS: dict[str, tuple[float, float, float]] = {
    "forward": (1.0, 0.0, 0.0), "backward": (-1.0, 0.0, 0.0), "left": (0.0, 1.0, 0.0),
    "right": (0.0, -1.0, 0.0), "up": (0.0, 0.0, 1.0), "down": (0.0, 0.0, -1.0)}
AXES: dict[str, tuple[float, float, float]] = {
    "x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ConversionError(ValueError):
    """A proposed action that is valid JSON but not a motion: which action, which field."""


class MotionAction(_Model):
    """One mid-level action as a proposer writes it (the base frame's named directions)."""

    kind: Literal["move", "rotate", "gripper", "wait", "home"]
    direction: Direction | Literal["cw", "ccw"] | None = None  # move: where; rotate: sense
    mm: float | None = None  # move: how far
    axis: Literal["x", "y", "z"] | None = None  # rotate: about which base axis
    degrees: float | None = None  # rotate: how far
    gripper: Literal["open", "close", "width"] | None = None
    width_mm: float | None = None  # gripper width
    seconds: float | None = None  # wait

    def to_command(self, index: int) -> MotionCommand:
        """The motion core's command; `ConversionError` names the action and the field."""
        where = f"action {index} ({self.kind})"

        def need(name: str) -> float | str:
            value = getattr(self, name)
            if value is None:
                raise ConversionError(f"{where}: '{name}' is required")
            if isinstance(value, float) and not math.isfinite(value):
                raise ConversionError(f"{where}: '{name}' must be finite")
            return value

        if self.kind == "move":
            d = need("direction")
            if d not in DIRECTIONS:
                raise ConversionError(f"{where}: direction must be one of "
                                      f"{', '.join(DIRECTIONS)} (got {d!r})")
            return MotionCommand("move", direction=DIRECTIONS[str(d)],
                                 distance_mm=float(need("mm")))
        if self.kind == "rotate":
            sense = need("direction")
            if sense not in ("cw", "ccw"):
                raise ConversionError(f"{where}: direction must be cw or ccw (got {sense!r})")
            deg = float(need("degrees"))
            # ccw about +axis (right hand) is a positive angle
            return MotionCommand("rotate", axis=AXES[str(need("axis"))],
                                 angle_deg=deg if sense == "ccw" else -deg)
        if self.kind == "gripper":
            op = need("gripper")
            if op == "width":
                return MotionCommand("gripper_width", width=float(need("width_mm")) / 1000.0)
            return MotionCommand("gripper_open" if op == "open" else "gripper_close")
        if self.kind == "wait":
            return MotionCommand("wait", duration=float(need("seconds")))
        return MotionCommand("home")

    def describe(self) -> str:
        if self.kind == "move":
            return f"move {self.direction} {self.mm:g} mm"
        if self.kind == "rotate":
            return f"rotate {self.direction} about {self.axis} {self.degrees:g} deg"
        if self.kind == "gripper":
            return f"gripper {self.gripper}" + (f" {self.width_mm:g} mm"
                                                if self.gripper == "width" else "")
        if self.kind == "wait":
            return f"wait {self.seconds:g} s"
        return "home"


class ActionBatch(_Model):
    """The executor's answer: a short batch for the active subgoal and how it sees things."""

    assessment: str  # what it sees now
    done: bool  # the subgoal is achieved: nothing to run
    expect: str  # what the batch should bring about
    expect_holding: bool | None = None  # after the batch: should the hand hold the object
    confidence: float = Field(ge=0.0, le=1.0)
    actions: list[MotionAction] = Field(default_factory=list, max_length=MAX_BATCH)
    rule: str | None = None  # the offline rule that proposed it

    def commands(self) -> list[MotionCommand]:
        return [a.to_command(i) for i, a in enumerate(self.actions)]


class Alert(_Model):
    """What the monitor saw during an attempt."""

    level: Literal["info", "stop"]
    reason: str
    detail: str = ""
    rule: str | None = None


class AlertList(_Model):
    alerts: list[Alert] = Field(default_factory=list)


class Verdict(_Model):
    """An attempt's outcome: the subgoal is done, progressing, or the attempt failed."""

    outcome: Literal["done", "progress", "failed"]
    reason: str
    rule: str | None = None
    settled_by: Literal["measurement", "rule", "model"] = "rule"


class MemoryNote(_Model):
    """A condensed account of the episode so far, for planning."""

    note: str


class Revision(_Model):
    """A revised plan: the ids of the ORIGINAL subgoals still to do, in order."""

    remaining: list[str]
    reason: str = ""
    rule: str | None = None


class MotorSubgoal(_Model):
    """A subgoal with its success criterion (MotorMind's planner output)."""

    subgoal: Subgoal
    criterion: str  # what must hold when it is done (the oracle step, or the relation)


# ---------------------------------------------------------------------- role inputs


@dataclass
class Observation:
    """What the roles may know at one instant: perception and proprioception (world frame)."""

    t: float
    subgoal: Subgoal
    hand: np.ndarray  # hand centre, world frame (FK)
    opening_yaw: float  # rad: the direction the fingers open along (world)
    q7: float  # the wrist joint (a rotation must keep it inside its range)
    q7_range: tuple[float, float]
    width: float  # measured gripper width (m)
    width_cmd: float  # commanded width (m)
    holding: bool  # proprioception: closed on something after a commanded grasp
    object_det: Detection | None
    destination_det: Detection | None
    at_destination: bool | None  # the oracle's relation on the perceived boxes
    completed: set[str]  # subgoals the monitor reports complete
    travel_z: float  # carrying height (world z)
    table_z: float
    others: list[Detection] = field(default_factory=list)  # the other movable objects seen
    table_area: TableArea | None = None  # where empty space may be found
    monitored: bool = True  # a monitor reports completions (else perception judges)
    memory: str = ""  # the latest completed memory note
    frame: object | None = None  # the RGB-D frame the detections came from

    def criterion_holds(self) -> bool:
        """The monitor's completion when there is a monitor (the oracle's word); else the
        relation on the perceived boxes (a box around a microwave also holds what stands
        in front of it, so perception is the fallback, not the judge)."""
        if self.monitored:
            return self.subgoal.id in self.completed
        return bool(self.at_destination) and not self.holding

    def summary(self) -> dict[str, object]:
        """As data for a model's prompt and for the record."""
        def det(d: Detection | None) -> dict[str, object] | None:
            if d is None:
                return None
            return {"centroid": [round(float(v), 3) for v in d.centroid],
                    "size": [round(float(v), 3) for v in d.size],
                    "yaw_deg": round(math.degrees(d.yaw), 1)}
        return {"t": round(self.t, 3), "subgoal": self.subgoal.instruction,
                "hand": [round(float(v), 3) for v in self.hand],
                "opening_yaw_deg": round(math.degrees(self.opening_yaw), 1),
                "gripper_width_mm": round(self.width * 1000, 1),
                "gripper_commanded_mm": round(self.width_cmd * 1000, 1),
                "holding": self.holding, "object": det(self.object_det),
                "destination": det(self.destination_det),
                "object_at_destination": self.at_destination,
                "completed_subgoals": sorted(self.completed), "memory": self.memory}


@dataclass
class Measured:
    """What the controller measured over one attempt, per executed command."""

    executed: int
    total: int
    status: str  # succeeded | cancelled | rejected | failed
    message: str
    displacement_mm: list[float] = field(default_factory=list)  # hand travel per command
    widths_mm: list[float] = field(default_factory=list)  # gripper width after each command
    lost_grasp: bool = False  # held at the start, closed on nothing now (commanded closed)
    released: bool = False  # held at the start, the fingers opened without a command to


# ---------------------------------------------------------------------- protocols


class PlannerRole(Protocol):
    name: str

    def plan(self, plan: Plan) -> list[MotorSubgoal]: ...

    def revise(self, plan: Plan, unfinished: list[str], failed: str, why: str,
               memory: str) -> Revision: ...


class ExecutorRole(Protocol):
    name: str

    def propose(self, obs: Observation, feedback: str | None) -> ActionBatch: ...


class MonitorRole(Protocol):
    name: str

    def assess(self, obs: MonitorView) -> list[Alert]: ...


class VerifierRole(Protocol):
    name: str

    def verify(self, obs: Observation, batch: ActionBatch, measured: Measured,
               alerts: list[Alert]) -> Verdict: ...


class MemoryRole(Protocol):
    name: str

    def condense(self, previous: str, evidence: dict[str, object]) -> MemoryNote: ...


@dataclass(frozen=True)
class MonitorView:
    """The monitor's short context: one sample of the world during the attempt."""

    t: float
    attempt: int
    subgoal: str
    signals: tuple[tuple[str, str, str], ...]  # (kind, reason, detail) from the oracle monitor
    width: float
    width_cmd: float
    expect_holding: bool | None
    hand_z: float
    table_z: float


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


def _nearest_turn(delta: float) -> float:
    """The grip is symmetric every half turn: the smallest equivalent turn (rad)."""
    return (delta + math.pi / 2) % math.pi - math.pi / 2


@dataclass
class OfflineExecutor:
    """Named rules from perception and proprioception for a pick-and-place subgoal:
    open first, rise to travel height, go over the object, align the fingers across its narrow
    side, descend-close-lift; then carry over the destination, lower, open, rise."""

    name: str = "offline"
    xy_tol: float = 0.006  # m: close enough over a target
    yaw_tol: float = math.radians(4.0)
    z_tol: float = 0.008
    # the release point chosen when a carry starts, kept while carrying: the held object
    # hides part of the destination from the camera and would shift its perceived box
    _release: dict[str, PlaceTarget] = field(default_factory=dict)
    _grip: dict[str, tuple[float, np.ndarray]] = field(default_factory=dict)

    def propose(self, obs: Observation, feedback: str | None) -> ActionBatch:
        sg = obs.subgoal
        if not obs.holding:
            self._release.pop(sg.id, None)
        else:
            self._grip.pop(sg.id, None)
        if obs.criterion_holds():
            return _batch("the subgoal's criterion holds", True, "nothing", [], None,
                          "executor.criterion_holds", 0.95)
        if not sg.destination_phrase:
            return _batch(f"no motion rule for '{sg.instruction}'", False, "nothing", [], None,
                          "executor.no_rule", 0.0)
        if obs.object_det is None:
            return _batch(f"'{sg.object_phrase}' is not seen", False, "nothing", [], None,
                          "executor.not_seen", 0.0)
        if obs.holding:
            return self._carry(obs)
        return self._pick(obs)

    # -- picking
    def _pick(self, obs: Observation) -> ActionBatch:
        det = obs.object_det
        assert det is not None
        try:
            g = plan_grasp(det)
        except ValueError as exc:
            return _batch(str(exc), False, "nothing", [], None, "executor.ungraspable", 0.0)
        hand = obs.hand
        acts: list[MotionAction] = []
        if obs.width_cmd < g.width - 0.002 or obs.width < g.width - 0.01:
            return _batch("the hand is closed and holds nothing", False, "the hand open",
                          [_grip("open")], False, "executor.open_first", 0.9)
        dxy = g.grasp[:2] - hand[:2]
        over = float(np.hypot(*dxy)) <= self.xy_tol
        if not over:
            if abs(hand[2] - obs.travel_z) > 0.03:  # cross at the travel height
                acts.append(_move("up" if hand[2] < obs.travel_z else "down",
                                  abs(obs.travel_z - hand[2])))
            acts += _planar(dxy)
            return _batch(f"the {obs.subgoal.object_phrase} is {np.hypot(*dxy) * 100:.1f} cm "
                          "away in the plane", False, "the hand over the object", acts, False,
                          "executor.go_over_object", 0.8)
        # the finger direction chosen over the object is kept while it stays put: the hand
        # itself hides part of it from the camera, and a near-square box's yaw flips
        yaw, at = self._grip.get(obs.subgoal.id, (g.opening_yaw, g.grasp[:2]))
        if float(np.hypot(*(at - g.grasp[:2]))) > 0.02:
            yaw, at = g.opening_yaw, g.grasp[:2]
        self._grip[obs.subgoal.id] = (yaw, at)
        turn = _nearest_turn(yaw - obs.opening_yaw)
        if abs(turn) > self.yaw_tol:
            lo, hi = obs.q7_range
            # the wrist turns against the hand's yaw (the hand points down): keep it in range
            if not lo + 0.2 < obs.q7 - turn < hi - 0.2:
                turn = turn - math.copysign(math.pi, turn)
            return _batch(f"the fingers are {math.degrees(turn):.0f} deg off the narrow side",
                          False, "the fingers across the object", [_turn(turn)], False,
                          "executor.align_fingers", 0.8)
        down = hand[2] - float(g.grasp[2])
        if down > self.z_tol:
            acts.append(_move("down", down))
        acts += [_grip("close"), _move("up", max(obs.travel_z - float(g.grasp[2]), 0.05))]
        return _batch("over the object with the fingers across it", False,
                      f"the {obs.subgoal.object_phrase} held, lifted", acts, True,
                      "executor.descend_close_lift", 0.75)

    # -- carrying
    def _carry(self, obs: Observation) -> ActionBatch:
        sg = obs.subgoal
        dest = obs.destination_det
        if dest is None:
            return _batch(f"the destination '{sg.destination_phrase}' is not seen", False,
                          "nothing", [], True, "executor.destination_not_seen", 0.0)
        try:
            req = parse_destination(sg.destination_phrase or "")
        except ValueError as exc:
            return _batch(str(exc), False, "nothing", [], True, "executor.no_rule", 0.0)
        target = self._release.get(sg.id) or _place_target(req, dest, obs)
        if target is not None:
            self._release[sg.id] = target
        if target is None:
            return _batch(f"no motion rule for placing '{req.text}'", False, "nothing", [],
                          True, "executor.no_rule", 0.0)
        det = obs.object_det
        assert det is not None
        # the hand keeps its height above the held object's bottom
        above_bottom = obs.hand[2] - (det.centroid[2] - det.size[2] / 2)
        release = target.release_hand(float(above_bottom))
        hand = obs.hand
        dxy = release[:2] - hand[:2]
        if float(np.hypot(*dxy)) > self.xy_tol:
            acts = []
            carry = max(obs.travel_z, float(release[2]) + 0.1)
            if hand[2] < carry - 0.03:
                acts.append(_move("up", carry - hand[2]))
            acts += _planar(dxy)
            return _batch(f"holding it {np.hypot(*dxy) * 100:.1f} cm from the release point",
                          False, "the object over the destination", acts, True,
                          "executor.carry_over_destination", 0.8)
        acts = []
        down = hand[2] - float(release[2])
        if down > self.z_tol:
            acts.append(_move("down", down))
        acts += [_grip("width", min(GRIPPER_OPEN, obs.width + 0.025)),
                 _move("up", max(obs.travel_z - float(release[2]), 0.05))]
        return _batch("over the release point", False, f"the object {req.text}", acts, False,
                      "executor.lower_release_rise", 0.75)


def _place_target(req: PlaceRequest, dest: Detection, obs: Observation):  # type: ignore[no-untyped-def]
    if req.kind == "in":
        return _free_spot(container_target(dest), dest, obs)
    if req.kind == "on":
        return surface_target(dest, obs.frame)  # type: ignore[arg-type]
    if obs.table_area is None or obs.object_det is None:
        return None
    # executor.empty_space: the free table cell nearest the anchor, on its side
    major, minor = footprint_extents(obs.object_det)
    try:
        return empty_space_target(obs.table_area, [*obs.others, dest],
                                  math.hypot(major, minor) / 2, dest, req.side)
    except (LookupError, ValueError):
        return None


def _free_spot(target: PlaceTarget, dest: Detection, obs: Observation) -> PlaceTarget:
    """executor.free_spot_in_container: with something already in the container, release
    along its long side, at the end farthest from what is there (not onto it)."""
    cx, cy = float(dest.centroid[0]), float(dest.centroid[1])
    half = [dest.size[0] / 2, dest.size[1] / 2]
    inside = [d for d in obs.others
              if abs(d.centroid[0] - cx) < half[0] and abs(d.centroid[1] - cy) < half[1]]
    if not inside or obs.object_det is None:
        return target
    major, _minor = footprint_extents(dest)
    held = max(obs.object_det.size[0], obs.object_det.size[1]) / 2
    reach = max(major / 2 - held - 0.015, 0.0)
    axis = np.array([math.cos(dest.yaw), math.sin(dest.yaw)])
    ends = [np.array([cx, cy]) + k * reach * axis for k in (1.0, -1.0)]
    best = max(ends, key=lambda e: min(float(np.hypot(*(e - np.asarray(d.centroid[:2]))))
                                       for d in inside))
    return PlaceTarget(best, target.support_z, target.entity_id)


def _batch(assessment: str, done: bool, expect: str, acts: list[MotionAction],
           holding: bool | None, rule: str, confidence: float) -> ActionBatch:
    return ActionBatch(assessment=assessment, done=done, expect=expect, expect_holding=holding,
                       confidence=confidence, actions=acts, rule=rule)


def _move(direction: str, metres: float) -> MotionAction:
    return MotionAction(kind="move", direction=direction, mm=round(metres * 1000.0, 1))  # type: ignore[arg-type]


def _planar(dxy: np.ndarray) -> list[MotionAction]:
    """A planar offset as base-frame moves (the base is not rotated in the sim's scenes)."""
    out = []
    if abs(dxy[0]) > 0.0015:
        out.append(_move("forward" if dxy[0] > 0 else "backward", abs(float(dxy[0]))))
    if abs(dxy[1]) > 0.0015:
        out.append(_move("left" if dxy[1] > 0 else "right", abs(float(dxy[1]))))
    return out


def _turn(rad: float) -> MotionAction:
    return MotionAction(kind="rotate", axis="z", direction="ccw" if rad > 0 else "cw",
                        degrees=round(abs(math.degrees(rad)), 2))


def _grip(op: str, width: float | None = None) -> MotionAction:
    return MotionAction(kind="gripper", gripper=op,  # type: ignore[arg-type]
                        width_mm=None if width is None else round(width * 1000.0, 1))


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
    measured.released = held_before and closed and after.width > GRIPPER_OPEN - 0.01


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
