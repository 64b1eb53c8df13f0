"""Observation and action presets per policy family, as data.

One canonical internal schema (`Observation`: named RGB images, 7 joint positions, gripper
width, instruction; chunks: H x 8 absolute joint targets + gripper width) and, per family, how
it maps onto the wire: which camera goes under which key at which size and rotation, which
state fields in which order, and what the returned actions mean. Adding a family is adding an
entry to `PRESETS`, not a code branch. The chunk length is whatever the reply holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from mango.control.kinematics import Kinematics
from mango.errors import UnreachableError
from mango.geometry import axis_angle_to_mat, mat_to_axis_angle, mat_to_quat
from mango.geometry import quat_to_mat as _quat_to_mat
from mango.ik import BRANCH_CAP
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
    # Turn the frame 180 degrees before sending. Our renders and cameras are upright, and so
    # are the images every family here was trained on (openpi's and OpenVLA's LIBERO clients
    # turn LIBERO's upside-down renders upright), so no preset sets it; it is for a source
    # that delivers frames upside down.
    rotate_180: bool = False


@dataclass(frozen=True)
class ActionSpec:
    """What a reply's action rows mean and how they become joint targets."""

    kind: Literal["joint_position", "joint_velocity", "ee_delta"]
    gripper: Literal["width", "closedness", "closed_above_half", "close_positive",
                     "open_is_one"] = "width"
    pos_scale: float = 1.0  # ee_delta: metres per unit
    rot_scale: float = 1.0  # ee_delta: radians per unit
    # ee_delta: how rows[3:6] turn the hand. "axis_angle": a rotation vector applied in the
    # base frame (robosuite's OSC controller, LIBERO); "euler": differences of the hand's
    # Euler angles (roll, pitch, yaw; static x-y-z), added to the current angles (Bridge).
    rotation: Literal["axis_angle", "euler"] = "axis_angle"
    clip: float | None = None  # rows are clipped to [-clip, clip] first (the peer's env does)
    # joint_velocity: radians per step for a unit velocity (DROID's max joint delta); the
    # rows are steps at the preset's rate, each added to the previous target.
    joint_delta: float = 0.0


@dataclass(frozen=True)
class ObservationPreset:
    name: str
    images: tuple[ImageSpec, ...]
    state: tuple[tuple[str, tuple[StateField, ...]], ...]  # (key, fields) per state entry
    action: ActionSpec
    prompt_key: str = "prompt"
    rate_hz: float = 15.0  # the rate the chunk rows are meant to be played at
    extra: Mapping[str, Any] = field(default_factory=dict)  # constant request fields
    # Where the robot base sits in the world frame the policy's end-effector state was
    # recorded in (None: the base frame). The base is taken as unrotated in that world.
    state_base: tuple[float, float, float] | None = None

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
            req[key] = np.concatenate([state_field(f, obs, kinematics, self.state_base)
                                       for f in fields]).astype(np.float32)
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
        a = a[:, :need]
        if spec.clip is not None:
            a = np.clip(a, -spec.clip, spec.clip)
        width = np.array([gripper_width(v, spec.gripper) for v in a[:, need - 1]])
        if spec.kind == "joint_position":
            return np.column_stack([a[:, :7], width])
        if spec.kind == "joint_velocity":
            return np.column_stack([joint_velocity_targets(a[:, :7], obs.joint_positions,
                                                           spec.joint_delta), width])
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
        if spec.rotation == "euler":
            rot = euler_to_mat(mat_to_euler(rot) + row[3:6] * spec.rot_scale)
        else:
            rot = axis_angle_to_mat(row[3:6] * spec.rot_scale) @ rot
        try:
            # the chunk's rows are a path: an answer on another branch would be one step
            # the controller refuses (a joint swinging at many times its limit)
            q = kinematics.ik(pos, mat_to_quat(rot), q, max_jump=BRANCH_CAP)
        except UnreachableError as exc:
            if not rows:
                raise PolicyError(f"first action of the chunk is unreachable: {exc}") from None
            break  # execute the reachable prefix; the next query starts from there
        rows.append(np.r_[q, width[k]])
    return np.asarray(rows)


