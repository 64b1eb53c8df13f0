"""MotorMind's offline roles as pure rules (no sim): what each answers from what it is shown."""

from __future__ import annotations

import math

import numpy as np

from mango.orchestrator.roles import (
    Measured,
    MonitorView,
    Observation,
    OfflineExecutor,
    OfflineMonitor,
    measure_grip,
    settled_by_measurement,
)
from mango.orchestrator.schemas import Subgoal
from mango.perception.base import Detection

SUBGOAL = Subgoal(id="1", instruction="put the alphabet soup in the basket", expert_step=0,
                  object="alphabet_soup_1", destination="basket_1_contain_region",
                  relation="in", object_phrase="alphabet soup",
                  destination_phrase="in the basket")


def _det(phrase: str, centroid: tuple[float, float, float], size: tuple[float, float, float],
         yaw: float = 0.0) -> Detection:
    return Detection(phrase, None, phrase, 1.0, (0, 0, 1, 1), None, centroid, size, yaw,
                     "front", 0.0)


def _obs(hand: tuple[float, float, float], width: float, width_cmd: float, holding: bool,
         **kw: object) -> Observation:
    base = dict(t=0.0, subgoal=SUBGOAL, hand=np.asarray(hand), opening_yaw=math.pi / 2,
                q7=0.78, q7_range=(-3.0, 3.0), width=width, width_cmd=width_cmd,
                holding=holding, object_det=_det("alphabet soup", (0.1, 0.2, 0.95),
                                                 (0.07, 0.04, 0.1)),
                destination_det=_det("basket", (0.3, -0.1, 0.95), (0.3, 0.2, 0.1)),
                at_destination=False, completed=set(), travel_z=1.2, table_z=0.9)
    base.update(kw)
    return Observation(**base)  # type: ignore[arg-type]


def test_measured_lost_grasp_settles_the_attempt() -> None:
    m = Measured(executed=2, total=2, status="succeeded", message="")
    after = _obs((0.1, 0.2, 1.2), width=0.001, width_cmd=0.0, holding=False)
    measure_grip(m, held_before=True, after=after)
    assert m.lost_grasp and not m.released
    v = settled_by_measurement(after, m)
    assert v is not None and v.outcome == "failed" and v.settled_by == "measurement"
    assert v.rule == "verify.measured_lost_grasp"
    # holding on: nothing to settle; the verifier is asked
    m2 = Measured(executed=2, total=2, status="succeeded", message="")
    measure_grip(m2, True, _obs((0.1, 0.2, 1.2), 0.05, 0.0, True))
    assert settled_by_measurement(after, m2) is None


def test_monitor_stops_on_an_oracle_failure_or_a_measured_grasp_loss() -> None:
    mon = OfflineMonitor()
    view = MonitorView(t=1.0, attempt=3, subgoal="1", signals=(), width=0.001, width_cmd=0.0,
                       expect_holding=True, hand_z=1.1, table_z=0.9)
    (alert,) = mon.assess(view)
    assert alert.level == "stop" and alert.rule == "monitor.grasp_lost"
    info = MonitorView(t=1.0, attempt=3, subgoal="1",
                       signals=(("completed", "oracle_step_completed", "step 1"),),
                       width=0.05, width_cmd=0.0, expect_holding=True, hand_z=1.1, table_z=0.9)
    assert [a.level for a in mon.assess(info)] == ["info"]
    fail = MonitorView(t=1.0, attempt=3, subgoal="1",
                       signals=(("failure", "progress_lost", "the object left the hand"),),
                       width=0.05, width_cmd=0.0, expect_holding=None, hand_z=1.1, table_z=0.9)
    assert [(a.level, a.rule) for a in mon.assess(fail)] == [("stop", "monitor.oracle_failure")]


def test_executor_rules_follow_the_perceived_object() -> None:
    ex = OfflineExecutor()
    # far from the object, above travel height: come down to it, then cross in the plane
    b = ex.propose(_obs((-0.2, 0.0, 1.4), 0.08, 0.08, False), None)
    assert b.rule == "executor.go_over_object"
    assert [(a.direction, a.mm) for a in b.actions] == [("down", 200.0), ("forward", 300.0),
                                                        ("left", 200.0)]
    # over it with the fingers along its long side: turn them across (opening along y)
    b = ex.propose(_obs((0.1, 0.2, 1.2), 0.08, 0.08, False, opening_yaw=0.0), None)
    assert b.rule == "executor.align_fingers" and b.actions[0].axis == "z"
    assert abs(b.actions[0].degrees - 90.0) < 1e-6
    # aligned: descend, close, lift, expecting to hold it
    b = ex.propose(_obs((0.1, 0.2, 1.2), 0.08, 0.08, False), None)
    assert b.rule == "executor.descend_close_lift" and b.expect_holding is True
    assert [a.kind for a in b.actions] == ["move", "gripper", "move"]
    # held: carry it over the basket's free end (the other can stands nearer its near end)
    other = _det("tomato sauce", (0.27, -0.1, 0.95), (0.07, 0.07, 0.1))
    b = ex.propose(_obs((0.1, 0.2, 1.2), 0.05, 0.0, True, others=[other]), None)
    assert b.rule == "executor.carry_over_destination"
    moves = {a.direction: a.mm for a in b.actions}
    # the basket's long side runs along x: its far end is 0.3 + (0.15 - 0.035 - 0.015) = 0.4
    assert abs(moves["forward"] - 300.0) < 1.0 and abs(moves["right"] - 300.0) < 1.0
