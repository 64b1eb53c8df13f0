"""The hand's motions for a planned grasp or release, as joint rows (7 joints + width).

Each builder extends a `PlannedArm` (the IK ladder's eased straight lines) and returns three
legs, (to the object or release, close or let go, away), which the executor streams as
chunks and names as phases. The free-space legs are the transit backend's
(`primitives.transit`); the legs next to the object are straight lines on the ladder.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from mango.errors import UnreachableError
from mango.geometry import frame_quat, mat_to_quat, quat_to_mat
from mango.primitives.clearance import clear_release
from mango.primitives.grasps import GraspPlan
from mango.primitives.planning import GRIPPER_OPEN
from mango.primitives.transit import TransitPlanner
from mango.sim.expert.arm import ExpertError, PlannedArm
from mango.sim.expert.motions import down_quat

CLOSED = 0.0
Legs = tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]
WRIST_MARGIN = 0.3  # rad the last joint keeps inside its range after a turn
TURN_SLACK = math.radians(60)  # a turn may fall short of its aim by this (the wrist's range)


def horizontal_quat(d: Sequence[float], roll: float = 1.0) -> np.ndarray:
    """The hand pointing along horizontal `d`, fingers opening horizontally; `roll` +1 or -1
    picks which way up (the opening axis is roll * z x d)."""
    z = np.array([d[0], d[1], 0.0], float)
    z /= float(np.linalg.norm(z))
    y = roll * np.array([-z[1], z[0], 0.0])
    return frame_quat(np.cross(y, z), y, z)


def turned(quat: np.ndarray, angle: float) -> np.ndarray:
    """`quat` turned by `angle` about the world's vertical."""
    c, s = math.cos(angle), math.sin(angle)
    rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return mat_to_quat(rz @ quat_to_mat(quat))


def _wrist_after(arm: PlannedArm, yaw_change: float) -> float:
    """Joint 7 after turning a downward hand by `yaw_change` about the vertical (the joint
    turns the hand about its own axis, which points down: the opposite sense)."""
    return float(arm.q[6]) - yaw_change


def _wrist_ok(arm: PlannedArm, q7: float) -> bool:
    return float(arm.ik.lower[6]) + WRIST_MARGIN <= q7 <= float(arm.ik.upper[6]) - WRIST_MARGIN


def turnable_grip_yaw(arm: PlannedArm, yaw: float, turn: float) -> float:
    """The opening yaw (`yaw` + k pi) that `arm.grip_yaw` picks, unless the wrist could not
    then turn the held object by `turn`: the other half turn, where that one can."""
    first = arm.grip_yaw(yaw)
    if not turn:
        return first
    cur = arm.opening_yaw()
    for c in (first, first + math.pi, first - math.pi):
        q7 = _wrist_after(arm, c - cur)
        if _wrist_ok(arm, q7) and _wrist_ok(arm, q7 - turn):
            return c
    return first


def turn_choices(arm: PlannedArm, turn: float) -> Iterator[float]:
    """Turns to try for a held object that should turn by `turn`: that one, else the nearest
    within `TURN_SLACK` of it the wrist's range allows (15-degree steps)."""
    for k in (0, 1, -1, 2, -2, 3, -3, 4, -4):
        t = turn + k * math.radians(15)
        if abs(t - turn) <= TURN_SLACK + 1e-9 and _wrist_ok(arm, _wrist_after(arm, t)):
            yield t


