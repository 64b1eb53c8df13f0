"""`mango sim`: scenes listing, a run whose trace `mango oracle check` accepts, input errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mango.cli.main import app

DATA = Path(__file__).resolve().parents[1] / "data" / "sim"
runner = CliRunner()


def test_scenes_lists_the_ten_libero_scenes() -> None:
    res = runner.invoke(app, ["sim", "scenes", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert len(rows) == 10
    assert {r["task_index"] for r in rows} == set(range(10))
    assert all(r["oracle_exists"] for r in rows)


def test_run_writes_trace_labels_and_video_that_the_oracle_accepts(tmp_path: Path) -> None:
    trace = tmp_path / "out" / "run.jsonl"
    video = tmp_path / "out" / "run.gif"
    res = runner.invoke(app, ["sim", "run", "--scene", "stove_moka", "--seed", "1", "--fault",
                              "skip@1", "--trace", str(trace), "--video", str(video), "-q"])
    assert res.exit_code == 0, res.output
    labels = json.loads(trace.with_suffix(".labels.json").read_text())
    assert labels["fault"] == "skip@1" and labels["failed_step"] == "1.1"
    assert video.stat().st_size > 1000
    check = runner.invoke(app, ["oracle", "check", "config/oracles/libero10_stove_moka.json",
                                str(trace), "--json"])
    assert check.exit_code == 0, check.output
    report = json.loads(check.stdout)
    assert report["verdict"] == "fail" and report["failed_step"] == labels["failed_step"]


def test_run_accepts_a_scene_path(tmp_path: Path) -> None:
    trace = tmp_path / "tiny.jsonl"
    labels = tmp_path / "tiny_labels.json"
    res = runner.invoke(app, ["sim", "run", "--scene", str(DATA / "tiny_basket.yaml"),
                              "--trace", str(trace), "--labels", str(labels), "-q"])
    assert res.exit_code == 0, res.output
    lab = json.loads(labels.read_text())
    assert lab["scene"] == "tiny_basket" and lab["expected_verdict"] == "pass"
    assert lab["oracle"] is None  # a scene without an oracle file still runs
    assert len(trace.read_text().splitlines()) > 100


def test_bad_input_exits_2_with_one_error_line(tmp_path: Path) -> None:
    for args, msg in [
        (["--scene", "nope"], "unknown scene 'nope'"),
        (["--scene", "stove_moka", "--fault", "melt@2"], "field 'fault'"),
        (["--scene", "book_caddy", "--fault", "knock_out@1"], "before the last step"),
        (["--scene", str(DATA / "bad_region_parent.yaml")], "unknown parent"),
        (["--scene", "stove_moka", "--video", str(tmp_path / "v.avi")], "mp4 or .gif"),
    ]:
        res = runner.invoke(app, ["sim", "run", *args, "--trace", str(tmp_path / "t.jsonl")])
        assert res.exit_code == 2, (args, res.output)
        assert res.stderr.startswith("error: ") and msg in res.stderr
        assert "Traceback" not in res.output


def test_a_full_disk_names_the_file_it_could_not_write(tmp_path: Path) -> None:
    """/dev/full answers every write with ENOSPC, an error that names no file: the message
    names the output being written (it said only 'cannot write output', issue #41)."""
    scene = str(DATA / "tiny_basket.yaml")
    for args, full in [(["--trace", "/dev/full"], "/dev/full"),
                       (["--trace", str(tmp_path / "t.jsonl"), "--labels", "/dev/full"],
                        "/dev/full")]:
        res = runner.invoke(app, ["sim", "run", "--scene", scene, *args, "-q"])
        assert res.exit_code == 2, res.output
        assert res.stderr == f"error: {full}: cannot write output: No space left on device\n"


def test_objects_gives_the_grounding_input() -> None:
    res = runner.invoke(app, ["sim", "objects", "--scene", "mug_microwave"])
    assert res.exit_code == 0, res.output
    entry = json.loads(res.stdout)["task_objects"][0]
    assert entry["id"] == "put the yellow and white mug in the microwave and close it"
    assert "white_yellow_mug_1" in entry["objects"] and "microwave_1" not in entry["objects"]
    assert entry["kinds"]["microwave_1"] == "fixture"
    assert entry["kinds"]["microwave_1_heating_region"] == "region"
    assert entry["descriptions"]["porcelain_mug_1"] == "white mug"
