"""MotorMind's mode `motor`: what the roles read and answer (validated models), their
protocols, and the action builders the offline rules write their batches with.

Every answer is a validated model; a model's answer is validated against the same schema as
the rules' own. Nothing here moves the arm: the controller (`motor_control`) does.
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
from mango.primitives.planning import KnownFixture, TableArea
from mango.sim.parts import part_name
from mango.sim.scene import EntitySpec

MAX_BATCH = 6  # actions one proposal may hold: a short batch, then a fresh look
# m: fingers commanded closed that stay this near the full opening hold nothing (they were
# held open); a mug taken across its handle closes to 4 mm short of it and is held
OPEN_MARGIN = 0.0025
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

FixtureAction = Literal["close", "open", "turn_on"]


@dataclass(frozen=True)
class FixtureView:
    """The articulated fixture a subgoal acts on, as measured: its scene entry (which the
    parts' kinematics, `sim.parts`, read), its frame in the world and its joint value — what
    a real robot's world-state estimator gives from markers — and its box as perceived."""

    spec: EntitySpec
    position: np.ndarray  # the fixture frame's origin (world)
    rotation: np.ndarray  # 3x3: the fixture frame's axes (world)
    q: float  # the measured joint value
    action: FixtureAction  # what the subgoal does to it (the plan's step)
    det: Detection | None = None

    @property
    def part(self) -> str:
        """drawer | door | knob."""
        return part_name(self.spec)

    @property
    def openness(self) -> float:
        """0 closed, 1 at LIBERO's open value (a door or drawer can go past it)."""
        j = self.spec.joint
        assert j is not None
        return (self.q - j.q_closed) / (j.q_open - j.q_closed)

    def done(self) -> bool:
        """The action's effect on the measured joint (the expert's own check)."""
        if self.action == "turn_on":
            return self.spec.device is not None and self.spec.device.is_on(self.q)
        return self.openness <= 0.05 if self.action == "close" else self.openness >= 1.0

    def summary(self) -> dict[str, object]:
        j = self.spec.joint
        assert j is not None
        out: dict[str, object] = {
            "id": self.spec.id, "part": self.part, "action": self.action,
            "joint_value": round(self.q, 3), "closed_value": j.q_closed,
            "open_value": j.q_open, "openness": round(self.openness, 3),
            "position": [round(float(v), 3) for v in self.position],
            "yaw_deg": round(math.degrees(math.atan2(self.rotation[1, 0],
                                                     self.rotation[0, 0])), 1)}
        if self.spec.device is not None:
            out["on_threshold"] = self.spec.device.on_threshold
        return out


@dataclass(frozen=True)
class RegionView:
    """The region a subgoal's criterion names (`in`/`on` it), where the measured world state
    has it: the box the placed object's centre must end in."""

    id: str
    centre: np.ndarray  # world (3,)
    size: tuple[float, float, float]
    yaw: float  # rad

    def summary(self) -> dict[str, object]:
        return {"id": self.id, "centre": [round(float(v), 3) for v in self.centre],
                "size": [round(float(v), 3) for v in self.size],
                "yaw_deg": round(math.degrees(self.yaw), 1)}


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
    fixture: FixtureView | None = None  # what a close / turn-on subgoal acts on
    region: RegionView | None = None  # the region the subgoal's criterion names
    into: KnownFixture | None = None  # the destination, when it is a drawer or a microwave
    # where the hand points (its approach axis, world): straight down but for a side grasp
    pointing: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -1.0]))
    # the camera image a model compares NOW (`frame`'s) with: the subgoal's start for the
    # executor, the batch's start for the verifier (set by the loop)
    rgb_before: np.ndarray | None = None

    @property
    def rgb_now(self) -> np.ndarray | None:
        rgb = getattr(self.frame, "rgb", None)
        return rgb if isinstance(rgb, np.ndarray) else None

    @property
    def hand_down(self) -> bool:
        return float(self.pointing[2]) < -0.95

    def criterion_holds(self) -> bool:
        """The monitor's completion when there is a monitor (the oracle's word); else the
        fixture's measured joint, or the relation on the perceived boxes (a box around a
        microwave also holds what stands in front of it, so perception is the fallback, not
        the judge)."""
        if self.monitored:
            return self.subgoal.id in self.completed
        if self.fixture is not None:
            return self.fixture.done()
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
                "hand_points": [round(float(v), 3) for v in self.pointing],
                "gripper_width_mm": round(self.width * 1000, 1),
                "gripper_commanded_mm": round(self.width_cmd * 1000, 1),
                "holding": self.holding, "object": det(self.object_det),
                "destination": det(self.destination_det),
                "object_at_destination": self.at_destination,
                "fixture": self.fixture.summary() if self.fixture else None,
                "region": self.region.summary() if self.region else None,
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
    # for a monitor that looks (`wants_images`): the camera now, at most at the images' rate,
    # and at the attempt's start
    rgb_now: np.ndarray | None = None
    rgb_before: np.ndarray | None = None


# ---------------------------------------------------------------------- action builders


def batch(assessment: str, done: bool, expect: str, acts: list[MotionAction],
          holding: bool | None, rule: str, confidence: float) -> ActionBatch:
    return ActionBatch(assessment=assessment, done=done, expect=expect, expect_holding=holding,
                       confidence=confidence, actions=acts, rule=rule)


def move(direction: str, metres: float) -> MotionAction:
    return MotionAction(kind="move", direction=direction, mm=round(metres * 1000.0, 1))  # type: ignore[arg-type]


def planar(dxy: np.ndarray) -> list[MotionAction]:
    """A planar offset as base-frame moves (the base is not rotated in the sim's scenes)."""
    out = []
    if abs(dxy[0]) > 0.0015:
        out.append(move("forward" if dxy[0] > 0 else "backward", abs(float(dxy[0]))))
    if abs(dxy[1]) > 0.0015:
        out.append(move("left" if dxy[1] > 0 else "right", abs(float(dxy[1]))))
    return out


def turn(rad: float) -> MotionAction:
    """A turn of the hand about the vertical through its centre (ccw: positive)."""
    return MotionAction(kind="rotate", axis="z", direction="ccw" if rad > 0 else "cw",
                        degrees=round(abs(math.degrees(rad)), 2))


def grip(op: str, width: float | None = None) -> MotionAction:
    return MotionAction(kind="gripper", gripper=op,  # type: ignore[arg-type]
                        width_mm=None if width is None else round(width * 1000.0, 1))


WRIST_MARGIN = 0.25  # rad the wrist joint keeps inside its range after a turn


def nearest_turn(delta: float, period: float = math.pi) -> float:
    """The smallest turn equivalent to `delta` for a grip symmetric every `period`."""
    return (delta + period / 2) % period - period / 2


def wrist_turn(obs: Observation, delta: float, period: float = math.pi) -> float:
    """A turn of the hand by `delta` (mod `period`) that keeps the wrist inside its range:
    the wrist turns against the hand's yaw (the hand points down)."""
    lo, hi = obs.q7_range
    turn_by = nearest_turn(delta, period)
    for k in (0, 1, -1, 2, -2):
        cand = turn_by + k * period
        if lo + WRIST_MARGIN < obs.q7 - cand < hi - WRIST_MARGIN:
            return cand
    return turn_by
