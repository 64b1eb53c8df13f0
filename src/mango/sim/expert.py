"""Scripted expert: one planner that executes a scene's task with IK motions.

`ExpertPolicy.act(world_state, joint_positions)` returns the next action chunk (H x 8: seven
joint targets + gripper width), so the same planner drives `SimEnv` directly and, through
the ROS `vla_node`, a robot that publishes `/world_state`. The plan is a generator of motion
segments; it re-reads the world state at sync points (after a grasp, a release, a push) to
verify what happened and retry a failed grasp. Faults (`mango.sim.faults`) are injected here,
and the expert records which task milestone each fault prevented (the run's ground truth).
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from mango.errors import InputError
from mango.oracle.world_state import EntityState, WorldState
from mango.sim.build import (
    CONTROL_HZ,
    KNOB_HALF,
    build_robot,
    door_hinge_local,
    drawer_handle_local,
    knob_local,
)
from mango.sim.faults import Fault, parse_fault
from mango.sim.ik import IKSolver, mat_to_quat, quat_to_mat
from mango.sim.scene import ARTICULATED, EntitySpec, SceneSpec, SkillSpec, as_scene

log = logging.getLogger(__name__)

DT = 1.0 / CONTROL_HZ
OPEN = 0.08
CLOSED = 0.0
FINGERTIP = 0.034  # fingertips below the hand centre
_SYNC = object()  # generator token: let queued rows execute, then resume with a fresh state

MilestoneKind = Literal["approach", "pick", "place", "close", "turnon"]


@dataclass
class Milestone:
    """A task effect the expert must achieve; `achieved`/`t` are measured from the physics."""

    kind: MilestoneKind
    subject: str  # object, joint or device id
    target: str | None
    skill: int  # 0-based index into the scene's expert plan
    relation: str | None = None
    achieved: bool = False
    t: float | None = None
    lost_t: float | None = None  # when a fault undid it (knock_out)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind, "subject": self.subject, "target": self.target,
            "skill": self.skill + 1, "achieved": self.achieved, "t": self.t,
            "lost_t": self.lost_t,
        }


@dataclass
class FaultRecord:
    fault: Fault
    t: float | None = None  # when the fault took effect
    skill: int | None = None
    note: str = ""


class ExpertError(RuntimeError):
    """The expert could not continue (e.g. an unreachable pose)."""


@dataclass
class _Plan:
    q: np.ndarray
    width: float
    queue: deque = field(default_factory=deque)


def yaw_of(quat: Sequence[float] | None) -> float:
    if quat is None:
        return 0.0
    w, x, y, z = quat
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def down_quat(opening_yaw: float) -> np.ndarray:
    """Gripper pointing down with the fingers opening along world direction `opening_yaw`."""
    y = np.array([math.cos(opening_yaw), math.sin(opening_yaw), 0.0])
    z = np.array([0.0, 0.0, -1.0])
    x = np.cross(y, z)
    return mat_to_quat(np.column_stack([x, y, z]))


def _wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


def _nearest_mod(a: float, ref: float, period: float) -> float:
    """The angle a + k*period closest to ref."""
    return a + period * round((ref - a) / period)


class ExpertPolicy:
    """A scripted policy for one scene's task (optionally with an injected fault)."""

    def __init__(
        self,
        scene: SceneSpec | str | Path,
        fault: Fault | str | None = None,
        *,
        chunk_size: int = 8,
        travel_speed: float = 0.3,
        approach_speed: float = 0.15,
    ) -> None:
        self.scene = as_scene(scene)
        self.fault = parse_fault(fault) if isinstance(fault, str) else fault
        self.chunk_size = chunk_size
        self.travel_speed = travel_speed
        self.approach_speed = approach_speed
        kin = build_robot(self.scene)
        joint_ids = [int(kin.model.actuator_trnid[a, 0]) for a in kin.arm_actuators]
        self.ik = IKSolver(kin.model, kin.hand_site, kin.arm_qpos, kin.arm_dof, joint_ids)
        self._check_fault()
        self.reset()

    # ------------------------------------------------------------------ public API
    def reset(self) -> None:
        self._gen: Iterator[object] | None = None
        self._plan: _Plan | None = None
        self._pending_sync = False
        self._ws: WorldState | None = None
        self.done = False
        self.error: str | None = None
        self.fault_record: FaultRecord | None = (
            FaultRecord(self.fault) if self.fault is not None else None
        )
        self.milestones: list[Milestone] = self._milestones()
        self._last_row: np.ndarray | None = None
        self._first: WorldState | None = None  # the episode's first state (lift reference)

    def act(self, state: WorldState, joint_positions: Sequence[float]) -> np.ndarray:
        """The next action chunk (at most `chunk_size` rows of 7 joint targets + width)."""
        self._ws = state
        self.review([state])  # effects seen between the plan's own checks count too
        q = np.asarray(joint_positions, float)
        if self._plan is None:
            width = state.gripper.width if state.gripper and state.gripper.width else OPEN
            self._plan = _Plan(q=q.copy(), width=float(width))
            self._last_row = np.r_[q, width]
            self._gen = self._script()
        fr = self.fault_record
        if fr is not None and fr.fault.kind == "stall" and state.t >= fr.fault.when:
            if fr.t is None:
                fr.t, fr.note = state.t, "robot froze"
                self.done = True
            return np.tile(self._last_row, (self.chunk_size, 1))
        rows: list[np.ndarray] = []
        plan = self._plan
        while len(rows) < self.chunk_size and not self.done:
            if plan.queue:
                rows.append(plan.queue.popleft())
                continue
            if self._pending_sync:
                if rows:
                    break  # let these rows run before the plan looks at the world again
                self._pending_sync = False
            try:
                item = next(self._gen)  # type: ignore[arg-type]
            except StopIteration:
                self.done = True
                break
            except ExpertError as exc:
                self.error = str(exc)
                log.warning("expert stopped: %s", exc)
                self.done = True
                break
            if item is _SYNC:
                self._pending_sync = True
            else:
                plan.queue.extend(item)  # type: ignore[arg-type]
        if not rows:
            rows = [self._last_row]
        self._last_row = rows[-1]
        return np.asarray(rows)

    def ground_truth(
        self, monitored: Callable[[Milestone], bool] | None = None
    ) -> dict[str, object]:
        """The first milestone the run failed (plan order) and when; None when all held.

        `monitored` filters the milestones an oracle actually watches (e.g. no `approach`).
        """
        fr = self.fault_record
        for m in self.milestones:
            if m.lost_t is not None:
                return {"milestone": m.to_json(), "t": m.lost_t, "event": "regression"}
        for m in self.milestones:
            if not m.achieved and (monitored is None or monitored(m)):
                t = fr.t if fr is not None else None
                return {"milestone": m.to_json(), "t": t, "event": "incomplete"}
        return {"milestone": None, "t": None, "event": None}

    def _achieve(self, m: Milestone) -> None:
        if not m.achieved:
            m.achieved, m.t = True, self._state().t

    def review(self, states: Sequence[WorldState]) -> None:
        """Settle unachieved milestones from the recorded physics.

        The plan checks its effects only at sync points; a run frozen or cut short between
        two checks (or a hand that brushed an object on its way elsewhere) may still have
        achieved an effect, so each milestone not yet achieved is looked up in the trace,
        after the previous milestone of its step.
        """
        if not states:
            return
        if self._first is None:
            self._first = states[0]
        first = self._first
        prev_t: dict[int, float] = {}
        for m in self.milestones:
            start = prev_t.get(m.skill, first.t)
            if not m.achieved:
                for st in states:
                    if st.t >= start and self._holds(m, st, first):
                        m.achieved, m.t = True, st.t
                        break
            if m.achieved and m.t is not None:
                prev_t[m.skill] = m.t
            else:
                prev_t[m.skill] = math.inf

    def _holds(self, m: Milestone, st: WorldState, first: WorldState) -> bool:
        if m.kind == "approach":
            hand, obj = st.objects.get("robot_hand"), st.objects[m.subject]
            return hand is not None and _gap(_box3(hand), _box3(obj)) <= 0.05
        if m.kind == "pick":
            lifted = st.objects[m.subject].position[2] - first.objects[m.subject].position[2]
            return bool(st.fact(f"grasped({m.subject})")) and lifted >= 0.03
        if m.kind == "place":
            skill = self.scene.expert[m.skill]
            return not st.fact(f"grasped({m.subject})") and self._placed(m.subject, skill, st)
        if m.kind == "close":
            j = st.joints.get(m.subject)
            return j is not None and j.openness <= 0.05
        dev = st.devices.get(m.subject)
        return dev is not None and dev.on

    # -------------------------------------------------------------- plan structure
    def _check_fault(self) -> None:
        f = self.fault
        if f is None or f.kind in ("stall", "drop"):
            if f is not None and f.kind == "drop" and not self._pick_skills():
                raise InputError(f"fault {f}: this scene's task has no pick-and-place")
            return
        n = len(self.scene.expert)
        if f.skill >= n:
            raise InputError(f"fault {f}: the task has only {n} expert steps", field="fault")
        skill = self.scene.expert[f.skill]
        if f.kind in ("wrong_object", "wrong_place", "knock_out") and skill.skill != "pick_place":
            raise InputError(f"fault {f}: expert step {f.skill + 1} is not a pick-and-place",
                             field="fault")
        if f.kind in ("knock_out", "wrong_object") and skill.grasp == "side":
            # the side grasp reaches into a cavity from one direction only; a distractor or
            # a placed object elsewhere is generally not reachable that way
            raise InputError(f"fault {f}: {f.kind} is not available for a side-grasp step",
                             field="fault")
        if f.kind == "knock_out" and f.skill >= n - 1:
            raise InputError(
                f"fault {f}: a placed object can only be knocked out before the last step",
                field="fault",
            )
        if f.kind == "wrong_object" and self._distractor(skill) is None:
            raise InputError(f"fault {f}: the scene has no other movable object", field="fault")

    def _pick_skills(self) -> list[int]:
        return [i for i, s in enumerate(self.scene.expert) if s.skill == "pick_place"]

    def _milestones(self) -> list[Milestone]:
        out: list[Milestone] = []
        for k, s in enumerate(self.scene.expert):
            if s.skill == "pick_place":
                assert s.obj is not None
                out.append(Milestone("approach", s.obj, None, k))
                out.append(Milestone("pick", s.obj, None, k))
                out.append(Milestone("place", s.obj, s.target, k, relation=s.relation))
            elif s.skill == "close":
                assert s.joint is not None
                out.append(Milestone("close", self.scene.joint_owner(s.joint).joint.id, None, k))
            else:
                assert s.device is not None
                out.append(Milestone("turnon", s.device, None, k))
        return out

    def _milestone(self, kind: str, skill: int) -> Milestone:
        for m in self.milestones:
            if m.kind == kind and m.skill == skill:
                return m
        raise KeyError((kind, skill))

    def _distractor(self, skill: SkillSpec) -> str | None:
        used = {s.obj for s in self.scene.expert} | {s.target for s in self.scene.expert}
        cands = [e for e in self.scene.entities
                 if e.movable and e.id not in used and e.shape not in ("basket", "plate", "caddy")
                 and max(min(e.size[0], e.size[1]), 0) < 0.075]
        if not cands:
            return None
        src = self.scene.entity(skill.obj or "")
        cands.sort(key=lambda e: math.dist(e.position, src.position))
        return cands[0].id

    # ------------------------------------------------------------------ the script
    def _script(self) -> Iterator[object]:
        yield _SYNC
        fault = self.fault
        for k, skill in enumerate(self.scene.expert):
            if fault is not None and fault.kind == "skip" and fault.skill == k:
                self._note_fault(k, f"skipped expert step {k + 1}")
                continue
            if skill.skill == "pick_place":
                yield from self._pick_place(k, skill)
            elif skill.skill == "close":
                yield from self._close(k, skill)
            else:
                yield from self._turn_on(k, skill)
        try:  # park the arm; the task is over whether or not this succeeds
            yield from self._travel_to(np.array([-0.2, 0.0, self.scene.table.height + 0.3]))
        except ExpertError as exc:
            log.info("not parking the arm: %s", exc)
        yield _SYNC

    def _note_fault(self, skill: int | None, note: str, t: float | None = None) -> None:
        fr = self.fault_record
        if fr is not None and fr.t is None:
            fr.t = self._state().t if t is None else t
            fr.skill, fr.note = skill, note

    def _state(self) -> WorldState:
        assert self._ws is not None
        return self._ws

    # ---------------------------------------------------------------- primitives
    def _pose(self) -> tuple[np.ndarray, np.ndarray]:
        assert self._plan is not None
        return self.ik.fk(self._plan.q)

    def _yaw_now(self) -> float:
        """Direction (yaw) in which the fingers open now (the hand site's y axis)."""
        _, quat = self._pose()
        opening = quat_to_mat(quat)[:, 1]
        return math.atan2(opening[1], opening[0])

    def _line(
        self,
        pos: np.ndarray,
        quat: np.ndarray | None = None,
        *,
        width: float | None = None,
        speed: float | None = None,
        open_at: int | None = None,
    ) -> list[np.ndarray]:
        """Rows moving the hand centre along a straight line (and slerp) to pos/quat."""
        plan = self._plan
        assert plan is not None
        p0, q0 = self._pose()
        quat = q0 if quat is None else np.asarray(quat, float)
        if np.dot(quat, q0) < 0:
            quat = -quat
        dist = float(np.linalg.norm(pos - p0))
        ang = 2 * math.acos(min(1.0, abs(float(np.dot(quat, q0)))))
        v = speed or self.travel_speed
        n = max(2, math.ceil(dist / (v * DT)), math.ceil(ang / (1.2 * DT)))
        w0, w1 = plan.width, plan.width if width is None else width
        rows: list[np.ndarray] = []
        q = plan.q
        for i in range(1, n + 1):
            f = i / n
            s = 0.5 - 0.5 * math.cos(math.pi * f)  # ease in/out
            p = p0 + s * (pos - p0)
            qi = _slerp(q0, quat, s)
            res = self.ik.solve(p, qi, q)
            if not res.ok:
                raise ExpertError(res.message)
            jump = float(np.max(np.abs(res.q - q)))
            if jump > 0.5:  # another IK branch: following it would swing the arm around
                raise ExpertError(
                    f"no continuous joint path to {np.round(p, 3).tolist()} "
                    f"(a joint would jump {jump:.2f} rad)"
                )
            q = res.q
            w = w0 + f * (w1 - w0)
            if open_at is not None and i >= open_at:
                w = OPEN
            rows.append(np.r_[q, w])
        plan.q, plan.width = q, rows[-1][7]
        return rows

    def _hold(self, seconds: float, width: float | None = None) -> list[np.ndarray]:
        plan = self._plan
        assert plan is not None
        n = max(1, round(seconds / DT))
        w0 = plan.width
        w1 = w0 if width is None else width
        rows = [np.r_[plan.q, w0 + min(1.0, (i + 1) / max(1, n - 2)) * (w1 - w0)]
                for i in range(n)]
        plan.width = w1
        return rows

    def _travel_z(self) -> float:
        """Cruise height: above loose objects and tall fixtures (an open door's top edge)."""
        tall = max((e.size[2] for e in self.scene.entities if e.shape in ARTICULATED),
                   default=0.0)
        return self.scene.table.height + min(0.36, max(0.27, tall + 0.06))

    def _travel_to(self, above: np.ndarray, quat: np.ndarray | None = None,
                   **kw: object) -> Iterator[list[np.ndarray]]:
        """Up to travel height, across, (rotating on the way), ending above `above`."""
        p, _ = self._pose()
        zt = max(self._travel_z(), float(above[2]))
        if p[2] < zt - 0.01:
            yield self._line(np.array([p[0], p[1], zt]), speed=self.approach_speed)
        yield self._line(np.array([above[0], above[1], zt]), quat, **kw)  # type: ignore[arg-type]
        if zt > above[2] + 0.005:
            yield self._line(above, speed=self.approach_speed)

    # -------------------------------------------------------------------- skills
    def _grasp_yaw(self, ent: EntitySpec, yaw: float) -> float:
        sx, sy, _ = ent.size
        if ent.shape in ("cylinder", "plate"):
            return self._yaw_now()
        # a mug is taken across its body (away from the handle), a box across its short side
        a = yaw + math.pi / 2 if ent.shape == "mug" or sx > sy else yaw
        return _nearest_mod(a, self._yaw_now(), math.pi)

    def _side_quat(self, d: np.ndarray) -> np.ndarray:
        """Gripper pointing along horizontal d, fingers opening horizontally (nearest wrist)."""
        _, quat = self._pose()
        y = np.array([-d[1], d[0], 0.0])
        if float(np.dot(quat_to_mat(quat)[:, 1], y)) < 0:
            y = -y
        return mat_to_quat(np.column_stack([np.cross(y, d), y, d]))

    def _grasp_side(self, obj: str, d: np.ndarray) -> Iterator[object]:
        """Approach along d at mid-height, close, lift a little; retries twice."""
        ent = self.scene.entity(obj)
        for _attempt in range(3):
            st = self._state().objects[obj]
            c = np.asarray(st.position)
            h = ent.size[2]
            z = max(c[2], c[2] - h / 2 + 0.03)
            at = np.array([c[0], c[1], z]) - 0.005 * d
            pre = at - 0.11 * d
            # a horizontal hand cannot reach high: turn it low, in front of the object
            yield from self._travel_to(pre + np.array([0, 0, 0.09]), width=OPEN)
            yield self._line(pre, self._side_quat(d), speed=self.approach_speed)
            yield self._line(at, speed=0.1)
            yield self._hold(0.15)
            yield self._hold(0.7, CLOSED)
            yield _SYNC
            self._approached(obj)
            offset = z - (self._state().objects[obj].position[2] - h / 2)
            yield self._line(at + np.array([0, 0, 0.05]), speed=0.1)
            yield _SYNC
            if self._state().fact(f"grasped({obj})"):
                return offset
            yield self._hold(0.4, OPEN)
            yield self._line(pre, speed=self.approach_speed)
            yield self._line(pre + np.array([0, 0, 0.09]), down_quat(self._yaw_now()),
                             speed=self.approach_speed)
        return None

    def _grasp(self, obj: str) -> Iterator[object]:
        """Approach, close on `obj`, lift; retries twice. Returns the grasp offset or None."""
        ent = self.scene.entity(obj)
        for _attempt in range(3):
            st = self._state().objects[obj]
            c = np.asarray(st.position)
            yaw = yaw_of(st.orientation)
            h = ent.size[2]
            z = max(c[2] + h / 2 - 0.022, c[2] - h / 2 + FINGERTIP + 0.003)
            a = self._grasp_yaw(ent, yaw)
            quat = down_quat(a)
            above = np.array([c[0], c[1], z + 0.12])
            yield from self._travel_to(above, quat, width=OPEN)
            yield self._line(np.array([c[0], c[1], z]), speed=self.approach_speed)
            yield self._hold(0.15)
            yield self._hold(0.7, CLOSED)
            yield _SYNC
            self._approached(obj)
            offset = z - (self._state().objects[obj].position[2] - h / 2)
            yield self._line(np.array([c[0], c[1], self._travel_z()]), speed=self.approach_speed)
            yield _SYNC
            if self._state().fact(f"grasped({obj})"):
                return offset
            yield self._hold(0.4, OPEN)
        return None

    def _approached(self, obj: str) -> None:
        for m in self.milestones:
            if m.kind == "approach" and m.subject == obj and not m.achieved:
                self._achieve(m)

    def _place_point(self, skill: SkillSpec) -> tuple[np.ndarray, float, float]:
        """Release xy, the support height under it and the yaw the target wants."""
        ws = self._state()
        tgt = ws.objects[skill.target or ""]
        tyaw = yaw_of(tgt.orientation)
        c = np.asarray(tgt.position)
        off = np.array(skill.offset)
        rot = np.array([[math.cos(tyaw), -math.sin(tyaw)], [math.sin(tyaw), math.cos(tyaw)]])
        xy = c[:2] + rot @ off
        size = tgt.size or (0.0, 0.0, 0.0)
        support = c[2] - size[2] / 2 if tgt.kind == "region" else c[2] + size[2] / 2
        return np.array([xy[0], xy[1]]), support, tyaw

    def _beside(self, skill: SkillSpec, obj: str) -> np.ndarray:
        """A free, reachable table spot next to the target (for wrong_place and knock_out).

        Free means the object's footprint overlaps no other entity's footprint, regions
        included (an open drawer sticks out of its cabinet).
        """
        ws = self._state()
        tgt = ws.objects[skill.target or ""]
        tx0, ty0, tx1, ty1 = _footprint(tgt)
        c = np.array([(tx0 + tx1) / 2, (ty0 + ty1) / 2])
        half = np.array([(tx1 - tx0) / 2, (ty1 - ty0) / 2])
        ent = self.scene.entity(obj)
        r = math.hypot(ent.size[0], ent.size[1]) / 2
        blockers = [_footprint(o) for k, o in ws.objects.items()
                    if k != obj and o.kind in ("object", "fixture", "device", "region")]
        base = np.asarray(self.scene.robot.base[:2])
        lim = np.array(self.scene.table.size) / 2 - r - 0.03
        dirs = [(-1, 0), (0, 1), (0, -1), (1, 0), (-1, 1), (-1, -1), (1, 1), (1, -1)]
        for extra in (0.05, 0.1, 0.16):
            for dx, dy in dirs:
                d = np.array([dx, dy], float)
                p = c + d * (half + r + extra)
                if np.any(np.abs(p) > lim) or not 0.35 <= np.linalg.norm(p - base) <= 0.72:
                    continue
                m = r + 0.015
                if all(p[0] + m < b[0] or p[0] - m > b[2] or p[1] + m < b[1] or p[1] - m > b[3]
                       for b in blockers):
                    return p
        raise ExpertError(f"no free spot next to {skill.target} to put {obj}")

    def _pick_place(self, k: int, skill: SkillSpec) -> Iterator[object]:
        fault = self.fault
        obj = skill.obj or ""
        if fault is not None and fault.kind == "wrong_object" and fault.skill == k:
            wrong = self._distractor(skill) or obj
            self._note_fault(k, f"picked {wrong} instead of {obj}")
            obj = wrong
        ent = self.scene.entity(obj)
        pick = self._milestone("pick", k)
        place = self._milestone("place", k)
        if skill.grasp == "side":
            yield from self._pick_place_side(k, skill, obj)
            return
        offset = yield from self._grasp(obj)
        if offset is None:
            return
        if obj == pick.subject:
            self._achieve(pick)
        xy, support, tyaw = self._place_point(skill)
        release_z = support + offset + 0.012
        wrong_place = fault is not None and fault.kind == "wrong_place" and fault.skill == k
        if wrong_place:
            xy = self._beside(skill, obj)
            support = self.scene.table.height
            release_z = support + offset + 0.012
        # keep the object's yaw relative to the hand; turn it to the target's yaw (mod 90°)
        st = self._state().objects[obj]
        oyaw = yaw_of(st.orientation)
        a = self._yaw_now()
        if ent.shape not in ("cylinder", "plate", "mug"):
            turn = _nearest_mod(tyaw - oyaw, 0.0, math.pi / 2)
            a = a + turn
        quat = down_quat(a)
        carry = max(self._travel_z(), release_z + 0.1)
        open_at = None
        first_pick = self._pick_skills()[0] == k
        if fault is not None and fault.kind == "drop" and first_pick:
            p0, _ = self._pose()
            dist = float(np.linalg.norm(np.array([xy[0], xy[1], carry]) - p0))
            n = max(2, math.ceil(dist / (self.travel_speed * DT)))
            open_at = max(1, int(fault.when * n))
            t_drop = self._state().t + open_at * DT
            self._note_fault(k, f"released {obj} at {fault.when:.0%} of the transport", t_drop)
        yield self._line(np.array([xy[0], xy[1], carry]), quat, open_at=open_at)
        if open_at is None:
            yield self._line(np.array([xy[0], xy[1], release_z]), speed=self.approach_speed)
            yield self._hold(0.1)
            yield _SYNC
            t_rel = self._state().t
            # open just enough to let go: wide fingers would catch a container's walls
            g = self._state().gripper
            held = g.width if g is not None and g.width is not None else OPEN
            yield self._hold(0.5, min(OPEN, held + 0.025))
            if wrong_place:
                self._note_fault(k, f"released {obj} beside {skill.target}", t_rel)
        yield self._line(np.array([xy[0], xy[1], carry]), speed=self.approach_speed)
        yield _SYNC
        if obj == place.subject and self._placed(obj, skill):
            self._achieve(place)
        if fault is not None and fault.kind == "knock_out" and fault.skill == k and place.achieved:
            yield from self._knock_out(k, skill, obj)

    def _pick_place_side(self, k: int, skill: SkillSpec, obj: str) -> Iterator[object]:
        """Pick with a horizontal gripper and slide the object into a cavity (its +x)."""
        fault = self.fault
        pick, place = self._milestone("pick", k), self._milestone("place", k)
        tgt = self._state().objects[skill.target or ""]
        frame = self._state().objects.get(tgt.parent or "", tgt)
        d = quat_to_mat(frame.orientation or (1.0, 0.0, 0.0, 0.0))[:, 0].copy()
        d[2] = 0.0
        d /= np.linalg.norm(d)
        offset = yield from self._grasp_side(obj, d)
        if offset is None:
            return
        if obj == pick.subject:
            self._achieve(pick)
        xy, support, _ = self._place_point(skill)
        wrong_place = fault is not None and fault.kind == "wrong_place" and fault.skill == k
        if wrong_place:
            xy = self._beside(skill, obj)
            support = self.scene.table.height
        release_z = support + offset + 0.015
        p, _ = self._pose()
        lift_z = max(release_z + 0.005, p[2])
        at = np.array([xy[0], xy[1], lift_z])
        pre = at - 0.15 * d
        open_at = None
        if fault is not None and fault.kind == "drop" and self._pick_skills()[0] == k:
            n = max(2, math.ceil(float(np.linalg.norm(pre - p)) / (self.travel_speed * DT)))
            open_at = max(1, int(fault.when * n))
            self._note_fault(k, f"released {obj} at {fault.when:.0%} of the transport",
                             self._state().t + open_at * DT)
        yield self._line(pre, open_at=open_at)
        if open_at is None:
            yield self._line(at, speed=0.1)
            yield self._line(np.array([at[0], at[1], release_z]), speed=0.05)
            yield _SYNC
            t_rel = self._state().t
            g = self._state().gripper
            held = g.width if g is not None and g.width is not None else OPEN
            yield self._hold(0.5, min(OPEN, held + 0.02))
            if wrong_place:
                self._note_fault(k, f"released {obj} beside {skill.target}", t_rel)
        back = np.array([xy[0], xy[1], release_z + 0.005]) - 0.16 * d
        yield self._line(back, speed=0.1)
        yield self._line(back + np.array([0, 0, 0.08]), down_quat(self._yaw_now()),
                         speed=self.approach_speed)
        yield self._line(np.array([back[0], back[1], self._travel_z()]),
                         speed=self.approach_speed)
        yield _SYNC
        if obj == place.subject and self._placed(obj, skill):
            self._achieve(place)

    def _knock_out(self, k: int, skill: SkillSpec, obj: str) -> Iterator[object]:
        place = self._milestone("place", k)
        offset = yield from self._grasp(obj)
        if offset is None:
            fr = self.fault_record
            if fr is not None:
                fr.note = f"could not take {obj} out of {skill.target} (no effect)"
            return
        if not self._placed(obj, skill):
            place.lost_t = self._state().t
            self._note_fault(k, f"took {obj} out of {skill.target}", place.lost_t)
        xy = self._beside(skill, obj)
        z = self.scene.table.height + offset + 0.012
        yield self._line(np.array([xy[0], xy[1], self._travel_z()]))
        yield self._line(np.array([xy[0], xy[1], z]), speed=self.approach_speed)
        yield self._hold(0.5, OPEN)
        yield self._line(np.array([xy[0], xy[1], self._travel_z()]), speed=self.approach_speed)
        yield _SYNC

    def _placed(self, obj: str, skill: SkillSpec, ws: WorldState | None = None) -> bool:
        """Did obj end up in/on the target? (independent of the oracle engine)."""
        ws = ws or self._state()
        o, t = ws.objects[obj], ws.objects[skill.target or ""]
        ent = self.scene.entity(obj)
        p = np.asarray(o.position)
        tc = np.asarray(t.position)
        ts = np.asarray(t.size or (0.0, 0.0, 0.0))
        rot = quat_to_mat(t.orientation or (1.0, 0.0, 0.0, 0.0))
        local = rot.T @ (p - tc)
        if t.kind == "region" and skill.relation == "in":
            return bool(np.all(np.abs(local[:2]) <= ts[:2] / 2)
                        and -ts[2] / 2 - 0.01 <= local[2] <= ts[2] / 2)
        bottom = p[2] - ent.size[2] / 2
        over = bool(np.all(np.abs(local[:2]) <= ts[:2] / 2 + 0.01))
        if t.kind == "region":
            return over and tc[2] - ts[2] / 2 - 0.02 <= bottom <= tc[2] + ts[2] / 2 + 0.02
        return over and abs(bottom - (tc[2] + ts[2] / 2)) <= 0.02

    def _fixture_frame(self, ent: EntitySpec) -> tuple[np.ndarray, np.ndarray]:
        st = self._state().objects[ent.id]
        return np.asarray(st.position), quat_to_mat(st.orientation or (1.0, 0.0, 0.0, 0.0))

    def _close(self, k: int, skill: SkillSpec) -> Iterator[object]:
        ent = self.scene.joint_owner(skill.joint or "")
        assert ent.joint is not None
        if ent.shape == "drawer_cabinet":
            yield from self._close_drawer(ent)
        elif ent.shape == "microwave":
            yield from self._close_door(ent)
        else:
            raise ExpertError(f"cannot close a {ent.shape}")
        yield _SYNC
        js = self._state().joints[ent.joint.id]
        m = self._milestone("close", k)
        if js.openness <= 0.05:
            self._achieve(m)

    def _close_drawer(self, ent: EntitySpec) -> Iterator[object]:
        assert ent.joint is not None
        pos, rot = self._fixture_frame(ent)
        q = self._state().joints[ent.joint.id].q
        handle = np.asarray(drawer_handle_local(ent, q))
        done = np.asarray(drawer_handle_local(ent, ent.joint.q_closed))
        # fingertips low on the drawer front: the hand body stays below the fixed upper panel
        start_l = handle + np.array([-0.035, 0.0, FINGERTIP - 0.05])
        end_l = done + np.array([0.0, 0.0, FINGERTIP - 0.05])
        fx = rot[:, 0]
        a = _nearest_mod(math.atan2(fx[1], fx[0]) + math.pi / 2, self._yaw_now(), math.pi)
        quat = down_quat(a)
        start = pos + rot @ start_l
        end = pos + rot @ end_l
        yield from self._travel_to(start + np.array([0, 0, 0.12]), quat, width=CLOSED)
        yield self._line(start, speed=self.approach_speed)
        yield self._line(end, speed=0.1)
        yield self._hold(0.2)
        back = end - 0.05 * fx
        yield self._line(back, speed=self.approach_speed)
        yield self._line(back + np.array([0, 0, 0.15]), speed=self.approach_speed)

    def _close_door(self, ent: EntitySpec) -> Iterator[object]:
        assert ent.joint is not None
        pos, rot = self._fixture_frame(ent)
        q0 = self._state().joints[ent.joint.id].q
        hinge = np.asarray(door_hinge_local(ent))
        width = ent.size[1]
        r = 0.75 * width
        z_l = -ent.size[2] / 2 + 0.06 + FINGERTIP

        def point(q: float, clear: float) -> np.ndarray:
            along = np.array([math.sin(q), math.cos(q), 0.0])
            outer = np.array([-math.cos(q), math.sin(q), 0.0])
            return pos + rot @ (hinge + r * along + clear * outer + np.array([0, 0, z_l]))

        def hand_yaw(q: float, ref: float) -> float:
            # the hand's long side lies along the door and turns with it during the sweep
            along = rot @ np.array([math.sin(q), math.cos(q), 0.0])
            return _nearest_mod(math.atan2(along[1], along[0]), ref, math.pi)

        a = hand_yaw(q0, self._yaw_now())
        start = point(q0, 0.05)
        yield from self._travel_to(start + np.array([0, 0, 0.1]), down_quat(a), width=CLOSED)
        yield self._line(start, speed=self.approach_speed)
        steps = max(2, math.ceil(abs(0.05 - q0) / 0.08))
        for i in range(1, steps + 1):
            q = q0 + (0.05 - q0) * i / steps
            a = hand_yaw(q, a)
            yield self._line(point(q, 0.035), down_quat(a), speed=0.12)
        yield self._hold(0.2)
        end = point(0.05, 0.09)
        yield self._line(end, speed=self.approach_speed)
        yield self._line(end + np.array([0, 0, 0.12]), speed=self.approach_speed)

    def _turn_on(self, k: int, skill: SkillSpec) -> Iterator[object]:
        ent = self.scene.entity(skill.device or "")
        assert ent.joint is not None and ent.device is not None
        pos, rot = self._fixture_frame(ent)
        knob = pos + rot @ np.asarray(knob_local(ent))
        z = knob[2] + KNOB_HALF - 0.012
        a = self._yaw_now()
        yield from self._travel_to(np.array([knob[0], knob[1], z + 0.1]), down_quat(a),
                                   width=OPEN)
        yield self._line(np.array([knob[0], knob[1], z]), speed=self.approach_speed)
        yield self._hold(0.6, CLOSED)
        turn = ent.device.on_threshold + 0.35
        steps = 8
        for i in range(1, steps + 1):
            yield self._line(np.array([knob[0], knob[1], z]), down_quat(a + turn * i / steps),
                             speed=0.1)
        yield self._hold(0.2)
        yield self._hold(0.4, OPEN)
        yield self._line(np.array([knob[0], knob[1], z + 0.12]), speed=self.approach_speed)
        yield _SYNC
        m = self._milestone("turnon", k)
        dev = self._state().devices.get(ent.id)
        if dev is not None and dev.on:
            self._achieve(m)


