"""Perception figures: Detect latency per backend at 640x480.

For each of the ten LIBERO-10 scenes (seed 0), the front camera's frame is rendered once
(RGB, depth, segmentation) and `detect` is timed on it: one phrase (the first object's
description) and every object of the scene in one call. The first call of a backend grounds
the phrases (the generator's grounder), later calls reuse the grounding; both are shown.
Rendering is reported apart: it is the simulator's cost, not the backend's. Goal: sim <= 20 ms
p50 (issue #14). Then the same through ROS: sim_node (front camera, 640x480 at 5 Hz, with
segmentation) and perception_node as processes, `~/detect` called from a client node: the
round trip includes the service transport and turning the frame's messages into arrays.

Run: python bench/bench_perception_sim.py [--repeats N]
"""

from __future__ import annotations

import argparse
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


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))] if s else float("nan")


def bench_service(calls: int) -> list[float]:
    """Round trips of `~/detect` on a live sim_node + perception_node (seconds)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from mango_ros.srv import Detect

    ns = f"/b{uuid.uuid4().hex[:6]}"
    tmp = Path(tempfile.mkdtemp(prefix="bench_perception_"))
    common = [sys.executable, "-m"]
    procs = [
        subprocess.Popen([*common, "mango.nodes.sim_node", "--ros-args", "-r", f"__ns:={ns}",
                          "-p", "scene:=libero10_soup_sauce_basket", "-p", "camera_rate:=5.0",
                          "-p", "cameras:=['front']", "-p", "image_width:=640",
                          "-p", "image_height:=480", "-p", "segmentation:=true"],
                         stdout=(tmp / "sim.log").open("w"), stderr=subprocess.STDOUT),
        subprocess.Popen([*common, "mango.nodes.perception_node", "--ros-args",
                          "-r", f"__ns:={ns}", "-p", "backend:=sim"],
                         stdout=(tmp / "perception.log").open("w"), stderr=subprocess.STDOUT)]
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("bench_perception", context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    client = node.create_client(Detect, f"{ns}/perception_node/detect")
    request = Detect.Request(phrases=["the alphabet soup"], camera="front", max_results=1)
    out: list[float] = []
    try:
        assert client.wait_for_service(timeout_sec=60), "perception_node did not come up"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until frames have arrived
            f = client.call_async(request)
            executor.spin_until_future_complete(f, timeout_sec=10)
            if f.result() is not None and f.result().success:
                break
            time.sleep(0.2)
        for _ in range(calls):
            t = time.perf_counter()
            f = client.call_async(request)
            executor.spin_until_future_complete(f, timeout_sec=10)
            assert f.result() is not None and f.result().success, f.result()
            out.append(time.perf_counter() - t)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        stop_processes(procs)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=20, help="timed calls per scene and case")
    ap.add_argument("--calls", type=int, default=30, help="Detect service calls")
    args = ap.parse_args()

    from mango.perception.base import PerceptionConfig
    from mango.perception.registry import make_backend
    from mango.perception.sim_frames import sim_frame
    from mango.sim.env import SimEnv
    from mango.sim.scene import list_scenes

    render, first, one, every = [], [], [], []
    n_objects = []
    for path in list_scenes():
        with SimEnv(path, 0, cameras=("front",), image_size=(640, 480)) as env:
            env.reset(0)
            sim_frame(env, "front")  # the first render makes the GL context
            t = time.perf_counter()
            frame = sim_frame(env, "front")
            render.append(time.perf_counter() - t)
            backend = make_backend(PerceptionConfig(backend="sim", scene=env.scene))
            phrases = [e.description or e.id for e in env.scene.entities]
            n_objects.append(len(phrases))
            t = time.perf_counter()
            backend.detect(frame, phrases, 1)
            first.append(time.perf_counter() - t)
            for case, out in ((phrases[:1], one), (phrases, every)):
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    backend.detect(frame, case, 1)
                    out.append(time.perf_counter() - t)
    service = bench_service(args.calls)
    ms = 1000.0
    rows = [
        ("sim: Detect, one phrase", f"{pct(one, 50) * ms:.1f} ms", f"p90 {pct(one, 90) * ms:.1f}",
         "<= 20 ms p50"),
        (f"sim: Detect, every object ({min(n_objects)}-{max(n_objects)} phrases)",
         f"{pct(every, 50) * ms:.1f} ms", f"p90 {pct(every, 90) * ms:.1f}", ""),
        ("sim: first Detect of a scene (grounds the phrases)", f"{pct(first, 50) * ms:.1f} ms",
         f"max {max(first) * ms:.1f}", ""),
        ("sim: Detect through perception_node (service round trip)",
         f"{pct(service, 50) * ms:.1f} ms", f"p90 {pct(service, 90) * ms:.1f}", ""),
        ("render front 640x480 RGB+depth+seg (simulator)", f"{pct(render, 50) * ms:.1f} ms",
         f"max {max(render) * ms:.1f}", "not in Detect"),
    ]
    print_table(f"bench_perception_sim (10 scenes x {args.repeats} calls, 640x480)",
                ("measure", "p50", "spread", "goal"), rows)
    headline("Perception", "`sim` perception Detect at 640×480, one phrase / every object of a "
             f"scene (p50, {len(n_objects)} scenes)",
             f"{pct(one, 50) * ms:.1f} / {pct(every, 50) * ms:.1f} ms", "≤ 20 ms p50")
    headline("Perception", "… through `perception_node` (`~/detect` round trip, one phrase, "
             "sim_node camera at 5 Hz), p50", f"{pct(service, 50) * ms:.1f} ms")


if __name__ == "__main__":
    main()
