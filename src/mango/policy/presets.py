"""Observation and action presets per policy family, as data.

One canonical internal schema (`Observation`: named RGB images, 7 joint positions, gripper
width, instruction; chunks: H x 8 absolute joint targets + gripper width) and, per family, how
it maps onto the wire: which camera goes under which key at which size and rotation, which
state fields in which order, and what the returned actions mean. Adding a family is adding an
entry to `PRESETS`, not a code branch. The chunk length is whatever the reply holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from mango.control.kinematics import Kinematics
from mango.errors import UnreachableError
from mango.geometry import axis_angle_to_mat, mat_to_axis_angle, mat_to_quat
from mango.geometry import quat_to_mat as _quat_to_mat
from mango.imaging import resize_with_pad
from mango.oracle.world_state import WorldState

StateField = Literal["joint_positions", "gripper_width", "gripper_fingers", "gripper_closedness",
                     "eef_pos", "eef_axis_angle"]
STATE_SIZES: dict[str, int] = {"joint_positions": 7, "gripper_width": 1, "gripper_fingers": 2,
                               "gripper_closedness": 1, "eef_pos": 3, "eef_axis_angle": 3}
MAX_WIDTH = 0.08


class PolicyError(RuntimeError):
    """The policy could not produce a chunk (server error, bad reply); says which and why."""


@dataclass(frozen=True)
class Observation:
    """What a policy sees, in the canonical schema."""

    images: Mapping[str, np.ndarray]  # camera name ("front", "wrist") -> HxWx3 uint8
    joint_positions: np.ndarray  # 7, rad
    gripper_width: float  # m
    instruction: str
    world_state: WorldState | None = None  # the expert reads the world, not pixels
    t: float = 0.0


@dataclass(frozen=True)
class ImageSpec:
    camera: str  # canonical camera name
    key: str  # key in the request
    size: tuple[int, int] = (224, 224)  # height, width (resized with padding)
    rotate_180: bool = False  # LIBERO renders upside down; its policies expect that


@dataclass(frozen=True)
class ActionSpec:
    """What a reply's action rows mean and how they become joint targets."""

    kind: Literal["joint_position", "joint_velocity", "ee_delta"]
    gripper: Literal["width", "closedness", "close_positive", "open_is_one"] = "width"
    pos_scale: float = 1.0  # ee_delta: metres per unit
    rot_scale: float = 1.0  # ee_delta: radians per unit (axis-angle)


@dataclass(frozen=True)
class ObservationPreset:
    name: str
    images: tuple[ImageSpec, ...]
    state: tuple[tuple[str, tuple[StateField, ...]], ...]  # (key, fields) per state entry
    action: ActionSpec
    prompt_key: str = "prompt"
    rate_hz: float = 15.0  # the rate the chunk rows are meant to be played at
    extra: Mapping[str, Any] = field(default_factory=dict)  # constant request fields

    def cameras(self) -> list[str]:
        return [i.camera for i in self.images]

    def encode(self, obs: Observation, kinematics: Kinematics | None = None) -> dict[str, Any]:
        """The request dict for this family (numpy arrays left as arrays)."""
        req: dict[str, Any] = dict(self.extra)
        for spec in self.images:
            img = obs.images.get(spec.camera)
            if img is None:
                raise PolicyError(f"preset {self.name}: no image from camera '{spec.camera}'")
            img = resize_with_pad(np.asarray(img, np.uint8), *spec.size)
            req[spec.key] = np.ascontiguousarray(img[::-1, ::-1] if spec.rotate_180 else img)
        for key, fields in self.state:
            req[key] = np.concatenate([state_field(f, obs, kinematics) for f in fields]).astype(
                np.float32)
        req[self.prompt_key] = obs.instruction
        return req

    def to_chunk(self, actions: np.ndarray, obs: Observation,
                 kinematics: Kinematics | None = None) -> np.ndarray:
        """Reply actions (H x D) -> H x 8 absolute joint targets + gripper width."""
        a = np.atleast_2d(np.asarray(actions, float))
        spec = self.action
        need = 8 if spec.kind == "joint_position" else 7 if spec.kind == "ee_delta" else 8
        if a.ndim != 2 or a.shape[1] < need or len(a) == 0:
            raise PolicyError(f"preset {self.name}: actions must be H x {need}, got "
                              f"{list(np.shape(actions))}")
        if not np.all(np.isfinite(a[:, :need])):
            raise PolicyError(f"preset {self.name}: the reply holds non-finite actions")
        width = np.array([gripper_width(v, spec.gripper) for v in a[:, need - 1]])
        if spec.kind == "joint_position":
            return np.column_stack([a[:, :7], width])
        if spec.kind == "joint_velocity":
            q = obs.joint_positions + np.cumsum(a[:, :7], axis=0) / self.rate_hz
            return np.column_stack([q, width])
        if kinematics is None:
            raise PolicyError(f"preset {self.name}: end-effector actions need kinematics")
        return _ee_deltas_to_joints(a, width, obs, kinematics, spec)


