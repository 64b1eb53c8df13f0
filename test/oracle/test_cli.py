"""`mango oracle check|lint|symbolic|functions`: outputs and exit codes per spec §6."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mango.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "test/data/oracle/libero"
ORACLE = ROOT / "config/oracles/libero10_soup_sauce_basket.json"
runner = CliRunner()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["oracle", *map(str, args)])
    return result.exit_code, result.stdout, result.stderr


def test_check_json_prints_one_spec_object_via_the_real_command() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mango.cli.main",
            "oracle",
            "check",
            str(ORACLE),
            str(DATA / "soup_sauce_basket_fail_late.jsonl"),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    data = json.loads(proc.stdout)  # exactly one JSON document
    assert proc.stdout.count("\n") == 1
    assert set(data) == {"verdict", "failed_step", "steps", "events"}
    assert data["verdict"] == "fail" and data["failed_step"] == "2.3"
    assert data["steps"][0] == {
        "path": "1.1",
        "action_id": "approach",
        "status": "completed",
        "completed_t": 1.4,
    }


def test_check_pass_exits_zero() -> None:
    code, out, _ = run("check", ORACLE, DATA / "soup_sauce_basket_pass.jsonl", "--json")
    assert code == 0 and json.loads(out)["verdict"] == "pass"


def test_check_table_output() -> None:
    code, out, _ = run("check", ORACLE, DATA / "soup_sauce_basket_regression.jsonl")
    assert code == 0
    # the soup was knocked out of the basket and never put back: an undone goal fails (§5)
    assert "regression" in out and "FAIL" in out and "failed step: 1.3" in out
    assert "completed, then undone ← failed here" in out and "place_in" in out


def test_check_hold_and_functions_options(tmp_path: Path) -> None:
    lib = tmp_path / "lib.json"
    code, _, _ = run("functions", "-o", lib)
    assert code == 0
    data = json.loads(lib.read_text())
    data["thresholds"]["up_height"] = 0.5  # nothing is ever lifted this high
    lib.write_text(json.dumps(data))
    code, out, _ = run(
        "check", ORACLE, DATA / "soup_sauce_basket_pass.jsonl", "--functions", lib, "--json"
    )
    assert code == 0 and json.loads(out)["failed_step"] == "2.2"  # last progress: reached the sauce
    code, out, _ = run(
        "check", ORACLE, DATA / "soup_sauce_basket_pass.jsonl", "--hold", "50", "--json"
    )
    assert json.loads(out)["verdict"] == "fail"


@pytest.mark.parametrize(
    ("oracle_text", "trace_text", "fragment"),
    [
        ("{", '{"t": 0}', "invalid JSON"),
        ('{"plan": []}', '{"t": 0}', "field 'plan'"),
        (
            '{"plan": [{"action_id": "a", "monitoring": [{"handle_as": "up(x) or"}]}]}',
            '{"t": 0}',
            "oracle.json:1:68, field 'plan[0].monitoring[0].handle_as': expected",
        ),
        (
            '{"plan": [{"action_id": "a", "monitoring": [{"handle_as": "fly(x)"}]}]}',
            '{"t": 0}',
            "unknown predicate 'fly'",
        ),
        (
            '{"plan": [{"action_id": "a", "monitoring": [{"handle_as": "up(x)"}]}]}',
            '{"t": 0, "facts": {"up(x)": false}}\n{"t": "soon"}',
            "trace.jsonl:2",
        ),
        (
            '{"plan": [{"action_id": "a", "monitoring": [{"handle_as": "up(x)"}]}]}',
            '{"t": 0, "facts": {"up(x)": false}}\n\n{"t": 1}',
            "trace.jsonl:3: step 1 (a) at t=1.0",
        ),
        (
            '{"plan": [{"action_id": "a", "monitoring": [{"handle_as": "up(x)"}]}]}',
            '{"t": 1, "facts": {"up(x)": false}}\n{"t": 0, "facts": {"up(x)": false}}',
            "backwards",
        ),
    ],
)
def test_check_bad_input_exits_2_with_one_error_line(
    tmp_path: Path, oracle_text: str, trace_text: str, fragment: str
) -> None:
    o, t = tmp_path / "oracle.json", tmp_path / "trace.jsonl"
    o.write_text(oracle_text)
    t.write_text(trace_text)
    code, out, err = run("check", o, t, "--json")
    assert code == 2
    assert out == ""
    assert err.startswith("error: ")
    assert fragment in err
    assert "Traceback" not in err


def test_check_missing_files_exit_2(tmp_path: Path) -> None:
    code, _, err = run("check", tmp_path / "nope.json", DATA / "stove_moka_pass.jsonl")
    assert code == 2 and "cannot read oracle" in err
    code, _, err = run("check", ORACLE, tmp_path / "nope.jsonl")
    assert code == 2 and "cannot read trace" in err


def test_lint_clean_and_with_problems(tmp_path: Path) -> None:
    code, out, _ = run(
        "lint",
        ROOT / "config/oracles/libero10_bowl_drawer.json",
        "--scene",
        DATA / "bowl_drawer_pass.jsonl",
        "--json",
    )
    assert code == 0 and json.loads(out) == {"ok": True, "problems": []}
    o = tmp_path / "o.json"
    o.write_text(
        json.dumps(
            {
                "instruction": "x",
                "plan": [
                    {
                        "action_id": "a",
                        "monitoring": [{"handle_as": "in(akita_black_bowl_1, drawer_9)"}],
                    },
                    {"action_id": "b", "monitoring": [{"handle_as": "up(akita_black_bowl_1"}]},
                ],
            }
        )
    )
    code, out, _ = run("lint", o, "--scene", DATA / "bowl_drawer_pass.jsonl", "--json")
    assert code == 1
    assert [(p["path"], p["kind"]) for p in json.loads(out)["problems"]] == [
        ("1", "ungrounded"),
        ("2", "parse_error"),
    ]
    code, out, _ = run("lint", o)
    assert code == 1 and "parse_error" in out


def test_lint_with_task_objects_scene_and_state(tmp_path: Path) -> None:
    scene = tmp_path / "scene.json"
    scene.write_text(
        json.dumps(
            {
                "task_objects": [
                    {
                        "id": "put the black bowl in the bottom drawer of the cabinet and close it",
                        "objects": ["akita_black_bowl_1"],
                        "states": [
                            "akita_black_bowl_1",
                            "white_cabinet_1_bottom_region",
                            "white_cabinet_1",
                        ],
                        "kinds": {
                            "akita_black_bowl_1": "object",
                            "white_cabinet_1_bottom_region": "region",
                        },
                    }
                ]
            }
        )
    )
    code, _, err = run(
        "lint",
        ROOT / "config/oracles/libero10_bowl_drawer.json",
        "--scene",
        scene,
        "--state",
        DATA / "bowl_drawer_pass.jsonl",
    )
    assert code == 0, err
    code, _, err = run(
        "lint",
        ROOT / "config/oracles/libero10_bowl_drawer.json",
        "--scene",
        tmp_path / "missing.json",
    )
    assert code == 2 and "cannot read scene" in err


def test_symbolic_goal_expression_and_goal_file() -> None:
    trace = DATA / "soup_sauce_basket_regression.jsonl"
    code, out, _ = run("symbolic", ORACLE, trace, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["verdict"] == "fail"
    assert data["goal"] == (
        "in(alphabet_soup_1, basket_1_contain_region) and "
        "in(tomato_sauce_1, basket_1_contain_region)"
    )
    code, out, _ = run("symbolic", "in(tomato_sauce_1, basket_1_contain_region)", trace, "--json")
    assert code == 0 and json.loads(out)["verdict"] == "pass"
    code, out, _ = run("symbolic", "in(tomato_sauce_1, basket_1_contain_region)", trace)
    assert code == 0 and "PASS" in out


def test_symbolic_bad_goal_exits_2() -> None:
    code, _, err = run("symbolic", "in(a,", DATA / "stove_moka_pass.jsonl")
    assert code == 2 and "column 6" in err
    code, _, err = run("symbolic", "up(ghost)", DATA / "stove_moka_pass.jsonl")
    assert code == 2 and "stove_moka_pass.jsonl:1" in err and "'ghost'" in err
    code, _, err = run(
        "symbolic", str(ROOT / "config/functions/default.json"), DATA / "stove_moka_pass.jsonl"
    )
    assert code == 2 and "no string field" in err


def test_functions_export_matches_committed_default() -> None:
    code, out, _ = run("functions")
    assert code == 0
    assert json.loads(out) == json.loads((ROOT / "config/functions/default.json").read_text())


@pytest.mark.parametrize(
    ("command", "trace", "code"),
    [
        ("check", "soup_sauce_basket_pass.jsonl", 0),
        ("check", "soup_sauce_basket_fail_late.jsonl", 1),
        ("check", "soup_sauce_basket_regression.jsonl", 1),
        ("symbolic", "soup_sauce_basket_pass.jsonl", 0),
        ("symbolic", "soup_sauce_basket_fail_late.jsonl", 1),
    ],
)
def test_exit_code_flag_fails_on_a_fail_verdict(command: str, trace: str, code: int) -> None:
    """Spec §6: `--exit-code` exits 1 on fail (for CI), still printing the one JSON object."""
    plain, out, _ = run(command, ORACLE, DATA / trace, "--json")
    gated, gated_out, _ = run(command, ORACLE, DATA / trace, "--json", "--exit-code")
    assert plain == 0  # without the flag a judged trace exits 0, pass or fail
    assert gated == code and gated_out == out
    assert json.loads(out)["verdict"] == ("pass" if code == 0 else "fail")



@pytest.mark.parametrize("command", ["check", "symbolic"])
def test_an_empty_trace_is_bad_input_not_a_verdict(command: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    code, out, err = run(command, ORACLE, empty, "--json")
    assert code == 2 and out == ""
    assert err == f"error: {empty}: the trace holds no world states: nothing to judge\n"
