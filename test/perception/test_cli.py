"""`mango perception detect` per the binding contract (/work/shared/spec/commands.md §2 and
its preamble): field names, world frame, exit 0 / 2, one JSON object on stdout."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from mango.cli.main import app
from mango.sim.env import SimEnv

runner = CliRunner()
FIELDS = {"phrase", "entity_id", "label", "score", "box_2d", "centroid", "size", "yaw", "camera"}


def test_detect_json_follows_the_contract() -> None:
    res = runner.invoke(app, ["perception", "detect", "--scene", "libero10_bowl_drawer",
                              "--seed", "2", "--backend", "sim", "--camera", "front",
                              "the black bowl", "a purple unicorn", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {"detections", "unmatched"} <= set(out)
    (det,) = out["detections"]
    assert set(det) >= FIELDS
    assert det["phrase"] == "the black bowl" and det["entity_id"] == "akita_black_bowl_1"
    assert det["camera"] == "front" and len(det["box_2d"]) == 4
    assert out["unmatched"] == ["a purple unicorn"]
    with SimEnv("libero10_bowl_drawer", 2) as env:  # the initial state of that scene and seed
        true = env.reset(2).objects["akita_black_bowl_1"].position
    assert np.linalg.norm(np.subtract(det["centroid"], true)) < 0.01


def test_bad_input_exits_2_with_one_message() -> None:
    for args, says in [
        (["--scene", "no_such_scene", "x"], "unknown scene 'no_such_scene'"),
        (["--scene", "stove_moka", "--camera", "top", "x"], "unknown camera 'top'"),
        (["--scene", "stove_moka", "--backend", "yolo", "x"], "unknown perception backend"),
    ]:
        res = runner.invoke(app, ["perception", "detect", *args, "--json"])
        assert res.exit_code == 2, res.output
        assert res.stdout == "" and says in res.stderr and res.stderr.count("\n") == 1


def test_readable_output_names_phrases_and_reasons() -> None:
    res = runner.invoke(app, ["perception", "detect", "--scene", "stove_moka", "--camera",
                              "wrist", "the moka pot", "the stove", "a purple unicorn"])
    assert res.exit_code == 0, res.output
    assert "moka_pot_1" in res.stdout and "world frame" in res.stdout
    assert "no scene entity matches 'a purple unicorn'" in " ".join(res.stdout.split())
