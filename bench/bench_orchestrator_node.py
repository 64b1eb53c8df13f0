"""Failure-to-halt reaction time through ROS (orchestrator_node on the sim stack).

The sim stack's sim_node, franka_control_node, vla_node (the expert), perception_node,
primitives_node and orchestrator_node, each its own process. Each trial resets the scene
(seed = trial), sends ExecuteTask ("put the tomato sauce in the basket", vla_only + oracle
monitor), and once the VLA has lifted the sauce puts it back where it started through
`sim_node/set_entity_pose` — the event in the world. Measured on the sim's own clock: the
first world state without the sauce in the hand → the oracle monitor's signal (the decision
line's input) → the arm held (joint speed below 0.05 rad/s over 0.1 s, for 0.2 s; from the
sim's joint states). Then the task is cancelled.

Run: `python bench/bench_orchestrator_node.py [--trials 5] [--json OUT]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from geometry_msgs.msg import Point, Pose, Quaternion
from report import headline, print_table, wait
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from mango.client.session import StackSession, request_reply
from mango.control import load_robot
from mango.nodes.actions import ActionClient
from mango.ros.world_state_msg import msg_to_state
from mango.stack import load_stack
from mango_ros.action import ExecuteTask
from mango_ros.msg import WorldState
from mango_ros.srv import ResetScene, SetEntityPose

SCENE = "libero10_soup_sauce_basket"
NODES = ("sim_node", "franka_control_node", "vla_node", "perception_node", "primitives_node",
         "orchestrator_node")
JOINTS = list(load_robot("fr3").joint_names)
HELD_STILL, WINDOW, HOLD = 0.05, 0.1, 0.2


def _call(node: Any, srv: type, name: str, req: Any) -> Any:
    cli = node.create_client(srv, name)
    if not cli.wait_for_service(timeout_sec=60):
        raise SystemExit(f"{name} not available")
    return request_reply(cli, req, 120, f"reply from {name}", resend=True)


def _speed(rows: list[tuple[np.ndarray, float]], t0: float, t1: float) -> float:
    """Fastest joint speed between sim times t0 and t1 (displacement over WINDOW s)."""
    seg = [(q, t) for q, t in rows if t0 - WINDOW <= t <= t1]
    out, j = 0.0, 0
    for q, t in seg:
        while seg[j + 1][1] <= t - WINDOW:
            j += 1
        if t >= t0 and t - seg[j][1] >= WINDOW:
            out = max(out, float(np.abs(q - seg[j][0]).max() / (t - seg[j][1])))
    return out


def _halted(rows: list[tuple[np.ndarray, float]], t_event: float) -> float | None:
    """First sim time after `t_event` from which the arm stays still for HOLD s."""
    stamps = [t for _, t in rows if t > t_event]
    for t in stamps:
        if stamps[-1] >= t + HOLD and _speed(rows, t, t + HOLD) < HELD_STILL:
            return t
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    ns = f"/b{uuid.uuid4().hex[:8]}"
    stack = load_stack("sim")
    nodes = {n.name: n for n in stack.nodes if n.name in NODES}
    nodes["sim_node"].parameters.update(scene=SCENE, camera_rate=5.0, cameras=["front"],
                                        image_width=640, image_height=480)
    nodes["perception_node"].parameters.update(cameras=["front"])
    stack = stack.model_copy(update={"nodes": list(nodes.values())}).in_namespace(ns)
    rows: list[dict[str, float]] = []
    with StackSession(stack) as session:
        node = session.node
        joints: list[tuple[np.ndarray, float]] = []
        world: list[Any] = []
        decisions: list[dict[str, Any]] = []

        def on_joints(msg: JointState) -> None:
            names = list(msg.name)
            joints.append((np.asarray(msg.position)[[names.index(j) for j in JOINTS]],
                           msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9))

        node.create_subscription(JointState, f"{ns}/joint_states", on_joints, 50)
        node.create_subscription(WorldState, f"{ns}/world_state", world.append, 10)
        node.create_subscription(String, f"{ns}/orchestrator_node/decisions",
                                 lambda m: decisions.append(json.loads(m.data)), 100)
        task = ActionClient(node, ExecuteTask, f"{ns}/execute_task")
        if not task.wait_for_server(timeout_sec=120):
            raise SystemExit("execute_task not available")
        wait(lambda: world and joints, 60, "world and joint states")
        for trial in range(args.trials):
            r = _call(node, ResetScene, f"{ns}/sim_node/reset",
                      ResetScene.Request(scene=SCENE, seed=trial, request_id=uuid.uuid4().hex))
            assert r.success, r.message
            joints.clear()
            n0 = len(world)
            wait(lambda n0=n0: len(world) > n0 + 5 and world[-1].header.stamp.sec < 2, 30,
                  "states after the reset")
            decisions.clear()
            start = msg_to_state(world[-1]).objects["tomato_sauce_1"]
            sent = task.send_goal_async(ExecuteTask.Goal(
                instruction="put the tomato sauce in the basket", mode="vla_only",
                monitor="oracle"))
            wait(sent.done, 20, "goal acceptance")
            gh = sent.result()
            res = gh.get_result_async()

            def lifted(z0: float = start.position[2]) -> bool:
                st = msg_to_state(world[-1])
                return bool(st.fact("grasped(tomato_sauce_1)")) and \
                    st.objects["tomato_sauce_1"].position[2] > z0 + 0.08
            wait(lifted, 60, "the sauce lifted")
            n = len(world)
            w, x, y, z = start.orientation
            _call(node, SetEntityPose, f"{ns}/sim_node/set_entity_pose", SetEntityPose.Request(
                entity_id="tomato_sauce_1", pose=Pose(
                    position=Point(x=start.position[0], y=start.position[1],
                                   z=start.position[2]),
                    orientation=Quaternion(w=w, x=x, y=y, z=z))))
            wait(lambda: any(d["phase"] == "recovery" for d in decisions), 30,
                  "a recovery decision")
            gone = next(st.t for st in map(msg_to_state, world[n - 1:])
                        if not st.fact("grasped(tomato_sauce_1)"))
            sig = next(d for d in decisions if d["phase"] == "recovery")["inputs"]["signal"]
            t_dec = next(d for d in decisions if d["phase"] == "recovery")["t"]
            wait(lambda t_dec=t_dec: joints[-1][1] > t_dec + 0.5, 20,
                  "joint states after the halt")
            halted = _halted(list(joints), gone)
            gh.cancel_goal_async()
            wait(res.done, 60, "the task's end")
            if halted is None:
                print(f"trial {trial}: the arm never held still after the event")
                continue
            rows.append({"signal_s": sig["t"] - gone, "halted_s": halted - gone})
    if not rows:
        raise SystemExit("no trial measured")

    def pct(key: str, q: float) -> float:
        v = sorted(r[key] for r in rows)
        return v[min(len(v) - 1, round(q * (len(v) - 1)))]
    print_table(f"orchestrator_node: object out of the hand -> ... ({len(rows)} trials, "
                "sim time)", ["measure", "p50 ms", "p95 ms", "max ms"],
                [[label, f"{statistics.median(r[k] for r in rows) * 1e3:.0f}",
                  f"{pct(k, 0.95) * 1e3:.0f}", f"{max(r[k] for r in rows) * 1e3:.0f}"]
                 for label, k in (("oracle monitor signal", "signal_s"),
                                  ("arm halted (reaction)", "halted_s"))])
    headline("Orchestration", f"failure-to-halt reaction through ROS ({len(rows)} "
             f"trial{'s' * (len(rows) != 1)}: the "
             "object taken out of the hand mid-transport → the oracle monitor's signal → the arm "
             "held, sim time)",
             f"signal p50 {statistics.median(r['signal_s'] for r in rows) * 1e3:.0f} ms; halted "
             f"p50 {statistics.median(r['halted_s'] for r in rows) * 1e3:.0f} ms / p95 "
             f"{pct('halted_s', 0.95) * 1e3:.0f} ms")
    if args.json:
        args.json.write_text(json.dumps({"trials": rows}, indent=2))


if __name__ == "__main__":
    main()