def _ee_deltas_to_joints(a: np.ndarray, width: np.ndarray, obs: Observation,
                         kinematics: Kinematics, spec: ActionSpec) -> np.ndarray:
    q = np.asarray(obs.joint_positions, float)
    pos, quat = kinematics.fk(q)
    rot = _quat_to_mat(quat)
    rows: list[np.ndarray] = []
    for k, row in enumerate(a):
        pos = pos + row[:3] * spec.pos_scale
        rot = axis_angle_to_mat(row[3:6] * spec.rot_scale) @ rot
        try:
            q = kinematics.ik(pos, mat_to_quat(rot), q)
        except UnreachableError as exc:
            if not rows:
                raise PolicyError(f"first action of the chunk is unreachable: {exc}") from None
            break  # execute the reachable prefix; the next query starts from there
        rows.append(np.r_[q, width[k]])
    return np.asarray(rows)


def gripper_width(value: float, convention: str) -> float:
    """A family's gripper value -> width in metres."""
    if convention == "width":
        return float(np.clip(value, 0.0, MAX_WIDTH))
    if convention == "closedness":  # 0 open .. 1 closed
        return float(np.clip(1.0 - value, 0.0, 1.0) * MAX_WIDTH)
    if convention == "close_positive":  # LIBERO: -1 open, +1 close
        return 0.0 if value > 0 else MAX_WIDTH
    if convention == "open_is_one":  # OpenVLA: 1 open, 0 closed
        return MAX_WIDTH if value > 0.5 else 0.0
    raise PolicyError(f"unknown gripper convention {convention!r}")


def state_field(name: str, obs: Observation, kinematics: Kinematics | None) -> np.ndarray:
    w = float(obs.gripper_width)
    if name == "joint_positions":
        return np.asarray(obs.joint_positions, float)
    if name == "gripper_width":
        return np.array([w])
    if name == "gripper_fingers":
        return np.array([w / 2, -w / 2])
    if name == "gripper_closedness":
        return np.array([1.0 - min(max(w / MAX_WIDTH, 0.0), 1.0)])
    if kinematics is None:
        raise PolicyError(f"state field {name} needs kinematics")
    pos, quat = kinematics.fk(obs.joint_positions)
    if name == "eef_pos":
        return pos
    if name == "eef_axis_angle":
        return mat_to_axis_angle(_quat_to_mat(quat))
    raise PolicyError(f"unknown state field {name!r}")


_FRONT_WRIST = (ImageSpec("front", "observation/image", rotate_180=True),
                ImageSpec("wrist", "observation/wrist_image", rotate_180=True))

PRESETS: dict[str, ObservationPreset] = {
    # This project's own layout: absolute joint targets + width (expert, joint-space servers).
    "joint": ObservationPreset(
        name="joint",
        images=(ImageSpec("front", "observation/image"),
                ImageSpec("wrist", "observation/wrist_image")),
        state=(("observation/state", ("joint_positions", "gripper_width")),),
        action=ActionSpec("joint_position", "width"), rate_hz=15.0),
    # openpi pi0/pi05 LIBERO checkpoints: 8-D state, end-effector delta actions (OSC scale).
    "libero": ObservationPreset(
        name="libero", images=_FRONT_WRIST,
        state=(("observation/state", ("eef_pos", "eef_axis_angle", "gripper_fingers")),),
        action=ActionSpec("ee_delta", "close_positive", pos_scale=0.05, rot_scale=0.5),
        rate_hz=20.0),
    # openpi DROID checkpoints: joint velocities + gripper closedness.
    "droid": ObservationPreset(
        name="droid",
        images=(ImageSpec("front", "observation/exterior_image_1_left"),
                ImageSpec("wrist", "observation/wrist_image_left")),
        state=(("observation/joint_position", ("joint_positions",)),
               ("observation/gripper_position", ("gripper_closedness",))),
        action=ActionSpec("joint_velocity", "closedness"), rate_hz=15.0),
    # OpenVLA REST: one front image, a 7-D end-effector delta (metres, radians) + gripper.
    "openvla": ObservationPreset(
        name="openvla", images=(ImageSpec("front", "image"),), state=(),
        action=ActionSpec("ee_delta", "open_is_one"), prompt_key="instruction", rate_hz=5.0,
        extra={"unnorm_key": "bridge_orig"}),
    # OpenVLA fine-tuned on LIBERO: normalised deltas at LIBERO's controller scale.
    "openvla_libero": ObservationPreset(
        name="openvla_libero", images=(ImageSpec("front", "image", rotate_180=True),), state=(),
        action=ActionSpec("ee_delta", "open_is_one", pos_scale=0.05, rot_scale=0.5),
        prompt_key="instruction", rate_hz=20.0, extra={"unnorm_key": "libero_10"}),
    # LeRobot checkpoints trained on joint-space data from this stack.
    "lerobot": ObservationPreset(
        name="lerobot",
        images=(ImageSpec("front", "observation.images.front"),
                ImageSpec("wrist", "observation.images.wrist")),
        state=(("observation.state", ("joint_positions", "gripper_width")),),
        action=ActionSpec("joint_position", "width"), prompt_key="task", rate_hz=15.0),
}


def get_preset(name: str) -> ObservationPreset:
    try:
        return PRESETS[name]
    except KeyError:
        raise PolicyError(f"unknown observation preset {name!r} "
                          f"(known: {', '.join(PRESETS)})") from None
