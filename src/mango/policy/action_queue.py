"""The action queue of an asynchronous policy run: when to ask for the next chunk, where a
late chunk fits, how overlapping chunks merge, and what the robot is allowed to receive.

Conventions after LeRobot's async inference (`lerobot/async_inference/robot_client.py`,
`configs.py`): an observation is sent once the unexecuted part of the queue falls to
`threshold` of the chunk length (`chunk_size_threshold`; 0 is the synchronous loop); every
action carries a timestep, an answer's actions for timesteps already executed are dropped,
and where a new action meets a queued one of the same timestep the two are merged by an
aggregator (`AGGREGATE_FUNCTIONS`: `weighted_average`, `latest_only`, `average`,
`conservative`), written here as data — the old action's weight.

Timesteps count actions from the start of the run: an observation taken after `s` actions
were executed has timestep `s`, and row `k` of the chunk computed from it is the action for
timestep `s + k` (the next one to execute is row 0; LeRobot stamps row 0 with the last
executed timestep instead and drops it).

Guards at the edge: every queued action is clipped to the robot's joint position limits, its
gripper range, and a step from the action before it no faster than `velocity_fraction` of the
joint velocity limits at the policy rate; a chunk that needed more than half of its actions
clipped is flagged. A queue that runs dry before the next answer leaves the arm holding its
last target (safe idle); the time it waited is counted and the late answer says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mango.control.robot import RobotConfig
from mango.errors import InputError

ACTION_DIM = 8  # 7 joint targets + gripper width
CLIP_WARN_FRACTION = 0.5  # a chunk with more of its actions clipped than this is flagged
VELOCITY_FRACTION = 0.9  # as `control.trajectory.chunk_to_trajectory`: below the hard limit


@dataclass(frozen=True)
class Aggregator:
    """Merges a queued action (`old`) with a new one for the same timestep."""

    name: str
    old_weight: float

    def merge(self, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        return self.old_weight * old + (1.0 - self.old_weight) * new


# LeRobot's AGGREGATE_FUNCTIONS (async_inference/configs.py), as the weight of the old action
AGGREGATORS: dict[str, Aggregator] = {a.name: a for a in (
    Aggregator("weighted_average", 0.3), Aggregator("latest_only", 0.0),
    Aggregator("average", 0.5), Aggregator("conservative", 0.7))}


def aggregator(name: str) -> Aggregator:
    """The aggregator called `name`, or an `InputError` listing the known ones."""
    found = AGGREGATORS.get(name)
    if found is None:
        raise InputError(f"unknown aggregator {name!r} (known: {', '.join(AGGREGATORS)})",
                         field="aggregate")
    return found


def check_threshold(value: float) -> float:
    """A chunk threshold in [0, 1], or an `InputError`."""
    if not 0.0 <= value <= 1.0:
        raise InputError(f"the chunk threshold must be between 0 and 1, got {value:g}",
                         field="chunk_threshold")
    return float(value)


@dataclass(frozen=True)
class ActionLimits:
    """What an action may ask of the arm: joint position range, the step one action may
    move each joint at the policy rate, and the gripper's width range."""

    lower: np.ndarray
    upper: np.ndarray
    max_step: np.ndarray  # rad per action
    gripper_max: float

    @classmethod
    def for_robot(cls, robot: RobotConfig, rate_hz: float,
                  velocity_fraction: float = VELOCITY_FRACTION) -> ActionLimits:
        if rate_hz <= 0:
            raise ValueError("the policy rate must be positive")
        return cls(robot.lower, robot.upper, velocity_fraction * robot.vmax / rate_hz,
                   robot.gripper_max_width)

    def clip(self, action: np.ndarray, previous: np.ndarray) -> np.ndarray:
        """`action` within the position range, one step from `previous` (joints only) and
        the gripper range."""
        q = np.clip(action[:7], self.lower, self.upper)
        q = np.clip(q, previous[:7] - self.max_step, previous[:7] + self.max_step)
        q = np.clip(q, self.lower, self.upper)
        return np.concatenate([q, [min(max(float(action[7]), 0.0), self.gripper_max)]])


