"""Asynchronous inference and chunk blending in the vla_node (issue #38), measured.

A stand-in policy on loopback speaking openpi's protocol through openpi's own server
(`openpi_reference_policy.py` in `.venv-openpi`) answers smooth reference chunks (20 rows of
the `joint` preset at 15 Hz, on a known curve in joint space) after a set latency (0, 100,
300, 500 ms). One request is in flight at a time (openpi's client is synchronous), so an
answer that arrives L actions after its observation adds H - L useful actions: the queue
stays fed only while H >= 2 L (at 15 Hz and 300 ms, L is about 5: 10-row chunks run dry,
`--horizon 10` shows it). For each latency the same episode — 60 actions from the FR3's
home pose — runs on sim_node + franka_control_node (sim backend, 100 Hz) with a vla_node
in the synchronous loop (`chunk_threshold:=0`) and asynchronously (threshold 0.5, LeRobot's
default) with each aggregator, and with threshold 0.8.

Figures per run:
- commanded-point spacing p50 / p99: the interval between successive `joint_command`
  messages on the simulator's clock (each message's arrival mapped to simulator time from
  the latest joint state's stamp, as `mango.control.clock.sim_time` does); in ms and in
  control periods (10 ms). The arm idles where no command comes.
  The same on the control node's clock (the messages' header stamps, at sending), which
  leaves out the transport to this process; and the longest gap, where a stop shows.
- idle: the vla_node's account (RunPolicy feedback `idle_time`): how long the queue was
  empty waiting for an answer.
- deviation at chunk boundaries: max over the joints of |measured - reference curve| at the
  moment each new chunk was queued (after the first), max over the run, mrad.
- task time: simulator time from the RunPolicy goal to its result.

Target: at 300 ms with the threshold on, spacing p99 <= 1.5 control periods.

Run: python bench/bench_async_policy.py [--latencies 0,100,300,500] [--steps 60]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
from openpi_reference_policy import HOME, reference
from report import headline, print_table, stop_processes, wait

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("FASTDDS_DEFAULT_PROFILES_FILE",
                      str(REPO / "config/dds/fastdds_local_shm.xml"))
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 50))
os.environ.setdefault("MUJOCO_GL", "egl")
OPENPI_PYTHON = REPO / ".venv-openpi" / "bin" / "python"
CONTROL_PERIOD = 0.01  # s: franka_control_node's control_rate 100 Hz
MODES = (("sync", 0.0, "weighted_average"), ("async weighted_average", 0.5, "weighted_average"),
         ("async latest_only", 0.5, "latest_only"), ("async average", 0.5, "average"),
         ("async conservative", 0.5, "conservative"),
         ("async F=0.8 weighted_average", 0.8, "weighted_average"))
EXTRAPOLATE = 0.1  # as mango.control.clock


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(module: str, *args: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", module, "--ros-args", *args],
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


class Recorder:
    """Joint states (simulator stamp, arrival), joint commands and vla_node diagnostics."""

    def __init__(self, node, ns: str) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import JointState

        self.lock = threading.Lock()
        self.state: tuple[float, float, np.ndarray] | None = None  # stamp, arrival, q
        self.states: list[tuple[float, np.ndarray]] = []
        self.commands: list[float] = []  # simulator time of each joint_command
        self.sent: list[float] = []  # its header stamp: the control node's clock at sending
        self.boundaries: list[np.ndarray] = []  # q when each chunk was queued
        self.recording = False
        node.create_subscription(JointState, f"{ns}/joint_states", self._on_state, 50)
        node.create_subscription(JointState, f"{ns}/joint_command", self._on_cmd, 500)
        node.create_subscription(DiagnosticArray, f"{ns}/vla_node/diagnostics",
                                 self._on_diag, 50)

    def sim_now(self) -> float:
        stamp, arrived, _ = self.state
        return stamp + min(time.monotonic() - arrived, EXTRAPOLATE)

    def _on_state(self, m) -> None:
        q = np.asarray(m.position[:7], float)
        stamp = m.header.stamp.sec + m.header.stamp.nanosec * 1e-9
        with self.lock:
            self.state = (stamp, time.monotonic(), q)
            if self.recording:
                self.states.append((stamp, q))

    def _on_cmd(self, m) -> None:
        with self.lock:
            if self.recording and self.state is not None:
                self.commands.append(self.sim_now())
                self.sent.append(m.header.stamp.sec + m.header.stamp.nanosec * 1e-9)

    def _on_diag(self, _m) -> None:
        with self.lock:
            if self.recording and self.state is not None:
                self.boundaries.append(self.state[2].copy())

    def start(self) -> None:
        with self.lock:
            self.states.clear()
            self.commands.clear()
            self.sent.clear()
            self.boundaries.clear()
            self.recording = True

    def stop(self) -> None:
        with self.lock:
            self.recording = False


def deviation(q: np.ndarray) -> float:
    """Max joint distance (rad) from the reference curve at the same joint-1 angle."""
    return float(np.max(np.abs(q - reference(q[0]))))


def go_home(robot, rec: Recorder) -> None:
    """Back to the start of the curve (2 s of 15 Hz points) so every run starts alike."""
    q0 = rec.state[2]
    rows = np.array([q0 + (HOME - q0) * (k + 1) / 30 for k in range(30)])
    robot.execute_chunk(np.column_stack([rows, np.full(30, 0.08)]), rate=15.0, timeout=30)
    time.sleep(0.5)


def run_mode(rig, robot, rec: Recorder, ns: str, port: int, threshold: float, aggregate: str,
             steps: int, tmp: Path, name: str) -> dict[str, float]:
    from mango.client import Robot, TaskResult

    log = tmp / f"vla_{name.replace(' ', '_')}_{port}.log"
    vla = start("mango.nodes.vla_node", "-r", f"__ns:={ns}", "-p", "backend:=openpi",
                "-p", "preset:=joint", "-p", f"port:={port}", "-p", "timeout:=30.0",
                "-p", f"chunk_threshold:={threshold}", "-p", f"aggregate:={aggregate}",
                "-p", "observation_timeout:=60.0", log=log)
    try:
        policy = Robot(rig.node, ns)
        policy.wait_for_servers("run_policy", timeout=120)
        go_home(robot, rec)
        feedback: list = []
        rec.start()
        t0 = rec.sim_now()
        task = policy.start_policy("follow the reference", max_steps=steps,
                                   feedback=feedback.append)
        out = task.result(300)
        t1 = rec.sim_now()
        rec.stop()
        if out.result is not TaskResult.MAX_STEPS:
            raise RuntimeError(f"{name}: {out.result} {out.message}\n{log.read_text()[-2000:]}")
    finally:
        stop_processes([vla])
    gaps = list(np.diff(rec.commands) * 1000.0)
    sent = list(np.diff(rec.sent) * 1000.0)
    bounds = [deviation(q) for q in rec.boundaries[1:]]
    return {"spacing_p50_ms": pct(gaps, 50), "spacing_p99_ms": pct(gaps, 99),
            "spacing_max_ms": max(gaps, default=float("nan")),
            "sent_p99_ms": pct(sent, 99), "sent_max_ms": max(sent, default=float("nan")),
            "idle_s": feedback[-1].idle_time if feedback else float("nan"),
            "boundary_dev_mrad": 1000.0 * max(bounds) if bounds else float("nan"),
            "task_s": t1 - t0, "chunks": out.response.chunks_requested}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latencies", default="0,100,300,500")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--horizon", type=int, default=20, help="rows per answer")
    args = ap.parse_args()
    latencies = [float(x) for x in args.latencies.split(",")]
    if not OPENPI_PYTHON.exists():
        print("bench_async_policy: no .venv-openpi (make openpi-venv): nothing measured")
        return
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from mango.client import Robot

    tmp = Path(tempfile.mkdtemp(prefix="bench_async_"))
    ns = f"/b{uuid.uuid4().hex[:6]}"
    procs = [start("mango.nodes.sim_node", "-r", f"__ns:={ns}", "-p", "camera_rate:=4.0",
                   "-p", "image_width:=96", "-p", "image_height:=96",
                   "-p", "scene:=libero10_book_caddy", log=tmp / "sim.log"),
             start("mango.nodes.franka_control_node", "-r", f"__ns:={ns}",
                   "-p", "control_rate:=100.0", log=tmp / "control.log")]
    ctx = rclpy.Context()
    rclpy.init(context=ctx)

    class Rig:
        node = rclpy.create_node(f"bench_{uuid.uuid4().hex[:6]}", context=ctx)

    executor = MultiThreadedExecutor(num_threads=4, context=ctx)
    executor.add_node(Rig.node)
    threading.Thread(target=executor.spin, daemon=True).start()
    rec = Recorder(Rig.node, ns)
    rows, results = [], {}
    try:
        robot = Robot(Rig.node, ns)
        robot.wait_for_servers("execute_chunk", timeout=120)
        wait(lambda: rec.state, 120, "joint states")
        for latency in latencies:
            port = free_port()
            server = subprocess.Popen(
                [str(OPENPI_PYTHON), str(Path(__file__).with_name("openpi_reference_policy.py")),
                 "--port", str(port), "--latency", f"{latency:g}",
                 "--horizon", str(args.horizon)],
                stdout=(tmp / f"server_{latency:g}.log").open("w"), stderr=subprocess.STDOUT)
            try:
                for name, threshold, aggregate in MODES:
                    r = run_mode(Rig, robot, rec, ns, port, threshold, aggregate, args.steps,
                                 tmp, name)
                    results[(latency, name)] = r
                    rows.append((f"{latency:g}", name,
                                 f"{r['spacing_p50_ms']:.1f} / {r['spacing_p99_ms']:.1f} "
                                 f"({r['spacing_p99_ms'] / (CONTROL_PERIOD * 1000):.2f}) / "
                                 f"{r['spacing_max_ms']:.0f}",
                                 f"{r['sent_p99_ms']:.1f} / {r['sent_max_ms']:.0f}",
                                 f"{r['idle_s']:.2f}", f"{r['boundary_dev_mrad']:.1f}",
                                 f"{r['task_s']:.2f}", str(r["chunks"])))
                    print(rows[-1], flush=True)
            finally:
                server.terminate()
                server.wait(timeout=10)
    finally:
        stop_processes(procs)
        executor.shutdown(timeout_sec=1.0)
        Rig.node.destroy_node()
        rclpy.shutdown(context=ctx)
    print_table(f"vla_node, {args.steps} actions at 15 Hz, {args.horizon}-row chunks from a "
                "loopback openpi server (sim backend, 100 Hz control)",
                ("latency ms", "mode", "cmd spacing, sim clock: p50 / p99 (periods) / max ms",
                 "sender clock p99 / max ms", "idle s",
                 "boundary deviation mrad", "task s", "chunks"), rows)
    r = results.get((300.0, "async weighted_average"))
    if r is not None:
        headline("Simulation and control", "VLA at 300 ms inference, async (threshold 0.5): "
                 "commanded-point spacing p99", f"{r['spacing_p99_ms'] / 10:.2f} control "
                 "periods", "<= 1.5")


if __name__ == "__main__":
    main()
