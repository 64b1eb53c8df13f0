"""Scenes as the commands take them: the shipped TASKS/SCENES examples under `config/tasks/` are
what the sim scenes say, `--scene` takes a scene YAML or name as well as the objects JSON, and
`generate score` finds executability in the shipped scenes without `--scenes`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mango.cli.main import app
from mango.sim.scene import list_scenes, load_scene

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "config/tasks/libero10.json"
SCENES = ROOT / "config/tasks/libero10_scenes.json"
runner = CliRunner()


def test_shipped_scenes_json_is_what_sim_objects_prints() -> None:
    result = runner.invoke(app, ["sim", "objects", "--all"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(SCENES.read_text()), \
        "regenerate: mango sim objects --all > config/tasks/libero10_scenes.json"


def test_shipped_tasks_are_the_scenes_instructions_in_libero_order() -> None:
    specs = sorted((load_scene(p) for p in list_scenes()), key=lambda s: s.task_index)
    assert json.loads(TASKS.read_text()) == [s.instruction for s in specs]
    assert [s.task_index for s in specs] == list(range(10))


def test_sim_objects_needs_a_scene_or_all() -> None:
    result = runner.invoke(app, ["sim", "objects"])
    assert result.exit_code == 2 and result.stderr.startswith("error: "), result.stderr
    two = runner.invoke(app, ["sim", "objects", "-s", "stove_moka", "-s", "bowl_drawer"])
    assert [e["id"] for e in json.loads(two.stdout)["task_objects"]] == [
        load_scene(ROOT / "config/scenes/libero10_stove_moka.yaml").instruction,
        load_scene(ROOT / "config/scenes/libero10_bowl_drawer.yaml").instruction]


@pytest.mark.parametrize("scene", ["config/scenes/libero10_stove_moka.yaml", "stove_moka"])
def test_lint_takes_a_scene_yaml_or_name(scene: str) -> None:
    oracle = str(ROOT / "config/oracles/libero10_stove_moka.json")
    ok = runner.invoke(app, ["oracle", "lint", oracle, "--scene", str(ROOT / scene)
                             if scene.endswith(".yaml") else scene, "--json"])
    assert ok.exit_code == 0, ok.stdout + ok.stderr
    assert json.loads(ok.stdout) == {"ok": True, "problems": []}
    wrong = runner.invoke(app, ["oracle", "lint", oracle, "--scene", "bowl_drawer", "--json"])
    assert wrong.exit_code == 1
    ungrounded = {p["message"].split("'")[1] for p in json.loads(wrong.stdout)["problems"]
                  if p["kind"] == "ungrounded"}
    assert {"moka_pot_1", "flat_stove_1"} <= ungrounded


def test_lint_dry_runs_in_the_scenes_initial_state(tmp_path: Path) -> None:
    """The YAML's initial state is the dry run's sample: `turnon` of the cabinet (a fixture, so
    the kinds allow it) fails there, as the cabinet is no device; the objects JSON alone,
    which has no state, cannot tell."""
    data = json.loads((ROOT / "config/oracles/libero10_bowl_drawer.json").read_text())
    data["plan"][0]["actions"][0]["monitoring"][0]["handle_as"] = "turnon(white_cabinet_1)"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    objects = tmp_path / "objects.json"
    objects.write_text(runner.invoke(app, ["sim", "objects", "-s", "bowl_drawer"]).stdout)
    from_json = runner.invoke(app, ["oracle", "lint", str(bad), "--scene", str(objects),
                                    "--json"])
    assert from_json.exit_code == 0, from_json.stdout + from_json.stderr
    from_yaml = runner.invoke(app, ["oracle", "lint", str(bad), "--scene", "bowl_drawer",
                                    "--json"])
    assert from_yaml.exit_code == 1, from_yaml.stdout + from_yaml.stderr
    [problem] = json.loads(from_yaml.stdout)["problems"]
    assert problem["kind"] == "dry_run" and "white_cabinet_1" in problem["message"], problem


def test_generate_oracle_takes_a_scene_yaml(tmp_path: Path) -> None:
    libs = tmp_path / "libs"
    assert runner.invoke(app, ["generate", "library", "--tasks", str(TASKS), "-o", str(libs),
                               "-q"]).exit_code == 0
    result = runner.invoke(app, [
        "generate", "oracle", "--instruction", "turn on the stove and put the moka pot on it",
        "--scene", str(ROOT / "config/scenes/libero10_stove_moka.yaml"), "--libraries", str(libs),
        "-o", f"{tmp_path}/out/", "-q"])
    assert result.exit_code == 0, result.stderr
    oracle = tmp_path / "out/turn_on_the_stove_and_put_the_moka_pot_on_it.json"
    assert json.loads(oracle.read_text())["instruction"].startswith("turn on the stove")


def test_score_without_scenes_uses_the_shipped_ones(tmp_path: Path) -> None:
    gen = tmp_path / "gen"
    made = runner.invoke(app, ["generate", "all", "--tasks", str(TASKS), "--scenes", str(SCENES),
                               "-o", str(gen), "-q"])
    assert made.exit_code == 0, made.stderr
    given = runner.invoke(app, ["generate", "score", str(gen), "--scenes", str(SCENES),
                                "--json"])
    default = runner.invoke(app, ["generate", "score", str(gen), "--json"])
    assert default.exit_code == given.exit_code == 0, default.stderr
    rows = json.loads(default.stdout)["oracles"]
    assert [r["executable"] for r in rows] == [True] * 10
    assert rows == json.loads(given.stdout)["oracles"]
    assert "executability not scored" not in default.stderr
    # an instruction no shipped scene has: scored without executability, and said so
    other = tmp_path / "other.json"
    data = json.loads(next((gen / "oracles").glob("00_*.json")).read_text())
    other.write_text(json.dumps({**data, "instruction": "stack the blocks"}))
    lone = runner.invoke(app, ["generate", "score", str(other), "--json"])
    assert lone.exit_code == 0, lone.stderr
    assert json.loads(lone.stdout)["oracles"][0]["executable"] is None
    assert "executability not scored for 1 of 1" in lone.stderr and "--scenes" in lone.stderr
