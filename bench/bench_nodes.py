"""Oracle node latency on the ROS graph and bag replay speed.

1. Latency: a publisher sends 50-object `WorldState`s at 100 Hz to a running `oracle_node`
   process; every other state raises a condition of a not-yet-enabled step, so the node
   publishes an out-of-order `StepVerdict` for it. Latency = verdict received - state sent
   (same clock, loopback DDS with the project's profile). Interleaved with it, the same
   stream goes to `echo_node.py`, which answers without judging: the DDS round trip alone.
2. Replay: a 10-minute, 100 Hz bag of real sim world states (an expert run with a drop fault,
   looped and re-stamped, so the task never passes and every state is evaluated) is replayed
   through the engine as `mango replay` does (one process per core for a bag this size);
   speed in multiples of real time, also for one process.
"""

from __future__ import annotations

import collections
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from report import headline, print_table

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("FASTDDS_DEFAULT_PROFILES_FILE",
                      str(REPO / "config/dds/fastdds_local_shm.xml"))
os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 50))


def _objects(n: int, inside: bool) -> dict:
    objs = {f"obj_{i}": {"position": [0.3 + 0.01 * i, -0.2 + 0.005 * i, 0.85],
                         "orientation": [1, 0, 0, 0], "size": [0.05, 0.05, 0.08], "kind": "object"}
            for i in range(n - 3)}
    objs["basket_1"] = {"position": [0.5, 0.3, 0.85], "size": [0.25, 0.25, 0.1], "kind": "object"}
    objs["basket_1_contain_region"] = {"position": [0.5, 0.3, 0.87], "size": [0.2, 0.2, 0.08],
                                       "kind": "region", "parent": "basket_1"}
    objs["main_table"] = {"position": [0.5, 0.0, 0.4], "size": [1.2, 1.2, 0.8], "kind": "surface"}
    if inside:
        objs["obj_1"]["position"] = [0.5, 0.3, 0.87]
    return objs


def _latency_oracle() -> dict:
    step = lambda i, expr: {"action_id": f"a{i}", "parameters": {},  # noqa: E731
                            "monitoring": [{"oracle_id": f"a{i}", "handle_as": expr}]}
    return {"instruction": "latency probe", "execution_mode": "sequential", "plan": [
        {"step": 1, "execution_mode": "sequential", "actions": [
            step(1, "grasped(obj_0) and up(obj_0)"),
            step(2, "in(obj_1, basket_1_contain_region)"),
            *[step(i, f"on(obj_{i}, main_table) and not grasped(obj_{i})") for i in range(3, 11)],
        ]}]}


