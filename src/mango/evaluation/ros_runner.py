"""Campaign episodes as ROS stacks (`runner: ros`): each worker brings up the sim stack
(`config/stacks/sim.yaml`: sim_node, franka_control_node, vla_node, oracle_node and the bag
recorder) on its own `ROS_DOMAIN_ID`, runs the episode through `RunPolicy` -> `ExecuteChunk`
-> sim exactly as `mango policy run` does, and stores the result in-process runs store.

The live verdict is the oracle node's; the symbolic end state is judged on the bag's world
states (the trace the recorder kept); the ground truth is the expert's own account in the
`vla_node` (the labels `mango sim run` writes). Each episode is one `mango policy run`
process: the library's layering keeps rclpy out of `evaluation`, and a process per episode
takes its nodes down with it, so a killed campaign leaves no stack behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mango.evaluation.campaign import EpisodeSpec
from mango.evaluation.streaming import stream_bounded

STARTUP_S = 120.0  # bring-up of five node processes on a loaded 2-core machine, with margin
DOMAINS = 233  # Fast DDS maps domain d to ports 7400 + 250 d; ids 0..232 are valid


def default_domain_base() -> int:
    """The domains after this process's own: a campaign's stacks never share its domain."""
    return (int(os.environ.get("ROS_DOMAIN_ID", "0") or 0) + 1) % DOMAINS


def execute_ros_episode(spec: EpisodeSpec, system: dict[str, Any], out: Path, domain: int,
                        procs: set[subprocess.Popen[str]] | None = None, views: bool = False
                        ) -> tuple[dict[str, Any], dict[str, str]]:
    """One episode through the sim stack on `domain`; its bag lies in the episode's folder
    (with `views`, the cameras too: what a dataset is made of, `evaluation.dataset`).

    As in-process, the episode's own failure (the stack not coming up, the policy refused)
    is a result with `error` set, never an exception."""
    from mango.bags.states import bag_episode, world_state_topic
    from mango.oracle.symbolic import SymbolicOracle
    from mango.oracle.world_state import trace_lines
    from mango.sim.env import as_scene

    t0 = time.perf_counter()
    result: dict[str, Any] = {"episode": spec.id, "system": spec.system, "task": spec.task,
                              "seed": spec.seed, "fault": spec.fault, "error": None,
                              "runner": "ros"}
    files: dict[str, str] = {}
    folder = out / "episodes" / spec.id
    bag = folder / "bag"
    if bag.exists():  # a run killed mid-episode left it; that episode was never stored
        shutil.rmtree(bag)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        scene = as_scene(spec.task)
        cmd = [sys.executable, "-m", "mango.cli.main", "policy", "run", "--scene", spec.task,
               "--seed", str(spec.seed), "--backend", system.get("backend", "expert"),
               "--bag", str(bag), "--json"]
        if spec.fault:
            cmd += ["--fault", spec.fault]
        if views:  # in the root namespace, alone on its domain
            cmd.append("--record-views")
        env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
        if procs is not None:
            procs.add(proc)
        try:
            stdout, stderr = proc.communicate(timeout=STARTUP_S + 3 * scene.horizon + 60)
        except subprocess.TimeoutExpired:
            _stop(proc)
            stdout, stderr = proc.communicate()
            raise RuntimeError("the stack episode did not end in time") from None
        finally:
            if procs is not None:
                procs.discard(proc)
        if proc.returncode != 0 or not stdout.strip():
            last = (stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
            raise RuntimeError(f"mango policy run: {last}")
        report = json.loads(stdout)
        run = report.pop("run")
        states = bag_episode(bag, world_state_topic(bag))
        symbolic = SymbolicOracle(scene.goal).check(states).to_json()
        info = run.get("policy_info") or {}
        labels = {"scene": scene.name, "seed": spec.seed, "instruction": scene.instruction,
                  "oracle": scene.oracle, **info}
        files["trace.jsonl"] = "".join(trace_lines(states))
        files["labels.json"] = json.dumps(labels, indent=2) + "\n"
        result.update(success=symbolic["verdict"] == "pass", verdict=report, symbolic=symbolic,
                      labels=labels, error=info.get("expert_error"),
                      ros={"domain": domain, "namespace": run.get("namespace"),
                           "policy_status": run.get("policy_status"),
                           "steps_executed": run.get("steps_executed"),
                           "stack_wall_s": run.get("wall_time")})
    except Exception as exc:  # the episode's failure is its result
        result.update(success=False, verdict=None, symbolic=None, labels=None,
                      error=f"{type(exc).__name__}: {exc}")
    result["wall_s"] = round(time.perf_counter() - t0, 3)
    return result, files


def _stop(proc: subprocess.Popen[str]) -> None:
    """The episode's process group (the CLI and its nodes): TERM, then KILL."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


class RosEpisodes:
    """`workers` stacks at a time, worker k on domain `domain_base + k`."""

    def __init__(self, workers: int, out: Path, domain_base: int | None = None,
                 views: bool = False) -> None:
        self.slots = max(1, workers)
        self.out = out
        self.views = views
        base = default_domain_base() if domain_base is None else domain_base
        self._domains: queue.Queue[int] = queue.Queue()
        for k in range(self.slots):
            self._domains.put((base + k) % DOMAINS)
        self._pool = ThreadPoolExecutor(max_workers=self.slots)
        self._procs: set[subprocess.Popen[str]] = set()

    def _one(self, spec: EpisodeSpec, system: dict[str, Any]
             ) -> tuple[dict[str, Any], dict[str, str]]:
        domain = self._domains.get()
        try:
            return execute_ros_episode(spec, system, self.out, domain, self._procs, self.views)
        finally:
            self._domains.put(domain)

    def run(self, specs: list[tuple[EpisodeSpec, dict[str, Any]]]
            ) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
        yield from stream_bounded(lambda spec, system: self._pool.submit(self._one, spec, system),
                                  specs, self.slots)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        for proc in list(self._procs):
            _stop(proc)
