"""Robot I/O figures: control timing, halt latency, policy latency, camera throughput.

1. Chunk jitter: a 3 s chunk at 15 Hz on the `sim` backend (sim_node + franka_control_node
   processes, control loop 100 Hz). Control-loop jitter = |interval between the node's
   stamped joint_command messages - 10 ms|; point jitter = |feedback arrival spacing - 1/15 s|
   on the wall clock: the node moves along a chunk by the simulator's clock, so this includes
   the simulator's own unevenness against real time.
2. Cancel -> halt: cancel a moving chunk; latency = stamp of the last command the node sent
   (the hold) - the wall time the cancel was sent. Goal: <= 67 ms (one 15 Hz period).
3. Observation -> chunk per backend on loopback: expert (in process, from a real sim world
   state), openpi (websocket + msgpack, LIBERO preset, two 224x224 images, 10 x 7 reply),
   OpenVLA (HTTP + json-numpy, one image, 7-D reply). The servers answer immediately, so this
   is the client/transport/conversion overhead.
4. Camera: camera_node (files backend, 640x480 PNG frames) at 30 Hz; received rate and
   latency = receive time - header stamp.

Run: python bench/bench_robot_io.py
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
from report import headline, print_table, stop_processes, wait

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("FASTDDS_DEFAULT_PROFILES_FILE",
                      str(REPO / "config/dds/fastdds_local_shm.xml"))
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 50))
os.environ.setdefault("MUJOCO_GL", "egl")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))] if s else float("nan")


def start(module: str, *args: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", module, "--ros-args", *args],
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


class Rig:
    """An rclpy node spinning in a thread."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor

        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.node = rclpy.create_node(f"bench_{uuid.uuid4().hex[:6]}", context=self.ctx)
        self.executor = MultiThreadedExecutor(num_threads=3, context=self.ctx)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def close(self) -> None:
        import rclpy

        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


def bench_control(tmp: Path, trials: int = 8) -> dict[str, float]:
    from builtin_interfaces.msg import Duration
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from mango.control import load_robot
    from mango.nodes.actions import ActionClient
    from mango_ros.action import ExecuteChunk

    robot = load_robot("fr3")
    ns = f"/b{uuid.uuid4().hex[:6]}"
    procs = [start("mango.nodes.sim_node", "-r", f"__ns:={ns}", "-p", "camera_rate:=0.0",
                   "-p", "scene:=libero10_book_caddy", log=tmp / "sim.log"),
             start("mango.nodes.franka_control_node", "-r", f"__ns:={ns}",
                   "-p", "control_rate:=100.0", log=tmp / "control.log")]
    rig = Rig()
    states: list[np.ndarray] = []
    cmds: list[float] = []

    def on_state(m: JointState) -> None:
        states.append(np.asarray(m.position[:7]))

    def on_cmd(m: JointState) -> None:
        cmds.append(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9)

    rig.node.create_subscription(JointState, f"{ns}/joint_states", on_state, 10)
    rig.node.create_subscription(JointState, f"{ns}/joint_command", on_cmd, 200)
    client = ActionClient(rig.node, ExecuteChunk, f"{ns}/execute_chunk")

    def goal(n: int, delta: float) -> ExecuteChunk.Goal:
        wait(lambda: states, 30, "joint states")
        q0 = states[-1].copy()
        g = ExecuteChunk.Goal(trajectory=JointTrajectory(joint_names=list(robot.joint_names)))
        for k in range(1, n + 1):
            sec, nsec = divmod(round(k / 15 * 1e9), 10**9)
            q = q0.copy()
            q[0] += delta * k / n
            g.trajectory.points.append(JointTrajectoryPoint(
                positions=q.tolist(), time_from_start=Duration(sec=sec, nanosec=nsec)))
        return g

    out: dict[str, float] = {}
    try:
        assert client.wait_for_server(timeout_sec=60)
        wait(lambda: states, 60, "joint states")
        time.sleep(1.0)
        feedback: list[float] = []
        cmds.clear()
        fut = client.send_goal_async(goal(45, 0.6), feedback_callback=lambda f: feedback.append(
            time.monotonic()))
        gh = wait(lambda: fut.done() and fut.result(), 10, "acceptance")
        res = gh.get_result_async()
        wait(res.done, 30, "result")
        time.sleep(0.2)
        loop = [abs(b - a - 0.01) * 1000 for a, b in itertools.pairwise(cmds)]
        pts = [abs(b - a - 1 / 15) * 1000 for a, b in itertools.pairwise(feedback)]
        out.update({"loop_jitter_p50_ms": pct(loop, 50), "loop_jitter_p99_ms": pct(loop, 99),
                    "point_jitter_p50_ms": pct(pts, 50), "point_jitter_p99_ms": pct(pts, 99),
                    "max_joint_error_rad": res.result().result.max_joint_error})
        lat: list[float] = []
        for i in range(trials):
            fut = client.send_goal_async(goal(30, 0.4 if i % 2 == 0 else -0.4))
            gh = wait(lambda: fut.done() and fut.result(), 10, "acceptance")  # noqa: B023
            time.sleep(0.4)
            t_cancel = time.time()
            gh.cancel_goal_async()
            res = gh.get_result_async()
            wait(res.done, 10, "cancel result")
            time.sleep(0.3)
            after = [t for t in cmds if t >= t_cancel]
            lat.append((max(after) - t_cancel) * 1000 if after else float("nan"))
        out.update({"halt_p50_ms": pct(lat, 50), "halt_max_ms": max(lat)})
    finally:
        rig.close()
        stop_processes(procs)
    return out


