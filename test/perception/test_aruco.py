"""The aruco backend in the real sim with marker plates rendered on the objects, marker maps
and their errors, and the printed marker sheet.

OpenCV's marker frame (corners TL, TR, BR, BL at (-s/2, s/2), (s/2, s/2), (s/2, -s/2),
(-s/2, -s/2); z out of the face) is the one `solvePnP(SOLVEPNP_IPPE_SQUARE)` documents:
opencv/opencv, modules/calib3d/include/opencv2/calib3d.hpp (SOLVEPNP_IPPE_SQUARE).
"""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from mango.errors import InputError
from mango.geometry import quat_to_mat
from mango.perception.aruco import ArucoBackend
from mango.perception.base import PerceptionConfig, PerceptionError, RGBDFrame
from mango.perception.registry import make_backend
from mango.perception.sheet import marker_sheet, mm_to_px, write_sheet
from mango.perception.tabletop_eval import sim_frame
from mango.sim.env import SimEnv
from mango.sim.markers import MarkerMap, auto_marker_map, load_marker_map
from mango.sim.parts import part_transform
from mango.sim.scene import as_scene


def _angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip((np.trace(a.T @ b) - 1) / 2, -1, 1))))


@pytest.mark.parametrize("scene", ["mugs_plates", "two_moka_stove"])
def test_marker_poses_within_1cm_3deg_of_the_truth(scene: str) -> None:
    sc = as_scene(scene)
    mm = auto_marker_map(sc)
    with SimEnv(sc, seed=1, cameras=("front",), image_size=(640, 480), markers=mm) as env:
        frame, _ = sim_frame(env, "front")
        ws = env.world_state()
        poses, _ = ArucoBackend(mm, sc).poses(frame)
    marked = {m.entity for m in mm.markers}
    assert len({p.entity for p in poses}) >= len(marked) - 1  # one may be occluded
    for p in poses:
        truth = ws.objects[p.entity]
        t = np.eye(4)
        t[:3, :3], t[:3, 3] = quat_to_mat(truth.orientation), truth.position
        if p.part != "base":  # a part marker gives the part frame
            e = sc.entity(p.entity)
            assert e.joint is not None
            t = t @ part_transform(e, ws.joints[e.joint.id].q)
        assert np.linalg.norm(p.position - t[:3, 3]) < 0.01, p.entity
        assert _angle_deg(p.rotation, t[:3, :3]) < 3.0, p.entity
        assert p.refined


@pytest.mark.parametrize("scene", ["mugs_plates", "bowl_drawer", "mug_microwave",
                                   "book_caddy", "stove_moka"])
def test_without_markers_the_model_is_unchanged(scene: str) -> None:
    sc = as_scene(scene)
    mm = auto_marker_map(sc)
    with SimEnv(sc, cameras=()) as plain, SimEnv(sc, cameras=(), markers=mm) as marked:
        assert marked.model.ngeom == plain.model.ngeom + len(mm.markers)
        assert marked.model.ntex == plain.model.ntex + len(mm.markers)
        # the plates are visual: same contacts, same world state after settling (containers'
        # wall plates, the parts' plates: the drawer, door and knob move as before)
        for env in (plain, marked):
            env.step(duration=0.2)
        a, b = plain.world_state(), marked.world_state()
        assert a.contacts == b.contacts
        for e in sc.entities:
            assert np.allclose(a.objects[e.id].position, b.objects[e.id].position,
                               atol=1e-4), e.id
        for j in a.joints:
            assert a.joints[j].q == pytest.approx(b.joints[j].q, abs=1e-4), j


