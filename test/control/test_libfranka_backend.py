"""The libfranka backend's rules on a robot port that misbehaves on cue: what franky-sim cannot
do (it has no reflexes and never reports an error), the goal's outcome is still libfranka's word.
The motion itself is measured through libfranka in test_libfranka.py."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np
import pytest

from mango.control import JointTrajectory, load_robot
from mango.control.backends.libfranka import (
    ArmError,
    ArmState,
    LibfrankaBackend,
    LibfrankaSettings,
    StateStream,
)
from mango.control.goals import GoalRun
from mango.control.gripper import GripperCommand
from mango.control.joint_state import JointStateReader

ROBOT = load_robot("fr3")


@dataclass
class Arm:
    """A robot whose motion fails with `motion_error` and that reports `errors` until
    recovered; time runs at 1 kHz while it is read."""

    address: str = "127.0.0.9"
    motion_error: str = ""
    errors: bool = False
    t: float = 0.0
    follows: list[int] = field(default_factory=list)
    recovered: int = 0
    stops: int = 0

    def read(self, with_width: bool) -> ArmState:
        self.t += 0.001
        q = np.asarray(ROBOT.home, float)
        return ArmState(q, np.zeros(7), self.t, 0.04 if with_width else None, q, np.zeros(7))

    def follow(self, waypoints, dynamics_factor: float) -> None:
        self.follows.append(len(waypoints))

    def finished(self) -> bool:
        if self.motion_error:
            raise ArmError(self.motion_error)
        return True

    def stop(self) -> None:
        self.stops += 1

    def has_errors(self) -> bool:
        return self.errors

    def recover(self) -> None:
        self.recovered += 1
        self.errors = False

    def grip(self, command: GripperCommand):
        raise ArmError("no hand here")

    def reconnect(self) -> None:
        pass


def _backend(arm: Arm, **settings: object) -> LibfrankaBackend:
    stream = StateStream(arm, ROBOT, JointStateReader(ROBOT.joint_names), 500.0, time.time)
    stream.start()
    deadline = time.monotonic() + 5.0
    while stream.reader.measured() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    return LibfrankaBackend(ROBOT, 0.01, stream, LibfrankaSettings(**settings))


def _traj() -> JointTrajectory:
    q = np.asarray(ROBOT.home, float)
    return JointTrajectory(list(ROBOT.joint_names), np.array([0.1, 0.2]), np.stack([q, q]))


def _run(backend: LibfrankaBackend):
    try:
        return backend.execute(_traj(), GoalRun(object()), lambda _i, _e: None)
    finally:
        backend.stream.close()


def test_a_reflex_fails_the_goal_with_libfrankas_text_and_the_arm_is_stopped() -> None:
    arm = Arm(motion_error="libfranka: Move command aborted: motion aborted by reflex! "
                           "[\"cartesian_reflex\"]")
    out = _run(_backend(arm))
    assert not out.ok and not out.stopped
    assert out.message == f"libfranka: {arm.motion_error}" and arm.stops == 1


def test_errors_present_refuse_the_goal_unless_recovery_is_asked_for() -> None:
    arm = Arm(errors=True)
    out = _run(_backend(arm))
    assert not out.ok and "has errors: clear them" in out.message
    assert arm.follows == [] and arm.recovered == 0  # nothing sent to a robot in error
    arm = Arm(errors=True)
    out = _run(_backend(arm, recover=True))
    assert out.ok and arm.recovered == 1 and arm.follows == [1]  # still points: one waypoint


@pytest.mark.parametrize("reason,stops", [("cancelled", 1), ("preempted by a new goal", 0)])
def test_a_preempted_motion_is_left_to_its_successor_and_a_cancelled_one_stopped(
        reason: str, stops: int) -> None:
    arm = Arm()
    arm.finished = lambda: False  # type: ignore[method-assign]  # a motion that runs on
    backend = _backend(arm, preempt_grace=2.0)
    run = GoalRun(object())
    threading.Timer(0.05, run.halt, args=(reason,)).start()
    out = backend.execute(_traj(), run, lambda _i, _e: None)
    assert out.stopped and arm.stops == stops
    if stops == 0:  # no successor came: stopped once the grace is over
        deadline = time.monotonic() + 30.0  # a hang guard, not a bound
        while arm.stops == 0:
            assert time.monotonic() < deadline, "the preempted motion was never stopped"
            time.sleep(0.05)
    backend.stream.close()
