"""The executor's offline rules for a subgoal that acts on a fixture: close a drawer, close a
hinged door, turn a stove's knob on — with the mid-level vocabulary only (moves along the
base axes, turns about z, the gripper), each batch from what is measured now.

Where the hand meets the part is the expert's knowledge (`sim.expert.fixtures`: the push line
in front of a drawer's face, the contact beside a door's outer face, the grip on a knob and
the turn past its on threshold), a pure function of the fixture's pose and joint value; the
rules read both from the observation (the measured world state), so every batch starts from
where the part is now: a drawer pushed short is pushed again from where its face stopped, a
door is swept in short arcs from the angle it was measured at, a knob turned short is turned
again by what is still missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mango.orchestrator.motor_schemas import (
    WRIST_MARGIN,
    ActionBatch,
    FixtureView,
    MotionAction,
    Observation,
    batch,
    grip,
    move,
    nearest_turn,
    planar,
    turn,
    wrist_turn,
)
from mango.sim.expert.fixtures import (
    DOOR_CLEAR,
    DOOR_CLEAR_START,
    DOOR_PAST,
    DOOR_STEP,
    door_contact,
    door_yaw,
    drawer_push,
    knob_grip,
    knob_turn,
)

ABOVE = 0.1  # m above a contact point the hand comes down from


@dataclass
class FixtureRules:
    """executor.go_before_drawer / push_drawer_closed, go_outside_door / sweep_door_closed,
    go_over_knob / grip_turn_knob; executor.part_stuck when contact batches in a row left the
    part where it was (a drawer pushed again goes a little further past closed each time)."""

    xy_tol: float = 0.006  # m: close enough over a point
    yaw_tol: float = math.radians(4.0)
    z_tol: float = 0.008
    door_reach: float = 0.06  # m: the hand this near the door's contact point sweeps on
    overpush: float = 0.01  # m past closed per push that left the drawer where it was
    stuck_after: int = 2  # contact batches in a row that found the part where it was
    # per fixture: the joint value at the last contact batch, and how many in a row left it
    _contact: dict[str, tuple[float, int]] = field(default_factory=dict)

    def propose(self, obs: Observation, fx: FixtureView) -> ActionBatch:
        _q, still = self._contact.get(fx.spec.id, (fx.q, 0))
        if still >= self.stuck_after:
            self._contact.pop(fx.spec.id)
            return batch(f"the {fx.part} of the {fx.spec.description or fx.spec.id} did not "
                         f"move in {still} tries (joint at {fx.q:.3f})", False, "nothing", [],
                         None, "executor.part_stuck", 0.0)
        if fx.action == "close" and fx.part == "drawer":
            return self._drawer(obs, fx)
        if fx.action == "close" and fx.part == "door":
            return self._door(obs, fx)
        if fx.action == "turn_on" and fx.part == "knob":
            return self._knob(obs, fx)
        return batch(f"no motion rule to {fx.action.replace('_', ' ')} a {fx.part}", False,
                     "nothing", [], None, "executor.no_rule", 0.0)

    def _touch(self, fx: FixtureView, moved: float) -> int:
        """A contact batch is proposed: how many before it left the part where it was (its
        joint moved less than `moved`)."""
        last = self._contact.get(fx.spec.id)
        still = last[1] + 1 if last is not None and abs(fx.q - last[0]) < moved else 0
        self._contact[fx.spec.id] = (fx.q, still)
        return still

    # -- shared: over a point at a yaw, coming from the travel height
    def _go_over(self, obs: Observation, xy: np.ndarray, acts: list[MotionAction]
                 ) -> list[MotionAction]:
        hand = obs.hand
        if abs(hand[2] - obs.travel_z) > 0.03:  # cross at the travel height
            acts.append(move("up" if hand[2] < obs.travel_z else "down",
                             abs(obs.travel_z - hand[2])))
        return acts + planar(xy - hand[:2])

    # -- a drawer: in front of its face at its height, pushed along its closing axis
    def _drawer(self, obs: Observation, fx: FixtureView) -> ActionBatch:
        start, end, yaw = drawer_push(fx.spec, fx.position, fx.rotation, fx.q)
        hand = obs.hand
        left = float(np.linalg.norm(end - start))
        name = fx.spec.description or fx.spec.id
        closed = obs.width_cmd < 0.01
        if float(np.hypot(*(start[:2] - hand[:2]))) > self.xy_tol or not closed:
            acts = [] if closed else [grip("close")]
            acts = self._go_over(obs, start[:2], acts)
            return batch(f"the drawer of the {name} is open {left * 100:.1f} cm; the hand is "
                         f"{np.hypot(*(start[:2] - hand[:2])) * 100:.1f} cm from its front",
                         False, "the closed hand above the front of the drawer", acts, False,
                         "executor.go_before_drawer", 0.8)
        dyaw = wrist_turn(obs, yaw - obs.opening_yaw)
        if abs(dyaw) > self.yaw_tol:
            return batch(f"the fingers are {math.degrees(dyaw):.0f} deg off across the push",
                         False, "the fingers across the push", [turn(dyaw)], False,
                         "executor.go_before_drawer", 0.8)
        acts = []
        if hand[2] - start[2] > self.z_tol:
            acts.append(move("down", hand[2] - start[2]))
        push = end - start
        # a push that left the drawer where it was: the next goes a little past closed
        axis = push[:2] / max(float(np.linalg.norm(push[:2])), 1e-9)
        push[:2] += self._touch(fx, 0.002) * self.overpush * axis
        acts += planar(push[:2])
        back = -0.05 * push[:2] / max(float(np.linalg.norm(push[:2])), 1e-9)
        acts += planar(back)
        acts.append(move("up", max(obs.travel_z - float(start[2]), 0.05)))
        return batch(f"in front of the drawer of the {name}, {left * 100:.1f} cm to push",
                     False, f"the drawer of the {name} closed", acts, False,
                     "executor.push_drawer_closed", 0.75)

    # -- a hinged door: the hand's side against its outer face, swept in short arcs
    def _door(self, obs: Observation, fx: FixtureView) -> ActionBatch:
        spec, pos, rot, q = fx.spec, fx.position, fx.rotation, fx.q
        hand = obs.hand
        name = spec.description or spec.id
        at = door_contact(spec, pos, rot, q, DOOR_CLEAR)
        near = float(np.hypot(*(at[:2] - hand[:2]))) <= self.door_reach and \
            abs(hand[2] - at[2]) <= 0.02
        closed = obs.width_cmd < 0.01
        if not near or not closed:
            start = door_contact(spec, pos, rot, q, DOOR_CLEAR_START)
            if float(np.hypot(*(start[:2] - hand[:2]))) > self.xy_tol or not closed:
                acts = self._go_over(obs, start[:2], [] if closed else [grip("close")])
                return batch(f"the door of the {name} is open {math.degrees(abs(q)):.0f} deg; "
                             "the hand is away from its outer face", False,
                             "the closed hand above the door's outer face", acts, False,
                             "executor.go_outside_door", 0.8)
            dyaw = wrist_turn(obs, door_yaw(rot, q) - obs.opening_yaw)
            acts = [turn(dyaw)] if abs(dyaw) > self.yaw_tol else []
            acts.append(move("down", max(hand[2] - float(start[2]), 0.0)))
            return batch(f"above the door's outer face, {math.degrees(abs(q)):.0f} deg open",
                         False, "the hand's side beside the door", acts, False,
                         "executor.go_outside_door", 0.8)
        # two short arcs from the angle the door is at now (it may lead or lag the hand)
        self._touch(fx, 0.01)
        acts: list[MotionAction] = []
        yaw, pos_h = obs.opening_yaw, hand[:2].copy()
        sense = math.copysign(1.0, DOOR_PAST - q)
        for k in (1, 2):
            qk = q + sense * k * DOOR_STEP
            qk = min(qk, DOOR_PAST) if sense > 0 else max(qk, DOOR_PAST)
            dyaw = wrist_turn(obs, door_yaw(rot, qk) - yaw) if k == 1 else \
                nearest_turn(door_yaw(rot, qk) - yaw)
            if abs(dyaw) > math.radians(1.0):
                acts.append(turn(dyaw))
                yaw += dyaw
            nxt = door_contact(spec, pos, rot, qk, DOOR_CLEAR)
            acts += planar(nxt[:2] - pos_h)
            pos_h = nxt[:2]
            if qk == DOOR_PAST:
                break
        return batch(f"the door of the {name} is {math.degrees(abs(q)):.0f} deg open; the "
                     "hand is at its outer face", False, "the door swung toward closed", acts,
                     False, "executor.sweep_door_closed", 0.75)

    # -- a knob: gripped from above and turned about z past its on threshold
    def _knob(self, obs: Observation, fx: FixtureView) -> ActionBatch:
        at = knob_grip(fx.spec, fx.position, fx.rotation)
        need = knob_turn(fx.spec, fx.rotation, fx.q)
        hand = obs.hand
        name = fx.spec.description or fx.spec.id
        opened = obs.width_cmd >= 0.07
        if float(np.hypot(*(at[:2] - hand[:2]))) > self.xy_tol or not opened:
            acts = self._go_over(obs, at[:2], [] if opened else [grip("open")])
            return batch(f"the knob of the {name} is {math.degrees(need):.0f} deg short of on; "
                         "the hand is away from it", False, "the open hand over the knob",
                         acts, False, "executor.go_over_knob", 0.8)
        lo, hi = obs.q7_range
        after = obs.q7 - need  # the wrist turns against the hand's yaw
        if not lo + WRIST_MARGIN < after < hi - WRIST_MARGIN:
            # a knob grips the same at any yaw: turn the open hand first so the wrist has room
            room = (lo + WRIST_MARGIN + 0.1) if after <= lo + WRIST_MARGIN else \
                (hi - WRIST_MARGIN - 0.1)
            return batch("the wrist has no room for the turn", False,
                         "the wrist turned back to leave room", [turn(after - room)], False,
                         "executor.go_over_knob", 0.8)
        self._touch(fx, 0.02)
        acts = []
        if hand[2] - at[2] > self.z_tol:
            acts.append(move("down", hand[2] - at[2]))
        acts += [grip("close"), turn(need), grip("open"), move("up", ABOVE + 0.02)]
        return batch(f"over the knob of the {name}, {math.degrees(need):.0f} deg to turn",
                     False, f"the {name} on", acts, False, "executor.grip_turn_knob", 0.75)
