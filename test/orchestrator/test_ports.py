"""The loop's robot-port seam on the embedded sim: a cancel from outside stops the task at
the next boundary with the arm held; the step budget aborts with its rule; every record line
reaches `on_line` as it is written (what the orchestrator node publishes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mango.orchestrator.config import OrchestratorConfig
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
