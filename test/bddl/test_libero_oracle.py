"""A LIBERO task's generated oracle read in LIBERO's semantics (`mango.bddl.libero_oracle`):
its state atoms become the `libero` library's, its intermediate actions keep their own
predicates, and on a state that LIBERO calls `On` but our rule does not yet (a bowl a few
millimetres above the stove's cook region, inside `SiteObject.under`'s band) the two readings
differ exactly there."""

from __future__ import annotations

import json
from pathlib import Path

from mango.bddl.libero_oracle import in_libero_semantics, judge, task_oracle
from mango.oracle.model import FineGrainedOracle
from mango.oracle.tracker import check_trace
from mango.oracle.world_state import WorldState

ORACLE = {"instruction": "put the bowl on the stove", "plan": [{"step": 1, "actions": [
    {"action_id": "pick_up", "parameters": {"obj_id": "bowl_1"},
     "monitoring": [{"oracle_id": "pick_up", "handle_as": "grasped(bowl_1) and up(bowl_1)"}]},
    {"action_id": "place_on", "parameters": {"obj_id": "bowl_1", "target_id": "stove_1_cook"},
     "monitoring": [{"oracle_id": "place_on",
                     "handle_as": "on(bowl_1, stove_1_cook) and not grasped(bowl_1)"}]},
    {"action_id": "close", "parameters": {"obj_id": "drawer_1"},
     "monitoring": [{"oracle_id": "close", "handle_as": "close(drawer_1) or in(x_1, y_1)"}]},
]}]}


def _handles(oracle: dict) -> list[str]:
    return [m["handle_as"] for a in oracle["plan"][0]["actions"] for m in a["monitoring"]]


def test_state_atoms_become_liberos_and_the_rest_is_kept() -> None:
    out = in_libero_semantics(ORACLE)
    assert _handles(out) == [
        "grasped(bowl_1) and up(bowl_1)",  # LIBERO has no notion of a lift mid-task
        "libero_on(bowl_1, stove_1_cook) and not grasped(bowl_1)",
        "libero_close(drawer_1) or libero_in(x_1, y_1)"]
    assert _handles(ORACLE)[1].startswith("on(")  # the input is left alone
    FineGrainedOracle.model_validate(out)
    assert in_libero_semantics(out) == out  # already LIBERO's: nothing to do


def _state(t: float, bowl_z: float, *, held: bool, on_plate: bool) -> WorldState:
    """A bowl over a plate; the hand at the bowl; contacts as LIBERO's `check_contact` says."""
    def box(z: float, size: list[float]) -> dict:
        return {"kind": "object", "position": [0.0, 0.01, z], "orientation": [1, 0, 0, 0],
                "size": size}
    contacts = [["akita_black_bowl_1", "plate_1"]] if on_plate else []
    if held:
        contacts += [["akita_black_bowl_1", "robot_left_finger"],
                     ["akita_black_bowl_1", "robot_right_finger"]]
    return WorldState.model_validate({
        "t": t, "objects": {"akita_black_bowl_1": box(bowl_z, [0.1, 0.1, 0.05]),
                            "plate_1": box(0.91, [0.2, 0.2, 0.02]),
                            "robot_hand": {**box(bowl_z + 0.02, [0.0, 0.0, 0.0]),
                                           "kind": "robot"}},
        "contacts": contacts, "gripper": {"width": 0.05 if held else 0.08, "closed": held}})


def test_a_task_oracle_is_generated_from_its_bddl_and_judged_with_liberos_predicates(
        tmp_path: Path) -> None:
    bddl = tmp_path / "put_the_bowl_on_the_plate.bddl"
    bddl.write_text(BDDL)
    oracle, approved = task_oracle(bddl)
    assert approved
    handles = _handles(oracle.model_dump(mode="json"))
    assert "libero_on(akita_black_bowl_1, plate_1)" in handles[-1], handles
    # reached, lifted, then let go 4.5 cm above its rest on the plate but touching it: LIBERO's
    # On (contact, centres 1 cm apart in xy, the plate's centre not above the bowl's) holds,
    # our bottom-on-top rule (2 cm) does not
    states = [_state(0.0, 0.96, held=False, on_plate=True),
              _state(0.5, 1.05, held=True, on_plate=False),
              _state(1.0, 0.99, held=False, on_plate=True)]
    assert judge(oracle, states).verdict == "pass"
    ours = FineGrainedOracle.model_validate(
        in_reverse(oracle.model_dump(mode="json")))
    report = check_trace(ours, states)
    assert report.verdict == "fail" and report.failed_step == f"1.{len(handles)}", report


def in_reverse(oracle: dict) -> dict:
    """The oracle as module III wrote it, in our own semantics."""
    return json.loads(json.dumps(oracle).replace("libero_", ""))


BDDL = """(define (problem LIBERO_Tabletop_Manipulation)
  (:domain robosuite)
  (:language Put the bowl on the plate)
  (:regions
    (plate_region (:target main_table) (:ranges ((0.0 0.1 0.02 0.12))))
    (bowl_region (:target main_table) (:ranges ((-0.1 -0.1 -0.08 -0.08))))
  )
  (:fixtures main_table - table)
  (:objects akita_black_bowl_1 - akita_black_bowl plate_1 - plate)
  (:obj_of_interest akita_black_bowl_1 plate_1)
  (:init (On akita_black_bowl_1 main_table_bowl_region) (On plate_1 main_table_plate_region))
  (:goal (And (On akita_black_bowl_1 plate_1)))
)
"""
