"""The tabletop backend on synthetic data (plane fit, colour words, phrase parsing) and on
the real sim's 640x480 renders, judged against the sim's physics and segmentation."""

from __future__ import annotations

import numpy as np
import pytest

from mango.perception.base import CameraPose, Intrinsics, RGBDFrame
from mango.perception.tabletop import TabletopBackend
from mango.perception.tabletop_eval import evaluate_grounding, mask_owner, sim_frame
from mango.perception.tabletop_grounding import parse_phrase
from mango.perception.tabletop_pipeline import (
    TabletopConfig,
    colour_vocabulary,
    colour_words,
    fit_plane_ransac,
)
from mango.sim.env import SimEnv
from mango.sim.scene import list_scenes


def test_ransac_finds_the_plane_among_outliers() -> None:
    rng = np.random.default_rng(1)
    xy = rng.uniform(-0.5, 0.5, (4000, 2))
    plane = np.column_stack([xy, 0.9 + 0.02 * xy[:, 0]])  # tilted ~1.1 deg
    clutter = rng.uniform([-0.5, -0.5, 0.9], [0.5, 0.5, 1.3], (2000, 3))
    normal, offset, inl = fit_plane_ransac(np.vstack([plane, clutter]), TabletopConfig())
    expected = np.array([-0.02, 0.0, 1.0]) / np.linalg.norm([-0.02, 0.0, 1.0])
    assert np.degrees(np.arccos(normal @ expected)) < 0.5
    assert offset == pytest.approx(0.9 * expected[2], abs=2e-3)
    assert inl[:4000].mean() > 0.95 and inl[4000:].mean() < 0.1


def test_no_horizontal_plane_is_no_plane() -> None:
    rng = np.random.default_rng(2)
    wall = np.column_stack([np.zeros(500), rng.uniform(-1, 1, (500, 2))])  # the x = 0 plane
    assert fit_plane_ransac(wall, TabletopConfig()) is None


@pytest.mark.parametrize(("rgb", "word"), [
    ((200, 20, 20), "red"), ((230, 220, 30), "yellow"), ((30, 160, 40), "green"),
    ((30, 60, 200), "blue"), ((10, 10, 10), "black"), ((245, 245, 245), "white"),
    ((120, 120, 120), "grey"), ((120, 80, 40), "brown"),
])
def test_colour_words(rgb: tuple[int, int, int], word: str) -> None:
    import cv2

    hsv = cv2.cvtColor(np.array([[rgb]], np.uint8), cv2.COLOR_RGB2HSV).reshape(1, 3)
    assert colour_vocabulary()[int(colour_words(hsv)[0])] == word


def test_parse_phrase() -> None:
    p = parse_phrase("The biggest red bowl next to the white plate")
    assert p.colours == ("red",) and p.category == "bowl" and p.sizes == ("biggest",)
    assert p.reference == "the white plate"
    assert parse_phrase("the leftmost mugs").category == "mug"
    assert parse_phrase("the quantum flux").empty


@pytest.fixture(scope="module")
def mugs() -> tuple[SimEnv, RGBDFrame, np.ndarray]:
    env = SimEnv("mugs_plates", seed=0, cameras=("front",), image_size=(640, 480))
    frame, seg = sim_frame(env, "front")
    yield env, frame, seg
    env.close()


def test_table_and_clusters_match_the_physics(mugs) -> None:
    env, frame, seg = mugs
    backend = TabletopBackend(env.scene.robot.base)
    sc, _ = backend.segment(frame)
    assert sc is not None and sc.plane is not None
    assert sc.plane.normal[2] > 0.999
    assert sc.plane.offset == pytest.approx(env.scene.table.height, abs=0.003)
    ws = env.world_state()
    owners = [mask_owner(c.mask, seg, env.segmentation_ids) for c in sc.clusters]
    assert sorted(o for o in owners if o) == sorted(e.id for e in env.scene.entities)
    for c, owner in zip(sc.clusters, owners, strict=True):
        # the box of the visible surface: its centre is biased toward the camera, by at most
        # about a radius for the mugs
        assert np.linalg.norm(c.centroid - np.array(ws.objects[owner].position)) < 0.025, owner
    plates = [c for c, o in zip(sc.clusters, owners, strict=True) if o.startswith("plate")]
    assert all(c.shape == "flat" and c.colour == "white" for c in plates)


@pytest.mark.parametrize(("phrase", "entity"), [
    ("the red mug", "red_coffee_mug_1"),
    ("the yellow mug", "white_yellow_mug_1"),
    ("the left plate", "plate_1"),  # LIBERO's left: as the front camera sees it, -y
    ("the right plate", "plate_2"),
    ("the leftmost mug", "red_coffee_mug_1"),
    ("the biggest object", "plate_1"),
    ("the mug next to the yellow mug", "porcelain_mug_1"),
])
def test_phrases_ground_on_the_right_entity(mugs, phrase: str, entity: str) -> None:
    env, frame, seg = mugs
    res = TabletopBackend(env.scene.robot.base).detect(frame, [phrase])
    assert not res.unmatched, res.messages
    det = res.detections[0]
    if entity == "plate_1":  # the two plates are the same size: either is the biggest
        assert mask_owner(det.mask, seg, env.segmentation_ids) in (
            ("plate_1",) if "left" in phrase else ("plate_1", "plate_2"))
    else:
        assert mask_owner(det.mask, seg, env.segmentation_ids) == entity
    assert det.entity_id is None and det.camera == "front"


def test_bad_frames_and_unknown_phrases_are_answers(mugs) -> None:
    env, frame, _ = mugs
    backend = TabletopBackend(env.scene.robot.base)
    res = backend.detect(frame, ["the quantum flux"])
    assert res.unmatched == ("the quantum flux",) and "no colour, size, shape" in res.messages[0]
    empty = RGBDFrame("front", frame.rgb, np.full_like(frame.depth, np.nan), frame.intrinsics,
                      frame.pose)
    res = backend.detect(empty, ["the red mug"])
    assert res.unmatched == ("the red mug",) and "no valid depth" in res.messages[0]
    no_info = RGBDFrame("front", frame.rgb, frame.depth, None, frame.pose)
    assert "no camera info" in backend.detect(no_info, ["the red mug"]).messages[0]
    # the camera turned to the sky: no table in view
    up = CameraPose(frame.pose.position, np.diag([1.0, -1.0, -1.0]))
    sky = RGBDFrame("front", frame.rgb, np.full_like(frame.depth, 3.0),
                    Intrinsics(640, 480, 500, 500, 319.5, 239.5), up)
    res = backend.detect(sky, ["the red mug"])
    assert res.unmatched and res.messages


def test_grounding_accuracy_on_libero10_scenes() -> None:
    # every described entity of the ten scenes, "the <description>", seed 0. Measured 0.77
    # over seeds 0-2 (README); the misses are phrases that geometry and colour cannot tell
    # apart (two grey cans, two yellow/white boxes) and the moka scene's left/right, which
    # contradicts the robot frame's. A drop below 0.7 is a regression.
    tally = evaluate_grounding(list_scenes(), [0])
    # 44 described entities once the scenes hold their BDDL's object sets
    assert sum(tally.asked.values()) == 44
    print(f"tabletop grounding accuracy {tally.accuracy:.2f}")
    assert tally.accuracy >= 0.7, tally.misses
