"""Fault injection: each kind makes the fine-grained oracle fail at the labelled step."""

from __future__ import annotations

import pytest

from mango.errors import InputError
from mango.oracle.symbolic import SymbolicOracle
from mango.oracle.tracker import check_trace
from mango.sim.expert.policy import ExpertPolicy
from mango.sim.faults import Fault, parse_fault
from mango.sim.runner import load_oracle_json, run_episode
from mango.sim.scene import SCENES_DIR, load_scene


def test_parse_fault() -> None:
    assert parse_fault("drop@0.4") == Fault("drop", 0.4)
    assert parse_fault("stall@7") == Fault("stall", 7.0)
    assert parse_fault("skip") == Fault("skip", 1.0)
    assert str(parse_fault("wrong_place@2")) == "wrong_place@2"
    for bad, msg in [("melt@1", "KIND@WHEN"), ("drop@1.5", "0 < F < 1"),
                     ("skip@0", "skill number"), ("skip@1.5", "skill number"), ("drop@", "KIND")]:
        with pytest.raises(InputError, match=msg) as err:
            parse_fault(bad)
        assert err.value.field == "fault"


def test_faults_that_do_not_fit_the_task_are_refused() -> None:
    caddy = load_scene(SCENES_DIR / "libero10_book_caddy.yaml")
    with pytest.raises(InputError, match="before the last step"):
        ExpertPolicy(caddy, parse_fault("knock_out@1"))
    with pytest.raises(InputError, match="only 1 expert steps"):
        ExpertPolicy(caddy, parse_fault("skip@3"))
    drawer = load_scene(SCENES_DIR / "libero10_bowl_drawer.yaml")
    with pytest.raises(InputError, match="not a pick-and-place"):
        ExpertPolicy(drawer, parse_fault("wrong_place@2"))


@pytest.mark.parametrize(
    ("scene", "fault"),
    [
        ("soup_sauce_basket", "drop@0.5"),
        ("soup_sauce_basket", "wrong_object@1"),
        ("mug_microwave", "stall@6"),
        ("soup_sauce_basket", "skip@2"),
        ("mugs_plates", "wrong_place@2"),
        ("bowl_drawer", "skip@2"),
    ],
)
def test_fault_fails_the_oracle_at_the_labelled_step(scene: str, fault: str) -> None:
    res = run_episode(scene, 0, parse_fault(fault))
    lab = res.labels
    assert lab["fault"] == fault and lab["expected_verdict"] == "fail"
    assert lab["failed_step"] is not None and lab["failed_t"] is not None
    oracle, _ = load_oracle_json(res.scene)
    report = check_trace(oracle, res.states)
    assert report.verdict == "fail"
    assert report.failed_step == lab["failed_step"], (report, lab)
    assert SymbolicOracle(res.scene.goal).check(res.states).verdict == "fail"
    # nothing the labelled step monitors completed before the fault struck
    step = next(s for s in report.steps if s.path == lab["failed_step"])
    assert step.status == "incomplete"


def test_knock_out_is_a_regression_at_the_labelled_step() -> None:
    res = run_episode("soup_sauce_basket", 0, parse_fault("knock_out@1"))
    lab = res.labels
    assert lab["event"] == "regression" and lab["failed_step"] == "1.3"
    assert lab["expected_verdict"] == "fail"  # knocked out and never put back (§5)
    oracle, _ = load_oracle_json(res.scene)
    report = check_trace(oracle, res.states)
    assert report.verdict == "fail" and report.failed_step == lab["failed_step"]
    regressions = [e for e in report.events if e.kind == "regression"]
    assert [e.path for e in regressions] == [lab["failed_step"]]
    assert abs(regressions[0].t - lab["failed_t"]) < 3.0
    assert SymbolicOracle(res.scene.goal).check(res.states).verdict == "fail"
