"""The hand on LIBERO: its measured pose and the 7-D OSC action that servos it to a target.

Conventions read from robosuite 1.4.0 as installed in `.venv-libero`:
- `robosuite/controllers/config/osc_pose.json` (LIBERO's `envs/env_wrapper.py` ControlEnv loads
  this default for `controller="OSC_POSE"`, `control_freq=20`): an action's first six numbers
  lie in [-1, 1] and scale to ±0.05 m and ±0.5 rad per control step, `control_delta` true;
- `robosuite/controllers/osc.py` `OSC.set_goal` with `control_utils.set_goal_position` /
  `set_goal_orientation`: the goal position is the current grip-site position plus the scaled
  delta; the goal orientation is `R(axis-angle delta) @ current` (a world-frame rotation), and an
  all-zero rotation keeps the previous goal orientation;
- `robosuite/robots/single_arm.py`: the controller's end effector is the gripper's `grip_site`
  (what `LiberoClient.facts()["gripper"]` reports: position, frame, finger-pad centres);
- `robosuite/models/grippers/panda_gripper.py` `PandaGripper.format_action`: the 7th number's
  sign moves the fingers' command 0.01 per physics step towards open (-1) or closed (+1); 0
  holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

POS_SCALE = 0.05  # m per unit action (osc_pose.json output_max)
ROT_SCALE = 0.5  # rad per unit action
OPEN, CLOSE, HOLD = -1.0, 1.0, 0.0
DOWN = np.array([0.0, 0.0, -1.0])


@dataclass(frozen=True)
class Hand:
    """The grip site's position, its pointing axis and the fingers' closing axis (left pad to
    right pad), all measured."""

    position: np.ndarray
    pointing: np.ndarray
    closing: np.ndarray
    width: float

    @classmethod
    def from_facts(cls, facts: dict[str, Any]) -> Hand:
        g = facts["gripper"]
        rot = np.asarray(g["rotation"], dtype=float).reshape(3, 3)
        left, right = (np.asarray(p, dtype=float) for p in g["pads"])
        closing = right - left
        n = np.linalg.norm(closing)
        closing = closing / n if n > 1e-9 else rot[:, 0]
        return cls(np.asarray(g["position"], dtype=float), rot[:, 2], closing, float(g["width"]))


def rotation_vector(r: np.ndarray) -> np.ndarray:
    """Axis times angle of a rotation matrix."""
    cos = np.clip((np.trace(r) - 1.0) / 2.0, -1.0, 1.0)
    angle = float(np.arccos(cos))
    if angle < 1e-6:
        return np.zeros(3)
    if np.pi - angle < 1e-4:
        # near a half turn: the axis from the symmetric part
        axis = np.sqrt(np.maximum((np.diag(r) + 1.0) / 2.0, 0.0))
        k = int(np.argmax(axis))
        signs = np.sign(r[k] + r[:, k])
        signs[k] = 1.0
        return angle * axis * signs / np.linalg.norm(axis)
    w = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    return angle * w / (2.0 * np.sin(angle))


def _frame(pointing: np.ndarray, closing: np.ndarray) -> np.ndarray:
    z = pointing / np.linalg.norm(pointing)
    x = closing - z * float(closing @ z)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def orientation_error(hand: Hand, closing: np.ndarray | None,
                      pointing: np.ndarray = DOWN) -> np.ndarray:
    """World-frame rotation vector taking the hand to point along `pointing` with its fingers
    closing along ±`closing` (the nearer sign: a parallel gripper is symmetric); None keeps
    the closing axis as it is, only the pointing is corrected."""
    want_closing = hand.closing if closing is None else np.asarray(closing, dtype=float)
    want_closing = want_closing - pointing * float(want_closing @ pointing)
    if np.linalg.norm(want_closing) < 1e-6:
        want_closing = hand.closing
    if float(want_closing @ hand.closing) < 0:
        want_closing = -want_closing
    current = _frame(hand.pointing, hand.closing)
    wanted = _frame(pointing, want_closing)
    return rotation_vector(wanted @ current.T)


def servo(hand: Hand, target: np.ndarray, gripper: float, closing: np.ndarray | None = None,
          max_step: float = 0.05, max_turn: float = 0.25,
          pointing: np.ndarray = DOWN) -> list[float]:
    """One 7-D OSC action towards `target` (at most `max_step` m and `max_turn` rad this
    control step), the hand pointing along `pointing` (down unless told)."""
    err = np.asarray(target, dtype=float) - hand.position
    n = float(np.linalg.norm(err))
    if n > max_step:
        err *= max_step / n
    rot = orientation_error(hand, closing, pointing)
    a = float(np.linalg.norm(rot))
    if a > max_turn:
        rot *= max_turn / a
    move = np.clip(err / POS_SCALE, -1.0, 1.0)
    turn = np.clip(rot / ROT_SCALE, -1.0, 1.0)
    return [*map(float, move), *map(float, turn), float(gripper)]
