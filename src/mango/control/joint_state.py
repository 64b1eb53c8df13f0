"""The arm's measured state, read from JointState-shaped data (names, positions, stamp).

Both backends see the arm through the same reader: the latest arm joints in the robot's order
and the gripper width (the sum of the two finger joints), with when it arrived and the stamp
it carried (from sim_node, the simulator's time).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

FINGERS = ("fr3_finger_joint1", "fr3_finger_joint2")
STALE_AFTER = 2.0  # s without a joint state: the arm's position is no longer known
NO_RECENT_STATE = f"no joint state received in the last {STALE_AFTER:g} s"


@dataclass(frozen=True)
class Measured:
    q: np.ndarray
    width: float | None
    t: float  # monotonic time of reception
    stamp: float  # the message's header stamp (s); from sim_node, the simulator's time
    velocity: np.ndarray | None = None  # arm joint velocities, when the message carries them


class JointStateReader:
    """Latest measured arm joints (robot order) and gripper width."""

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = tuple(joint_names)
        self._latest: Measured | None = None
        self._index: dict[tuple[str, ...], tuple[list[int], list[int]]] = {}

    def update(self, names: Sequence[str], positions: Sequence[float], stamp: float,
               received: float | None = None, velocities: Sequence[float] = ()) -> None:
        """Take one joint state; one without every arm joint (a gripper-only one) is ignored.
        Velocities count only when there is one per name (JointState leaves them empty when
        unknown: sim_node's)."""
        key = tuple(names)
        idx = self._index.get(key)
        if idx is None:
            try:
                arm = [key.index(n) for n in self.joint_names]
            except ValueError:
                return
            idx = (arm, [key.index(f) for f in FINGERS if f in key])
            self._index[key] = idx
        pos = np.asarray(positions, float)
        width = float(np.sum(pos[idx[1]])) if len(idx[1]) == 2 else None
        t = time.monotonic() if received is None else received
        vel = (np.asarray(velocities, float)[idx[0]] if len(velocities) == len(key)
               else None)
        self._latest = Measured(pos[idx[0]], width, t, stamp, vel)

    def measured(self) -> Measured | None:
        return self._latest
