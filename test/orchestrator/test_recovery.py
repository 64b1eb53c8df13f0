"""Orchestrated episodes in the embedded sim (real MuJoCo, real perception backend, the expert
as the VLA with an injected fault): the recovery decisions VoLo's phases call for."""

from __future__ import annotations

import numpy as np
import pytest

from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.loop import TaskOutcome, run_task
from mango.orchestrator.schemas import DECISION_SCHEMA, Decision, EpisodeRecord
from mango.sim.env import as_scene
from mango.sim.faults import parse_fault


def _run(scene: str, mode: str, monitor: str, fault: str | None, seed: int = 0,
         **cfg: float) -> tuple[TaskOutcome, EpisodeRecord]:
    rec = EpisodeRecord()
    out = run_task(as_scene(scene), seed, OrchestratorConfig(mode=mode, monitor=monitor, **cfg),
                   parse_fault(fault) if fault else None, record=rec)
    return out, rec


def _recoveries(out: TaskOutcome) -> list[dict]:
    return [d for d in out.decisions if d["phase"] == "recovery"]


@pytest.mark.parametrize("monitor", ["gt", "oracle"])
def test_wrong_object_is_recovered_with_the_grasp_tool(monitor: str) -> None:
    out, rec = _run("soup_sauce_basket", "full", monitor, "wrong_object@1")
    first = _recoveries(out)[0]
    assert first["action"] == "grasp_tool" and first["tool"] == "grasp"
    assert first["rule"] == "recovery.wrong_object_in_hand"
    assert "milk_1" in first["reason"]  # what perception saw in the hand
    tools = [(ln["tool"], ln["status"]) for ln in rec.lines if ln["record"] == "tool_end"]
    assert ("grasp", "succeeded") in tools
    assert out.success and out.world["unrecovered"] == 0
    assert out.verdict is not None and out.verdict["verdict"] == "pass"


def test_a_drop_is_replanned_onto_the_original_subgoals_still_to_do() -> None:
    """stove_moka: subgoal 1 (turn on the stove) is done when the pot drops in subgoal 2; the
    replan returns only subgoal 2, the original one, word for word."""
    out, rec = _run("stove_moka", "full", "oracle", "drop@0.3")
    replans = [d for d in out.decisions if d["action"] == "replan"]
    assert len(replans) == 1 and replans[0]["remaining"] == ["2"]
    assert replans[0]["rule"] == "recovery.dropped_in_transport"
    after = [ln for ln in rec.lines if ln["record"] == "tool_start" and ln["t"] >= replans[0]["t"]]
    assert after[0]["instruction"] == out.plan.subgoals[1].instruction
    assert out.success


def test_a_drop_in_the_first_subgoal_replans_the_whole_original_plan() -> None:
    out, _ = _run("soup_sauce_basket", "full", "oracle", "drop@0.5")
    replans = [d for d in out.decisions if d["action"] == "replan"]
    assert replans and replans[0]["remaining"] == ["1", "2"]
    assert out.success and out.world["recovered"] == 1


def test_a_false_alarm_is_continued_and_the_task_still_finishes() -> None:
    """A no-progress window shorter than a transport fires while the VLA works: the decider
    sees the hand moving and continues the same run, spending no recovery."""
    out, rec = _run("soup_sauce_basket", "full", "oracle", None, no_progress_s=1.5)
    alarms = [d for d in out.decisions if d["rule"] == "recovery.false_alarm_hand_moving"]
    assert alarms and all(d["action"] == "continue" and d["tool"] == "vla" for d in alarms)
    assert out.success and not out.aborted
    # the same VLA run went on: no new instruction was given within a subgoal
    starts = [ln for ln in rec.lines if ln["record"] == "tool_start"]
    assert len({ln["subgoal"] for ln in starts}) == 2


def test_the_arm_is_held_still_while_the_decider_deliberates() -> None:
    out, _ = _run("soup_sauce_basket", "full", "oracle", "drop@0.5")
    assert out.halts
    for h in out.halts:
        assert h.t_halted is not None and h.t_halted - h.t_request < 0.5
        assert h.max_joint_speed < 0.05  # rad/s: still, from settling to the decision
    # the world-state trace agrees: the hand does not move during the halt's settled part
    h = out.halts[0]
    hand = np.array([s.objects["robot_hand"].position for s in out.states
                     if h.t_halted <= s.t <= (h.t_end or 0)])
    assert len(hand) >= 1 and np.ptp(hand, axis=0).max() < 0.005


def test_every_decision_is_recorded_with_digest_latency_and_decider() -> None:
    out, rec = _run("soup_sauce_basket", "vla_only", "oracle", "wrong_place@1")
    lines = [ln for ln in rec.lines if ln["record"] == "decision"]
    assert len(lines) == len(out.decisions) >= 3
    for ln in lines:
        assert ln["decider"] == "offline" and ln["rule"]  # a rule, never a model
        assert len(ln["inputs_digest"]) == 16 and ln["latency_s"] >= 0
        fields = {k: ln[k] for k in Decision.model_fields if k in ln}
        Decision.model_validate(fields)
    assert set(DECISION_SCHEMA["properties"]) >= {"action", "tool", "remaining", "rule"}
    # vla_only has no primitives: misplacement is steered verbally
    rec_actions = {d["action"] for d in _recoveries(out)}
    assert rec_actions <= {"rewrite", "replan", "continue", "abort", "next_subgoal"}
    assert "rewrite" in rec_actions and out.success
    plan = next(ln for ln in rec.lines if ln["record"] == "plan")
    assert plan["ordered"] is False and plan["initial_scene"]["basket_1"]


def test_without_a_monitor_the_policy_alone_leaves_the_fault_unrecovered() -> None:
    out, _ = _run("soup_sauce_basket", "vla_only", "none", "wrong_place@1")
    assert not _recoveries(out) and not out.halts
    assert not out.success and out.world["unrecovered"] == 1


def test_a_decision_outside_the_mode_or_inventing_subgoals_is_refused() -> None:
    from mango.orchestrator.config import MODES
    from mango.orchestrator.deciders import decision_problem
    from mango.orchestrator.schemas import Plan, Subgoal

    plan = Plan(instruction="x", ordered=True, source="test", subgoals=[
        Subgoal(id="1", instruction="a", expert_step=0),
        Subgoal(id="2", instruction="b", expert_step=1)])
    full, vla = MODES["full"], MODES["vla_only"]
    ok = Decision(phase="recovery", action="replan", remaining=["2"])
    assert decision_problem(ok, plan, full) is None
    assert "does not have: 3" in decision_problem(
        Decision(phase="recovery", action="replan", remaining=["2", "3"]), plan, full)
    assert "twice" in decision_problem(
        Decision(phase="recovery", action="replan", remaining=["2", "2"]), plan, full)
    grasp = Decision(phase="recovery", action="grasp_tool", tool="grasp")
    assert decision_problem(grasp, plan, full) is None
    assert "does not allow grasp_tool" in decision_problem(grasp, plan, vla)
    assert "no instruction" in decision_problem(
        Decision(phase="recovery", action="rewrite", tool="vla", instruction=" "), plan, vla)
