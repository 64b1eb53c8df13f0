"""The oracle node's work on LIBERO's world states (issue #34), measured in-process.

For a few LIBERO tasks: one scripted-expert episode in LIBERO itself (init state 0), the
fine-grained oracle generated from the task's instruction and read in LIBERO's semantics
(`mango.bddl.libero_oracle`, what `mango sim run --scene libero/...` and LIBERO campaigns
judge with), and then what `oracle_node` does with each world state of the episode: decode the
`WorldState` message's CDR bytes (`WorldStateDecoder`, the node's hot path) and update the step
tracker. Per state, p50 / p99 over every state of every pass (the episode replayed `--passes`
times, a fresh tracker each). The DDS transport to the node is the same as for any state of
that size: `bench_nodes.py` measures it. Also: each episode's fine-grained verdict beside
LIBERO's `check_success()`.

Run: python bench/bench_libero_oracle.py [--tasks libero/libero_spatial/0,...] [--passes 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

from rclpy.serialization import serialize_message
from report import headline, print_table
from rich.progress import track

from mango.bags.world_state_cdr import WorldStateDecoder
from mango.bddl.libero_oracle import libero_library, task_oracle
from mango.oracle import StepTracker
from mango.ros.world_state_msg import state_to_msg
from mango.sim.libero import LiberoClient, parse_scene
from mango.sim.libero.episode import run_libero_episode

TASKS = "libero/libero_spatial/0,libero/libero_object/0,libero/libero_goal/1"


def judge_timing(oracle, payloads: list[bytes], passes: int) -> tuple[list[float], str]:
    """Seconds per state (decode + update) over `passes` replays, and the last verdict."""
    library = libero_library()
    times: list[float] = []
    verdict = "running"
    for _ in range(passes):
        decoder, tracker = WorldStateDecoder(), StepTracker(oracle, library)
        for data in payloads:
            t0 = time.perf_counter()
            tracker.update(decoder.decode(data))
            times.append(time.perf_counter() - t0)
        verdict = tracker.finish().verdict
    return times, verdict


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default=TASKS)
    ap.add_argument("--passes", type=int, default=20)
    args = ap.parse_args()
    rows, every = [], []
    with LiberoClient() as client:
        for name in track(args.tasks.split(","), description="LIBERO episodes"):
            ep = run_libero_episode(client, parse_scene(name), 0)
            oracle, _ = task_oracle(ep.task.bddl)
            payloads = [bytes(serialize_message(state_to_msg(s))) for s in ep.states]
            times, verdict = judge_timing(oracle, payloads, args.passes)
            every += times
            times.sort()
            rows.append((name, str(len(ep.states)), str(len(ep.states[0].objects)),
                         f"{1e6 * statistics.median(times):.0f}",
                         f"{1e6 * times[int(0.99 * (len(times) - 1))]:.0f}",
                         verdict, "success" if ep.libero_success else "no success"))
    print_table("oracle node work per LIBERO world state (CDR decode + step tracker), "
                f"{args.passes} passes", ["task", "states", "entities", "p50 us", "p99 us",
                                          "fine-grained verdict", "check_success"], rows)
    every.sort()
    p50, p99 = statistics.median(every), every[int(0.99 * (len(every) - 1))]
    headline("Oracle", "oracle node work per LIBERO world state (decode + judge), p50 / p99",
             f"{1e6 * p50:.0f} / {1e6 * p99:.0f} us", "≤ 50 ms (LIBERO's 20 Hz)")


if __name__ == "__main__":
    main()