def _box3(e: EntityState) -> tuple[float, ...]:
    """World axis-aligned box of an entity's size box (spec §3 geometry)."""
    x0, y0, x1, y1 = _footprint(e)
    z, hz = e.position[2], (e.size or (0.0, 0.0, 0.0))[2] / 2
    return (x0, y0, z - hz, x1, y1, z + hz)


def _gap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    d = [max(b[i] - a[i + 3], a[i] - b[i + 3], 0.0) for i in range(3)]
    return math.sqrt(sum(v * v for v in d))


def _footprint(e: EntityState) -> tuple[float, float, float, float]:
    """World xy box (xmin, ymin, xmax, ymax) of an entity's size box turned by its yaw."""
    x, y, _ = e.position
    sx, sy, _ = e.size or (0.0, 0.0, 0.0)
    a = yaw_of(e.orientation)
    hx = abs(math.cos(a)) * sx / 2 + abs(math.sin(a)) * sy / 2
    hy = abs(math.sin(a)) * sx / 2 + abs(math.cos(a)) * sy / 2
    return (x - hx, y - hy, x + hx, y + hy)


def _slerp(q0: np.ndarray, q1: np.ndarray, s: float) -> np.ndarray:
    d = float(np.dot(q0, q1))
    if d < 0:
        q1, d = -q1, -d
    if d > 0.9995:
        out = q0 + s * (q1 - q0)
        return out / np.linalg.norm(out)
    th = math.acos(d)
    return (math.sin((1 - s) * th) * q0 + math.sin(s * th) * q1) / math.sin(th)


__all__ = ["ARTICULATED", "ExpertError", "ExpertPolicy", "FaultRecord", "Milestone", "down_quat"]