def joint_velocity_targets(vel: np.ndarray, q0: np.ndarray, joint_delta: float) -> np.ndarray:
    """DROID's joint-velocity rows -> absolute joint targets, one per step.

    DROID's env scales each row so no joint exceeds 1, then moves `joint_delta` radians per
    unit in one control step (15 Hz), from where the arm is; played open-loop, a chunk's
    targets are the running sum from the observed joints.
    """
    v = np.asarray(vel, float)
    over = np.maximum(np.abs(v).max(axis=1, keepdims=True), 1.0)
    return np.asarray(q0, float) + np.cumsum(v / over * joint_delta, axis=0)


def mat_to_euler(m: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw (static x-y-z: m = Rz(yaw) Ry(pitch) Rx(roll)) of a rotation."""
    pitch = math.atan2(-m[2, 0], math.hypot(m[0, 0], m[1, 0]))
    if math.hypot(m[0, 0], m[1, 0]) < 1e-9:  # gimbal lock: yaw folded into roll
        return np.array([math.atan2(-m[1, 2], m[1, 1]), pitch, 0.0])
    return np.array([math.atan2(m[2, 1], m[2, 2]), pitch, math.atan2(m[1, 0], m[0, 0])])


def euler_to_mat(rpy: np.ndarray) -> np.ndarray:
    """Rotation of roll, pitch, yaw (static x-y-z), the inverse of `mat_to_euler`."""
    r, p, y = (float(v) for v in rpy)
    return (axis_angle_to_mat([0.0, 0.0, y]) @ axis_angle_to_mat([0.0, p, 0.0])
            @ axis_angle_to_mat([r, 0.0, 0.0]))


def gripper_width(value: float, convention: str) -> float:
    """A family's gripper value -> width in metres."""
    if convention == "width":
        return float(np.clip(value, 0.0, MAX_WIDTH))
    if convention == "closedness":  # 0 open .. 1 closed
        return float(np.clip(1.0 - value, 0.0, 1.0) * MAX_WIDTH)
    if convention == "closed_above_half":  # DROID: closedness, binarised at 0.5
        return 0.0 if value > 0.5 else MAX_WIDTH
    if convention == "close_positive":  # LIBERO: -1 open, +1 close
        return 0.0 if value > 0 else MAX_WIDTH
    if convention == "open_is_one":  # OpenVLA: 1 open, 0 closed
        return MAX_WIDTH if value > 0.5 else 0.0
    raise PolicyError(f"unknown gripper convention {convention!r}")


def state_field(name: str, obs: Observation, kinematics: Kinematics | None,
                base: Sequence[float] | None = None) -> np.ndarray:
    """One state entry; end-effector fields in the base frame, or in the world frame where
    the base sits at `base` (unrotated)."""
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
        return pos if base is None else pos + np.asarray(base, float)
    if name == "eef_axis_angle":
        return mat_to_axis_angle(_quat_to_mat(quat))
    raise PolicyError(f"unknown state field {name!r}")


# LIBERO's robot base in its world, per BDDL problem class (LIBERO registers them
# case-insensitively). `MountedPanda` (kitchen, tabletop, study) stands on robosuite's mount,
# which lifts the arm's root to 0.912 m (its bottom 0.922 m below the root, its top 0.01 m);
# `OnTheGroundPanda` (living room, coffee table, floor) has no mount: the root sits at the
# offset's own z. x = -0.16 - L/2 for a table of length L (kitchen, tabletop 1.0 m; living
# room, coffee table 0.70 m), -0.25 - L/2 for the study table (1.0 m), -0.6 on the floor.
# Read from LIBERO's envs/robots/{mounted,on_the_ground}_panda.py `base_xpos_offset` and the
# table sizes in envs/problems/*.py.
MOUNTED_ROOT_Z = 0.912
LIBERO_ROBOT_BASES: dict[str, tuple[float, float, float]] = {
    "libero_kitchen_tabletop_manipulation": (-0.16 - 1.0 / 2, 0.0, MOUNTED_ROOT_Z),
    "libero_tabletop_manipulation": (-0.16 - 1.0 / 2, 0.0, MOUNTED_ROOT_Z),
    "libero_study_tabletop_manipulation": (-0.25 - 1.0 / 2, 0.0, MOUNTED_ROOT_Z),
    "libero_living_room_tabletop_manipulation": (-0.16 - 0.70 / 2, 0.0, 0.42),
    "libero_coffee_table_manipulation": (-0.16 - 0.70 / 2, 0.0, 0.41),
    "libero_floor_manipulation": (-0.6, 0.0, 0.0),
}
LIBERO_DEFAULT_PROBLEM = "libero_kitchen_tabletop_manipulation"
LIBERO_ROBOT_BASE = LIBERO_ROBOT_BASES[LIBERO_DEFAULT_PROBLEM]


def libero_robot_base(problem: str) -> tuple[float, float, float]:
    """The robot base of a LIBERO problem class (`LIBERO_Living_Room_Tabletop_Manipulation`)."""
    base = LIBERO_ROBOT_BASES.get(problem.strip().lower())
    if base is None:
        raise PolicyError(f"unknown LIBERO problem class {problem!r} (known: "
                          f"{', '.join(LIBERO_ROBOT_BASES)})")
    return base


def with_libero_problem(preset: ObservationPreset, problem: str | None) -> ObservationPreset:
    """The preset with its end-effector state in that problem class's world (a preset whose
    state is in the base frame is returned as is): a LIBERO checkpoint saw each task's arena."""
    if preset.state_base is None or problem is None:
        return preset
    return replace(preset, state_base=libero_robot_base(problem))


PRESETS: dict[str, ObservationPreset] = {
    # This project's own layout: absolute joint targets + width (expert, joint-space servers).
    "joint": ObservationPreset(
        name="joint",
        images=(ImageSpec("front", "observation/image"),
                ImageSpec("wrist", "observation/wrist_image")),
        state=(("observation/state", ("joint_positions", "gripper_width")),),
        action=ActionSpec("joint_position", "width"), rate_hz=15.0),
    # openpi pi0/pi05 LIBERO checkpoints: upright images, 8-D state (hand position in LIBERO's
    # world, axis-angle, finger qpos), actions for robosuite's OSC controller: clipped to
    # [-1, 1], 0.05 m and 0.5 rad per unit, rotation vector; gripper -1 open, +1 close.
    "libero": ObservationPreset(
        name="libero",
        images=(ImageSpec("front", "observation/image"),
                ImageSpec("wrist", "observation/wrist_image")),
        state=(("observation/state", ("eef_pos", "eef_axis_angle", "gripper_fingers")),),
        action=ActionSpec("ee_delta", "close_positive", pos_scale=0.05, rot_scale=0.5,
                          clip=1.0),
        rate_hz=20.0, state_base=LIBERO_ROBOT_BASE),
    # openpi DROID checkpoints: joint velocities, clipped to [-1, 1], 0.2 rad per unit per
    # 15 Hz step; gripper closedness binarised at 0.5.
    "droid": ObservationPreset(
        name="droid",
        images=(ImageSpec("front", "observation/exterior_image_1_left"),
                ImageSpec("wrist", "observation/wrist_image_left")),
        state=(("observation/joint_position", ("joint_positions",)),
               ("observation/gripper_position", ("gripper_closedness",))),
        action=ActionSpec("joint_velocity", "closed_above_half", clip=1.0, joint_delta=0.2),
        rate_hz=15.0),
    # OpenVLA (Bridge V2): one image, a 7-D delta: metres, Euler-angle differences, gripper
    # (1 open, 0 closed), un-normalised with Bridge's statistics.
    "openvla": ObservationPreset(
        name="openvla", images=(ImageSpec("front", "image"),), state=(),
        action=ActionSpec("ee_delta", "open_is_one", rotation="euler"),
        prompt_key="instruction", rate_hz=5.0, extra={"unnorm_key": "bridge_orig"}),
    # OpenVLA fine-tuned on LIBERO-10: un-normalised to LIBERO's OSC units (as `libero`),
    # gripper 1 open; the released checkpoints' statistics are under `libero_10_no_noops`.
    "openvla_libero": ObservationPreset(
        name="openvla_libero", images=(ImageSpec("front", "image"),), state=(),
        action=ActionSpec("ee_delta", "open_is_one", pos_scale=0.05, rot_scale=0.5, clip=1.0),
        prompt_key="instruction", rate_hz=20.0, extra={"unnorm_key": "libero_10_no_noops"}),
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
