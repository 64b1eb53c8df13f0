"""Camera poses from an extrinsics file (fixed and carried cameras) and from tf frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mango.control.kinematics import FR3Kinematics
from mango.control.robot import load_robot
from mango.control.robot_state import FrameTransform
from mango.errors import InputError
from mango.geometry import mat_to_quat, quat_to_mat
from mango.perception.base import PerceptionConfig, PerceptionError
from mango.perception.poses import FrameTree, load_extrinsics
from mango.perception.registry import make_backend
from mango.perception.sim_frames import sim_frame
from mango.sim.env import SimEnv

HOME = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]


def _write(tmp: Path, text: str) -> Path:
    p = tmp / "extrinsics.yaml"
    p.write_text(text)
    return p


def test_fixed_camera_from_file_gives_the_sim_truth(tmp_path: Path) -> None:
    """The sim's front camera written as an extrinsics file: the frame posed by the file puts
    the bowl where the physics has it (the file is what a lab's calibration provides)."""
    with SimEnv("libero10_bowl_drawer", 0, cameras=("front",), image_size=(640, 480)) as env:
        truth = env.reset(0).objects["akita_black_bowl_1"].position
        pos, rot = env.camera_pose("front")
        q = mat_to_quat(rot)
        ext = load_extrinsics(_write(tmp_path, f"""
cameras:
  front: {{mount: world, position: {pos.tolist()}, orientation: {q.tolist()}}}
"""))
        frame = sim_frame(env, "front")
    from dataclasses import replace

    posed = replace(frame, pose=ext.camera_pose("front"))
    backend = make_backend(PerceptionConfig(scene=env.scene))
    (det,) = backend.detect(posed, ["the black bowl"]).detections
    assert np.linalg.norm(np.subtract(det.centroid, truth)) < 0.01


def test_wrist_camera_rides_on_fk(tmp_path: Path) -> None:
    ext = load_extrinsics(_write(tmp_path, """
robot_base: {position: [-0.6, 0.0, 0.9], orientation: [1, 0, 0, 0]}
cameras:
  wrist: {mount: tcp, position: [0.05, 0.0, -0.04], orientation: [0, 0, 0, 1]}
"""))
    kin = FR3Kinematics(load_robot("fr3"))
    tcp_pos, tcp_quat = kin.fk(HOME)
    pose = ext.camera_pose("wrist", kin, HOME)
    r_tcp = quat_to_mat(tcp_quat)
    # the offset is in the TCP frame: 5 cm along its x, 4 cm back along its z
    expected = np.array([-0.6, 0.0, 0.9]) + tcp_pos + r_tcp @ [0.05, 0.0, -0.04]
    np.testing.assert_allclose(pose.position, expected, atol=1e-9)
    # a half turn about z: the camera's x and y are the TCP's, reversed; z the same
    np.testing.assert_allclose(pose.rotation, r_tcp @ np.diag([-1.0, -1.0, 1.0]), atol=1e-9)
    moved = ext.camera_pose("wrist", kin, [0.3, *HOME[1:]])
    assert np.linalg.norm(moved.position - pose.position) > 0.05
    assert ext.carried("wrist")
    with pytest.raises(PerceptionError, match="needs the measured joint positions"):
        ext.camera_pose("wrist")
    with pytest.raises(PerceptionError, match="no camera 'top'"):
        ext.camera_pose("top")


def test_bad_extrinsics_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        load_extrinsics(_write(tmp_path, """
cameras:
  front: {mount: world, position: [0, 0, 1], orientation: [1, 1, 0, 0]}
"""))
    assert "orientation" in str(e.value) and "unit quaternion" in str(e.value)
    with pytest.raises(InputError, match="mount"):
        load_extrinsics(_write(tmp_path, "cameras: {front: {mount: ceiling}}\n"))


def test_frame_tree_chains_parents() -> None:
    tree = FrameTree()
    assert tree.lookup("world", "wrist_camera") is None
    tree.update([FrameTransform("world", "base", (1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)),
                 FrameTransform("base", "wrist_camera", (0.0, 2.0, 0.0),
                                (0.7071068, 0.0, 0.0, 0.7071068))])
    pose = tree.camera_pose("world", "wrist_camera")
    assert pose is not None
    np.testing.assert_allclose(pose.position, [1.0, 2.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(pose.rotation @ [1, 0, 0], [0, 1, 0], atol=1e-6)
    tree.update([FrameTransform("wrist_camera", "base", (0, 0, 0), (1, 0, 0, 0))])  # a loop
    assert tree.lookup("world", "wrist_camera") is None


def test_frame_tree_takes_the_transform_nearest_the_image() -> None:
    tree = FrameTree()
    for k in range(5):
        tree.update([FrameTransform("world", "wrist_camera", (float(k), 0.0, 0.0),
                                    (1.0, 0.0, 0.0, 0.0))], stamp=0.1 * k)
    at = tree.camera_pose("world", "wrist_camera", stamp=0.21)
    assert at is not None and at.position[0] == 2.0
    newest = tree.camera_pose("world", "wrist_camera")
    assert newest is not None and newest.position[0] == 4.0
