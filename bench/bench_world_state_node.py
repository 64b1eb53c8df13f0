"""World-state estimation figures: `world_state_node` on the sim's two cameras.

In process first: one front 640x480 frame of `libero10_mugs_plates` with its marker plates
(`markers: auto`), timed through `ArucoBackend.poses` and `WorldStateEstimator.observe_markers`,
and `state()` (what each publish costs). Then through ROS: sim_node (front + wrist at
`--camera-rate`, 640x480, marker plates, truth on `world_state_truth`) and world_state_node
(rate 15 Hz) as processes, a client counting for `--seconds`: estimates published per second
(goal >= 15 Hz, issue #14), the spread of their intervals, camera frames delivered, and how
far behind the sim's own world state each estimate is when it arrives (sim time).

Run: python bench/bench_world_state_node.py [--seconds S] [--camera-rate HZ]
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from report import headline, print_table, stop_processes

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("FASTDDS_DEFAULT_PROFILES_FILE",
                      str(REPO / "config/dds/fastdds_local_shm.xml"))
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 50))
SCENE = "libero10_mugs_plates"


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))] if s else float("nan")


def bench_core(repeats: int) -> tuple[list[float], list[float], int]:
    """(seconds per frame: poses + observe, seconds per state(), markers found)."""
    import numpy as np

    from mango.control.kinematics import FR3Kinematics
    from mango.control.robot import load_robot
    from mango.perception.aruco import ArucoBackend
    from mango.perception.estimator import WorldStateEstimator
    from mango.perception.sim_frames import sim_frame
    from mango.sim.env import SimEnv
    from mango.sim.markers import auto_marker_map
    from mango.sim.scene import as_scene

    sc = as_scene(SCENE)
    mm = auto_marker_map(sc)
    with SimEnv(sc, 0, cameras=("front",), image_size=(640, 480), markers=mm) as env:
        frame = sim_frame(env, "front")
        pos, quat = env.robot_base_pose()
        q = env.joint_positions().tolist()
        width = env.gripper_width()
    from mango.geometry import quat_to_mat
    base = np.eye(4)
    base[:3, :3], base[:3, 3] = quat_to_mat(np.asarray(quat, float)), pos
    est = WorldStateEstimator(sc, mm, FR3Kinematics(load_robot("fr3")), base)
    aruco = ArucoBackend(mm, sc)
    est.observe_joints(q, width, 0.0)
    per_frame, per_state = [], []
    found = 0
    for i in range(repeats):
        t = time.perf_counter()
        poses, _ = aruco.poses(frame)
        est.observe_markers(poses, 0.1 * (i + 1))
        per_frame.append(time.perf_counter() - t)
        found = len(poses)
        t = time.perf_counter()
        est.state()
        per_state.append(time.perf_counter() - t)
    return per_frame, per_state, found


def bench_ros(seconds: float, camera_rate: float) -> dict[str, list[float] | int]:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image

    from mango.ros.world_state_msg import seconds_from_stamp
    from mango_ros.msg import WorldState

    ns = f"/b{uuid.uuid4().hex[:6]}"
    tmp = Path(tempfile.mkdtemp(prefix="bench_world_state_"))
    common = [sys.executable, "-m"]
    procs = [
        subprocess.Popen([*common, "mango.nodes.sim_node", "--ros-args", "-r", f"__ns:={ns}",
                          "-r", "world_state:=world_state_truth", "-p", f"scene:={SCENE}",
                          "-p", "markers:=auto", "-p", f"camera_rate:={camera_rate}",
                          "-p", "cameras:=['front', 'wrist']", "-p", "image_width:=640",
                          "-p", "image_height:=480"],
                         stdout=(tmp / "sim.log").open("w"), stderr=subprocess.STDOUT),
        subprocess.Popen([*common, "mango.nodes.world_state_node", "--ros-args",
                          "-r", f"__ns:={ns}", "-p", f"scene:={SCENE}", "-p", "rate:=15.0"],
                         stdout=(tmp / "estimator.log").open("w"), stderr=subprocess.STDOUT)]
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("bench_world_state", context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    arrivals: list[float] = []
    behind: list[float] = []
    frames = [0]
    truth_t = [float("nan")]

    def on_truth(m: WorldState) -> None:
        truth_t[0] = seconds_from_stamp(m.header.stamp.sec, m.header.stamp.nanosec)

    def on_estimate(m: WorldState) -> None:
        arrivals.append(time.monotonic())
        behind.append(truth_t[0] - seconds_from_stamp(m.header.stamp.sec,
                                                       m.header.stamp.nanosec))

    node.create_subscription(WorldState, f"{ns}/world_state_truth", on_truth, 100)
    node.create_subscription(WorldState, f"{ns}/world_state", on_estimate, 100)
    for cam in ("front", "wrist"):
        node.create_subscription(Image, f"{ns}/camera/{cam}/image_raw",
                                 lambda _m: frames.__setitem__(0, frames[0] + 1),
                                 qos_profile_sensor_data)
    try:
        deadline = time.monotonic() + 90
        while len(arrivals) < 5 and time.monotonic() < deadline:  # warmed up
            executor.spin_once(timeout_sec=0.1)
        assert len(arrivals) >= 5, f"no estimates: see {tmp}/estimator.log"
        arrivals.clear()
        behind.clear()
        frames[0] = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        stop_processes(procs)
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    return {"arrivals": arrivals, "gaps": gaps, "behind": behind, "frames": frames[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=10.0, help="how long to count")
    ap.add_argument("--camera-rate", type=float, default=15.0, help="sim camera rate (Hz)")
    ap.add_argument("--repeats", type=int, default=30, help="in-process frames timed")
    args = ap.parse_args()
    per_frame, per_state, found = bench_core(args.repeats)
    ros = bench_ros(args.seconds, args.camera_rate)
    ms = 1000.0
    gaps, behind = ros["gaps"], ros["behind"]
    assert isinstance(gaps, list) and isinstance(behind, list)
    arrivals = ros["arrivals"]
    assert isinstance(arrivals, list) and len(arrivals) > 1
    rate = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])
    rows = [
        (f"core: aruco poses + observe, front 640x480 ({found} markers)",
         f"{pct(per_frame, 50) * ms:.1f} ms", f"p90 {pct(per_frame, 90) * ms:.1f}", ""),
        ("core: state() (one publish)", f"{pct(per_state, 50) * ms:.2f} ms",
         f"p90 {pct(per_state, 90) * ms:.2f}", ""),
        ("world_state_node: estimates published", f"{rate:.1f} Hz",
         f"interval p50 {pct(gaps, 50) * ms:.0f} / p90 {pct(gaps, 90) * ms:.0f} ms",
         ">= 15 Hz"),
        (f"camera frames delivered (2 cameras at {args.camera_rate:g} Hz)",
         f"{int(ros['frames']) / args.seconds:.1f} /s", "", ""),  # type: ignore[arg-type]
        ("estimate behind the sim's truth on arrival (sim time)",
         f"{pct(behind, 50) * ms:.0f} ms", f"p90 {pct(behind, 90) * ms:.0f}", ""),
    ]
    print_table(f"bench_world_state_node ({SCENE}, {args.seconds:g} s)",
                ("measure", "p50", "spread", "goal"), rows)
    headline("Perception", "`world_state_node`, two sim cameras 640×480 with markers: "
             f"estimates published / per-frame markers + estimator (front, {found} markers) / "
             "`state()` (p50)",
             f"{rate:.1f} Hz / {pct(per_frame, 50) * ms:.1f} ms / {pct(per_state, 50) * ms:.2f} ms",
             "≥ 15 Hz")


if __name__ == "__main__":
    main()