def bench_latency(seconds: float = 15.0, rate: float = 100.0) -> dict[str, dict[str, float]]:
    """Publish → verdict received, for `oracle_node` and, at the same time, for the
    do-nothing echo baseline: each gets `rate` states per second, the baseline's sent half
    a period after the oracle's, so both see the same machine (this VM's speed drifts)."""
    import rclpy
    from rclpy.serialization import serialize_message

    from mango.nodes.common import latched_qos
    from mango.ros.world_state_msg import record_to_msg
    from mango_ros.msg import StepVerdict, WorldState

    tmp = Path(tempfile.mkdtemp())
    oracle = tmp / "oracle.json"
    oracle.write_text(json.dumps(_latency_oracle()))
    targets = {"oracle": ["-m", "mango.nodes.oracle_node"],
               "echo": [str(REPO / "bench" / "echo_node.py")]}
    procs = [subprocess.Popen(
        [sys.executable, *cmd, "--ros-args", "-r", f"__ns:=/bench_{name}",
         "-p", f"oracle_file:={oracle}", "-p", f"world_state_topic:=/bench_{name}/world_state",
         "-p", "marker_rate:=5.0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for name, cmd in targets.items()]
    rclpy.init()
    # The receiving end is kept lean (no parameter services, raw bytes, a thread waiting on
    # the subscriptions) so that the figure is the node's and the transport's, not the
    # probe's: an executor adds 0.1-0.2 ms of its own per message.
    probe = rclpy.create_node("bench_latency", start_parameter_services=False)
    pubs = {name: probe.create_publisher(WorldState, f"/bench_{name}/world_state", 100)
            for name in targets}
    sent: dict[str, dict[float, float]] = {name: {} for name in targets}
    lat: dict[str, list[float]] = {name: [] for name in targets}

    def on_verdict(name: str, data: bytes) -> None:
        sec, nsec = struct.unpack_from("<iI", data, 4)
        t0 = sent[name].get(round(sec + nsec * 1e-9, 9))
        if t0 is not None and _verdict_event(data) == b"out_of_order":
            lat[name].append(time.perf_counter() - t0)

    subs = [probe.create_subscription(
        StepVerdict, f"/bench_{name}/oracle/step_verdicts",
        lambda data, name=name: on_verdict(name, data), latched_qos(1000), raw=True)
        for name in targets]
    stop = threading.Event()
    spinner = threading.Thread(target=_receive, args=(probe, subs, stop), daemon=True)
    spinner.start()
    while any(pub.get_subscription_count() < 1 for pub in pubs.values()):
        time.sleep(0.05)
    time.sleep(1.0)
    # Pre-serialized, so the figure is what the node adds (plus DDS both ways), not the cost
    # of this script turning a Python message into CDR.
    payloads = [serialize_message(record_to_msg({"t": 0.0, "objects": _objects(50, inside)}))
                for inside in (0, 1)]
    n = int(seconds * rate)
    start = time.perf_counter()
    for i in range(2 * n):
        name = "oracle" if i % 2 == 0 else "echo"
        k = i // 2
        t = round(1.0 + k / rate, 9)
        data = _patch_stamp(payloads[k % 2], t)
        sent[name][t] = time.perf_counter()
        pubs[name].publish(data)
        time.sleep(max(0.0, start + (i + 1) / (2 * rate) - time.perf_counter()))
    time.sleep(1.0)
    for proc in procs:
        proc.terminate()
        proc.wait()
    stop.set()
    spinner.join(timeout=5)
    rclpy.shutdown()
    out = {}
    for name, values in lat.items():
        values.sort()
        out[name] = {"verdicts": len(values), "expected": n // 2,
                     "p50_ms": 1e3 * statistics.median(values),
                     "p90_ms": 1e3 * values[int(0.9 * len(values))],
                     "p99_ms": 1e3 * values[int(0.99 * len(values))]}
    return out


def _receive(node: Any, subs: list[Any], stop: threading.Event) -> None:
    """Take the subscriptions' messages as they arrive, straight from a wait set of their own
    (rclpy's internal API; an executor spinning `node` where that is missing)."""
    try:
        from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

        wait_set = _rclpy.WaitSet(len(subs), 0, 0, 0, 0, 0, node.context.handle)
    except (ImportError, AttributeError, TypeError):
        from rclpy.executors import SingleThreadedExecutor

        executor = SingleThreadedExecutor()
        executor.add_node(node)
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)
        return
    while not stop.is_set():
        wait_set.clear_entities()
        for sub in subs:
            wait_set.add_subscription(sub.handle)
        wait_set.wait(50_000_000)  # ns: wakes to notice `stop`
        for sub in subs:
            while (taken := sub.handle.take_message(sub.msg_type, True)) is not None:
                sub.callback(taken[0])


def _verdict_event(data: bytes) -> bytes:
    """The `event` field of a serialized StepVerdict: the fifth string after the stamp."""
    pos = 12
    for _ in range(4):
        pos += 4 + struct.unpack_from("<I", data, pos)[0]
        pos += -(pos - 4) % 4
    n = struct.unpack_from("<I", data, pos)[0]
    return data[pos + 4:pos + 3 + n]


def _patch_stamp(payload: bytes, t: float) -> bytes:
    sec = int(t)
    return payload[:4] + struct.pack("<iI", sec, round((t - sec) * 1e9)) + payload[12:]


def bench_replay(minutes: float = 10.0, rate: float = 100.0) -> dict[str, float]:
    from rclpy.serialization import serialize_message

    from mango.bags import BagWriter
    from mango.bags.judge import auto_jobs, judge_bag
    from mango.bags.states import iter_bag_world_states
    from mango.bags.world_state_cdr import WorldStateDecoder
    from mango.oracle import StepTracker
    from mango.ros.world_state_msg import state_to_msg
    from mango.sim.faults import parse_fault
    from mango.sim.runner import run_episode

    scene = "libero10_soup_sauce_basket"
    run = run_episode(scene, seed=0, fault=parse_fault("drop@0.5"))
    payloads = [serialize_message(state_to_msg(s)) for s in run.states]
    n = int(minutes * 60 * rate)
    bag = Path(tempfile.mkdtemp()) / "replay"
    with BagWriter(bag) as w:
        w.add_topic("/world_state", "mango_ros/msg/WorldState")
        for i in range(n):
            t = i / rate
            w.write("/world_state", _patch_stamp(payloads[i % len(payloads)], t),
                    int(t * 1e9))
    oracle = REPO / "config" / "oracles" / f"{scene}.json"
    jobs = auto_jobs(bag, 0)
    t0 = time.perf_counter()
    report = judge_bag(bag, StepTracker(oracle), jobs=0)  # what `mango replay` runs
    total = time.perf_counter() - t0
    t0 = time.perf_counter()
    single = judge_bag(bag, StepTracker(oracle), jobs=1)
    one_process = time.perf_counter() - t0
    assert single == report, "parallel and one-process replay disagree"
    t0 = time.perf_counter()
    # Reading and decoding alone, for the breakdown (keeps only the last state).
    (state,) = collections.deque(iter_bag_world_states(bag), maxlen=1)
    read_decode = time.perf_counter() - t0
    decoder = WorldStateDecoder()
    stream = payloads * 20
    t0 = time.perf_counter()
    for p in stream:
        decoder.decode(p)
    decode_us = 1e6 * (time.perf_counter() - t0) / len(stream)
    return {"states": report.n_states, "entities": len(state.objects), "jobs": jobs,
            "total_s": total, "x_real_time": minutes * 60 / total,
            "x_one_process": minutes * 60 / one_process, "read+decode_s": read_decode,
            "track_s": one_process - read_decode, "verdict": report.verdict,
            "decode_us": decode_us}


def main() -> None:
    both = bench_latency()
    lat, base = both["oracle"], both["echo"]
    rep = bench_replay()
    print_table("oracle node and replay", ("figure", "value", "goal"), [
        ("node latency p50 (100 Hz, 50 objects)", f"{lat['p50_ms']:.2f} ms", "≤ 1 ms"),
        ("node latency p90 / p99", f"{lat['p90_ms']:.2f} / {lat['p99_ms']:.2f} ms", ""),
        ("verdicts received / expected", f"{lat['verdicts']} / {lat['expected']}", ""),
        ("  DDS round trip alone (echo node) p50", f"{base['p50_ms']:.2f} ms", ""),
        ("  added by judging (oracle - echo) p50",
         f"{lat['p50_ms'] - base['p50_ms']:.2f} ms", ""),
        (f"replay 10 min @100 Hz ({rep['states']} states, {rep['entities']} entities, "
         f"{rep['jobs']} processes)", f"{rep['x_real_time']:.0f}x real time", "≥ 500x"),
        ("  in one process", f"{rep['x_one_process']:.0f}x real time", ""),
        ("  one process: read+decode / track",
         f"{rep['read+decode_s']:.2f} s / {rep['track_s']:.2f} s", ""),
        ("  CDR decode per state (stream)", f"{rep['decode_us']:.1f} µs", ""),
    ])
    headline("Oracle", "oracle node latency, 100 Hz, 50 objects, publish → verdict received "
             "(p50)", f"{lat['p50_ms']:.2f} ms", "≤ 1 ms p50")
    headline("Oracle", "… the DDS round trip alone (echo node, same transport and QoS, "
             "interleaved), p50", f"{base['p50_ms']:.2f} ms")
    headline("Oracle", "… added by judging (decode, track, publish)",
             f"{lat['p50_ms'] - base['p50_ms']:.2f} ms")
    headline("Oracle", f"replay of a 10-min 100 Hz bag of sim states, {rep['jobs']} processes "
             "/ 1 process", f"{rep['x_real_time']:.0f}× / {rep['x_one_process']:.0f}× real time",
             "≥ 500×")


if __name__ == "__main__":
    main()
