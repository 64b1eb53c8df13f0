"""The planned arm and the chunk stream: how skills turn into rows of joint targets.

A skill is a generator that yields lists of rows (7 joint targets + gripper width) and the
`SYNC` token; after `SYNC` the rows planned so far execute and the skill resumes with a fresh
world state (its `SkillContext.state`). `PlannedArm` extends the plan from its last planned
joint position with straight Cartesian lines (solved by IK) and holds; `ChunkStream` cuts a
skill's rows into the action chunks a policy returns.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np

from mango.geometry import axis_yaw, nearest_angle, quat_to_mat, rotation_angle, slerp
from mango.ik import IKSolution
from mango.sim.build import CONTROL_HZ

log = logging.getLogger(__name__)

DT = 1.0 / CONTROL_HZ
OPEN = 0.08
CLOSED = 0.0
FINGERTIP = 0.008  # fingertips (pad bottoms) below the hand centre (the TCP)
SYNC = object()  # generator token: let queued rows execute, then resume with a fresh state


class ExpertError(RuntimeError):
    """The expert could not continue (e.g. an unreachable pose)."""


class ArmIK(Protocol):
    """What planning needs of an IK: the sim's `IKSolver` and the primitives' world-frame
    one alike. `max_jump` None keeps the solver's own branch cap."""

    lower: np.ndarray
    upper: np.ndarray

    def fk(self, q: Sequence[float]) -> tuple[np.ndarray, np.ndarray]: ...

    def solve(self, pos: Sequence[float], quat: Sequence[float],
              seed: Sequence[float] | None = None, *,
              max_jump: float | None = None) -> IKSolution: ...


