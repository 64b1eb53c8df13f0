"""The robot state core: the FR3 URDF's frames from the joint positions, as
robot_state_publisher computes them.

The reference is franka_description's FR3 URDF as franky-sim ships it
(frankarobotics/franka_description robots/fr3/fr3.urdf.xacro, expanded: joint origins xyz/rpy,
rotation about the joint's z axis; frame names fr3_link0..fr3_link8, fr3_hand, fr3_hand_tcp,
fr3_leftfinger, fr3_rightfinger). This test parses the URDF itself (a few lines of
ElementTree, independent of `mango.control.robot_state`) and composes each joint as the URDF
spec defines it: origin (rpy = fixed-axis roll, pitch, yaw), then the joint's motion.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from mango.control import FR3Kinematics, load_robot
from mango.control.robot_state import (
    RobotDescription,
    RobotState,
    absolute_mesh_uris,
    franky_sim_assets,
    load_robot_description,
)
from mango.errors import InputError

URDF = franky_sim_assets() / "fr3.urdf"


def _rot(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' formula, written out here so the test does not share the core's helpers."""
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def _reference_joints() -> dict[str, dict]:
    out = {}
    for j in ET.parse(URDF).getroot().iter("joint"):
        o = j.find("origin")
        xyz = [float(v) for v in (o.get("xyz", "0 0 0") if o is not None else "0 0 0").split()]
        rpy = [float(v) for v in (o.get("rpy", "0 0 0") if o is not None else "0 0 0").split()]
        m = np.eye(4)
        x, y, z = np.eye(3)
        m[:3, :3] = _rot(z, rpy[2]) @ _rot(y, rpy[1]) @ _rot(x, rpy[0])
        m[:3, 3] = xyz
        a = j.find("axis")
        axis = np.array([float(v) for v in (a.get("xyz") if a is not None else "1 0 0").split()])
        out[j.get("name")] = {"type": j.get("type"), "parent": j.find("parent").get("link"),
                              "child": j.find("child").get("link"), "origin": m, "axis": axis}
    return out


def _reference(joint: dict, value: float) -> np.ndarray:
    motion = np.eye(4)
    if joint["type"] in ("revolute", "continuous"):
        motion[:3, :3] = _rot(joint["axis"], value)
    elif joint["type"] == "prismatic":
        motion[:3, 3] = joint["axis"] * value
    return joint["origin"] @ motion


@pytest.fixture(scope="module")
def state() -> RobotState:
    description, file = load_robot_description()
    return RobotState(description, file)


def test_every_moving_joint_matches_the_urdf_for_random_positions(state: RobotState) -> None:
    ref = _reference_joints()
    rng = np.random.default_rng(7)
    robot = load_robot("fr3")
    for _ in range(50):
        q = rng.uniform(robot.lower, robot.upper)
        width = rng.uniform(0, 0.04)
        positions = {f"fr3_joint{i + 1}": float(v) for i, v in enumerate(q)}
        positions["fr3_finger_joint1"] = width
        got = {t.child: t for t in state.transforms(positions)}
        # the mimic joint follows fr3_finger_joint1, as in the URDF's <mimic>
        assert set(got) == {f"fr3_link{i}" for i in range(1, 8)} | {"fr3_leftfinger",
                                                                     "fr3_rightfinger"}
        for name, j in ref.items():
            if j["type"] == "fixed":
                continue
            value = width if "finger" in name else positions[name]
            t = got[j["child"]]
            assert t.parent == j["parent"]
            np.testing.assert_allclose(t.matrix(), _reference(j, value), atol=1e-9)


def test_fixed_joints_are_the_urdfs_origins(state: RobotState) -> None:
    ref = {j["child"]: j for j in _reference_joints().values() if j["type"] == "fixed"}
    got = {t.child: t for t in state.fixed_transforms()}
    assert set(got) == set(ref)
    assert {"fr3_link0", "fr3_link8", "fr3_hand", "fr3_hand_tcp"} <= set(got)
    for child, t in got.items():
        assert t.parent == ref[child]["parent"]
        np.testing.assert_allclose(t.matrix(), ref[child]["origin"], atol=1e-9)


