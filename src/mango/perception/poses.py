"""Where each camera is: from a calibration file, or from the tf frames a stack publishes.

Extrinsics file (YAML), what a hand-eye calibration gives (easy_handeye / MoveIt's hand-eye
calibration write the same quantities: the camera's optical frame in its mount frame):

    robot_base: {position: [x, y, z], orientation: [w, x, y, z]}   # base in the world
    cameras:
      front: {mount: world, position: [...], orientation: [w, x, y, z]}  # eye-to-hand
      wrist: {mount: tcp, position: [...], orientation: [...]}           # eye-in-hand

`mount: world` is fixed in the world, `base` fixed to the robot base, `tcp` carried by the
hand: its pose is the FK of the measured joints (`FR3Kinematics`, base -> TCP) then the
offset. Poses are always of the camera's ROS optical frame (z forward, x right, y down).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mango.control.kinematics import Kinematics
from mango.control.robot_state import FrameTransform
from mango.geometry import quat_to_mat
from mango.perception.base import CameraPose, PerceptionError
from mango.yaml_files import load_yaml_model

Finite = Annotated[float, Field(allow_inf_nan=False)]
Vec3 = tuple[Finite, Finite, Finite]
Quat = tuple[Finite, Finite, Finite, Finite]


class Placement(BaseModel):
    """A frame in its parent: position (m) and unit quaternion [w, x, y, z]."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    position: Vec3 = (0.0, 0.0, 0.0)
    orientation: Quat = (1.0, 0.0, 0.0, 0.0)

    @field_validator("orientation")
    @classmethod
    def _unit(cls, q: Quat) -> Quat:
        n = float(np.linalg.norm(q))
        if abs(n - 1.0) > 1e-3:
            raise ValueError(f"orientation {list(q)} is not a unit quaternion [w, x, y, z] "
                             f"(norm {n:.4f})")
        return q

    def matrix(self) -> np.ndarray:
        t = np.eye(4)
        t[:3, :3] = quat_to_mat(np.asarray(self.orientation, float)
                                / np.linalg.norm(self.orientation))
        t[:3, 3] = self.position
        return t


class CameraMount(Placement):
    mount: Literal["world", "base", "tcp"] = "world"


class Extrinsics(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    robot_base: Placement = Placement()
    cameras: dict[str, CameraMount]

    def carried(self, name: str) -> bool:
        """The camera moves with the hand (its pose needs the joints)."""
        return self.cameras[name].mount == "tcp"

    def camera_pose(self, name: str, kinematics: Kinematics | None = None,
                    joints: Sequence[float] | None = None) -> CameraPose:
        """World pose of a camera's optical frame; a `tcp` camera needs joints and FK."""
        cam = self.cameras.get(name)
        if cam is None:
            raise PerceptionError(f"the extrinsics have no camera '{name}' "
                                  f"(known: {', '.join(sorted(self.cameras))})")
        t = cam.matrix()
        if cam.mount in ("base", "tcp"):
            parent = self.robot_base.matrix()
            if cam.mount == "tcp":
                if kinematics is None or joints is None:
                    raise PerceptionError(f"camera '{name}' rides on the hand: its pose needs "
                                          "the measured joint positions")
                pos, quat = kinematics.fk(joints)
                tcp = np.eye(4)
                tcp[:3, :3], tcp[:3, 3] = quat_to_mat(quat), pos
                parent = parent @ tcp
            t = parent @ t
        return CameraPose.from_matrix(t)


def load_extrinsics(path: str | Path) -> Extrinsics:
    """Read an extrinsics YAML; errors name the file and field."""
    return load_yaml_model(path, Extrinsics, "extrinsics")


class FrameTree:
    """Recent transforms of each tf frame (parent -> child), and lookups of a frame in the
    root frame by walking its parents. A frame that moves (a wrist camera) keeps its last few
    transforms, and a lookup at a stamp takes the one nearest to it: the image's instant, not
    the newest tf (no interpolation: sim_node publishes a carried camera's tf with each of its
    frames, at the same stamp)."""

    def __init__(self, keep: int = 8) -> None:
        self.keep = keep
        self._parent: dict[str, list[tuple[float | None, str, np.ndarray]]] = {}

    def update(self, transforms: Iterable[FrameTransform], stamp: float | None = None) -> None:
        """Add transforms; `stamp` None marks them static (valid at any time)."""
        for t in transforms:
            m = np.eye(4)
            m[:3, :3], m[:3, 3] = quat_to_mat(t.rotation), t.translation
            hist = self._parent.setdefault(t.child, [])
            if stamp is None:
                hist.clear()
            hist.append((stamp, t.parent, m))
            del hist[:-self.keep]

    def _at(self, frame: str, stamp: float | None) -> tuple[str, np.ndarray] | None:
        hist = self._parent.get(frame)
        if not hist:
            return None
        if stamp is None:
            _, parent, m = hist[-1]
            return parent, m
        _, parent, m = min(hist, key=lambda h: 0.0 if h[0] is None else abs(h[0] - stamp))
        return parent, m

    def lookup(self, root: str, frame: str, stamp: float | None = None) -> np.ndarray | None:
        """`root`_T_`frame` (4x4) at `stamp` (None: newest), None when the chain does not
        reach `root`."""
        t = np.eye(4)
        node, seen = frame, set()
        while node != root:
            step = self._at(node, stamp)
            if node in seen or step is None:
                return None
            seen.add(node)
            node, m = step
            t = m @ t
        return t

    def camera_pose(self, root: str, frame: str, stamp: float | None = None
                    ) -> CameraPose | None:
        t = self.lookup(root, frame, stamp)
        return None if t is None else CameraPose.from_matrix(t)
