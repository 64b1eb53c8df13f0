"""Failure-to-halt reaction (the ground-truth event -> `Halt.t_halted`), one test per cause
that made it slow: the monitor signalling later than the event, the poll skipping a period,
and a hold that carried the arm on. Real MuJoCo, the expert as the VLA with a fault."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.loop import Orchestrator, run_task
from mango.orchestrator.monitors import NoMonitor
from mango.orchestrator.ports import HALTED_SPEED, SimPort
from mango.orchestrator.tools import HaltTool
from mango.sim.env import SimEnv, as_scene
from mango.sim.expert.policy import ExpertPolicy
from mango.sim.faults import parse_fault

PERIOD = 1.0 / 15.0  # the control period (sim.build.CONTROL_HZ)


@pytest.mark.parametrize(("scene", "fault", "kind", "limit_s"), [
    # a wrong object in the hand: grasped(Y) named by the state, no wait on the gripper width
    ("libero10_book_caddy", "wrong_object@1", "wrong_object_picked", PERIOD),
    # the object left the hand in transport: progress lost in the state it happens
    # (the hand was moving: it comes to rest in 24 ms, between the hold's first two states)
    ("libero10_bowl_drawer", "drop@0.5", "object_regression", 0.1),
    # set down beside the target: the holding action lost at the release
    ("libero10_soup_sauce_basket", "wrong_place@1", "wrong_target_place", PERIOD),
])
def test_oracle_monitor_halts_within_the_limit_of_the_event(scene: str, fault: str, kind: str,
                                                             limit_s: float) -> None:
    out = run_task(as_scene(scene), 0, OrchestratorConfig(mode="full", monitor="oracle"),
                   parse_fault(fault))
    first = next(r for r in out.reactions if r.kind == kind)
    assert first.detection_s == pytest.approx(0.0, abs=1e-3)  # signal in the event's state
    assert first.interrupt_s == pytest.approx(0.0, abs=1e-3)  # the tool stopped at once
    assert first.total_s is not None and first.total_s <= limit_s + 1e-3
    assert out.success


class _CountingMonitor(NoMonitor):
    def __init__(self) -> None:
        self.polls = 0

    def poll(self, t, active, tool_running):  # type: ignore[no-untyped-def]
        self.polls += 1
        return []


def test_monitor_read_every_control_period_at_the_control_rate(monkeypatch) -> None:
    """At monitor_hz = the control rate every state is polled: robot time is a float sum of
    physics steps, and a `t >= next_poll` test without slack skipped periods (a signal then
    waited one more period before it could stop the tool)."""
    mon = _CountingMonitor()
    monkeypatch.setattr(Orchestrator, "_make_monitor", lambda self: mon)
    orch = Orchestrator(as_scene("libero10_book_caddy"), 0,
                        OrchestratorConfig(mode="vla_only", monitor="none", monitor_hz=15.0,
                                           horizon_s=6.0))
    try:
        out = orch.run()
    finally:
        orch.close()
    settle = round(1.0 / PERIOD)  # the closing settle is observed quietly (no monitor)
    assert mon.polls == len(out.states) - settle


def _moving_env(env: SimEnv | None = None) -> tuple[SimEnv, np.ndarray]:
    sc = as_scene("libero10_two_moka_stove")
    env = env or SimEnv(sc, seed=0, cameras=("front",), image_size=(64, 48))
    pol = ExpertPolicy(sc, None)
    pol.reset()
    state, last = env.world_state(), None
    while state.t < 2.0:  # mid-transport: the hand moves at ~0.17 m/s here
        for row in pol.act(state, env.joint_positions()):
            env.step(row)
            state, last = env.world_state(), row
            if state.t >= 2.0:
                break
    assert last is not None
    return env, last


def _stepper(env: SimEnv, speeds: list[float]):  # type: ignore[no-untyped-def]
    """One control period per row, recording the hand's speed over it."""
    prev = [env.hand_pose()[0]]

    def step(row: np.ndarray):  # type: ignore[no-untyped-def]
        env.step(row)
        h = env.hand_pose()[0]
        speeds.append(float(np.linalg.norm(h - prev[0])) / env.dt)
        prev[0] = h
        return env.world_state()
    return step