def test_the_chain_to_the_tcp_is_the_pose_control_plans_with(state: RobotState) -> None:
    """base -> fr3_hand_tcp through the published transforms = FR3Kinematics.fk (control)."""
    robot = load_robot("fr3")
    kin = FR3Kinematics(robot)
    rng = np.random.default_rng(3)
    edges = {t.child: t for t in state.fixed_transforms()}
    for _ in range(20):
        q = rng.uniform(robot.lower, robot.upper)
        edges.update({t.child: t for t in state.transforms(
            {f"fr3_joint{i + 1}": float(v) for i, v in enumerate(q)})})
        m, frame = np.eye(4), "fr3_hand_tcp"
        while frame in edges:
            m = edges[frame].matrix() @ m
            frame = edges[frame].parent
        assert frame == "base"
        pos, quat = kin.fk(q)
        np.testing.assert_allclose(m[:3, 3], pos, atol=1e-9)
        np.testing.assert_allclose(abs(float(np.dot(quat, _quat(m[:3, :3])))), 1.0, atol=1e-9)


def _quat(r: np.ndarray) -> np.ndarray:
    from mango.geometry import mat_to_quat

    return mat_to_quat(r)


def test_unknown_names_are_ignored_and_the_ready_pose_is_franka_s(state: RobotState) -> None:
    ready = load_robot("fr3").home
    positions = {f"fr3_joint{i + 1}": v for i, v in enumerate(ready)} | {"gripper": 0.3}
    assert len(state.transforms(positions)) == 7
    # note robot-and-vision-assets.md: ready flange [0.30689, 0, 0.59028] in the base frame
    edges = {t.child: t for t in state.fixed_transforms() + state.transforms(positions)}
    m, frame = np.eye(4), "fr3_link8"
    while frame in edges:
        m = edges[frame].matrix() @ m
        frame = edges[frame].parent
    np.testing.assert_allclose(m[:3, 3], [0.30689, 0.0, 0.59028], atol=1e-5)


def test_mesh_paths_become_file_uris_that_exist() -> None:
    description, _ = load_robot_description()
    root = ET.fromstring(description.xml)
    names = [m.get("filename") for m in root.iter("mesh")]
    assert names and all(n.startswith("file:///") for n in names)
    for n in names:
        assert Path(n.removeprefix("file://")).is_file(), n
    kept = absolute_mesh_uris('<mesh filename="package://franka_description/x.dae"/>',
                              Path("/nowhere"))
    assert kept == '<mesh filename="package://franka_description/x.dae"/>'


def test_a_urdf_whose_fr3_joints_are_not_the_fr3_is_refused() -> None:
    text = URDF.read_text().replace('xyz="0 -0.316 0"', 'xyz="0 -0.4 0"', 1)
    with pytest.raises(InputError, match=r"fr3_joint3.*not the FR3"):
        RobotState(RobotDescription.parse(text, "bent.urdf"), "bent.urdf")


@pytest.mark.parametrize(("text", "match"), [
    ("<robot name='r'><link name='a'/>", "not valid XML"),
    ("<robt/>", "not <robot>"),
    ("<robot name='r'><link name='a'/><joint name='j' type='hinge'><parent link='a'/>"
     "<child link='a'/></joint></robot>", "joint 'j'.*unknown joint type"),
    ("<robot name='r'><link name='a'/><joint name='j' type='fixed'><parent link='a'/>"
     "<child link='b'/></joint></robot>", "child link 'b'"),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='fixed'>"
     "<origin xyz='0 0 nan'/><parent link='a'/><child link='b'/></joint></robot>",
     "origin xyz.*finite"),
    ("<robot name='r'><link name='a'/><link name='b'/><joint name='j' type='revolute'>"
     "<axis xyz='0 0 0'/><parent link='a'/><child link='b'/></joint></robot>", "axis is zero"),
])
def test_bad_urdf_says_where(text: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as err:
        RobotState(RobotDescription.parse(text, "r.urdf"), "r.urdf")
    assert "r.urdf" in str(err.value)


def test_a_missing_urdf_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the URDF") as err:
        load_robot_description(tmp_path / "none.urdf")
    assert "none.urdf" in str(err.value)