class HandMoves:
    """The motion builders, over one transit backend, cruise height and arm factory
    (`make_arm(q, width)`: a fresh planner from joints, for trying alternatives)."""

    def __init__(self, transit: TransitPlanner, travel_z: float,
                 make_arm: Callable[[np.ndarray, float], PlannedArm]) -> None:
        self.transit, self.travel_z, self.make_arm = transit, travel_z, make_arm

    # ------------------------------------------------------------------ grasps
    def top_grasp(self, arm: PlannedArm, plan: GraspPlan) -> Legs:
        """Pre-grasp above, straight down, close, lift to cruise height."""
        quat = down_quat(turnable_grip_yaw(arm, plan.opening_yaw, plan.turn))
        approach = self.transit.approach(arm, plan.pre_grasp, quat, plan.width)
        approach += arm.line(plan.grasp, speed=arm.approach_speed)
        close = arm.hold(0.15) + arm.hold(0.7, CLOSED)
        lift = arm.line(np.array([plan.grasp[0], plan.grasp[1], self.travel_z]),
                        speed=arm.approach_speed)
        lift += arm.hold(0.2)
        return approach, close, lift

    def side_grasp(self, arm: PlannedArm, plan: GraspPlan) -> Legs:
        """Above the pre-grasp with the hand as it is, down to it turning horizontal (a
        horizontal hand cannot reach high), straight in along the axis, close; lift 5 cm, or
        (overhead blocked) 1 cm, back out along the axis to the pre-grasp, then up. Of the
        hand's two rolls about the axis, the first the arm can follow (one of them needs a
        wrist flip on the way for many axes)."""
        assert plan.direction is not None
        q0, w0 = arm.q.copy(), arm.width
        err: Exception | None = None
        for roll in (1.0, -1.0):
            try:
                return self._side_grasp_roll(self.make_arm(q0, w0), plan, roll)
            except (ExpertError, UnreachableError) as exc:
                err = exc
        assert err is not None
        raise err

    def _side_grasp_roll(self, arm: PlannedArm, plan: GraspPlan, roll: float) -> Legs:
        assert plan.direction is not None
        d = plan.direction
        up = np.array([0.0, 0.0, 0.09])
        approach = self.transit.approach(arm, plan.pre_grasp + up, arm.pose()[1], plan.width)
        approach += arm.line(plan.pre_grasp, horizontal_quat(d, roll), speed=arm.approach_speed)
        approach += arm.line(plan.grasp, speed=0.1)
        close = arm.hold(0.15) + arm.hold(0.7, CLOSED)
        if plan.retreat:
            lift = arm.line(plan.grasp + np.array([0.0, 0.0, 0.01]), speed=0.05)
            lift += arm.line(plan.pre_grasp + np.array([0.0, 0.0, 0.01]), speed=0.1)
            lift += arm.line(plan.pre_grasp + np.array([0.0, 0.0, 0.05]), speed=0.1)
        else:
            lift = arm.line(plan.grasp + np.array([0.0, 0.0, 0.05]), speed=0.1)
        lift += arm.hold(0.2)
        return approach, close, lift

    # ------------------------------------------------------------------ releases
    def top_place(self, arm: PlannedArm, release: np.ndarray, width: float,
                  turn: float = 0.0, offset: np.ndarray | None = None,
                  around: np.ndarray | None = None) -> tuple[Legs, float, float]:
        """Carry at cruise height over the release (turning the hand by `turn` about the
        vertical on the way, or the nearest turn the wrist allows: `turn_choices`), lower,
        open a little, back up. `offset`: where the held object's axis is from the hand (a
        handle grasp): the hand goes so that the object is over the release. `around`: the
        points there the opening fingers must clear (`clearance.clear_release` raises the
        release until they do). Also returns the turn made and how far it was raised."""
        q0, w0 = arm.q.copy(), arm.width
        err: Exception | None = None
        for t in (turn_choices(arm, turn) if turn else iter((0.0,))):
            arm = self.make_arm(q0, w0)
            at = release.copy()
            if offset is not None:
                c, s = math.cos(t), math.sin(t)
                at[:2] -= np.array([c * offset[0] - s * offset[1], s * offset[0] + c * offset[1]])
            opening = quat_to_mat(turned(arm.pose()[1], t))[:, 1]
            at, raised = clear_release(at, opening, width, self._release_width(width),
                                       np.zeros((0, 3)) if around is None else around)
            try:
                return self._top_place(arm, at, width, t), t, raised
            except (ExpertError, UnreachableError) as exc:
                err = exc
        raise err or ExpertError(f"the wrist cannot turn the held object by "
                                 f"{math.degrees(turn):.0f} deg (nor within "
                                 f"{math.degrees(TURN_SLACK):.0f} deg of it)")

    @staticmethod
    def _release_width(width: float) -> float:
        """How far a top-down release opens from the held `width`."""
        return min(GRIPPER_OPEN, width + 0.025)

    def _top_place(self, arm: PlannedArm, release: np.ndarray, width: float,
                   turn: float) -> Legs:
        _, quat = arm.pose()
        carry = max(self.travel_z, float(release[2]) + 0.1)
        approach = self.transit.transport(arm, np.array([release[0], release[1], carry]),
                                          turned(quat, turn))
        approach += arm.line(release, speed=arm.approach_speed)
        approach += arm.hold(0.1)
        let_go = arm.hold(0.5, self._release_width(width))
        retreat = arm.line(np.array([release[0], release[1], carry]), speed=arm.approach_speed)
        retreat += arm.hold(0.5)
        return approach, let_go, retreat

    def side_held_place(self, arm: PlannedArm, release: np.ndarray, width: float) -> Legs:
        """An object held from the side onto an open top: carried 8 cm above the release (a
        horizontal hand cannot reach cruise height), lowered, let go, backed out along the
        hand's axis, then up."""
        p, quat = arm.pose()
        d = quat_to_mat(quat)[:, 2].copy()
        d[2] = 0.0
        d /= max(float(np.linalg.norm(d)), 1e-9)
        carry = max(float(p[2]), float(release[2]) + 0.08)
        approach = self.transit.transport(arm, np.array([release[0], release[1], carry]), quat)
        approach += arm.line(release, speed=arm.approach_speed)
        approach += arm.hold(0.1)
        let_go = arm.hold(0.5, min(GRIPPER_OPEN, width + 0.02))
        back = release - 0.12 * d
        retreat = arm.line(back, speed=0.1)
        retreat += arm.line(back + np.array([0.0, 0.0, 0.08]), speed=arm.approach_speed)
        retreat += arm.hold(0.5)
        return approach, let_go, retreat

    def insert(self, arm: PlannedArm, release: np.ndarray, d: np.ndarray,
               width: float) -> Legs:
        """A horizontal insertion under a roof: to 15 cm before the release point at the
        carrying height (hand turned to point along d), straight in, down onto the floor,
        let go, straight back out 16 cm, then up with the hand turned down again."""
        p, _ = arm.pose()
        lift_z = max(float(release[2]) + 0.005, float(p[2]))
        at = np.array([release[0], release[1], lift_z])
        pre = at - 0.15 * d
        q0, err = arm.q.copy(), None
        for roll in (1.0, -1.0):  # the hand's roll about d the arm can reach (see grasp)
            arm.q = q0.copy()
            try:
                approach = self.transit.transport(arm, pre, horizontal_quat(d, roll))
                break
            except (ExpertError, UnreachableError) as exc:
                err = exc
        else:
            assert err is not None
            raise err
        approach += arm.line(at, speed=0.1)
        approach += arm.line(release, speed=0.05)
        approach += arm.hold(0.1)
        let_go = arm.hold(0.5, min(GRIPPER_OPEN, width + 0.02))
        back = release + np.array([0.0, 0.0, 0.005]) - 0.16 * d
        retreat = arm.line(back, speed=0.1)
        retreat += arm.line(back + np.array([0.0, 0.0, 0.08]), down_quat(arm.opening_yaw()),
                            speed=arm.approach_speed)
        retreat += arm.hold(0.3)
        return approach, let_go, retreat
