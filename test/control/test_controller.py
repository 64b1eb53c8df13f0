"""ArmController on the sim backend with a stand-in simulator: chunks and motion batches end
in the right terminal status with the right message, preemption and halt included."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from support.arm import FakeSim

from mango.control import (
    ArmController,
    ChunkGoal,
    GoalRejected,
    GoalStatus,
    JointStateReader,
    MotionCommand,
    load_robot,
)
from mango.control.backends import SimBackend
from mango.policy.kinematics import make_kinematics

ROBOT = load_robot("fr3")
KIN = make_kinematics(ROBOT)
PERIOD = 0.005


@pytest.fixture
def rig() -> Iterator[tuple[FakeSim, ArmController]]:
    reader = JointStateReader(ROBOT.joint_names)
    sim = FakeSim(ROBOT, reader, period=PERIOD)
    controller = ArmController(ROBOT, KIN, SimBackend(ROBOT, PERIOD, reader, sim.send), PERIOD)
    with sim.running_thread():
        yield sim, controller


def _chunk(q0: np.ndarray, delta: float = 0.05, n: int = 5, rate: float = 15.0) -> ChunkGoal:
    pos = [(q0 + np.eye(7)[0] * delta * (k + 1) / n).tolist() for k in range(n)]
    return ChunkGoal(ROBOT.joint_names, [(k + 1) / rate for k in range(n)], pos, [])


def _run_chunk(controller: ArmController, goal: ChunkGoal, handle: object = None):
    run = controller.goals.begin(handle)
    try:
        return controller.run_chunk(run, goal, lambda *_: None)
    finally:
        controller.goals.end(run)


def test_chunk_succeeds_with_the_final_state(rig: tuple[FakeSim, ArmController]) -> None:
    sim, controller = rig
    q0 = sim.q.copy()
    out = _run_chunk(controller, _chunk(q0))
    assert out.status is GoalStatus.SUCCEEDED
    assert out.message == "5 points in 0.33 s"
    assert out.points_executed == 5
    assert out.final is not None and out.final.q[0] == pytest.approx(q0[0] + 0.05, abs=0.01)


def test_a_late_first_point_starts_late_and_says_so(rig: tuple[FakeSim, ArmController]) -> None:
    sim, controller = rig
    goal = _chunk(sim.q.copy(), delta=0.2, n=1)  # 3 rad/s over joint 1's 2.62 rad/s
    notes: list[str] = []
    run = controller.goals.begin(None)
    try:
        out = controller.run_chunk(run, goal, lambda *_: None, notes.append)
    finally:
        controller.goals.end(run)
    assert out.status is GoalStatus.SUCCEEDED
    (note,) = notes
    assert "ms late to keep the first point within the velocity limits" in note
    assert out.message.endswith(note)


def test_invalid_chunk_is_rejected_before_moving(rig: tuple[FakeSim, ArmController]) -> None:
    sim, controller = rig
    goal = _chunk(sim.q.copy())
    n = len(sim.commands)
    bad = ChunkGoal(["nope", *goal.joint_names[1:]], goal.times, goal.positions, [])
    out = _run_chunk(controller, bad)
    assert out.status is GoalStatus.REJECTED
    assert "missing ['fr3_joint1']" in out.message and "unknown ['nope']" in out.message
    assert len(sim.commands) == n


def test_a_new_chunk_preempts_the_old(rig: tuple[FakeSim, ArmController]) -> None:
    sim, controller = rig
    q0 = sim.q.copy()
    results = {}

    def first() -> None:
        results["first"] = _run_chunk(controller, _chunk(q0, 0.1, n=30), "first")

    thread = threading.Thread(target=first)
    thread.start()
    time.sleep(0.3)
    results["second"] = _run_chunk(controller, _chunk(sim.q.copy()), "second")
    thread.join(timeout=10)
    assert results["first"].status is GoalStatus.PREEMPTED
    assert results["first"].message == "preempted by a new goal"
    assert 0 < results["first"].points_executed < 30
    assert results["second"].status is GoalStatus.SUCCEEDED


def test_halt_stops_the_active_goal(rig: tuple[FakeSim, ArmController]) -> None:
    sim, controller = rig
    results = {}

    def chunk() -> None:
        results["chunk"] = _run_chunk(controller, _chunk(sim.q.copy(), 0.1, n=30))

    thread = threading.Thread(target=chunk)
    thread.start()
    time.sleep(0.3)
    assert controller.halt() == (True, "active goal stopped; holding position")
    thread.join(timeout=10)
    assert results["chunk"].status is GoalStatus.CANCELLED
    assert results["chunk"].message == "halted by the halt service"
    n = len(sim.commands)
    assert controller.halt() == (True, "no active goal; holding position")
    assert len(sim.commands) == n  # the stop's hold stays the target (no re-targeting)


def test_halt_without_a_joint_state_says_so() -> None:
    reader = JointStateReader(ROBOT.joint_names)
    sim = FakeSim(ROBOT, reader)
    controller = ArmController(ROBOT, KIN, SimBackend(ROBOT, PERIOD, reader, sim.send), PERIOD)
    assert controller.halt() == (False, "no joint state received: cannot hold a known position")
    assert controller.wait_measured(timeout=0.05) is None


def test_motion_batch_runs_and_measures_each_command(rig: tuple[FakeSim, ArmController]
                                                     ) -> None:
    sim, controller = rig
    p0, _ = KIN.fk(sim.q)
    seen: list[int] = []
    run = controller.goals.begin(None)
    try:
        out = controller.run_motion(
            run, lambda: [MotionCommand("move", (0, 0, -1), 20.0), MotionCommand("wait",
                                                                                   duration=0.1)],
            lambda i, _pose: seen.append(i))
    finally:
        controller.goals.end(run)
    assert out.status is GoalStatus.SUCCEEDED and out.message == "2 command(s) executed"
    assert seen == [0, 1] and out.commands_executed == 2
    assert np.allclose(out.poses[0][0], p0 + np.array([0, 0, -0.02]), atol=2e-3)
    assert out.widths == [pytest.approx(0.08)] * 2


def test_cancelled_motion_stops_at_the_next_boundary(rig: tuple[FakeSim, ArmController]
                                                     ) -> None:
    _, controller = rig
    run = controller.goals.begin("motion")

    def cancel_after_first(i: int, _pose: object) -> None:
        if i == 0:
            controller.goals.cancel("motion", at_boundary=True)

    try:
        out = controller.run_motion(run, lambda: [MotionCommand("wait", duration=0.1)] * 3,
                                    cancel_after_first)
    finally:
        controller.goals.end(run)
    assert out.status is GoalStatus.CANCELLED
    assert out.message == "cancelled after 1 command(s)"
    assert out.commands_executed == 1


def test_unplannable_or_unreadable_batch_is_rejected(rig: tuple[FakeSim, ArmController]
                                                     ) -> None:
    _, controller = rig

    def unreadable() -> list[MotionCommand]:
        raise GoalRejected("command 0: unknown type 99")

    for commands, reason in ((unreadable, "command 0: unknown type 99"),
                             (lambda: [], "no commands")):
        run = controller.goals.begin(None)
        try:
            out = controller.run_motion(run, commands, lambda *_: None)
        finally:
            controller.goals.end(run)
        assert (out.status, out.message) == (GoalStatus.REJECTED, reason)
    run = controller.goals.begin(None)
    try:
        out = controller.run_motion(run, lambda: [MotionCommand("move", (1, 0, 0), 2000.0)],
                                    lambda *_: None)
    finally:
        controller.goals.end(run)
    assert out.status is GoalStatus.REJECTED and out.commands_executed == 0