def test_detect_answers_phrases() -> None:
    sc = as_scene("mugs_plates")
    mm = auto_marker_map(sc)
    backend = make_backend(PerceptionConfig(backend="aruco", scene=sc,
                                            options={"markers": mm}))
    with SimEnv(sc, seed=0, cameras=("front",), image_size=(640, 480), markers=mm) as env:
        frame, _ = sim_frame(env, "front")
        ws = env.world_state()
    res = backend.detect(frame, ["the red mug", "marker 0", "plate_2", "the quantum flux"])
    assert [d.entity_id for d in res.detections] == ["red_coffee_mug_1", "plate_1", "plate_2"]
    assert res.unmatched == ("the quantum flux",)
    d = res.detections[0]
    assert np.linalg.norm(np.array(d.centroid) - ws.objects["red_coffee_mug_1"].position) < 0.01
    x0, y0, x1, y1 = d.box_2d
    assert 0 <= x0 < x1 <= 640 and 0 <= y0 < y1 <= 480
    blind = RGBDFrame("front", np.zeros_like(frame.rgb), frame.depth, frame.intrinsics,
                      frame.pose)
    res = backend.detect(blind, ["the red mug"])
    assert res.unmatched == ("the red mug",) and "not in view" in res.messages[0]
    res = backend.detect(RGBDFrame("front", frame.rgb, None, None, frame.pose), ["plate_1"])
    assert "no camera info" in res.messages[0]


def test_marker_map_errors_name_the_field(tmp_path: Path) -> None:
    sc = as_scene("mugs_plates")
    bad = MarkerMap.model_validate({"markers": [{"id": 3, "entity": "teapot", "size": 0.04}]})
    with pytest.raises(InputError, match="unknown entity 'teapot'") as e:
        bad.check_scene(sc)
    assert e.value.field == "markers[0].entity"
    f = tmp_path / "m.yaml"
    f.write_text("dictionary: 4x4_50\nmarkers:\n  - {id: 60, entity: plate_1, size: 0.04}\n")
    with pytest.raises(InputError, match="exceed dictionary 4x4_50"):
        load_marker_map(f)
    f.write_text("markers:\n  - {id: 1, entity: plate_1, size: -1}\n")
    with pytest.raises(InputError) as e:
        load_marker_map(f)
    assert str(f) in str(e.value) and "size" in str(e.value)
    f.write_text("markers:\n  - {id: 1, entity: plate_1, size: 0.04}\n"
                 "  - {id: 1, entity: plate_2, size: 0.04}\n")
    with pytest.raises(InputError, match="used twice: 1"):
        load_marker_map(f)
    with pytest.raises(PerceptionError, match=r"options\.markers"):
        make_backend(PerceptionConfig(backend="aruco"))


def test_marker_sheet_prints_at_true_size(tmp_path: Path) -> None:
    img = marker_sheet("apriltag_36h11", [0, 5, 7], 40.0, dpi=300)
    assert img.shape == (mm_to_px(297, 300), mm_to_px(210, 300))
    det = cv2.aruco.ArucoDetector(
        cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_APRILTAG_36h11))
    corners, ids, _ = det.detectMarkers(img)
    assert sorted(ids.ravel().tolist()) == [0, 5, 7]
    side_px = np.linalg.norm(corners[0].reshape(4, 2)[1] - corners[0].reshape(4, 2)[0])
    assert side_px == pytest.approx(40.0 / 25.4 * 300, abs=1.5)
    png, pdf = tmp_path / "s.png", tmp_path / "s.pdf"
    write_sheet(png, img, 300)
    write_sheet(pdf, img, 300)
    from PIL import Image

    assert Image.open(png).info["dpi"] == pytest.approx((300, 300), abs=0.01)
    box = re.search(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)", pdf.read_bytes())
    assert box is not None  # A4 in points: 595.3 x 841.9
    assert float(box.group(1)) == pytest.approx(595.3, abs=1)
    assert float(box.group(2)) == pytest.approx(841.9, abs=1)
    with pytest.raises(InputError, match="do not fit"):
        marker_sheet("4x4_50", list(range(50)), 60.0)
    with pytest.raises(InputError, match="not in dictionary"):
        marker_sheet("4x4_50", [50], 40.0)


def test_cli_markers(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from mango.cli.main import app

    out = tmp_path / "sheet.png"
    r = CliRunner().invoke(app, ["perception", "markers", "--ids", "0-3,9", "--size-mm", "30",
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.exists() and "300 DPI" in r.output
    r = CliRunner().invoke(app, ["perception", "markers", "--ids", "x", "--size-mm", "30",
                                 "-o", str(out)])
    assert r.exit_code == 2 and "'x' is not an id" in r.output