class PlannedArm:
    """The arm as planned so far (last joint targets and width) and the moves extending it."""

    def __init__(
        self,
        ik: ArmIK,
        q: np.ndarray,
        width: float,
        *,
        travel_speed: float,
        approach_speed: float,
        travel_z: float,
    ) -> None:
        self.ik = ik
        self.q = q
        self.width = width
        self.travel_speed = travel_speed
        self.approach_speed = approach_speed
        self.travel_z = travel_z  # cruise height (see `motions.travel_height`)

    def pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Hand centre position and quaternion [w, x, y, z] at the planned joints."""
        return self.ik.fk(self.q)

    def opening_yaw(self) -> float:
        """Direction (yaw) in which the fingers open now (the hand site's y axis)."""
        return axis_yaw(self.pose()[1], 1)

    def grip_yaw(self, a: float, period: float = math.pi, margin: float = 0.5) -> float:
        """The opening yaw a + k*period needing the least wrist turn whose last joint stays
        `margin` inside its range (the nearest one if none does).

        A symmetric grip is the same every half turn, but the wrist is not: the FR3's joint 7
        sits at pi/4 of a +-3.02 rad range in the ready pose, so always turning the short way
        can run it into a limit a few grasps later.
        """
        cur = self.opening_yaw()
        # joint 7 turns the hand about its own z axis: a yaw change about world z moves the
        # joint by that change times the axis's vertical component
        hz = float(quat_to_mat(self.pose()[1])[2, 2])
        q7, lo, hi = float(self.q[6]), float(self.ik.lower[6]), float(self.ik.upper[6])
        near = nearest_angle(a, cur, period)
        cands = sorted((near + k * period for k in range(-2, 3)), key=lambda c: abs(c - cur))
        for c in cands:
            if lo + margin <= q7 + (c - cur) * hz <= hi - margin:
                return c
        return near

    def line(
        self,
        pos: np.ndarray,
        quat: np.ndarray | None = None,
        *,
        width: float | None = None,
        speed: float | None = None,
        open_at: int | None = None,
    ) -> list[np.ndarray]:
        """Rows moving the hand centre along a straight line (and slerp) to pos/quat.

        `open_at`: from this row on the gripper is fully open (a drop on the way).
        """
        p0, q0 = self.pose()
        quat = q0 if quat is None else np.asarray(quat, float)
        if np.dot(quat, q0) < 0:
            quat = -quat
        dist = float(np.linalg.norm(pos - p0))
        ang = rotation_angle(quat, q0)
        v = speed or self.travel_speed
        n = max(2, math.ceil(dist / (v * DT)), math.ceil(ang / (1.2 * DT)))
        w0, w1 = self.width, self.width if width is None else width
        rows: list[np.ndarray] = []
        q = self.q
        for i in range(1, n + 1):
            f = i / n
            s = 0.5 - 0.5 * math.cos(math.pi * f)  # ease in/out
            p = p0 + s * (pos - p0)
            qi = slerp(q0, quat, s)
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
        self.q, self.width = q, rows[-1][7]
        return rows

    def hold(self, seconds: float, width: float | None = None) -> list[np.ndarray]:
        """Rows keeping the joints still for `seconds` while the width ramps to `width`."""
        n = max(1, round(seconds / DT))
        w0 = self.width
        w1 = w0 if width is None else width
        rows = [np.r_[self.q, w0 + min(1.0, (i + 1) / max(1, n - 2)) * (w1 - w0)]
                for i in range(n)]
        self.width = w1
        return rows

    def reach_z(self, xy: np.ndarray, quat: np.ndarray | None, lo: float, hi: float) -> float:
        """The highest hand height in [lo, hi] the arm reaches over `xy` with `quat` (the
        current orientation if None), to 5 mm; `hi` when even `lo` is out of reach, so the
        move that needs it fails with the IK's own reason.

        Cruise and carry heights are chosen for clearance, and far out (a cabinet's top at
        the table's edge) the FR3 cannot hold its hand down that high; lower is better
        than nothing as long as it clears `lo`."""
        quat = self.pose()[1] if quat is None else np.asarray(quat, float)

        def ok(z: float) -> bool:
            # reachable at all: the branch cap is for paths, and this asks from afar
            return self.ik.solve(np.array([xy[0], xy[1], z]), quat, self.q,
                                 max_jump=math.inf).ok

        if hi <= lo or ok(hi):
            return hi
        if not ok(lo):
            return hi
        while hi - lo > 0.005:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if ok(mid) else (lo, mid)
        return lo

    def feasible(self, moves: Callable[[], Iterator[object]]) -> bool:
        """Whether the moves plan without an `ExpertError`, planned on trial: the arm is as
        before afterwards. A choice between grips checks its whole path, not its end."""
        q, width = self.q, self.width
        try:
            for _ in moves():
                pass
            return True
        except ExpertError:
            return False
        finally:
            self.q, self.width = q, width

    def travel_to(self, above: np.ndarray, quat: np.ndarray | None = None,
                  **kw: object) -> Iterator[list[np.ndarray]]:
        """Up to travel height (what the arm reaches of it over `above`), across (rotating
        on the way), ending above `above`."""
        p, _ = self.pose()
        zt = self.reach_z(above[:2], quat, float(above[2]),
                          max(self.travel_z, float(above[2])))
        if p[2] < zt - 0.01:
            yield self.line(np.array([p[0], p[1], zt]), speed=self.approach_speed)
        yield self.line(np.array([above[0], above[1], zt]), quat, **kw)  # type: ignore[arg-type]
        if zt > above[2] + 0.005:
            yield self.line(above, speed=self.approach_speed)


class ChunkStream:
    """Cuts a skill's rows into action chunks of at most `size` rows.

    A chunk ends early at a `SYNC` so that its rows execute before the skill looks at the
    world again. When the skill ends (or raises `ExpertError`, kept in `error`) the stream is
    `done` and repeats its last row.
    """

    def __init__(self, skill: Iterator[object], size: int, first_row: np.ndarray) -> None:
        self._skill = skill
        self.size = size
        self.last_row = first_row
        self.done = False
        self.error: str | None = None
        self._queue: deque[np.ndarray] = deque()
        self._pending_sync = False

    def next_chunk(self) -> np.ndarray:
        rows: list[np.ndarray] = []
        while len(rows) < self.size and not self.done:
            if self._queue:
                rows.append(self._queue.popleft())
                continue
            if self._pending_sync:
                if rows:
                    break  # let these rows run before the plan looks at the world again
                self._pending_sync = False
            try:
                item = next(self._skill)
            except StopIteration:
                self.done = True
                break
            except ExpertError as exc:
                self.error = str(exc)
                log.warning("expert stopped: %s", exc)
                self.done = True
                break
            if item is SYNC:
                self._pending_sync = True
            else:
                self._queue.extend(item)  # type: ignore[call-overload]
        if not rows:
            rows = [self.last_row]
        self.last_row = rows[-1]
        return np.asarray(rows)

