"""One closed-loop episode in the embedded sim, judged live: the Python API behind
`mango policy run` and `mango demo`.

Brings up `config/stacks/sim.yaml` (sim_node, franka_control_node, vla_node, oracle_node and,
with a bag, the recorder) under its own namespace, loads the oracle, resets the scene (world
time restarts, which starts the oracle's episode, so the live verdict and a replay of the
bag's last episode see the same states), sends `RunPolicy` (→ `ExecuteChunk` → sim), waits,
finishes the oracle and shuts everything down.

`views=True` records what `config/rviz/mango.rviz` and `config/foxglove/mango_layout.json`
show (cameras on, markers, `/tf`, `/tf_static`, `/robot_description`) and runs the stack in
the root namespace: the layouts name topics without a run's random `/mango_<id>` prefix, so
such a run must be the only one in its ROS domain.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mango.bringup import NodeDied
from mango.client.robot import Robot, TaskResult
from mango.client.session import StackSession
from mango.errors import InputError
from mango.policy.registry import BACKENDS
from mango.sim.faults import parse_fault
from mango.sim.scene import REPO_ROOT, load_scene, resolve_scene
from mango.stack import load_stack
from mango_ros.msg import StepVerdict
from mango_ros.srv import ResetScene

POLICY_RATE = 15.0
# What the rviz and Foxglove layouts show, recorded by a `views` run besides the stack's topics.
VIEW_TOPICS = ("/oracle/markers", "/tf", "/tf_static", "/robot_description",
               "/camera/front/image_raw", "/camera/wrist/image_raw", "/camera/front/depth",
               "/camera/front/camera_info", "/camera/wrist/camera_info")


class RunFailed(RuntimeError):
    """The episode could not run (a node died, the policy never executed, a timeout)."""


@dataclass
class Episode:
    scene: str
    oracle: str | None = None  # default: the fine-grained oracle the scene names
    backend: str = "expert"
    fault: str | None = None
    seed: int = 0
    bag: str | None = None
    namespace: str | None = None  # default: a fresh one
    options: dict[str, Any] = field(default_factory=dict)  # vla_node backend options
    views: bool = False  # record what the layouts show, in the root namespace


def _episode_only(
    on_step: Callable[[StepVerdict], None] | None,
) -> Callable[[StepVerdict], None] | None:
    """Forward step verdicts from the episode the scene reset starts (its plan announcement
    comes with world time gone back), not those of the oracle's load before it."""
    if on_step is None:
        return None
    state = {"armed": False, "last_t": -1.0}

    def forward(msg: StepVerdict) -> None:
        t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        if not state["armed"] and msg.status == "pending" and t < state["last_t"]:
            state["armed"] = True
        state["last_t"] = max(state["last_t"], t)
        if state["armed"]:
            on_step(msg)

    return forward


