"""`mango bddl import|export` end to end (commands.md §6), and what import writes accepted by
`mango generate oracle` and `mango oracle symbolic` as they are."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mango.cli.main import app
from mango.oracle.expr import iter_atoms, parse_expression

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "test" / "data" / "bddl"
TASKS = ROOT / "config" / "tasks" / "libero10.json"
runner = CliRunner()


def mango(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def libdir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lib")
    res = mango("generate", "library", "--tasks", TASKS, "-o", out, "--quiet")
    assert res.exit_code == 0, res.stderr
    return out


def test_import_writes_task_and_scene(tmp_path: Path) -> None:
    res = mango("bddl", "import", DATA / "kitchen_every_section.bddl", "-o", tmp_path / "k")
    assert res.exit_code == 0, res.stderr
    task = json.loads((tmp_path / "k" / "task.json").read_text())
    scene = json.loads((tmp_path / "k" / "scene.json").read_text())
    assert {"instruction", "goal", "problem", "objects", "fixtures"} <= set(task)
    assert task["instruction"] == scene["task_objects"][0]["id"]
    assert "layout" in scene["task_objects"][0]
    assert "goal: in(akita_black_bowl_1" in res.stderr and res.stdout == ""


@pytest.mark.parametrize("name", ["kitchen_every_section", "study_single_atom"])
def test_generate_oracle_and_symbolic_accept_the_import(name: str, tmp_path: Path,
                                                        libdir: Path) -> None:
    out = tmp_path / name
    assert mango("bddl", "import", DATA / f"{name}.bddl", "-o", out, "-q").exit_code == 0
    task = json.loads((out / "task.json").read_text())
    res = mango("generate", "oracle", "--instruction", task["instruction"], "--scene",
                out / "scene.json", "--libraries", libdir, "-o", out / "oracle.json", "--quiet")
    assert res.exit_code == 0, res.stderr
    lint = mango("oracle", "lint", out / "oracle.json", "--scene", out / "scene.json")
    assert lint.exit_code == 0, lint.stdout + lint.stderr
    # the symbolic goal: false at first, true at the end (facts decide every atom)
    atoms = task["goal_atoms"]
    trace = out / "trace.jsonl"
    trace.write_text(
        json.dumps({"t": 0.0, "facts": {a: False for a in atoms}}) + "\n"
        + json.dumps({"t": 1.0, "facts": {a: True for a in atoms}}) + "\n"
    )
    sym = mango("oracle", "symbolic", task["goal"], trace, "--json")
    assert sym.exit_code == 0, sym.stderr
    report = json.loads(sym.stdout)
    assert report["verdict"] == "pass" and report["first_satisfied_t"] == 1.0
    # the same goal in LIBERO's semantics, with the optional library
    lib = ROOT / "config" / "functions" / "libero.json"
    libero_trace = out / "libero.jsonl"
    libero_atoms = [str(a) for a in iter_atoms(parse_expression(task["goal_libero"]))]
    libero_trace.write_text(json.dumps({"t": 0.0, "facts": {a: True for a in libero_atoms}})
                            + "\n")
    sym = mango("oracle", "symbolic", task["goal_libero"], libero_trace, "--functions", lib,
                "--json")
    assert sym.exit_code == 0, sym.stderr
    assert json.loads(sym.stdout)["verdict"] == "pass"
    # task.json itself carries "goal", which `oracle symbolic` reads from a file
    assert json.loads(mango("oracle", "symbolic", out / "task.json", trace, "--json")
                      .stdout)["verdict"] == "pass"
    # and the generated oracle exports back to the BDDL goal's atoms
    exp = mango("bddl", "export", out / "oracle.json")
    assert exp.exit_code == 0, exp.stderr
    assert exp.stdout.startswith("(:goal\n  (And ")


def test_export_of_a_shipped_oracle_round_trips_through_the_parser() -> None:
    from mango.bddl.parser import parse_bddl

    res = mango("bddl", "export", ROOT / "config" / "oracles" / "libero10_stove_moka.json")
    assert res.exit_code == 0, res.stderr
    assert res.stdout == (
        "(:goal\n  (And (Turnon flat_stove_1) (On moka_pot_1 flat_stove_1_cook_region))\n)\n"
    )
    text = ("(define (problem p) (:language l) (:fixtures flat_stove_1 - flat_stove) "
            "(:objects moka_pot_1 - moka_pot) (:regions (cook_region (:target flat_stove_1)))"
            + res.stdout + ")")
    assert len(parse_bddl(text).goal_atoms()) == 2


def test_bad_bddl_is_one_error_line_with_file_line_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.bddl"
    bad.write_text("(define (problem p)\n  (:language x)\n  (:goal (And (On a b)))\n)\n")
    proc = subprocess.run(
        [sys.executable, "-m", "mango.cli.main", "bddl", "import", str(bad), "-o",
         str(tmp_path / "o")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        f"error: {bad}:3:19: 'a' is not a declared fixture, object or region\n"
    )
    assert not (tmp_path / "o" / "task.json").exists()


def test_output_that_is_a_file_and_missing_inputs(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    res = mango("bddl", "import", DATA / "study_single_atom.bddl", "-o", f)
    assert res.exit_code == 2 and "is a file, not a folder" in res.stderr
    res = mango("bddl", "import", tmp_path / "none.bddl", "-o", tmp_path / "o")
    assert res.exit_code == 2 and res.stderr.startswith("error: ") and "cannot read" in res.stderr
    res = mango("bddl", "export", tmp_path / "none.json")
    assert res.exit_code == 2 and res.stderr.startswith("error: ")


def test_export_of_an_oracle_without_a_state_is_exit_2(tmp_path: Path) -> None:
    o = tmp_path / "o.json"
    o.write_text(json.dumps({"instruction": "lift", "plan": [
        {"step": 1, "execution_mode": "sequential", "actions": [
            {"action_id": "pick_up", "parameters": {"obj_id": "x"},
             "monitoring": [{"oracle_id": "pick_up", "handle_as": "grasped(x) and up(x)"}]}]}]}))
    res = mango("bddl", "export", o)
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {o}: ") and res.stdout == ""
