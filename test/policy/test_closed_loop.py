"""The closed loop vla_node's RunPolicy runs (`mango.policy.closed_loop`), without ROS: a
scripted arm that executes one action per look at it, a reference policy whose every chunk
lies on one known sequence of actions (action t = the reference at timestep t), and queries
whose latency is a number of those looks. So what the arm executed is checked action by
action, and idling is counted, with no clock in the test: the synchronous loop (threshold 0)
stops the arm for each query, the asynchronous one (#38) never does once it runs, and both
execute exactly the reference (each answer aligned by its observation's timestep)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from mango.control import load_robot
from mango.policy.action_queue import AGGREGATORS, ActionLimits, ActionQueue
from mango.policy.base import PolicyStep
from mango.policy.closed_loop import ClosedLoop, Outcome
from mango.policy.presets import Observation, PolicyError

ROBOT = load_robot("fr3")
HOME = np.array([*ROBOT.home, 0.04])
RATE = 15.0


def reference(t: int) -> np.ndarray:
    """Action of timestep t: joint 1 creeps along, well inside the joint and speed limits."""
    a = HOME.copy()
    a[0] += 0.002 * t
    return a


class Arm:
    """The `ChunkSink` port: executes one action of the current stream per `poll`."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.stream: list[np.ndarray] = []
        self.base = self.i = 0
        self.executed: dict[int, np.ndarray] = {}
        self.sends: list[tuple[int, int, bool]] = []  # (base, actions, replaced a running one)
        self.idle_polls = 0  # looks at the arm with nothing to execute, after the first send
        self.cancelled = False
        self.fail_at = fail_at

    @property
    def active(self) -> bool:
        return bool(self.stream)

    def send(self, actions: np.ndarray, base: int) -> None:
        self.sends.append((base, len(actions), self.active))
        self.stream, self.base, self.i = list(actions), base, 0

    def cancel(self) -> None:
        self.cancelled, self.stream = True, []

    def poll(self, queue: ActionQueue, now: float) -> str | None:
        if not self.stream:
            self.idle_polls += bool(self.sends)
            return None
        t = self.base + self.i
        if t == self.fail_at:
            self.stream = []
            return "chunk failed: a reflex"
        self.executed[t] = self.stream[self.i]
        self.i += 1
        queue.advance(t + 1, now)
        if self.i == len(self.stream):
            self.stream = []
        return None


class Reference:
    """A policy whose chunk from the observation of timestep t is reference(t..t+H-1); done
    once it has answered for timestep `until`."""

    def __init__(self, horizon: int = 10, until: int = 40, error_at: int | None = None) -> None:
        self.horizon, self.until, self.error_at = horizon, until, error_at
        self.done = False
        self.asked: list[int] = []

    def act(self, obs: Observation) -> PolicyStep:
        t = int(obs.t)
        if t == self.error_at:
            raise PolicyError("the server went away")
        self.asked.append(t)
        self.done = t >= self.until
        chunk = np.array([reference(t + i) for i in range(self.horizon)])
        return PolicyStep(chunk, chunk, 0.0)


def slow(looks: int) -> Callable:
    """Queries that answer after `looks` looks at them (the observation taken when asked)."""

    class Slow:
        def __init__(self, policy: Reference, observe: Callable[[], Observation],
                     obs_step: int) -> None:
            self.obs_step, self.step, self.error = obs_step, None, None
            self._left = looks
            try:
                self.step = policy.act(observe())
            except PolicyError as exc:
                self.error = str(exc)

        @property
        def ready(self) -> bool:
            self._left -= 1
            return self._left < 0

        def wait(self, timeout: float) -> None:
            pass

    return Slow


def run(threshold: float, latency: int, *, policy: Reference | None = None,
        arm: Arm | None = None, max_steps: int = 0, cancel_after: int | None = None
        ) -> tuple[Outcome, Arm, Reference]:
    policy, arm = policy or Reference(), arm or Arm()
    queue = ActionQueue(ActionLimits.for_robot(ROBOT, RATE), AGGREGATORS["weighted_average"],
                        threshold)
    looks = [0]

    def cancelled() -> bool:
        looks[0] += 1
        return cancel_after is not None and looks[0] > cancel_after

    observe = lambda: Observation({}, HOME[:7], 0.04, "go", t=queue.executed)  # noqa: E731
    loop = ClosedLoop(policy, queue, arm, observe, state=lambda: HOME, cancelled=cancelled,
                      threshold=threshold, max_steps=max_steps, ask=slow(latency),
                      sleep=lambda _s: None)
    return loop.run(), arm, policy


@pytest.mark.parametrize("threshold", [0.0, 0.5])
def test_the_arm_executes_exactly_the_reference(threshold: float) -> None:
    out, arm, policy = run(threshold, latency=3)
    assert out.status == "succeeded" and out.message == "the policy finished the task"
    assert sorted(arm.executed) == list(range(out.steps)) and out.steps >= policy.until
    for t, action in arm.executed.items():
        assert np.allclose(action, reference(t)), t
    assert out.chunks == len(policy.asked)


def test_synchronous_stops_for_each_answer_asynchronous_never_does() -> None:
    sync, sync_arm, sync_policy = run(0.0, latency=3)
    assert all(not replaced for _, _, replaced in sync_arm.sends)  # each from rest
    assert sync_policy.asked == list(range(0, sync.steps, 10))  # asked when the queue ran dry
    assert sync_arm.idle_polls >= 3 * (sync.chunks - 1)  # the latency, every chunk
    asynchronous, arm, policy = run(0.5, latency=3)
    assert asynchronous.status == "succeeded"
    assert arm.idle_polls == 0  # the next chunk always came before the queue ran dry
    assert any(replaced for _, _, replaced in arm.sends)  # a running stream was replaced
    assert policy.asked[1] < 10  # asked while the first chunk still ran


def test_a_latency_the_queue_cannot_cover_holds_the_arm_and_still_lands_on_the_reference(
        ) -> None:
    out, arm, _ = run(0.2, latency=12)  # asks with 2 actions left, answers 12 looks later
    assert arm.idle_polls > 0
    assert all(np.allclose(a, reference(t)) for t, a in arm.executed.items())
    assert out.status == "succeeded"


def test_max_steps_ends_the_run_there() -> None:
    out, arm, _ = run(0.5, latency=2, max_steps=23)
    assert (out.status, out.steps, out.message) == ("max_steps", 23, "reached max_steps (23)")
    assert max(arm.executed) == 22


def test_a_cancel_stops_the_stream() -> None:
    out, arm, _ = run(0.5, latency=2, cancel_after=8)
    assert out.status == "cancelled" and out.message == "cancelled during a chunk"
    assert arm.cancelled and out.steps < 10


@pytest.mark.parametrize(("policy", "arm", "says"), [
    (Reference(error_at=10), Arm(), "policy: the server went away"),
    (Reference(), Arm(fail_at=7), "chunk failed: a reflex"),
])
def test_a_failure_ends_the_run_with_its_reason(policy: Reference, arm: Arm, says: str) -> None:
    out, _, _ = run(0.0, latency=1, policy=policy, arm=arm)
    assert (out.status, out.message) == ("failed", says)
