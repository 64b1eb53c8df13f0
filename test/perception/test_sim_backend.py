"""The `sim` backend against the simulator's ground truth, and its answers to what a camera
or a user may present (never an exception for those)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mango.generation.models import SceneTask
from mango.generation.offline.grounding import ground_phrase
from mango.oracle.world_state import WorldState
from mango.perception.base import PerceptionConfig, PerceptionError, RGBDFrame
from mango.perception.registry import make_backend
from mango.perception.sim_frames import sim_frame
from mango.perception.sim_segmentation import SimSegmentationBackend
from mango.sim.env import SimEnv
from mango.sim.scene import as_scene, list_scenes

SCENES = [p.stem for p in list_scenes()]


@dataclasses.dataclass
class Shot:
    env: SimEnv
    frame: RGBDFrame
    truth: WorldState
    backend: SimSegmentationBackend


@pytest.fixture(scope="module")
def shots() -> dict[str, Shot]:
    out: dict[str, Shot] = {}
    for name in SCENES:
        env = SimEnv(name, 0, cameras=("front", "wrist"), image_size=(640, 480))
        env.reset(1)
        backend = make_backend(PerceptionConfig(backend="sim", scene=env.scene))
        assert isinstance(backend, SimSegmentationBackend)
        out[name] = Shot(env, sim_frame(env, "front"), env.world_state(), backend)
    yield out
    for s in out.values():
        s.env.close()


@pytest.mark.parametrize("scene", SCENES)
def test_centroids_within_a_centimetre_of_the_truth(shots: dict[str, Shot], scene: str) -> None:
    """Every movable object in full view, asked for by its description: the centre of the
    box around its back-projected pixels is within 1 cm of its true position, and its extents
    within 1 cm of its true size. A mug's box also holds its handle, which the world state's
    size (the cup's cylinder) leaves out: for mugs, the box holds the cup instead."""
    s = shots[scene]
    h, w = s.frame.shape or (0, 0)
    checked = 0
    for e in s.env.scene.entities:
        if not e.movable:
            continue
        res = s.backend.detect(s.frame, [e.description or e.id])
        assert not res.unmatched, res.messages
        (det,) = res.detections
        assert det.entity_id == e.id and det.camera == "front"
        x0, y0, x1, y1 = det.box_2d
        if x0 == 0 or y0 == 0 or x1 == w or y1 == h:
            continue
        true = s.truth.objects[e.id]
        err = np.subtract(det.centroid, true.position)
        if e.shape == "mug":
            lo = np.subtract(det.centroid, np.divide(det.size, 2))
            hi = np.add(det.centroid, np.divide(det.size, 2))
            half = np.divide(true.size, 2)
            assert (lo <= np.subtract(true.position, half) + 0.005).all(), (e.id, lo)
            assert (hi >= np.add(true.position, half) - 0.005).all(), (e.id, hi)
            assert abs(err[2]) < 0.01
        else:
            assert np.linalg.norm(err) < 0.01, (e.id, err)
            ext = sorted(det.size[:2]), sorted(true.size[:2])
            np.testing.assert_allclose(ext[0], ext[1], atol=0.01 * math.sqrt(2), err_msg=e.id)
            assert abs(det.size[2] - true.size[2]) < 0.01, e.id
        checked += 1
    assert checked >= 1


def test_yaw_is_the_long_side_of_a_box(shots: dict[str, Shot]) -> None:
    """Boxes with a clearly longer side (book, cream cheese, butter): the footprint's major
    axis is the true long side's heading, modulo pi."""
    from mango.geometry import quat_yaw

    n = 0
    for s in shots.values():
        for e in s.env.scene.entities:
            if not (e.movable and e.shape == "box" and max(e.size[:2]) > 1.4 * min(e.size[:2])):
                continue
            (det,) = s.backend.detect(s.frame, [e.description or e.id]).detections
            true = s.truth.objects[e.id]
            long_axis = quat_yaw(true.orientation) + (0.0 if e.size[0] > e.size[1]
                                                      else math.pi / 2)
            diff = (det.yaw - long_axis + math.pi / 2) % math.pi - math.pi / 2
            assert abs(diff) < math.radians(5), (e.id, det.yaw, long_axis)
            n += 1
    assert n >= 3


def test_phrases_mean_what_they_mean_to_the_generator(shots: dict[str, Shot]) -> None:
    s = shots["libero10_two_moka_stove"]
    task = SceneTask(**s.env.scene.task_objects()["task_objects"][0])
    res = s.backend.detect(s.frame, ["both moka pots", "the stove"], max_results=0)
    assert sorted(d.entity_id for d in res.for_phrase("both moka pots")) == [
        e for e, _ in ground_phrase("both moka pots", task).matches]
    assert [d.entity_id for d in res.for_phrase("the stove")] == ["flat_stove_1"]
    capped = s.backend.detect(s.frame, ["both moka pots"], max_results=1)
    assert len(capped.detections) == 1
    for d in res.detections:
        assert 0 < d.score <= 1 and d.mask is not None and d.mask.shape == (480, 640)
        assert d.stamp == s.frame.stamp


def test_unknown_phrase_and_region_are_answers(shots: dict[str, Shot]) -> None:
    s = shots["libero10_stove_moka"]
    res = s.backend.detect(s.frame, ["a purple unicorn", "the moka pot", "the cook region"])
    assert [d.entity_id for d in res.detections] == ["moka_pot_1"]
    assert set(res.unmatched) == {"a purple unicorn", "the cook region"}
    text = " | ".join(res.messages)
    assert "no scene entity matches 'a purple unicorn'" in text
    assert "is a region, which has no pixels of its own" in text


def test_out_of_frame_empty_depth_and_no_camera_info(shots: dict[str, Shot]) -> None:
    s = shots["libero10_stove_moka"]
    nothing = dataclasses.replace(s.frame, segmentation=np.full_like(s.frame.segmentation, -1))
    res = s.backend.detect(nothing, ["the moka pot"])
    assert res.unmatched == ("the moka pot",)
    assert res.messages == ("'the moka pot': moka_pot_1 is not in view of camera 'front'",)
    empty = dataclasses.replace(s.frame, depth=np.full_like(s.frame.depth, np.nan))
    res = s.backend.detect(empty, ["the moka pot"])
    assert res.unmatched == ("the moka pot",) and "depth image is empty" in res.messages[0]
    no_info = dataclasses.replace(s.frame, intrinsics=None)
    assert "has no CameraInfo" in s.backend.detect(no_info, ["the moka pot"]).messages[0]
    no_pose = dataclasses.replace(s.frame, pose=None)
    assert "no pose in the world" in s.backend.detect(no_pose, ["the moka pot"]).messages[0]
    with pytest.raises(PerceptionError, match="gives no segmentation"):
        s.backend.detect(dataclasses.replace(s.frame, segmentation=None), ["the moka pot"])


def test_wrist_camera_sees_what_it_sees(shots: dict[str, Shot]) -> None:
    """The wrist camera's pose moves with the arm; whatever of the scene it shows lands at
    the same place as from the front camera."""
    s = shots["libero10_soup_sauce_basket"]
    wrist = sim_frame(s.env, "wrist")
    phrases = [e.description or e.id for e in s.env.scene.entities if e.movable]
    front = {d.entity_id: d for d in s.backend.detect(s.frame, phrases).detections}
    seen = s.backend.detect(wrist, phrases)
    compared = 0
    for d in seen.detections:
        h, w = wrist.shape or (0, 0)
        if d.box_2d[0] > 0 and d.box_2d[1] > 0 and d.box_2d[2] < w and d.box_2d[3] < h:
            assert np.linalg.norm(np.subtract(d.centroid, front[d.entity_id].centroid)) < 0.015
            compared += 1
    assert compared >= 1 and seen.unmatched
    for phrase in seen.unmatched:
        assert any("not in view of camera 'wrist'" in m for m in seen.messages if phrase in m)


def test_backend_needs_a_scene() -> None:
    with pytest.raises(PerceptionError, match="grounds phrases on a scene"):
        make_backend(PerceptionConfig(backend="sim"))
    with pytest.raises(PerceptionError, match="unknown perception backend 'nope'"):
        make_backend(PerceptionConfig(backend="nope", scene=as_scene("libero10_stove_moka")))