def bench_policies(n: int = 30) -> dict[str, tuple[float, float]]:
    from websockets.sync.server import serve

    from mango.control import load_robot
    from mango.policy import Observation, Policy, PolicyConfig, make_backend
    from mango.policy import msgpack_numpy as mnp
    from mango.policy.kinematics import make_kinematics
    from mango.policy.openpi import OpenPIBackend, OpenPIClient
    from mango.policy.openvla import OpenVLABackend, dumps, loads
    from mango.policy.presets import get_preset
    from mango.sim.env import SimEnv

    robot = load_robot("fr3")
    kin = make_kinematics(robot)
    rng = np.random.default_rng(0)
    images = {"front": rng.integers(0, 255, (224, 224, 3), dtype=np.uint8),
              "wrist": rng.integers(0, 255, (224, 224, 3), dtype=np.uint8)}
    env = SimEnv("libero10_book_caddy", cameras=())
    world = env.world_state()
    # the scene's own task: the expert is language-conditioned and refuses what its scene
    # has no skill for ("pick up the book" alone)
    obs = Observation(images, env.joint_positions(), env.gripper_width(),
                      env.scene.instruction, world)

    def timed(policy: Policy) -> tuple[float, float]:
        policy.reset(obs.instruction)
        lat = [policy.act(obs).latency * 1000 for _ in range(n)]
        return pct(lat, 50), pct(lat, 99)

    out: dict[str, tuple[float, float]] = {}
    out["expert"] = timed(Policy(make_backend(PolicyConfig(backend="expert",
                                                           scene="libero10_book_caddy")), kin))

    def handler(ws) -> None:
        ws.send(mnp.packb({"policy": "bench"}))
        for raw in ws:
            mnp.unpackb(raw)
            ws.send(mnp.packb({"actions": np.zeros((10, 7), np.float32)}))

    server = serve(handler, "127.0.0.1", 0, compression=None, max_size=None)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    client = OpenPIClient("127.0.0.1", server.socket.getsockname()[1])
    out["openpi (libero)"] = timed(Policy(OpenPIBackend(client, get_preset("libero"), kin), kin))
    client.close()
    server.shutdown()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            loads(self.rfile.read(int(self.headers["content-length"])))
            data = dumps(np.zeros(7)).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a: object) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{http.server_address[1]}/act"
    out["openvla"] = timed(Policy(OpenVLABackend(url, get_preset("openvla"), kinematics=kin),
                                  kin))
    http.shutdown()
    return out


def bench_camera(tmp: Path, seconds: float = 5.0) -> dict[str, float]:
    import imageio.v2 as imageio
    from sensor_msgs.msg import Image

    folder = tmp / "frames"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for k in range(5):
        imageio.imwrite(folder / f"{k}.png", rng.integers(0, 255, (480, 640, 3), np.uint8))
    ns = f"/c{uuid.uuid4().hex[:6]}"
    proc = start("mango.nodes.camera_node", "-r", f"__ns:={ns}", "-p", "backend:=files",
                 "-p", f"source:={folder}", "-p", "rate:=30.0", log=tmp / "camera.log")
    rig = Rig()
    got: list[tuple[float, float]] = []

    def on_image(m: Image) -> None:
        got.append((time.time(), m.header.stamp.sec + m.header.stamp.nanosec * 1e-9))

    rig.node.create_subscription(Image, f"{ns}/image_raw", on_image, 10)
    try:
        wait(lambda: len(got) > 5, 30, "camera frames")
        got.clear()
        time.sleep(seconds)
        frames = list(got)
    finally:
        rig.close()
        stop_processes([proc])
    rate = (len(frames) - 1) / (frames[-1][0] - frames[0][0])
    lat = [(r - s) * 1000 for r, s in frames]
    return {"rate_hz": rate, "latency_p50_ms": pct(lat, 50), "latency_p99_ms": pct(lat, 99)}


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        control = bench_control(tmp)
        policies = bench_policies()
        camera = bench_camera(tmp)
    rows = [
        ("control loop jitter p50 / p99 (100 Hz)",
         f"{control['loop_jitter_p50_ms']:.2f} / {control['loop_jitter_p99_ms']:.2f} ms", ""),
        ("chunk point jitter p50 / p99 (15 Hz)",
         f"{control['point_jitter_p50_ms']:.2f} / {control['point_jitter_p99_ms']:.2f} ms", ""),
        ("tracking: max joint error at point times",
         f"{control['max_joint_error_rad']:.3f} rad", ""),
        ("cancel -> halt p50 / max",
         f"{control['halt_p50_ms']:.1f} / {control['halt_max_ms']:.1f} ms", "<= 67 ms"),
        *[(f"observation -> chunk, {name} p50 / p99", f"{p50:.2f} / {p99:.2f} ms", "")
          for name, (p50, p99) in policies.items()],
        ("camera 640x480 rate (set 30 Hz)", f"{camera['rate_hz']:.1f} Hz", "30 Hz"),
        ("camera latency p50 / p99",
         f"{camera['latency_p50_ms']:.2f} / {camera['latency_p99_ms']:.2f} ms", ""),
    ]
    print_table("robot I/O", ("measure", "value", "goal"), rows)
    headline("Simulation and control", "cancel → halt, `sim` backend (p50 / max)",
             f"{control['halt_p50_ms']:.1f} / {control['halt_max_ms']:.0f} ms", "≤ 67 ms")
    headline("Simulation and control", "chunk point spacing at 15 Hz vs 1/15 s, wall clock, "
             "p50 / p99 (the node follows the simulator's clock: its unevenness is in it)",
             f"{control['point_jitter_p50_ms']:.0f} / {control['point_jitter_p99_ms']:.0f} ms")


if __name__ == "__main__":
    main()
