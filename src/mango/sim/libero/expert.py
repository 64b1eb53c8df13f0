"""A scripted expert on LIBERO itself (the VLA stand-in): LIBERO's native 7-D OSC delta +
gripper actions at its 20 Hz (`hand`), planned from the task's BDDL goal atoms (`plan`) and the
simulator's object poses (`LiberoClient.facts()`), closed loop on what it measures each step.

The plan is the goal's atoms in order (an `Open` first, a `Close` after what is put into the
container): `On`/`In` → pick (`geometry.plan_grasp`; the grasp measured by robosuite's
finger-pad rule and retried a bounded number of times; drawn out from under an overhang before
it is lifted) and place (carried above whatever lies on the way, over the target, lowered until
it touches the target or its floor, released); a long body going onto a strip narrower than it
stands (the wine rack's shelf) is laid down along it (`geometry.lay_axis`); a body too flat
and wide to grasp (a plate) is pushed instead, from inside its rim where the hand cannot stand
beside it (`geometry.push_stand_off`); a drawer too little open for the body is pulled fully
open first; `Open` / `Close` of a drawer, `Close` of a door, `TurnOn` / `TurnOff` of the
stove → `fixtures`. A milestone is achieved when the measured state says so (the grasp; the
goal atom by our `libero_*` predicates).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

import numpy as np

from mango.oracle import StateView, compile_expression
from mango.sim.libero.agreement import libero_library, our_atom
from mango.sim.libero.client import LiberoTask
from mango.sim.libero.fixtures import drawer_drop, needs_full_opening, pull_open, work_joint
from mango.sim.libero.geometry import (
    box,
    lay_axis,
    overhang_escape,
    path_top,
    plan_grasp,
    plan_release,
    push_stand_off,
    too_flat_to_grasp,
)
from mango.sim.libero.hand import CLOSE, DOWN, HOLD, OPEN, Hand, orientation_error, servo
from mango.sim.libero.plan import Milestone, Skill, plan_goal
from mango.sim.libero.world import world_state

SETTLE_STEPS = 10  # LeRobot's / openpi's LIBERO harness: no-op steps while objects settle
MAX_GRASP_TRIES = 3
MAX_PUT_TRIES = 2
UP = np.array([0.0, 0.0, 1.0])
LAY_TILT = float(np.radians(35.0))  # a laid body's base this far below level, see _lay
CARRY_STEP = 0.03  # m per step of OSC goal ahead while carrying: faster shakes a rim grasp loose
def _up(p: np.ndarray, dz: float) -> np.ndarray:
    return np.asarray(p, dtype=float) + np.array([0.0, 0.0, dz])


class LiberoExpert:
    """Call `act(facts, t)` once per control step; `done` when the plan has run, `error` says
    what failed."""

    def __init__(self, task: LiberoTask, max_grasp_tries: int = MAX_GRASP_TRIES) -> None:
        self.task = task
        self.max_grasp_tries = max_grasp_tries
        self.milestones = plan_goal(task.goal)
        self.done = False
        self.error: str | None = None
        self._library = libero_library()
        self._facts: dict[str, Any] = {}
        self._t = 0.0
        self._table = 0.0
        self._gen = self._run()

    # -------------------------------------------------------------------------- driving

    def act(self, facts: dict[str, Any], t: float) -> list[float]:
        """The next 7-D action for the state `facts` at time `t`."""
        self.observe(facts, t)
        if not self.done:
            try:
                return next(self._gen)
            except StopIteration:
                self.done = True
        return [0.0] * 6 + [HOLD]

    def observe(self, facts: dict[str, Any], t: float) -> None:
        """The state `holds` and the skills read."""
        self._facts, self._t = facts, t

    @property
    def hand(self) -> Hand:
        return Hand.from_facts(self._facts)

    def holds(self, atom: tuple[str, ...]) -> bool:
        """A LIBERO atom on the current state, by our `libero_*` predicates."""
        state = world_state(self._facts, self.task.articulation, self._t)
        view = StateView(state, self._library.thresholds)
        return bool(compile_expression(our_atom(atom), self._library)(view))

    def grasped(self, name: str) -> bool:
        return bool(self._facts["grasped"].get(name))

    def _fail(self, m: Milestone, why: str) -> None:
        self.error = f"{m.kind} {m.subject}" + (f" -> {m.target}" if m.target else "") + f": {why}"

    # --------------------------------------------------------------------------- motions

    def _move(self, target: np.ndarray, gripper: float, closing: np.ndarray | None = None,
              tol: float = 0.01, max_steps: int | None = None, max_step: float = 0.05,
              pointing: np.ndarray | None = None) -> Skill:
        """Servo to `target`; True once within `tol` (and turned), False after `max_steps`
        (default: what the distance takes at the speed OSC reaches with a goal `max_step`
        ahead, about 6 x `max_step` per second, plus a second and a half)."""
        target = np.asarray(target, dtype=float)
        kw = {} if pointing is None else {"pointing": pointing}
        if max_steps is None:
            far = float(np.linalg.norm(target - self.hand.position))
            max_steps = int(far / (0.25 * max_step)) + 30
        for _ in range(max_steps):
            h = self.hand
            turn = orientation_error(h, closing, **kw)
            if np.linalg.norm(target - h.position) < tol and np.linalg.norm(turn) < 0.08:
                return True
            yield servo(h, target, gripper, closing, max_step=max_step, **kw)
        return False

    def _grip(self, gripper: float, steps: int = 10, closing: np.ndarray | None = None,
              pointing: np.ndarray | None = None) -> Skill:
        """Hold the hand where it is while the fingers open or close."""
        hold = self.hand.position.copy()
        kw = {} if pointing is None else {"pointing": pointing}
        for _ in range(steps):
            yield servo(self.hand, hold, gripper, closing, **kw)
        return True

    def _rise_to(self, z: float, gripper: float, max_step: float = 0.05) -> Skill:
        h = self.hand
        if h.position[2] >= z - 0.01:
            return True
        return (yield from self._move(np.array([*h.position[:2], z]), gripper, tol=0.015,
                                      max_step=max_step))

    # ---------------------------------------------------------------------------- plan

    def _run(self) -> Generator[list[float], None, None]:
        for _ in range(SETTLE_STEPS):
            yield [0.0] * 6 + [OPEN]
        movable = [o for o in self._facts["objects"].values() if not o["fixture"] and o["box"]]
        self._table = min((o["box"][0][2] for o in movable), default=0.0)
        ms = self.milestones
        i = 0
        while i < len(ms):
            m = ms[i]
            if m.kind == "pick":
                ok = yield from self._put(m, ms[i + 1])
                i += 2
            else:
                ok = yield from self._joint(m)
                i += 1
            if not ok:
                return
        yield from self._move(_up(self.hand.position, 0.05), OPEN, tol=0.02, max_steps=15)

    def _put(self, pick: Milestone, place: Milestone) -> Skill:
        """Pick and place, again from the pick when the body was dropped on the way."""
        atom = (place.relation or "on", place.subject, place.target or "")
        joint = needs_full_opening(self, place.target or "", place.subject)
        if joint is not None:
            yield from pull_open(self, joint)
        if too_flat_to_grasp(self._facts, pick.subject):
            pick.kind = "push"  # a plate: slid over the table, never lifted
            yield from self._push(pick, place)
            if self.holds(atom):
                place.achieved, place.t = True, self._t
                return True
            self._fail(place, "the goal atom does not hold after pushing")
            return False
        axis = lay_axis(self._facts, pick.subject, place.target or "")
        closing = None if axis is None else np.cross(UP, axis)
        for _ in range(MAX_PUT_TRIES):
            if not (yield from self._pick(pick, closing)):
                return False
            if axis is None:
                yield from self._place(place)
            else:
                yield from self._lay(place, axis)
            place.attempts += 1
            if self.holds(atom):
                place.achieved, place.t = True, self._t
                return True
        self._fail(place, "the goal atom does not hold after placing")
        return False

    def _pick(self, m: Milestone, closing: np.ndarray | None = None) -> Skill:
        """Take `m.subject` (`geometry.plan_grasp`), the fingers closing along `closing`
        instead of the grasp's own where given (a body to be turned about that axis)."""
        name = m.subject
        base_xy = np.asarray(self._facts["robot"]["base"][:2], dtype=float)
        for _ in range(self.max_grasp_tries):
            m.attempts += 1
            g = plan_grasp(self._facts, name, base_xy)
            if closing is not None:
                g = replace(g, closing=closing)
            top = float(box(self._facts, name)[1][2])
            yield from self._rise_to(max(top + 0.08, g.point[2] + 0.08), OPEN)
            yield from self._move(_up(g.point, 0.08), OPEN, g.closing, tol=0.01)
            yield from self._move(g.point, OPEN, g.closing, tol=0.006, max_step=0.02)
            yield from self._grip(CLOSE, 10, g.closing)
            escape = overhang_escape(self._facts, name)
            if escape is not None and self.grasped(name):  # drawn out from under first
                # dragged over the table the body lags the hand: near enough is out
                yield from self._move(self.hand.position + escape, CLOSE, g.closing,
                                      tol=0.015, max_step=CARRY_STEP,
                                      max_steps=int(np.linalg.norm(escape) / 0.003) + 8)
            yield from self._move(_up(self.hand.position, 0.06), CLOSE, g.closing,
                                  tol=0.01, max_steps=20, max_step=0.015)
            if self.grasped(name):
                m.achieved, m.t = True, self._t
                return True
            yield from self._grip(OPEN, 8)
        self._fail(m, f"no grasp after {self.max_grasp_tries} tries")
        return False

    def _push(self, push: Milestone, place: Milestone) -> Skill:
        """Slide a flat body over the table until its reference point is on the release
        point: the closed fingers behind it (`geometry.push_stand_off`), pushing along the
        line to the target, set again behind it when it has turned off that line."""
        name = push.subject
        r = plan_release(self._facts, name, place.target or "", self._table)
        atom = (place.relation or "on", name, place.target or "")
        lo, hi = box(self._facts, name)
        z = float(lo[2]) + 0.012
        push.attempts = place.attempts = 1
        for _ in range(4):  # set behind it, push; again when it slides off the line
            pos = np.asarray(self._facts["objects"][name]["position"], dtype=float)
            err = r.xy - pos[:2]
            if np.linalg.norm(err) < 0.005 or self.holds(atom):
                break
            d = np.array([*(err / np.linalg.norm(err)), 0.0])
            across = np.cross([0.0, 0.0, 1.0], d)
            behind = pos - d * push_stand_off(self._facts, name, r.xy)
            yield from self._rise_to(float(hi[2]) + 0.06, CLOSE)
            yield from self._move(np.array([*behind[:2], float(hi[2]) + 0.06]), CLOSE, across)
            yield from self._move(np.array([*behind[:2], z]), CLOSE, across, tol=0.008,
                                  max_step=0.02)
            push.achieved, push.t = True, self._t
            for _ in range(120):
                pos = np.asarray(self._facts["objects"][name]["position"], dtype=float)
                err = r.xy - pos[:2]
                if float(err @ d[:2]) < 0.002 or self.holds(atom):
                    break
                off = float((self.hand.position[:2] - pos[:2]) @ across[:2])
                if abs(off) > 0.03:
                    break
                target = self.hand.position + d * min(0.02, float(err @ d[:2]) + 0.002)
                target[2] = z
                yield servo(self.hand, target, CLOSE, across, max_step=0.02)
        yield from self._move(_up(self.hand.position, 0.06), OPEN, tol=0.02, max_steps=20)
        return True

    def _place(self, m: Milestone) -> Skill:
        name, target = m.subject, m.target or ""
        r = plan_release(self._facts, name, target, self._table)
        closing = None
        region = self._facts["regions"].get(target)
        if region is not None and region["joints"]:
            xy, closing = drawer_drop(self, target, name)
            r = replace(r, xy=xy)
        lo, hi = box(self._facts, name)
        below = self.hand.position[2] - lo[2]  # hand above the carried body's bottom
        pos = np.asarray(self._facts["objects"][name]["position"], dtype=float)
        radius = float(np.max(hi[:2] - lo[:2])) / 2.0
        over = path_top(self._facts, pos, np.array([*r.xy, 0.0]), radius, name) + 0.02
        carry = max(r.clear, float(lo[2]), over) + below
        yield from self._rise_to(carry, CLOSE, CARRY_STEP)
        # over the target: the carried body's reference point above the release point
        for _ in range(120):
            if not self.grasped(name):
                return False
            h = self.hand
            pos = np.asarray(self._facts["objects"][name]["position"], dtype=float)
            err = r.xy - pos[:2]
            if np.linalg.norm(err) < 0.006 and abs(h.position[2] - carry) < 0.02:
                break
            yield servo(h, np.array([*(h.position[:2] + err), carry]), CLOSE, closing,
                        max_step=CARRY_STEP)
        yield from self._lower(name, r.xy, r.touch, r.surface, closing)
        yield from self._grip(OPEN, 8)
        yield from self._move(_up(self.hand.position, 0.10), OPEN, tol=0.02, max_steps=25)
        return True

    def _lower(self, name: str, xy: np.ndarray, touch: frozenset[str], floor: float,
               closing: np.ndarray | None, pointing: np.ndarray = DOWN) -> Skill:
        """Lower the held body, its reference point kept over `xy`, until it touches one of
        `touch`, its bottom reaches `floor`, or the hand is held up by what is below."""
        last: list[float] = []
        for _ in range(120):
            h = self.hand
            lo = box(self._facts, name)[0]
            touching = any(name in pair and (set(pair) - {name}) & touch
                           for pair in map(tuple, self._facts["contacts"]))
            if touching or lo[2] <= floor + 0.004:
                break
            last.append(h.position[2])
            if len(last) > 10 and last[-8] - last[-1] < 0.002:  # held up by what is below
                break
            pos = np.asarray(self._facts["objects"][name]["position"], dtype=float)
            target = np.array([*(h.position[:2] + (xy - pos[:2])), h.position[2] - 0.01])
            yield servo(h, target, CLOSE, closing, max_step=0.01, pointing=pointing)
        return True

    def _lay(self, m: Milestone, axis: np.ndarray) -> Skill:
        """Lay the held body down along `axis` (`geometry.lay_axis`): lifted clear of what
        is on the way with it still hanging, the hand turned to point along `axis`, tilted
        `LAY_TILT` down (the body then lies along it, its reference point, LIBERO's body
        origin, ahead of the hand),
        carried until that point is over the region's centre shifted half the region's
        length along `axis`, lowered until it touches the region's parent, released; the hand
        backs out along the body."""
        name, target = m.subject, m.target or ""
        region = self._facts["regions"][target]
        centre = np.asarray(region["position"], dtype=float)
        reach = float(np.abs(np.asarray(region["half_extent"], dtype=float)) @ np.abs(axis))
        goal = centre[:2] + axis[:2] * reach / 2.0
        closing = np.cross(UP, axis)
        # the hand points down the axis at LAY_TILT below level: a Panda reaching forward
        # with its hand level cannot come down near its own shoulder's height
        tilt = axis * np.cos(LAY_TILT) - UP * np.sin(LAY_TILT)
        lo = box(self._facts, name)[0]
        pos = np.asarray(self._facts["objects"][name]["position"], dtype=float)
        hang = self.hand.position[2] - lo[2]
        # turned where it was taken, hanging clear of what is round it; then carried low
        yield from self._rise_to(path_top(self._facts, pos, pos, hang, name) + hang + 0.03,
                                 CLOSE, CARRY_STEP)
        yield from self._move(self.hand.position, CLOSE, closing, tol=0.02, max_steps=40,
                              max_step=CARRY_STEP, pointing=tilt)
        lo = box(self._facts, name)[0]
        pos = np.asarray(self._facts["objects"][name]["position"], dtype=float)
        length = float(np.linalg.norm(pos[:2] - self.hand.position[:2]))
        over = path_top(self._facts, pos, np.array([*goal, 0.0]), length, name)
        carry = over + (self.hand.position[2] - lo[2]) + 0.03
        seen: list[np.ndarray] = []
        for _ in range(120):
            if not self.grasped(name):
                return False
            h = self.hand
            pos = np.asarray(self._facts["objects"][name]["position"], dtype=float)
            err = goal - pos[:2]
            if np.linalg.norm(err) < 0.008 and abs(h.position[2] - carry) < 0.02:
                break
            seen.append(h.position)
            # over the goal but the turned arm goes no lower: lowered from where it is
            if (np.linalg.norm(err) < 0.015 and len(seen) > 10
                    and np.linalg.norm(seen[-8] - seen[-1]) < 0.003):
                break
            yield servo(h, np.array([*(h.position[:2] + err), carry]), CLOSE, closing,
                        max_step=CARRY_STEP, pointing=tilt)
        yield from self._lower(name, goal, frozenset({region["parent"]}), -np.inf, closing,
                               tilt)
        yield from self._grip(OPEN, 8, closing, pointing=tilt)
        yield from self._move(self.hand.position - axis * 0.08 + UP * 0.03, OPEN, closing,
                              tol=0.02, max_steps=25, pointing=tilt)
        yield from self._move(_up(self.hand.position, 0.08), OPEN, tol=0.02, max_steps=25)
        return True

    # ------------------------------------------------------------------------ fixtures

    def _joint(self, m: Milestone) -> Skill:
        atom = (m.kind, m.subject)
        m.attempts += 1
        if not self.holds(atom):
            yield from work_joint(self, m)
        if self.holds(atom):
            m.achieved, m.t = True, self._t
            return True
        self._fail(m, "the goal atom does not hold after the motion")
        return False
