"""A stand-in policy served by openpi's own `WebsocketPolicyServer` (openpi-server 0.1.0).

Runs in its own venv (`.venv-openpi`: openpi-client pins numpy<2), never imports mango. Per
observation preset it checks what a real checkpoint of that family was trained on, records
each request (one JSON line), and answers a small, known motion in the family's action
layout, so a test can check the motion came back through the robot in the frame it was
sent in. A request that breaks a convention raises, and the server sends the traceback as a
text frame, as it does for a real policy.

Conventions, from the peers' code:
- libero: Physical-Intelligence/openpi src/openpi/policies/libero_policy.py (keys, 8-D
  state) and examples/libero/main.py (224x224 uint8 images, robot0_eef_pos in LIBERO's
  world: above its 0.9 m table, in front of the base at x = -0.66; axis-angle of at most pi;
  PandaGripper finger qpos [+a, -a], a <= 0.04).
- droid: openpi src/openpi/policies/droid_policy.py and examples/droid/main.py (7 joint
  positions, gripper position 0 open .. 1 closed, 224x224 images; 10 x 8 action chunks).
- openvla / openvla_libero: openvla vla-scripts/deploy.py's payload (image, instruction,
  unnorm_key); one 7-D action per query.

Usage: python openpi_standin_policy.py --preset P --port N --record FILE
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np
from openpi_client import base_policy
from openpi_server import WebsocketPolicyServer

HORIZON = 10  # openpi's LIBERO and DROID chunks are 10 rows (examples/droid/main.py asserts it)
# FR3 joint limits (Franka datasheet), for DROID's joint-space state.
FR3_LOWER = np.array([-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159])
FR3_UPPER = np.array([2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159])
# LIBERO's arenas (envs/problems/*.py, envs/robots/*_panda.py): the robot base lies at x = -0.75
# (study) to -0.51 (living room); the lowest table top is the living room's, 0.41 m up.
LIBERO_BASE_X, LIBERO_TABLE_Z = -0.75, 0.41

# The motion each preset's stand-in answers with (the test checks it came back): MOVE rows of
# motion, then rows that hold still, so the arm has caught up with its last target (its
# tracking lag gone) when the stack observes it for the next request.
MOVE = 4
LIBERO_UP = 0.1  # OSC units per step: 0.1 * 0.05 m = 5 mm up per step
DROID_J1 = 0.1  # unit velocity on joint 1: 0.1 * 0.2 rad = 0.02 rad per step
OPENVLA_UP = 0.004  # Bridge: metres up per query


def _image(obs: dict, key: str, problems: list[str]) -> None:
    img = obs.get(key)
    if not isinstance(img, np.ndarray):
        problems.append(f"{key}: not an array ({type(img).__name__})")
        return
    if img.shape != (224, 224, 3) or img.dtype != np.uint8:
        problems.append(f"{key}: {img.shape} {img.dtype}, want (224, 224, 3) uint8")
    elif int(img.max()) == int(img.min()):
        problems.append(f"{key}: a constant image")


def _vector(obs: dict, key: str, size: int, problems: list[str]) -> np.ndarray | None:
    v = obs.get(key)
    if not isinstance(v, np.ndarray) or v.shape != (size,) or v.dtype.kind != "f":
        problems.append(f"{key}: want a float vector of {size}, got "
                        f"{getattr(v, 'shape', type(v).__name__)} {getattr(v, 'dtype', '')}")
        return None
    if not np.all(np.isfinite(v)):
        problems.append(f"{key}: non-finite values")
        return None
    return v


def _keys(obs: dict, want: set[str], problems: list[str]) -> None:
    if set(obs) != want:
        problems.append(f"keys {sorted(obs)}, want {sorted(want)}")


def check_libero(obs: dict, problems: list[str]) -> np.ndarray:
    _keys(obs, {"observation/image", "observation/wrist_image", "observation/state", "prompt"},
          problems)
    _image(obs, "observation/image", problems)
    _image(obs, "observation/wrist_image", problems)
    s = _vector(obs, "observation/state", 8, problems)
    if s is not None:
        if not (LIBERO_TABLE_Z < s[2] < LIBERO_TABLE_Z + 1.0):
            problems.append(f"eef z {s[2]:.3f}: not above LIBERO's table (world frame?)")
        if not (LIBERO_BASE_X < s[0] < LIBERO_BASE_X + 0.9):
            problems.append(f"eef x {s[0]:.3f}: not in front of LIBERO's robot base")
        if np.linalg.norm(s[3:6]) > math.pi + 1e-3:
            problems.append(f"axis-angle {s[3:6]}: longer than pi")
        if not (abs(s[6] + s[7]) < 1e-4 and -1e-4 <= s[6] <= 0.04 + 1e-4):
            problems.append(f"finger qpos {s[6:]}: want [+a, -a], 0 <= a <= 0.04")
    rows = np.zeros((HORIZON, 7))
    rows[:MOVE, 2], rows[:, 6] = LIBERO_UP, -1.0  # up, then still; gripper open
    return rows


def check_droid(obs: dict, problems: list[str]) -> np.ndarray:
    _keys(obs, {"observation/exterior_image_1_left", "observation/wrist_image_left",
                "observation/joint_position", "observation/gripper_position", "prompt"},
          problems)
    _image(obs, "observation/exterior_image_1_left", problems)
    _image(obs, "observation/wrist_image_left", problems)
    q = _vector(obs, "observation/joint_position", 7, problems)
    if q is not None and not np.all((q >= FR3_LOWER - 1e-3) & (q <= FR3_UPPER + 1e-3)):
        problems.append(f"joint positions {q} outside the FR3's limits")
    g = _vector(obs, "observation/gripper_position", 1, problems)
    if g is not None and not 0.0 <= g[0] <= 1.0:
        problems.append(f"gripper position {g[0]}: want 0 (open) .. 1 (closed)")
    rows = np.zeros((HORIZON, 8))
    rows[:MOVE, 0] = DROID_J1  # joint 1 turns, then stops; gripper 0 = open
    return rows


def check_joint(obs: dict, problems: list[str], image_keys: tuple[str, str], state_key: str,
                prompt_key: str) -> np.ndarray:
    _keys(obs, {*image_keys, state_key, prompt_key}, problems)
    for k in image_keys:
        _image(obs, k, problems)
    s = _vector(obs, state_key, 8, problems)
    hold = s if s is not None else np.zeros(8)
    return np.tile(hold, (HORIZON, 1))  # hold still: absolute targets = where it is


def check_openvla(obs: dict, problems: list[str], unnorm_key: str) -> np.ndarray:
    _keys(obs, {"image", "instruction", "unnorm_key"}, problems)
    _image(obs, "image", problems)
    if obs.get("unnorm_key") != unnorm_key:
        problems.append(f"unnorm_key {obs.get('unnorm_key')!r}, want {unnorm_key!r}")
    return np.array([[0.0, 0.0, OPENVLA_UP, 0.0, 0.0, 0.0, 1.0]])  # up, gripper open


CHECKS = {
    "libero": check_libero,
    "droid": check_droid,
    "joint": lambda o, p: check_joint(o, p, ("observation/image", "observation/wrist_image"),
                                      "observation/state", "prompt"),
    "lerobot": lambda o, p: check_joint(o, p, ("observation.images.front",
                                               "observation.images.wrist"),
                                        "observation.state", "task"),
    "openvla": lambda o, p: check_openvla(o, p, "bridge_orig"),
    "openvla_libero": lambda o, p: check_openvla(o, p, "libero_10_no_noops"),
}


class StandInPolicy(base_policy.BasePolicy):
    def __init__(self, preset: str, record: str) -> None:
        self.preset, self.record = preset, record

    def infer(self, obs: dict) -> dict:
        problems: list[str] = []
        prompt_key = {"lerobot": "task"}.get(self.preset, "instruction" if "openvla" in
                                             self.preset else "prompt")
        if not isinstance(obs.get(prompt_key), str) or not obs[prompt_key]:
            problems.append(f"{prompt_key}: want the instruction as a non-empty string")
        actions = CHECKS[self.preset](obs, problems)
        entry: dict[str, Any] = {"problems": problems, "keys": sorted(obs)}
        for k, v in obs.items():
            if isinstance(v, np.ndarray) and v.ndim == 1:
                entry[k] = v.tolist()
        with open(self.record, "a") as f:
            f.write(json.dumps(entry) + "\n")
        if problems:
            raise ValueError(f"preset {self.preset}: " + "; ".join(problems))
        return {"actions": actions.astype(np.float32)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", required=True, choices=sorted(CHECKS))
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--record", required=True)
    args = ap.parse_args()
    server = WebsocketPolicyServer(StandInPolicy(args.preset, args.record), host="127.0.0.1",
                                   port=args.port, metadata={"policy": f"standin_{args.preset}"})
    server.serve_forever()


if __name__ == "__main__":
    main()
