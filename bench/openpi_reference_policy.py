"""A stand-in policy with a known, smooth answer and a chosen latency, served by openpi's own
`WebsocketPolicyServer` (openpi-server 0.1.0, from `.venv-openpi`) on loopback: what
`bench_async_policy.py` runs the vla_node against.

The reference is a curve in joint space followed at a constant pace: joint 1 advances `STEP`
rad per action from where the arm is observed, and joints 2 and 4 are smooth functions of
joint 1 (`reference`), so a chunk computed from any observation lies on the same curve, and
how far the executed path strays from it is measurable from the joint states alone. Each
answer is `--horizon` rows of the `joint` preset (7 absolute joint targets + gripper width),
sent `--latency` ms after the request arrived.

Usage (in .venv-openpi): python openpi_reference_policy.py --port N --latency MS [--horizon H]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

HOME = np.array([0.0, -0.7854, 0.0, -2.3562, 0.0, 1.5708, 0.7854])  # config/robots/fr3.yaml
HORIZON = 20  # rows per answer (--horizon); openpi's pi0 configs predict 50
STEP = 0.02  # rad of joint 1 per action: 0.3 rad/s at 15 Hz
WIDTH = 0.08


def reference(q1: np.ndarray | float) -> np.ndarray:
    """The 7 joint positions on the reference curve at joint-1 angle(s) `q1` (... x 7)."""
    q1 = np.asarray(q1, float)
    s = q1 - HOME[0]
    q = np.broadcast_to(HOME, (*q1.shape, 7)).copy()
    q[..., 0] = q1
    q[..., 1] = HOME[1] + 0.25 * np.sin(2.0 * s)
    q[..., 3] = HOME[3] + 0.3 * (1.0 - np.cos(2.0 * s))
    return q


def answer(state: np.ndarray, horizon: int = HORIZON) -> np.ndarray:
    """The chunk for an observed 8-D state (7 joints + width): the curve from its joint 1."""
    q1 = float(state[0]) + STEP * np.arange(1, horizon + 1)
    return np.column_stack([reference(q1), np.full(horizon, WIDTH)]).astype(np.float32)


def main() -> None:
    from openpi_client import base_policy
    from openpi_server import WebsocketPolicyServer

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--latency", type=float, default=0.0, help="ms before each answer")
    ap.add_argument("--horizon", type=int, default=HORIZON, help="rows per answer")
    args = ap.parse_args()

    class ReferencePolicy(base_policy.BasePolicy):
        def infer(self, obs: dict) -> dict:
            t0 = time.monotonic()
            actions = answer(np.asarray(obs["observation/state"], float), args.horizon)
            time.sleep(max(0.0, args.latency / 1000.0 - (time.monotonic() - t0)))
            return {"actions": actions}

    WebsocketPolicyServer(ReferencePolicy(), host="127.0.0.1", port=args.port,
                          metadata={"policy": f"reference_{args.latency:g}ms"}).serve_forever()


if __name__ == "__main__":
    main()
