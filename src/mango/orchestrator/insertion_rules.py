"""The executor's offline rules for a horizontal insertion (into a microwave: its top is
closed): a side grasp along the insertion's axis, the carry to the opening and the slide in,
and turning the hand back down afterwards — with the mid-level vocabulary only.

The grasp is `primitives.planning`'s side grasp (`grasp_options` with the fixture the place
inserts into) and the release its `fixture_release`; the hand is tilted level about a base
axis (a tilt about another horizontal axis is a turn about z, the tilt about x, and the turn
back), its centre staying put.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mango.orchestrator.motor_schemas import (
    ActionBatch,
    MotionAction,
    Observation,
    batch,
    grip,
    move,
    planar,
    turn,
    wrist_turn,
)
from mango.primitives.grasps import GraspPlan
from mango.primitives.planning import PlaceTarget

TILT_ABOVE = 0.09  # m above the pre-grasp point the hand tilts level (then comes down)
INSERT_LEAD = 0.15  # m before the release point a slide in starts
BACK_OUT = 0.16  # m the hand backs out along the axis after letting go
PAD_CLEAR = 0.02  # m the open pads rise past the released object's top before backing out
ALONG = 0.95  # cos: the hand points along an axis


def tilt(from_dir: np.ndarray, to_dir: np.ndarray) -> list[MotionAction]:
    """Turns that take the hand's pointing from one direction to another, perpendicular one
    (about their common normal: a base axis, or a turn about z around a tilt about x)."""
    u = np.cross(from_dir, to_dir)
    n = float(np.linalg.norm(u))
    if n < 1e-6:
        return []
    u /= n
    deg = round(math.degrees(math.atan2(n, float(np.dot(from_dir, to_dir)))), 2)
    for axis, k in (("x", 0), ("y", 1), ("z", 2)):
        if abs(u[k]) > 0.999:
            sense = "ccw" if u[k] > 0 else "cw"
            return [MotionAction(kind="rotate", axis=axis, direction=sense, degrees=deg)]  # type: ignore[arg-type]
    phi = math.atan2(u[1], u[0])  # u horizontal: it is x turned by phi about z
    return [turn(-phi), MotionAction(kind="rotate", axis="x", direction="ccw", degrees=deg),
            turn(phi)]


def _along(v: np.ndarray, metres: float) -> list[MotionAction]:
    """A move along a horizontal direction (as base-frame moves)."""
    return planar(np.asarray(v[:2], float) * metres)


@dataclass
class InsertionRules:
    """executor.go_before_object / align_fingers / tilt_hand_level / slide_close_lift (the
    side grasp; executor.side_approach_blocked after `max_tilts` tilts that never ended
    behind the object), executor.carry_before_opening / slide_in_release (the insertion),
    executor.hand_down (level again, nothing held)."""

    xy_tol: float = 0.006
    yaw_tol: float = math.radians(4.0)
    line_tol: float = 0.012  # m off the approach line (sideways) that still slides along it
    rise_tol: float = 0.03  # m above it (the tilt's descent stopped short) that still does
    max_tilts: int = 3  # tilts level for one subgoal without a grasp: the approach is blocked
    _tilts: dict[str, int] = field(default_factory=dict)

    def pick(self, obs: Observation, g: GraspPlan) -> ActionBatch:
        """A side grasp along `g.direction`."""
        assert g.direction is not None
        d = np.array([g.direction[0], g.direction[1], 0.0])
        hand, name = obs.hand, obs.subgoal.object_phrase
        if not obs.hand_down:
            if float(np.dot(obs.pointing, d)) > ALONG and self._on_line(hand, g.pre_grasp, d):
                self._tilts.pop(obs.subgoal.id, None)
                reach = float(np.dot(g.grasp - hand, d))
                acts = _along(d, reach) if reach > 0.002 else []
                acts += [grip("close"), move("up", 0.05)]
                return batch(f"level behind the {name}, {reach * 100:.1f} cm from it", False,
                             f"the {name} held from the side, lifted", acts, True,
                             "executor.slide_close_lift", 0.75)
            return self.hand_down(obs)
        if obs.width_cmd < g.width - 0.002 or obs.width < g.width - 0.01:
            return batch("the hand is closed and holds nothing", False, "the hand open",
                         [grip("open")], False, "executor.open_first", 0.9)
        above = g.pre_grasp + np.array([0.0, 0.0, TILT_ABOVE])
        dxy = above[:2] - hand[:2]
        if float(np.hypot(*dxy)) > self.xy_tol:
            acts = []
            if abs(hand[2] - obs.travel_z) > 0.03:
                acts.append(move("up" if hand[2] < obs.travel_z else "down",
                                 abs(obs.travel_z - hand[2])))
            return batch(f"a side grasp of the {name} along {np.round(d[:2], 2).tolist()}: "
                         f"{np.hypot(*dxy) * 100:.1f} cm from its approach", False,
                         "the hand over the side grasp's approach", acts + planar(dxy), False,
                         "executor.go_before_object", 0.8)
        # the fingers open along (down x d): level, the hand's x axis then points up
        u = -np.cross(np.array([0.0, 0.0, -1.0]), d)
        dyaw = wrist_turn(obs, math.atan2(u[1], u[0]) - obs.opening_yaw, 2 * math.pi)
        if abs(dyaw) > self.yaw_tol:
            return batch(f"the fingers are {math.degrees(dyaw):.0f} deg off the grasp's "
                         "opening", False, "the fingers level across the approach",
                         [turn(dyaw)], False, "executor.align_fingers", 0.8)
        tilts = self._tilts.get(obs.subgoal.id, 0)
        if tilts >= self.max_tilts:
            self._tilts.pop(obs.subgoal.id)
            return batch(f"tilted level {tilts} times without coming down behind the {name}: "
                         "the side approach is blocked", False, "nothing", [], False,
                         "executor.side_approach_blocked", 0.0)
        self._tilts[obs.subgoal.id] = tilts + 1
        acts = []
        if hand[2] - above[2] > 0.005:
            acts.append(move("down", hand[2] - above[2]))
        acts += tilt(obs.pointing, d)
        acts.append(move("down", TILT_ABOVE))
        return batch(f"over the approach to the {name}", False,
                     "the hand level, pointing at the object", acts, False,
                     "executor.tilt_hand_level", 0.75)

    def insert(self, obs: Observation, target: PlaceTarget, above_bottom: float,
               height: float, text: str) -> ActionBatch:
        """Carry the object held from the side (the hand `above_bottom` over its bottom, it
        `height` tall) level to the opening, slide it in, let go, lift the open fingers over
        its top (a handle between them would drag it out), back out."""
        assert target.insert is not None
        d = np.array([target.insert[0], target.insert[1], 0.0])
        d /= float(np.linalg.norm(d))
        hand = obs.hand
        if float(np.dot(obs.pointing, d)) <= ALONG:
            return batch(f"placing {text} is a horizontal insertion, and the object is not "
                         "held from the side along it", False, "nothing", [], True,
                         "executor.no_rule", 0.0)
        release = target.release_hand(above_bottom)
        # slid in just above where it is let go: through the opening, under its top
        lift = float(release[2]) + 0.005
        pre = np.array([release[0], release[1], lift]) - INSERT_LEAD * d
        dxy = pre[:2] - hand[:2]
        if float(np.hypot(*dxy)) > self.xy_tol or abs(hand[2] - lift) > 0.01:
            dz = lift - float(hand[2])
            acts = [move("up" if dz > 0 else "down", abs(dz))] if abs(dz) > 0.003 else []
            return batch(f"holding it {np.hypot(*dxy) * 100:.1f} cm from the opening", False,
                         "the object level before the opening", acts + planar(dxy), True,
                         "executor.carry_before_opening", 0.8)
        clear = max(height - above_bottom, 0.0) + PAD_CLEAR
        acts = _along(d, INSERT_LEAD)
        if lift - release[2] > 0.003:
            acts.append(move("down", lift - float(release[2])))
        acts += [grip("width", min(0.08, obs.width + 0.02)), move("up", clear),
                 *_along(-d, BACK_OUT), move("up", max(0.08 - clear, 0.02))]
        return batch("before the opening, the object level", False, f"the object {text}",
                     acts, False, "executor.slide_in_release", 0.75)

    def hand_down(self, obs: Observation) -> ActionBatch:
        """The hand level (after an insertion, or a side grasp abandoned): up, then down."""
        acts = [move("up", 0.08)] if obs.hand[2] < obs.travel_z - 0.05 else []
        acts += tilt(obs.pointing, np.array([0.0, 0.0, -1.0]))
        return batch("the hand points sideways and holds nothing", False,
                     "the hand pointing down", acts, False, "executor.hand_down", 0.8)

    def _on_line(self, hand: np.ndarray, pre: np.ndarray, d: np.ndarray) -> bool:
        """The hand on the approach line through `pre` along d: sideways within `line_tol`,
        at its height or up to `rise_tol` above (the pads still on the object's side)."""
        off = hand - pre
        along = float(np.dot(off, d))
        side = off[:2] - along * d[:2]
        return float(np.linalg.norm(side)) <= self.line_tol and \
            -self.line_tol <= float(off[2]) <= self.rise_tol and -0.03 <= along <= 0.15
