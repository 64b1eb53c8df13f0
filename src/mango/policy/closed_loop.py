"""One policy episode in closed loop, synchronous or asynchronous, behind ports.

The loop `vla_node`'s RunPolicy runs (issue #38), without ROS: ask the policy for a chunk on
its own thread (`Inference`), queue the answer (`ActionQueue`: timestep alignment, merging,
joint-limit guards), play the whole queue as one stream of joint targets that replaces the
running one (`ChunkSink`: the node's ExecuteChunk goals), and ask again when the unexecuted
queue falls to the threshold (0: only when the arm has stopped: the synchronous loop). The
run ends when the policy is done and the queue played, at `max_steps`, on a cancel (the
stream is cancelled: the arm holds) or on a failure, always with a status and a reason.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from mango.errors import InputError
from mango.policy.action_queue import ActionQueue, MergeReport
from mango.policy.base import Policy, PolicyStep
from mango.policy.presets import Observation, PolicyError

POLL = 0.002  # s between looks at the stream in flight and the policy's answer
Status = Literal["succeeded", "max_steps", "cancelled", "failed"]


class ChunkSink(Protocol):
    """Where the queue's actions go: one stream the robot plays, replaced by a newer one."""

    @property
    def active(self) -> bool:
        """A stream is playing (or being accepted)."""

    def send(self, actions: np.ndarray, base: int) -> None:
        """Play `actions` (N x 8), the first of which is timestep `base`, replacing any."""

    def cancel(self) -> None:
        """Stop the stream in flight: the arm holds."""

    def poll(self, queue: ActionQueue, now: float) -> str | None:
        """Advance `queue` by what the stream executed; why the run must end, or None."""


@dataclass(frozen=True)
class Progress:
    """What the run's feedback says (RunPolicy feedback, diagnostics)."""

    executed: int
    chunks: int
    latency: float  # s, the last answer's inference time
    depth: int
    idle: float  # s the queue stood empty waiting for an answer, in all
    clipped: int
    clip_warning: bool
    late: bool


@dataclass(frozen=True)
class Outcome:
    status: Status
    message: str
    steps: int
    chunks: int


class Inference:
    """One observation -> chunk query on its own thread: the arm keeps moving meanwhile."""

    def __init__(self, policy: Policy, observe: Callable[[], Observation],
                 obs_step: int) -> None:
        self.obs_step = obs_step  # actions executed when the observation was taken
        self.step: PolicyStep | None = None
        self.error: str | None = None
        self._done = threading.Event()
        threading.Thread(target=self._work, args=(policy, observe), daemon=True).start()

    def _work(self, policy: Policy, observe: Callable[[], Observation]) -> None:
        try:
            self.step = policy.act(observe())
        except (PolicyError, InputError) as exc:
            self.error = str(exc)
        except Exception as exc:  # a backend's bug ends the run with its name, not silently
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._done.set()

    @property
    def ready(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float) -> None:
        self._done.wait(timeout)


@dataclass
class ClosedLoop:
    """The ports and settings of one run; `run()` plays it to its end."""

    policy: Policy
    queue: ActionQueue
    sink: ChunkSink
    observe: Callable[[], Observation]  # the latest observation (may wait for sensors)
    state: Callable[[], np.ndarray]  # joints + gripper width now: the first chunk's guard
    cancelled: Callable[[], bool]
    threshold: float  # of a chunk; 0 = synchronous
    max_steps: int = 0  # 0 = no limit
    steps_per_chunk: int = 0  # 0 = the whole chunk
    answer_timeout: float = 40.0  # s an in-flight answer is waited for at the end
    # how a query is made: on its own thread (a test gives one with a scripted latency)
    ask: Callable[[Policy, Callable[[], Observation], int], Inference] = Inference
    on_progress: Callable[[Progress], None] = lambda _p: None
    on_chunk: Callable[[int, float, MergeReport], None] = lambda _c, _l, _r: None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        self.chunks, self.latency = 0, 0.0
        self._report: MergeReport | None = None
        self._asking: Inference | None = None

    def progress(self) -> Progress:
        q, r = self.queue, self._report
        return Progress(q.executed, self.chunks, self.latency, q.depth, q.idle_total,
                        q.clipped_total, bool(r and r.clip_warning), bool(r and r.late))

    def _end(self, status: Status, message: str) -> Outcome:
        if self._asking is not None:  # the next run must not reset the policy under it
            self._asking.wait(self.answer_timeout)
        return Outcome(status, message, self.queue.executed, self.chunks)

    def run(self) -> Outcome:
        queue, sink = self.queue, self.sink
        max_steps = self.max_steps or 10**9
        while True:
            now = self.clock()
            if self.cancelled():
                active = sink.active
                sink.cancel()
                return self._end("cancelled", "cancelled during a chunk" if active
                                 else "cancelled")
            ran = queue.executed
            why = sink.poll(queue, now)
            if why is not None:
                return self._end("failed", why)
            if queue.executed != ran and not sink.active:
                self.on_progress(self.progress())
            asking = self._asking
            if asking is not None and asking.ready:
                if asking.error is not None:
                    return self._end("failed", f"policy: {asking.error}")
                assert asking.step is not None
                self.chunks += 1
                self.latency = asking.step.latency
                rows = min(self.steps_per_chunk or len(asking.step.chunk),
                           max_steps - asking.obs_step)
                self._report = queue.add_chunk(asking.step.chunk[:rows], asking.obs_step,
                                               self.state(), now)
                self._asking = None
                self.on_chunk(self.chunks, self.latency, self._report)
                if self._report.kept:  # one stream for the whole queue: it replaces the last
                    sink.send(queue.pending(), queue.executed)
                self.on_progress(self.progress())
            finished = self.chunks > 0 and self.policy.done
            if (self._asking is None and not finished
                    and queue.executed + queue.depth < max_steps and queue.should_request()
                    and (self.threshold > 0 or not sink.active)):
                self._asking = self.ask(self.policy, self.observe, queue.executed)
            if self._asking is None and not sink.active and queue.depth == 0:
                if finished:
                    return self._end("succeeded", "the policy finished the task")
                if queue.executed >= max_steps:
                    return self._end("max_steps", f"reached max_steps ({self.max_steps})")
            self.sleep(POLL)