@dataclass(frozen=True)
class MergeReport:
    """What one answer did to the queue."""

    obs_step: int
    received: int  # actions in the answer
    stale: int  # for timesteps already executed: dropped
    merged: int  # overlapped a queued action and were aggregated with it
    appended: int
    clipped: int  # of the kept actions, how many the limits changed
    late: bool  # the queue ran dry before it came: the arm held and waited
    idle: float  # how long it waited (s)

    @property
    def kept(self) -> int:
        return self.merged + self.appended

    @property
    def clip_warning(self) -> bool:
        return self.kept > 0 and self.clipped > CLIP_WARN_FRACTION * self.kept

    def describe(self) -> str:
        parts = [f"chunk from step {self.obs_step}: {self.kept} of {self.received} actions "
                 f"kept ({self.stale} already executed, {self.merged} merged)"]
        if self.clipped:
            parts.append(f"{self.clipped} clipped to the joint limits")
        if self.late:
            parts.append(f"late: the arm held for {self.idle:.3f} s")
        return ", ".join(parts)


@dataclass
class ActionQueue:
    """Timestep-stamped actions still to execute, and the run's counters."""

    limits: ActionLimits
    merge_rule: Aggregator = AGGREGATORS["weighted_average"]
    threshold: float = 0.5
    executed: int = 0  # actions executed so far = the timestep of the next one
    chunk_size: int = 0  # the longest chunk received (LeRobot's `action_chunk_size`)
    last_action: np.ndarray | None = None  # the last action sent for execution
    idle_total: float = 0.0
    clipped_total: int = 0
    _actions: list[np.ndarray] = field(default_factory=list)  # timesteps executed, ...
    _dry_since: float | None = None

    def __post_init__(self) -> None:
        check_threshold(self.threshold)

    @property
    def depth(self) -> int:
        """Actions queued and not yet executed."""
        return len(self._actions)

    def pending(self) -> np.ndarray:
        """The queued actions, next first (depth x 8)."""
        return np.array(self._actions).reshape(-1, ACTION_DIM)

    def should_request(self) -> bool:
        """Time to send the next observation: the queue has fallen to `threshold` of a
        chunk (always when it is empty)."""
        if not self._actions:
            return True
        return self.chunk_size > 0 and len(self._actions) / self.chunk_size <= self.threshold

    def advance(self, executed: int, now: float) -> None:
        """The arm has executed the actions up to timestep `executed` (exclusive); a queue
        left empty starts counting idle time at `now`."""
        n = min(max(executed - self.executed, 0), len(self._actions))
        if n:
            self.last_action = self._actions[n - 1]
            del self._actions[:n]
            self.executed += n
        if not self._actions and self._dry_since is None:
            self._dry_since = now

    def add_chunk(self, chunk: np.ndarray | Sequence[Sequence[float]], obs_step: int,
                  current: np.ndarray, now: float) -> MergeReport:
        """Merge the chunk computed from the observation of timestep `obs_step` into the
        queue; `current` is the arm's state (8-D) when nothing was executed yet. Clipping
        runs over the merged queue from the last action sent."""
        a = np.asarray(chunk, float)
        if a.ndim != 2 or a.shape[1] != ACTION_DIM or len(a) == 0:
            raise ValueError(f"an action chunk must be H x {ACTION_DIM} with H > 0, "
                             f"got {a.shape}")
        if obs_step > self.executed:
            raise ValueError(f"an observation of timestep {obs_step} cannot come from the "
                             f"future (executed {self.executed})")
        self.chunk_size = max(self.chunk_size, len(a))
        stale = min(self.executed - obs_step, len(a))
        fresh = a[stale:]
        merged = min(len(fresh), len(self._actions))
        for i in range(merged):
            self._actions[i] = self.merge_rule.merge(self._actions[i], fresh[i])
        self._actions.extend(fresh[merged:].copy())
        clipped = self._clip(current)
        self.clipped_total += clipped
        late, idle = self._dry_since is not None, 0.0
        if self._dry_since is not None and self._actions:
            idle = max(0.0, now - self._dry_since)
            self.idle_total += idle
            self._dry_since = None
        return MergeReport(obs_step, len(a), stale, merged, len(fresh) - merged, clipped,
                           late and self.executed > 0, idle if self.executed > 0 else 0.0)

    def _clip(self, current: np.ndarray) -> int:
        prev = np.asarray(current if self.last_action is None else self.last_action, float)
        count = 0
        for i, act in enumerate(self._actions):
            safe = self.limits.clip(act, prev)
            if not np.allclose(safe, act, rtol=0.0, atol=1e-12):
                count += 1
                self._actions[i] = safe
            prev = safe
        return count
