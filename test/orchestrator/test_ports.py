"""The loop's robot-port seam on the embedded sim: a cancel from outside stops the task at
the next boundary with the arm held; the step budget aborts with its rule; a tool server that
goes away ends the task at once, naming it, and is not tried again; every record line reaches
`on_line` as it is written (what the orchestrator node publishes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.liveness import ServerWatch
from mango.orchestrator.loop import Orchestrator
from mango.orchestrator.ports import Observer, SimPort
from mango.orchestrator.schemas import EpisodeRecord
from mango.orchestrator.tools import ToolResult
from mango.sim.env import as_scene

SCENE = as_scene("soup_sauce_basket")


class CancellingPort(SimPort):
    """The embedded sim, with someone cancelling the task once robot time passes `at`."""

    orch: Orchestrator
    at = 2.0

    def run_vla(self, instruction: str, observe: Observer, budget_t: float, *,
                resume: bool = False) -> ToolResult:
        def watched(state: Any) -> None:
            if state.t >= self.at:
                self.orch.cancel()
            observe(state)
        return super().run_vla(instruction, watched, budget_t, resume=resume)


def test_a_cancel_stops_the_running_tool_at_the_next_boundary_and_holds_the_arm() -> None:
    lines: list[dict[str, Any]] = []
    port = CancellingPort(SCENE, 0)
    orch = Orchestrator(SCENE, 0, OrchestratorConfig(), record=EpisodeRecord(
        on_line=lines.append), port=port)
    port.orch = orch
    try:
        out = orch.run()
    finally:
        orch.close()
    assert out.cancelled and out.aborted == "cancelled" and not out.success
    cancelled = [ln for ln in lines if ln["record"] == "cancelled"]
    assert len(cancelled) == 1 and 2.0 <= cancelled[0]["t"] <= 2.0 + 2 * port.dt
    assert cancelled[0]["subgoal"] == "1"
    assert out.subgoals[0]["orchestrator"] == "cancelled"
    # the VLA ran no further: after the cancel the hand holds still (the final 1 s hold)
    hand = np.array([s.objects["robot_hand"].position for s in out.states
                     if s.t > cancelled[0]["t"] + 0.3])
    assert len(hand) >= 5 and float(np.ptp(hand, axis=0).max()) < 0.005
    assert lines[-1]["record"] == "result"


def test_the_step_budget_aborts_with_its_rule() -> None:
    orch = Orchestrator(SCENE, 0, OrchestratorConfig(mode="vla_only", monitor="oracle"),
                        max_decisions=2)
    try:
        out = orch.run()
    finally:
        orch.close()
    assert len(out.decisions) == 3
    last = out.decisions[-1]
    assert last["action"] == "abort" and last["rule"] == "loop.step_budget"
    assert "2 decisions" in last["reason"] and out.aborted == last["reason"]


class VanishingPort(SimPort):
    """The embedded sim whose VLA server leaves the graph at robot time `at`; the port watches
    it as the ROS port does (`ServerWatch`, here on robot time), at every state."""

    at = 2.0
    grace = 0.5

    def __init__(self, scene: Any, seed: int) -> None:
        super().__init__(scene, seed)
        self.watch = ServerWatch("run_policy", lambda: self.time < self.at, lambda: "vla_node",
                                 self.grace, clock=lambda: self.time)
        self.vla_calls = 0

    def run_vla(self, instruction: str, observe: Observer, budget_t: float, *,
                resume: bool = False) -> ToolResult:
        self.vla_calls += 1

        def watched(state: Any) -> None:
            self.watch.check()
            observe(state)
        return super().run_vla(instruction, watched, budget_t, resume=resume)


def test_a_tool_server_that_went_away_ends_the_task_naming_it_without_a_retry() -> None:
    lines: list[dict[str, Any]] = []
    port = VanishingPort(SCENE, 0)
    orch = Orchestrator(SCENE, 0, OrchestratorConfig(mode="full", monitor="oracle"),
                        record=EpisodeRecord(on_line=lines.append), port=port)
    try:
        out = orch.run()
    finally:
        orch.close()
    assert port.vla_calls == 1  # never retried
    assert out.aborted is not None and out.aborted.startswith(
        "vla_node's run_policy went away"), out.aborted
    assert not out.success and not out.cancelled
    assert out.subgoals[0]["orchestrator"] == "aborted"
    lost = [ln for ln in lines if ln["record"] == "server_lost"]
    assert len(lost) == 1 and lost[0]["server"] == "run_policy" and lost[0]["subgoal"] == "1"
    # ended on the first state past the grace: no recovery, no decision after it
    assert port.at + port.grace < lost[0]["t"] <= port.at + port.grace + 2 * port.dt
    ends = [ln for ln in lines if ln["record"] == "tool_end"]
    assert ends[-1]["status"] == "lost" and ends[-1]["tool"] == "vla"
    assert not [ln for ln in lines if ln["record"] in ("decision", "halt")
                and ln["t"] >= lost[0]["t"]]
    assert lines[-1]["record"] == "result" and lines[-1]["aborted"] == out.aborted
