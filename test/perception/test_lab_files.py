"""The example lab files the FR3 stack starts with (config/lab): the marker map fits its scene
and is the sim's own map, and the calibration puts both cameras where the sim has them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.sim.env import SimEnv
from mango.sim.markers import auto_marker_map, load_marker_map
from mango.sim.scene import as_scene
from mango.stack import load_stack

LAB = Path(__file__).resolve().parents[2] / "config" / "lab"


def test_marker_map_is_the_scenes_auto_map() -> None:
    from mango.perception.poses import load_extrinsics

    stack = {n.name: n.parameters for n in load_stack("fr3").nodes}
    ws = stack["world_state_node"]
    assert Path(str(ws["markers"])).resolve() == LAB / "markers.yaml"
    assert Path(str(ws["extrinsics"])).resolve() == LAB / "extrinsics.yaml"
    sc = as_scene(str(ws["scene"]))
    mm = load_marker_map(LAB / "markers.yaml")
    mm.check_scene(sc)
    assert mm == auto_marker_map(sc)
    assert load_extrinsics(LAB / "extrinsics.yaml").cameras.keys() == {"front", "wrist"}


def test_calibration_matches_the_sims_cameras() -> None:
    from mango.perception.poses import load_extrinsics

    ext = load_extrinsics(LAB / "extrinsics.yaml")
    kin = FR3Kinematics(load_robot("fr3"))
    with SimEnv("libero10_mugs_plates", cameras=("front", "wrist")) as env:
        pos, quat = env.robot_base_pose()
        assert np.allclose(ext.robot_base.position, pos, atol=1e-3)
        assert np.allclose(ext.robot_base.orientation, quat, atol=1e-3)
        q = env.joint_positions().tolist()
        for cam in ("front", "wrist"):
            truth_p, truth_r = env.camera_pose(cam)
            got = ext.camera_pose(cam, kin, q)
            assert np.linalg.norm(got.position - truth_p) < 2e-3, cam
            assert np.abs(got.rotation - truth_r).max() < 2e-3, cam
