"""The sim in real time without ROS: work runs in the physics thread between steps, a slow
step is said with where its time went, joint commands are checked before they reach the arm."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from mango.sim.env import SimEnv
from mango.sim.realtime import GRIPPER, RealTimeSim, joint_targets
from mango.sim.scene import FR3_JOINTS


@pytest.fixture(scope="module")
def env() -> Iterator[SimEnv]:
    e = SimEnv("stove_moka", seed=1, cameras=())
    yield e
    e.close()


def _run(env: SimEnv, publish=lambda: None, rtf: float = 0.0):
    warnings: list[str] = []
    rt = RealTimeSim(env, 0.01, rtf, publish, warnings.append, lambda: True)
    rt.start()
    return rt, warnings


def test_work_runs_in_the_physics_thread_between_steps(env: SimEnv) -> None:
    rt, _ = _run(env)
    try:
        t0 = rt.submit(lambda: env.time, timeout=10)
        assert rt.submit(threading.current_thread, timeout=10).name == "physics"
        assert rt.submit(lambda: env.time, timeout=10) > t0  # the physics goes on between
        with pytest.raises(KeyError, match="nowhere"):
            rt.submit(lambda: {}["nowhere"], timeout=10)  # the work's error, to the caller
    finally:
        rt.stop()
    assert not rt._thread.is_alive()


def test_a_slow_step_is_said_once_with_where_the_time_went(env: SimEnv) -> None:
    slow = threading.Event()

    def publish() -> None:
        if slow.is_set():
            slow.clear()
            time.sleep(0.7)

    rt, warnings = _run(env, publish)
    try:
        slow.set()
        deadline = time.monotonic() + 10
        while not warnings and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # later, normal steps say nothing
    finally:
        rt.stop()
    assert len(warnings) == 1, warnings
    assert "physics loop stalled" in warnings[0] and "publishing 0.7" in warnings[0]


def test_a_joint_command_is_checked_and_completed_from_the_measured_arm(env: SimEnv) -> None:
    names = list(FR3_JOINTS)
    q0 = env.joint_positions()
    q, width = joint_targets(env, names, [names[2], GRIPPER], [0.3, 0.04])
    assert q[2] == 0.3 and width == 0.04
    assert np.array_equal(np.delete(q, 2), np.delete(q0, 2))  # the others stay where they are
    assert joint_targets(env, names, names[:1], [0.1])[1] is None  # no gripper command
    with pytest.raises(ValueError, match="unknown joints"):
        joint_targets(env, names, ["elbow"], [0.1])
    with pytest.raises(ValueError, match="lengths differ"):
        joint_targets(env, names, names[:2], [0.1])
    for bad in ([names[0]], [GRIPPER]):
        with pytest.raises(ValueError, match="non-finite"):
            joint_targets(env, names, bad, [float("nan")])


def test_work_for_an_ended_physics_thread_fails_at_once_with_the_reason(env: SimEnv) -> None:
    """A publisher that raises kills the physics thread (loudly); what is submitted then, or
    was waiting, gets that reason at once instead of hanging until its timeout."""
    broken = threading.Event()

    def publish() -> None:
        if broken.is_set():
            raise OSError("the middleware is gone")

    warnings: list[str] = []
    rt = RealTimeSim(env, 0.01, 1.0, publish, warnings.append, lambda: True)
    hook, errors = threading.excepthook, []
    threading.excepthook = errors.append  # the thread's traceback, kept out of the output
    try:
        rt.start()
        rt.submit(lambda: None, timeout=10)
        broken.set()
        rt._thread.join(10)
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="died: OSError: the middleware is gone"):
            rt.submit(lambda: None)  # no timeout given: would wait for ever before
        # at once (microseconds); 10 s only guards against the old wait for ever, which a
        # loaded machine cannot be mistaken for
        assert time.monotonic() - start < 10.0
    finally:
        threading.excepthook = hook
        rt.stop()
    assert [type(e.exc_value) for e in errors] == [OSError]  # the death itself is not hidden
    rt2 = RealTimeSim(env, 0.01, 0.0, lambda: None, warnings.append, lambda: True)
    rt2.start()
    rt2.stop()
    with pytest.raises(RuntimeError, match="has stopped"):
        rt2.submit(lambda: None)
