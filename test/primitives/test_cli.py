"""`mango primitives` per the binding contract (/work/shared/spec/commands.md §3 and its
preamble): the JSON fields, one JSON object on stdout, --trace with the run's ground-truth
world states, exit 2 with one `error:` line on bad input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mango.cli.main import app
from mango.oracle.world_state import read_trace

runner = CliRunner()


def test_pick_place_json_follows_the_contract(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    res = runner.invoke(app, ["primitives", "pick-place", "--scene", "libero10_soup_sauce_basket",
                              "--seed", "0", "--perception", "sim", "the alphabet soup",
                              "in the basket", "--trace", str(trace), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)  # exactly one object, nothing else on stdout
    assert {"grasp", "place", "message"} <= set(out)
    assert {"status", "entity_id", "grasped"} <= set(out["grasp"])
    assert {"status", "release_position", "satisfied"} <= set(out["place"])
    assert out["grasp"] | {"status": "succeeded", "entity_id": "alphabet_soup_1",
                           "grasped": True} == out["grasp"]
    assert out["place"]["status"] == "succeeded" and out["place"]["satisfied"] is True
    assert len(out["place"]["release_position"]) == 3
    states = read_trace(trace)
    assert len(states) > 30 and states[0].t < states[-1].t
    # the trace is the physics: the soup ends in the basket
    last = states[-1]
    assert last.objects["alphabet_soup_1"].position[2] > 0.93
    assert abs(last.objects["alphabet_soup_1"].position[1] - (-0.22)) < 0.1


def test_a_phrase_matching_nothing_is_a_job_done_with_the_reason() -> None:
    res = runner.invoke(app, ["primitives", "pick-place", "--scene", "stove_moka",
                              "a purple unicorn", "on the stove", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["grasp"]["status"] == "rejected" and out["grasp"]["grasped"] is False
    assert out["place"]["status"] == "rejected" and out["place"]["satisfied"] is False
    assert "'a purple unicorn' matches nothing" in out["message"]


def test_bad_input_exits_2_with_one_message() -> None:
    for args, says in [
        (["pick-place", "--scene", "no_such_scene", "x", "in the basket"],
         "unknown scene 'no_such_scene'"),
        (["pick-place", "--scene", "stove_moka", "the moka pot", "somewhere"],
         "destination 'somewhere' does not follow the place phrasing"),
        (["pick-place", "--scene", "stove_moka", "--perception", "yolo", "x", "on the stove"],
         "unknown perception backend"),
        (["grasp", "--scene", "stove_moka", "--camera", "top", "x"], "unknown camera 'top'"),
        (["place", "--scene", "stove_moka", "over there"], "does not follow the place"),
    ]:
        res = runner.invoke(app, ["primitives", *args, "--json"])
        assert res.exit_code == 2, (args, res.output)
        assert res.stdout == "" and says in res.stderr and res.stderr.count("\n") == 1, (
            args, res.stderr)


def test_grasp_prints_the_measured_outcome() -> None:
    res = runner.invoke(app, ["primitives", "grasp", "--scene", "stove_moka", "the moka pot"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("grasp: succeeded - holding 'moka_pot_1' (gripper width ")
