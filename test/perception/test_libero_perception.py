"""The `sim` perception backend on LIBERO's own renders (`perception.libero_frames`): phrases
grounded in the task's BDDL scene, boxes from LIBERO's depth and segmentation with robosuite's
camera model, where LIBERO's simulation has the objects. Needs `.venv-libero`."""

from __future__ import annotations

import numpy as np
import pytest

from mango.bddl.libero_oracle import scene_task
from mango.perception.libero_frames import libero_camera, libero_rgbd
from mango.perception.sim_segmentation import SimSegmentationBackend
from mango.sim.libero import LiberoClient, parse_scene, world_state

pytestmark = [pytest.mark.libero, pytest.mark.slow]
SCENE = "libero/libero_spatial/0"


def test_phrases_are_found_where_libero_has_the_objects() -> None:
    with LiberoClient() as client:
        task = client.open(parse_scene(SCENE), 0)
        frame = libero_rgbd(client.render(libero_camera("front"), 320, 240))
        state = world_state(client.facts(), task.articulation, 0.0)
    backend = SimSegmentationBackend.for_task(SCENE, scene_task(task.bddl))
    result = backend.detect(frame, [
        "the black bowl between the plate and the ramekin", "the plate", "the ramekin",
        "the red mug"])
    found = {d.phrase: d for d in result.detections}
    assert found["the black bowl between the plate and the ramekin"].entity_id == \
        "akita_black_bowl_1"  # LIBERO's goal names this one (libero_spatial task 0)
    assert result.unmatched == ("the red mug",)  # no mug in this scene
    for d in found.values():
        truth = state.objects[d.entity_id]
        assert np.linalg.norm(np.asarray(d.centroid[:2]) - truth.position[:2]) < 0.015, d
        # the visible part of a body is never bigger than the body (no background in it)
        assert max(d.size[:2]) <= max(truth.size[:2]) + 0.01, (d.entity_id, d.size, truth.size)


def test_the_cli_detects_on_a_libero_task_and_names_bad_options() -> None:
    """`mango perception detect --scene libero/SUITE/TASK --seed K`: LIBERO's init state K,
    its agentview camera; the bowl the instruction means is the one LIBERO's goal names."""
    import json

    from typer.testing import CliRunner

    from mango.cli.main import app

    runner = CliRunner()
    scene = "libero/libero_spatial/7"  # pick up the black bowl on the stove, place it on ...
    res = runner.invoke(app, ["perception", "detect", "the black bowl on the stove", "--scene",
                              scene, "--seed", "3", "--width", "256", "--height", "192",
                              "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    with LiberoClient() as client:
        goal = client.open(parse_scene(scene), 3).goal
    assert [d["entity_id"] for d in out["detections"]] == [goal[0][1]]
    assert (out["camera"], out["seed"]) == ("agentview", 3)
    for args, field in ((["--backend", "tabletop"], "--backend"),
                        (["--camera", "side"], "--camera"), (["--seed", "50"], "--seed")):
        res = runner.invoke(app, ["perception", "detect", "the plate", "--scene", scene, *args])
        assert res.exit_code == 2 and f"field '{field}'" in res.stderr, (args, res.output)
        assert res.stderr.count("\n") == 1
