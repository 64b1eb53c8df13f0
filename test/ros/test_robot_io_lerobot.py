"""vla_node with the lerobot backend on a real LeRobot checkpoint (a tiny ACT policy with
random weights, saved by lerobot 0.4.4): RunPolicy in the live sim for a few chunks, the
observation from the sim's cameras and joint states, the policy's un-normalised actions
executed as absolute joint targets (the `lerobot` preset) by the control node."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
from sensor_msgs.msg import JointState
from support.lerobot_policy import tiny_act_checkpoint
from support.ros import Processes, wait_for

from mango.client import Robot, TaskResult
from mango.client.session import spun_node


def test_run_policy_on_a_lerobot_checkpoint_moves_the_sim_arm_where_its_actions_say(
        tmp_path: Path) -> None:
    ns = f"/t{uuid.uuid4().hex[:8]}"
    procs = Processes(tmp_path)
    procs.start("sim_node", "mango.nodes.sim_node", "-r", f"__ns:={ns}",
                "-p", "scene:=libero10_book_caddy", "-p", "camera_rate:=4.0",
                "-p", "image_width:=96", "-p", "image_height:=96")
    try:
        with spun_node("test", threads=3) as node:
            states: list[np.ndarray] = []
            node.create_subscription(JointState, f"{ns}/joint_states",
                                     lambda m: states.append(np.asarray(m.position[:7])), 10)
            wait_for(lambda: states, 60, "the sim's joint states")
            q0 = states[-1].copy()
            # The policy's actions are its saved mean (joint 1 turned 0.03 rad from where the
            # arm stands, the hand open) plus 1e-3 times the random network's output.
            target = np.r_[q0 + 0.03 * np.eye(7)[0], 0.08]
            ckpt = tiny_act_checkpoint(tmp_path / "act", target, action_std=1e-3,
                                       n_action_steps=10)
            procs.start("control", "mango.nodes.franka_control_node", "-r", f"__ns:={ns}")
            procs.start("vla", "mango.nodes.vla_node", "-r", f"__ns:={ns}",
                        "-p", "backend:=lerobot", "-p", f"checkpoint:={ckpt}",
                        # synchronous: one query per 10-step chunk, as counted below
                        "-p", "chunk_threshold:=0.0")
            robot = Robot(node, ns)
            try:
                robot.wait_for_servers("run_policy", timeout=90)
            except TimeoutError as exc:
                raise AssertionError(f"{exc}\n{procs.log('vla')}") from None
            task = robot.start_policy("pick up the book", max_steps=30, steps_per_chunk=10)
            out = task.result(120)
            assert out.result is TaskResult.MAX_STEPS, (out.message, procs.log("vla"))
            assert out.response.steps_executed == 30
            assert out.response.chunks_requested == 3
            assert json.loads(out.response.info_json) == {
                "policy_type": "act", "n_action_steps": 10, "cameras": ["front", "wrist"]}
            wait_for(lambda: abs(states[-1][0] - target[0]) < 0.01, 10,
                     f"joint 1 at {target[0]:.3f} (at {states[-1][0]:.3f})")
            assert abs(states[-1][0] - q0[0]) > 0.02  # it moved there
            np.testing.assert_allclose(states[-1][1:], q0[1:], atol=0.01)
    finally:
        procs.stop_all()