def test_halt_holds_from_the_measured_arm_not_the_last_command() -> None:
    """A hold streamed like any row ramps from the last command, which runs ahead of a moving
    arm: the hand coasts on for periods. The halt tool's hold (`SimEnv.stop`, re-anchored
    every period) has it at rest from the second period on. That is the convention of a
    ros2_control trajectory controller on a cancelled goal: it holds the current state at
    once rather than finishing the interpolation (ros-controls/ros2_controllers,
    joint_trajectory_controller/src/joint_trajectory_controller.cpp, set_hold_position)."""
    env, last = _moving_env()
    try:
        halted: list[float] = []
        HaltTool(env).run(4 * PERIOD, float(last[7]), _stepper(env, halted))
        assert len(halted) == 4 and max(halted[1:]) < HALTED_SPEED
    finally:
        env.close()
    env, last = _moving_env()
    try:
        streamed: list[float] = []
        step = _stepper(env, streamed)
        row = np.r_[env.joint_positions(), last[7]]
        for _ in range(4):
            step(row)
        assert streamed[1] > HALTED_SPEED  # the old hold still moved in its second period
    finally:
        env.close()


def test_oracle_fed_by_the_estimated_world_still_halts_a_wrong_grasp() -> None:
    """`world="estimated"`: the oracle and its monitor read the marker-based estimate of the
    rendered front and wrist cameras (world_state_node's estimator), ground truth stays the
    physics'. The wrong object is caught and the arm halted within half a second."""
    seen = []
    orch = Orchestrator(as_scene("libero10_book_caddy"), 0,
                        OrchestratorConfig(mode="full", monitor="oracle", world="estimated",
                                           horizon_s=4.5), parse_fault("wrong_object@1"))
    observe = orch.world.observe
    orch.world.observe = lambda truth: seen.append((truth, observe(truth))) or seen[-1][1]
    try:
        out = orch.run()
    finally:
        orch.close()
    assert orch.world.name == "estimated"
    truth, est = seen[-1]
    assert truth.t == est.t and truth.objects["black_book_1"].position != \
        est.objects["black_book_1"].position  # an estimate, not the physics handed over
    first = next(r for r in out.reactions if r.kind == "wrong_object_picked")
    assert first.event_t == pytest.approx(3.6, abs=0.07)  # the physics' event, as without it
    assert first.total_s is not None and first.total_s <= 0.5
    signals = [x for x in orch.record.lines if x["record"] == "signal"]
    assert signals[0]["reason"] == "unexplained_grasp"


def test_a_sim_hold_times_the_rest_between_its_states() -> None:
    """The loop sees one world state a period; measured on those, a hand held mid-transport
    still averages more than the halted speed over the first period, so its rest would be
    rounded up to the second state (133 ms after a drop). The sim port samples the hand 11
    times a period during a hold (a real FR3 reports its state at 1 kHz) and returns the
    first sample below the halted speed: here 30 ms into the hold."""
    port = SimPort(as_scene("libero10_two_moka_stove"), 0)
    try:
        port.start(0)
        _, last = _moving_env(port.env)
        port._width = float(last[7])
        t0, h0 = port.time, port.hand_position()
        states: list = []
        rest = port.hold(4 * PERIOD, states.append)
        assert len(states) == 4  # one observed state per period, as every tool gives
        first = np.asarray(states[0].objects["robot_hand"].position)
        assert float(np.linalg.norm(first - h0)) / PERIOD > HALTED_SPEED  # period average
        assert rest is not None and t0 < rest < states[0].t - 1e-6
        hand = [np.asarray(s.objects["robot_hand"].position) for s in states]
        assert all(float(np.linalg.norm(b - a)) / PERIOD < HALTED_SPEED
                   for a, b in itertools.pairwise(hand))  # and it stays at rest
    finally:
        port.close()
