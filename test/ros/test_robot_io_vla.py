"""vla_node with the openpi backend against a loopback server speaking the openpi protocol:
observations come from the live sim (cameras, joint states), chunks run through the control
node, max_steps and steps_per_chunk are honoured, and a cancel stops the chunk in flight —
in the synchronous loop (`chunk_threshold:=0`) and, on a second vla_node beside it, the
asynchronous one (the next observation sent while the chunk runs, its answer merged into the
queue; `~/diagnostics` and the RunPolicy feedback say so)."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from support.ros import Processes, wait_for
from websockets.sync.server import ServerConnection, serve

from mango.client import ActionTask, Robot, TaskResult
from mango.client.robot import RobotNames
from mango.client.session import spun_node
from mango.policy import msgpack_numpy


class JointServer:
    """An openpi server whose policy moves joint 1 at a fixed speed from the observed state."""

    def __init__(self, horizon: int, step: float) -> None:
        self.horizon, self.step = horizon, step
        self.observations: list[dict] = []
        # set by the stack: the asynchronous vla_node's client and its `~/diagnostics`
        self.async_robot: Robot | None = None
        self.diagnostics: list[DiagnosticArray] = []
        self.server = serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None)
        self.port = self.server.socket.getsockname()[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handler(self, ws: ServerConnection) -> None:
        ws.send(msgpack_numpy.packb({"policy": "joint_mover"}))
        for raw in ws:
            obs = msgpack_numpy.unpackb(raw)
            self.observations.append(obs)
            state = np.asarray(obs["observation/state"], float)
            rows = np.tile(state, (self.horizon, 1))
            rows[:, 0] += self.step * np.arange(1, self.horizon + 1)
            rows[:, 7] = 0.08
            ws.send(msgpack_numpy.packb({"actions": rows}))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    server = JointServer(horizon=30, step=0.01)
    ns = f"/t{uuid.uuid4().hex[:8]}"
    procs = Processes(tmp_path_factory.mktemp("vla"))
    procs.start("sim_node", "mango.nodes.sim_node", "-r", f"__ns:={ns}",
                "-p", "scene:=libero10_book_caddy", "-p", "camera_rate:=4.0",
                "-p", "image_width:=96", "-p", "image_height:=96")
    procs.start("control", "mango.nodes.franka_control_node", "-r", f"__ns:={ns}")
    for name, threshold, action in (("vla", 0.0, "run_policy"),
                                    ("vla_async", 0.5, "run_policy_async")):
        procs.start(name, "mango.nodes.vla_node", "-r", f"__ns:={ns}", "-r", f"__node:={name}",
                    "-r", f"run_policy:={action}", "-p", "backend:=openpi",
                    "-p", "preset:=joint", "-p", f"port:={server.port}", "-p", "timeout:=10.0",
                    "-p", f"chunk_threshold:={threshold}",
                    # a loaded machine may take long to start the sim's cameras
                    "-p", "observation_timeout:=60.0")
    with spun_node("test", threads=3) as node:
        commands: list[float] = []
        states: list[np.ndarray] = []
        node.create_subscription(JointState, f"{ns}/joint_command", lambda m: commands.append(
            m.header.stamp.sec + m.header.stamp.nanosec * 1e-9), 100)
        node.create_subscription(JointState, f"{ns}/joint_states",
                                 lambda m: states.append(np.asarray(m.position[:7])), 10)
        diagnostics: list[DiagnosticArray] = []
        node.create_subscription(DiagnosticArray, f"{ns}/vla_async/diagnostics",
                                 diagnostics.append, 100)
        robot = Robot(node, ns)
        robot_async = Robot(node, ns, names=RobotNames(run_policy="run_policy_async"))
        try:
            try:
                robot.wait_for_servers("run_policy", timeout=60)
                robot_async.wait_for_servers("run_policy", timeout=60)
            except TimeoutError as exc:
                raise AssertionError(f"{exc}\n{procs.log('vla')}\n{procs.log('vla_async')}"
                                     ) from None
            wait_for(lambda: states, 60, "the sim's joint states")  # the sim builds its scene
            server.async_robot, server.diagnostics = robot_async, diagnostics
            yield server, robot, commands, states, procs
        finally:
            procs.stop_all()
            server.server.shutdown()


def _start(robot: Robot, instruction: str, max_steps: int, steps_per_chunk: int) -> ActionTask:
    task = robot.start_policy(instruction, max_steps=max_steps, steps_per_chunk=steps_per_chunk)
    wait_for(lambda: task.accepted or task.done(), 30, "acceptance")
    assert task.accepted, task.result().message
    return task


def test_run_policy_executes_the_first_steps_of_each_chunk(stack: tuple) -> None:
    server, robot, _, _, procs = stack
    server.observations.clear()
    out = _start(robot, "move joint one", max_steps=12, steps_per_chunk=4).result(60)
    assert out.result is TaskResult.MAX_STEPS, (out.message, procs.log("vla"))
    result = out.response
    assert result.steps_executed == 12 and result.chunks_requested == 3
    assert len(server.observations) == 3
    obs = server.observations[0]
    assert obs["prompt"] == "move joint one"
    assert obs["observation/image"].shape == (224, 224, 3)  # 96x96 camera, preset size
    assert obs["observation/wrist_image"].dtype == np.uint8
    assert obs["observation/state"].shape == (8,)
    # each query saw the arm advanced by at most the 4 executed steps (0.04 rad), less
    # tracking lag (which a loaded machine makes large, so the lower bound only says "moved")
    firsts = [o["observation/state"][0] for o in server.observations]
    assert all(0.005 < d <= 0.045 for d in np.diff(firsts)), firsts


def test_an_asynchronous_run_asks_for_the_next_chunk_while_the_arm_moves(
        stack: tuple) -> None:
    server, _, _, _, procs = stack
    server.observations.clear()
    server.diagnostics.clear()
    feedback: list = []
    assert server.async_robot is not None
    task = server.async_robot.start_policy("move joint one", max_steps=50,
                                           feedback=feedback.append)
    out = task.result(90)
    assert out.result is TaskResult.MAX_STEPS, (out.message, procs.log("vla_async"))
    assert out.response.steps_executed == 50
    chunks = out.response.chunks_requested
    assert chunks >= 2 and len(server.observations) == chunks
    wait_for(lambda: len(server.diagnostics) >= chunks, 10, "one diagnostics message a chunk")
    values = [{kv.key: kv.value for kv in d.status[0].values} for d in server.diagnostics]
    assert [int(v["chunk"]) for v in values] == list(range(1, chunks + 1))
    assert values[0]["obs_step"] == "0" and values[0]["aggregate"] == "weighted_average"
    # the second observation went out once half of the 30-action chunk was left, before it
    # ran out: its answer overlapped the queue and was merged into it
    second = values[1]
    assert 15 <= int(second["obs_step"]) < 30, second
    assert int(second["merged"]) + int(second["stale"]) > 0, second
    assert all(int(v["clipped"]) == 0 for v in values), values  # 0.01 rad a step: within
    assert feedback and max(f.queue_depth for f in feedback) >= 15
    assert all(f.actions_clipped == 0 and not f.clip_warning for f in feedback)


def test_cancel_stops_the_chunk_in_flight(stack: tuple) -> None:
    _, robot, commands, _, _ = stack
    task = _start(robot, "move", max_steps=0, steps_per_chunk=0)
    wait_for(lambda: commands and time.time() - commands[-1] < 0.05, 30, "motion")
    time.sleep(0.5)  # inside the 2 s chunk
    t_cancel = time.time()
    task.cancel()
    out = task.result(10)
    t_done = time.time()
    assert out.result is TaskResult.CANCELLED, out.message
    assert 0 < out.response.steps_executed < 30
    time.sleep(0.5)
    # The run ends only after the controller stopped the chunk: no command after the reply.
    # The chunk had 1.5 s to go, so a cancel that never reached the controller would show.
    assert max(commands) <= t_done + 0.05, (max(commands) - t_done, t_done - t_cancel)
    assert max(commands) - t_cancel < 0.75, max(commands) - t_cancel


def test_a_killed_controller_ends_the_run_within_seconds_and_the_node_stops_cleanly(
        tmp_path: Path) -> None:
    """SIGKILL of franka_control_node mid-run: the RunPolicy goal ends failed, saying the
    controller went away, within seconds (the loopback profile's 4 s DDS lease); the vla_node
    then stops on SIGINT like any node, without a traceback."""
    server = JointServer(horizon=60, step=0.002)  # a 4 s chunk: the kill lands inside it
    ns = f"/t{uuid.uuid4().hex[:8]}"
    procs = Processes(tmp_path)
    procs.start("sim_node", "mango.nodes.sim_node", "-r", f"__ns:={ns}",
                "-p", "scene:=libero10_book_caddy", "-p", "camera_rate:=4.0",
                "-p", "image_width:=96", "-p", "image_height:=96")
    control = procs.start("control", "mango.nodes.franka_control_node", "-r", f"__ns:={ns}")
    vla = procs.start("vla", "mango.nodes.vla_node", "-r", f"__ns:={ns}", "-p", "backend:=openpi",
                      "-p", "preset:=joint", "-p", f"port:={server.port}", "-p", "timeout:=10.0",
                      # a loaded machine may take long to start the sim's cameras
                      "-p", "observation_timeout:=60.0")
    try:
        with Robot.connect(ns, server_timeout=60.0) as robot:
            robot.wait_for_servers("run_policy", "execute_chunk", timeout=60)
            task = robot.start_policy("move", max_steps=0, steps_per_chunk=0)
            wait_for(lambda: task.feedback is not None or server.observations or task.done(),
                     90, "the first chunk")
            assert not task.done(), task.result(0)
            time.sleep(0.5)
            control.send_signal(signal.SIGKILL)
            t_kill = time.monotonic()
            out = task.result(60)
            waited = time.monotonic() - t_kill
        assert out.result is TaskResult.FAILED, out
        assert "went away" in out.message, out.message
        assert waited < 10.0, waited
        vla.send_signal(signal.SIGINT)
        assert vla.wait(timeout=10) is not None
        assert "Traceback" not in procs.log("vla"), procs.log("vla")
    finally:
        procs.stop_all()
        server.server.shutdown()
