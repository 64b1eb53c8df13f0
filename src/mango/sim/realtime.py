"""The embedded sim in real time: one physics thread, work handed to it, wall-clock pacing.

MuJoCo's data is not thread-safe, so everything that touches the physics (a reset, an
expert run, moving an entity) runs in the one thread that steps it: a caller submits the
work and waits for its answer. The node (`sim_node`) adds only the ROS side: what to publish
after each step and the services that submit work.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mango.sim.env import SimEnv
from mango.sim.expert.policy import ExpertPolicy
from mango.sim.runner import make_labels

GRIPPER = "gripper"  # the joint name a command uses for the gripper width
STALL_WARN = 0.5  # s one physics step may take before the loop says it stalled


@dataclass
class _Job:
    """Work for the physics thread; the caller waits on `done`."""

    run: Callable[[], Any]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


class Pacer:
    """Sleeps so sim time advances at `rtf` x wall time (0: as fast as possible). A loop
    that falls far behind (a slow machine) starts again from now instead of catching up in a
    burst."""

    def __init__(self, rtf: float, sim_time: float) -> None:
        self.rtf = rtf
        self.restart(sim_time)

    def restart(self, sim_time: float) -> None:
        self.wall0, self.sim0 = time.monotonic(), sim_time

    def pace(self, sim_time: float) -> None:
        if self.rtf <= 0:
            return
        ahead = (sim_time - self.sim0) / self.rtf - (time.monotonic() - self.wall0)
        if ahead > 0:
            time.sleep(ahead)
        elif ahead < -0.5:
            self.restart(sim_time)


def joint_targets(env: SimEnv, joint_names: Sequence[str], names: Sequence[str],
                  positions: Sequence[float]) -> tuple[np.ndarray, float | None]:
    """A joint command (names, positions) as the arm's full target and the gripper width:
    joints it does not name keep their measured position. ValueError says what is wrong."""
    if len(names) != len(positions):
        raise ValueError("name and position lengths differ")
    targets = dict(zip(names, positions, strict=True))
    unknown = set(targets) - {*joint_names, GRIPPER}
    if unknown:
        raise ValueError(f"unknown joints {sorted(unknown)}")
    q = env.joint_positions()
    for i, n in enumerate(joint_names):
        if n in targets:
            q[i] = targets[n]
    width = targets.get(GRIPPER)
    if not np.all(np.isfinite(q)) or (width is not None and not np.isfinite(width)):
        raise ValueError("non-finite target")
    return q, width


class RealTimeSim:
    """Steps `env` in a thread of its own, `period` s of sim time at a time, calling
    `publish()` after each step; `submit` runs work in that thread between steps."""

    def __init__(self, env: SimEnv, period: float, rtf: float, publish: Callable[[], None],
                 warn: Callable[[str], None], running: Callable[[], bool]) -> None:
        self.env, self.period, self.rtf = env, period, rtf
        self.publish, self.warn, self._running = publish, warn, running
        self._jobs: list[_Job] = []
        self._lock = threading.Lock()
        self._ended: str | None = None  # why the physics thread takes no more work
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="physics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def running(self) -> bool:
        return not self._stop.is_set() and self._running()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout=timeout)

    def submit(self, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        """Run `fn` in the physics thread and return its result (or raise its error).
        RuntimeError at once when that thread has ended (stopped, or died of an error it
        names), instead of waiting for work that will never run."""
        job = _Job(fn)
        with self._lock:
            if self._ended is not None:
                raise RuntimeError(self._ended)
            self._jobs.append(job)
        if not job.done.wait(timeout):
            raise TimeoutError("the physics thread did not finish the request")
        if job.error is not None:
            raise job.error
        return job.result

    def _loop(self) -> None:
        why = "the physics thread has stopped"
        try:
            self._steps()
        except Exception as exc:
            why = f"the physics thread died: {type(exc).__name__}: {exc}"
            if self.running():
                raise
        finally:
            with self._lock:  # work submitted meanwhile gets the reason, not a hang
                self._ended, jobs, self._jobs = why, self._jobs, []
            for job in jobs:
                job.error = RuntimeError(why)
                job.done.set()

    def _steps(self) -> None:
        pacer = Pacer(self.rtf, self.env.time)
        while self.running():
            with self._lock:
                jobs, self._jobs = self._jobs, []
            for job in jobs:
                try:
                    job.result = job.run()
                except BaseException as exc:  # handed to the waiting caller
                    job.error = exc
                job.done.set()
                pacer.restart(self.env.time)
            t0 = time.monotonic()
            self.env.step(None, duration=self.period)
            t1 = time.monotonic()
            self.publish()
            t2 = time.monotonic()
            pacer.pace(self.env.time)
            self._check_stall(t0, t1, t2, time.monotonic())

    def _check_stall(self, t0: float, t1: float, t2: float, t3: float) -> None:
        """Say loudly where the time went when one step took long: its joint states stop
        meanwhile, and the controller gives up on a simulation silent for 2 s."""
        if t3 - t0 > STALL_WARN:
            self.warn(f"physics loop stalled {t3 - t0:.2f} s at t={self.env.time:.2f} (step "
                      f"{t1 - t0:.2f} s, publishing {t2 - t1:.2f} s, pacing {t3 - t2:.2f} s): "
                      "no joint states meanwhile")

    def run_expert(self, expert: ExpertPolicy, seed: int, settle: float = 1.0
                   ) -> dict[str, Any]:
        """In the physics thread (through `submit`): the same loop as `mango sim run`, paced
        in real time and published after every action; the fault's ground-truth labels."""
        env = self.env
        state = env.world_state()
        pacer = Pacer(self.rtf, env.time)
        done_at: float | None = None
        end = state.t + env.scene.horizon
        while state.t < end and self.running():
            for row in expert.act(state, env.joint_positions()):
                env.step(row)
                self.publish()
                state = env.world_state()
                pacer.pace(env.time)
            if expert.done and done_at is None:
                done_at = state.t
            if done_at is not None and state.t >= done_at + settle:
                break
        return make_labels(env.scene, seed, expert)
