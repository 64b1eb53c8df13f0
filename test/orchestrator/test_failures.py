"""K.2 failure classes against ground truth (`orchestrator.failures`): each class on a
synthetic record made to have exactly it, a clean record with none, and faulted episodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from mango.orchestrator.config import OrchestratorConfig
from mango.orchestrator.failures import K2_CLASSES, classify, reactions
from mango.orchestrator.loop import run_task
from mango.sim.env import as_scene
from mango.sim.faults import parse_fault

GOALS = [{"subject": "soup", "target": "basket", "step": 0, "kind": "place"},
         {"subject": "sauce", "target": "basket", "step": 1, "kind": "place"}]
PLAN = {"record": "plan", "t": 0.0, "subgoals": [
    {"id": "1", "instruction": "put the soup in the basket", "expert_step": 0, "object": "soup"},
    {"id": "2", "instruction": "put the sauce in the basket", "expert_step": 1,
     "object": "sauce"}]}


def _sig(t: float, kind: str, sub: str | None, reason: str = "x") -> dict[str, Any]:
    return {"record": "signal", "t": t, "kind": kind, "subgoal": sub, "reason": reason,
            "monitor": "oracle"}


def _result(t: float, done: bool = True, aborted: str | None = None) -> dict[str, Any]:
    out = "completed" if done else "not_started"
    return {"record": "result", "t": t, "aborted": aborted,
            "subgoals": [{"orchestrator": out}, {"orchestrator": out}]}


def _clean() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    lines = [PLAN, _sig(5.0, "completed", "1"), _sig(10.0, "completed", "2"), _result(12.0)]
    world = {"goals": GOALS, "goal_log": [[5.0, 0, True], [10.0, 1, True]], "events": []}
    return lines, world


def _only(counts: dict[str, int], cls: str, n: int = 1) -> None:
    assert counts[cls] == n
    assert all(v == 0 for k, v in counts.items() if k != cls), counts


def test_a_clean_record_has_no_failure_class() -> None:
    lines, world = _clean()
    counts, found = classify(lines, world, success=True)
    assert set(counts) == set(K2_CLASSES) and not any(counts.values()) and found == []


def test_plan_mismatch_a_goal_without_subgoal() -> None:
    lines, world = _clean()
    lines[0] = {**PLAN, "subgoals": PLAN["subgoals"][:1]}
    lines = [x for x in lines if x.get("subgoal") != "2"]
    counts, found = classify(lines, world, success=True)
    assert counts["plan_mismatch"] == 1 and "sauce" in found[0]["detail"]


def test_false_completion_and_completion_mismatch() -> None:
    lines, world = _clean()
    lines.insert(1, _sig(2.0, "completed", "2"))  # sauce claimed while nothing holds
    counts, _ = classify(lines, world, success=True)
    _only(counts, "false_completion")
    lines, world = _clean()
    lines[1] = _sig(5.0, "completed", "2")  # the soup came true; subgoal 2 got the credit
    counts, found = classify(lines, world, success=True)
    assert counts["completion_mismatch"] == 1 and counts["false_completion"] == 0
    # and the soup's own completion went unsaid
    assert counts["missed_completion"] == 1
    assert [f["t"] for f in found if f["class"] == "missed_completion"] == [5.0]


def test_missed_completion() -> None:
    lines, world = _clean()
    lines = [x for x in lines if x.get("subgoal") != "2"]
    counts, found = classify(lines, world, success=True)
    _only(counts, "missed_completion")
    assert found[0]["t"] == 10.0


def test_task_success_qa_both_ways() -> None:
    lines, world = _clean()
    counts, _ = classify(lines, world, success=False)  # believed done; it was not
    _only(counts, "task_success_qa")
    lines[-1] = _result(12.0, aborted="gave up")
    counts, _ = classify(lines, world, success=True)  # believed failed; it was done
    _only(counts, "task_success_qa")


def test_missed_failure_unless_signalled_before_its_recovery() -> None:
    lines, world = _clean()
    world["events"] = [{"t": 3.0, "kind": "object_regression", "subject": "soup", "index": 0},
                       {"t": 4.0, "kind": "recovery", "subject": "soup", "pairs": 0}]
    counts, _ = classify(lines, world, success=True)
    _only(counts, "missed_failure")
    counts, _ = classify([*lines, _sig(3.5, "failure", "1")], world, success=True)
    assert not any(counts.values())
    counts, _ = classify([*lines, _sig(4.5, "failure", "1")], world, success=True)
    _only(counts, "missed_failure")  # after it was undone: too late to count


def test_invariant_failure_a_reached_goal_undone_unreported() -> None:
    lines, world = _clean()
    world["goal_log"] = [[5.0, 0, True], [7.0, 0, False], [8.0, 0, True], [10.0, 1, True]]
    lines.insert(2, _sig(8.0, "completed", "1"))
    counts, found = classify(lines, world, success=True)
    _only(counts, "invariant_failure")
    assert found[0]["t"] == 7.0
    counts, _ = classify([*lines, _sig(7.1, "failure", "1")], world, success=True)
    assert not any(counts.values())


def test_grasp_target_mismatch_a_grasp_tool_took_another_object() -> None:
    lines, world = _clean()
    lines[1:1] = [{"record": "tool_start", "t": 3.0, "tool": "grasp"},
                  {"record": "tool_end", "t": 4.0, "tool": "grasp"}]
    world["events"] = [{"t": 3.5, "kind": "wrong_object_picked", "subject": "milk",
                        "index": 0}]
    lines.append(_sig(3.5, "failure", "1"))
    counts, found = classify(lines, world, success=True)
    _only(counts, "grasp_target_mismatch")
    assert "milk" in found[0]["detail"]


@dataclass
class _H:
    t_request: float
    t_halted: float | None


def test_reactions_match_rounded_event_times_to_robot_times() -> None:
    """A summary rounds event times to 0.1 ms; the halt at that same instant is read as a
    float sum of physics steps, a hair earlier: still the event's halt."""
    ev = [{"t": 6.8667, "kind": "object_regression"}, {"t": 9.0, "kind": "recovery"}]
    rs = reactions(ev, [_sig(6.8667, "failure", "1")], [_H(6.866666666, 7.0)])
    assert len(rs) == 1 and rs[0].detection_s == pytest.approx(0.0)
    assert rs[0].total_s == pytest.approx(7.0 - 6.8667)
    assert rs[0].interrupt_s == 0.0 and rs[0].stop_s == pytest.approx(7.0 - 6.866666666)
    assert reactions(ev, [], [])[0].total_s is None


def test_faulted_episode_without_a_monitor_misses_the_failure() -> None:
    """The policy alone: the wrong object goes unreported and the run believes it is done."""
    out = run_task(as_scene("libero10_book_caddy"), 0,
                   OrchestratorConfig(mode="vla_only", monitor="none"),
                   parse_fault("wrong_object@1"))
    assert not out.success
    assert out.failure_classes["missed_failure"] >= 1
    assert out.failure_classes["task_success_qa"] == 1
    out = run_task(as_scene("libero10_book_caddy"), 0,
                   OrchestratorConfig(mode="full", monitor="oracle"),
                   parse_fault("wrong_object@1"))
    assert out.success and out.failure_classes["missed_failure"] == 0
    assert out.failure_classes["task_success_qa"] == 0