def run_episode(
    episode: Episode,
    output: Callable[[str, str], None] | None = None,
    on_step: Callable[[StepVerdict], None] | None = None,
    startup_timeout: float = 90.0,
) -> dict[str, Any]:
    """Run one episode; returns the oracle's spec §6 report with a `run` entry.

    Raises `InputError` on bad input and `RunFailed` when the episode could not run.
    """
    entry = BACKENDS.get(episode.backend)
    if entry is None:
        raise InputError(f"unknown backend {episode.backend!r} (known: "
                         f"{', '.join(BACKENDS)})", field="backend")
    scene_path = resolve_scene(episode.scene).resolve()
    spec = load_scene(scene_path)
    if episode.fault:
        if not entry.injects_faults:
            raise InputError("a fault is injected into the scripted expert: use --backend "
                             "expert", field="fault")
        parse_fault(episode.fault)
    if episode.oracle is None:
        if not spec.oracle:
            raise InputError(f"scene {spec.name} names no oracle file; give one",
                             file=str(scene_path))
        oracle_path = (REPO_ROOT / spec.oracle).resolve()
    else:
        oracle_path = Path(episode.oracle).resolve()
    if not oracle_path.is_file():
        raise InputError("oracle file not found", file=str(oracle_path))

    if episode.views:
        if not episode.bag:
            raise InputError("recording the views needs a bag to record to (--bag)",
                             field="views")
        if (episode.namespace or "").strip("/"):
            raise InputError("the views are recorded in the root namespace, where the rviz and "
                             "Foxglove layouts look for them: drop --namespace", field="views")
        episode = dataclasses.replace(episode, namespace="")
    ns = episode.namespace if episode.namespace is not None else f"/mango_{uuid.uuid4().hex[:6]}"
    ns = "/" + ns.strip("/") if ns.strip("/") else ""
    stack = load_stack("sim")
    nodes = {n.name: n for n in stack.nodes}
    nodes["sim_node"].parameters.update(scene=str(scene_path), seed=episode.seed)
    if entry.reads_world_state and not episode.views:
        nodes["sim_node"].parameters["camera_rate"] = 0.0  # nothing looks at the cameras
    vla = nodes["vla_node"].parameters
    vla.update(backend=episode.backend, scene=str(scene_path), fault=episode.fault or "")
    vla.update({k: v for k, v in episode.options.items() if v is not None})
    nodes["oracle_node"].parameters["oracle_file"] = ""  # loaded below, grounded on the scene
    # Who must hear the world state before the scene reset starts the episode.
    listeners = {"oracle_node"}
    if episode.bag:
        rec = nodes["bag_recorder"].parameters
        rec["output"] = str(Path(episode.bag).resolve())
        rec["topics"] = [f"{ns}{t}" for t in rec["topics"]]  # type: ignore[union-attr]
        if episode.views:
            rec["topics"] = [*rec["topics"], *VIEW_TOPICS]
        keep = list(nodes.values())
        listeners.add("bag_recorder")
    else:
        keep = [n for n in nodes.values() if n.name != "bag_recorder"]
    stack = stack.model_copy(update={"nodes": keep}).in_namespace(ns)

    t_start = time.monotonic()
    feedback: list[Any] = []
    try:
        with StackSession(stack, output=output) as session:
            node = session.node
            assert node is not None
            robot = Robot(node, ns, watch=session.bringup.check, on_step=_episode_only(on_step),
                          server_timeout=startup_timeout)
            robot.wait_for_servers("run_policy", timeout=startup_timeout)
            topic = f"{ns}/world_state"
            session.wait(lambda: listeners <= {i.node_name for i in
                                               node.get_subscriptions_info_by_topic(topic)},
                         startup_timeout, f"{', '.join(sorted(listeners))} on {topic}")
            loaded = robot.load_oracle(oracle_path)
            if not loaded.success:
                raise InputError("the oracle node refused the oracle: "
                                 + "; ".join(loaded.problems), file=str(oracle_path))
            reset = session.call(ResetScene, f"{ns}/sim_node/reset",
                                 ResetScene.Request(scene="", seed=episode.seed), timeout=120)
            if not reset.success:
                raise RunFailed(f"sim reset failed: {reset.message}")
            seen = robot.task_verdicts_seen()
            task = robot.start_policy(spec.instruction,
                                      max_steps=math.ceil(spec.horizon * POLICY_RATE),
                                      feedback=feedback.append)
            outcome = task.result(timeout=spec.horizon * 3 + 60.0)
            if outcome.result is TaskResult.REJECTED:
                raise RunFailed(f"the vla_node refused the RunPolicy goal: {outcome.message}")
            if outcome.result is TaskResult.ABORTED or outcome.response is None:
                raise RunFailed(f"the policy run ended without a result: {outcome.message}")
            res = outcome.response
            if (outcome.result is TaskResult.FAILED and res.chunks_requested <= 1
                    and res.steps_executed == 0):
                raise RunFailed(f"the policy could not run: {res.message}")
            time.sleep(1.0)  # let the last placement settle before judging
            robot.finish_oracle()
            verdict = robot.wait_for_task_verdict(10.0, after=seen)
    except NodeDied as exc:
        tail = "\n  " + "\n  ".join(exc.tail[-5:]) if exc.tail else ""
        raise RunFailed(f"{exc}{tail}") from None
    except TimeoutError as exc:
        raise RunFailed(str(exc)) from None

    report = json.loads(verdict.report_json)
    latency = sorted(f.last_inference_latency for f in feedback)
    report["run"] = {
        "scene": spec.name, "instruction": spec.instruction, "oracle": str(oracle_path),
        "backend": episode.backend, "fault": episode.fault, "seed": episode.seed,
        "bag": episode.bag, "namespace": ns,
        "policy_status": outcome.result.value,
        "policy_message": res.message, "steps_executed": res.steps_executed,
        "chunks_requested": res.chunks_requested,
        "policy_info": json.loads(res.info_json or "{}"),
        "inference_latency_p50": latency[len(latency) // 2] if latency else None,
        "t_end": verdict.header.stamp.sec + verdict.header.stamp.nanosec * 1e-9,
        "wall_time": round(time.monotonic() - t_start, 2),
    }
    return report
