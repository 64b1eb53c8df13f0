"""`mango task run` through its command-line contract (commands.md §4; `verdict` is the oracles.md
§6 report, `--exit-code` as oracles.md §6 says)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mango.cli.main import app
from mango.oracle.world_state import read_trace

runner = CliRunner()


def test_json_follows_the_contract_and_the_outputs_are_written(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    res = runner.invoke(app, ["task", "run", "--scene", "stove_moka", "--seed", "1", "--mode",
                              "full", "--monitor", "oracle", "--decider", "offline", "--fault",
                              "drop@0.3", "--trace", str(trace), "--record", str(tmp_path / "r"),
                              "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {"success", "subgoals", "decisions", "events", "recovered", "unrecovered",
            "wall_s", "pp_per_min", "verdict"} <= set(out)
    assert isinstance(out["success"], bool) and isinstance(out["decisions"], int)
    assert [set(s) >= {"instruction", "outcome"} for s in out["subgoals"]] == [True, True]
    assert all({"t", "kind"} <= set(e) for e in out["events"])
    assert any(e["kind"] == "object_regression" for e in out["events"])  # the drop, measured
    assert set(out["verdict"]) == {"verdict", "failed_step", "steps", "events"}
    assert out["verdict"]["verdict"] == ("pass" if out["success"] else "fail")
    if out["success"]:
        assert out["pp_per_min"] == pytest.approx(100 / (out["robot_s"] / 60), rel=1e-3)
    states = read_trace(trace)
    assert states[0].t == 0.0 and states[-1].t == pytest.approx(out["robot_s"], abs=0.1)
    lines = (tmp_path / "r" / "episode.jsonl").read_text().splitlines()
    kinds = [json.loads(ln)["record"] for ln in lines]
    assert kinds[0] == "plan" and kinds[-1] == "result" and kinds.count("decision") == \
        out["decisions"]
    assert json.loads((tmp_path / "r" / "result.json").read_text()) == out


def test_the_timeline_shows_subgoals_halts_decisions_and_step_verdicts() -> None:
    res = runner.invoke(app, ["task", "run", "--scene", "soup_sauce_basket", "--mode", "full",
                              "--monitor", "gt", "--fault", "wrong_object@1"])
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert "1. put the alphabet soup in the basket" in text
    assert "HALT (wrong_object_picked)" in text
    assert "decide [offline:recovery.wrong_object_in_hand] grasp_tool/grasp" in text
    assert "oracle step 1.3 place_in: completed" in text
    assert "oracle verdict: pass" in text


@pytest.mark.parametrize(("args", "message"), [
    (["--scene", "nope", "--mode", "full", "--monitor", "oracle"], "unknown scene 'nope'"),
    # LIBERO's tasks run in LIBERO's process, which the orchestrator does not drive yet
    (["--scene", "libero/libero_goal/1", "--mode", "full", "--monitor", "oracle"],
     "is LIBERO itself, which runs in its own process: `mango sim run --scene"),
    (["--scene", "stove_moka", "--mode", "fast", "--monitor", "oracle"], "unknown mode 'fast'"),
    (["--scene", "soup_sauce_basket", "--mode", "motor", "--monitor", "oracle", "--fault",
      "stall@3"], "only drop applies to its motions"),
    (["--scene", "stove_moka", "--mode", "full", "--monitor", "vlm", "--opt", "base_url"],
     "expected KEY=VALUE"),
    (["--scene", "stove_moka", "--mode", "full", "--monitor", "gt", "--model", "m"],
     "are for the vlm and local deciders"),
    (["--scene", "stove_moka", "--mode", "full", "--monitor", "gt", "--decider", "vlm",
      "--model", "m", "--opt", "bogus=1"], "unknown option(s) bogus"),
    (["--scene", "stove_moka", "--mode", "full", "--monitor", "gt", "--fault", "drop@2"],
     "drop@F needs 0 < F < 1"),
    (["--scene", "stove_moka", "--mode", "full", "--monitor", "gt", "--fault",
      "wrong_object@1"], "not a pick-and-place"),
    (["--scene", "bowl_drawer", "--mode", "full", "--monitor", "gt", "--instruction",
      "open the top drawer"], "no 'open' skill"),
])
def test_bad_input_is_one_error_line_and_exit_2(args: list[str], message: str) -> None:
    res = runner.invoke(app, ["task", "run", *args, "--json"])
    assert res.exit_code == 2, res.output
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]
    assert res.stdout == ""


def test_exit_code_reports_a_failed_verdict() -> None:
    args = ["task", "run", "--scene", "soup_sauce_basket", "--mode", "vla_only", "--monitor",
            "none", "--fault", "wrong_place@1", "--json"]
    plain = runner.invoke(app, args)
    assert plain.exit_code == 0 and json.loads(plain.stdout)["verdict"]["verdict"] == "fail"
    assert runner.invoke(app, [*args, "--exit-code"]).exit_code == 1
